"""README's quickstart, run as written in the sandbox (its own systemd, private /etc and /run; podman
storage in a temp dir): every line but the two that install sdqos itself, which this test runs from
its venv. Also: the quickstart's node.yaml plans cleanly on a 2 GiB, 1 CPU host."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .reconcile.test_podman_sandbox import BUSYBOX, _missing
from .sbhelpers import remove_sync_units

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ("python3 -m venv ", "ln -s ")  # sdqos is installed already: this test runs it from its venv


def quickstart_lines() -> list[str]:
    section = (ROOT / "README.md").read_text().split("## Quickstart on a systemd host", 1)[1]
    block = re.search(r"```sh\n(.+?)\n```", section, re.S).group(1)
    return block.splitlines()


def test_the_quickstart_runs_as_written(clean_sandbox, tmp_path):
    missing = _missing()
    if missing:
        reason = "podman prerequisites missing: " + "; ".join(missing)
        if os.environ.get("SDQOS_REQUIRE_PODMAN") == "1":
            pytest.fail(reason + " (SDQOS_REQUIRE_PODMAN=1)", pytrace=False)
        pytest.skip(reason)
    assert os.path.realpath("/bin/busybox") == os.path.realpath(BUSYBOX) or os.path.exists("/bin/busybox")
    sb = clean_sandbox
    lines = quickstart_lines()
    assert [ln for ln in lines if ln.startswith(INSTALL)] == lines[:2]
    store = tmp_path / "podman"
    store.mkdir()
    # podman's own configuration, as the sandbox gives it (no CONTAINERS_CONF: its drop-in in the
    # instance's /etc/containers/containers.conf.d is what lets podman run there); only the
    # storage is this test's
    podman = f"podman --root {store}/root --runroot /run/sdqos-test-podman --storage-driver vfs"
    env = dict(sbx.inner_env(), SDQOS_PODMAN=podman)
    # `sdqos` and `podman` as the quickstart's shell finds them: this venv's sdqos, podman with test storage
    prelude = (f'sdqos() {{ {shlex.quote(sys.executable)} -m sdqos "$@"; }}; '
               f'podman() {{ command $SDQOS_PODMAN "$@"; }}; ')
    try:
        for line in lines[2:]:
            if line.startswith("sdqos install-units"):
                # This test's podman storage is not podman's default: the service is told it the way
                # docs/service.md tells operators with their own (install-units warns without it).
                settings = f"SDQOS_PODMAN={env['SDQOS_PODMAN']}\n"
                sbx.run(sb, ["sh", "-c", 'cat > /etc/sdqos/environment'], input=settings, check=True)
            r = sbx.run(sb, ["sh", "-c", prelude + line], env=env, cwd=str(ROOT), timeout=180)
            expect = 4 if line.startswith("sdqos diff") else 0
            assert r.returncode == expect, f"{line}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}"
            assert "Traceback" not in r.stderr and "warning" not in r.stdout + r.stderr, (line, r.stdout, r.stderr)
            if line.startswith("sdqos status"):
                status = r.stdout
        assert "demo/hello/app" in status and "no process" not in status
        info = sbx.run(sb, ["sh", "-c", '$SDQOS_PODMAN ps --format "{{.Names}} {{.Image}}"'], env=env).stdout
        assert info.split() == ["demo_hello_app", "localhost/sdqos-hello:latest"]
        units = ("sdqos-sync.timer", "sdqos-sync.path", "sdqos-pressure.service")
        assert sbx.run(sb, ["systemctl", "is-active", *units]).stdout.split() == ["active"] * 3
    finally:
        sbx.run(sb, ["sh", "-c", "$SDQOS_PODMAN rm --all --force --time 0"], env=env, timeout=120)
        remove_sync_units(sb, "/etc/systemd/system")
        sbx.run(sb, ["rm", "-rf", "/etc/sdqos"])


def test_the_quickstart_config_plans_on_a_small_host(tmp_path):
    """2 GiB and 1 CPU: allocatable stays positive, kubepods.slice gets a real CPU weight, no warning."""
    cfg = tmp_path / "cfg"
    shutil.copytree(ROOT / "examples" / "quickstart", cfg)
    with open(cfg / "node.yaml", "a") as fh:
        fh.write('capacity: {cpu: "1", memory: 2Gi}\n')
    for p in [cfg, *cfg.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(cfg), "--cgroup", "v2", "-o", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json

    plan = json.loads(r.stdout)
    assert plan["warnings"] == [] and plan["errors"] == []
    assert plan["node"]["allocatable"]["cpu"] == "800m"
    assert plan["node"]["allocatable"]["memory"] == "1664Mi"  # 2 GiB − 128 Mi − 256 Mi (eviction is not enforced)
    kubepods = next(u for u in plan["units"] if u["name"] == "kubepods.slice")
    assert kubepods["properties"]["CPUWeight"] > 1
