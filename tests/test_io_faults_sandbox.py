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
        # no temp file of applied.json, parsed.json (the parse cache) or last-sync.json is left
        assert not [f for f in left if f.startswith(".")], left
        assert "parsed.json" not in left  # it did not fit either
    finally:
        sb.run(["umount", RUN])
        sb.run(["rm", "-rf", RUN])


def test_metrics_textfile_in_a_missing_dir_keeps_the_report(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    r = sdqos_in(sb, "sync", "--config", str(cfg), "--metrics-textfile", "/nonexistent/dir/sdqos.prom")
    assert "Traceback" not in r.stdout + r.stderr
    assert r.returncode == 1
    assert r.stdout.splitlines()[:2] == ["1 error — details below",  # the report, then the error
                                         "8 created, 0 updated, 0 removed, 0 reset, 0 unchanged"]
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


HUGE = """\
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: t}
spec:
  containers:
  - name: app
    resources: {limits: {cpu: "20000000000000", memory: 64Mi}}
"""
LONG_UID = """\
apiVersion: v1
kind: Pod
metadata: {name: long, namespace: t, uid: %s}
spec:
  containers:
  - name: a------------------------------b
"""


def test_a_pod_that_cannot_be_sent_is_invalid_input_and_the_rest_syncs(clean_sandbox, tmp_path):
    """A CPU limit the API server accepts but no kernel can set, a uid that makes unit names too
    long: caught at load time (plan says so too), the pod's units kept, every other pod synced."""
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    (cfg / "pods" / "huge.yaml").write_text(HUGE)
    (cfg / "pods" / "long.yaml").write_text(LONG_UID % ("u" * 128))  # the longest uid; the name's dashes escape to \x2d
    plan = subprocess_plan(cfg)
    assert plan.returncode == 2
    assert "pods/huge.yaml[0]: spec.containers[0].resources: container app's values cannot be set" in plan.stderr
    assert "pods/long.yaml[0]: spec.containers[0].name: makes the container scope name 266 characters long; " \
        "systemd allows 255" in plan.stderr
    r = sdqos_in(sb, "sync", "--config", str(cfg), "-o", "json")
    assert "Traceback" not in r.stdout + r.stderr
    assert r.returncode == 2, r.stderr
    report = json.loads(r.stdout)
    assert len(report["created"]) == 8 and report["errors"] == []  # the example's units, all of them
    assert any("huge.yaml" in e for e in report["invalid"]) and any("long.yaml" in e for e in report["invalid"])


def subprocess_plan(cfg: Path):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(cfg)], capture_output=True, text=True)


def test_a_file_that_vanishes_before_it_is_read_is_an_unreadable_file(tmp_path):
    from sdqos.errors import InvalidInput
    from sdqos.loading import configdir

    cfg = tmp_path / "cfg"
    (cfg / "pods").mkdir(parents=True)
    try:
        configdir._read_text(cfg, cfg / "pods" / "gone.yaml", cfg / "pods" / "gone.yaml")
    except InvalidInput as exc:
        assert str(exc) == "pods/gone.yaml: cannot be read: No such file or directory"
    else:
        raise AssertionError("a vanished file was read")
