"""The QoS engine: node config + pods + VMs → the desired unit tree, with kubelet's numbers.

Pure: no I/O, no clock. Every value can carry the formula that produced it (``explain=True``),
which is what ``sdqos explain`` prints. The tree, parents before children:

    kubepods.slice                      node allocatable for pods (minus what VMs reserve)
      kubepods-pod<uid>.slice           Guaranteed pods
      kubepods-burstable.slice          Burstable tier
        kubepods-burstable-pod<uid>.slice
      kubepods-besteffort.slice         BestEffort tier
        kubepods-besteffort-pod<uid>.slice
    machine.slice                       VMs, when any are declared or anything else runs there
      machine-<name>.scope

One node budget: declared VMs take their reservation, and whatever else runs in machine.slice
(an undeclared VM, a podman or nspawn container) is charged by what it can hold
(:class:`MachineCharge`, measured by sync), before any pod is planned.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from sdqos import humanize as H
from sdqos.kube import admission, cpuset, naming, qos
from sdqos.kube.model import (
    BESTEFFORT,
    BURSTABLE,
    CPU,
    GUARANTEED,
    MEMORY,
    PID,
    VM_EVICTION_ALLOWED,
    Container,
    NodeConfig,
    Pod,
    VirtualMachine,
)
from sdqos.errors import InvalidInput

EPHEMERAL_STORAGE = "ephemeral-storage"
from sdqos.plan import properties
from sdqos.plan.properties import ResourceConfig, oomd_preference, to_properties

if TYPE_CHECKING:
    from sdqos.kube.cputopology import CPUTopology

TIER_NAMES = naming.TIERS
TIERED = "TieredReservation"


@dataclass(slots=True)
class UnitPlan:
    """One unit of the desired tree. ``create``: sync may create it (slices); scopes need a
    process first, so sync only tunes them when they exist."""

    name: str
    slice: str
    kind: str  # node | tier | pod | container | machine | vm
    description: str
    properties: dict[str, int]
    resources: ResourceConfig
    owner: naming.Owner | None = None  # the pod (and container) or VM it is for
    create: bool = True
    why: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ContainerPlan:
    """One container of a pod: its scope's properties and the oom_score_adj of its processes."""

    name: str
    kind: str  # app | init | sidecar
    scope: str
    oom_score_adj: int
    resources: ResourceConfig
    properties: dict[str, int]
    why: dict[str, str] = field(default_factory=dict)
    cpus: str = ""  # the static CPU manager's exclusive CPUs (a CPU list); "": the shared pool


@dataclass(slots=True)
class PodPlan:
    """One pod: its QoS class, its slice and what kubelet sums for it (requests incl. overhead).

    ``manifest`` is the Pod, or a function that decodes it: a plan reused from the plan cache
    (sdqos.loading.incremental) carries everything a sync needs, so most syncs never decode its pod."""

    key: str  # namespace/name
    uid: str
    qos: str
    slice: str
    requests: dict[str, int]  # cpu (milli), memory (bytes): PodRequests incl. overhead
    limits: dict[str, int]
    resources: ResourceConfig
    properties: dict[str, int]
    containers: list[ContainerPlan]
    why: dict[str, str] = field(default_factory=dict)
    manifest: Pod | Callable[[], Pod] | None = field(default=None, repr=False, compare=False)
    grace_period: int | None = None  # spec.terminationGracePeriodSeconds, for the scopes `sdqos run` makes
    unenforced: tuple[str, ...] = ()  # resource names the pod asks for that sdqos accepts and does not enforce

    @property
    def name(self) -> str:
        """The pod's name, from ``key`` (a Kubernetes namespace or name holds no "/"): looking a
        pod up by name decodes no manifest."""
        return self.key.partition("/")[2]

    @property
    def pod(self) -> Pod:
        m = self.manifest
        if not isinstance(m, Pod):
            assert m is not None, "a PodPlan needs its pod or a way to decode it"
            m = self.manifest = m()
        return m


@dataclass(frozen=True, slots=True)
class MachineCharge:
    """Something running in machine.slice that is not a declared VM, charged to the node budget
    while it runs: its usage rounded up, at most its ``limit`` (what it can hold); ``bounded``: it
    is counted at that limit, so machine.slice may be limited to the sum (else machine.slice gets
    no memory limit while it runs); its CPU weight as millicores (machine.slice's weight only). sync
    measures these; the engine only adds them up."""

    unit: str
    what: str  # "libvirt domain db", "podman container web", "machine x", "scope"
    cpu: int  # millicores
    memory: int  # bytes
    bounded: bool = True
    limit: int | None = None  # what bounds it (its memory limit, a guest's RAM + overhead), if anything


@dataclass(frozen=True, slots=True)
class KeptPod:
    """A pod slice sync keeps as it is (held back by --max-removals, a refused QoS-class change, an
    invalid file, a slice holding others' units): its pod still runs there, so it is counted in its
    tier and the node values with the requests it was last planned with, as if its file were
    unchanged. ``replaces``: the configured pod whose new values wait for it (refused move), not counted."""

    unit: str
    qos: str
    cpu: int  # millicores requested
    memory: int  # bytes requested
    reason: str
    replaces: str | None = None


@dataclass(slots=True)
class VMPlan:
    """One VM: its QoS class, its scope's properties and the oom_score_adj of its processes."""

    vm: VirtualMachine
    qos: str
    scope: str | None  # known scope name (spec.scope / libvirt domain) or None (pidFile only)
    requests: dict[str, int]
    limits: dict[str, int]
    oom_score_adj: int
    resources: ResourceConfig
    properties: dict[str, int]
    why: dict[str, str] = field(default_factory=dict)
    cpus: str = ""  # spec.cpu.dedicatedCpuPlacement: its exclusive CPUs (a CPU list), as ContainerPlan.cpus


@dataclass(slots=True)
class Plan:
    """The desired tree: every unit to create or tune (parents first), with the numbers behind it."""

    cgroup: str
    node: NodeConfig
    capacity: dict[str, int]  # cpu in millicores, memory in bytes, pid
    allocatable: dict[str, int]
    pods_budget: dict[str, int]  # what kubepods.slice gets
    vm_reserved: dict[str, int]
    units: list[UnitPlan]
    pods: list[PodPlan]
    vms: list[VMPlan]
    warnings: list[str]
    root_slice: str = "kubepods.slice"
    machines: tuple[MachineCharge, ...] = ()  # undeclared things in machine.slice, counted
    errors: list[InvalidInput] = field(default_factory=list)  # pods left out: they cannot be sent (pod_problems)
    kept: tuple[KeptPod, ...] = ()  # pod slices sync keeps, counted in their tiers
    over_committed: bool = False  # the requests exceed node allocatable (warned)
    # pods kubelet would not admit were they started in config order (key → kubelet's refusal; warned)
    not_admitted: dict[str, admission.Refusal] = field(default_factory=dict)
    basis: "PlanBasis | None" = field(default=None, repr=False, compare=False)  # to count kept pods again

    def unit(self, name: str) -> UnitPlan | None:
        for u in self.units:
            if u.name == name:
                return u
        return None

    def pod(self, key: str) -> PodPlan | None:
        for p in self.pods:
            if key in (p.key, p.uid, p.name):
                return p
        return None


def _milli(q) -> int:
    return q.milli_value() if q is not None else 0


def _bytes(q) -> int:
    return q.value() if q is not None else 0


def _resource_int(res, name: str) -> int:
    return _milli(res.get(name)) if name == CPU else _bytes(res.get(name))


# --- node -----------------------------------------------------------------------------------------


def cpu_allocatable_formula(node: NodeConfig) -> str:
    """How allocatable CPU follows from capacity ("4 − systemReserved 1 (reservedSystemCPUs "0": 1 CPU,
    kubeReserved cpu dropped) = 3"), as cmd/kubelet/app/server.go computes it with reservedSystemCPUs."""
    cap = _milli(node.capacity.get(CPU))
    kube, system = _milli(node.kube_reserved.get(CPU)), _milli(node.system_reserved.get(CPU))
    text = f"capacity {H.cpu(cap)}"
    if kube:
        text += f" − kubeReserved {H.cpu(kube)}"
    if system or node.reserved_system_cpus:
        text += f" − systemReserved {H.cpu(system)}"
    if node.reserved_system_cpus:
        text += (f' (reservedSystemCPUs "{node.reserved_system_cpus}": {H.cpu(system)} CPU{"s" if system != 1000 else ""}, '
                 "replacing the cpu of systemReserved and kubeReserved)")
    return text + f" = {H.cpu(max(0, cap - kube - system))}"


def node_values(node: NodeConfig) -> tuple[dict[str, int], dict[str, int]]:
    """Capacity and allocatable (capacity − kubeReserved − systemReserved, never below 0), as ints."""
    capacity = {r: _resource_int(node.capacity, r) for r in (CPU, MEMORY, PID)}
    allocatable = {}
    for r, cap in capacity.items():
        reserved = _resource_int(node.kube_reserved, r) + _resource_int(node.system_reserved, r)
        allocatable[r] = max(0, cap - reserved)
    return capacity, allocatable


# --- pods -----------------------------------------------------------------------------------------


def pod_resource_config(pod: Pod, qos_class: str, node: NodeConfig, cgroup: str, why: dict | None = None):
    """ResourceConfigForPod (helpers_linux.go) + pod pids limit + MemoryQoS reservation."""
    pod_level = node.gate("PodLevelResources")
    reqs = qos.pod_requests(pod, pod_level=pod_level)
    declared = {CPU: True, MEMORY: True}

    def check(res, _c: Container) -> None:
        for r in (CPU, MEMORY):
            if qos.limit_is_zero(res, r):
                declared[r] = False

    limits = qos.pod_limits(pod, pod_level=pod_level, fn=check)
    if pod_level and qos.is_pod_level_resources_set(pod):
        assert pod.resources is not None
        for r in (CPU, MEMORY):
            if not qos.limit_is_zero(pod.resources.limits, r):
                declared[r] = True

    cpu_req, cpu_lim = _milli(reqs.get(CPU)), _milli(limits.get(CPU))
    mem_req, mem_lim = _bytes(reqs.get(MEMORY)), _bytes(limits.get(MEMORY))
    period = node.cpu_cfs_quota_period_us
    shares = qos.milli_cpu_to_shares(cpu_req)
    quota = qos.milli_cpu_to_quota(cpu_lim, period) if node.cpu_cfs_quota else -1
    pids = node.pod_pids_limit if node.pod_pids_limit > 0 else None

    rc: dict = dict(cpu_shares=shares, pids=pids)
    if qos_class == GUARANTEED:
        rc.update(cpu_quota=quota, cpu_period=period, memory=mem_lim)
    elif qos_class == BURSTABLE:
        if declared[CPU]:
            rc.update(cpu_quota=quota, cpu_period=period)
        if declared[MEMORY]:
            rc.update(memory=mem_lim)
    else:
        rc.update(cpu_shares=qos.MIN_SHARES)
    if cgroup == "v2" and node.gate("MemoryQoS") and node.memory_reservation_policy == TIERED and mem_req > 0:
        if qos_class == GUARANTEED:
            rc["memory_min"] = mem_req
        elif qos_class == BURSTABLE:
            rc["memory_low"] = mem_req

    if why is not None:
        _why_pod(why, pod, qos_class, node, rc, cpu_req, cpu_lim, mem_lim, declared)
        if cgroup == "v2":
            _why_memory_reservation(why, node, qos_class, mem_req, "pod memory request")
            why["memory_high"] = "max: kubelet sets memory.high on containers only (MemoryQoS), never on pod slices"
    return ResourceConfig(**rc), {CPU: cpu_req, MEMORY: mem_req}, {CPU: cpu_lim, MEMORY: mem_lim}


def _why_memory_reservation(why: dict, node: NodeConfig, qos_class: str, mem_req: int, what: str) -> None:
    """Why memory.min / memory.low have their value (MemoryQoS, KEP-2570: memoryReservationPolicy
    TieredReservation protects Guaranteed requests with memory.min, Burstable ones with memory.low)."""
    if not node.gate("MemoryQoS"):
        why["memory_min"] = why["memory_low"] = "0: the MemoryQoS feature gate is off"
    elif node.memory_reservation_policy != TIERED:
        why["memory_min"] = why["memory_low"] = (f"0: memoryReservationPolicy is {node.memory_reservation_policy} "
                                                 "(TieredReservation sets them)")
    elif qos_class == GUARANTEED:
        why["memory_min"] = f"{what} {H.size(mem_req)} (TieredReservation: Guaranteed requests are held by memory.min)"
        why["memory_low"] = "0: a Guaranteed request is held by memory.min"
    elif qos_class == BURSTABLE:
        why["memory_min"] = "0: a Burstable request is protected by memory.low"
        why["memory_low"] = f"{what} {H.size(mem_req)} (TieredReservation: Burstable requests are protected by memory.low)"
    else:
        why["memory_min"] = why["memory_low"] = "0: BestEffort requests nothing"



def _why_pod(why, pod, qos_class, node, rc, cpu_req, cpu_lim, mem_lim, declared) -> None:
    parts = _contributions(pod, "requests", CPU)
    if qos_class == BESTEFFORT:
        why["cpu_shares"] = "kubelet's minimum, always used for BestEffort pods"
    elif cpu_req == 0:
        why["cpu_shares"] = "kubelet's minimum (the pod requests no CPU)"
    else:
        why["cpu_shares"] = f"{cpu_req}m × 1024 / 1000m (pod CPU request: {parts})"
    period = node.cpu_cfs_quota_period_us
    if "cpu_quota" in rc:
        if not node.cpu_cfs_quota:
            why["cpu_quota"] = "no quota: cpuCFSQuota is false in node.yaml"
        elif cpu_lim == 0:
            why["cpu_quota"] = "no quota: no CPU limit"
        else:
            why["cpu_quota"] = (
                f"{rc['cpu_quota']}µs per {period}µs period = {cpu_lim}m × {period} / 1000m"
                f" (pod CPU limit: {_contributions(pod, 'limits', CPU)})"
            )
    elif qos_class == BURSTABLE:
        why["cpu_quota"] = "no quota: not every container has a CPU limit (Burstable pod)"
    else:
        why["cpu_quota"] = "no quota: BestEffort pod"
    if "memory" in rc:
        why["memory"] = f"pod memory limit ({_contributions(pod, 'limits', MEMORY)})"
    elif qos_class == BURSTABLE and not declared[MEMORY]:
        why["memory"] = "no limit: not every container has a memory limit (Burstable pod)"
    else:
        why["memory"] = "no limit: BestEffort pod"
    why["pids"] = (
        "podPidsLimit from node.yaml"
        if node.pod_pids_limit > 0
        else "no limit: podPidsLimit is unset (-1)"
    )


def _contributions(pod: Pod, attr: str, resource: str) -> str:
    """How PodRequests/PodLimits reached a value, in words: app containers and sidecars summed,
    each init container's peak (itself + sidecars started before it), the max of the two, overhead."""
    fmt = H.cpu if resource == CPU else H.size
    conv = _milli if resource == CPU else _bytes

    def get(c: Container) -> int:
        return conv(getattr(c, attr).get(resource))

    if pod.resources is not None and resource in getattr(pod.resources, attr):
        text = f"pod-level {fmt(conv(getattr(pod.resources, attr)[resource]))}"
    else:
        running = [c for c in pod.containers] + [c for c in pod.init_containers if c.sidecar]
        total = sum(get(c) for c in running)
        text = " + ".join(f"{c.name} {fmt(get(c))}" + (" (sidecar)" if c.sidecar else "") for c in running) or "none"
        if len(running) > 1:
            text += f" = {fmt(total)}"
        sidecars_before = 0
        peaks = []
        for c in pod.init_containers:
            if c.sidecar:
                sidecars_before += get(c)
                continue
            peak = get(c) + sidecars_before
            peaks.append((c.name, peak, sidecars_before))
        if peaks:
            inits = "; ".join(
                f"init {n} {fmt(p)}" + (f" incl. earlier sidecars {fmt(sb)}" if sb else "") for n, p, sb in peaks
            )
            text = f"max({text}; {inits})"
    if pod.overhead.get(resource) is not None:
        text += f" + overhead {fmt(conv(pod.overhead[resource]))}"
    return text


def container_resource_config(
    pod: Pod, c: Container, qos_class: str, node: NodeConfig, cgroup: str, alloc_memory: int, why: dict | None = None
) -> ResourceConfig:
    """kuberuntime's container values: shares from the request (the limit when the request is
    absent), quota and memory from the limit (the pod-level limit when the container has none)."""
    pod_level = node.gate("PodLevelResources") and qos.is_pod_level_resources_set(pod)
    pod_limits = pod.resources.limits if pod_level and pod.resources is not None else {}
    cpu_lim = _milli(c.limits.get(CPU)) or (_milli(pod_limits.get(CPU)) if pod_level else 0)
    if CPU in c.requests:
        cpu_basis, basis = _milli(c.requests[CPU]), "request"
    else:
        cpu_basis, basis = cpu_lim, "limit (no request)"
    shares = qos.milli_cpu_to_shares(cpu_basis)
    period = node.cpu_cfs_quota_period_us
    quota = qos.milli_cpu_to_quota(cpu_lim, period) if node.cpu_cfs_quota else 0
    mem_lim = _bytes(c.limits.get(MEMORY)) or (_bytes(pod_limits.get(MEMORY)) if pod_level else 0)
    mem_req = _bytes(c.requests.get(MEMORY))
    rc: dict = dict(cpu_shares=shares, cpu_quota=quota or None, cpu_period=period if quota else None, memory=mem_lim or None)
    if cgroup == "v2":
        _container_memory_qos(rc, pod, c, qos_class, node, alloc_memory, mem_req, pod_level, pod_limits, why)
        rc["swap"], swap_why = container_swap(pod, c, qos_class, node)
        rc["oom_group"] = not node.single_process_oom_kill  # kubelet's v2 default: unset = False
        rc["oomd_preference"], oomd_why = oomd_preference(qos_class, critical=qos.is_critical(pod))
        if why is not None:
            why["swap"] = swap_why
            why["oomd_preference"] = oomd_why
            why["oom_group"] = (
                "singleProcessOOMKill: true: the kernel kills only the process it chose"
                if node.single_process_oom_kill else
                "memory.oom.group=1 (singleProcessOOMKill false or unset, kubelet's cgroup v2 default): "
                "an OOM kill takes the whole container")
    if why is not None:
        why["cpu_shares"] = (
            f"{cpu_basis}m × 1024 / 1000m (CPU {basis})" if cpu_basis else "kubelet's minimum (no CPU request or limit)"
        )
        why["cpu_quota"] = (
            f"{quota}µs per {period}µs period = {cpu_lim}m × {period} / 1000m (CPU limit)"
            if quota
            else ("no quota: cpuCFSQuota is false" if not node.cpu_cfs_quota else "no quota: no CPU limit")
        )
        why["memory"] = "the container's memory limit" if mem_lim else "no limit: no memory limit"
    return ResourceConfig(**rc)


def container_swap(pod: Pod, c: Container, qos_class: str, node: NodeConfig) -> tuple[int, str]:
    """kuberuntime's configureContainerSwapResources on cgroup v2: memory.swap.max 0 (NoSwap),
    except LimitedSwap for a non-critical Burstable pod's container whose memory request differs
    from its limit: request / node memory × node swap (calcSwapForBurstablePods)."""
    if node.swap_behavior != "LimitedSwap":
        return 0, "0: memorySwap.swapBehavior NoSwap (kubelet's default)"
    req = _bytes(c.requests.get(MEMORY))
    lim = _bytes(c.limits.get(MEMORY))
    if qos.is_critical(pod):
        return 0, "0: a critical pod gets no swap"
    if qos_class != BURSTABLE:
        return 0, f"0: LimitedSwap gives swap to Burstable pods only ({qos_class})"
    if req == 0 and lim == 0:
        return 0, "0: no memory request or limit"
    if req == lim:
        return 0, "0: memory request equals limit"
    capacity = _bytes(node.capacity.get(MEMORY))
    if capacity <= 0 or req > capacity:
        return 0, "0: the request does not fit the node's memory"
    swap = int(req / capacity * node.swap_capacity)
    return swap, (f"{H.size(req)} request / {H.size(capacity)} node memory × {H.size(node.swap_capacity)} node swap"
                  " (LimitedSwap)")


def _container_memory_qos(rc, pod, c, qos_class, node, alloc_memory, mem_req, pod_level, pod_limits,
                          why: dict | None = None) -> None:
    """MemoryQoS on cgroup v2 (KEP-2570 as of 1.36): memory.min/low by reservation policy, and
    memory.high = floor((req + factor × (limit − req)) / page) × page for throttling
    (kuberuntime_container_linux.go generateLinuxContainerResources)."""
    if why is not None:
        _why_memory_reservation(why, node, qos_class, mem_req, "the container's memory request")
    if not node.gate("MemoryQoS"):
        rc["memory_high"] = -1  # kubelet writes "max" when the gate is off (rollback)
        if why is not None:
            why["memory_high"] = "max: the MemoryQoS feature gate is off (kubelet writes max)"
        return
    if node.memory_reservation_policy == TIERED:
        if qos_class == GUARANTEED:
            rc["memory_min"] = mem_req
        else:
            rc["memory_low"] = mem_req
    factor = node.memory_throttling_factor
    own_lim = _bytes(c.limits.get(MEMORY))
    if factor is None or (own_lim == 0 and pod_level and MEMORY in pod_limits):
        if why is not None:
            why["memory_high"] = ("max: memoryThrottlingFactor is unset" if factor is None else
                                  "max: the container has no memory limit of its own (the pod-level limit bounds it)")
        return
    if mem_req != own_lim or mem_req == 0:
        limit = own_lim or alloc_memory
        page = node.page_size
        high = int(math.floor((mem_req + factor * (limit - mem_req)) / page)) * page
        if high > mem_req and high != 0:
            rc["memory_high"] = high
        if why is not None:
            lim_what = "memory limit" if own_lim else "node allocatable memory (no memory limit)"
            formula = (f"floor(({H.size(mem_req)} request + memoryThrottlingFactor {factor:g} × "
                       f"({H.size(limit)} {lim_what} − {H.size(mem_req)} request)) / page {page}) × page")
            why["memory_high"] = formula if "memory_high" in rc else f"max: {formula} = {high} is not above the request"
    elif why is not None:
        why["memory_high"] = "max: the memory request equals the limit (nothing to throttle before it)"


# --- VMs ------------------------------------------------------------------------------------------


def vm_values(vm: VirtualMachine) -> tuple[dict[str, int], dict[str, int]]:
    """A VM's effective requests and limits: its own plus the hypervisor overhead (like pod
    overhead: added to requests, and to limits that are set)."""
    reqs = {r: _resource_int(vm.requests, r) + _resource_int(vm.overhead, r) for r in (CPU, MEMORY)}
    limits = {}
    for r in (CPU, MEMORY):
        lim = _resource_int(vm.limits, r)
        limits[r] = lim + _resource_int(vm.overhead, r) if lim else 0
    return reqs, limits


def vm_qos(vm: VirtualMachine) -> str:
    """The pod rules with the VM as its only container."""
    as_pod = Pod(
        name=vm.name,
        namespace="vm",
        uid="vm",
        containers=(Container(name="vm", requests=vm.requests, limits=vm.limits),),
    )
    return qos.pod_qos(as_pod, pod_level=False)


# --- the tree -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodContext:
    """Everything one pod's plan depends on besides the pod: two pods with equal manifests get
    equal plans under one context (what lets sdqos.loading.incremental reuse a plan while both are unchanged)."""

    node: NodeConfig
    cgroup: str
    capacity_memory: int  # the OOM score's denominator
    allocatable_memory: int  # MemoryQoS's memory.high basis for a container without a limit (kubelet's)
    # cpuManagerPolicy static: the shared pool (kubelet's default cpuset, a CPU list) every container
    # without exclusive CPUs runs on (v2: its scope's AllowedCPUs; both: a runtime's container cpuset,
    # through `podman update`); "": none is set
    shared_cpus: str = ""
    # explain only: the host's CPU topology, to say where exclusive CPUs lie ("whole core 2"); not
    # part of the context's key (an explained plan is never cached)
    topology: CPUTopology | None = None


@dataclass(slots=True)
class PlanBasis:
    """The node-wide part of a plan, computed before any pod: capacity, the pods' budget after
    VMs, the VMs' plans, and the context every pod is planned in."""

    node: NodeConfig
    cgroup: str
    capacity: dict[str, int]
    allocatable: dict[str, int]
    enforced: dict[str, int]
    budget: dict[str, int]
    vms: list[VMPlan]
    vm_cpu: int  # declared VMs' requests + what the rest of machine.slice weighs (machine.slice's basis)
    vm_mem: int
    warnings: list[str]
    context: PodContext
    machines: tuple[MachineCharge, ...] = ()
    declared_cpu: int = 0  # declared VMs' cpu requests: all that reduces kubepods.slice's CPU


STATIC_ON_V1 = ("cpuManagerPolicy static on cgroup v1: systemd cannot hold a cpuset here, so each container's CPUs "
                "(its exclusive ones, else the shared pool) are set as its processes' CPU affinity: at `sdqos run`, "
                "and again by every sync (a podman container's own cpuset cgroup too, through podman update)")


def plan_basis(node: NodeConfig, vms: Iterable[VirtualMachine] = (), cgroup: str = "v1", *,
               explain: bool = False, machines: Iterable[MachineCharge] = (),
               exclusive: Mapping[str, Mapping[str, str]] | None = None, shared_cpus: str = "",
               topology: CPUTopology | None = None) -> PlanBasis:
    """Node values and VMs: VMs, and whatever else runs in machine.slice (``machines``), take
    their share of the node first (one node budget). ``exclusive``: the static CPU manager's
    assignments (uid → container → CPU list), a VM's under its uid and container ``compute``;
    ``shared_cpus``: its shared pool (every container without exclusive CPUs gets it as its cpuset:
    v2: its scope's and a VM's AllowedCPUs; v1 and v2: podman's container cgroup, through podman
    update); ``topology``: the host's CPUs, for explain's words on where
    exclusive CPUs lie."""
    warnings = list(node.warnings)
    if node.cpu_manager_policy == "static" and cgroup == "v1":
        warnings.append(STATIC_ON_V1)
    capacity, allocatable = node_values(node)
    enforced = allocatable if "pods" in node.enforce_node_allocatable else capacity
    vms = list(vms)
    pool = shared_cpus if node.cpu_manager_policy == "static" else ""
    vm_pool = pool if cgroup == "v2" else ""  # (a VM's CPUs on v1: its processes' affinity, reconcile/cpus.py)
    vm_plans = [_vm_plan(vm, node, cgroup, capacity[MEMORY], explain, (exclusive or {}).get(vm.uid, {}).get("compute", ""),
                         vm_pool, topology) for vm in vms]
    warnings += _dedicated_vm_warnings(node, vms)
    machines = tuple(sorted(machines, key=lambda m: m.unit))
    declared_cpu = sum(v.requests[CPU] for v in vm_plans)
    vm_cpu = declared_cpu + sum(m.cpu for m in machines)
    vm_mem = sum(v.limits[MEMORY] for v in vm_plans) + sum(m.memory for m in machines)
    # CPU: shares are relative, so only what VMs declare (their requests) is taken from the pods; a
    # scope's weight is no reservation. Memory: what machine.slice holds or may hold.
    budget = {CPU: max(0, enforced[CPU] - declared_cpu), MEMORY: pods_memory(enforced[MEMORY], vm_mem, node.page_size),
              PID: enforced[PID]}
    if (vm_plans or machines) and (declared_cpu > enforced[CPU] or vm_mem >= enforced[MEMORY] > 0):
        who = "VMs and what runs in machine.slice" if machines else "VMs"
        warnings.append(
            f"{who} reserve {'more than' if vm_mem > enforced[MEMORY] or declared_cpu > enforced[CPU] else 'all'}"
            f" the node has for workloads: cpu {H.cpu(declared_cpu)} of {H.cpu(enforced[CPU])},"
            f" memory {H.size(vm_mem)} of {H.size(enforced[MEMORY])}"
            + ("; kubepods.slice keeps only what its pods use (its limit is clamped to their usage)"
               if vm_mem >= enforced[MEMORY] else "")
        )
    for m in machines:
        if not m.bounded and m.limit is None:
            warnings.append(f"{m.unit} ({m.what}) in machine.slice has no memory limit: counted by its usage "
                            f"{H.size(m.memory)}; machine.slice gets no memory limit while it runs (give it one, "
                            "or declare it as a VM)")
    context = PodContext(node, cgroup, capacity[MEMORY], allocatable[MEMORY], pool, topology)
    return PlanBasis(node, cgroup, capacity, allocatable, enforced, budget, vm_plans, vm_cpu, vm_mem, warnings, context,
                     machines, declared_cpu)


def pods_memory(enforced: int, machines: int, page: int) -> int:
    """kubepods.slice's memory: what machine.slice leaves of the node, continuous down to one page
    (sync then clamps it to what the pods use), never the jump to "no limit" a budget of 0 would
    be. Only a node with no memory to enforce (0) gives no limit, as for kubelet."""
    if enforced <= 0:
        return 0
    return max(enforced - machines, page)


NO_QUOTA_EXCLUSIVE = ("no quota: {what} exclusive CPUs (DisableCPUQuotaWithExclusiveCPUs, on by default in 1.36: "
                      "kubelet drops the CFS quota of such a {unit})")


def plan_pod(pod: Pod, ctx: PodContext, *, explain: bool = False,
             exclusive: Mapping[str, str] | None = None) -> PodPlan:
    """One pod's class, slice, values and containers: a function of the pod, ``ctx`` and the
    static CPU manager's ``exclusive`` assignments of its containers (name → CPU list; none when
    the policy is none). With DisableCPUQuotaWithExclusiveCPUs a pod holding exclusive CPUs gets no
    CFS quota (pod_container_manager_linux.go EnsureExists: enforceCPULimits = false when
    PodHasExclusiveCPUs) and neither does each container holding them (kuberuntime_container_linux.go:
    disableCPUQuota when ContainerHasExclusiveCPUs); the other containers keep theirs."""
    node, cgroup = ctx.node, ctx.cgroup
    pod_level = node.gate("PodLevelResources")
    cls = qos.pod_qos(pod, pod_level=pod_level, fix_empty_pod_level=node.gate("PodLevelResourcesFixKubeletQOSClass"))
    period = node.cpu_cfs_quota_period_us
    why: dict[str, str] | None = {} if explain else None
    held = {name: cpus for name, cpus in (exclusive or {}).items() if cpus}
    drop_quota = bool(held) and node.gate("DisableCPUQuotaWithExclusiveCPUs")
    no_quota = dataclasses.replace(node, cpu_cfs_quota=False) if drop_quota else node
    rc, reqs, lims = pod_resource_config(pod, cls, no_quota, cgroup, why)
    if drop_quota and why is not None:
        why["cpu_quota"] = NO_QUOTA_EXCLUSIVE.format(what="a container of the pod holds", unit="pod")
    containers = []
    for c in pod.all_containers():
        cwhy: dict[str, str] | None = {} if explain else None
        mine = held.get(c.name, "")
        crc = container_resource_config(pod, c, cls, no_quota if drop_quota and mine else node, cgroup,
                                        ctx.allocatable_memory, cwhy)
        if ctx.shared_cpus:  # kubelet's container cpuset (CRI CpusetCpus): v2's AllowedCPUs, podman's --cpuset-cpus
            crc = dataclasses.replace(crc, cpuset=mine or ctx.shared_cpus)
            if cwhy is not None and not mine:
                cwhy["cpus"] = f"the shared pool: CPUs {ctx.shared_cpus} (the CPUs no container or VM holds exclusively)"
        if cwhy is not None and mine:
            n = len(cpuset.parse(mine))
            cwhy["cpus"] = f"exclusive: {cls}, {n} integer CPU{'s' if n != 1 else ''}, {_where(mine, ctx.topology)}"
            if drop_quota:
                cwhy["cpu_quota"] = NO_QUOTA_EXCLUSIVE.format(what="the container holds", unit="container")
        adj = qos.container_oom_score_adj(pod, c, ctx.capacity_memory, qos=cls, pod_level=pod_level)
        if cwhy is not None:
            cwhy["oom_score_adj"] = _why_oom(pod, c, cls, adj, ctx.capacity_memory)
        crc, cprops = properties.shared(crc, cgroup, period, container=True)
        containers.append(
            ContainerPlan(
                name=c.name,
                kind=c.kind,
                scope=naming.container_scope(pod.uid, c.name),
                oom_score_adj=adj,
                resources=crc,
                properties=cprops,
                why=cwhy or {},
                cpus=mine,
            )
        )
    rc, props = properties.shared(rc, cgroup, period)
    return PodPlan(
        key=pod.key,
        uid=pod.uid,
        qos=cls,
        slice=naming.pod_slice(node.cgroup_root, TIER_NAMES.get(cls), pod.uid),
        requests=reqs,
        limits=lims,
        resources=rc,
        properties=props,
        containers=containers,
        why=why or {},
        manifest=pod,
        grace_period=pod.termination_grace_period,
        unenforced=(EPHEMERAL_STORAGE,) if _asks_ephemeral_storage(pod) else (),
    )


def pod_problems(pp: PodPlan) -> list[InvalidInput]:
    """What makes a planned pod impossible to send: a value that does not fit its D-Bus type or
    the kernel's range (a CPU limit of 20000000000000 cores: valid for the API server, a quota
    no kernel takes), a unit name longer than systemd allows. Each names the manifest's field;
    such a pod is invalid input like any other (its units are kept, the others synced)."""
    out: list[InvalidInput] = []
    pod = pp.pod
    where = _where_of(pod)
    if not naming.valid_unit_name(pp.slice):
        out.append(InvalidInput(f"makes the pod slice name {len(pp.slice)} characters long; systemd allows "
                                f"{naming.UNIT_NAME_MAX}", where=where, field="metadata.uid"))
    for why in properties.unsendable(pp.properties):
        out.append(InvalidInput(f"the pod's values cannot be set: {why}", where=where, field="spec"))
    fields = {c.name: f"spec.{'initContainers' if c.kind != 'app' else 'containers'}[{i}]"
              for group in (pod.init_containers, pod.containers) for i, c in enumerate(group)}
    for c in pp.containers:
        field = fields.get(c.name, "spec.containers")
        if not naming.valid_unit_name(c.scope):
            out.append(InvalidInput(f"makes the container scope name {len(c.scope)} characters long; systemd "
                                    f"allows {naming.UNIT_NAME_MAX}", where=where, field=f"{field}.name"))
        for why in properties.unsendable(c.properties):
            out.append(InvalidInput(f"container {c.name}'s values cannot be set: {why}", where=where,
                                    field=f"{field}.resources"))
    return out


def _where_of(pod: Pod) -> str:
    src = pod.source
    return f"{src.file}[{src.index}]" if src is not None else pod.key


def build_plan(
    node: NodeConfig,
    pods: Iterable[Pod],
    vms: Iterable[VirtualMachine] = (),
    cgroup: str = "v1",
    *,
    explain: bool = False,
    machines: Iterable[MachineCharge] = (),
    shared_cpus: str = "",
) -> Plan:
    """Compute every unit, property and OOM score kubelet would (plus machine.slice for VMs).
    ``shared_cpus``: the static CPU manager's shared pool (see plan_basis)."""
    basis = plan_basis(node, vms, cgroup, explain=explain, machines=machines, shared_cpus=shared_cpus)
    plans, errors = [], []
    for pod in pods:
        pp = plan_pod(pod, basis.context, explain=explain)
        problems = pod_problems(pp)
        errors += problems
        if not problems:
            plans.append(pp)
    plan = assemble(basis, plans, explain=explain)
    plan.errors = errors
    return plan


def _tier_sums(pod_plans: list[PodPlan], kept: tuple[KeptPod, ...], explain: bool
               ) -> tuple[dict[str, int], dict[str, int], dict[str, list[str]]]:
    """Each QoS tier's CPU and memory requests (Besteffort: none) and, explaining, its members:
    the pods, and the kept slices instead of the pods they hold back."""
    tier_cpu = {GUARANTEED: 0, BURSTABLE: 0, BESTEFFORT: 0}
    tier_mem = {GUARANTEED: 0, BURSTABLE: 0, BESTEFFORT: 0}
    tier_members: dict[str, list[str]] = {GUARANTEED: [], BURSTABLE: [], BESTEFFORT: []}
    waiting = {k.replaces for k in kept if k.replaces}
    for pp in pod_plans:
        if pp.key in waiting:
            continue  # its running slice is kept with its old values: those count
        cls, reqs = pp.qos, pp.requests
        tier_cpu[cls] += reqs[CPU]
        if cls != BESTEFFORT:
            tier_mem[cls] += reqs[MEMORY]
        if explain:
            tier_members[cls].append(f"{pp.key} {H.cpu(reqs[CPU])}")
    for k in kept:
        tier_cpu[k.qos] += k.cpu
        if k.qos != BESTEFFORT:
            tier_mem[k.qos] += k.memory
        if explain:
            tier_members[k.qos].append(f"{k.unit} {H.cpu(k.cpu)} (kept: {k.reason})")
    return tier_cpu, tier_mem, tier_members


def _admission_warnings(node: NodeConfig, capacity: Mapping[str, int], pod_plans: list[PodPlan],
                        warnings: list[str]) -> dict[str, admission.Refusal]:
    """Which pods kubelet would not admit (each said in ``warnings``, as is ephemeral-storage
    asked for and not enforced)."""
    not_admitted = admission.admit_in_order(admission.node_allocatable(node, capacity), (),
                                            ((pp.key, pp.requests) for pp in pod_plans))
    for key, why in not_admitted.items():
        warnings.append(f"pod {key} would not be admitted: {why.reason} ({why.left()})")
    ephemeral = [pp.key for pp in pod_plans if EPHEMERAL_STORAGE in pp.unenforced]
    if ephemeral:
        warnings.append("ephemeral-storage is not enforced (kubelet enforces it by evicting on disk use, which sdqos "
                        f"does not watch): {', '.join(ephemeral[:5])}" + (f" and {len(ephemeral) - 5} more"
                                                                          if len(ephemeral) > 5 else ""))
    return not_admitted


def assemble(basis: PlanBasis, pod_plans: list[PodPlan], *, explain: bool = False, kept: Iterable[KeptPod] = ()) -> Plan:
    """The tree from the basis and every pod's plan: the tiers' sums, then the units, parents first.
    ``kept``: pod slices sync keeps, counted in their tiers instead of the pods they hold back."""
    node, cgroup = basis.node, basis.cgroup
    warnings = list(basis.warnings)
    capacity, allocatable, budget = basis.capacity, basis.allocatable, basis.budget
    vm_plans, vm_mem = basis.vms, basis.vm_mem
    root = list(node.cgroup_root)
    kubepods = naming.node_slice(root)
    tier_slice = {t: naming.tier_slice(root, n) for t, n in TIER_NAMES.items()}
    tier_slice[GUARANTEED] = kubepods
    kept = tuple(sorted(kept, key=lambda k: k.unit))
    tier_cpu, tier_mem, tier_members = _tier_sums(pod_plans, kept, explain)

    pods_cpu = sum(tier_cpu.values())
    total_cpu = pods_cpu + basis.declared_cpu
    total_mem = sum(tier_mem.values()) + sum(v.requests[MEMORY] for v in vm_plans)
    over_committed = total_cpu > allocatable[CPU] or total_mem > allocatable[MEMORY]
    if over_committed:
        warnings.append(
            "requests exceed node allocatable:"
            f" cpu {H.cpu(total_cpu)} requested of {H.cpu(allocatable[CPU])},"
            f" memory {H.size(total_mem)} requested of {H.size(allocatable[MEMORY])}"
        )
    not_admitted = _admission_warnings(node, capacity, pod_plans, warnings)

    # kubelet's kubepods shares are allocatable CPU: declared VMs take theirs, never below the pods' requests
    budget = dict(budget)
    budget[CPU] = max(budget[CPU], min(pods_cpu, basis.enforced[CPU]))
    units = _tier_units(basis, _Tiers(tier_slice, tier_cpu, tier_mem, tier_members), budget, warnings, explain)
    units += _reserved_units(node, cgroup)
    units += _pod_units(pod_plans, tier_slice)
    machines = basis.machines
    if vm_plans or machines:
        units.append(_machine_unit(basis, pods_cpu, explain))
        # VM scopes are not planned units: sync finds each VM's running scope in machine.slice
        # and tunes only a scope it can claim (see reconcile.bind_scopes), never one by name alone.
    return Plan(
        cgroup=cgroup,
        node=node,
        capacity=capacity,
        allocatable=allocatable,
        pods_budget=budget,
        vm_reserved={CPU: basis.declared_cpu, MEMORY: vm_mem},
        units=units,
        pods=pod_plans,
        vms=vm_plans,
        warnings=warnings,
        root_slice=kubepods,
        machines=machines,
        kept=kept,
        over_committed=over_committed,
        not_admitted=not_admitted,
        basis=basis,
    )




def _pod_units(pod_plans: list[PodPlan], tier_slice: Mapping[str, str]) -> list[UnitPlan]:
    """Each pod's slice in its tier, followed by its containers' scopes; Guaranteed pods first."""
    units = []
    order = {GUARANTEED: 0, BURSTABLE: 1, BESTEFFORT: 2}
    for pp in sorted(pod_plans, key=lambda p: (order[p.qos], p.key)):
        owner = naming.Owner.pod(pp.key)
        units.append(
            UnitPlan(
                name=pp.slice,
                slice=tier_slice[pp.qos],
                kind="pod",
                description=naming.description("pod", owner, pp.qos),
                properties=pp.properties,
                resources=pp.resources,
                owner=owner,
                why=pp.why,
            )
        )
        for cp in pp.containers:
            c_owner = naming.Owner.pod(pp.key, cp.name)
            units.append(
                UnitPlan(
                    name=cp.scope,
                    slice=pp.slice,
                    kind="container",
                    description=naming.description("container", c_owner, pp.qos),
                    properties=cp.properties,
                    resources=cp.resources,
                    owner=c_owner,
                    create=False,
                    why=cp.why,
                )
            )
    return units


def _machine_unit(basis: PlanBasis, pods_cpu: int, explain: bool) -> UnitPlan:
    """machine.slice: the VMs' CPU requests (what else runs there only in what VMs and pods leave
    of the node) and their memory, unbounded when something there has no limit."""
    machines, vm_cpu, vm_mem = basis.machines, basis.vm_cpu, basis.vm_mem
    mwhy = {}
    unbounded = [m for m in machines if not m.bounded]
    # Undeclared weights count for machine.slice only in what the VMs and pods leave of the node
    left = max(0, basis.enforced[CPU] - basis.declared_cpu - pods_cpu)
    others_cpu = vm_cpu - basis.declared_cpu
    machine_cpu = basis.declared_cpu + min(others_cpu, left)
    if explain:
        others = "".join(f" + {m.unit} ({m.what}) {H.cpu(m.cpu)}" for m in machines)
        capped = f", at most the {H.cpu(left)} VMs and pods leave" if others_cpu > left else ""
        mwhy["cpu_shares"] = f"{machine_cpu}m × 1024 / 1000m (Σ VM cpu requests{others}{capped})"
        if unbounded:
            mwhy["memory"] = "no limit: " + ", ".join(
                f"{m.unit} has none" if m.limit is None else f"{m.unit} uses less than its limit {H.size(m.limit)}"
                for m in unbounded)
        else:
            others = "".join(f" + {m.unit} ({m.what}) {H.size(m.memory)}" for m in machines)
            mwhy["memory"] = f"Σ VM memory (limits.memory + overhead){others}"
    mrc = ResourceConfig(cpu_shares=qos.milli_cpu_to_shares(machine_cpu), memory=None if unbounded else vm_mem)
    return UnitPlan(
        name=naming.MACHINE_SLICE,
        slice=naming.ROOT_SLICE,
        kind="machine",
        description="Virtual Machine and Container Slice",
        properties=to_properties(mrc, basis.cgroup, basis.node.cpu_cfs_quota_period_us),
        resources=mrc,
        why=mwhy,
    )


def _asks_ephemeral_storage(pod: Pod) -> bool:
    lists = [c.requests for c in pod.all_containers()] + [c.limits for c in pod.all_containers()] + [pod.overhead]
    if pod.resources is not None:
        lists += [pod.resources.requests, pod.resources.limits]
    return any(EPHEMERAL_STORAGE in rl for rl in lists)


def recount(plan: Plan, kept: Iterable[KeptPod]) -> Plan:
    """``plan`` with ``kept`` pod slices counted in the tiers: the node, tier and machine.slice
    units computed again, every other unit (pods, the VM scopes sync bound) as it is."""
    assert plan.basis is not None, "a plan from assemble"
    again = assemble(plan.basis, plan.pods, kept=kept)
    fresh = {u.name: u for u in again.units if u.kind in ("node", "tier", "machine")}
    units = [fresh.get(u.name, u) if u.kind in ("node", "tier", "machine") else u for u in plan.units]
    return dataclasses.replace(plan, units=units, kept=again.kept, pods_budget=again.pods_budget,
                               warnings=again.warnings + [w for w in plan.warnings if w not in again.warnings
                                                          and not w.startswith("requests exceed node allocatable")],
                               over_committed=again.over_committed)


@dataclass(slots=True)
class _Tiers:
    """The QoS tiers of one plan: each tier's slice (Guaranteed's is the node's, kubepods.slice)
    and the requests counted in it (``members``: who, for explain)."""

    slices: dict[str, str]
    cpu: dict[str, int]
    mem: dict[str, int]
    members: dict[str, list[str]]


def _tier_units(base: PlanBasis, tiers: _Tiers, budget: dict[str, int], warnings: list[str],
                explain: bool) -> list[UnitPlan]:
    """kubepods.slice and the Burstable and BestEffort tiers: the node's ``budget`` (its CPU raised
    to the pods' requests), qosReserved, MemoryQoS."""
    node, cgroup, enforced, allocatable = base.node, base.cgroup, base.enforced, base.allocatable
    vm_cpu, vm_mem = base.declared_cpu, base.vm_mem
    tier_slice, tier_cpu, tier_mem, tier_members = tiers.slices, tiers.cpu, tiers.mem, tiers.members
    kubepods = tier_slice[GUARANTEED]
    period = node.cpu_cfs_quota_period_us
    mem_qos = cgroup == "v2" and node.gate("MemoryQoS")
    tiered = mem_qos and node.memory_reservation_policy == TIERED
    why_node: dict[str, str] = {}
    node_rc: dict = dict(cpu_shares=qos.milli_cpu_to_shares(budget[CPU]), memory=budget[MEMORY], pids=budget[PID] or None)
    if tiered:
        node_rc["memory_min"] = tier_mem[GUARANTEED] + tier_mem[BURSTABLE]
    if explain:
        basis = "allocatable" if "pods" in node.enforce_node_allocatable else "capacity (enforceNodeAllocatable lacks 'pods')"
        vm_note = f" − VMs' requests {H.cpu(vm_cpu)}" if vm_cpu else ""
        if budget[CPU] > enforced[CPU] - vm_cpu:
            vm_note += f", raised to the pods' requests {H.cpu(budget[CPU])}"
        why_node["cpu_shares"] = f"{budget[CPU]}m × 1024 / 1000m (node {basis} {H.cpu(enforced[CPU])}{vm_note})"
        if node.reserved_system_cpus and "pods" in node.enforce_node_allocatable:
            why_node["cpu_shares"] += f"; allocatable cpu = {cpu_allocatable_formula(node)}"
        vm_mnote = f" − VMs {H.size(vm_mem)}" if vm_mem else ""
        if enforced[MEMORY] and budget[MEMORY] > enforced[MEMORY] - vm_mem:
            vm_mnote += (f", at least one page {H.size(budget[MEMORY])} (sync raises it to what the pods use, "
                         "never lower)")
        why_node["memory"] = f"node {basis} {H.size(enforced[MEMORY])}{vm_mnote}"
        why_node["pids"] = f"node {basis} pids"

    burst_rc: dict = dict(cpu_shares=qos.milli_cpu_to_shares(tier_cpu[BURSTABLE]))
    be_rc: dict = dict(cpu_shares=qos.MIN_SHARES)
    why_b: dict[str, str] = {}
    why_be: dict[str, str] = {}
    if explain:
        members = ", ".join(tier_members[BURSTABLE]) or "no Burstable pods"
        why_b["cpu_shares"] = f"{tier_cpu[BURSTABLE]}m × 1024 / 1000m (Σ Burstable requests: {members})"
        why_be["cpu_shares"] = "kubelet's fixed BestEffort tier shares"
    pct = node.qos_reserved.get(MEMORY)
    # kubelet's setMemoryReserve starts from GetNodeAllocatableAbsolute (capacity − kubeReserved −
    # systemReserved, whatever enforceNodeAllocatable says; container_manager_linux.go setupNode),
    # less what VMs reserve here; a base of 0 sets no limits ("might be in standalone mode").
    reserve_base = max(0, allocatable[MEMORY] - vm_mem)
    if pct is not None and node.gate("QOSReserved") and reserve_base > 0:
        burst_mem = reserve_base - tier_mem[GUARANTEED] * pct // 100
        be_mem = burst_mem - tier_mem[BURSTABLE] * pct // 100
        for name, val in (("Burstable", burst_mem), ("BestEffort", be_mem)):
            if val <= 0:
                warnings.append(f"qosReserved memory {pct}% leaves the {name} tier no memory ({val} bytes): left unlimited")
        burst_rc["memory"] = burst_mem if burst_mem > 0 else None
        be_rc["memory"] = be_mem if be_mem > 0 else None
        if explain:
            vm_part = f" − VMs {H.size(vm_mem)}" if vm_mem else ""
            why_b["memory"] = (
                f"node allocatable {H.size(allocatable[MEMORY])}{vm_part} − Σ Guaranteed requests"
                f" {H.size(tier_mem[GUARANTEED])} × {pct}% (qosReserved)"
            )
            why_be["memory"] = (
                f"Burstable tier {H.size(burst_mem)} − Σ Burstable requests"
                f" {H.size(tier_mem[BURSTABLE])} × {pct}% (qosReserved)"
            )
    elif explain:
        why_b["memory"] = why_be["memory"] = "no limit: qosReserved memory is not in effect"
    if tiered:
        burst_rc["memory_low"] = tier_mem[BURSTABLE]
    if explain and cgroup == "v2":
        _why_tier_memory_qos(node, tier_mem, why_node, why_b, why_be)

    node_res = ResourceConfig(**node_rc)
    burst_res = ResourceConfig(**burst_rc)
    be_res = ResourceConfig(**be_rc)
    return [
        UnitPlan(kubepods, naming.parent_slice(kubepods), "node", naming.description("node"),
                 to_properties(node_res, cgroup, period), node_res, why=why_node),
        UnitPlan(tier_slice[BURSTABLE], kubepods, "tier", naming.description("tier", qos=BURSTABLE),
                 to_properties(burst_res, cgroup, period), burst_res, why=why_b),
        UnitPlan(tier_slice[BESTEFFORT], kubepods, "tier", naming.description("tier", qos=BESTEFFORT),
                 to_properties(be_res, cgroup, period), be_res, why=why_be),
    ]


def _why_tier_memory_qos(node: NodeConfig, tier_mem: dict[str, int], why_node: dict, why_b: dict, why_be: dict) -> None:
    """Why kubepods and the tiers have their memory.min/low/high (MemoryQoS TieredReservation:
    kubepods holds the Guaranteed and Burstable requests with memory.min, the Burstable tier
    protects its requests with memory.low; kubelet sets memory.high on no slice)."""
    off = ("0: the MemoryQoS feature gate is off" if not node.gate("MemoryQoS") else
           f"0: memoryReservationPolicy is {node.memory_reservation_policy} (TieredReservation sets it)")
    tiered = node.gate("MemoryQoS") and node.memory_reservation_policy == TIERED
    for why in (why_node, why_b, why_be):
        why["memory_min"] = why["memory_low"] = off
        why["memory_high"] = "max: kubelet sets memory.high on containers only, never on its slices"
    if tiered:
        why_node["memory_min"] = (f"Σ Guaranteed requests {H.size(tier_mem[GUARANTEED])} + Σ Burstable requests "
                                  f"{H.size(tier_mem[BURSTABLE])} (TieredReservation)")
        why_node["memory_low"] = why_b["memory_min"] = why_be["memory_min"] = "0: TieredReservation sets memory.min on kubepods only"
        why_b["memory_low"] = f"Σ Burstable requests {H.size(tier_mem[BURSTABLE])} (TieredReservation)"
        why_be["memory_low"] = "0: BestEffort pods request nothing"


def _reserved_units(node: NodeConfig, cgroup: str) -> list[UnitPlan]:
    """kubelet's enforceExistingCgroup for ``system-reserved``/``kube-reserved`` enforcement: the
    reserved amounts become limits on an existing unit (``-compressible``: CPU shares only)."""
    out = []
    for who, unit, reserved in (("system", node.system_reserved_cgroup, node.system_reserved),
                                ("kube", node.kube_reserved_cgroup, node.kube_reserved)):
        plain, compressible = f"{who}-reserved" in node.enforce_node_allocatable, f"{who}-reserved-compressible" in node.enforce_node_allocatable
        if not unit or not (plain or compressible):
            continue
        values: dict[str, int] = {}  # kubelet's ResourceConfig for the reserved cgroup
        why: dict[str, str] = {}
        if CPU in reserved:
            values["cpu_shares"] = qos.milli_cpu_to_shares(_milli(reserved[CPU]))
            why["cpu_shares"] = f"{_milli(reserved[CPU])}m × 1024 / 1000m ({who}Reserved cpu)"
        if plain and MEMORY in reserved:
            values["memory"] = _bytes(reserved[MEMORY])
            why["memory"] = f"{who}Reserved memory"
        if plain and PID in reserved:
            values["pids"] = _bytes(reserved[PID])
            why["pids"] = f"{who}Reserved pid"
        if values:
            rc = ResourceConfig(cpu_shares=values.get("cpu_shares"), memory=values.get("memory"), pids=values.get("pids"))
            kinds = {"cpu_shares": properties.WEIGHT, "memory": properties.MEMORY_LIMIT, "pids": properties.PIDS}
            rows = [properties.BY_NAME[properties.of_kind(kinds[k], cgroup)] for k in values]
            props = {row.name: row.value(rc, node.cpu_cfs_quota_period_us, False) for row in rows}
            out.append(UnitPlan(unit, naming.parent_slice(unit) if unit.endswith(".slice") else naming.ROOT_SLICE,
                                "reserved", f"{who}-reserved", props, rc, create=False, why=why))
    return out


def _dedicated_vm_warnings(node: NodeConfig, vms: Iterable[VirtualMachine]) -> list[str]:
    """spec.cpu.dedicatedCpuPlacement with cpuManagerPolicy none: said not to apply, never silent."""
    names = [vm.name for vm in vms if vm.dedicated_cpu_placement]
    if not names or node.cpu_manager_policy == "static":
        return []
    return [f"VM {', '.join(names)}: spec.cpu.dedicatedCpuPlacement does not apply: cpuManagerPolicy is "
            f"{node.cpu_manager_policy} in node.yaml (exclusive CPUs need static); it runs on every CPU"]


def _vm_plan(vm: VirtualMachine, node: NodeConfig, cgroup: str, memory_capacity: int, explain: bool,
             cpus: str = "", pool: str = "", topology: CPUTopology | None = None) -> VMPlan:
    """``cpus``: the VM's exclusive CPUs when it holds them (dedicatedCpuPlacement); with
    DisableCPUQuotaWithExclusiveCPUs its scope then has no CFS quota, as kubelet gives
    KubeVirt's virt-launcher pod and its compute container none. ``pool``: the shared pool on
    cgroup v2 with the static policy: the scope's AllowedCPUs are its exclusive CPUs, else those."""
    cls = vm_qos(vm)
    reqs, lims = vm_values(vm)
    period = node.cpu_cfs_quota_period_us
    drop_quota = bool(cpus) and node.gate("DisableCPUQuotaWithExclusiveCPUs")
    quota = qos.milli_cpu_to_quota(lims[CPU], period) if node.cpu_cfs_quota and not drop_quota else 0
    preference, oomd_why = oomd_preference(cls, evictable=vm.eviction == VM_EVICTION_ALLOWED)
    rc = ResourceConfig(
        cpu_shares=qos.milli_cpu_to_shares(reqs[CPU]),
        cpu_quota=quota or None,
        cpu_period=period if quota else None,
        memory=lims[MEMORY],
        oomd_preference=preference if cgroup == "v2" else None,
        cpuset=(cpus or pool) if pool else None,
    )
    if cls == GUARANTEED:
        adj = qos.GUARANTEED_OOM_SCORE_ADJ
    else:
        adj = 1000 - qos._go_div(1000 * reqs[MEMORY], memory_capacity)
        adj = max(1000 + qos.GUARANTEED_OOM_SCORE_ADJ, adj)
        adj = adj - 1 if adj == qos.BESTEFFORT_OOM_SCORE_ADJ else adj
    props = to_properties(rc, cgroup, period, container=True)
    props.pop(properties.of_kind(properties.PIDS, cgroup), None)  # libvirt/machined own TasksMax on VM scopes
    # The scope, when its name is known in advance (spec.scope, or the one `sdqos run --vm`
    # makes); libvirt's names carry a domain id and pidFile VMs are found at sync time.
    scope = None
    if vm.scope:
        scope = vm.scope
    elif not vm.libvirt_domain and not vm.pid_file:
        scope = naming.machine_scope(vm.name)
    why = {}
    if explain:
        oh_cpu, oh_mem = _resource_int(vm.overhead, CPU), _resource_int(vm.overhead, MEMORY)
        src = ("sdqos's default: 100m; QEMU 30 MiB + IO thread 8 MiB + video 32 MiB + 8 MiB per vCPU + guest RAM / 512,"
               " KubeVirt's terms" if vm.overhead_defaulted else "spec.overhead")
        why["cpu_shares"] = (f"{reqs[CPU]}m × 1024 / 1000m (cpu request {H.cpu(reqs[CPU] - oh_cpu)}"
                             f" + overhead {H.cpu(oh_cpu)}, {src})")
        if quota:
            why["cpu_quota"] = (f"({H.cpu(lims[CPU] - oh_cpu)} limit + {H.cpu(oh_cpu)} overhead) × {period}µs / 1000m"
                                f" = {quota}µs per {period}µs")
        elif drop_quota:
            why["cpu_quota"] = NO_QUOTA_EXCLUSIVE.format(what="the VM holds", unit="pod")
        else:
            why["cpu_quota"] = "no cpu limit" if not lims[CPU] else "cpuCFSQuota is off in node.yaml"
        if vm.dedicated_cpu_placement:
            why["cpus"] = _why_vm_cpus(vm, node, cpus, topology)
        elif pool:
            why["cpus"] = f"the shared pool: CPUs {pool} (the CPUs no container or VM holds exclusively)"
        why["memory"] = (f"limits.memory {H.size(lims[MEMORY] - oh_mem)} (guest RAM) + overhead {H.size(oh_mem)}"
                         f" ({src})")
        if cgroup == "v2":
            why["oomd_preference"] = oomd_why
        if cls == GUARANTEED:
            why["oom_score_adj"] = "Guaranteed VM: -997, as kubelet gives Guaranteed pods"
        else:
            why["oom_score_adj"] = (f"{cls} VM: 1000 − 1000 × {H.size(reqs[MEMORY])} (memory request + overhead) / "
                                    f"{H.size(memory_capacity)} (node memory), as kubelet's GetContainerOOMScoreAdjust")
    return VMPlan(vm, cls, scope, reqs, lims, adj, rc, props, why, cpus)


def _where(cpus: str, topology: CPUTopology | None) -> str:
    """Exclusive CPUs for explain: "whole core 2 (CPUs 2-3)" when the topology is known."""
    if topology is None:
        return f"CPUs {cpus}"
    from sdqos.kube.cputopology import describe  # (explain only)

    return f"{describe(cpuset.parse(cpus), topology)} (CPUs {cpus})"


def _why_vm_cpus(vm: VirtualMachine, node: NodeConfig, cpus: str, topology: CPUTopology | None = None) -> str:
    n = _resource_int(vm.limits, CPU) // 1000
    text = f"exclusive: dedicatedCpuPlacement, {n} integer CPU{'s' if n != 1 else ''}, "
    if node.cpu_manager_policy != "static":
        return text + f"not applied: cpuManagerPolicy is {node.cpu_manager_policy}"
    return text + (_where(cpus, topology) if cpus else "none held yet (allocated by `sdqos run --vm`, or by sync when found running)")


def _why_oom(pod: Pod, c: Container, cls: str, adj: int, capacity: int) -> str:
    if qos.is_node_critical(pod):
        return f"node-critical pod (priorityClassName {qos.SYSTEM_NODE_CRITICAL})"
    if cls == GUARANTEED:
        return "Guaranteed pod"
    if cls == BESTEFFORT:
        return "BestEffort pod"
    req = _bytes(c.requests.get(MEMORY))
    text = f"1000 − 1000 × {H.size(req)} / {H.size(capacity)} (memory request / node memory capacity)"
    if c.sidecar:
        text += ", at most the smallest app container's score (sidecar)"
    if adj in (3, 999):
        text += f", clamped to {adj}"
    return text
