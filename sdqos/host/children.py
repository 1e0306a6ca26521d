"""Work done in a forked child, its results handed back through a memfd.

Two users: the loader's parse workers (:mod:`sdqos.loading.fanout`, on a just-booted host) and a
full sync's read of the kernel files of the units the last sync applied, done while it plans
(:mod:`sdqos.reconcile.prefetch`). The child runs ``fn`` over its items, writes one newline-free
string per item to the memfd and leaves with ``os._exit`` (no atexit handlers, no flushing of the
parent's buffers). Any trouble — fork refused, a crash, an exception in ``fn``, short output —
makes :func:`collect` answer None; the caller then does the work itself.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

Child = tuple[int, int, int]  # pid, memfd, how many results


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        return os.cpu_count() or 1


def may_fork() -> bool:
    """False while this process runs other threads: a forked child gets only the calling thread,
    and any lock another thread held at the fork (allocator, logging, I/O) stays locked in it."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() <= 1


def spawn(fn: Callable[[Sequence[T]], list[str]], items: Sequence[T]) -> Child | None:
    """``fn(items)`` started in a forked child; None when no child could be made."""
    try:
        fd = os.memfd_create("sdqos-child", os.MFD_CLOEXEC)
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
            results = fn(items)
            data = (f"{len(results)}\n" + "\n".join(results)).encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            status = 0
        except BaseException:  # noqa: BLE001, S110 - the parent does the work itself, and so sees the error
            pass
        finally:
            os._exit(status)
    return pid, fd, len(items)


def collect(child: Child, timeout: float | None = None) -> list[str] | None:
    """The child's results (waiting for it to end), or None when it did not deliver them all. With
    ``timeout``: a child not ended by then (stopped, stuck in the kernel, slow) is killed and
    reaped, and delivers nothing: the caller does the work itself rather than wait on."""
    pid, fd, n = child
    try:
        status = _wait(pid, timeout)
        if status is None:
            os.kill(pid, signal.SIGKILL)  # (a stopped process dies of it too)
            os.waitpid(pid, 0)
            return None
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return None
        size = os.fstat(fd).st_size
        head, _, body = os.pread(fd, size, 0).decode("utf-8").partition("\n")
        results = body.split("\n")
        return results if head == str(n) and len(results) == n else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _wait(pid: int, timeout: float | None) -> int | None:
    """The child's wait status once it ended; None when it has not within ``timeout`` seconds."""
    if timeout is None:
        return os.waitpid(pid, 0)[1]
    deadline = time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)  # readable when the process ends (Linux ≥ 5.3)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            ready, _, _ = select.select([pidfd], [], [], max(0.0, timeout))
        finally:
            os.close(pidfd)
        return os.waitpid(pid, 0)[1] if ready else None
    delay = 0.001
    while True:  # (no pidfd: poll)
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def kill(child: Child) -> None:
    """Stop a child whose results are no longer wanted, and reap it."""
    pid, fd, _ = child
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
    finally:
        os.close(fd)
