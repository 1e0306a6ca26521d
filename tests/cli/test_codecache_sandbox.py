"""The code cache (sdqos.cli.codecache) through the shipped units: the hardened service's first
sync keeps dataclasses' compiled methods in the run dir, root's alone, and a later sync that
compiled nothing new leaves the file as it was."""

from __future__ import annotations

import sys

from sdqos import sandbox as sbx
from sdqos.cli import codecache

from ..sbhelpers import copy_config, remove_sync_units, sdqos_in, show, sync_json, wait_for

CACHE = f"/run/sdqos/{codecache.NAME}"


def cache_file(sb) -> tuple[str, str] | None:
    """(mode owner, sha256) of the cache inside the sandbox; None when there is none."""
    st = sbx.run(sb, ["stat", "-c", "%a %U", CACHE])
    if st.returncode != 0:
        return None
    return st.stdout.strip(), sbx.run(sb, ["sha256sum", CACHE], check=True).stdout.split()[0]


def test_the_service_keeps_the_compiled_methods_and_the_next_sync_reuses_them(clean_sandbox, tmp_path):
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", CACHE], check=True)
    config = copy_config(tmp_path)
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
    assert r.returncode == 0, r.stderr
    try:
        # (sync writes the cache part-way: the run that wrote it has ended once the service is idle again)
        wait_for(lambda: cache_file(sb) and show(sb, "sdqos-sync.service", "ActiveState", "Result", "ExecMainStatus")
                 == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0"}, "the service's first sync", 40)
    finally:
        remove_sync_units(sb)
    assert cache_file(sb)[0] == "600 root"  # type: ignore[index]
    web = config / "pods" / "web.yaml"
    for was, mem in (("256Mi", "600Mi"), ("600Mi", "700Mi")):  # one change each: the second compiles nothing new
        web.write_text(web.read_text().replace(f"limits: {{cpu: 500m, memory: {was}}}", f"limits: {{cpu: 500m, memory: {mem}}}"))
        before = cache_file(sb)
        report = sync_json(sb, config)
        assert report["updated"], "the edit reached systemd"
    assert cache_file(sb) == before, "a sync that compiled nothing new wrote the cache again"
    assert sys.implementation.cache_tag in CACHE
