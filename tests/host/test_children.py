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
