"""kubelet's static CPU manager policy (pkg/kubelet/cm/cpumanager, 1.36), pure.

What it decides, as kubelet does:

- which containers get exclusive CPUs (`guaranteed_cpus`: a Guaranteed pod's container with an
  integral CPU request) and which CPUs (`take_by_topology`: cpu_assignment.go's
  takeByTopologyNUMAPacked — whole NUMA nodes / sockets, then whole cores, then single threads,
  each level sorted by fewest free CPUs first);
- the reserved CPUs (`new_static_policy`: `reservedSystemCPUs` if set, else the first
  ceil(kube+system reserved cpu) CPUs by takeByTopology) and the shared pool: the state's default
  set = every CPU not assigned (reserved CPUs stay in it unless `strict-cpu-reservation`);
- init containers' CPUs handed on to the app containers (`cpus_to_reuse`), restartable init
  containers (sidecars) keeping theirs;
- the policy options `full-pcpus-only` and `strict-cpu-reservation` (any other option is refused
  by name: sdqos implements no other);
- `validate_state`: kubelet's checks of the state file against the node at start;
- the CPU manager as the topology manager's hint provider (`get_topology_hints`,
  `get_pod_topology_hints`: generateCPUTopologyHints) and the allocation aligned to the merged
  hint's NUMA nodes (`allocate_cpus`); `admit_pod` runs sdqos/kube/topologymanager.py's scopes.

Everything is a function over plain values: `CPUManagerState` is never mutated, each call returns
the new one. Upstream files are cited per function (kubernetes/kubernetes, 1.36-era sources).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from sdqos.errors import (CPUAllocationError, CPUManagerStateError, CPUPolicyOptionError, CPUsUnavailable,
                          SMTAlignmentError, TopologyAffinityError)
from sdqos.kube.cpuset import CPUSet
from sdqos.kube.cputopology import CPUTopology
from sdqos.kube.model import Container, Pod
from sdqos.kube.qos import GUARANTEED, pod_qos
from sdqos.kube import topologymanager as tm
from sdqos.kube.topologymanager import BitMask, TopologyHint

POLICY_STATIC = "static"
POLICY_NONE = "none"

# policy_options.go: every option kubelet 1.36 knows
FULL_PCPUS_ONLY = "full-pcpus-only"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
KNOWN_OPTIONS = frozenset({
    FULL_PCPUS_ONLY, STRICT_CPU_RESERVATION, "distribute-cpus-across-numa", "align-by-socket",
    "distribute-cpus-across-cores", "prefer-align-cpus-by-uncorecache",
})
SUPPORTED_OPTIONS = frozenset({FULL_PCPUS_ONLY, STRICT_CPU_RESERVATION})

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


# --- options (policy_options.go NewStaticPolicyOptions) ------------------------------------------


@dataclass(frozen=True)
class StaticPolicyOptions:
    full_pcpus_only: bool = False
    strict_cpu_reservation: bool = False


def parse_options(options: Mapping[str, str] | None, where: str | None = None) -> StaticPolicyOptions:
    """cpuManagerPolicyOptions → StaticPolicyOptions. An unknown option: upstream's message; an
    option kubelet knows but sdqos does not implement: refused by name; a value strconv.ParseBool
    refuses: upstream's message."""
    field_ = "cpuManagerPolicyOptions"
    values: dict[str, bool] = {}
    for name, value in sorted((options or {}).items()):
        if name not in KNOWN_OPTIONS:
            raise CPUPolicyOptionError(f"unknown CPU Manager Policy option: {json.dumps(name)}", where, field_)
        if name not in SUPPORTED_OPTIONS:
            raise CPUPolicyOptionError(
                f'CPU Manager Policy option "{name}" is not supported by sdqos '
                f"(supported: {', '.join(sorted(SUPPORTED_OPTIONS))})", where, f"{field_}.{name}")
        text = str(value)
        if text not in _TRUE and text not in _FALSE:
            raise CPUPolicyOptionError(
                f'bad value for option "{name}": strconv.ParseBool: parsing "{text}": invalid syntax',
                where, f"{field_}.{name}")
        values[name] = text in _TRUE
    return StaticPolicyOptions(full_pcpus_only=values.get(FULL_PCPUS_ONLY, False),
                               strict_cpu_reservation=values.get(STRICT_CPU_RESERVATION, False))


# --- the accumulator (cpu_assignment.go) ---------------------------------------------------------


class _Accumulator:
    """cpuAccumulator: `details` are the free CPUs left, `result` those taken so far."""

    def __init__(self, topo: CPUTopology, available: Iterable[int], num_cpus: int):
        self.topo = topo
        self.details = topo.details.keep_only(available)
        self.needed = num_cpus
        self.result = CPUSet()
        # numaFirst when a NUMA node holds one or more whole sockets' worth, else socketsFirst
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes

    # sort(): ascending by free CPUs in the element, then by id
    def _sort(self, ids: Iterable[int], cpus_of: Callable[..., CPUSet]) -> list[int]:
        return sorted(ids, key=lambda i: (len(cpus_of(i)), i))

    def sort_numa_nodes(self) -> list[int]:
        d = self.details
        if self.numa_first:
            return self._sort(d.numa_nodes(), d.cpus_in_numa_nodes)
        out: list[int] = []
        for socket in self.sort_sockets():
            out += self._sort(d.numa_nodes_in_sockets(socket), d.cpus_in_numa_nodes)
        return out

    def sort_sockets(self) -> list[int]:
        d = self.details
        if not self.numa_first:
            return self._sort(d.sockets(), d.cpus_in_sockets)
        out: list[int] = []
        for numa in self.sort_numa_nodes():
            out += self._sort(d.sockets_in_numa_nodes(numa), d.cpus_in_sockets)
        return out

    def sort_cores(self) -> list[int]:
        d = self.details
        out: list[int] = []
        if self.numa_first:
            for socket in self.sort_sockets():
                out += self._sort(d.cores_in_sockets(socket), d.cpus_in_cores)
        else:
            for numa in self.sort_numa_nodes():
                out += self._sort(d.cores_in_numa_nodes(numa), d.cpus_in_cores)
        return out

    def sort_cpus(self) -> list[int]:
        """sortAvailableCPUsPacked: core by core in sort_cores order, each core's CPUs ascending."""
        out: list[int] = []
        for core in self.sort_cores():
            out += sorted(self.details.cpus_in_cores(core))
        return out

    def is_numa_node_free(self, numa: int) -> bool:
        return len(self.details.cpus_in_numa_nodes(numa)) == len(self.topo.details.cpus_in_numa_nodes(numa))

    def is_socket_free(self, socket: int) -> bool:
        return len(self.details.cpus_in_sockets(socket)) == self.topo.cpus_per_socket()

    def is_core_free(self, core: int) -> bool:
        return len(self.details.cpus_in_cores(core)) == self.topo.cpus_per_core()

    def free_numa_nodes(self) -> list[int]:
        return [n for n in self.sort_numa_nodes() if self.is_numa_node_free(n)]

    def free_sockets(self) -> list[int]:
        return [s for s in self.sort_sockets() if self.is_socket_free(s)]

    def free_cores(self) -> list[int]:
        return [c for c in self.sort_cores() if self.is_core_free(c)]

    def free_cpus(self) -> list[int]:
        return self.sort_cpus()

    def take(self, cpus: CPUSet) -> None:
        self.result = self.result | cpus
        self.details = self.details.keep_only(self.details.cpus() - self.result)
        self.needed -= len(cpus)

    def needs_at_least(self, n: int) -> bool:
        return self.needed >= n

    def is_satisfied(self) -> bool:
        return self.needed < 1

    def is_failed(self) -> bool:
        return self.needed > len(self.details)

    def take_full_numa_nodes(self) -> None:
        for numa in self.free_numa_nodes():
            cpus = self.topo.details.cpus_in_numa_nodes(numa)
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_full_sockets(self) -> None:
        for socket in self.free_sockets():
            cpus = self.topo.details.cpus_in_sockets(socket)
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_full_cores(self) -> None:
        for core in self.free_cores():
            cpus = self.topo.details.cpus_in_cores(core)
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_remaining_cpus(self) -> None:
        for cpu in self.sort_cpus():
            self.take(CPUSet.of(cpu))
            if self.is_satisfied():
                return


def take_by_topology(topo: CPUTopology, available: Iterable[int], num_cpus: int) -> CPUSet:
    """takeByTopologyNUMAPacked with CPUSortingStrategyPacked (no option sdqos accepts changes
    it). Raises CPUAllocationError with kubelet's messages."""
    available = CPUSet(available)
    acc = _Accumulator(topo, available, num_cpus)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise CPUAllocationError(
            f"not enough cpus available to satisfy request: requested={num_cpus}, available={len(available)}")
    # 1. whole NUMA nodes and sockets, the bigger level first
    if acc.numa_first:
        acc.take_full_numa_nodes()
    else:
        acc.take_full_sockets()
    if acc.is_satisfied():
        return acc.result
    if acc.numa_first:
        acc.take_full_sockets()
    else:
        acc.take_full_numa_nodes()
    if acc.is_satisfied():
        return acc.result
    # 2. whole cores
    acc.take_full_cores()
    if acc.is_satisfied():
        return acc.result
    # 3. single threads, filling partly used cores first
    acc.take_remaining_cpus()
    if acc.is_satisfied():
        return acc.result
    raise CPUAllocationError("failed to allocate cpus")


# --- state (state/state.go) ----------------------------------------------------------------------


def _freeze(entries: Mapping[str, Mapping[str, Iterable[int]]]) -> Mapping[str, Mapping[str, CPUSet]]:
    return MappingProxyType({pod: MappingProxyType({c: CPUSet(s) for c, s in conts.items()})
                             for pod, conts in entries.items() if conts})


@dataclass(frozen=True)
class CPUManagerState:
    """The CPU manager's state: the policy that wrote it, the shared pool (default set) and the
    exclusive assignments pod UID → container name → CPUs."""

    policy_name: str
    default_cpuset: CPUSet = field(default_factory=CPUSet)
    entries: Mapping[str, Mapping[str, CPUSet]] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "default_cpuset", CPUSet(self.default_cpuset))
        object.__setattr__(self, "entries", _freeze(self.entries))

    def get(self, pod_uid: str, container: str) -> CPUSet | None:
        return self.entries.get(pod_uid, {}).get(container)

    def assigned(self) -> CPUSet:
        return CPUSet().union(*(s for conts in self.entries.values() for s in conts.values()))

    def with_assignment(self, pod_uid: str, container: str, cpus: CPUSet) -> CPUManagerState:
        entries = {p: dict(c) for p, c in self.entries.items()}
        entries.setdefault(pod_uid, {})[container] = cpus
        return replace(self, entries=entries)

    def without(self, pod_uid: str, container: str) -> CPUManagerState:
        entries = {p: dict(c) for p, c in self.entries.items()}
        entries.get(pod_uid, {}).pop(container, None)
        return replace(self, entries=entries)


# --- the static policy (policy_static.go) --------------------------------------------------------


@dataclass(frozen=True)
class StaticPolicy:
    topology: CPUTopology
    reserved: CPUSet
    reserved_physical: CPUSet  # the reserved CPUs' whole cores (full-pcpus-only counts them out)
    options: StaticPolicyOptions = StaticPolicyOptions()

    @property
    def name(self) -> str:
        return POLICY_STATIC

    def cpu_group_size(self) -> int:
        return self.topology.cpus_per_core()

    def allocatable_cpus(self) -> CPUSet:
        """GetAllocatableCPUs: every CPU but the reserved ones."""
        return self.topology.details.cpus() - self.reserved

    def available_cpus(self, state: CPUManagerState) -> CPUSet:
        """GetAvailableCPUs: the shared pool minus the reserved CPUs."""
        return state.default_cpuset - self.reserved

    def available_physical_cpus(self, state: CPUManagerState) -> CPUSet:
        return state.default_cpuset - self.reserved_physical


def new_static_policy(topology: CPUTopology, num_reserved_cpus: int, reserved_cpus: Iterable[int] = (),
                      options: Mapping[str, str] | None = None, where: str | None = None) -> StaticPolicy:
    """NewStaticPolicy: `reserved_cpus` (reservedSystemCPUs) when given, else takeByTopology of
    `num_reserved_cpus` (ceil of kube + system reserved cpu) over all CPUs — e.g. 2 on an 8-CPU
    HT host are {0, 4}, one whole core. Their count must equal `num_reserved_cpus` (kubelet's
    error otherwise)."""
    opts = parse_options(options, where)
    all_cpus = topology.details.cpus()
    reserved = CPUSet(reserved_cpus)
    if not reserved:
        try:
            reserved = take_by_topology(topology, all_cpus, num_reserved_cpus)
        except CPUAllocationError:
            reserved = CPUSet()
    if len(reserved) != num_reserved_cpus:
        raise CPUPolicyOptionError(
            f"[cpumanager] unable to reserve the required amount of CPUs "
            f"(size of {reserved} did not equal {num_reserved_cpus})", where, "reservedSystemCPUs")
    physical = CPUSet()
    for cpu in reserved:
        if cpu not in topology.details:
            raise CPUPolicyOptionError(
                f"[cpumanager] unable to build the reserved physical CPUs from the reserved set: "
                f"unknown CPU ID: {cpu}", where, "reservedSystemCPUs")
        physical = physical | topology.details.cpus_in_cores(topology.cpu_core_id(cpu))
    return StaticPolicy(topology=topology, reserved=reserved, reserved_physical=physical, options=opts)


def validate_state(policy: StaticPolicy, state: CPUManagerState) -> CPUManagerState:
    """Start → validateState: an empty state becomes the initial one (every CPU shared; with
    strict-cpu-reservation every CPU but the reserved); a written one must keep the reserved CPUs
    in (strict: out of) the shared pool, no assignment may overlap it, and pool ∪ assignments must
    be the node's CPUs. Raises CPUManagerStateError with kubelet's messages."""
    all_cpus = policy.topology.details.cpus()
    if policy.options.strict_cpu_reservation:
        all_cpus = all_cpus - policy.reserved
    default = state.default_cpuset
    if default.is_empty():
        if any(state.entries.values()):
            raise CPUManagerStateError("default cpuset cannot be empty")
        return replace(state, default_cpuset=all_cpus)
    if policy.options.strict_cpu_reservation:
        inter = policy.reserved & default
        if inter:
            raise CPUManagerStateError(
                f'some of strictly reserved cpus: "{inter}" are present in defaultCpuSet: "{default}"')
    elif not (policy.reserved & default).equals(policy.reserved):
        raise CPUManagerStateError(
            f'not all reserved cpus: "{policy.reserved}" are present in defaultCpuSet: "{default}"')
    for pod, conts in state.entries.items():
        for name, cset in conts.items():
            if default & cset:
                raise CPUManagerStateError(
                    f'pod: {pod}, container: {name} cpuset: "{cset}" overlaps with default cpuset "{default}"')
    known = default | state.assigned()
    if not known.equals(all_cpus):
        raise CPUManagerStateError(
            f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in state "{known}"')
    return state


def guaranteed_cpus(pod: Pod, container: Container) -> int:
    """guaranteedCPUs: the container's CPU request when the pod is Guaranteed and the request is
    a whole number of CPUs, else 0 (the container runs in the shared pool)."""
    if pod_qos(pod) != GUARANTEED:
        return 0
    q = container.requests.get("cpu")
    if q is None:
        return 0
    if q.value() * 1000 != q.milli_value():
        return 0
    return q.value()


def pod_guaranteed_cpus(pod: Pod) -> int:
    """podGuaranteedCPUs: max(the largest init container (plus the sidecars started before it),
    the app containers plus every sidecar) — what the pod holds at its peak."""
    by_init = 0
    by_sidecars = 0
    for c in pod.init_containers:
        if "cpu" not in c.requests:
            continue
        n = guaranteed_cpus(pod, c)
        if c.restart_always:
            by_sidecars += n
        elif by_sidecars + n > by_init:
            by_init = by_sidecars + n
    by_apps = sum(guaranteed_cpus(pod, c) for c in pod.containers if "cpu" in c.requests)
    return max(by_init, by_apps + by_sidecars)


def _is_init(pod: Pod, name: str) -> Container | None:
    for c in pod.init_containers:
        if c.name == name:
            return c
    return None


def update_cpus_to_reuse(reuse: Mapping[str, CPUSet], pod: Pod, container: Container,
                         cset: CPUSet) -> dict[str, CPUSet]:
    """updateCPUsToReuse: only the current pod's entry is kept; a (non-restartable) init
    container's CPUs are added to it, an app container's (or a sidecar's) taken out."""
    mine = reuse.get(pod.uid, CPUSet())
    init = _is_init(pod, container.name)
    if init is not None and not init.restart_always:
        return {pod.uid: mine | cset}
    return {pod.uid: mine - cset}


@dataclass(frozen=True)
class Allocation:
    """What `allocate` returns: the new state, the container's exclusive CPUs (None: it runs in
    the shared pool) and the CPUs the pod's next containers may reuse."""

    state: CPUManagerState
    cpus: CPUSet | None
    cpus_to_reuse: Mapping[str, CPUSet]


def allocate(policy: StaticPolicy, state: CPUManagerState, pod: Pod, container: Container,
             cpus_to_reuse: Mapping[str, CPUSet] | None = None, numa_affinity: BitMask | None = None) -> Allocation:
    """Allocate, with the topology manager's hint for the container (`numa_affinity`; None: no
    affinity, as kubelet's 'none' topology policy). Raises SMTAlignmentError / CPUAllocationError
    as kubelet; the state is then unchanged."""
    reuse = dict(cpus_to_reuse or {})
    num = guaranteed_cpus(pod, container)
    if num == 0:
        return Allocation(state, None, reuse)
    if policy.options.full_pcpus_only:
        group = policy.cpu_group_size()
        if group and num % group != 0:
            raise SMTAlignmentError(num, group)
        available_physical = len(policy.available_physical_cpus(state))
        if num > available_physical:
            raise SMTAlignmentError(num, group, available_physical, True)
    existing = state.get(pod.uid, container.name)
    if existing is not None:
        return Allocation(state, existing, update_cpus_to_reuse(reuse, pod, container, existing))
    cpus = allocate_cpus(policy, state, num, numa_affinity, reuse.get(pod.uid, CPUSet()))
    new_state = replace(state, default_cpuset=state.default_cpuset - cpus).with_assignment(
        pod.uid, container.name, cpus)
    return Allocation(new_state, cpus, update_cpus_to_reuse(reuse, pod, container, cpus))


def allocate_pod(policy: StaticPolicy, state: CPUManagerState, pod: Pod) -> Allocation:
    """Every container of the pod in kubelet's order (init containers, then app containers),
    the init containers' CPUs handed on. The last container's `cpus` is returned; look the others
    up in the state."""
    result = Allocation(state, None, {})
    for c in pod.init_containers + pod.containers:
        result = allocate(policy, result.state, pod, c, result.cpus_to_reuse)
    return result


def allocate_cpus(policy: StaticPolicy, state: CPUManagerState, num_cpus: int, numa_affinity: BitMask | None,
                  reusable: CPUSet = CPUSet()) -> CPUSet:
    """allocateCPUs (policy_static.go): the CPUs of the affinity's NUMA nodes first (getAlignedCPUs,
    takeByTopology over them, at most `num_cpus`), then the rest from whatever is left."""
    allocatable = policy.available_cpus(state) | reusable
    result = CPUSet()
    if numa_affinity is not None:
        aligned = CPUSet()
        for node in numa_affinity.bits():
            aligned = aligned | (allocatable & policy.topology.details.cpus_in_numa_nodes(node))
        result = take_by_topology(policy.topology, aligned, min(num_cpus, len(aligned)))
    return result | take_by_topology(policy.topology, allocatable - result, num_cpus - len(result))


# --- the hint provider (policy_static.go GetTopologyHints, GetPodTopologyHints) -------------------


def generate_cpu_topology_hints(topo: CPUTopology, available: Iterable[int], reusable: Iterable[int],
                                request: int) -> list[TopologyHint]:
    """generateCPUTopologyHints: every combination of NUMA nodes (IterateBitMasks) that holds all
    `reusable` CPUs and, with the `available` ones in it, `request` CPUs; preferred when it has as
    few NUMA nodes as the fewest whose CPUs (free or not) could hold the request."""
    details = topo.details
    min_affinity = len(details.numa_nodes())
    hints: list[TopologyHint] = []
    for mask in tm.iterate_bitmasks(sorted(details.numa_nodes())):
        if len(details.cpus_in_numa_nodes(*mask.bits())) >= request and mask.count() < min_affinity:
            min_affinity = mask.count()
        if not all(mask.is_set(details[c].numa_node) for c in reusable):
            continue
        matching = len(CPUSet(reusable)) + sum(1 for c in available if mask.is_set(details[c].numa_node))
        if matching < request:
            continue
        hints.append(TopologyHint(mask, False))
    return [TopologyHint(h.affinity, h.affinity is not None and h.affinity.count() == min_affinity) for h in hints]


CPU = "cpu"


def get_topology_hints(policy: StaticPolicy, state: CPUManagerState, pod: Pod, container: Container,
                       cpus_to_reuse: Mapping[str, CPUSet] | None = None) -> dict[str, list[TopologyHint]] | None:
    """GetTopologyHints: None (no preference) for a container without exclusive CPUs; for one that
    holds CPUs already, the hints of those (none possible when their count is not the request);
    else the hints of the free CPUs and the pod's reusable ones."""
    requested = guaranteed_cpus(pod, container)
    if requested == 0:
        return None
    allocated = state.get(pod.uid, container.name)
    if allocated is not None:
        if len(allocated) != requested:
            return {CPU: []}
        return {CPU: generate_cpu_topology_hints(policy.topology, allocated, (), requested)}
    reusable = (cpus_to_reuse or {}).get(pod.uid, CPUSet())
    return {CPU: generate_cpu_topology_hints(policy.topology, policy.available_cpus(state), reusable, requested)}


def get_pod_topology_hints(policy: StaticPolicy, state: CPUManagerState, pod: Pod,
                           cpus_to_reuse: Mapping[str, CPUSet] | None = None) -> dict[str, list[TopologyHint]] | None:
    """GetPodTopologyHints: the same for the pod's peak of exclusive CPUs (pod_guaranteed_cpus),
    CPUs its containers already hold counted as reusable."""
    requested = pod_guaranteed_cpus(pod)
    if requested == 0:
        return None
    assigned = CPUSet()
    for c in pod.init_containers + pod.containers:
        allocated = state.get(pod.uid, c.name)
        if allocated is not None:
            if len(allocated) != guaranteed_cpus(pod, c):
                return {CPU: []}
            assigned = assigned | allocated
    if len(assigned) == requested:
        return {CPU: generate_cpu_topology_hints(policy.topology, assigned, (), requested)}
    reusable = (cpus_to_reuse or {}).get(pod.uid, CPUSet()) | assigned
    return {CPU: generate_cpu_topology_hints(policy.topology, policy.available_cpus(state), reusable, requested)}


class _CPUProvider:
    """The CPU manager as the topology manager's HintProvider for one pod being admitted: the
    allocation so far (state and CPUs to reuse), advanced container by container."""

    def __init__(self, policy: StaticPolicy, state: CPUManagerState, pod: Pod, name: str):
        self.policy, self.pod, self.name = policy, pod, name
        self.result = Allocation(state, None, {})
        self.containers = {c.name: c for c in pod.init_containers + pod.containers}

    def container_hints(self, container: str) -> tm.ProviderHints:
        return get_topology_hints(self.policy, self.result.state, self.pod, self.containers[container],
                                  self.result.cpus_to_reuse)

    def pod_hints(self) -> tm.ProviderHints:
        return get_pod_topology_hints(self.policy, self.result.state, self.pod, self.result.cpus_to_reuse)

    def free(self) -> CPUSet:
        return self.policy.available_cpus(self.result.state) | self.result.cpus_to_reuse.get(self.pod.uid, CPUSet())

    def free_by_numa(self) -> str:
        free, details = self.free(), self.policy.topology.details
        return ", ".join(f'node{n}: "{free & details.cpus_in_numa_nodes(n)}"' for n in sorted(details.numa_nodes()))

    def allocate(self, container: str, hint: TopologyHint) -> None:
        c = self.containers[container]
        try:
            self.result = allocate(self.policy, self.result.state, self.pod, c, self.result.cpus_to_reuse, hint.affinity)
        except CPUAllocationError as exc:
            free = self.free()
            shown = f'"{free}"' if free else "none"
            raise CPUsUnavailable(
                f"pod {self.name}: container {c.name} needs {guaranteed_cpus(self.pod, c)} exclusive CPUs "
                f"(cpuManagerPolicy static), CPUs free: {len(free)} ({shown}): {exc}") from None


def admit_pod(policy: StaticPolicy, state: CPUManagerState, pod: Pod, name: str,
              manager: tm.TopologyManager | None = None) -> CPUManagerState:
    """A pod about to start: the topology manager's admission (`manager`; None: policy none) with
    the CPU manager as hint provider, every container's exclusive CPUs allocated as kubelet does at
    admission (init containers, then app containers; containers that hold CPUs keep them), each
    aligned to its merged hint. Refused with TopologyAffinityError (kubelet's reason and message,
    the pod, the container(s), what they need and the free CPUs per NUMA node) when the policy does
    not admit the hint; CPUsUnavailable naming the pod (`name`, as people know it), the container,
    what it needs and the CPUs free when CPUs cannot be had. The state is then unchanged."""
    manager = manager or tm.TopologyManager()
    provider = _CPUProvider(policy, state, pod, name)
    refusal = tm.admit(manager, list(provider.containers), provider)
    if refusal is not None:
        if manager.scope == tm.SCOPE_POD:
            who, need = "containers " + ", ".join(refusal.containers), pod_guaranteed_cpus(pod)
        else:
            who, need = "container " + refusal.containers[0], guaranteed_cpus(pod, provider.containers[refusal.containers[0]])
        raise TopologyAffinityError(
            f"pod {name}: {who}: {refusal.reason}: {refusal.message} (topologyManagerPolicy {manager.policy}, "
            f"scope {manager.scope}: {need} exclusive CPUs needed; free CPUs by NUMA node: {provider.free_by_numa()})")
    return provider.result.state


def release_gone_pods(state: CPUManagerState, kept_uids: Iterable[str]) -> CPUManagerState:
    """removeStaleState: every assignment of a pod not in `kept_uids` (its units are gone) goes
    back to the shared pool; the kept pods' CPUs are not touched."""
    kept = set(kept_uids)
    for uid in sorted(set(state.entries) - kept):
        for container in sorted(state.entries.get(uid, {})):
            state = remove_container(state, uid, container)
    return state


def remove_container(state: CPUManagerState, pod_uid: str, container: str) -> CPUManagerState:
    """RemoveContainer: its CPUs go back to the shared pool, except those a sibling in the same
    pod still holds (an app container reusing an init container's CPUs)."""
    cpus = state.get(pod_uid, container)
    if cpus is None:
        return state
    in_use = CPUSet().union(*(s for n, s in state.entries.get(pod_uid, {}).items() if n != container))
    return replace(state.without(pod_uid, container), default_cpuset=state.default_cpuset | (cpus - in_use))


# --- the CPU quota of exclusive containers (pkg/kubelet/cm/container_manager.go) ------------------


def container_has_exclusive_cpus(state: CPUManagerState, pod_uid: str, container: str) -> bool:
    """containerHasExclusiveCPUs: the CPU manager's GetExclusiveCPUs for the container is not
    empty (the static policy: its assignment in the state)."""
    return bool(state.get(pod_uid, container))


def pod_has_exclusive_cpus(state: CPUManagerState, pod: Pod) -> bool:
    """podHasExclusiveCPUs: any of the pod's containers (init or app) holds exclusive CPUs. With
    DisableCPUQuotaWithExclusiveCPUs (pkg/features/kube_features.go at 1.36: Beta since 1.33,
    default true) kubelet then creates the pod cgroup without a CFS quota (pod_container_manager
    EnsureExists) and gives each such container none (kuberuntime)."""
    return any(container_has_exclusive_cpus(state, pod.uid, c.name) for c in pod.init_containers + pod.containers)


# --- how many CPUs are reserved (pkg/kubelet/cm/cpumanager/cpu_manager.go NewManager) -------------


def num_reserved_cpus(kube_reserved_cpu_milli: int, system_reserved_cpu_milli: int,
                      reserved_system_cpus: Iterable[int] = (), where: str | None = None) -> int:
    """The static policy's numReservedCPUs: ceil((kube + system reserved cpu) / 1000). When
    `reservedSystemCPUs` is set kubelet replaces both with its size (cmd/kubelet/app/server.go:
    kubeReserved cpu dropped, systemReserved cpu = the set's size). Zero is refused, as kubelet
    does: the shared pool could then be given away entirely."""
    explicit = CPUSet(reserved_system_cpus)
    milli = 1000 * len(explicit) if explicit else kube_reserved_cpu_milli + system_reserved_cpu_milli
    if milli <= 0:
        raise CPUPolicyOptionError(
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
            where, "kubeReserved.cpu")
    return -(-milli // 1000)
