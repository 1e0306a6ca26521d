"""Plain dataclasses for what the config says: node, pods, containers, VMs.

The loaders build these from YAML; the QoS engine reads them and never does I/O. Resource lists
map a resource name (``cpu``, ``memory``, ``pid``, …) to a :class:`~sdqos.kube.quantity.Quantity`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from sdqos.kube.quantity import Quantity

CPU = "cpu"
MEMORY = "memory"
PID = "pid"
SWAP = "swap"  # not a Pod resource: the node's swap (SwapTotal), memorySwap LimitedSwap's pool

ResourceList = Mapping[str, Quantity]

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BESTEFFORT = "BestEffort"


@dataclass(frozen=True, slots=True)
class Source:
    """Where something was read: file (relative to the config dir) and document index."""

    file: str
    index: int = 0

    def __str__(self) -> str:
        return f"{self.file}[{self.index}]"


@dataclass(frozen=True, slots=True)
class Container:
    """One container (app, init or sidecar) with its resources after API defaulting."""

    name: str
    requests: ResourceList
    limits: ResourceList
    init: bool = False
    restart_always: bool = False  # restartPolicy: Always on an init container = sidecar
    request_set: frozenset[str] = frozenset()  # resource names whose request was written (not defaulted)

    @property
    def sidecar(self) -> bool:
        return self.init and self.restart_always

    @property
    def kind(self) -> str:
        return "sidecar" if self.sidecar else ("init" if self.init else "app")


@dataclass(frozen=True, slots=True)
class PodResources:
    """Pod-level ``spec.resources`` (KEP-2837)."""

    requests: ResourceList
    limits: ResourceList


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod manifest, reduced to what QoS needs."""

    name: str
    namespace: str
    uid: str
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = field(default_factory=dict)
    resources: PodResources | None = None
    priority: int | None = None
    priority_class_name: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    uid_generated: bool = False
    source: Source | None = None
    termination_grace_period: int | None = None  # spec.terminationGracePeriodSeconds (API default 30)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def all_containers(self) -> tuple[Container, ...]:
        """Init containers (sidecars included) first, then app containers, as kubelet walks them."""
        return self.init_containers + self.containers

VM_EVICTION_ALLOWED = "Allowed"  # spec.eviction that lets node-pressure eviction stop a VM


@dataclass(frozen=True, slots=True)
class VirtualMachine:
    """A VM definition (``kind: VirtualMachine``): the hypervisor process as one container."""

    name: str
    requests: ResourceList
    limits: ResourceList
    overhead: ResourceList
    overhead_defaulted: bool = False
    libvirt_domain: str | None = None
    scope: str | None = None
    pid_file: str | None = None
    source: Source | None = None
    priority: int = 0  # spec.priority: ranks the VM among pods under node pressure (sdqos/kube/eviction.py)
    eviction: str = "Never"  # spec.eviction: Never | VM_EVICTION_ALLOWED (docs/eviction.md says why Never)


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """The parts of a KubeletConfiguration sdqos acts on, with kubelet's defaults filled in."""

    capacity: ResourceList
    capacity_source: Mapping[str, str]  # resource → "detected" | "node.yaml"
    kube_reserved: ResourceList = field(default_factory=dict)
    system_reserved: ResourceList = field(default_factory=dict)
    enforce_node_allocatable: frozenset[str] = frozenset({"pods"})
    cgroup_root: tuple[str, ...] = ()
    cgroup_root_text: str = "/"
    cpu_cfs_quota: bool = True
    cpu_cfs_quota_period_us: int = 100_000
    qos_reserved: Mapping[str, int] = field(default_factory=dict)  # "memory" → percent
    pod_pids_limit: int = -1
    memory_throttling_factor: float | None = 0.9
    memory_reservation_policy: str = "None"
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    # The other eviction fields as written (validated; sdqos/kube/eviction.py:config_of parses them).
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_minimum_reclaim: Mapping[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int = 0
    eviction_pressure_transition_period: str = "5m0s"
    system_reserved_cgroup: str = ""
    kube_reserved_cgroup: str = ""
    page_size: int = 4096
    # kubelet's container OOM and swap settings (cgroup v2 only): None = kubelet's default for the
    # cgroup version (v2: the whole container is killed, memory.oom.group=1; v1: one process).
    single_process_oom_kill: bool | None = None
    swap_behavior: str = "NoSwap"  # memorySwap.swapBehavior: NoSwap | LimitedSwap
    swap_capacity: int = 0  # bytes of swap on the node (SwapTotal): LimitedSwap's pool
    reserved_system_cpus: str = ""  # reservedSystemCPUs as kubelet prints a CPU list ("0-1,4"); its size is systemReserved cpu
    max_pods: int = 110  # maxPods
    cpu_manager_policy: str = "none"  # cpuManagerPolicy: none | static
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=dict)  # validated (cpumanager.parse_options)
    topology_manager_policy: str = "none"  # topologyManagerPolicy: none | best-effort | restricted | single-numa-node
    topology_manager_scope: str = "container"  # topologyManagerScope: container | pod
    topology_manager_policy_options: Mapping[str, str] = field(default_factory=dict)  # validated (topologymanager)
    pods_per_core: int = 0  # podsPerCore (0: off)
    warnings: tuple[str, ...] = ()

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, False))
