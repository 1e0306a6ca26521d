"""waitForPodsCleanup as the loop does it: after an eviction, the next look waits until the
victim's cgroup is empty *and* the processes it had are reaped (a zombie still holds its PID, which
pid.available counts). A real zombie of this test process stands in for a fork bomb's children that
PID 1 has not reaped yet."""

from __future__ import annotations

import subprocess
import threading
import time

from sdqos.host import pressure
from sdqos.reconcile import evict


def _zombie() -> subprocess.Popen:
    child = subprocess.Popen(["true"])
    while not pressure.zombies([child.pid]):
        time.sleep(0.01)
    return child


def test_cleanup_waits_until_the_victims_zombies_are_reaped(tmp_path):
    (tmp_path / "pod").mkdir()
    (tmp_path / "pod" / "cgroup.procs").write_text("")  # the cgroup is empty already
    child = _zombie()
    reaped = threading.Event()

    def reap() -> None:
        time.sleep(0.3)
        child.wait()
        reaped.set()

    t = threading.Thread(target=reap)
    t.start()
    evict.wait_cleanup("/pod", "v2", tmp_path, [child.pid])
    assert reaped.is_set()  # it returned only after the zombie was reaped
    t.join()


def test_cleanup_waits_for_the_cgroup_then_returns_at_once_without_zombies(tmp_path):
    procs = tmp_path / "pod" / "cgroup.procs"
    procs.parent.mkdir()
    procs.write_text("4242\n")
    emptied = threading.Event()

    def empty() -> None:
        time.sleep(0.3)
        procs.write_text("")
        emptied.set()

    t = threading.Thread(target=empty)
    t.start()
    evict.wait_cleanup("/pod", "v2", tmp_path, [4242])  # 4242 left the cgroup and is no zombie here
    assert emptied.is_set()
    t.join()
    gone = subprocess.Popen(["true"])
    gone.wait()
    start = time.monotonic()
    evict.wait_cleanup("/pod", "v2", tmp_path, [gone.pid])
    assert time.monotonic() - start < evict.POD_CLEANUP_POLL_S  # nothing to wait for: no sleep at all
