"""sdqos.host.children: work in a forked child, handed back through a memfd; a child whose work is
not wanted is stopped and reaped, never left behind."""

from __future__ import annotations

import os
import time

import pytest

from sdqos.host import children


def _upper(items):
    return [str(x).upper() for x in items]


def _slow(items):
    time.sleep(30)
    return list(items)


def _dies(items):
    os._exit(3)


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_childs_results_come_back_in_order():
    child = children.spawn(_upper, ["a", "b;c", "d|e"])
    assert child is not None
    assert children.collect(child) == ["A", "B;C", "D|E"]
    assert _reaped(child[0])


@pytest.mark.parametrize("fn", [_dies, lambda items: ["no", "newline\nallowed"], lambda items: 1 / 0])
def test_a_child_that_fails_delivers_nothing(fn):
    child = children.spawn(fn, ["x", "y"])
    assert child is not None
    assert children.collect(child) is None
    assert _reaped(child[0])


def test_a_child_no_longer_wanted_is_killed_and_reaped():
    child = children.spawn(_slow, ["x"])
    assert child is not None
    t = time.monotonic()
    children.kill(child)
    assert time.monotonic() - t < 5
    assert _reaped(child[0])
    with pytest.raises(OSError):
        os.fstat(child[1])  # its memfd is closed


@pytest.mark.parametrize("how", ["stopped", "slow"])
def test_a_child_that_does_not_end_by_the_deadline_is_killed_and_reaped(how):
    """A child stopped (SIGSTOP) or still busy when the deadline passes delivers nothing; it is
    killed and reaped, not waited for."""
    import signal

    child = children.spawn(_slow if how == "slow" else _upper, ["x"])
    assert child is not None
    if how == "stopped":
        os.kill(child[0], signal.SIGSTOP)  # (it may have ended already: then it delivers)
    t = time.monotonic()
    got = children.collect(child, 0.5)
    assert time.monotonic() - t < 10
    assert got is None or (how == "stopped" and got == ["X"])
    assert _reaped(child[0])
    with pytest.raises(OSError):
        os.fstat(child[1])


def test_a_stopped_child_delivers_nothing_within_the_deadline():
    import signal

    child = children.spawn(_slow, ["x"])
    assert child is not None
    os.kill(child[0], signal.SIGSTOP)
    t = time.monotonic()
    assert children.collect(child, 0.5) is None
    assert time.monotonic() - t < 10 and _reaped(child[0])
