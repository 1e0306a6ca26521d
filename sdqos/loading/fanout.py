"""Spread CPU-bound work over forked children: parsing a thousand pod manifests on a just-booted
host (empty parse cache) is ~1 ms each, and the CPUs are otherwise idle before the first D-Bus call.

The parent keeps the first chunk for itself; each other chunk goes to a forked child
(:mod:`sdqos.host.children`: its results, strings without a newline such as compact JSON, come back
through a memfd). Any trouble with a child — fork refused, a crash, an exception in ``fn``, short
output — only costs time: the parent runs that chunk itself, so an exception from ``fn`` surfaces
exactly as it would without children.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence, TypeVar

from sdqos.host import children
from sdqos.host.children import usable_cpus

T = TypeVar("T")

MIN_CHUNK = 32  # items per child at least: a fork and its reaping cost ~2-5 ms
MAX_WORKERS = 8
MIN_WAIT = 10.0  # seconds the parent waits for its children at least, once its own chunk is done


def workers_for(n_items: int, cpus: int | None = None) -> int:
    """How many processes (parent included) are worth it for ``n_items``. One when this process
    runs other threads: a forked child gets only the calling thread, and any lock another thread
    held at the fork (allocator, logging, I/O) stays locked in the child forever."""
    cpus = usable_cpus() if cpus is None else cpus
    if not children.may_fork():
        return 1
    return max(1, min(cpus, MAX_WORKERS, n_items // MIN_CHUNK))


def map_chunks(fn: Callable[[Sequence[T]], list[str]], items: Sequence[T], workers: int) -> list[str]:
    """``fn`` over ``items`` split into ``workers`` contiguous chunks, results in item order.
    ``fn`` must return one newline-free string per item and must not depend on state the parent
    changes after the fork (it runs on a copy of the parent's memory)."""
    n = len(items)
    workers = max(1, min(workers, n))
    if workers == 1:
        return fn(items)
    chunks = [items[i * n // workers:(i + 1) * n // workers] for i in range(workers)]
    spawned: list[children.Child | None] = []
    try:
        for chunk in chunks[1:]:
            spawned.append(children.spawn(fn, chunk))
        started = time.monotonic()
        out = fn(chunks[0])
        # A chunk takes a child about what the parent's took: one not done well past that (stopped,
        # stuck) is killed and reaped, and its chunk done here.
        deadline = time.monotonic() + max(MIN_WAIT, 10 * (time.monotonic() - started))
        for i, child in enumerate(spawned):
            got = _collect(child, max(0.0, deadline - time.monotonic())) if child is not None else None
            spawned[i] = None
            out.extend(got if got is not None else fn(chunks[i + 1]))
        return out
    finally:
        for child in spawned:  # an exception in the parent: do not leave work running
            if child is not None:
                children.kill(child)


_collect = children.collect  # (a module global: tests watch what the children deliver)
