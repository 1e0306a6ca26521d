"""Kubelet's cgroup values → the systemd properties that carry them, per manager (docs/formulas.md).

cgroup v1 (systemd < 258): ``CPUShares`` (exact shares; systemd's CPUWeight conversion is lossy
there) and ``MemoryLimit``. cgroup v2: ``CPUWeight`` (kubelet's linear rule for its own slices, the
runtime's rule for container scopes), ``MemoryMax``, the MemoryQoS trio, and for containers
``MemorySwapMax`` (kubelet's swap behaviour) and ``OOMPolicy`` (memory.oom.group; set when the scope
is created, see :func:`oom_policy`). CFS quota goes out the
way runc's systemd driver sends it: per-second, rounded up to a whole percent, because systemd
stores it as a percentage and would silently truncate anything finer at the next daemon-reload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sdqos.humanize import INFINITY  # systemd's "infinity"/unset, defined once
from sdqos.kube import qos

DEFAULT_PERIOD_US = qos.QUOTA_PERIOD_US

V1_OWNED = ("CPUShares", "CPUQuotaPerSecUSec", "MemoryLimit", "TasksMax")
V2_OWNED = ("CPUWeight", "CPUQuotaPerSecUSec", "MemoryMax", "MemoryMin", "MemoryLow", "MemoryHigh", "TasksMax",
            "MemorySwapMax")
# Owned everywhere but only shown when it differs from systemd's default (the kernel's 100 ms).
PERIOD_PROPERTY = "CPUQuotaPeriodUSec"
MEMORY_PROPERTIES = ("MemoryLimit", "MemoryMax")


@dataclass(frozen=True)
class ResourceConfig:
    """kubelet's ResourceConfig for one cgroup. None = kubelet leaves it unset.

    cpu_quota is µs per cpu_period; 0 or -1 mean no quota (no limit / cpuCFSQuota off).
    memory_high of -1 means ``max``."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory: int | None = None
    pids: int | None = None
    memory_min: int | None = None
    memory_low: int | None = None
    memory_high: int | None = None
    swap: int | None = None  # memory.swap.max (v2 containers); None: left as it is
    oom_group: bool | None = None  # memory.oom.group (v2 containers), sent as the scope's OOMPolicy
    oomd_preference: str | None = None  # systemd-oomd's ManagedOOMPreference (v2 scopes): see oomd_preference()


def quota_per_sec_usec(quota: int | None, period: int | None) -> int:
    """runc's addCPUQuota: quota×1e6/period µs per second, rounded up to a multiple of 10 000
    (1 %); no quota → infinity."""
    if quota is None or quota <= 0:
        return INFINITY
    period = period or DEFAULT_PERIOD_US
    per_sec = quota * 1_000_000 // period
    if per_sec % 10_000:
        per_sec = (per_sec // 10_000 + 1) * 10_000
    return per_sec


def kernel_quota_us(per_sec_usec: int, period: int) -> int:
    """The cfs_quota_us the kernel ends up with for a per-second quota (−1 = unlimited)."""
    if per_sec_usec == INFINITY:
        return -1
    return per_sec_usec * period // 1_000_000


def to_properties(rc: ResourceConfig, cgroup: str, period_us: int, *, container: bool = False) -> dict[str, int]:
    """All owned properties of one unit, in D-Bus names and values.

    ``period_us`` is the node's cpuCFSQuotaPeriod; ``container`` selects the runtime's weight rule."""
    shares = rc.cpu_shares if rc.cpu_shares is not None else qos.SHARES_PER_CPU
    props: dict[str, int] = {}
    if cgroup == "v1":
        props["CPUShares"] = shares
    else:
        props["CPUWeight"] = qos.shares_to_weight_runc(shares) if container else qos.shares_to_weight_kubelet(shares)
    props["CPUQuotaPerSecUSec"] = quota_per_sec_usec(rc.cpu_quota, rc.cpu_period or period_us)
    if period_us != DEFAULT_PERIOD_US:
        props[PERIOD_PROPERTY] = period_us
    memory = rc.memory if rc.memory is not None and rc.memory > 0 else INFINITY
    if cgroup == "v1":
        props["MemoryLimit"] = memory
    else:
        props["MemoryMax"] = memory
        props["MemoryMin"] = rc.memory_min or 0
        props["MemoryLow"] = rc.memory_low or 0
        high = rc.memory_high
        props["MemoryHigh"] = INFINITY if high is None or high < 0 else high
        if rc.swap is not None:
            props["MemorySwapMax"] = rc.swap
    props["TasksMax"] = rc.pids if rc.pids is not None and rc.pids > 0 else INFINITY
    return props


# What can be sent at all. Every owned property is a D-Bus uint64 ("t"); the kernel refuses a CFS
# quota above max_cfs_runtime (kernel/sched/core.c: MAX_BW = 2^44 - 1 µs per period), so runc and
# with it kubelet could never start such a container.
UINT64_MAX = 2**64 - 1
MAX_CFS_QUOTA_US = 2**44 - 1


def unsendable(props: dict[str, int]) -> list[str]:
    """Why these properties cannot be sent or set (empty: they can), one reason per property."""
    out = []
    for name, value in props.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT64_MAX:
            out.append(f"{name}={value} does not fit systemd's unsigned 64-bit value")
    per_sec = props.get("CPUQuotaPerSecUSec")
    if isinstance(per_sec, int) and per_sec != INFINITY and 0 <= per_sec <= UINT64_MAX:
        period = props.get(PERIOD_PROPERTY, DEFAULT_PERIOD_US)
        quota = kernel_quota_us(per_sec, period if period != INFINITY else DEFAULT_PERIOD_US)
        if quota > MAX_CFS_QUOTA_US:
            out.append(f"a CFS quota of {quota} µs per period is above the kernel's maximum ({MAX_CFS_QUOTA_US})")
    return out


def owned(cgroup: str) -> tuple[str, ...]:
    """Properties sdqos owns on every unit it manages (plus CPUQuotaPeriodUSec)."""
    return (V1_OWNED if cgroup == "v1" else V2_OWNED) + (PERIOD_PROPERTY,)


def planned_value(props: dict[str, int], name: str) -> int:
    """The planned value of an owned property; CPUQuotaPeriodUSec defaults to systemd's unset."""
    if name == PERIOD_PROPERTY:
        return props.get(name, INFINITY)
    return props[name]


def memory_limit(props: Mapping[str, int]) -> int:
    for name in MEMORY_PROPERTIES:
        if name in props:
            return props[name]
    return INFINITY


def oom_policy(rc: ResourceConfig) -> str | None:
    """The scope's OOMPolicy for memory.oom.group: ``kill`` makes systemd set memory.oom.group=1 (the
    kernel kills the whole container, kubelet's v2 default), ``continue`` leaves it 0 (only the chosen
    process dies: singleProcessOOMKill). systemd takes it only when a scope is created (measured on
    252 and 257); None (v1, VMs): systemd's default."""
    if rc.oom_group is None:
        return None
    return "kill" if rc.oom_group else "continue"


# systemd-oomd's ManagedOOMPreference values (systemd.resource-control(5)).
OOMD_NONE, OOMD_AVOID, OOMD_OMIT = "none", "avoid", "omit"


def oomd_preference(qos_class: str, *, critical: bool = False, evictable: bool = True) -> tuple[str, str]:
    """(ManagedOOMPreference, why) for a container's or VM's scope on cgroup v2, so that when
    systemd-oomd acts (Fedora and Ubuntu run it: ManagedOOMSwap=kill on -.slice, or an operator's
    ManagedOOMMemoryPressure=kill on kubepods.slice) it picks in kubelet's QoS order, not by
    reclaim rate alone. oomd's candidates are the leaf cgroups (and those with memory.oom.group=1)
    below a monitored unit; it skips ``omit`` and takes ``avoid`` only when nothing else is left
    (src/oom/oomd-util.c oomd_sort_cgroup_contexts, oomd_fetch_cgroup_oom_preference). Three levels
    for kubelet's order: what kubelet never evicts (a critical pod; a VM with spec.eviction: Never)
    is omitted, a Guaranteed workload avoided, Burstable and BestEffort left to oomd's own order
    (reclaim rate, then usage). systemd writes the preference as the cgroup's user.oomd_* xattr
    when it realizes the cgroup, so it is sent when the scope is created (measured on 257: a later
    SetUnitProperties is not applied until something else re-realizes the cgroup)."""
    if critical:
        return OOMD_OMIT, "critical pod: kubelet never evicts it, so systemd-oomd never picks it"
    if not evictable:
        return OOMD_OMIT, "spec.eviction: Never: sdqos never evicts this VM, so systemd-oomd never picks it"
    if qos_class == "Guaranteed":
        return OOMD_AVOID, "Guaranteed: systemd-oomd picks it only when no Burstable or BestEffort workload is left"
    return OOMD_NONE, f"{qos_class}: systemd-oomd's own order (reclaim rate, then usage), before any Guaranteed one"
