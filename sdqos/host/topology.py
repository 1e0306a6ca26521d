"""Reads the host's CPU topology from /sys (the files kubelet's cAdvisor reads): the online CPUs
(/sys/devices/system/cpu/online), each CPU's topology/{physical_package_id, core_id,
thread_siblings_list, die_id} and each NUMA node's cpulist (/sys/devices/system/node/nodeN/cpulist);
for the topology manager the NUMA nodes and their distance rows (nodeN/distance, numa_info.go).
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
from sdqos.kube.topologymanager import NUMAInfo

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


def read_numa_info(root: str | Path = "/") -> NUMAInfo:
    """The NUMA nodes (node/nodeN directories; node 0 alone where the kernel shows none, as
    cAdvisor) and each one's distance row when the kernel has it (absent rows are left out:
    prefer-closest-numa-nodes then refuses, as kubelet does). HostError for a row that is not
    numbers."""
    nodedir = Path(root) / "sys/devices/system/node"
    nodes: list[int] = []
    distances: dict[int, tuple[int, ...]] = {}
    if nodedir.is_dir():
        for entry in nodedir.iterdir():
            m = _NODE.fullmatch(entry.name)
            if not (m and entry.is_dir()):
                continue
            node = int(m.group(1))
            nodes.append(node)
            text = _read_optional(entry / "distance")
            if text is not None:
                try:
                    distances[node] = tuple(int(x) for x in text.split())
                except ValueError:
                    raise HostError(f"{entry / 'distance'}: {text.strip()!r} is not a row of numbers") from None
    return NUMAInfo(nodes=tuple(sorted(nodes)) or (0,), distances=distances)
