"""Parsing spread over forked children (sdqos.loading.fanout): the same results in the same order as one
process, a failing child costs only time, and nothing is left running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sdqos.kube.quantity import Quantity
from sdqos.loading import fanout
from sdqos.loading.configdir import load_config

CAPACITY = {"cpu": Quantity.parse("64"), "memory": Quantity.parse("256Gi"), "pid": Quantity.parse("4194304")}
PARENT = os.getpid()


SPAWNED: list[int] = []  # the children this module's current test forked (fixture below)


@pytest.fixture(autouse=True)
def _own_children(monkeypatch):
    """Record each child the fan-out forks, so the check looks only at those: any other child of
    pytest (another test's process, a sandbox's nsenter) is not this test's business."""
    from sdqos.host import children

    spawn = children.spawn

    def recorded(fn, items):
        child = spawn(fn, items)
        if child is not None and os.getpid() == PARENT:
            SPAWNED.append(child[0])
        return child
    SPAWNED.clear()
    monkeypatch.setattr(children, "spawn", recorded)
    yield
    SPAWNED.clear()


def no_children_left() -> bool:
    """Every child this test forked is gone and reaped (none running, none a zombie)."""
    for pid in SPAWNED:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue  # reaped
        return False  # still running, or a zombie nobody reaped
    return True


def tag(chunk):
    return [f"{x}@{os.getpid()}" for x in chunk]


@pytest.mark.parametrize("n,workers", [(1, 4), (3, 3), (10, 3), (100, 4), (7, 1)])
def test_results_in_item_order_from_several_processes(n, workers):
    out = fanout.map_chunks(tag, list(range(n)), workers)
    assert [int(s.split("@")[0]) for s in out] == list(range(n))
    pids = {s.split("@")[1] for s in out}
    assert len(pids) == min(n, workers), "every chunk but the first ran in a child"
    assert str(PARENT) in pids
    assert no_children_left()


def test_child_failure_is_redone_by_the_parent():
    def only_parent_succeeds(chunk):
        if os.getpid() != PARENT:
            raise RuntimeError("boom in a child")
        return [str(x) for x in chunk]

    assert fanout.map_chunks(only_parent_succeeds, list(range(9)), 3) == [str(x) for x in range(9)]
    assert no_children_left()


def test_child_killed_or_short_output_is_redone_by_the_parent():
    def child_dies(chunk):
        if os.getpid() != PARENT and chunk[0] == 3:
            os._exit(0)  # exits "cleanly" without writing: the parent must notice the missing results
        if os.getpid() != PARENT:
            os.kill(os.getpid(), 9)
        return [str(x) for x in chunk]

    assert fanout.map_chunks(child_dies, list(range(9)), 3) == [str(x) for x in range(9)]
    assert no_children_left()


def test_an_error_of_fn_reaches_the_caller_as_without_children():
    def always(chunk):
        raise ValueError(f"bad {chunk[0]}")

    with pytest.raises(ValueError, match="bad 0"):
        fanout.map_chunks(always, list(range(9)), 3)
    assert no_children_left()


def test_empty_strings_and_unicode_survive():
    items = ["", "ä", "x" * 100_000, ""]
    assert fanout.map_chunks(lambda c: list(c), items, 4) == items


def test_workers_for_sizes():
    assert fanout.workers_for(10, cpus=8) == 1
    assert fanout.workers_for(1000, cpus=2) == 2
    assert fanout.workers_for(1000, cpus=64) == fanout.MAX_WORKERS
    assert fanout.workers_for(100, cpus=64) == 100 // fanout.MIN_CHUNK


POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: t}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: {cpu}, memory: 64Mi}}
"""


def test_config_loaded_by_several_processes_equals_one_process(tmp_path: Path, monkeypatch):
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "vms").mkdir()
    (d / "node.yaml").write_text("kubeReserved: {cpu: 500m}\n")
    for i in range(60):
        cpu = "12x" if i % 17 == 5 else f"{10 + i}m"  # a bad quantity now and then
        text = POD.format(i=i, cpu=cpu) if i % 23 != 7 else "spec: [unclosed\n"  # and broken YAML
        (d / "pods" / f"p{i:02d}.yaml").write_text(text)
    (d / "pods" / "dup.yaml").write_text(POD.format(i=3, cpu="1"))  # a duplicate pod across files
    (d / "vms" / "vm.yaml").write_text("apiVersion: sdqos.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: v}\n"
                                       "spec: {resources: {limits: {cpu: 1, memory: 1Gi}}}\n")
    for p in [d, *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)

    def summary(c):
        return (c.pods, c.vms, [str(e) for e in c.errors], c.failed_files, c.warnings, sorted(c.invalid_keys))

    delivered = []
    collect = fanout._collect
    monkeypatch.setattr(fanout, "_collect",
                        lambda child, timeout=None: delivered.append(collect(child, timeout)) or delivered[-1])
    one = summary(load_config(d, detected=CAPACITY, workers=1))
    assert not delivered
    assert one[2] and one[3], "the config has errors and failed files"
    assert len(one[0]) > 50 and one[1]
    for workers in (2, 5):
        assert summary(load_config(d, detected=CAPACITY, workers=workers)) == one
    run = tmp_path / "run"
    assert summary(load_config(d, detected=CAPACITY, workers=4, cache_dir=run)) == one
    assert summary(load_config(d, detected=CAPACITY, workers=4, cache_dir=run)) == one  # from the cache
    assert len(delivered) == 1 + 4 + 3 and all(r is not None for r in delivered), "the children parsed"
    assert no_children_left()


def test_children_reaped_by_the_kernel_still_give_the_right_answer():
    """With SIGCHLD ignored (inherited from a careless parent), the kernel reaps the children and
    waitpid fails: their results are not trusted, the parent parses every chunk itself."""
    import signal

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        out = fanout.map_chunks(tag, list(range(12)), 3)
    finally:
        signal.signal(signal.SIGCHLD, old)
    assert [int(s.split("@")[0]) for s in out] == list(range(12))
    assert {s.split("@")[1] for s in out} == {str(PARENT)}


def test_no_fork_while_other_threads_run():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert fanout.workers_for(1000, cpus=4) == 1
    finally:
        stop.set()
        t.join()
    assert fanout.workers_for(1000, cpus=4) == 4


def test_a_child_that_never_ends_is_killed_and_its_chunk_done_by_the_parent(monkeypatch):
    """A child stopped (SIGSTOP) before its work: the parent waits MIN_WAIT at most, kills and
    reaps it, and does that chunk itself (it waited forever, and a sync held its lock meanwhile)."""
    import signal
    import time

    monkeypatch.setattr(fanout, "MIN_WAIT", 1.0)

    def stops_in_a_child(chunk):
        if os.getpid() != PARENT and chunk[0] == 3:
            os.kill(os.getpid(), signal.SIGSTOP)
        return [str(x) for x in chunk]

    def hung(*_):
        raise AssertionError("the parent waited on a stopped child")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    t = time.monotonic()
    try:
        assert fanout.map_chunks(stops_in_a_child, list(range(9)), 3) == [str(x) for x in range(9)]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t < 30
    assert no_children_left()
