"""The host's CPU topology as kubelet's CPU manager sees it (pkg/kubelet/cm/cpumanager/topology/
topology.go, 1.36): `CPUTopology` {NumCPUs, NumCores, NumSockets, NumNUMANodes, CPUDetails}, each
CPU → (NUMA node, socket, core). Pure: `from_sysfs` builds it from the text of the /sys files
(`sdqos/host/topology.py` reads them).

As kubelet's `Discover` (from cAdvisor's machine info): a CPU's core id is the lowest CPU id among
its thread siblings (`getUniqueCoreID`), not the sysfs core_id (which repeats across sockets);
NumCores counts those physical cores, NumSockets the distinct physical_package_ids, NumNUMANodes the
NUMA nodes holding CPUs (a kernel without NUMA: node 0 for every CPU, as cAdvisor).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from sdqos.errors import CPUSetError
from sdqos.kube.cpuset import CPUSet, parse


@dataclass(frozen=True)
class CPUInfo:
    """topology.CPUInfo (the uncore cache id is not kept: no option sdqos accepts uses it)."""

    numa_node: int
    socket: int
    core: int
    die: int | None = None  # /sys .../topology/die_id when the kernel has it; informational


class CPUDetails(Mapping[int, CPUInfo]):
    """topology.CPUDetails: cpu id → CPUInfo, with upstream's queries (each returns a CPUSet)."""

    __slots__ = ("_m",)

    def __init__(self, infos: Mapping[int, CPUInfo] | Iterable[tuple[int, CPUInfo]] = ()):
        self._m: dict[int, CPUInfo] = dict(infos)

    def __getitem__(self, cpu: int) -> CPUInfo:
        return self._m[cpu]

    def __iter__(self) -> Iterator[int]:
        return iter(self._m)

    def __len__(self) -> int:
        return len(self._m)

    def __repr__(self) -> str:
        return f"CPUDetails({self._m!r})"

    def keep_only(self, cpus: Iterable[int]) -> CPUDetails:
        keep = frozenset(cpus)
        return CPUDetails({c: i for c, i in self._m.items() if c in keep})

    def cpus(self) -> CPUSet:
        return CPUSet(self._m)

    def numa_nodes(self) -> CPUSet:
        return CPUSet(i.numa_node for i in self._m.values())

    def sockets(self) -> CPUSet:
        return CPUSet(i.socket for i in self._m.values())

    def cores(self) -> CPUSet:
        return CPUSet(i.core for i in self._m.values())

    def numa_nodes_in_sockets(self, *ids: int) -> CPUSet:
        return CPUSet(i.numa_node for i in self._m.values() if i.socket in ids)

    def sockets_in_numa_nodes(self, *ids: int) -> CPUSet:
        return CPUSet(i.socket for i in self._m.values() if i.numa_node in ids)

    def cores_in_numa_nodes(self, *ids: int) -> CPUSet:
        return CPUSet(i.core for i in self._m.values() if i.numa_node in ids)

    def cores_in_sockets(self, *ids: int) -> CPUSet:
        return CPUSet(i.core for i in self._m.values() if i.socket in ids)

    def cpus_in_numa_nodes(self, *ids: int) -> CPUSet:
        return CPUSet(c for c, i in self._m.items() if i.numa_node in ids)

    def cpus_in_sockets(self, *ids: int) -> CPUSet:
        return CPUSet(c for c, i in self._m.items() if i.socket in ids)

    def cpus_in_cores(self, *ids: int) -> CPUSet:
        return CPUSet(c for c, i in self._m.items() if i.core in ids)


@dataclass(frozen=True)
class CPUTopology:
    """topology.CPUTopology."""

    num_cpus: int
    num_cores: int
    num_sockets: int
    num_numa_nodes: int
    details: CPUDetails = field(default_factory=CPUDetails)

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_numa_node(self) -> int:
        return self.num_cpus // self.num_numa_nodes if self.num_numa_nodes else 0

    def cpu_core_id(self, cpu: int) -> int:
        """CPUCoreID; KeyError for an unknown CPU (upstream: an error)."""
        return self.details[cpu].core


def make_topology(details: Mapping[int, CPUInfo], *, num_sockets: int | None = None,
                  num_cores: int | None = None) -> CPUTopology:
    """A CPUTopology whose counts follow from its CPUs (as Discover computes them). Upstream's
    test literals state NumSockets/NumCores themselves; pass them to keep theirs."""
    d = CPUDetails(details)
    return CPUTopology(
        num_cpus=len(d),
        num_cores=len(d.cores()) if num_cores is None else num_cores,
        num_sockets=len(d.sockets()) if num_sockets is None else num_sockets,
        num_numa_nodes=len(d.numa_nodes()),
        details=d,
    )


@dataclass(frozen=True)
class SysCPU:
    """The text of one CPU's /sys/devices/system/cpu/cpuN/topology files (None: absent)."""

    physical_package_id: str
    thread_siblings_list: str
    core_id: str | None = None
    die_id: str | None = None


def _int(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CPUSetError(f"{what}: {text.strip()!r} is not a number") from None


def from_sysfs(online: str, cpus: Mapping[int, SysCPU], node_cpulists: Mapping[int, str]) -> CPUTopology:
    """Build the topology from /sys text: `online` (cpu/online), each online CPU's topology
    files, and each NUMA node's cpulist (node/nodeN/cpulist; empty mapping: no NUMA). Raises
    CPUSetError naming the file whose text is not what the kernel writes."""
    online_set = parse(online.strip())
    numa_of: dict[int, int] = {}
    for node, text in node_cpulists.items():
        for cpu in parse(text.strip()):
            numa_of[cpu] = node
    infos: dict[int, CPUInfo] = {}
    for cpu in sorted(online_set):
        if cpu not in cpus:
            raise CPUSetError(f"cpu{cpu}/topology: missing for an online CPU")
        f = cpus[cpu]
        try:
            siblings = parse(f.thread_siblings_list.strip()) & online_set
        except CPUSetError as e:
            raise CPUSetError(f"cpu{cpu}/topology/thread_siblings_list: {e}") from None
        core = min(siblings) if siblings else cpu  # getUniqueCoreID: the lowest sibling id
        infos[cpu] = CPUInfo(
            numa_node=numa_of.get(cpu, 0),
            socket=_int(f.physical_package_id, f"cpu{cpu}/topology/physical_package_id"),
            core=core,
            die=None if f.die_id is None else _int(f.die_id, f"cpu{cpu}/topology/die_id"),
        )
    return make_topology(infos)


def describe(cpus: Iterable[int], topo: CPUTopology) -> str:
    """How a set of CPUs lies on the topology, for explain: "whole socket 0", "whole core 2",
    "whole cores 0, 2", "core 1 (1 of 2 threads)" — whole sockets first, then whole cores (a core
    is named by its id, the lowest CPU id of its threads, as kubelet names it), then partial cores.
    CPUs the topology does not know are listed as such."""
    want = frozenset(cpus)
    known = {c for c in want if c in topo.details}
    parts: list[str] = []
    socks = sorted(s for s in topo.details.keep_only(known).sockets()
                   if topo.details.cpus_in_sockets(s) <= known)
    if socks:
        parts.append(f"whole socket{'s' if len(socks) > 1 else ''} {', '.join(map(str, socks))}")
    rest = known - set(topo.details.cpus_in_sockets(*socks))
    cores = sorted(topo.details.keep_only(rest).cores())
    whole = [c for c in cores if topo.details.cpus_in_cores(c) <= rest]
    if whole:
        parts.append(f"whole core{'s' if len(whole) > 1 else ''} {', '.join(map(str, whole))}")
    for c in cores:
        if c not in whole:
            threads = topo.details.cpus_in_cores(c)
            parts.append(f"core {c} ({len(threads & frozenset(rest))} of {len(threads)} threads)")
    if want - known:
        parts.append(f"CPU{'s' if len(want - known) > 1 else ''} {CPUSet(want - known)} not in the host's topology")
    return ", ".join(parts)
