"""Ctrl-C always works: every long command ends on the first SIGINT, whenever it comes (starting
up, loading, in the event loop, between screens, after exec), and leaves nothing it started
running. Run it while the machine is busy (e.g. `stress-ng --cpu 2`) to see it under load: the
test itself starts no load, it sends SIGINT at several points instead."""

from __future__ import annotations

import re
import sys

import pytest

from sdqos import sandbox as sbx

from ..sbhelpers import copy_config, end_tree, interrupt_at, sdqos_in, sync_json, wait_for

DELAYS = (0.0, 0.05, 0.2, 0.5, 1.0, 2.0, 3.5)
SDQOS = [sys.executable, "-m", "sdqos"]


PYTHON_STARTING = "Fatal Python error: init_"  # CPython's own start-up, before sdqos runs


def interpreter_starting(err: str) -> bool:
    """The interpreter ended on the SIGINT before any of sdqos ran: CPython's fatal start-up error,
    or runpy's KeyboardInterrupt while it still locates sdqos/__main__.py (every frame frozen)."""
    if err.startswith(PYTHON_STARTING):
        return True
    frames = re.findall(r'^  File "([^"]+)"', err, re.M)
    return (err.startswith("Traceback") and err.rstrip().endswith("KeyboardInterrupt") and bool(frames)
            and all(f.startswith("<frozen ") for f in frames))


def ended(rc, out, err, took, what):
    assert rc is not None, f"{what}: still running 60 s after Ctrl-C:\n{err}"
    if interpreter_starting(err):
        return -2
    assert "Traceback" not in err and "internal error" not in err, (what, err)
    return rc


@pytest.mark.parametrize("delay", DELAYS)
def test_status_watch_ends_on_the_first_ctrl_c(clean_sandbox, tmp_path, delay):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    rc, out, err, took = interrupt_at(sb, SDQOS + ["status", "--config", str(cfg), "--interval", "0",
                                                   "--watch", "0.2"], delay)
    rc = ended(rc, out, err, took, "status --watch")
    if "Ctrl-C stops" in out:  # it was watching: that is how a watch ends (as watch(1))
        assert (rc, err) == (0, ""), (rc, err)
    else:  # before its first screen: interrupted (-2: before Python had its handler)
        assert rc in (0, 130, -2), (rc, err)


@pytest.mark.parametrize("delay", DELAYS)
def test_sync_ends_on_the_first_ctrl_c_and_the_next_sync_converges(clean_sandbox, tmp_path, delay):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    rc, out, err, took = interrupt_at(sb, SDQOS + ["sync", "--config", str(cfg)], delay)
    assert ended(rc, out, err, took, "sync") in (0, 130, -2), (rc, err)
    if rc == 130:
        assert err.endswith("sdqos: interrupted\n") or err == "", err
    r = sdqos_in(sb, "sync", "--config", str(cfg), timeout=120)
    assert r.returncode == 0, r.stderr
    assert sdqos_in(sb, "sync", "--config", str(cfg)).stdout.startswith("nothing to do")


@pytest.mark.parametrize("delay", (0.1, 0.3, 0.6, 1.0))
def test_sync_settle_ends_on_the_first_ctrl_c_with_no_further_pass(clean_sandbox, tmp_path, delay):
    """--settle syncs again while the config changes: a Ctrl-C ends it, however the config changes."""
    import subprocess
    import time as t

    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    node = cfg / "node.yaml"
    toucher = subprocess.Popen(["sh", "-c", f"while :; do touch {node}; sleep 0.1; done"], start_new_session=True)
    try:
        t0 = t.monotonic()
        rc, out, err, took = interrupt_at(sb, SDQOS + ["sync", "--settle", "--config", str(cfg)], delay)
    finally:
        end_tree(toucher)
    assert ended(rc, out, err, took, "sync --settle") in (0, 130, -2), (rc, err, t.monotonic() - t0)
    if "sdqos: interrupted" in err:  # a pass was interrupted: the end, not one more pass
        assert rc == 130 and err.endswith("sdqos: interrupted\n"), (rc, out, err)
    assert took < 30, took


@pytest.mark.parametrize("delay", DELAYS)
def test_run_ends_on_the_first_ctrl_c_and_leaves_no_process(clean_sandbox, tmp_path, delay):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    rc, out, err, took = interrupt_at(sb, SDQOS + ["run", "shop/web", "nginx", "--config", str(cfg), "--",
                                                   "sleep", "3001"], delay)
    assert ended(rc, out, err, took, "run") in (130, -2), (rc, err)  # sdqos's, or the command's after exec
    wait_for(lambda: sbx.run(sb, ["pgrep", "-f", "sleep 3001"]).returncode == 1, "no sleep left", 30)


@pytest.mark.parametrize("evict", ([], ["--evict"]))
@pytest.mark.parametrize("delay", DELAYS)
def test_pressure_ends_on_the_first_ctrl_c(clean_sandbox, tmp_path, delay, evict):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    rc, out, err, took = interrupt_at(sb, SDQOS + ["pressure", "--config", str(cfg), "--interval", "1", *evict],
                                      delay)
    assert ended(rc, out, err, took, "pressure") in (130, -2), (rc, err)
