"""kubelet's pod admission by resources (pure): maxPods, podsPerCore and the requests that must fit
what the admitted pods leave of node allocatable.

kubelet admits a pod when ``noderesources.Fits`` (pkg/scheduler/framework/plugins/noderesources/
fit.go, ``fitsRequest``) finds nothing short, checked in this order: the pod count (one more pod
than ``allowedPodNumber`` is "Too many pods"), then — unless the pod requests nothing — cpu, then
memory (a resource the pod requests more of than allocatable − the admitted pods' requests).
pkg/kubelet/lifecycle/predicate.go reports only the first shortage: reason ``OutOf<resource>``,
message ``InsufficientResourceError.Error()``. A pod already running is never stopped by this.

Allocatable here is the node status' allocatable (kubelet's ``getNodeAllocatable``): capacity −
kubeReserved − systemReserved − evictionHard ``memory.available``; the pod number is
``maxPods``, or ``min(maxPods, podsPerCore × CPUs)`` with ``podsPerCore`` > 0
(kubelet_node_status.go). ephemeral-storage is not checked: sdqos does not enforce it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from sdqos.kube.model import CPU, MEMORY, NodeConfig

PODS = "pods"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a pod is not admitted: kubelet's InsufficientResourceError."""

    resource: str  # pods, cpu, memory
    requested: int  # cpu in millicores, memory in bytes, pods 1
    used: int
    capacity: int

    @property
    def reason(self) -> str:
        return f"OutOf{self.resource}"

    @property
    def message(self) -> str:
        return (f"Node didn't have enough resource: {self.resource}, requested: {self.requested}, used: {self.used}, "
                f"capacity: {self.capacity}")

    def left(self) -> str:
        """What is left of the resource, as people read it."""
        from sdqos import humanize as H

        free = max(0, self.capacity - self.used)
        if self.resource == CPU:
            return f"{H.cpu(free)} of {H.cpu(self.capacity)} CPU left"
        if self.resource == MEMORY:
            return f"{H.size(free)} of {H.size(self.capacity)} memory left"
        return f"{self.used} of {self.capacity} pods admitted"

    def line(self, pod: str) -> str:
        return f"pod {pod} is not admitted: {self.reason} ({self.left()}): {self.message}"


def allowed_pods(node: NodeConfig, cpu_capacity_milli: int) -> int:
    """kubelet's pod capacity: maxPods, or min(maxPods, podsPerCore × CPUs) when podsPerCore > 0."""
    if node.pods_per_core > 0:
        return min(node.max_pods, node.pods_per_core * (cpu_capacity_milli // 1000))
    return node.max_pods


def node_allocatable(node: NodeConfig, capacity: Mapping[str, int]) -> dict[str, int]:
    """The node status' allocatable cpu (millicores), memory (bytes) and pods."""
    from sdqos.kube import nodeconfig

    out = {}
    for r in (CPU, MEMORY):
        reserved = sum(_int(r, q) for q in (node.kube_reserved.get(r), node.system_reserved.get(r)) if q is not None)
        out[r] = capacity[r] - reserved
    if node.eviction_hard:
        thresholds = nodeconfig._eviction_hard(dict(node.eviction_hard), [])
        out[MEMORY] -= nodeconfig._eviction_memory(thresholds, capacity[MEMORY])
    out = {r: max(0, v) for r, v in out.items()}
    out[PODS] = allowed_pods(node, capacity[CPU])
    return out


def _int(resource: str, q) -> int:
    return q.milli_value() if resource == CPU else q.value()


def fits(allocatable: Mapping[str, int], admitted: Iterable[Mapping[str, int]], candidate: Mapping[str, int]
         ) -> Refusal | None:
    """The first shortage kubelet would report for ``candidate`` (its requests: cpu millicores,
    memory bytes) beside the ``admitted`` pods' requests; None: admitted."""
    admitted = list(admitted)
    return _fits(allocatable, len(admitted), sum(p.get(CPU, 0) for p in admitted),
                 sum(p.get(MEMORY, 0) for p in admitted), candidate)


def _fits(allocatable: Mapping[str, int], count: int, used_cpu: int, used_mem: int, candidate: Mapping[str, int]
          ) -> Refusal | None:
    if count + 1 > allocatable[PODS]:
        return Refusal(PODS, 1, count, allocatable[PODS])
    cpu, mem = candidate.get(CPU, 0), candidate.get(MEMORY, 0)
    if cpu == 0 and mem == 0:
        return None
    if cpu > 0 and cpu > allocatable[CPU] - used_cpu:
        return Refusal(CPU, cpu, used_cpu, allocatable[CPU])
    if mem > 0 and mem > allocatable[MEMORY] - used_mem:
        return Refusal(MEMORY, mem, used_mem, allocatable[MEMORY])
    return None


def admit_in_order(allocatable: Mapping[str, int], admitted: Iterable[Mapping[str, int]],
                   candidates: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, Refusal]:
    """Each candidate in turn, as kubelet admits pods one after another: an admitted one counts
    for those after it. Returns the refused ones by key."""
    taken = list(admitted)
    count, cpu, mem = len(taken), sum(p.get(CPU, 0) for p in taken), sum(p.get(MEMORY, 0) for p in taken)
    refused = {}
    for key, requests in candidates:
        why = _fits(allocatable, count, cpu, mem, requests)
        if why is None:
            count, cpu, mem = count + 1, cpu + requests.get(CPU, 0), mem + requests.get(MEMORY, 0)
        else:
            refused[key] = why
    return refused
