"""Kubelet's QoS rules as pure functions (Kubernetes 1.36).

Each function names the upstream function it matches:

- QoS class: ``pkg/apis/core/v1/helper/qos/qos.go`` ComputePodQOS (1.36: sums over containers, or
  the pod-level resources when set).
- Pod requests/limits: ``k8s.io/component-helpers/resource/helpers.go`` PodRequests/PodLimits
  (sidecars counted with app containers, init containers by max, overhead, pod-level resources).
- Shares/quota/weight: ``pkg/kubelet/cm/helpers_linux.go`` and ``cgroup_v2_manager_linux.go``.
- OOM score: ``pkg/kubelet/qos/policy.go`` GetContainerOOMScoreAdjust (-997, sidecars, node-critical
  pods, pod-level memory requests).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

from sdqos.kube.model import BESTEFFORT, BURSTABLE, CPU, GUARANTEED, MEMORY, Container, Pod, ResourceList
from sdqos.kube.quantity import Quantity

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD_US = 100_000
MIN_QUOTA_PERIOD_US = 1000
MAX_WEIGHT = 10000

GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SYSTEM_NODE_CRITICAL = "system-node-critical"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

QOS_RESOURCES = (CPU, MEMORY)

ContainerFn = Callable[[ResourceList, Container], None]


# --- conversions (helpers_linux.go) ------------------------------------------------------------


def milli_cpu_to_shares(milli: int) -> int:
    """MilliCPUToShares: 0 → 2; else m×1024/1000 clamped to [2, 262144]."""
    if milli == 0:
        return MIN_SHARES
    shares = milli * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli: int, period_us: int) -> int:
    """MilliCPUToQuota: 0 → 0 (no quota); else m×period/1000, at least 1000 µs."""
    if milli == 0:
        return 0
    return max(MIN_QUOTA_PERIOD_US, milli * period_us // MILLI_CPU_TO_CPU)


def shares_to_weight_kubelet(shares: int) -> int:
    """kubelet's getCPUWeight for its own cgroups on v2: 1 + (s−2)×9999/262142, ≥262144 → 10000."""
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    return 1 + (shares - MIN_SHARES) * 9999 // (MAX_SHARES - MIN_SHARES)


def shares_to_weight_runc(shares: int) -> int:
    """opencontainers/cgroups ≥0.0.3 (runc ≥1.3.2) ConvertCPUSharesToCgroupV2Value, which is what a
    container ends up with on v2: ceil(10^((l²+125l)/612 − 7/34)), l = log2(s)."""
    if shares == 0:
        return 0
    if shares <= 2:
        return 1
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    log2 = math.log2(shares)
    exponent = (log2 * log2 + 125 * log2) / 612.0 - 7.0 / 34.0
    return int(math.ceil(math.pow(10, exponent)))


# --- resource lists ----------------------------------------------------------------------------


def _add(into: dict[str, Quantity], other: ResourceList) -> None:
    for name, q in other.items():
        into[name] = into[name] + q if name in into else q


def _max(into: dict[str, Quantity], other: ResourceList) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _supported_pod_level(name: str) -> bool:
    return name in QOS_RESOURCES or name.startswith("hugepages-")


def is_pod_level_requests_set(pod: Pod) -> bool:
    return pod.resources is not None and any(_supported_pod_level(n) for n in pod.resources.requests)


def is_pod_level_resources_set(pod: Pod) -> bool:
    """IsPodLevelResourcesSet: pod-level requests or limits name cpu, memory or hugepages."""
    if pod.resources is None:
        return False
    return any(_supported_pod_level(n) for n in (*pod.resources.requests, *pod.resources.limits))


def _aggregate(pod: Pod, pick: Callable[[Container], ResourceList], fn: ContainerFn | None) -> dict[str, Quantity]:
    """The sidecar-aware aggregation shared by requests and limits (KEP-753):
    Σ app + Σ sidecars, then max with every init container's peak (itself + sidecars before it)."""
    total: dict[str, Quantity] = {}
    for c in pod.containers:
        res = pick(c)
        if fn:
            fn(res, c)
        _add(total, res)
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for c in pod.init_containers:
        res = pick(c)
        if c.restart_always:
            _add(total, res)
            _add(sidecars, res)
            use: ResourceList = dict(sidecars)
        else:
            tmp: dict[str, Quantity] = {}
            _add(tmp, res)
            _add(tmp, sidecars)
            use = tmp
        if fn:
            fn(use, c)
        _max(init_peak, use)
    _max(total, init_peak)
    return total


def aggregate_container_requests(pod: Pod, fn: ContainerFn | None = None) -> dict[str, Quantity]:
    return _aggregate(pod, lambda c: c.requests, fn)


def aggregate_container_limits(pod: Pod, fn: ContainerFn | None = None) -> dict[str, Quantity]:
    return _aggregate(pod, lambda c: c.limits, fn)


def pod_requests(pod: Pod, *, pod_level: bool = True, exclude_overhead: bool = False) -> dict[str, Quantity]:
    """PodRequests: aggregate, pod-level requests overwrite supported keys, + overhead."""
    reqs = aggregate_container_requests(pod)
    if pod_level and is_pod_level_requests_set(pod):
        assert pod.resources is not None
        for name, q in pod.resources.requests.items():
            if _supported_pod_level(name):
                reqs[name] = q
    if not exclude_overhead and pod.overhead:
        _add(reqs, pod.overhead)
    return reqs


def pod_limits(
    pod: Pod, *, pod_level: bool = True, exclude_overhead: bool = False, fn: ContainerFn | None = None
) -> dict[str, Quantity]:
    """PodLimits: aggregate, pod-level limits overwrite supported keys, overhead added only to
    limits that are present and non-zero."""
    limits = aggregate_container_limits(pod, fn)
    if pod_level and is_pod_level_resources_set(pod):
        assert pod.resources is not None
        for name, q in pod.resources.limits.items():
            if _supported_pod_level(name):
                limits[name] = q
    if not exclude_overhead and pod.overhead:
        for name, q in pod.overhead.items():
            if name in limits and not limits[name].is_zero():
                limits[name] = limits[name] + q
    return limits


# --- QoS class (qos.go, 1.36) -------------------------------------------------------------------


def _positive_qos(into: dict[str, Quantity], res: ResourceList) -> None:
    for name in QOS_RESOURCES:
        q = res.get(name)
        if q is not None and q.sign() > 0:
            into[name] = into[name] + q if name in into else q


def _has_cpu_and_memory_limits(limits: ResourceList) -> bool:
    for n in QOS_RESOURCES:
        q = limits.get(n)
        if q is None or q.sign() <= 0:
            return False
    return True


def pod_qos(pod: Pod, *, pod_level: bool = True, fix_empty_pod_level: bool = False) -> str:
    """ComputePodQOS (1.36): BestEffort when no positive cpu/memory request or limit anywhere;
    Guaranteed when every source has cpu and memory limits and summed requests equal summed
    limits; Burstable otherwise. Pod-level resources, when present, replace the containers —
    in 1.36 even an empty ``resources: {}``; ``fix_empty_pod_level`` is the 1.37 fix
    (gate PodLevelResourcesFixKubeletQOSClass) that falls back to the containers then."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    use_pod_level = pod_level and pod.resources is not None
    if use_pod_level and fix_empty_pod_level:
        use_pod_level = is_pod_level_resources_set(pod)
    if use_pod_level:
        assert pod.resources is not None
        _positive_qos(requests, pod.resources.requests)
        if pod.resources.limits:
            _positive_qos(limits, pod.resources.limits)
            if not _has_cpu_and_memory_limits(pod.resources.limits):
                guaranteed = False
    else:
        for c in pod.containers + pod.init_containers:
            _positive_qos(requests, c.requests)
            _positive_qos(limits, c.limits)
            if not _has_cpu_and_memory_limits(c.limits):
                guaranteed = False
    if not requests and not limits:
        return BESTEFFORT
    if guaranteed:
        for name, req in requests.items():
            if name not in limits or limits[name] != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE


# --- OOM score (policy.go) ----------------------------------------------------------------------


def is_critical(pod: Pod) -> bool:
    """types.IsCriticalPod: a static or mirror pod, or priority ≥ 2 000 000 000."""
    source = pod.annotations.get(CONFIG_SOURCE_ANNOTATION)
    if source is not None and source != "api":
        return True
    if CONFIG_MIRROR_ANNOTATION in pod.annotations:
        return True
    return pod.priority is not None and pod.priority >= SYSTEM_CRITICAL_PRIORITY


def is_node_critical(pod: Pod) -> bool:
    """types.IsNodeCriticalPod: critical and priorityClassName system-node-critical."""
    return is_critical(pod) and pod.priority_class_name == SYSTEM_NODE_CRITICAL


def _memory_value(res: ResourceList) -> int:
    q = res.get(MEMORY)
    return q.value() if q is not None else 0


def remaining_pod_mem_req_per_container(pod: Pod) -> int:
    """Pod-level memory request not claimed by containers, split evenly over all containers."""
    assert pod.resources is not None
    pod_req = pod.resources.requests.get(MEMORY)
    if pod_req is None or pod_req.is_zero():
        return 0
    n = len(pod.containers) + len(pod.init_containers)
    remaining = pod_req.value() - _memory_value(aggregate_container_requests(pod))
    return _go_div(remaining, n)


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def container_oom_score_adj(
    pod: Pod, container: Container, memory_capacity: int, *, qos: str | None = None, pod_level: bool = True
) -> int:
    """GetContainerOOMScoreAdjust for one container of a pod, memory_capacity in bytes."""
    if is_node_critical(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos = qos or pod_qos(pod, pod_level=pod_level)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BESTEFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    mem_req = _memory_value(container.requests)
    remaining = 0
    if pod_level and is_pod_level_requests_set(pod):
        remaining = remaining_pod_mem_req_per_container(pod)
    adj = 1000 - _go_div(1000 * (mem_req + remaining), memory_capacity)
    if container.sidecar:
        min_req = min_regular_container_memory(pod) + remaining
        adj = min(adj, 1000 - _go_div(1000 * min_req, memory_capacity))
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adj == BESTEFFORT_OOM_SCORE_ADJ:
        return adj - 1
    return adj


def min_regular_container_memory(pod: Pod) -> int:
    """Smallest memory request among the app containers (init containers excluded)."""
    values = [_memory_value(c.requests) for c in pod.containers]
    return min(values) if values else 0


def milli(q: Quantity | None) -> int:
    return q.milli_value() if q is not None else 0


def value(q: Quantity | None) -> int:
    return q.value() if q is not None else 0


def limit_is_zero(res: Mapping[str, Quantity], name: str) -> bool:
    q = res.get(name)
    return q is None or q.is_zero()
