"""What this host is: capacity (CPUs, memory, pids), cgroup mode, page size. Reads /proc and /sys."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by detect_capacity: a sync the last one's stamp proves a no-op needs none of it
    from sdqos.kube.quantity import Quantity

CGROUP_ROOT = Path("/sys/fs/cgroup")
SYS_DEVICES = Path("/sys/devices/system")


def capacity_counts(proc: str | Path = "/proc") -> dict[str, int]:
    """What :func:`detect_capacity` is made of, as plain integers (the no-op proof asks this
    again, without importing quantities): CPUs this process may run on, MemTotal and SwapTotal in
    bytes, kernel.pid_max, keyed by the model's resource names (kube.model CPU, MEMORY, SWAP, PID; a test holds them equal). A resource that cannot be
    read is left out."""
    proc = Path(proc)
    out: dict[str, int] = {}
    try:
        out["cpu"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count()
        if n:
            out["cpu"] = n
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            for key, name in (("MemTotal:", "memory"), ("SwapTotal:", "swap")):
                if line.startswith(key):
                    out[name] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        out["pid"] = int((proc / "sys/kernel/pid_max").read_text().strip())
    except (OSError, ValueError):
        pass
    return out


def detect_capacity(proc: str | Path = "/proc", counts: dict[str, int] | None = None) -> dict[str, Quantity]:
    """CPUs this process may run on, MemTotal, and kernel.pid_max — what kubelet reports as capacity —
    and SwapTotal (``swap``: cadvisor's SwapCapacity, LimitedSwap's pool): :func:`capacity_counts`
    (or ``counts``, already read) as quantities. A resource that cannot be read is left out
    (node.yaml's ``capacity`` must then name it)."""
    from sdqos.kube.quantity import parse_quantity

    return {k: parse_quantity(str(v)) for k, v in (capacity_counts(proc) if counts is None else counts).items()}


def read_online(devices: str | Path = SYS_DEVICES) -> str:
    """The text of ``cpu/online`` (a CPU list), the one reader of it (OSError when it cannot be
    read): the CPUs kubelet checks reservedSystemCPUs against and cAdvisor's topology starts from."""
    with open(Path(devices) / "cpu" / "online", "rb") as fh:
        return fh.read().decode()


def online_cpu_list(devices: str | Path = SYS_DEVICES) -> str | None:
    """:func:`read_online`, stripped; None when it cannot be read."""
    try:
        return read_online(devices).strip()
    except (OSError, UnicodeDecodeError):
        return None


def online_cpus(devices: str | Path = SYS_DEVICES, text: str | None = None) -> frozenset[int] | None:
    """The CPUs online (:func:`read_online`, or ``text`` already read), parsed. None when it
    cannot be read."""
    from sdqos.kube import cpuset

    text = online_cpu_list(devices) if text is None else text
    try:
        return cpuset.parse(text) if text is not None else None
    except ValueError:
        return None


def numa_nodes(devices: str | Path = SYS_DEVICES) -> int:
    """How many NUMA nodes the host has (``node/node<N>``); 1 where the kernel shows none."""
    try:
        return max(1, sum(1 for p in (Path(devices) / "node").iterdir() if p.name[4:].isdigit() and p.name.startswith("node")))
    except OSError:
        return 1


def detect_cgroup_mode(root: Path = CGROUP_ROOT) -> str:
    """"v2" on a unified hierarchy (cgroup2 mounted at /sys/fs/cgroup), "v1" for legacy/hybrid."""
    return "v2" if (root / "cgroup.controllers").exists() else "v1"


def page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 4096


def cpu_usage_ns(control_group: str | None, root: Path = CGROUP_ROOT) -> int | None:
    """CPU time used by a cgroup, read from the kernel when systemd cannot say (CPUUsageNSec is
    unknown where cpu and cpuacct are separate v1 hierarchies): ``cpu.stat`` ``usage_usec`` of the
    unified hierarchy (v2, or hybrid's /sys/fs/cgroup/unified), else v1 ``cpuacct.usage``."""
    if not control_group:
        return None
    rel = control_group.lstrip("/")
    for stat in (root / rel / "cpu.stat", root / "unified" / rel / "cpu.stat"):
        try:
            for line in stat.read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) * 1000
        except (OSError, ValueError):
            continue
    for acct in (root / "cpuacct" / rel / "cpuacct.usage", root / "cpu,cpuacct" / rel / "cpuacct.usage"):
        try:
            return int(acct.read_text().strip())
        except (OSError, ValueError):
            continue
    return None
