"""The plan for people (a tree like ``systemd-cgls``) and for programs (the JSON contract).

The JSON keys are a contract other tools rely on: ``cgroup``, ``node.capacity``,
``node.allocatable``, ``units[].{name,slice,kind,description,properties}``,
``pods[].{name,namespace,uid,qos,slice,containers[].{name,oomScoreAdj,properties}}``, ``warnings``.
Property names and values are exactly what goes over D-Bus.
"""

from __future__ import annotations

from sdqos import humanize as H
from sdqos.kube.model import CPU, MEMORY, PID
from sdqos.plan.engine import Plan, UnitPlan

_SHOWN = ("CPUShares", "CPUWeight", "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec", "MemoryLimit", "MemoryMax",
          "MemoryHigh", "MemoryLow", "MemoryMin", "TasksMax")


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


def plan_json(plan: Plan, errors: list[str] | None = None) -> dict:
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
        },
        "units": [
            {"name": u.name, "slice": u.slice, "kind": u.kind, "description": u.description, "properties": u.properties}
            for u in plan.units
        ],
        "pods": pods,
        "vms": vms,
        "warnings": list(plan.warnings),
        "errors": list(errors or []),
    }


def props_text(props: dict[str, int]) -> str:
    return " · ".join(H.prop(k, props[k]) for k in _SHOWN if k in props)


def _label(u: UnitPlan, ooms: dict[str, int]) -> str:
    if u.kind == "node":
        return "node allocatable for pods"
    if u.kind == "tier":
        return u.description.replace("sdqos ", "")
    if u.kind == "pod":
        return u.description.replace("sdqos pod ", "")
    if u.kind == "container":
        name = u.description.replace("sdqos container ", "").split(" (")[0].rsplit("/", 1)[-1]
        return f"{name} · oom_score_adj {ooms.get(u.name)}"
    if u.kind == "machine":
        return "VMs"
    return u.description


def _oom_by_scope(plan: Plan) -> dict[str, int]:
    return {c.scope: c.oom_score_adj for pp in plan.pods for c in pp.containers}


def tree_lines(plan: Plan, units: list[UnitPlan] | None = None, color: bool = False) -> list[str]:
    """The unit tree, children under parents, each line with its label and values."""
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

    def emit(u: UnitPlan, prefix: str, last: bool) -> None:
        name = f"\x1b[1m{u.name}\x1b[0m" if color else u.name
        lines.append(f"{prefix}{'└─' if last else '├─'}{name}  {_label(u, ooms)}  [{props_text(u.properties)}]")
        # Guaranteed pods first, then the tiers, as systemd-cgls lists them.
        kids = sorted(children.get(u.name, []), key=lambda k: k.kind == "tier")
        sub = prefix + ("  " if last else "│ ")
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


def plan_text(plan: Plan, errors: list[str] | None = None, color: bool = False) -> str:
    cap, alloc, budget = plan.capacity, plan.allocatable, plan.pods_budget
    head = [
        f"cgroup {plan.cgroup} · {len(plan.pods)} pods · {len(plan.vms)} VMs",
        f"node capacity    {H.cpu(cap[CPU])} CPU, {H.size(cap[MEMORY])}, {cap[PID]} pids",
        f"node allocatable {H.cpu(alloc[CPU])} CPU, {H.size(alloc[MEMORY])}, {alloc[PID]} pids",
    ]
    if plan.vms:
        head.append(
            f"VMs reserve      {H.cpu(plan.vm_reserved[CPU])} CPU, {H.size(plan.vm_reserved[MEMORY])};"
            f" pods get {H.cpu(budget[CPU])} CPU, {H.size(budget[MEMORY])}"
        )
    out = head + [""] + tree_lines(plan, color=color)
    for i, v in enumerate(plan.vms):
        if v.vm.libvirt_domain:
            where = f"machine-qemu\\x2d<id>\\x2d{v.vm.libvirt_domain}.scope (libvirt domain)"
        elif v.vm.pid_file:
            where = f"the scope holding the PID in {v.vm.pid_file}"
        else:
            where = v.scope
        branch = "└─" if i == len(plan.vms) - 1 else "├─"
        out.append(f"  {branch}{where}  vm {v.vm.name} ({v.qos}) · oom_score_adj {v.oom_score_adj}"
                   f"  [{props_text(v.properties)}]")
    for w in plan.warnings:
        out.append(f"warning: {w}")
    for e in errors or []:
        out.append(f"error: {e}")
    return "\n".join(out)
