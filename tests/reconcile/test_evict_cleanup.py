"""waitForPodsCleanup as the loop does it: after an eviction, the next look waits until the
victim's cgroup is empty *and* its processes are reaped (a zombie still holds its PID, which
pid.available counts): those it had, and the orphans PID 1 has still to reap. A real zombie of this
test process stands in for the first; a /proc whose PID 1 has not reaped an orphan for the second
(seen in the v2 guest: systemd reaps a fork bomb's hundreds one per turn of its event loop)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from sdqos.host import procfs
from sdqos.reconcile import evict

STAT = " 0 0 0 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n"


def _cgroup(tmp_path: Path, procs: str = "") -> Path:
    root = tmp_path / "cg"
    (root / "pod").mkdir(parents=True)
    (root / "pod" / "cgroup.procs").write_text(procs)
    return root


def _later(action, seconds: float = 0.3) -> tuple[threading.Thread, threading.Event]:
    done = threading.Event()

    def run() -> None:
        time.sleep(seconds)
        action()
        done.set()

    t = threading.Thread(target=run)
    t.start()
    return t, done


def test_cleanup_waits_until_the_victims_own_zombies_are_reaped(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    child = subprocess.Popen(["true"])
    while not procfs.zombies([child.pid]):
        time.sleep(0.01)
    (proc / str(child.pid)).symlink_to(f"/proc/{child.pid}")  # this /proc holds the zombie alone
    t, reaped = _later(child.wait)
    evict.wait_cleanup("/pod", "v2", _cgroup(tmp_path), [child.pid], proc)
    assert reaped.is_set()  # it returned only after the zombie was reaped
    t.join()


def test_cleanup_waits_until_pid_1_has_reaped_the_orphans(tmp_path):
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "stat").write_text("4242 (python3) Z 1" + STAT)  # forked after the victim's PIDs were read
    t, reaped = _later(lambda: (proc / "4242" / "stat").unlink())
    evict.wait_cleanup("/pod", "v2", _cgroup(tmp_path), [], proc)
    assert reaped.is_set()
    t.join()


def test_cleanup_waits_for_the_cgroup_and_then_for_nothing_more(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    proc.mkdir()
    root = _cgroup(tmp_path, "4242\n")
    t, emptied = _later(lambda: (root / "pod" / "cgroup.procs").write_text(""))
    evict.wait_cleanup("/pod", "v2", root, [4242], proc)
    assert emptied.is_set()
    t.join()
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    evict.wait_cleanup("/pod", "v2", root, [4242], proc)  # no process, no zombie: no wait at all
    assert slept == []


def test_after_a_memory_eviction_zombies_are_not_waited_for(tmp_path, monkeypatch):
    """A zombie holds a PID, not memory: after an eviction for memory (no PIDs given) the next look
    comes as soon as the cgroup is empty, whatever PID 1 has still to reap."""
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "stat").write_text("4242 (python3) Z 1" + STAT)
    slept: list[float] = []

    def sleep(s: float) -> None:  # PID 1 reaps it while we wait
        slept.append(s)
        (proc / "4242" / "stat").unlink()

    monkeypatch.setattr(time, "sleep", sleep)
    evict.wait_cleanup("/pod", "v2", _cgroup(tmp_path), None, proc)
    assert slept == []
    evict.wait_cleanup("/pod", "v2", _cgroup(tmp_path / "x"), [], proc)  # for PIDs it waits
    assert slept == [evict.POD_CLEANUP_POLL_S]
