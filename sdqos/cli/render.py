"""The plan for people (a tree like ``systemd-cgls``) and for programs (the JSON contract).

The JSON keys are a contract other tools rely on: ``cgroup``, ``node.capacity``,
``node.allocatable``, ``units[].{name,slice,kind,description,properties}``,
``pods[].{name,namespace,uid,qos,slice,containers[].{name,oomScoreAdj,properties,oomPolicy,create}}``,
``units[].create`` (what systemd gets when sdqos creates the unit), ``eviction`` (the thresholds in
force), ``warnings``.
Property names and values are exactly what goes over D-Bus.
"""

from __future__ import annotations



from sdqos import humanize as H
from sdqos.kube.model import CPU, MEMORY, PID
from sdqos.kube.naming import MARK, VM
from sdqos.plan.engine import Plan, UnitPlan, cpu_allocatable_formula
from sdqos.plan import properties as P

_SHOWN = P.SUMMARY


def cpu_quantity(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def bytes_quantity(n: int) -> str:
    for suffix, factor in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n and n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def resources_json(values: dict[str, int]) -> dict[str, str]:
    """cpu/memory/pid ints as Kubernetes quantity strings, as Node.status shows them."""
    out = {}
    if CPU in values:
        out["cpu"] = cpu_quantity(values[CPU])
    if MEMORY in values:
        out["memory"] = bytes_quantity(values[MEMORY])
    if PID in values:
        out["pid"] = str(values[PID])
    return out


_FIELD = {"evictionHard": "eviction_hard", "evictionSoft": "eviction_soft"}


def eviction_json(plan: Plan) -> dict:
    """The eviction settings in force (node.yaml read as kubelet reads it: evictionHard's default,
    the allocatable copies of hard memory thresholds), for ``plan``."""
    from sdqos.kube import eviction as ev
    from sdqos.kube.nodeconfig import DEFAULT_EVICTION_HARD

    cfg = ev.config_of(plan.node)

    def tv(v):
        if v is None:
            return None
        return {"quantity": v.quantity} if v.quantity is not None else {"percentage": str(v)}

    def origin(t) -> str:
        if t.signal == ev.ALLOCATABLE_MEMORY_AVAILABLE and t.signal not in getattr(plan.node, _FIELD[t.declared_in]):
            return f"copied from {t.declared_in} memory.available: enforceNodeAllocatable has pods"
        if t.declared_in == "evictionSoft":
            return "evictionSoft" if not t.hard else "evictionSoft with grace period 0: hard"
        return "evictionHard, kubelet's default" if dict(plan.node.eviction_hard) == DEFAULT_EVICTION_HARD \
            else "evictionHard"
    return {
        "thresholds": [{"signal": t.signal, "hard": t.hard, "value": tv(t.value), "from": origin(t),
                        "gracePeriodSeconds": t.grace_period_ns / 1e9, "minimumReclaim": tv(t.min_reclaim)}
                       for t in cfg.thresholds],
        "maxPodGracePeriodSeconds": cfg.max_pod_grace_period,
        "pressureTransitionPeriodSeconds": cfg.pressure_transition_period_ns / 1e9,
    }


def eviction_text(plan: Plan) -> list[str]:
    """``eviction_json`` in words: one line per threshold, short enough for an 80-column terminal."""
    doc = eviction_json(plan)
    out = ["eviction thresholds in force (docs/eviction.md)"]

    def amount(signal: str, v: dict | None) -> str:
        if v is None:
            return "-"
        if "percentage" in v:
            return v["percentage"]
        return str(v["quantity"]) if signal == "pid.available" else bytes_quantity(v["quantity"])
    for t in doc["thresholds"]:
        if not t["hard"]:
            kind = f"soft, after {t['gracePeriodSeconds']:g}s"
        elif t["from"].startswith("copied"):
            kind = "hard (copy of memory.available)"
        elif t["from"].startswith("evictionSoft"):
            kind = "hard (evictionSoft, grace period 0)"
        else:
            kind = "hard (kubelet's default)" if "default" in t["from"] else "hard"
        out.append(f"  {t['signal']} < {amount(t['signal'], t['value'])}  {kind}")
        if t["minimumReclaim"]:
            out.append(f"    minimum reclaim {amount(t['signal'], t['minimumReclaim'])}")
    if not doc["thresholds"]:
        out.append("  none (evictionHard is empty)")
    out.append(f"  evictionMaxPodGracePeriod {doc['maxPodGracePeriodSeconds']}s, "
               f"evictionPressureTransitionPeriod {doc['pressureTransitionPeriodSeconds']:g}s")
    return out


def _create(plan: Plan, u: UnitPlan) -> dict | None:
    """What systemd gets when sdqos creates the unit (sync for slices, run/adopt for container
    scopes: plan/creation.py, the function they use); None for a unit sdqos never creates."""
    from sdqos.plan.creation import create_properties, grace_period_us

    if u.kind == "container":
        pp = next((p for p in plan.pods if p.slice == u.slice), None)
        return create_properties(u, grace_period_us(pp.grace_period if pp is not None else None))
    return create_properties(u) if u.create else None


def plan_json(plan: Plan, errors: list[str] | None = None) -> dict:
    from sdqos.plan.creation import create_properties, grace_period_us
    from sdqos.plan.properties import oom_policy

    pods = []
    for pp in plan.pods:
        pods.append(
            {
                "name": pp.pod.name,
                "namespace": pp.pod.namespace,
                "uid": pp.uid,
                "qos": pp.qos,
                "slice": pp.slice,
                "source": str(pp.pod.source) if pp.pod.source else None,
                "requests": resources_json(pp.requests),
                "limits": resources_json(pp.limits),
                "properties": pp.properties,
                "containers": [
                    {
                        "name": c.name,
                        "kind": c.kind,
                        "scope": c.scope,
                        "oomScoreAdj": c.oom_score_adj,
                        "properties": c.properties,
                        "oomPolicy": oom_policy(c.resources),
                        "create": create_properties(u, grace_period_us(pp.grace_period))
                        if (u := plan.unit(c.scope)) is not None else None,
                    }
                    for c in pp.containers
                ],
            }
        )
    vms = [
        {
            "name": v.vm.name,
            "qos": v.qos,
            "scope": v.scope,
            "requests": resources_json(v.requests),
            "limits": resources_json(v.limits),
            "oomScoreAdj": v.oom_score_adj,
            "properties": v.properties,
        }
        for v in plan.vms
    ]
    return {
        "cgroup": plan.cgroup,
        "node": {
            "capacity": resources_json(plan.capacity),
            "allocatable": resources_json(plan.allocatable),
            "pods": resources_json(plan.pods_budget),
            "vms": resources_json(plan.vm_reserved),
            "reservedSystemCPUs": plan.node.reserved_system_cpus,
        },
        "notAdmitted": {key: {"reason": r.reason, "message": r.message} for key, r in plan.not_admitted.items()},
        "units": [
            {"name": u.name, "slice": u.slice, "kind": u.kind, "description": u.description, "properties": u.properties,
             "create": _create(plan, u)}
            for u in plan.units
        ],
        "pods": pods,
        "vms": vms,
        "machines": [  # what else the last sync found running in machine.slice, and counted
            {"unit": m.unit, "what": m.what, "cpu": H.cpu(m.cpu), "memory": m.memory, "bounded": m.bounded,
             "limit": m.limit}
            for m in plan.machines
        ],
        "eviction": eviction_json(plan),
        "warnings": list(plan.warnings),
        "errors": list(errors or []),
    }


def props_text(props: dict[str, int]) -> str:
    return " · ".join(P.shown(k, props[k]) for k in _SHOWN if k in props)


def _label(u: UnitPlan, ooms: dict[str, int]) -> str:
    if u.kind == "node":
        return "node allocatable for pods"
    if u.kind == "tier":
        return u.description.removeprefix(MARK)  # (a Description shown, never parsed)
    if u.kind == "pod":
        return u.description.removeprefix(f"{MARK}pod ")
    if u.kind == "container" and u.owner is not None:
        return f"{u.owner.name}/{u.owner.container} · oom_score_adj {ooms.get(u.name)}"
    if u.kind == "machine":
        return "VMs"
    return u.description


def _oom_by_scope(plan: Plan) -> dict[str, int]:
    return {c.scope: c.oom_score_adj for pp in plan.pods for c in pp.containers}


def tree_lines(plan: Plan, units: list[UnitPlan] | None = None, color: bool = False,
               width: int | None = None) -> list[str]:
    """The unit tree, children under parents, each line with its label and values. ``width`` (a
    terminal's): a line that does not fit gets its unit name shortened in the middle and its values
    on a line of their own below it."""
    units = units if units is not None else plan.units
    names = {u.name for u in units}
    children: dict[str, list[UnitPlan]] = {}
    roots: list[UnitPlan] = []
    for u in units:
        if u.slice in names:
            children.setdefault(u.slice, []).append(u)
        else:
            roots.append(u)
    lines: list[str] = []
    ooms = _oom_by_scope(plan)
    width = width or 0  # 0 or None: no terminal, every unit on one line

    def emit(u: UnitPlan, prefix: str, last: bool) -> None:
        # Guaranteed pods first, then the tiers, as systemd-cgls lists them.
        kids = sorted(children.get(u.name, []), key=lambda k: k.kind == "tier")
        sub = prefix + ("  " if last else "│ ")
        head, label, values = f"{prefix}{'└─' if last else '├─'}", _label(u, ooms), f"[{props_text(u.properties)}]"
        name = u.name
        one_line = len(head) + len(name) + len(label) + len(values) + 4 <= width if width else True
        if not one_line:
            name = H.ellipsize(name, max(24, width - len(head) - len(label) - 2))
        shown = f"\x1b[1m{name}\x1b[0m" if color else name
        if one_line:
            lines.append(f"{head}{shown}  {label}  {values}")
        else:  # the label shortened too where even a short name leaves no room for it
            room = max(8, width - len(head) - len(name) - 2)
            lines.append(f"{head}{shown}  {H.ellipsize(label, room)}")
            cont = f"{sub}{'│ ' if kids else '  '}"
            lines.append(cont + H.ellipsize(values, max(8, width - len(cont))))
        for i, k in enumerate(kids):
            emit(k, sub, i == len(kids) - 1)

    by_parent: dict[str, list[UnitPlan]] = {}
    for r in roots:
        by_parent.setdefault(r.slice, []).append(r)
    for parent, rs in by_parent.items():
        lines.append(parent)
        for i, r in enumerate(rs):
            emit(r, "", i == len(rs) - 1)
    return lines


def plan_text(plan: Plan, errors: list[str] | None = None, color: bool = False, width: int | None = None) -> str:
    cap, alloc, budget = plan.capacity, plan.allocatable, plan.pods_budget
    head = [
        f"cgroup {plan.cgroup} · {len(plan.pods)} pods · {len(plan.vms)} VMs",
        f"node capacity    {H.cpu(cap[CPU])} CPU, {H.size(cap[MEMORY])}, {cap[PID]} pids",
        f"node allocatable {H.cpu(alloc[CPU])} CPU, {H.size(alloc[MEMORY])}, {alloc[PID]} pids",
    ]
    if plan.node.reserved_system_cpus:
        head.append(f"  cpu: {cpu_allocatable_formula(plan.node)}")
    if plan.vms:
        head.append(
            f"VMs reserve      {H.cpu(plan.vm_reserved[CPU])} CPU, {H.size(plan.vm_reserved[MEMORY])};"
            f" pods get {H.cpu(budget[CPU])} CPU, {H.size(budget[MEMORY])}"
        )
    if plan.machines:  # the budget sync applied: what it found running in machine.slice besides VMs
        m = plan.machines
        head.append(f"machine.slice    + {len(m)} unit(s) counted by the last sync: "
                    f"{H.cpu(sum(x.cpu for x in m))} CPU, {H.size(sum(x.memory for x in m))}")
    out = head + [""] + tree_lines(plan, color=color, width=width)
    for i, v in enumerate(plan.vms):
        if v.vm.libvirt_domain:
            where = f"machine-qemu\\x2d<id>\\x2d{v.vm.libvirt_domain}.scope (libvirt domain)"
        elif v.vm.pid_file:
            where = f"the scope holding the PID in {v.vm.pid_file}"
        else:
            where = str(v.scope)  # always known without a domain or a pidFile (engine._vm_plan)
        branch = "└─" if i == len(plan.vms) - 1 else "├─"
        out.append(f"  {branch}{where}  vm {v.vm.name} ({v.qos}) · oom_score_adj {v.oom_score_adj}"
                   f"  [{props_text(v.properties)}]")
    out += [""] + eviction_text(plan)
    for w in plan.warnings:
        out.append(f"warning: {w}")
    for e in errors or []:
        out.append(f"error: {e}")
    return "\n".join(out)


# --- sync reports --------------------------------------------------------------------------------

def who(plan: Plan | None, unit: str, whose: str | None = None) -> str:
    """The pod, container or VM a unit is for, as people name it (``shop/db``, ``shop/web/nginx``,
    ``vm db1``): its owner in the plan, or ``whose`` (what sync knew of a unit that left it); "" if neither."""
    u = plan.unit(unit) if plan is not None else None
    if u is not None:
        o = u.owner
        if o is None:
            return ""
        if o.kind == VM:
            return f"vm {o.name}"
        return f"{o.name}/{o.container}" if o.container else o.name
    return whose or ""


def _named(plan: Plan | None, unit: str, whose: dict[str, str]) -> str:
    name = who(plan, unit, whose.get(unit))
    return f"{unit} ({name})" if name else unit


def drift_text(changes: dict, kernel: dict) -> str:
    """What drifted, live → planned: systemd's properties, else the kernel files that differ."""
    props = ", ".join(f"{p} {P.change(p, o, n)}" for p, (o, n) in changes.items())
    return props or _files_text(kernel) or "a kernel file differed from systemd's value"


def _files_text(kernel: dict, what: str = "") -> str:
    """``cpu.shares 77 → 512`` (``what``: ``container cpuset.cpus 0 → 0-1``)."""
    return ", ".join(f"{what}{f.split('/')[-1]} {H.change(f, o, n, kernel=True)}" for f, (o, n) in kernel.items())


def beside_text(entry: dict) -> str:
    """What a sync changed beside a unit's properties (reconcile.report.Report.note_update): a
    runtime's own cgroup below its scope (``container cpuset.cpus 0 → 0-1``) and, cgroup v1 under
    the static CPU manager, its threads' CPUs (``CPU affinity 0-1 → 1 (2 threads)``)."""
    parts = [_files_text(entry.get("container") or {}, "container ")]
    aff = entry.get("affinity") or {}
    parts += [f"CPU affinity {old} → {aff['cpus']} ({n} thread{'s' if n != 1 else ''})"
              for old, n in (aff.get("threads") or {}).items()]
    return ", ".join(p for p in parts if p)


def sync_text(report, plan: Plan | None = None, *, verbose: bool = False, quiet: bool = False,
              warnings: list[str] | None = None) -> str:
    """A sync report for people. First what was *not* applied and why, then what changed (each
    pod or container named next to its unit; a dry run shows the values new units would get),
    drift, warnings. ``quiet`` (the timer): nothing at all when nothing changed and nothing is
    wrong; ``warnings`` replaces the report's own (the timer passes only new ones)."""
    warnings = report.warnings if warnings is None else warnings
    descriptions = report.whose
    would = report.dry_run
    lines: list[str] = []
    def n(items, noun: str) -> str:
        return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"

    held = []
    if report.invalid:
        held.append(f"{n(report.invalid, 'invalid input')} (exit 2)")
    if report.kept:
        held.append(f"{n(report.kept, 'unit')} kept (see warnings)")
    if report.foreign:
        held.append(f"{n(report.foreign, 'foreign unit')} left alone")
    if report.aborted:
        held.insert(0, "nothing was changed")
    errors = n(report.errors, "error") if report.errors else ""
    if held:
        lines.append("not applied: " + "; ".join(held) + (f"; {errors}" if errors else "") + " — details below")
    elif errors:
        lines.append(f"{errors} — details below")
    held = held or ([errors] if errors else [])
    if not report.changed and not report.drift:
        if quiet and not held and not warnings:
            return ""
        if not held:
            lines.append(f"nothing to do: {len(report.unchanged)} units already match the plan")
        else:
            lines.append(f"no changes; {len(report.unchanged)} units match the plan")
    else:
        v = "would be " if would else ""
        lines.append(f"{len(report.created)} {v}created, {len(report.updated)} {v}updated, "
                     f"{len(report.removed)} {v}removed, {len(report.reset)} {v}reset, "
                     f"{len(report.unchanged)} unchanged" + (" (dry run: nothing was changed)" if would else ""))
    verbs = ({"created": "create", "updated": "update", "removed": "remove", "reset": "reset"} if would else
             {"created": "created", "updated": "updated", "removed": "removed", "reset": "reset"})
    for name in report.created:
        lines.append(f"  {verbs['created']:<8} {_named(plan, name, descriptions)}")
        u = plan.unit(name) if plan is not None and would else None
        if u is not None:
            lines.append(f"           {props_text(u.properties)}")
    for u in report.updated:
        changes = ", ".join([f"{p} {P.change(p, o, n)}" for p, (o, n) in u["changes"].items()]
                            + ([beside] if (beside := beside_text(u)) else []))
        lines.append(f"  {verbs['updated']:<8} {_named(plan, u['unit'], descriptions)}" + (f": {changes}" if changes else ""))
    for name in report.removed:
        lines.append(f"  {verbs['removed']:<8} {_named(plan, name, descriptions)}")
    for name in report.containers_removed:
        lines.append(f"  {verbs['removed']:<8} podman container {name}")
    for name in report.reset:
        lines.append(f"  {verbs['reset']:<8} {_named(plan, name, descriptions)} (it had failed)")
    for d in report.drift:
        detail = ", ".join(x for x in (drift_text(d.get("changes") or {}, d.get("kernel") or {}), beside_text(d)) if x)
        done = "sync would set it back" if would else "restored"
        lines.append(f"  drift    {_named(plan, d['unit'], descriptions)}: {detail} (changed outside sdqos; {done})")
    for name in report.kept:
        why = getattr(report, "kept_why", {}).get(name)
        lines.append(f"  kept     {_named(plan, name, descriptions)}" + (f": {why}" if why else ""))
    for name in report.foreign:
        lines.append(f"  foreign  {name} (not created by sdqos; left alone)")
    if verbose:
        for name in report.unchanged:
            lines.append(f"  ok       {_named(plan, name, descriptions)}")
    for w in warnings:
        lines.append(f"warning: {w}")
    if not quiet or report.changed:
        lines.append(f"({report.duration_s:.2f}s, {report.dbus_calls} D-Bus calls)")
    return "\n".join(lines)
