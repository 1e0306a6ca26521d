"""Reads the host's CPU topology from /sys (the files kubelet's cAdvisor reads): the online CPUs
(/sys/devices/system/cpu/online), each CPU's topology/{physical_package_id, core_id,
thread_siblings_list, die_id} and each NUMA node's cpulist (/sys/devices/system/node/nodeN/cpulist).
The parsing is `sdqos.kube.cputopology.from_sysfs` (pure); this module only reads the text (the
online list through `sdqos.host.facts.read_online`, its one reader), from
`root` so tests hand it a fake /sys tree in a temp dir."""

from __future__ import annotations

import re
from pathlib import Path

from sdqos.errors import CPUSetError, HostError
from sdqos.host.facts import read_online
from sdqos.kube.cpuset import parse
from sdqos.kube.cputopology import CPUTopology, SysCPU, from_sysfs

_NODE = re.compile(r"node([0-9]+)")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise HostError(f"cannot read {path}: {e.strerror or e}") from None


def _read_optional(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise HostError(f"cannot read {path}: {e.strerror or e}") from None


def read_topology(root: str | Path = "/") -> CPUTopology:
    """The CPU topology of the host whose /sys is under `root`. HostError names the file that
    could not be read or does not hold what the kernel writes there."""
    sysdir = Path(root) / "sys/devices/system"
    online_path = sysdir / "cpu/online"
    try:
        online = read_online(sysdir)  # (the one reader of the online list: host/facts.py)
    except OSError as e:
        raise HostError(f"cannot read {online_path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise HostError(f"{online_path}: not a CPU list") from None
    try:
        online_cpus = parse(online.strip())
    except CPUSetError as e:
        raise HostError(f"{online_path}: {e}") from None
    cpus: dict[int, SysCPU] = {}
    for cpu in online_cpus:
        top = sysdir / f"cpu/cpu{cpu}/topology"
        cpus[cpu] = SysCPU(
            physical_package_id=_read(top / "physical_package_id"),
            thread_siblings_list=_read(top / "thread_siblings_list"),
            core_id=_read_optional(top / "core_id"),
            die_id=_read_optional(top / "die_id"),
        )
    nodes: dict[int, str] = {}
    nodedir = sysdir / "node"
    if nodedir.is_dir():
        for entry in sorted(nodedir.iterdir()):
            m = _NODE.fullmatch(entry.name)
            if m and entry.is_dir():
                nodes[int(m.group(1))] = _read(entry / "cpulist")
    try:
        return from_sysfs(online, cpus, nodes)
    except CPUSetError as e:
        raise HostError(f"{sysdir}: {e}") from None
