"""I/O faults after units changed: the report is still printed, temp files are removed, the exit
code is documented, and no traceback reaches the user. Against the sandbox systemd; the faults are
real (a full tmpfs as /run/sdqos inside the sandbox, a missing directory, a file swapped for a
directory)."""

from __future__ import annotations

import json
from pathlib import Path

from .sbhelpers import active_state, copy_config, sdqos_in

RUN = "/run/sdqos-full"


def test_full_run_dir_after_units_changed_is_one_error_with_the_report(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    env = dict(SDQOS_RUN_DIR=RUN)
    sb.run(["sh", "-c", f"rm -rf {RUN} && mkdir -m 755 {RUN} && mount -t tmpfs -o size=4k,mode=755 tmpfs {RUN}"],
           check=True)
    try:
        # Fill it: the lock file fits, applied.json (8 units) does not.
        sb.run(["sh", "-c", f"head -c 4096 /dev/zero > {RUN}/filler || true"])
        r = sdqos_in(sb, "sync", "--config", str(cfg), "-o", "json", env={**sb_env(), **env})
        assert "Traceback" not in r.stdout + r.stderr
        assert r.returncode == 1, r.stderr
        report = json.loads(r.stdout)
        assert len(report["created"]) == 8  # what was done is reported
        assert any(e.startswith(f"cannot write {RUN}/applied.json: No space left on device") for e in report["errors"])
        assert active_state(sb, "kubepods.slice") == "active"
        left = sb.run(["ls", "-A", RUN], check=True).stdout.split()
        assert not [f for f in left if f.endswith(".tmp") or f.startswith(".applied")], left
    finally:
        sb.run(["umount", RUN])
        sb.run(["rm", "-rf", RUN])


def test_metrics_textfile_in_a_missing_dir_keeps_the_report(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    r = sdqos_in(sb, "sync", "--config", str(cfg), "--metrics-textfile", "/nonexistent/dir/sdqos.prom")
    assert "Traceback" not in r.stdout + r.stderr
    assert r.returncode == 1
    assert r.stdout.startswith("8 created")  # the report, then the error
    assert "sdqos: error: cannot write /nonexistent/dir/sdqos.prom: No such file or directory" in r.stderr


def sb_env() -> dict:
    from sdqos import sandbox as sbx

    return sbx.inner_env()


def test_a_file_swapped_for_a_directory_while_read_is_an_unreadable_file(tmp_path):
    """_read_text is handed a path that passed the checks; what it opens is a directory now."""
    from sdqos.errors import InvalidInput
    from sdqos.loading import configdir

    cfg = tmp_path / "cfg"
    (cfg / "pods" / "a.yaml").mkdir(parents=True)
    try:
        configdir._read_text(cfg, cfg / "pods" / "a.yaml", cfg / "pods" / "a.yaml")
    except InvalidInput as exc:
        assert str(exc) == "pods/a.yaml: is not a regular file (it changed while being read)"
    else:
        raise AssertionError("a directory was read as a pod file")
    assert Path(cfg / "pods" / "a.yaml").is_dir()
