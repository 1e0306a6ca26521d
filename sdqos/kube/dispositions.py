"""What sdqos does with every KubeletConfiguration field and every pod resource name: one table.

Each row is *honoured* (as kubelet honours it), *honoured in part* (some values honoured, the
others refused with a reason: the note says which), *refused* (set to anything but kubelet's
default it is an error naming node.yaml and the field), or *not applicable* (a node without an API
server, kubelet or CRI: set to anything but kubelet's default it is said once, in plan's and sync's
warnings). docs/configuration.md holds this table as :func:`markdown` renders it
(tests/kube/test_dispositions.py checks both ways: every field of KUBELET_CONFIG_FIELDS has a row,
and the doc is the table). Pure data and a few functions over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from sdqos.kube.duration import parse_go_duration

HONOURED = "honoured"
PARTLY = "honoured in part"
REFUSED = "refused"
NOT_APPLICABLE = "not applicable"

_ANY = object()  # no default recorded: any non-empty value is "set"


@dataclass(frozen=True, slots=True)
class Disposition:
    kind: str
    note: str
    default: Any = _ANY  # kubelet's default (v1beta1 defaults.go); for REFUSED and NOT_APPLICABLE rows


def _h(note: str) -> Disposition:
    return Disposition(HONOURED, note)


def _p(note: str) -> Disposition:
    return Disposition(PARTLY, note)


def _na(note: str, default: Any = _ANY) -> Disposition:
    return Disposition(NOT_APPLICABLE, note, default)


def _r(note: str, default: Any = _ANY) -> Disposition:
    return Disposition(REFUSED, note, default)


_API = "no API server: sdqos registers no node and talks to no cluster"
_SERVER = "sdqos serves no kubelet API (no HTTP server, no port)"
_IMAGES = "podman pulls and keeps images (sdqos podman start)"
_LOGS = "podman keeps the containers' logs"
_NET = "podman sets up the pods' network"
_STATIC = "the pods are the files in the config dir's pods/"

KUBELET_FIELDS: dict[str, Disposition] = {
    # what sdqos reads and acts on
    "apiVersion": _h("must be kubelet.config.k8s.io/v1beta1 when given"),
    "kind": _h("must be KubeletConfiguration when given"),
    "kubeReserved": _h("allocatable = capacity − kubeReserved − systemReserved (cpu, memory, pid)"),
    "systemReserved": _h("allocatable = capacity − kubeReserved − systemReserved (cpu, memory, pid)"),
    "reservedSystemCPUs": _h("a CPU list (\"0-1,4\"): its size replaces systemReserved cpu and kubeReserved cpu is "
                             "dropped, as kubelet does; CPUs not online are refused"),
    "enforceNodeAllocatable": _h("pods: kubepods.slice gets allocatable; system-reserved/kube-reserved: limits on "
                                 "their cgroups"),
    "systemReservedCgroup": _h("the unit system-reserved limits are set on"),
    "kubeReservedCgroup": _h("the unit kube-reserved limits are set on"),
    "cgroupsPerQOS": _p("true honoured; false refused (sdqos builds the QoS hierarchy)"),
    "cgroupRoot": _h("the slice kubepods.slice goes under"),
    "cgroupDriver": _p("systemd honoured (sdqos is the systemd driver); cgroupfs refused"),
    "cpuCFSQuota": _h("false removes every CPU quota"),
    "cpuCFSQuotaPeriod": _h("CPUQuotaPeriodUSec"),
    "qosReserved": _h("tier memory limits (with featureGates.QOSReserved)"),
    "podPidsLimit": _h("TasksMax of every pod slice"),
    "memoryThrottlingFactor": _h("MemoryQoS memory.high (cgroup v2, featureGates.MemoryQoS)"),
    "memoryReservationPolicy": _h("MemoryQoS TieredReservation (cgroup v2)"),
    "featureGates": _h("the gates sdqos's values depend on; others are kubelet's business"),
    "evictionHard": _h("the reservation check, admission's allocatable memory, sdqos pressure"),
    "evictionSoft": _h("sdqos pressure"),
    "evictionSoftGracePeriod": _h("sdqos pressure"),
    "evictionMinimumReclaim": _h("sdqos pressure"),
    "evictionMaxPodGracePeriod": _h("sdqos pressure"),
    "evictionPressureTransitionPeriod": _h("sdqos pressure"),
    "mergeDefaultEvictionSettings": _r("true is refused: not built (kubelet's default thresholds are not merged "
                                       "into a partial evictionHard)", False),
    "singleProcessOOMKill": _h("memory.oom.group of cgroup v2 containers"),
    "memorySwap": _h("memory.swap.max of cgroup v2 containers"),
    "maxPods": _h("admission: a pod beyond it is not admitted (OutOfpods)"),
    "podsPerCore": _h("admission: at most podsPerCore × CPUs pods (0: off)"),
    "cpuManagerPolicy": _p("none honoured; static honoured for pods and VMs with dedicatedCpuPlacement (kubelet's "
                             "state file in the run dir): on cgroup v2 each container's and VM's scope's AllowedCPUs "
                             "(exclusive CPUs, else the shared pool), on cgroup v1 their CPU affinity (systemd holds "
                             "no cpuset there)"),
    "cpuManagerPolicyOptions": _p("with cpuManagerPolicy static: full-pcpus-only, strict-cpu-reservation; other "
                                  "options refused by name"),
    "cpuManagerReconcilePeriod": _na("sdqos re-checks the CPUs at every sync, not on a period of its own", "10s"),
    "memoryManagerPolicy": _p("None honoured; Static (needs reservedMemory) met trivially on a host with one NUMA "
                              "node (said in warnings), refused on more: it places each Guaranteed pod's memory on "
                              "NUMA nodes (reservedMemory per node, systemd's AllowedMemoryNodes=), not built"),
    "reservedMemory": _p("validated as kubelet does for memoryManagerPolicy Static; refused on a host with more "
                         "than one NUMA node"),
    "topologyManagerPolicy": _p("none, best-effort, restricted, single-numa-node honoured with the static CPU manager "
                                "as the only hint provider: exclusive CPUs aligned to the merged hint's NUMA nodes, a "
                                "pod refused with TopologyAffinityError at `sdqos run` / `podman start` "
                                "(docs/numa.md); no devices or memory are aligned (said in warnings)"),
    "topologyManagerScope": _h("container and pod, as topologyManagerPolicy"),
    "topologyManagerPolicyOptions": _h("prefer-closest-numa-nodes and max-allowable-numa-nodes; other "
                                       "options refused with kubelet's message"),
    "seccompDefault": _p("true honoured (containers get podman's default seccomp profile); false is not followed: "
                         "sdqos never starts a container Unconfined (said in warnings)"),
    "allowedUnsafeSysctls": _r("not built: a pod asking for an unsafe sysctl is refused", []),
    "defaultPodSysctls": _r("not built: sdqos sets no sysctl a pod does not ask for", []),
    "localStorageCapacityIsolation": _na("ephemeral-storage is not enforced (see pod resources)", True),
    "kernelMemcgNotification": _na("sdqos pressure takes memcg notifications on cgroup v1 whenever it can", False),
    "failSwapOn": _na("sdqos starts no kubelet; swap is used as memorySwap says", True),
    "failCgroupV1": _na("sdqos starts no kubelet; it builds the tree on cgroup v1 and v2"),
    "protectKernelDefaults": _na("sdqos starts no kubelet and checks no kernel tunables", False),
    "oomScoreAdj": _na("the kubelet process's own OOM score: there is no kubelet process", -999),
    "kubeletCgroups": _na("there is no kubelet process", ""),
    "systemCgroups": _na("sdqos moves no system process", ""),
    "shutdownGracePeriod": _na("systemd stops the pods' scopes at shutdown, each with its grace period", "0s"),
    "shutdownGracePeriodCriticalPods": _na("systemd stops the pods' scopes at shutdown", "0s"),
    "shutdownGracePeriodByPodPriority": _na("systemd stops the pods' scopes at shutdown", []),
    "crashLoopBackOff": _na("podman restarts containers (--restart)", {}),
    "runtimeRequestTimeout": _na("no CRI: sdqos calls podman", "2m0s"),
    "containerRuntimeEndpoint": _na("no CRI: sdqos calls podman"),
    "imageServiceEndpoint": _na("no CRI: sdqos calls podman", ""),
    "userNamespaces": _na("no user-namespaced pods (hostUsers: false) are started", {}),
    "volumePluginDir": _na("no volume plugins", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"),
    "enableControllerAttachDetach": _na(_API, True),
    "registerNode": _na(_API, True),
    "registerWithTaints": _na(_API, []),
    "providerID": _na(_API, ""),
    "nodeStatusUpdateFrequency": _na(_API, "10s"),
    "nodeStatusReportFrequency": _na(_API, "5m0s"),
    "nodeLeaseDurationSeconds": _na(_API, 40),
    "nodeStatusMaxImages": _na(_API, 50),
    "kubeAPIQPS": _na(_API, 50),
    "kubeAPIBurst": _na(_API, 100),
    "contentType": _na(_API, "application/vnd.kubernetes.protobuf"),
    "eventRecordQPS": _na(_API, 50),
    "eventBurst": _na(_API, 100),
    "configMapAndSecretChangeDetectionStrategy": _na(_API, "Watch"),
    "rotateCertificates": _na(_API, False),
    "serverTLSBootstrap": _na(_API, False),
    "showHiddenMetricsForVersion": _na(_SERVER, ""),
    "enableServer": _na(_SERVER, True),
    "address": _na(_SERVER, "0.0.0.0"),
    "port": _na(_SERVER, 10250),
    "readOnlyPort": _na(_SERVER, 0),
    "tlsCertFile": _na(_SERVER, ""),
    "tlsPrivateKeyFile": _na(_SERVER, ""),
    "tlsCipherSuites": _na(_SERVER, []),
    "tlsCurvePreferences": _na(_SERVER, []),
    "tlsMinVersion": _na(_SERVER, ""),
    "authentication": _na(_SERVER),
    "authorization": _na(_SERVER),
    "healthzPort": _na(_SERVER, 10248),
    "healthzBindAddress": _na(_SERVER, "127.0.0.1"),
    "enableDebuggingHandlers": _na(_SERVER, True),
    "enableContentionProfiling": _na(_SERVER, False),
    "enableProfilingHandler": _na(_SERVER, True),
    "enableDebugFlagsHandler": _na(_SERVER, True),
    "enableSystemLogHandler": _na(_SERVER, True),
    "enableSystemLogQuery": _na(_SERVER, False),
    "streamingConnectionIdleTimeout": _na(_SERVER, "4h0m0s"),
    "staticPodPath": _na(_STATIC, ""),
    "staticPodURL": _na(_STATIC, ""),
    "staticPodURLHeader": _na(_STATIC, {}),
    "syncFrequency": _na("sdqos sync runs from its timer and path unit (install-units)", "1m0s"),
    "fileCheckFrequency": _na("sdqos sync runs from its timer and path unit (install-units)", "20s"),
    "httpCheckFrequency": _na(_STATIC, "20s"),
    "runOnce": _na("sdqos sync is one pass by itself", False),
    "registryPullQPS": _na(_IMAGES, 5),
    "registryBurst": _na(_IMAGES, 10),
    "serializeImagePulls": _na(_IMAGES, True),
    "maxParallelImagePulls": _na(_IMAGES, None),
    "imagePullCredentialsVerificationPolicy": _na(_IMAGES, "NeverVerifyPreloadedImages"),
    "preloadedImagesVerificationAllowlist": _na(_IMAGES, []),
    "imageMinimumGCAge": _na(_IMAGES, "2m0s"),
    "imageMaximumGCAge": _na(_IMAGES, "0s"),
    "imageGCHighThresholdPercent": _na(_IMAGES, 85),
    "imageGCLowThresholdPercent": _na(_IMAGES, 80),
    "volumeStatsAggPeriod": _na("no volume statistics are kept", "1m0s"),
    "podLogsDir": _na(_LOGS, "/var/log/pods"),
    "containerLogMaxSize": _na(_LOGS, "10Mi"),
    "containerLogMaxFiles": _na(_LOGS, 5),
    "containerLogMaxWorkers": _na(_LOGS, 1),
    "containerLogMonitorInterval": _na(_LOGS, "10s"),
    "logging": _na("sdqos logs to its stdout/stderr and the journal"),
    "tracing": _na("sdqos exports no traces"),
    "maxOpenFiles": _na("there is no kubelet process", 1000000),
    "clusterDomain": _na(_NET, ""),
    "clusterDNS": _na(_NET, []),
    "resolvConf": _na(_NET, "/etc/resolv.conf"),
    "hairpinMode": _na(_NET, "promiscuous-bridge"),
    "podCIDR": _na(_NET, ""),
    "makeIPTablesUtilChains": _na(_NET, True),
    "iptablesMasqueradeBit": _na(_NET, 14),
    "iptablesDropBit": _na(_NET, 15),
}

# Pod resource names (requests, limits, overhead, pod-level resources). A name matches its row
# exactly, else by its form: hugepages-<size>, or a fully-qualified extended resource.
HUGEPAGES = "hugepages-<size>"
EXTENDED = "<domain>/<name>"
POD_RESOURCES: dict[str, Disposition] = {
    "cpu": _h("CPUWeight/CPUShares, CPUQuota, admission (OutOfcpu)"),
    "memory": _h("MemoryMax/MemoryLimit, MemoryQoS, OOM score, admission (OutOfmemory)"),
    "ephemeral-storage": _p("accepted and not enforced (kubelet enforces it by evicting on disk use, which sdqos "
                            "does not watch): said in warnings"),
    HUGEPAGES: _r("systemd has no hugetlb setting: sdqos cannot limit a pod's huge pages"),
    EXTENDED: _r("an extended resource needs kubelet's device plugin, which sdqos does not have"),
}


def pod_resource(name: str) -> tuple[str, Disposition]:
    """The row for a pod resource name: (row key, disposition)."""
    if name in POD_RESOURCES:
        return name, POD_RESOURCES[name]
    if name.startswith("hugepages-"):
        return HUGEPAGES, POD_RESOURCES[HUGEPAGES]
    return EXTENDED, POD_RESOURCES[EXTENDED]


def _empty(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == {}


def is_default(field: str, value: Any) -> bool:
    """Whether ``value`` is kubelet's default for the field (a Go duration compared by its length;
    an empty value is a field not set)."""
    d = KUBELET_FIELDS[field].default
    if _empty(value):
        return True
    if d is _ANY:
        return False
    if isinstance(value, bool) or isinstance(d, bool):
        return value is d
    if value == d:
        return True
    if isinstance(value, str) and isinstance(d, str):
        try:
            return parse_go_duration(value) == parse_go_duration(d)
        except ValueError:
            return False
    return False


def not_applied(raw: Mapping) -> list[str]:
    """One warning per not-applicable field set to a value other than kubelet's default."""
    out = []
    for field, value in raw.items():
        row = KUBELET_FIELDS.get(field) if isinstance(field, str) else None
        if row is not None and row.kind == NOT_APPLICABLE and not is_default(field, value):
            out.append(f"node.yaml: {field} is not applied: {row.note}")
    return out


def markdown() -> str:
    """The table as docs/configuration.md holds it."""
    lines = ["| field | disposition | what sdqos does |", "|---|---|---|"]
    for field in sorted(KUBELET_FIELDS, key=str.lower):
        row = KUBELET_FIELDS[field]
        lines.append(f"| `{field}` | {row.kind} | {row.note} |")
    lines += ["", "| pod resource | disposition | what sdqos does |", "|---|---|---|"]
    for name, row in POD_RESOURCES.items():
        lines.append(f"| `{name}` | {row.kind} | {row.note} |")
    return "\n".join(lines)
