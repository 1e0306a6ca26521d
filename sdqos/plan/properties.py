"""Kubelet's cgroup values → the systemd properties that carry them: one table, one row per property.

Every other place that knows a property reads its row here (:data:`PROPERTIES`): which cgroup
versions sdqos sets it on and so owns it (diffed, restored, recorded: :func:`owned`), what kind of
value it is, which of kubelet's ``ResourceConfig`` fields gives its value (:func:`to_properties`),
whether the diff raises it top-down and lowers it bottom-up (:data:`LIMITS`), systemd's default a
released scope gets back (:data:`RESETS`), the kernel file that shows it and the conversion to and
from that file (``host/cgroupfs.py``'s drift check and ``reconcile/live.py``'s read-back), its D-Bus
signature (``host/systemd.py``), how people see it (:func:`shown`, :func:`change`) and the engine's
reason that explains it (``plan/explain.py``). This is runc's systemd driver in one table:
``genV1ResourcesProperties``/``genV2ResourcesProperties`` say which resource becomes which property
per version, ``unifiedResToSystemdProps`` which kernel file (cpu.max, memory.high, pids.max …) is
which property and how its text converts (opencontainers/runc libcontainer/cgroups/systemd/v1.go,
v2.go). Adding a property is one row (docs/architecture.md, "Adding things").

cgroup v1 (systemd < 258): ``CPUShares`` (exact shares; systemd's CPUWeight conversion is lossy
there) and ``MemoryLimit``. cgroup v2: ``CPUWeight`` (kubelet's linear rule for its own slices, the
runtime's rule for container scopes), ``MemoryMax``, the MemoryQoS trio, and for containers
``MemorySwapMax`` (kubelet's swap behaviour) and ``OOMPolicy`` (memory.oom.group; set when the scope
is created, see :func:`oom_policy`). CFS quota goes out the
way runc's systemd driver sends it: per-second, rounded up to a whole percent, because systemd
stores it as a percentage and would silently truncate anything finer at the next daemon-reload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sdqos import humanize as H
from sdqos.humanize import INFINITY  # systemd's "infinity"/unset, defined once
from sdqos.kube import cpuset, qos

DEFAULT_PERIOD_US = qos.QUOTA_PERIOD_US


@dataclass(frozen=True, slots=True)
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
    # kubelet's ResourceConfig.CPUSet: the CPUs the unit may run on, as a CPU list ("2-3"); None: not
    # set (cpuManagerPolicy none, v1, a slice). On v2 systemd holds it as AllowedCPUs (cpuset.cpus).
    cpuset: str | None = None


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


# ---- the kernel's side: which file shows a property, and how its value converts ---------------------

V1_UNLIMITED_MEMORY = 0x7FFFFFFFFFFFF000  # PAGE_COUNTER_MAX × 4 KiB: memory.limit_in_bytes with no limit
USEC_PER_SEC = 1_000_000
QUOTA_RESOLUTION_US = 1000  # the kernel's 1 ms minimum for period and quota
MAX_PERIOD_US = 1_000_000
ANY_PERIOD = None  # in an expected cpu.max: the period is not systemd's (see quota_files)


@dataclass(frozen=True)
class Kernel:
    """How the kernel shows one property on one cgroup version. File names as cgroupfs lays them
    out (v1: ``controller/file``); values as ``host/cgroupfs.py`` parses them: int, ``"max"``, or
    cpu.max's (quota, period)."""

    files: tuple[str, ...]
    # (the property's value, all of the unit's properties, the page size) → file → what it holds
    to_files: Callable[[Any, Mapping[str, Any], int], dict[str, object]]
    # file → what it holds (those of ``files``) → the property's value systemd would show
    from_files: Callable[[Mapping[str, object]], Any]


def quota_files(per_sec: int, period_prop: int, mode: str) -> dict[str, object]:
    """systemd's cgroup_apply for CPUQuota*: the period is raised so that period and quota are at
    least 1 ms (cgroup_cpu_adjust_period), at most 1 s."""
    period = DEFAULT_PERIOD_US if period_prop in (INFINITY, 0) else period_prop
    if per_sec == INFINITY:
        quota = -1
    else:
        period = min(max(period, QUOTA_RESOLUTION_US, QUOTA_RESOLUTION_US * USEC_PER_SEC // per_sec), MAX_PERIOD_US)
        quota = per_sec * period // USEC_PER_SEC
    if mode == "v1":
        # no quota: systemd 252 writes the kernel's default period, not CPUQuotaPeriodUSec (measured:
        # tests/reconcile/test_property_table_sandbox.py; it was reported as "refused" on every sync)
        return {"cpu/cpu.cfs_quota_us": quota, "cpu/cpu.cfs_period_us": period if quota >= 0 else DEFAULT_PERIOD_US}
    # cgroup v2 with no quota: systemd (252 and 257, measured in tests/v2) does not write the period
    # into cpu.max, so the kernel keeps whatever period it had; only "max" is systemd's to keep.
    return {"cpu.max": ("max", ANY_PERIOD) if quota < 0 else (quota, period)}


def _per_sec(quota: object, period: object) -> int:
    """A kernel quota per period as systemd's µs per second (-1 or ``max``: none)."""
    if not isinstance(quota, int) or quota < 0 or not isinstance(period, int) or period <= 0:
        return INFINITY
    return quota * USEC_PER_SEC // period


def _quota(mode: str) -> Kernel:
    if mode == "v1":
        files = ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")
        return Kernel(files, lambda v, props, page: quota_files(v, props.get(PERIOD_PROPERTY, INFINITY), mode),
                      lambda f: _per_sec(f[files[0]], f[files[1]]))

    def back(f: Mapping[str, object]) -> int:
        held = f["cpu.max"]
        return _per_sec(*held) if isinstance(held, tuple) else INFINITY

    return Kernel(("cpu.max",), lambda v, props, page: quota_files(v, props.get(PERIOD_PROPERTY, INFINITY), mode), back)


def _as_is(file: str) -> Kernel:
    """A file that holds the value as it is (shares, weights)."""
    return Kernel((file,), lambda v, props, page: {file: v}, lambda f: int(f[file]))  # type: ignore[call-overload]


def _count(file: str) -> Kernel:
    """A count with ``max`` for none (pids.max)."""
    return Kernel((file,), lambda v, props, page: {file: "max" if v == INFINITY else v},
                  lambda f: INFINITY if f[file] == "max" else int(f[file]))  # type: ignore[call-overload]


def _bytes(file: str) -> Kernel:
    """A v2 memory file: page-rounded by the kernel, ``max`` for no limit."""
    return Kernel((file,), lambda v, props, page: {file: "max" if v == INFINITY else v // page * page},
                  lambda f: INFINITY if f[file] == "max" else int(f[file]))  # type: ignore[call-overload]


def _v1_bytes(file: str) -> Kernel:
    """v1's memory.limit_in_bytes: page-rounded, PAGE_COUNTER_MAX pages for no limit."""
    def back(f: Mapping[str, object]) -> int:
        held = int(f[file])  # type: ignore[call-overload]
        return INFINITY if held >= V1_UNLIMITED_MEMORY else held

    return Kernel((file,), lambda v, props, page: {file: V1_UNLIMITED_MEMORY if v == INFINITY else v // page * page},
                  back)


def _oom_group(file: str) -> Kernel:
    """OOMPolicy=kill is memory.oom.group 1 (systemd sets it from the policy; runc's comment on
    memory.oom.group in unifiedResToSystemdProps)."""
    return Kernel((file,), lambda v, props, page: {file: 1 if v == "kill" else 0},
                  lambda f: "kill" if f[file] == 1 else "continue")


def cpu_mask(cpus: str | frozenset[int]) -> int:
    """A CPU list ("2-3") or set as the bitmask sdqos keeps AllowedCPUs in (bit N: CPU N); 0: none,
    systemd's "not set" (every CPU the parent has)."""
    mask = 0
    for cpu in cpuset.parse(cpus) if isinstance(cpus, str) else cpus:
        mask |= 1 << cpu
    return mask


def mask_cpus(mask: int) -> cpuset.CPUSet:
    """The CPUs of a bitmask (:func:`cpu_mask` the other way)."""
    return cpuset.CPUSet(i for i in range(mask.bit_length()) if mask >> i & 1)


def cpu_mask_bytes(mask: int) -> bytes:
    """AllowedCPUs as D-Bus ``ay`` the way systemd reads and writes it (cpu_set_to_dbus and
    cpu_set_from_dbus in src/shared/cpu-set-util.c: byte N holds CPUs 8N..8N+7, CPU 8N+k is bit k):
    the bitmask's little-endian bytes; no CPU is no byte (systemd: not set)."""
    return mask.to_bytes((mask.bit_length() + 7) // 8, "little")


def mask_of_dbus(value: object) -> int:
    """AllowedCPUs as systemd shows it (``ay``: bytes, or a list of ints) → the bitmask (trailing
    zero bytes, which systemd sends up to its allocation, change nothing)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int.from_bytes(bytes(value), "little")  # type: ignore[call-overload]


def cpu_list(text: str) -> str:
    """A kernel CPU list in canonical form ("0-1,3"); ValueError (CPUSetError) when it is not one."""
    return str(cpuset.parse(text))


def _cpu_list(file: str) -> Kernel:
    """cgroup v2's cpuset.cpus: the CPU list systemd writes from AllowedCPUs ("" when not set), as
    host/cgroupfs.py reads it (the list in k8s.io/utils/cpuset's canonical form)."""
    return Kernel((file,), lambda v, props, page: {file: str(mask_cpus(v))},
                  lambda f: cpu_mask(str(f[file])))


# ---- the table ----------------------------------------------------------------------------------------

# kinds: what a value does (the diff, status and budget reason about kinds, not names)
WEIGHT, QUOTA, PERIOD, MEMORY_LIMIT, MEMORY_HIGH, RESERVATION, SWAP, PIDS, OOM, OOMD, CPUSET = (
    "weight", "quota", "period", "memory-limit", "memory-high", "reservation", "swap", "pids", "oom", "oomd",
    "cpuset")
V1, V2 = frozenset({"v1"}), frozenset({"v2"})
BOTH = V1 | V2


def _shares(v: int) -> str:
    return "unset" if v == INFINITY else f"{v} shares"  # systemd's "not set", not a number of shares


def _weight(v: int) -> str:
    return "unset" if v == INFINITY else f"weight {v}"


def _tasks(v: int) -> str:
    return f"{H.count(v)} tasks"


def _memory(rc: ResourceConfig, period_us: int, container: bool) -> int:
    return rc.memory if rc.memory is not None and rc.memory > 0 else INFINITY


def _cpus(v: int) -> str:
    return f"cpus {mask_cpus(v)}" if v else "all cpus"


def _cpu_shares(rc: ResourceConfig) -> int:
    return rc.cpu_shares if rc.cpu_shares is not None else qos.SHARES_PER_CPU


@dataclass(frozen=True)
class Property:
    """One systemd property sdqos sets, with everything every layer needs to know about it."""

    name: str  # the D-Bus name (systemd.resource-control(5))
    versions: frozenset[str]  # cgroup versions sdqos sets it on
    kind: str  # WEIGHT, QUOTA, … above
    signature: str  # D-Bus type of its value
    # kubelet's ResourceConfig (with the node's cpuCFSQuotaPeriod and whether the unit is a
    # container's scope) → the value sent; None: not set on this unit
    value: Callable[[ResourceConfig, int, bool], Any]
    reset: Any  # systemd's default: what a scope sdqos released gets back (None: left as it is)
    limit: bool  # a ceiling children share: raised top-down, lowered bottom-up (the diff's phases)
    kernel: Mapping[str, Kernel | None]  # cgroup version → the file(s) showing it; None: in another row's
    show: Callable[[Any], str]  # the value for people
    why: str | None  # the engine's reason key (UnitPlan.why) that explains the value
    summary: int | None  # its place in the plan tree's one-line summary of a unit (None: not shown)
    status: str | None = None  # its key in status's "what the unit is entitled to" (the memory limit: memoryLimit)
    owned: bool = True  # diffed, restored, recorded; False: sent once, when a scope is created


PERIOD_PROPERTY = "CPUQuotaPeriodUSec"

PROPERTIES: tuple[Property, ...] = (
    Property("CPUShares", V1, WEIGHT, "t", value=lambda rc, p, c: _cpu_shares(rc), reset=INFINITY, limit=False,
             kernel={"v1": _as_is("cpu/cpu.shares")}, show=_shares, why="cpu_shares", summary=1, status="cpuShares"),
    Property("CPUWeight", V2, WEIGHT, "t",
             value=lambda rc, p, c: (qos.shares_to_weight_runc if c else qos.shares_to_weight_kubelet)(_cpu_shares(rc)),
             reset=INFINITY, limit=False, kernel={"v2": _as_is("cpu.weight")}, show=_weight, why="cpu_shares",
             summary=2, status="cpuWeight"),
    Property("CPUQuotaPerSecUSec", BOTH, QUOTA, "t",
             value=lambda rc, p, c: quota_per_sec_usec(rc.cpu_quota, rc.cpu_period or p), reset=INFINITY, limit=True,
             kernel={"v1": _quota("v1"), "v2": _quota("v2")}, show=H.quota, why="cpu_quota", summary=3,
             status="cpuQuotaPerSecUSec"),
    # Owned everywhere but only set when it differs from systemd's default (the kernel's 100 ms); the
    # kernel shows it in the quota's files (cfs_period_us, cpu.max), converted with the quota.
    Property(PERIOD_PROPERTY, BOTH, PERIOD, "t", value=lambda rc, p, c: p if p != DEFAULT_PERIOD_US else None,
             reset=None, limit=False, kernel={"v1": None, "v2": None}, show=H.usec, why=None, summary=4),
    Property("MemoryLimit", V1, MEMORY_LIMIT, "t", value=_memory, reset=INFINITY, limit=True,
             kernel={"v1": _v1_bytes("memory/memory.limit_in_bytes")}, show=H.size, why="memory", summary=5),
    Property("MemoryMax", V2, MEMORY_LIMIT, "t", value=_memory, reset=INFINITY, limit=True,
             kernel={"v2": _bytes("memory.max")}, show=H.size, why="memory", summary=6),
    Property("MemoryMin", V2, RESERVATION, "t", value=lambda rc, p, c: rc.memory_min or 0, reset=0, limit=False,
             kernel={"v2": _bytes("memory.min")}, show=H.size, why="memory_min", summary=9),
    Property("MemoryLow", V2, RESERVATION, "t", value=lambda rc, p, c: rc.memory_low or 0, reset=0, limit=False,
             kernel={"v2": _bytes("memory.low")}, show=H.size, why="memory_low", summary=8),
    Property("MemoryHigh", V2, MEMORY_HIGH, "t",
             value=lambda rc, p, c: INFINITY if rc.memory_high is None or rc.memory_high < 0 else rc.memory_high,
             reset=INFINITY, limit=True, kernel={"v2": _bytes("memory.high")}, show=H.size, why="memory_high",
             summary=7),
    Property("MemorySwapMax", V2, SWAP, "t", value=lambda rc, p, c: rc.swap, reset=INFINITY, limit=False,
             kernel={"v2": _bytes("memory.swap.max")}, show=H.size, why="swap", summary=None),
    # Never reset: sdqos leaves a runtime's pids limit on the scopes it tunes (reconcile/binding.py).
    Property("TasksMax", BOTH, PIDS, "t",
             value=lambda rc, p, c: rc.pids if rc.pids is not None and rc.pids > 0 else INFINITY, reset=None,
             limit=True, kernel={"v1": _count("pids/pids.max"), "v2": _count("pids.max")}, show=_tasks, why="pids",
             summary=10, status="tasksMax"),
    # Taken only when a scope is created (see oom_policy); not in to_properties, never diffed.
    Property("OOMPolicy", BOTH, OOM, "s", value=lambda rc, p, c: oom_policy(rc), reset=None, limit=False,
             kernel={"v2": _oom_group("memory.oom.group")}, show=str, why="oom_group", summary=None, owned=False),
    # systemd-oomd's choice in kubelet's QoS order (see oomd_preference); taken only when a scope is
    # created; the kernel keeps it as an xattr of the cgroup (user.oomd_avoid/omit), in no file (kernel: none;
    # tests/v2/test_v2_oomd.py reads the xattr).
    Property("ManagedOOMPreference", V2, OOMD, "s", value=lambda rc, p, c: rc.oomd_preference, reset=None,
             limit=False, kernel={}, show=str, why="oomd_preference", summary=None, owned=False),
    # The static CPU manager's CPUs (ResourceConfig.cpuset: a container's exclusive CPUs, else the
    # shared pool; a VM's dedicated CPUs), kept as a bitmask (cpu_mask), sent as systemd's ay
    # (cpu_mask_bytes). Set only where the plan gives a value (cpuManagerPolicy static, cgroup v2):
    # with none, no unit has it and nothing is diffed. Not a limit: the pod slices above hold no
    # cpuset (kubelet sets none there), systemd enables the controller up the tree. Reset: not set.
    Property("AllowedCPUs", V2, CPUSET, "ay",
             value=lambda rc, p, c: None if rc.cpuset is None else cpu_mask(rc.cpuset), reset=0, limit=False,
             kernel={"v2": _cpu_list("cpuset.cpus")}, show=_cpus, why="cpus", summary=11),
)
BY_NAME: dict[str, Property] = {p.name: p for p in PROPERTIES}


# ---- what derives from it -----------------------------------------------------------------------------

def owned(cgroup: str) -> tuple[str, ...]:
    """Properties sdqos owns on every unit it manages: diffed, restored, recorded (read from systemd)."""
    return _OWNED["v1" if cgroup == "v1" else "v2"]


_OWNED = {v: tuple(p.name for p in PROPERTIES if p.owned and v in p.versions) for v in ("v1", "v2")}
V1_OWNED = tuple(n for n in _OWNED["v1"] if n != PERIOD_PROPERTY)
V2_OWNED = tuple(n for n in _OWNED["v2"] if n != PERIOD_PROPERTY)
#: Ceilings children share: the diff raises them top-down and lowers them bottom-up.
LIMITS = frozenset(p.name for p in PROPERTIES if p.owned and p.limit)
#: systemd's defaults for what sdqos sets on a scope it tunes and then releases.
RESETS: dict[str, Any] = {p.name: p.reset for p in PROPERTIES if p.owned and p.reset is not None}
#: D-Bus signature of each property in the table (host/systemd.py adds the unit's other properties).
SIGNATURES: dict[str, str] = {p.name: p.signature for p in PROPERTIES}
#: The engine's reason (UnitPlan.why key) that explains each property.
WHY_KEYS: dict[str, str] = {p.name: p.why for p in PROPERTIES if p.why}
#: status's keys for what a unit is entitled to (and memoryLimit: :func:`memory_limit`).
STATUS_KEYS: dict[str, str] = {p.name: p.status for p in PROPERTIES if p.status}
#: What the plan tree shows of a unit, in this order.
SUMMARY = tuple(p.name for p in sorted((p for p in PROPERTIES if p.summary is not None), key=lambda p: p.summary or 0))
MEMORY_PROPERTIES = tuple(p.name for p in PROPERTIES if p.kind == MEMORY_LIMIT)
RESERVATIONS = tuple(p.name for p in PROPERTIES if p.kind == RESERVATION)
QUOTA_PROPERTY = next(p.name for p in PROPERTIES if p.kind == QUOTA)


def of_kind(kind: str, cgroup: str) -> str:
    """The property that carries ``kind`` on this cgroup version (WEIGHT on v1: CPUShares)."""
    v = "v1" if cgroup == "v1" else "v2"
    return next(p.name for p in PROPERTIES if p.kind == kind and v in p.versions)


_SHARED: dict[tuple, tuple[ResourceConfig, dict[str, int]]] = {}
_SHARED_MAX = 20_000  # then start over: a long-running pressure loop must not grow it without bound


def shared(rc: ResourceConfig, cgroup: str, period_us: int, *, container: bool = False) -> tuple[ResourceConfig, dict[str, int]]:
    """``rc`` and :func:`to_properties` of it, one pair for all units with equal values: pods
    repeat a few resource shapes, and at 1000 pods a pair per unit was ~1 MB of a sync's peak
    RSS. Nothing changes a plan's properties in place (the desired state and the diff copy them),
    so sharing the dict is safe; a caller that must change one copies it."""
    key = (rc, cgroup, period_us, container)
    hit = _SHARED.get(key)
    if hit is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        hit = _SHARED[key] = (rc, to_properties(rc, cgroup, period_us, container=container))
    return hit


def to_properties(rc: ResourceConfig, cgroup: str, period_us: int, *, container: bool = False) -> dict[str, int]:
    """All owned properties of one unit, in D-Bus names and values: the table's rows for this
    cgroup version, in its order (genV1/genV2ResourcesProperties).

    ``period_us`` is the node's cpuCFSQuotaPeriod; ``container`` selects the runtime's weight rule."""
    v = "v1" if cgroup == "v1" else "v2"
    props: dict[str, int] = {}
    for p in PROPERTIES:
        if p.owned and v in p.versions:
            value = p.value(rc, period_us, container)
            if value is not None:
                props[p.name] = value
    return props


def kernel_files(props: Mapping[str, Any], cgroup: str, page: int = 4096) -> dict[str, object] | None:
    """Kernel file → what it holds for a unit with these properties (unifiedResToSystemdProps the
    other way). None: a property this table cannot predict on this version."""
    v = "v1" if cgroup == "v1" else "v2"
    out: dict[str, object] = {}
    for name in props:
        p = BY_NAME.get(name)
        if p is None or not p.owned or v not in p.versions:
            return None
    for p in PROPERTIES:
        k = p.kernel.get(v)
        if k is not None and p.name in props:
            out.update(k.to_files(props[p.name], props, page))
    return out


def to_dbus(name: str, value: Any) -> Any:
    """A planned value as its D-Bus value: AllowedCPUs' bitmask as systemd's ``ay``; others as they are."""
    p = BY_NAME.get(name)
    return cpu_mask_bytes(value) if p is not None and p.kind == CPUSET and isinstance(value, int) else value


def from_dbus(name: str, value: Any) -> int:
    """An owned property as systemd reported it, as the plan keeps it (ints; AllowedCPUs' ``ay``: its bitmask)."""
    p = BY_NAME.get(name)
    return mask_of_dbus(value) if p is not None and p.kind == CPUSET else int(value)


def from_kernel(name: str, cgroup: str, held: Mapping[str, object]) -> Any:
    """The value of property ``name`` that the kernel's files (as :func:`kernel_files` names
    them) show on this cgroup version."""
    k = BY_NAME[name].kernel.get("v1" if cgroup == "v1" else "v2")
    if k is None:
        raise KeyError(f"{name} has no kernel file of its own on {cgroup}")
    return k.from_files(held)


def shown(name: str, value: Any) -> str:
    """One property value in human units, by property name."""
    p = BY_NAME.get(name)
    return p.show(value) if p is not None else str(value)


def change(name: str, old: Any, new: Any) -> str:
    """``old → new`` for a property, with enough digits that two different values never read the
    same (humanize.change)."""
    p = BY_NAME.get(name)
    return H.change(name, old, new, show=lambda v: shown(name, v), sizes=p is not None and p.show is H.size)


# What can be sent at all. Every owned property but AllowedCPUs (a bitmask, sent as "ay") is a D-Bus
# uint64 ("t"); the kernel refuses a CFS
# quota above max_cfs_runtime (kernel/sched/core.c: MAX_BW = 2^44 - 1 µs per period), so runc and
# with it kubelet could never start such a container.
UINT64_MAX = 2**64 - 1
MAX_CFS_QUOTA_US = 2**44 - 1


def unsendable(props: dict[str, int]) -> list[str]:
    """Why these properties cannot be sent or set (empty: they can), one reason per property."""
    out = []
    for name, value in props.items():
        p = BY_NAME.get(name)
        if p is not None and p.signature == "ay":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                out.append(f"{name}={value} is not a set of CPUs")
        elif isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT64_MAX:
            out.append(f"{name}={value} does not fit systemd's unsigned 64-bit value")
    per_sec = props.get(QUOTA_PROPERTY)
    if isinstance(per_sec, int) and per_sec != INFINITY and 0 <= per_sec <= UINT64_MAX:
        period = props.get(PERIOD_PROPERTY, DEFAULT_PERIOD_US)
        quota = kernel_quota_us(per_sec, period if period != INFINITY else DEFAULT_PERIOD_US)
        if quota > MAX_CFS_QUOTA_US:
            out.append(f"a CFS quota of {quota} µs per period is above the kernel's maximum ({MAX_CFS_QUOTA_US})")
    return out


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
