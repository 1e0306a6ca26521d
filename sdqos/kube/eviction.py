"""kubelet's node-pressure eviction, the pure part: thresholds, signals, conditions, ranking.

Each function names the kubelet function it follows (Kubernetes 1.36, ``pkg/kubelet/eviction``):

- thresholds from node.yaml: ``helpers.go`` ParseThresholdConfig, parseThresholdStatement,
  parseGracePeriods, parseMinimumReclaims, addAllocatableThresholds;
- which thresholds are crossed: thresholdsMet, ``api/types.go`` GetThresholdQuantity;
- node conditions: nodeConditions (signalToNodeCondition);
- the order pods are evicted in: rankMemoryPressure (exceedMemoryRequests → priority → memory)
  and rankPIDPressure (priority → process), and ``eviction_manager.go`` evictPod's refusal of
  critical pods (``pkg/kubelet/types`` IsCriticalPod).

Nothing here reads the host: signals come in as :class:`Observation` (``sdqos.host.pressure``
makes them from the kernel's numbers), workloads as :class:`Candidate`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from sdqos.errors import InvalidInput, QuantityError
from sdqos.kube import qos
from sdqos.kube.model import MEMORY, VM_EVICTION_ALLOWED, Container, Pod, VirtualMachine
from sdqos.kube.duration import parse_go_duration
from sdqos.kube.quantity import parse_quantity
from sdqos.kube.thresholds import (
    DEFAULT_EVICTION_HARD,
    SIGNALS,
    ThresholdValue,
    parse_minimum_reclaim,
    parse_threshold_statement,
)

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
PID_AVAILABLE = "pid.available"
DISK_SIGNALS = (
    "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree",
    "containerfs.available", "containerfs.inodesFree",
)
# pkg/kubelet/eviction/api/types.go + helpers.go signalToNodeCondition.
SIGNAL_CONDITION = {
    MEMORY_AVAILABLE: "MemoryPressure",
    ALLOCATABLE_MEMORY_AVAILABLE: "MemoryPressure",
    PID_AVAILABLE: "PIDPressure",
    **{s: "DiskPressure" for s in DISK_SIGNALS},
}
assert SIGNALS == frozenset(SIGNAL_CONDITION)
# The signals sdqos observes; the disk ones are accepted (a kubelet config works as-is) but
# never observed: sdqos runs no image store or container log rotation it could reclaim from.
OBSERVED_SIGNALS = (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE, PID_AVAILABLE)
NS_PER_S = 10**9
INT32 = (-(2**31), 2**31 - 1)



# --- thresholds ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Threshold:
    """evictionapi.Threshold (operator is always LessThan): crossed when available < value."""

    signal: str
    value: ThresholdValue
    grace_period_ns: int = 0
    min_reclaim: ThresholdValue | None = None
    # Where it was declared (evictionHard | evictionSoft), for showing it; not part of its identity
    # (a soft threshold with grace period 0 is hard, as kubelet's isHardEvictionThreshold says).
    declared_in: str = field(default="evictionHard", compare=False, repr=False)

    @property
    def hard(self) -> bool:
        """isHardEvictionThreshold: no grace period."""
        return self.grace_period_ns == 0


@dataclass(frozen=True, slots=True)
class EvictionConfig:
    """The eviction settings in force: every threshold (hard, soft, and the allocatable copies),
    evictionMaxPodGracePeriod (s) and evictionPressureTransitionPeriod (ns)."""

    thresholds: tuple[Threshold, ...]
    max_pod_grace_period: int = 0
    pressure_transition_period_ns: int = 5 * 60 * NS_PER_S


def parse_grace_period(signal: str, value) -> int:
    """parseGracePeriods, one entry: a Go duration ≥ 0, in nanoseconds."""
    if signal not in SIGNALS:
        raise ValueError(f"unsupported eviction signal {signal}")
    if not isinstance(value, str):
        raise ValueError(f"must be a duration such as 30s or 1m30s, not {value!r}")
    ns = parse_go_duration(value)
    if ns < 0:
        raise ValueError(f"invalid eviction grace period specified: {value}, must be a positive value")
    return ns


def add_allocatable_thresholds(thresholds: Sequence[Threshold]) -> tuple[Threshold, ...]:
    """addAllocatableThresholds: every hard memory.available threshold is copied to
    allocatableMemory.available (with its minimum reclaim), after the others."""
    extra = [Threshold(ALLOCATABLE_MEMORY_AVAILABLE, t.value, 0, t.min_reclaim, t.declared_in)
             for t in thresholds if t.signal == MEMORY_AVAILABLE and t.hard]
    return (*thresholds, *extra)


def _err(path: str, message: str) -> InvalidInput:
    return InvalidInput(message, where="node.yaml", field=path)


def _string_map(raw, key: str, errors: list) -> dict[str, object]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(_err(key, "must be a mapping of eviction signal to value"))
        return {}
    return {str(k): v for k, v in value.items()}


def parse_eviction_config(raw: Mapping, enforce_node_allocatable: Iterable[str]) -> tuple[EvictionConfig, list[InvalidInput]]:
    """ParseThresholdConfig over node.yaml's eviction fields, with kubelet's defaults (evictionHard
    100Mi when absent or null; a given evictionHard replaces it). Unlike kubelet, which stops at
    the first bad statement, every bad statement is one error. With errors, do not use the config."""
    errors: list[InvalidInput] = []
    hard_raw = raw.get("evictionHard")
    if hard_raw is None:
        hard_raw = DEFAULT_EVICTION_HARD
    hard_map = _string_map({"evictionHard": hard_raw}, "evictionHard", errors)
    soft_map = _string_map(raw, "evictionSoft", errors)
    grace_map = _string_map(raw, "evictionSoftGracePeriod", errors)
    reclaim_map = _string_map(raw, "evictionMinimumReclaim", errors)

    grace: dict[str, int] = {}
    grace_errors: set[str] = set()
    for signal, value in grace_map.items():
        try:
            grace[signal] = parse_grace_period(signal, value)
        except ValueError as exc:
            grace_errors.add(signal)
            errors.append(_err(f"evictionSoftGracePeriod.{signal}", str(exc)))
    reclaims: dict[str, ThresholdValue] = {}
    for signal, value in reclaim_map.items():
        try:
            reclaims[signal] = parse_minimum_reclaim(signal, value)
        except ValueError as exc:
            errors.append(_err(f"evictionMinimumReclaim.{signal}", str(exc)))
    def statements(m: dict, key: str, grace: Mapping[str, int] | None) -> list[Threshold]:
        out = []
        for signal, value in m.items():
            try:
                tv = parse_threshold_statement(signal, value)
            except ValueError as exc:
                errors.append(_err(f"{key}.{signal}", str(exc)))
                continue
            if tv is None:
                continue
            period = 0
            if grace is not None:
                if signal not in grace:
                    if signal not in grace_errors:
                        errors.append(_err(f"evictionSoftGracePeriod.{signal}",
                                           f"grace period must be specified for the soft eviction threshold {signal}"))
                    continue
                period = grace[signal]
            out.append(Threshold(signal, tv, period, declared_in=key))
        return out

    thresholds = statements(hard_map, "evictionHard", None) + statements(soft_map, "evictionSoft", grace)
    thresholds = [Threshold(t.signal, t.value, t.grace_period_ns, reclaims.get(t.signal), t.declared_in) for t in thresholds]
    result = tuple(thresholds)
    if "pods" in set(enforce_node_allocatable):
        result = add_allocatable_thresholds(result)

    max_grace = raw.get("evictionMaxPodGracePeriod", 0)
    if max_grace is None:
        max_grace = 0
    if isinstance(max_grace, bool) or not isinstance(max_grace, int):
        errors.append(_err("evictionMaxPodGracePeriod", f"must be an integer (seconds), not {max_grace!r}"))
        max_grace = 0
    elif not INT32[0] <= max_grace <= INT32[1]:
        errors.append(_err("evictionMaxPodGracePeriod", f"{max_grace} does not fit a 32-bit integer"))
        max_grace = 0

    transition_raw = raw.get("evictionPressureTransitionPeriod")
    transition = 5 * 60 * NS_PER_S
    if transition_raw is not None:
        if not isinstance(transition_raw, str):
            errors.append(_err("evictionPressureTransitionPeriod", f"must be a duration such as 5m0s, not {transition_raw!r}"))
        else:
            try:
                transition = parse_go_duration(transition_raw)
            except ValueError as exc:
                errors.append(_err("evictionPressureTransitionPeriod", str(exc)))
    return EvictionConfig(result, max_grace, transition), errors


def config_of(node) -> EvictionConfig:
    """The eviction settings of a validated :class:`~sdqos.kube.model.NodeConfig`."""
    raw = {
        "evictionHard": dict(node.eviction_hard),
        "evictionSoft": dict(node.eviction_soft),
        "evictionSoftGracePeriod": dict(node.eviction_soft_grace_period),
        "evictionMinimumReclaim": dict(node.eviction_minimum_reclaim),
        "evictionMaxPodGracePeriod": node.eviction_max_pod_grace_period,
        "evictionPressureTransitionPeriod": node.eviction_pressure_transition_period,
    }
    cfg, errors = parse_eviction_config(raw, node.enforce_node_allocatable)
    assert not errors, errors  # NodeConfig holds only what parse_node_config validated
    return cfg


# --- signals and thresholds met ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Observation:
    """signalObservation: what is available of a signal's resource, and its capacity."""

    available: int
    capacity: int


def working_set(usage: int, inactive_file: int) -> int:
    """cadvisor's working set: usage − inactive_file, never below 0 (v1 memory.usage_in_bytes and
    total_inactive_file; v2 memory.current, or anon + file at the root, and inactive_file)."""
    return max(0, usage - inactive_file)


def observe(*, memory_capacity: int, node_usage: int, node_inactive_file: int,
            allocatable_memory: int | None, workloads_working_set: int | None,
            pid_max: int, threads_max: int | None, tasks: int, pid_capacity: int | None = None) -> dict[str, Observation]:
    """makeSignalObservations from the kernel's numbers.

    - memory.available: the node's memory capacity − the root cgroup's working set (the summary
      provider's node memory: AvailableBytes = capacity − WorkingSetBytes);
    - allocatableMemory.available: node allocatable − the working set of what runs in it
      (kubelet: the pods cgroup's limit − its working set; sdqos's allocatable holds kubepods.slice
      and the VMs in machine.slice). Not observed without an allocatable (enforceNodeAllocatable
      lacks "pods": kubelet's pods cgroup then has no limit, so no AvailableBytes);
    - pid.available: MaxPID − running tasks, MaxPID = min(kernel.pid_max, kernel.threads-max)
      (pidlimit.Stats), or node.yaml's capacity.pid when given.
    """
    out = {MEMORY_AVAILABLE: Observation(memory_capacity - working_set(node_usage, node_inactive_file), memory_capacity)}
    if allocatable_memory is not None and workloads_working_set is not None:
        out[ALLOCATABLE_MEMORY_AVAILABLE] = Observation(allocatable_memory - workloads_working_set, allocatable_memory)
    max_pid = pid_capacity if pid_capacity is not None else min(pid_max, threads_max) if threads_max else pid_max
    out[PID_AVAILABLE] = Observation(max_pid - tasks, max_pid)
    return out


def memcg_threshold(capacity: int, threshold: int, inactive_file: int, others: int = 0) -> int:
    """memoryThresholdNotifier.UpdateThreshold: the cgroup memory usage at which the working set
    reaches capacity − threshold: capacity − threshold + inactive_file (− ``others``: what else
    counts against the same capacity, e.g. machine.slice for sdqos's allocatable)."""
    return capacity - threshold + inactive_file - others


def thresholds_met(thresholds: Iterable[Threshold], observations: Mapping[str, Observation],
                   enforce_min_reclaim: bool = False) -> list[Threshold]:
    """thresholdsMet: the thresholds whose signal is below their value (plus the minimum reclaim
    when enforce_min_reclaim: a threshold already met stays met until that much is back).
    A threshold whose signal is not observed is never met."""
    out = []
    for t in thresholds:
        obs = observations.get(t.signal)
        if obs is None:
            continue
        quantity = t.value.amount(obs.capacity)
        if enforce_min_reclaim and t.min_reclaim is not None:
            quantity += t.min_reclaim.amount(obs.capacity)
        if quantity > obs.available:
            out.append(t)
    return out


def node_conditions(thresholds: Iterable[Threshold]) -> list[str]:
    """nodeConditions: the node conditions the met thresholds stand for, each once, in order."""
    out: list[str] = []
    for t in thresholds:
        cond = SIGNAL_CONDITION.get(t.signal)
        if cond and cond not in out:
            out.append(cond)
    return out


# --- over time: grace periods, minimum reclaim, the pressure transition period ------------------


@dataclass(frozen=True, slots=True)
class ManagerState:
    """What kubelet's eviction manager carries from one synchronize to the next (times in ns of a
    monotonic clock): the thresholds that drove the last pass, when each threshold was first seen
    met, when each node condition was last seen."""

    thresholds_met: tuple[Threshold, ...] = ()
    first_observed: Mapping[Threshold, int] = field(default_factory=dict)
    conditions_last_observed: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Pass:
    """One synchronize: the state to carry on, the node conditions to report, and the thresholds
    whose grace period is over (eviction acts on these)."""

    state: ManagerState
    conditions: list[str]
    act_on: list[Threshold]


def merge_thresholds(a: Iterable[Threshold], b: Iterable[Threshold]) -> list[Threshold]:
    """mergeThresholds: a, then what of b is not in a."""
    out = list(a)
    for t in b:
        if t not in out:
            out.append(t)
    return out


def thresholds_first_observed_at(thresholds: Iterable[Threshold], last: Mapping[Threshold, int], now: int) -> dict[Threshold, int]:
    """thresholdsFirstObservedAt: when each met threshold was first seen met (now if new)."""
    return {t: last.get(t, now) for t in thresholds}


def thresholds_met_grace_period(observed_at: Mapping[Threshold, int], now: int) -> list[Threshold]:
    """thresholdsMetGracePeriod: the thresholds met for at least their grace period."""
    return [t for t, at in observed_at.items() if now - at >= t.grace_period_ns]


def node_conditions_last_observed_at(conditions: Iterable[str], last: Mapping[str, int], now: int) -> dict[str, int]:
    """nodeConditionsLastObservedAt: the conditions seen now at now, the others at their old time."""
    out = {c: now for c in conditions}
    for c, at in last.items():
        out.setdefault(c, at)
    return out


def node_conditions_observed_since(observed_at: Mapping[str, int], period_ns: int, now: int) -> list[str]:
    """nodeConditionsObservedSince: the conditions seen within the transition period."""
    return [c for c, at in observed_at.items() if now - at < period_ns]


def synchronize(state: ManagerState, cfg: EvictionConfig, observations: Mapping[str, Observation], now: int) -> Pass:
    """synchronize's bookkeeping: thresholds met now, plus those that drove the last pass until
    their minimum reclaim is back; node conditions held for evictionPressureTransitionPeriod; the
    thresholds whose grace period is over. (thresholdsUpdatedStats is not needed: every
    observation is read fresh.)"""
    met = thresholds_met(cfg.thresholds, observations)
    if state.thresholds_met:
        met = merge_thresholds(met, thresholds_met(state.thresholds_met, observations, enforce_min_reclaim=True))
    first = thresholds_first_observed_at(met, state.first_observed, now)
    last = node_conditions_last_observed_at(node_conditions(met), state.conditions_last_observed, now)
    conditions = node_conditions_observed_since(last, cfg.pressure_transition_period_ns, now)
    act_on = thresholds_met_grace_period(first, now)
    return Pass(ManagerState(tuple(act_on), first, last), conditions, act_on)


# --- ranking -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """A running workload as the eviction manager sees it: a pod, or a VM as the single-container
    pod sdqos models it as. ``memory_usage`` (working set, bytes) and ``processes`` are None when
    no stats were found (kubelet evicts those first)."""

    name: str
    kind: str  # "pod" | "vm"
    qos_class: str
    priority: int
    memory_request: int
    memory_usage: int | None = None
    processes: int | None = None
    critical: bool = False
    evictable: bool = True
    termination_grace_period: int | None = None

    @property
    def exceeds_memory_request(self) -> bool:
        return self.memory_usage is not None and self.memory_usage > self.memory_request

    def why_not_evictable(self) -> str | None:
        """evictPod refuses a critical pod; a VM is evicted only when its definition allows it."""
        if self.critical:
            return "critical pod (static, mirror, or priority >= 2000000000): kubelet never evicts it"
        if not self.evictable:
            return "VM with spec.eviction: Never"
        return None


Cmp = Callable[[Candidate, Candidate], int]


def _cmp_bool(a: bool, b: bool) -> int:
    """cmpBool: true before false."""
    if a == b:
        return 0
    return -1 if a else 1


def _no_stats(p1: Candidate, p2: Candidate, attr: str) -> int | None:
    f1, f2 = getattr(p1, attr) is not None, getattr(p2, attr) is not None
    if not f1 or not f2:
        return _cmp_bool(not f1, not f2)  # the pod without stats first
    return None


def cmp_priority(p1: Candidate, p2: Candidate) -> int:
    """priority: lower priority first."""
    return (p1.priority > p2.priority) - (p1.priority < p2.priority)


def cmp_exceed_memory_requests(p1: Candidate, p2: Candidate) -> int:
    """exceedMemoryRequests: the pod using more than it requested first."""
    missing = _no_stats(p1, p2, "memory_usage")
    if missing is not None:
        return missing
    return _cmp_bool(p1.exceeds_memory_request, p2.exceeds_memory_request)


def cmp_memory(p1: Candidate, p2: Candidate) -> int:
    """memory: the larger usage above request first."""
    missing = _no_stats(p1, p2, "memory_usage")
    if missing is not None:
        return missing
    d1 = p1.memory_usage - p1.memory_request  # type: ignore[operator]
    d2 = p2.memory_usage - p2.memory_request  # type: ignore[operator]
    return (d2 > d1) - (d2 < d1)


def cmp_process(p1: Candidate, p2: Candidate) -> int:
    """process: the larger process count first."""
    missing = _no_stats(p1, p2, "processes")
    if missing is not None:
        return missing
    return (p2.processes > p1.processes) - (p2.processes < p1.processes)  # type: ignore[operator]


def ordered_by(candidates: Iterable[Candidate], *cmps: Cmp) -> list[Candidate]:
    """orderedBy(...).Sort: the first comparison that tells two apart decides. Stable (Go's
    sort.Sort is not): equal candidates keep their input order."""

    def cmp(a: Candidate, b: Candidate) -> int:
        for c in cmps:
            r = c(a, b)
            if r:
                return r
        return 0

    return sorted(candidates, key=functools.cmp_to_key(cmp))


def rank_memory_pressure(candidates: Iterable[Candidate]) -> list[Candidate]:
    """rankMemoryPressure: over their memory request first, then lower priority, then the larger
    usage above request."""
    return ordered_by(candidates, cmp_exceed_memory_requests, cmp_priority, cmp_memory)


def rank_pid_pressure(candidates: Iterable[Candidate]) -> list[Candidate]:
    """rankPIDPressure: lower priority first, then more processes."""
    return ordered_by(candidates, cmp_priority, cmp_process)


RANK_FUNCS = {
    MEMORY_AVAILABLE: rank_memory_pressure,
    ALLOCATABLE_MEMORY_AVAILABLE: rank_memory_pressure,
    PID_AVAILABLE: rank_pid_pressure,
}


def threshold_to_reclaim(met: Iterable[Threshold]) -> Threshold | None:
    """byEvictionPriority + getReclaimableThreshold: memory thresholds before the others, the
    first one sdqos can rank workloads for. (Disk thresholds are never observed, so never met.)"""
    ordered = sorted(met, key=lambda t: 0 if t.signal in (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE) else 1)
    for t in ordered:
        if t.signal in RANK_FUNCS:
            return t
    return None


def evictable(ranked: Iterable[Candidate]) -> list[Candidate]:
    """synchronize's loop over the ranked pods (``for i := range activePods``), in order: those
    evictPod accepts (critical pods and VMs that may not be evicted are skipped). The caller tries
    them in turn and stops at the first eviction (``return []*v1.Pod{pod}``): at most one per pass."""
    return [c for c in ranked if c.why_not_evictable() is None]


def victim(ranked: Iterable[Candidate]) -> Candidate | None:
    """The first of :func:`evictable`: the one a pass evicts when its eviction succeeds."""
    return next(iter(evictable(ranked)), None)


def runs_again(left_running: Iterable[str], running: Iterable[str]) -> bool:
    """Whether an evicted workload runs again: a unit runs in its cgroup that was not left running
    by its eviction (units there that sdqos did not make, which it never stops, are not the
    workload). kubelet's analog: an evicted pod is terminal (``filterOutInactivePods`` drops it
    from the active pods, so it is never ranked again); a pod started again is a new pod."""
    return bool(set(running) - set(left_running))


def still_evicted(candidates: Iterable[Candidate], evicted: Mapping[str, Iterable[str]],
                  running: Mapping[str, Iterable[str]]) -> set[str]:
    """The candidates (by name) whose eviction stands: evicted (``evicted``: name → the units its
    eviction left running) and not running again (``running``: name → the units running in its
    cgroup now). They are not active pods: not ranked, not evicted again."""
    return {c.name for c in candidates
            if c.name in evicted and not runs_again(evicted[c.name], running.get(c.name, ()))}


IMMEDIATE_EVICTION_GRACE_PERIOD_S = 1  # eviction_manager.go immediateEvictionGracePeriodSeconds


def eviction_grace_period(threshold: Threshold, candidate: Candidate, max_pod_grace_period: int) -> int:
    """synchronize's gracePeriodOverride: immediateEvictionGracePeriodSeconds (1 s) for a hard
    threshold; for a soft one evictionMaxPodGracePeriod, capped by the pod's
    terminationGracePeriodSeconds when it has one."""
    if threshold.hard:
        return IMMEDIATE_EVICTION_GRACE_PERIOD_S
    if candidate.termination_grace_period is not None:
        return min(max_pod_grace_period, candidate.termination_grace_period)
    return max_pod_grace_period


# --- candidates from sdqos's model ---------------------------------------------------------------


def pod_memory_request(pod: Pod, *, pod_level: bool = True) -> int:
    """v1resource.GetResourceRequestQuantity(pod, memory): pod-level requests when the pod sets
    pod-level resources (else the containers', init containers by max), plus the pod's memory
    overhead when that is not zero."""
    if pod_level and qos.is_pod_level_resources_set(pod):
        assert pod.resources is not None
        q = pod.resources.requests.get(MEMORY)
        total = q.value() if q is not None else 0
    else:
        total = qos.value(qos.aggregate_container_requests(pod).get(MEMORY))
    over = pod.overhead.get(MEMORY) if pod.overhead else None
    if over is not None and total != 0:
        total += over.value()
    return total


def pod_candidate(pod: Pod, memory_usage: int | None, processes: int | None, *, pod_level: bool = True) -> Candidate:
    """A pod as kubelet ranks it: PodPriority (spec.priority, 0 when unset), its memory request,
    IsCriticalPod."""
    return Candidate(
        name=pod.key,
        kind="pod",
        qos_class=qos.pod_qos(pod, pod_level=pod_level),
        priority=pod.priority if pod.priority is not None else 0,
        memory_request=pod_memory_request(pod, pod_level=pod_level),
        memory_usage=memory_usage,
        processes=processes,
        critical=qos.is_critical(pod),
        termination_grace_period=pod.termination_grace_period if pod.termination_grace_period is not None else 30,
    )


def vm_candidate(vm: VirtualMachine, memory_usage: int | None, processes: int | None) -> Candidate:
    """A VM as the single-container pod it is modelled as (its overhead as the pod's overhead, so
    counted in its request), with spec.priority and spec.eviction."""
    as_pod = Pod(name=vm.name, namespace="vm", uid="vm",
                 containers=(Container(name="vm", requests=vm.requests, limits=vm.limits),),
                 overhead=vm.overhead, priority=vm.priority)
    c = pod_candidate(as_pod, memory_usage, processes, pod_level=False)
    return Candidate(
        name=f"vm/{vm.name}", kind="vm", qos_class=c.qos_class, priority=c.priority,
        memory_request=c.memory_request, memory_usage=memory_usage, processes=processes,
        evictable=vm.eviction == VM_EVICTION_ALLOWED, termination_grace_period=None,
    )
