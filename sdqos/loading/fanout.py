"""Spread CPU-bound work over forked children: parsing a thousand pod manifests on a just-booted
host (empty parse cache) is ~1 ms each, and the CPUs are otherwise idle before the first D-Bus call.

The parent keeps the first chunk for itself; each other chunk goes to a forked child, which writes
its results (strings without a newline, e.g. compact JSON) to a memfd and leaves with ``os._exit``
(no atexit handlers, no flushing of the parent's buffers). Any trouble with a child — fork refused,
a crash, an exception in ``fn``, short output — only costs time: the parent runs that chunk itself,
so an exception from ``fn`` surfaces exactly as it would without children.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

MIN_CHUNK = 32  # items per child at least: a fork and its reaping cost ~2-5 ms
MAX_WORKERS = 8


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        return os.cpu_count() or 1


def workers_for(n_items: int, cpus: int | None = None) -> int:
    """How many processes (parent included) are worth it for ``n_items``. One when this process
    runs other threads: a forked child gets only the calling thread, and any lock another thread
    held at the fork (allocator, logging, I/O) stays locked in the child forever."""
    cpus = usable_cpus() if cpus is None else cpus
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
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
    children: list[tuple[int, int, Sequence[T]] | None] = []
    try:
        for chunk in chunks[1:]:
            children.append(_spawn(fn, chunk))
        out = fn(chunks[0])
        for i, child in enumerate(children):
            got = _collect(child) if child is not None else None
            children[i] = None
            out.extend(got if got is not None else fn(chunks[i + 1]))
        return out
    finally:
        for child in children:  # an exception in the parent: do not leave work running
            if child is not None:
                _kill(child)


def _spawn(fn: Callable[[Sequence[T]], list[str]], chunk: Sequence[T]) -> tuple[int, int, Sequence[T]] | None:
    try:
        fd = os.memfd_create("sdqos-fanout", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(fd)
        return None
    if pid == 0:  # the child: never returns
        status = 1
        try:
            results = fn(chunk)
            data = (f"{len(results)}\n" + "\n".join(results)).encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            status = 0
        except BaseException:  # noqa: BLE001, S110 - the parent redoes the chunk, and so sees the error
            pass
        finally:
            os._exit(status)
    return pid, fd, chunk


def _collect(child: tuple[int, int, Sequence[T]]) -> list[str] | None:
    """The child's results, or None when it did not deliver them all."""
    pid, fd, chunk = child
    try:
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return None
        size = os.fstat(fd).st_size
        head, _, body = os.pread(fd, size, 0).decode("utf-8").partition("\n")
        results = body.split("\n")
        return results if head == str(len(chunk)) and len(results) == len(chunk) else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _kill(child: tuple[int, int, Sequence[T]]) -> None:
    pid, fd, _ = child
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
    finally:
        os.close(fd)
