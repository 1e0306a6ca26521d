"""The tests' own hygiene: a process a test leaves running does not outlive it (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from .sbhelpers import descendants, wait_for

LEFT: list[int] = []


def test_a_test_that_leaves_a_process_running():
    p = subprocess.Popen(["sh", "-c", "sleep 600 & exec sleep 601"])  # deliberately not ended, with a child
    LEFT.extend([p.pid, *wait_for(lambda: descendants(p.pid), "its child")])
    p.returncode = 0  # (its Popen must not reap it: the fixture is what is tested)


def test_the_next_test_finds_it_and_its_child_ended():
    if not LEFT:
        pytest.skip("runs after the test before it")
    assert not os.path.exists(f"/proc/{LEFT[0]}"), "ended and reaped"
    for pid in LEFT[1:]:  # (reparented, then reaped by init: gone, or at most a zombie)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or " Z " in open(f"/proc/{pid}/stat").read(),
                 "its child ended", 10)
