"""The kernel's numbers behind kubelet's eviction signals: memory working sets and task counts.

Reads only, the same files kubelet's stats come from (cadvisor through runc's cgroup code, and
pkg/kubelet/stats/pidlimit): a cgroup's memory usage and inactive_file on cgroup v1
(``memory.usage_in_bytes``, ``memory.stat`` total_inactive_file) or v2 (``memory.current``,
``memory.stat`` inactive_file; the root has no memory.current, so anon + file as runc's
rootStatsFromMeminfo does), and kernel.pid_max, kernel.threads-max and the task count of
``/proc/loadavg``. sdqos/kube/eviction.py turns them into signals.
"""

from __future__ import annotations

import select
from dataclasses import dataclass
from pathlib import Path

from sdqos.errors import SignalReadError
from sdqos.kube import eviction
from sdqos.kube.model import MEMORY, PID, NodeConfig
from sdqos.kube.naming import MACHINE_SLICE, slice_name

ROOT = Path("/sys/fs/cgroup")
PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class MemoryStat:
    """A cgroup's memory usage and inactive file cache, bytes."""

    usage: int
    inactive_file: int

    @property
    def working_set(self) -> int:
        return eviction.working_set(self.usage, self.inactive_file)


def _stat(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def memory_stat(cgroup: str, mode: str, root: Path = ROOT) -> MemoryStat | None:
    """The memory usage of a cgroup (``/`` for the node), or None when the cgroup does not exist."""
    rel = cgroup.strip("/")
    base = root / "memory" if mode == "v1" else root
    path = base / rel if rel else base
    try:
        stat = _stat((path / "memory.stat").read_text())
        if mode == "v1":
            return MemoryStat(int((path / "memory.usage_in_bytes").read_text()), stat.get("total_inactive_file", 0))
        if not rel:
            return MemoryStat(stat.get("anon", 0) + stat.get("file", 0), stat.get("inactive_file", 0))
        return MemoryStat(int((path / "memory.current").read_text()), stat.get("inactive_file", 0))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SignalReadError(f"cannot read the memory use of cgroup {cgroup or '/'}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Tasks:
    """kernel.pid_max, kernel.threads-max, and the tasks that exist (``/proc/loadavg``'s total)."""

    pid_max: int
    threads_max: int | None
    tasks: int


def tasks(proc: Path = PROC) -> Tasks:
    """pidlimit.Stats: /proc/loadavg's "running/total" total is preferred to sysinfo's procs
    (which is truncated above 65535)."""
    try:
        pid_max = int((proc / "sys/kernel/pid_max").read_text())
        try:
            threads_max: int | None = int((proc / "sys/kernel/threads-max").read_text())
        except OSError:
            threads_max = None
        total = int((proc / "loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError) as exc:
        raise SignalReadError(f"cannot read the task count from {proc}: {exc}") from None
    return Tasks(pid_max, threads_max, total)


def kubepods_cgroup(node: NodeConfig) -> str:
    """kubepods.slice's cgroup path (under cgroupRoot's slices)."""
    parts = [*node.cgroup_root, "kubepods"]
    return "/" + "/".join(slice_name(parts[: i + 1]) for i in range(len(parts)))


def observe(node: NodeConfig, mode: str, allocatable_memory: int | None,
            root: Path = ROOT, proc: Path = PROC) -> dict[str, eviction.Observation]:
    """The node's signals now. ``allocatable_memory``: what node allocatable holds for pods and
    VMs (None when "pods" is not enforced: no allocatableMemory.available, as kubelet)."""
    node_mem = memory_stat("/", mode, root)
    if node_mem is None:
        raise SignalReadError(f"no memory controller at {root}")
    workloads = None
    if allocatable_memory is not None:
        workloads = 0
        for cgroup in (kubepods_cgroup(node), "/" + MACHINE_SLICE):
            m = memory_stat(cgroup, mode, root)
            workloads += m.working_set if m else 0
    t = tasks(proc)
    pid_capacity = node.capacity[PID].value() if node.capacity_source.get(PID) == "node.yaml" else None
    return eviction.observe(
        memory_capacity=node.capacity[MEMORY].value(), node_usage=node_mem.usage,
        node_inactive_file=node_mem.inactive_file, allocatable_memory=allocatable_memory,
        workloads_working_set=workloads, pid_max=t.pid_max, threads_max=t.threads_max, tasks=t.tasks,
        pid_capacity=pid_capacity)


def processes(cgroup: str, mode: str, root: Path = ROOT) -> int:
    """Processes in a cgroup and below (cadvisor's ProcessCount: the cgroup.procs entries), read
    in the memory hierarchy on v1."""
    return len(process_ids(cgroup, mode, root))


def process_ids(cgroup: str, mode: str, root: Path = ROOT) -> list[int]:
    """The PIDs in a cgroup's ``cgroup.procs`` and below (a process that exited is no longer
    listed, even while it is a zombie), read in the memory hierarchy on v1."""
    return [pid for _rel, pids in _procs_below(cgroup, mode, root) for pid in pids]


def running_units(cgroup: str, mode: str, root: Path = ROOT) -> set[str]:
    """The units (scopes, services) with processes at or below ``cgroup``: for each cgroup there
    that holds a process, the first ``.scope``/``.service`` of its path from ``cgroup`` down (a
    scope ``cgroup`` itself when the processes are its own) — systemd's unit of those processes,
    read from the kernel (no D-Bus)."""
    top = cgroup.strip("/").rsplit("/", 1)[-1]
    out = set()
    for rel, pids in _procs_below(cgroup, mode, root):
        if pids:
            unit = next((p for p in [top, *rel] if p.endswith((".scope", ".service"))), None)
            if unit is not None:
                out.add(unit)
    return out


def _procs_below(cgroup: str, mode: str, root: Path) -> list[tuple[list[str], list[int]]]:
    """(path below ``cgroup`` as parts, its cgroup.procs) for ``cgroup`` and every cgroup below."""
    import os

    rel = cgroup.strip("/")
    base = root / "memory" if mode == "v1" else root
    top = base / rel if rel else base
    out = []
    for d, _dirs, _files in os.walk(top):
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids = [int(line) for line in f if line.strip()]
        except FileNotFoundError:
            continue  # removed while we walked
        except OSError as exc:
            raise SignalReadError(f"cannot list the processes of cgroup {cgroup}: {exc}") from None
        out.append(([p for p in os.path.relpath(d, top).split(os.sep) if p != "."], pids))
    return out


# --- being woken: memcg threshold notifications (cgroup v1) --------------------------------------


class MemcgNotifier:
    """kubelet's memory_threshold_notifier on cgroup v1: an eventfd the kernel signals when the
    cgroup's ``memory.usage_in_bytes`` crosses ``threshold`` bytes (``cgroup.event_control``).
    Closing the eventfd unregisters it; to move the threshold, make a new notifier."""

    def __init__(self, cgroup: str, threshold: int, root: Path = ROOT):
        import os

        rel = cgroup.strip("/")
        base = root / "memory" / rel if rel else root / "memory"
        self.threshold = threshold
        self._usage = os.open(base / "memory.usage_in_bytes", os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            try:
                with open(base / "cgroup.event_control", "w") as f:
                    f.write(f"{self._efd} {self._usage} {max(0, threshold)}")
            except OSError:
                os.close(self._efd)
                raise
        except OSError as exc:
            os.close(self._usage)
            raise SignalReadError(f"cannot register a memory threshold on cgroup {cgroup or '/'}: {exc}") from None

    def fileno(self) -> int:
        return self._efd

    def drain(self) -> None:
        import os

        try:
            os.eventfd_read(self._efd)
        except BlockingIOError:
            pass

    def close(self) -> None:
        import os

        for fd in (self._efd, self._usage):
            try:
                os.close(fd)
            except OSError:
                pass


# --- being woken: PSI triggers (cgroup v2 and any kernel with CONFIG_PSI) ------------------------

PSI_WINDOW_US = 500_000  # the kernel's shortest window (WINDOW_MIN_US): updates every 50 ms
PSI_STALL_US = 50_000  # 10 % of it: some task waited that long for memory within the window
PSI_UNPRIVILEGED_WINDOW_US = 2_000_000  # without CAP_SYS_RESOURCE the window must be a multiple of 2 s


class PsiTrigger:
    """A pressure stall trigger (the kernel's Documentation/accounting/psi.rst): poll(2) reports
    POLLPRI when tasks stalled on memory for ``stall_us`` within a ``window_us`` window — the sign
    that the node is short of memory now, long before the kernel's OOM killer.

    The statement is written in one write ending in a NUL: /proc/pressure/*'s write handler
    overwrites the last byte it is given with the string's end, so "some 50000 500000" without one
    reads as a 50 ms window and is refused (EINVAL); cgroup files (kernfs) have no such quirk.
    Without CAP_SYS_RESOURCE, kernels since 6.5 take only windows that are multiples of 2 s (EINVAL
    otherwise) and older ones refuse to open the file for writing (EPERM): then the 2 s window is
    tried. The trigger lives as long as its file descriptor."""

    events = select.POLLPRI

    def __init__(self, path: Path = PROC / "pressure" / "memory", stall_us: int = PSI_STALL_US,
                 window_us: int = PSI_WINDOW_US):
        import errno
        import os

        tries = [(stall_us, window_us)]
        if window_us % PSI_UNPRIVILEGED_WINDOW_US:
            tries.append((stall_us * PSI_UNPRIVILEGED_WINDOW_US // window_us, PSI_UNPRIVILEGED_WINDOW_US))
        last: OSError | None = None
        for stall, window in tries:
            try:
                fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                last = exc
                if exc.errno == errno.EPERM:
                    continue
                break
            try:
                os.write(fd, f"some {stall} {window}\0".encode())
            except OSError as exc:
                os.close(fd)
                last = exc
                continue
            self._fd, self.path, self.stall_us, self.window_us = fd, path, stall, window
            return
        raise SignalReadError(f"cannot register a memory pressure (PSI) trigger on {path}: {last}")

    def fileno(self) -> int:
        return self._fd

    def drain(self) -> None:
        """Nothing to read: poll(2) itself consumes the event (psi_trigger_poll)."""

    def close(self) -> None:
        import os

        try:
            os.close(self._fd)
        except OSError:
            pass


def wait(sources, timeout_s: float) -> list:
    """Block until one of ``sources`` (notifiers, triggers) fires or ``timeout_s`` passes; returns
    the sources that fired, drained. No busy loop: one poll(2)."""
    p = select.poll()
    by_fd = {}
    for s in sources:
        fd = s.fileno()
        by_fd[fd] = s
        p.register(fd, getattr(s, "events", select.POLLIN))
    fired = []
    for fd, _ev in p.poll(max(0.0, timeout_s) * 1000):
        s = by_fd[fd]
        s.drain()
        fired.append(s)
    return fired
