"""``sdqos status``: who is in which tier, what they are entitled to, what they use, what is off.

Reads the live tree through the same observation as ``sync`` (a few D-Bus calls), then the CPU
counters a second time after ``interval`` seconds for a usage rate, and the OOM score of each
process from ``/proc``. Nothing is written.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import TypedDict

from sdqos.host.rundir import budget_record  # noqa: F401 - status's name for it (the record's schema: the store's)
from sdqos.host import facts, procfs
from sdqos.host.systemd import SCOPE, SLICE, SystemdAPI
from sdqos import humanize as H
from sdqos.plan.properties import STATUS_KEYS  # (the property table)
from sdqos.humanize import ellipsize
from sdqos.kube.naming import MARK, QOS_OF_TIER, VM, Owner, owning_slice, parent_slice, parse_container_scope, parse_tier_slice
from sdqos.plan.engine import KeptPod, Plan, UnitPlan
from sdqos.plan.properties import INFINITY, memory_limit
from sdqos.reconcile.desired import CLAMPED, Adjustment, Desired, desired
from sdqos.reconcile.diff import LiveUnit, recorded_keys, recorded_owner, unit_changes
from sdqos.reconcile.live import Observation, check_kernel, observe

NEAR_LIMIT = 0.9  # usage at or above 90 % of a limit is flagged


def _flag_not_admitted(plan, obs, rows: list) -> None:
    """Pods that do not run and that kubelet would not admit beside those that do (their requests
    all count, whatever order they started in), taken in config order: flagged ``not-admitted``
    with kubelet's reason. A running pod is never flagged: kubelet admitted it."""
    from sdqos.kube import admission

    running = {owning_slice(sc.slice) for sc in obs.scopes.values() if sc.slice}
    refused = admission.admit_in_order(admission.node_allocatable(plan.node, plan.capacity),
                                       [pp.requests for pp in plan.pods if pp.slice in running],
                                       [(pp.slice, pp.requests) for pp in plan.pods if pp.slice not in running])
    for r in rows:
        why = refused.get(r.unit) if r.kind == "pod" else None
        if why is not None:
            r.flags.append("not-admitted")
            r.reasons["not-admitted"] = f"{why.reason} ({why.left()}): {why.message}"


@dataclass
class Row:
    unit: str
    kind: str  # node | tier | pod | container | machine | vm | reserved | foreign
    parent: str
    label: str
    qos: str | None
    running: bool
    entitled: dict[str, int | None] = field(default_factory=dict)  # cpuShares/cpuWeight, cpuQuotaPerSec, memoryLimit, tasksMax
    usage: dict[str, float | int | None] = field(default_factory=dict)  # memoryBytes, cpuCores, tasks
    oom_score_adj: list[int] = field(default_factory=list)  # distinct values of its processes
    flags: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # flag → why (kept, clamped-to-usage)
    drift: dict[str, list[int]] = field(default_factory=dict)
    namespace: str | None = None  # the pod's, for pod and container units
    pod: str | None = None
    container: str | None = None
    vm: str | None = None
    oom_killed: dict | None = None  # {"count", "unnamed", "last": {time, pid, comm, limit, limitUnit, ...}}: kubelet's OOMKilled
    # cpuManagerPolicy static only (a container's or VM's): {"cpus": "2-3", "count": 2, "exclusive": bool,
    # "affinityOff": {thread id: its affinity}} (cgroup v1: a container's threads not on "cpus")
    cpus: dict | None = None

    @property
    def name(self) -> str:
        """What people call it: shop/web, shop/web/nginx, vm db1; "" for node, tiers and the like."""
        if self.vm:
            return f"vm {self.vm}"
        if self.pod:
            return "/".join(x for x in (self.namespace, self.pod, self.container) if x)
        return ""


@dataclass
class Status:
    cgroup: str
    rows: list[Row]
    warnings: list[str]
    interval_s: float
    summary: dict[str, int] = field(default_factory=dict)
    # the node's eviction signals against their thresholds, and kubelet's node conditions (one
    # look, as `sdqos pressure --once`); None when the kernel's numbers could not be read
    node: dict | None = None
    # cpuManagerPolicy static only: {"policy", "sharedPool", "exclusive", "sharedPoolCount",
    # "exclusiveCount"} from the CPU manager's state file (mark_cpus)
    cpu_manager: dict | None = None

    def as_json(self) -> dict:
        out = {"cgroup": self.cgroup, "intervalSeconds": self.interval_s, "summary": self.summary,
               "node": self.node, "units": [_row_json(r) for r in self.rows], "warnings": self.warnings}
        if self.cpu_manager is not None:
            out["cpuManager"] = self.cpu_manager
        return out


def _row_json(r: Row) -> dict:
    d = asdict(r)
    d["oomScoreAdj"] = d.pop("oom_score_adj")
    d["oomKilled"] = d.pop("oom_killed")
    if d["cpus"] is None:  # cpuManagerPolicy none: nothing added
        del d["cpus"]
    return d


def _tree_order(rows: list[Row]) -> list[Row]:
    """Parents before children, depth first; Guaranteed pods before the tiers, as in the plan."""
    names = {r.unit for r in rows}
    kids: dict[str, list[Row]] = {}
    roots: list[Row] = []
    for r in rows:
        (kids.setdefault(r.parent, []) if r.parent in names else roots).append(r)
    out: list[Row] = []

    def walk(r: Row) -> None:
        out.append(r)
        for k in sorted(kids.get(r.unit, []), key=lambda k: k.kind == "tier"):
            walk(k)

    for r in roots:
        walk(r)
    return out


def _qos_of(u: UnitPlan, plan: Plan) -> str | None:
    o = u.owner
    if u.kind in ("pod", "container") and o is not None:
        pp = plan.pod(o.name)
        return pp.qos if pp else None
    if u.kind == "vm" and o is not None:
        return next((v.qos for v in plan.vms if v.vm.name == o.name), None)
    tier = parse_tier_slice(u.name) if u.kind == "tier" else None
    return QOS_OF_TIER[tier[1]] if tier is not None else None


def _label(u: UnitPlan) -> str:
    return u.description.removeprefix(MARK)  # shown, never parsed


class _Names(TypedDict, total=False):
    """Row's naming fields, as _names finds them (passed on as keywords)."""

    namespace: str | None
    pod: str | None
    container: str | None
    vm: str | None


def _names(u: UnitPlan, plan: Plan) -> _Names:
    """namespace/pod/container/vm of a unit, from the plan."""
    o = u.owner
    if o is None:
        return {}
    if o.kind == VM:
        return {"vm": o.name}
    ns, _, pod = o.name.partition("/")  # a pod's key: namespace/name
    return {"namespace": ns, "pod": pod, "container": o.container}


def matches(row: Row, namespace: str | None, pod: str | None) -> bool:
    """--namespace NS, --pod NAME or NS/NAME."""
    if pod is not None:
        ns, _, name = pod.rpartition("/")
        if row.pod != name or (ns and row.namespace != ns):
            return False
    return namespace is None or row.namespace == namespace


def only(status: "Status", namespace: str | None, pod: str | None) -> "Status":
    """The rows of matching pods and containers, with the node and tier rows above them."""
    if namespace is None and pod is None:
        return status
    by_unit = {r.unit: r for r in status.rows}
    keep: set[str] = set()
    for r in status.rows:
        if r.pod is not None and matches(r, namespace, pod):
            u: Row | None = r
            while u is not None and u.unit not in keep:
                keep.add(u.unit)
                u = by_unit.get(u.parent)
    rows = [r for r in status.rows if r.unit in keep]
    return Status(status.cgroup, rows, status.warnings, status.interval_s, summarize(rows, status.summary),
                  cpu_manager=status.cpu_manager)


def summarize(rows: list[Row], node: dict[str, int]) -> dict[str, int]:
    """The summary of the rows shown (a filtered view: its pods and units, not the node's);
    ``nodePods``/``nodeVms``: the node's, for the line's "of N"."""
    return {
        "units": len(rows),
        "running": sum(r.running for r in rows),
        "drift": sum("drift" in r.flags for r in rows),
        "flagged": sum(bool(r.flags) for r in rows),
        "pods": len({(r.namespace, r.pod) for r in rows if r.pod and r.kind in ("pod", "container")}),
        "vms": len({r.vm for r in rows if r.vm}),
        "nodePods": node.get("pods", 0),
        "nodeVms": node.get("vms", 0),
    }


def not_found(status: "Status", namespace: str | None, pod: str | None) -> str:
    """What --pod/--namespace named that status does not have: "no pod shop/nosuch", with the
    closest pod when one is near."""
    from sdqos.kube.manifests import closest

    keys = sorted({f"{r.namespace}/{r.pod}" for r in status.rows if r.pod})
    if pod is None:
        spaces = sorted({k.split("/")[0] for k in keys})
        hint = closest(namespace or "", spaces)
        return f"no pod in namespace {namespace}" + (f"; did you mean {hint!r}?" if hint else "")
    ns, _, name = pod.rpartition("/")
    ns = ns or namespace or ""
    wanted = f"{ns}/{name}" if ns else name
    hint = closest(wanted, keys if ns else [k.split("/", 1)[1] for k in keys])
    return f"no pod {wanted}" + (f"; did you mean {hint!r}?" if hint else "")


def _entitled(props: dict[str, int]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name, key in STATUS_KEYS.items():
        if name in props:
            out[key] = None if props[name] == INFINITY else props[name]
    mem = memory_limit(props)
    out["memoryLimit"] = None if mem == INFINITY else mem
    return out


def recorded_kept(last: dict) -> tuple[KeptPod, ...] | None:
    """The pod slices the last sync kept and counted (its record), None when it has none."""
    try:
        return tuple(KeptPod(**k) for k in last.get("kept") or ())
    except TypeError:
        return None


def recorded_adjustments(last: dict) -> tuple[Adjustment, ...]:
    """The adjustments (clamps) the last sync applied, from its record."""
    raw = last.get("adjustments")
    found = (Adjustment.from_json(a) for a in (raw if isinstance(raw, list) else ()))
    return tuple(a for a in found if a is not None)


async def collect(sd: SystemdAPI, plan: Plan, applied: dict, *, interval: float = 1.0, last: dict | None = None) -> Status:
    """``last``: the last sync's record (:func:`budget_record`): what it kept and adjusted. The
    rows are the desired state as that sync applied it (:mod:`sdqos.reconcile.desired`): its kept
    pods counted in their tiers, its clamps in (a clamp is no drift), flagged from those fields."""
    last = last or {}
    kept_why: dict[str, str] = dict(last.get("keptWhy") or {})
    warnings = list(plan.warnings)
    obs: Observation = await observe(sd, plan, applied, warnings, usage=True)
    warnings.extend(obs.errors)
    want = desired(plan, obs, kept=recorded_kept(last), recorded=recorded_adjustments(last))
    check_kernel(want, obs.live, obs.scopes)  # every unit read over D-Bus: its kernel files against what was set
    plan = want.plan
    rates = await _cpu_rates(sd, obs, interval)
    rows = _planned_rows(want, obs, rates, kept_why)
    rows += _kept_rows(want, obs, rates, kept_why, applied)
    rows += _foreign_rows(obs, rates)
    _flag_not_admitted(plan, obs, rows)
    if want.over_committed:
        for r in rows:
            if r.kind == "node":
                r.flags.append("over-committed")
    bound_vms = {u.owner.name for u in want.bound if u.kind == "vm" and u.owner}
    for vp in plan.vms:
        if vp.vm.name not in bound_vms:
            rows.append(Row(vp.scope or f"(vm {vp.vm.name})", "vm", "machine.slice", f"vm {vp.vm.name} ({vp.qos})",
                            vp.qos, False, _entitled(vp.properties), flags=["not-running"], vm=vp.vm.name))
    # A container that runs in a scope its runtime made (podman's libpod-<id>.scope) is shown there,
    # not also as the empty scope sdqos would have made for it.
    in_runtime = {(r.namespace, r.pod, r.container) for r in rows if r.kind == "container" and r.running}
    rows = [r for r in rows if not (r.kind == "container" and not r.running and parse_container_scope(r.unit) is not None
                                    and (r.namespace, r.pod, r.container) in in_runtime)]
    _mark_evicted(plan, rows)
    _mark_oom_kills(want.as_plan(), rows, {n: sc.cgroup for n, sc in obs.scopes.items()}, warnings)
    cpu_manager = mark_cpus(plan, rows, obs, warnings)  # cpuManagerPolicy static only
    rows = _tree_order(rows)
    summary = {
        "units": len(rows),
        "running": sum(r.running for r in rows),
        "drift": sum("drift" in r.flags for r in rows),
        "flagged": sum(bool(r.flags) for r in rows),
        "pods": len(plan.pods),
        "vms": len(plan.vms),
    }
    return Status(plan.cgroup, rows, warnings, interval, summary, node_pressure(plan), cpu_manager)


async def _cpu_rates(sd: SystemdAPI, obs: Observation, interval: float) -> dict[str, float | None]:
    """Each unit's CPU use in cores over ``interval`` seconds: systemd's counter where it has one,
    else the kernel's own (see facts.cpu_usage_ns). Nothing when ``interval`` is 0."""
    t0 = time.monotonic()
    from_kernel = {n for n, lu in obs.live.items() if lu.cpu_usage_ns is None and lu.exists}
    for n in from_kernel:
        obs.live[n].cpu_usage_ns = facts.cpu_usage_ns(obs.live[n].control_group)
    before = {n: lu.cpu_usage_ns for n, lu in obs.live.items() if lu.cpu_usage_ns is not None}
    rates: dict[str, float | None] = {}
    if interval <= 0 or not before:
        return rates
    await asyncio.sleep(interval)
    via_dbus = [n for n in before if n not in from_kernel]
    again = await sd.read_units(via_dbus, {SLICE: ["CPUUsageNSec"], SCOPE: ["CPUUsageNSec"]}) if via_dbus else {}
    dt = time.monotonic() - t0
    for n, v0 in before.items():
        v: int | None
        if n in from_kernel:
            v = facts.cpu_usage_ns(obs.live[n].control_group)
        else:
            after = again.get(n)
            v = after.props.get("CPUUsageNSec") if after else None
        if v is not None and int(v) < INFINITY:
            rates[n] = max(0.0, (int(v) - v0) / 1e9 / dt)
    return rates


def _planned_rows(want: Desired, obs: Observation, rates: dict[str, float | None], kept_why: dict[str, str]) -> list[Row]:
    """A row for every unit of the desired state, flagged from its fields and the live tree."""
    plan = want.plan
    clamped: dict[str, str] = {}
    for a in want.adjustments:
        clamped[a.unit] = f"{clamped[a.unit]}; {a.reason}" if a.unit in clamped else a.reason
    rows = []
    for u in want.units:
        lu = obs.live.get(u.name)
        running = bool(lu and lu.exists)
        parent = owning_slice(u.slice) if u.kind == "container" else u.slice  # a podman pod's sub-slice
        row = Row(u.name, u.kind, parent, _label(u), _qos_of(u, plan), running, _entitled(u.properties),
                  **_names(u, plan))
        if lu is not None and running:
            _flag_live(row, u, lu, rates.get(u.name))
            if u.name in clamped:
                row.flags.append(CLAMPED)
                row.reasons[CLAMPED] = clamped[u.name]
            if u.name in kept_why:
                row.flags.append("kept")
                row.reasons["kept"] = kept_why[u.name]
        elif u.create:
            row.flags.append("missing")
        scope = obs.scopes.get(u.name)
        if scope is not None:
            row.oom_score_adj = sorted({v for v in (procfs.read_oom_score_adj(p) for p in scope.pids) if v is not None})
            b = obs.bindings.get(u.name)
            if b is not None and row.oom_score_adj and row.oom_score_adj != [b.oom_score_adj]:
                row.flags.append("oom-score-off")
        rows.append(row)
    return rows


def _flag_live(row: Row, u: UnitPlan, lu: LiveUnit, rate: float | None) -> None:
    """A running unit's usage, its drift (systemd's properties, else the kernel's files) and how
    near its limits it runs."""
    row.usage = {"memoryBytes": lu.memory_current, "cpuCores": rate, "tasks": lu.tasks_current}
    row.drift = {p: [o, n] for p, (o, n) in unit_changes(u, lu).items()}
    if not row.drift and lu.kernel_drift:  # systemd holds the value, the cgroup does not
        row.drift = {f: [h, w] for f, (h, w) in lu.kernel_drift.items()}
    if row.drift:
        row.flags.append("drift")
    mem_limit = row.entitled.get("memoryLimit")
    if mem_limit and lu.memory_current is not None and lu.memory_current >= NEAR_LIMIT * mem_limit:
        row.flags.append("near-memory-limit")
    quota = row.entitled.get("cpuQuotaPerSecUSec")
    if quota and rate is not None and rate * 1e6 >= NEAR_LIMIT * quota:
        row.flags.append("near-cpu-limit")


def _kept_rows(want: Desired, obs: Observation, rates: dict[str, float | None], kept_why: dict[str, str],
               applied: dict) -> list[Row]:
    """Kept units outside the plan (their pod left it, or moved), named by the record sync kept."""
    plan = want.plan
    planned = set(want.by_name)
    keys = recorded_keys(applied) if kept_why else {}
    rows = []
    for name, why in sorted(kept_why.items()):
        lu = obs.live.get(name)
        if name in planned or name in obs.unmatched or lu is None or not lu.exists:
            continue
        sc = obs.scopes.get(name)
        parent = owning_slice(sc.slice) if sc is not None else parent_slice(name)
        kind = "container" if name.endswith(".scope") else "pod"
        o = recorded_owner(name, keys)  # whose it was: the record sync kept, and its name
        w = obs.runtime_managed.get(name)  # or a runtime's container: its labels say whose
        if o is None and w is not None and w.pod_uid:
            key = keys.get(w.pod_uid) or next((p.key for p in plan.pods if p.uid == w.pod_uid), None)
            o = Owner.pod(key, w.container) if key else None
        ns, _, pod = o.name.partition("/") if o is not None else ("", "", "")
        container = o.container if o is not None else None
        k = next((k for k in plan.kept if k.unit in (name, parent)), None)  # (a scope: its kept slice's class)
        rows.append(Row(name, kind, parent, lu.description.removeprefix(MARK) or name, k.qos if k else None, True,
                        _entitled(lu.props),
                        usage={"memoryBytes": lu.memory_current, "cpuCores": rates.get(name), "tasks": lu.tasks_current},
                        flags=["kept"], reasons={"kept": why}, namespace=ns or None, pod=pod or None,
                        container=container or None))
    return rows


def _foreign_rows(obs: Observation, rates: dict[str, float | None]) -> list[Row]:
    """Scopes in the tree that are not sdqos's, and what else runs in machine.slice (not sdqos's,
    but counted in the budget)."""
    rows = []
    for name in obs.unmatched:
        lu = obs.live.get(name) or LiveUnit(name)
        sc = obs.scopes[name]
        rows.append(Row(name, "foreign", sc.slice, lu.description or "not created by sdqos", None, True,
                        usage={"memoryBytes": lu.memory_current, "cpuCores": None, "tasks": lu.tasks_current},
                        flags=["foreign"]))
    for c in obs.machines:
        msc = obs.scopes.get(c.unit)
        if msc is None:
            continue
        lu = obs.live.get(c.unit) or LiveUnit(c.unit)
        counted = f"counted {H.size(c.memory)}" + ("" if c.bounded else " by its usage")
        rows.append(Row(c.unit, "foreign", msc.slice, f"{c.what}, not declared ({counted})", None, True,
                        usage={"memoryBytes": lu.memory_current, "cpuCores": rates.get(c.unit),
                               "tasks": lu.tasks_current}, flags=["undeclared"]))
    return rows


def mark_cpus(plan: Plan, rows: list[Row], obs: Observation, warnings: list[str]) -> dict | None:
    """cpuManagerPolicy static: each container's and VM's CPUs (its exclusive ones, a VM's by
    dedicatedCpuPlacement, else the shared pool) from the CPU manager's state file, and on cgroup
    v1, where they are the processes' affinity, a container's or VM's threads whose affinity differs
    (``drift``; a sync sets them again). On v2 the CPUs are the scope's AllowedCPUs, diffed as any
    property. Returns the node's view (status's ``cpuManager``); None, with nothing read or even
    imported, under policy none."""
    if plan.node.cpu_manager_policy != "static":
        return None
    from sdqos.errors import SdqosError
    from sdqos.host import cpustate
    from sdqos.kube import cpuset
    from sdqos.kube.cpumanager import VM_CONTAINER
    from sdqos.reconcile import cpus

    try:
        state = cpustate.load(cpus.policy_for(plan.node))
    except (SdqosError, OSError) as exc:
        warnings.append(f"cannot show the CPU manager's CPUs: {exc}")
        return None
    uids = {pp.key: pp.uid for pp in plan.pods}
    vm_uids = {vp.vm.name: vp.vm.uid for vp in plan.vms}
    for r in rows:
        if r.kind == "vm":  # a VM's entry: KubeVirt's virt-launcher container
            uid, container = vm_uids.get(r.vm or ""), VM_CONTAINER
        elif r.kind == "container" and r.container:
            uid, container = uids.get(f"{r.namespace}/{r.pod}"), r.container
        else:
            continue
        mine = state.get(uid, container) if uid is not None else None
        want = cpuset.CPUSet(mine if mine is not None else state.default_cpuset)
        r.cpus = {"cpus": str(want), "count": len(want), "exclusive": mine is not None, "affinityOff": {}}
        scope = obs.scopes.get(r.unit)
        if plan.cgroup != "v1" or scope is None or not r.running:
            continue
        for pid in scope.pids:
            for tid, allowed in procfs.thread_cpus(pid).items():
                if cpuset.parse(allowed) != want:
                    r.cpus["affinityOff"][str(tid)] = allowed
        if r.cpus["affinityOff"] and "drift" not in r.flags:
            r.flags.append("drift")
    return {"policy": state.policy_name, "sharedPool": str(state.default_cpuset),
            "exclusive": str(state.assigned()), "exclusiveCount": len(state.assigned()),
            "sharedPoolCount": len(state.default_cpuset)}


def node_pressure(plan: Plan, root=None, proc=None) -> dict | None:
    """The node's signals (memory.available, allocatableMemory.available, pid.available) against
    every threshold on them, and MemoryPressure/PIDPressure as kubelet's node conditions would read
    now (reconcile/evict.py's one look, without ranking workloads). None when they cannot be read."""
    from sdqos.errors import SdqosError
    from sdqos.host import pressure as hp
    from sdqos.kube.model import MEMORY
    from sdqos.reconcile import evict

    allocatable = plan.allocatable[MEMORY] if "pods" in plan.node.enforce_node_allocatable else None
    try:
        observations = hp.observe(plan.node, plan.cgroup, allocatable, root or hp.ROOT, proc or hp.PROC)
    except (OSError, ValueError, SdqosError):
        return None
    j = evict.as_json(evict.assess(plan, observations, {}, {}))
    return {"signals": j["signals"], "conditions": j["conditions"]}


def node_lines(node: dict | None) -> list[str]:
    """status's lines for the node: its conditions, then each signal against its thresholds."""
    if node is None:
        return []
    conds = " · ".join(f"{c}={'True' if on else 'False'}" for c, on in node["conditions"].items())
    out = [f"node: {conds}"]
    for sig in node["signals"]:
        if sig["available"] is None or not sig["thresholds"]:
            continue
        pid = sig["signal"] == "pid.available"
        amount = (lambda n: H.count(n)) if pid else H.size
        limits = ", ".join(
            ("hard" if t["hard"] else f"soft ({t['gracePeriodSeconds']:g}s)") + f" below {amount(t['amount'])}"
            + (" (crossed)" if t["met"] else "")
            for t in sig["thresholds"])
        out.append(f"  {sig['signal']} {amount(sig['available'])} of {amount(sig['capacity'])}: evicts at {limits}")
    return out


def _mark_evicted(plan: Plan, rows: list[Row]) -> None:
    """Flag `evicted` the pod and containers of a pod that node-pressure eviction stopped and that
    has not run again (sdqos/reconcile/evict.py's record in /run/sdqos)."""
    from sdqos.host import rundir
    from sdqos.reconcile import evict

    evicted = evict.still_evicted(plan, evict.load_evicted(rundir.DEFAULT_RUN_DIR))
    if not evicted:
        return
    running = {f"{r.namespace}/{r.pod}" for r in rows if r.kind == "container" and r.running}
    for r in rows:
        if r.kind in ("pod", "container") and f"{r.namespace}/{r.pod}" in evicted and f"{r.namespace}/{r.pod}" not in running:
            r.flags.append("evicted")


def _mark_oom_kills(plan: Plan, rows: list[Row], running: dict[str, str], warnings: list[str]) -> None:
    """The kills sync reported and any the kernel counted since (read only; see reconcile/oomwatch).
    Kills the kernel counted and its log never named (the log's rate limit dropped their report,
    or it cannot be read) are said as such."""
    from sdqos.host import oomevents
    from sdqos.reconcile import oomwatch

    result = oomwatch.observe_kills(plan, oomevents.load_record(), running)
    units = result.record["units"] if result is not None else {}
    for r in rows:
        st = units.get(r.unit)
        if st and st.get("total"):
            unnamed = int(st.get("unnamed") or 0)
            r.oom_killed = {"count": st["total"], "unnamed": unnamed, "last": st.get("last")}
            r.flags.append("oom-killed")
            if unnamed:
                who = f"{r.name} ({r.unit})" if r.name else r.unit
                warnings.append(f"{who}: {oomwatch.unnamed_text(unnamed)}")


# --- text -----------------------------------------------------------------------------------------
#
# One line per unit. When the table is wider than the terminal it gives way step by step, as
# kubectl and `systemctl list-units` do: names of pods and containers in place of their unit names;
# short values (1228/2 for shares and quota, 12G); no OOM column; unit names cut in the middle.
# Only when even that does not fit (below ~70 columns) does each unit take a few lines.

HEADERS = ["UNIT", "NAME", "CLASS", "CPU", "MEMORY", "USAGE", "OOM", "FLAGS"]
CPUS_HEADER = "CPUS"  # after CPU, only under cpuManagerPolicy static
MIN_UNIT_WIDTH = 28  # before pods and containers are shown by name instead of unit name
MIN_FOLDED_WIDTH = 14  # the narrowest the UNIT/NAME column gets before the block layout
_SHORT_CLASS = {"Guaranteed": "Guar", "Burstable": "Burst", "BestEffort": "BestEff"}


def _cpu_text(e: dict, compact: bool = False) -> str:
    """Entitled CPU: shares (v1) or weight (v2), and the quota as a number of CPUs (≤0.5 cpu);
    ``compact``: 1228/0.5 (v1), w39/0.5 (v2)."""
    if compact:
        share = (str(e["cpuShares"]) if e.get("cpuShares") is not None else
                 f"w{e['cpuWeight']}" if e.get("cpuWeight") is not None else "-")
        per_sec = e.get("cpuQuotaPerSecUSec")
        return f"{share}/{per_sec / 1e6:g}" if per_sec is not None else share
    share = f"{e['cpuShares']} sh" if e.get("cpuShares") is not None else (
        f"w {e['cpuWeight']}" if e.get("cpuWeight") is not None else "-")
    per_sec = e.get("cpuQuotaPerSecUSec")
    return f"{share} · ≤{per_sec / 1e6:g} cpu" if per_sec is not None else share


def _short_size(n: int) -> str:
    """12G, 256M, 11.5G: a size in at most 5 characters (binary units, as kubectl shows Mi/Gi)."""
    text = H.size(n)
    number, _, unit = text.partition(" ")
    if unit == "B":
        return f"{n}B"
    if "." in number and len(number) > 4:  # 511.9 → 512; 11.5 stays
        whole, frac = number.split(".")
        number = str(int(whole) + (frac >= "5"))
    return number + unit[0]


def _memory_text(r: Row, compact: bool) -> str:
    mem = r.entitled.get("memoryLimit")
    if r.kind == "foreign":
        return "-"
    if mem is None:
        return "-" if compact else "unlimited"
    return _short_size(mem) if compact else H.size(mem)


def _usage_text(r: Row, compact: bool = False) -> str:
    """Memory and CPU in use (tasks are in JSON)."""
    if not r.running:
        if r.kind == "container" and not compact:
            return "evicted" if "evicted" in r.flags else "no process"
        return "-"
    used, cores = r.usage.get("memoryBytes"), r.usage.get("cpuCores")
    if compact:
        mem = _short_size(int(used)) if used is not None else "?"
        cpu = f"{cores:.2f}" if cores is not None else "?"
        return f"{mem} {cpu}"
    mem = H.size(int(used)) if used is not None else "?"
    cpu = f"{cores:.2f} cpu" if cores is not None else "? cpu"
    return f"{mem} · {cpu}"


def drift_line(r: Row) -> str:
    """A drifted unit's values, live → planned (as `sdqos diff` shows them), and its threads
    whose CPU affinity is off (cpuManagerPolicy static on cgroup v1)."""
    from sdqos.cli.render import drift_text

    parts = []
    if r.drift:
        props = {k: v for k, v in r.drift.items() if k[:1].isupper()}
        files = {k: v for k, v in r.drift.items() if not k[:1].isupper()}
        parts.append(drift_text(props, files))
    if _affinity_off(r):
        parts.append(cpu_drift_text(r.cpus or {}))
    return f"drift (live → planned): {'; '.join(parts)}"


def _affinity_off(r: Row) -> dict[str, str]:
    return (r.cpus or {}).get("affinityOff") or {}


def _drifted(r: Row) -> bool:
    return bool(r.drift or _affinity_off(r))


def cpu_drift_text(cpus: dict) -> str:
    """``CPU affinity 0-1 → 1 (2 threads)``: the threads off their CPUs, by the affinity they have."""
    by_live: dict[str, int] = {}
    for allowed in cpus["affinityOff"].values():
        by_live[allowed] = by_live.get(allowed, 0) + 1
    return ", ".join(f"CPU affinity {live} → {cpus['cpus']} ({n} thread{'s' if n != 1 else ''})"
                     for live, n in sorted(by_live.items()))


def cpus_text(r: Row, compact: bool = False) -> str:
    """A container's or VM's CPUs: ``exclusive 2-3`` or ``shared pool 0-1`` (compact: ``2-3``,
    ``pool 0-1``); ``-`` for other units."""
    if r.cpus is None:
        return "-"
    if r.cpus["exclusive"]:
        return r.cpus["cpus"] if compact else f"exclusive {r.cpus['cpus']}"
    return f"{'pool' if compact else 'shared pool'} {r.cpus['cpus']}"


def _depths(rows: list[Row]) -> dict[str, int]:
    """Each row's depth in the tree (rows come parents first)."""
    depth: dict[str, int] = {}
    for r in rows:
        depth[r.unit] = depth.get(r.parent, -1) + 1
    return depth


def _cells(status: Status, depth: dict[str, int], *, folded: bool, compact: bool) -> list[list[str]]:
    step = " " if compact else "  "
    out = []
    for r in status.rows:
        first = r.name if folded and r.name else r.unit
        out.append([
            step * depth[r.unit] + first,
            "" if folded else (r.name or "-"),
            (_SHORT_CLASS.get(r.qos, r.qos) if compact else r.qos) if r.qos else r.kind,
            _cpu_text(r.entitled, compact) if r.kind != "foreign" else "-",
            *([cpus_text(r, compact)] if status.cpu_manager is not None else []),
            _memory_text(r, compact),
            _usage_text(r, compact),
            ",".join(map(str, r.oom_score_adj)) or "-",
            " ".join(r.flags) or "ok",
        ])
    return out


def _headers(status: Status) -> list[str]:
    """The columns: CPUS after CPU only when the CPU manager's view is there (policy static)."""
    headers = list(HEADERS)
    if status.cpu_manager is not None:
        headers.insert(headers.index("CPU") + 1, CPUS_HEADER)
    return headers


def _fit_first(cells: list[list[str]], status: Status, depth: dict[str, int], room: int, step: str) -> None:
    for row, r in zip(cells, status.rows):
        indent = step * depth[r.unit]
        row[0] = indent + ellipsize(row[0][len(indent):], max(room, 1) - len(indent))


def table(status: Status, width: int | None = None) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of UNIT, NAME, CLASS, CPU, MEMORY, USAGE, OOM, FLAGS, the unit indented by
    tree depth; with ``width``, narrowed step by step (see above) until it fits, if it can. Empty
    columns (NAME when folded into UNIT, OOM when dropped) are left out by the renderer."""
    depth = _depths(status.rows)
    headers = _headers(status)
    cells = _cells(status, depth, folded=False, compact=False)
    if width is None or not cells:
        return headers, cells

    def widths(rows: list[list[str]]) -> list[int]:
        return [max([len(h)] + [len(row[i]) for row in rows]) if any(row[i] for row in rows) else 0
                for i, h in enumerate(headers)]

    def total(rows: list[list[str]]) -> int:
        w = [x for x in widths(rows) if x]
        return sum(w) + 2 * (len(w) - 1)

    if total(cells) <= width:
        return headers, cells
    room = width - (total(cells) - widths(cells)[0])  # what the unit column may have
    if room >= MIN_UNIT_WIDTH:  # unit names cut in the middle, names beside them
        _fit_first(cells, status, depth, room, "  ")
        return headers, cells
    headers[:2] = ["UNIT/NAME", ""]
    for folded_cells in (_cells(status, depth, folded=True, compact=False), None):
        cells = folded_cells or _cells(status, depth, folded=True, compact=True)
        if folded_cells is None:
            oom = headers.index("OOM")
            headers[oom] = ""
            for row in cells:
                row[oom] = ""  # the OOM column goes first (status -o json and explain have it)
        if total(cells) <= width:
            return headers, cells
        room = width - (total(cells) - widths(cells)[0])
        if room >= MIN_FOLDED_WIDTH + 2 * max(depth.values()):
            _fit_first(cells, status, depth, room, " " if folded_cells is None else "  ")
            return headers, cells
    return headers, cells  # does not fit: the caller uses the block layout


_RED = ("drift", "missing", "oom-score-off")


def _colored(flags: str) -> str:
    code = "32" if flags == "ok" else ("31" if any(f in flags for f in _RED) else "33")
    return f"\x1b[{code}m{flags}\x1b[0m"


def _blocks(status: Status, width: int, color: bool) -> list[str]:
    """The narrow layout (a terminal too narrow for any table): each unit as a few lines — its
    name, class and flags; its unit name; its values, wrapped between values — each fitted to
    ``width``."""
    depth = _depths(status.rows)
    lines = []
    for r in status.rows:
        pad = "  " * depth[r.unit]
        room = max(20, width - len(pad) - 2)
        flags = " ".join(r.flags) or "ok"
        head = f"{pad}{r.name or r.unit}  {r.qos or r.kind}"
        shown_flags = _colored(flags) if color else flags
        if len(head) + 2 + len(flags) <= width:
            lines.append(f"{head}  {shown_flags}")
        else:
            lines += [ellipsize(head, width), f"{pad}  {shown_flags}"]
        if r.name:
            lines.append(pad + "  " + ellipsize(r.unit, room))
        oom = ",".join(map(str, r.oom_score_adj))
        values = [f"cpu {_cpu_text(r.entitled)}", *([f"cpus {cpus_text(r)}"] if r.cpus else []),
                  f"memory {_memory_text(r, False)}",
                  f"using {_usage_text(r)}"] + ([f"oom {oom}"] if oom else [])
        line = ""
        for v in values:  # wrap between values, never inside one
            if line and len(line) + 3 + len(v) > room:
                lines.append(pad + "  " + line)
                line = v
            else:
                line = f"{line} · {v}" if line else v
        lines.append(pad + "  " + line)
        if _drifted(r):
            lines.append(pad + "  " + drift_line(r))
    return lines


def render_plain(status: Status, width: int | None = None, color: bool = False) -> str:
    """The table, one line per unit (and one more under a drifted unit: live → planned), fitted to
    ``width`` columns when given, else a few lines a unit; flags colored for a terminal; a
    summary line and the warnings."""
    headers, cells = table(status, width)
    rows = [headers] + cells
    shown = [i for i, h in enumerate(headers) if h or any(row[i] for row in cells)]
    widths = {i: max(len(row[i]) for row in rows) for i in shown}
    lines = ["  ".join(row[i].ljust(widths[i]) for i in shown).rstrip() for row in rows]
    if width is not None and any(len(ln) > width for ln in lines):
        lines = _blocks(status, width, color)
    else:
        if color:
            lines[1:] = [ln[: len(ln) - len(row[-1])] + _colored(row[-1]) for ln, row in zip(lines[1:], cells)]
        out = lines[:1]
        for ln, r in zip(lines[1:], status.rows):
            out.append(ln)
            if _drifted(r):
                indent = len(ln) - len(ln.lstrip(" ")) + 2
                out.append(" " * indent + "↳ " + drift_line(r))  # whole: wraps if it must
        lines = out
    s = status.summary
    lines.append("")
    pods, vms = f"{s['pods']}", f"{s['vms']}"
    if "nodePods" in s:  # a filtered view: its own numbers, and the node's pods and VMs beside them
        pods, vms = f"{pods} of {s['nodePods']}", f"{vms} of {s['nodeVms']}"
    lines.append(f"{pods} pods · {vms} VMs · {s['running']}/{s['units']} units running · "
                 f"{s['drift']} drifted · {s['flagged']} flagged")
    lines += node_lines(status.node)
    lines += [f"warning: {w}" for w in status.warnings]
    return "\n".join(lines)
