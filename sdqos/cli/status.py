"""``sdqos status``: who is in which tier, what they are entitled to, what they use, what is off.

Reads the live tree through the same observation as ``sync`` (a few D-Bus calls), then the CPU
counters a second time after ``interval`` seconds for a usage rate, and the OOM score of each
process from ``/proc``. Nothing is written.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field

from sdqos.host import facts, procfs
from sdqos.host.systemd import SCOPE, SLICE, Systemd
from sdqos.plan.engine import Plan, UnitPlan
from sdqos.plan.properties import INFINITY, memory_limit
from sdqos.reconcile.diff import LiveUnit, unit_changes
from sdqos.reconcile.live import Observation, observe

NEAR_LIMIT = 0.9  # usage at or above 90 % of a limit is flagged


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
    drift: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Status:
    cgroup: str
    rows: list[Row]
    warnings: list[str]
    interval_s: float
    summary: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"cgroup": self.cgroup, "intervalSeconds": self.interval_s, "summary": self.summary,
                "units": [_row_json(r) for r in self.rows], "warnings": self.warnings}


def _row_json(r: Row) -> dict:
    d = asdict(r)
    d["oomScoreAdj"] = d.pop("oom_score_adj")
    return d


def _tree_order(rows: list[Row]) -> list[Row]:
    """Parents before children, depth first; Guaranteed pods before the tiers, as in the plan."""
    names = {r.unit for r in rows}
    kids: dict[str, list[Row]] = {}
    roots = []
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
    if u.kind in ("pod", "container") and u.owner:
        key = u.owner.split(":", 1)[1]
        pp = plan.pod(key)
        return pp.qos if pp else None
    if u.kind == "vm" and u.owner:
        name = u.owner.split(":", 1)[1]
        return next((v.qos for v in plan.vms if v.vm.name == name), None)
    if u.kind == "tier":
        return u.description.split()[1]
    return None


def _label(u: UnitPlan) -> str:
    return u.description.removeprefix("sdqos ")


def _entitled(props: dict[str, int]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name, key in (("CPUShares", "cpuShares"), ("CPUWeight", "cpuWeight"), ("CPUQuotaPerSecUSec", "cpuQuotaPerSecUSec"),
                      ("TasksMax", "tasksMax")):
        if name in props:
            out[key] = None if props[name] == INFINITY else props[name]
    mem = memory_limit(props)
    out["memoryLimit"] = None if mem == INFINITY else mem
    return out


async def collect(sd: Systemd, plan: Plan, applied: dict, *, interval: float = 1.0) -> Status:
    warnings = list(plan.warnings)
    obs: Observation = await observe(sd, plan, applied, warnings, usage=True)
    t0 = time.monotonic()
    # systemd's counter where it has one, else the kernel's own (see facts.cpu_usage_ns).
    from_kernel = {n for n, lu in obs.live.items() if lu.cpu_usage_ns is None and lu.exists}
    for n in from_kernel:
        obs.live[n].cpu_usage_ns = facts.cpu_usage_ns(obs.live[n].control_group)
    before = {n: lu.cpu_usage_ns for n, lu in obs.live.items() if lu.cpu_usage_ns is not None}
    rates: dict[str, float | None] = {}
    if interval > 0 and before:
        await asyncio.sleep(interval)
        via_dbus = [n for n in before if n not in from_kernel]
        again = await sd.read_units(via_dbus, {SLICE: ["CPUUsageNSec"], SCOPE: ["CPUUsageNSec"]}) if via_dbus else {}
        dt = time.monotonic() - t0
        for n, v0 in before.items():
            if n in from_kernel:
                v = facts.cpu_usage_ns(obs.live[n].control_group)
            else:
                after = again.get(n)
                v = after.props.get("CPUUsageNSec") if after else None
            if v is not None and int(v) < INFINITY:
                rates[n] = max(0.0, (int(v) - v0) / 1e9 / dt)
    rows = []
    clamp_msgs = {w.split(":", 1)[0] for w in warnings if "clamped to current usage" in w}
    for u in plan.units:
        lu = obs.live.get(u.name)
        running = bool(lu and lu.exists)
        row = Row(u.name, u.kind, u.slice, _label(u), _qos_of(u, plan), running, _entitled(u.properties))
        if lu is not None and running:
            row.usage = {"memoryBytes": lu.memory_current, "cpuCores": rates.get(u.name), "tasks": lu.tasks_current}
            row.drift = {p: [o, n] for p, (o, n) in unit_changes(u, lu).items()}
            if row.drift:
                row.flags.append("drift")
            limit = row.entitled.get("memoryLimit")
            if limit and lu.memory_current is not None and lu.memory_current >= NEAR_LIMIT * limit:
                row.flags.append("near-memory-limit")
            quota = row.entitled.get("cpuQuotaPerSecUSec")
            rate = rates.get(u.name)
            if quota and rate is not None and rate * 1e6 >= NEAR_LIMIT * quota:
                row.flags.append("near-cpu-limit")
            if u.name in clamp_msgs:
                row.flags.append("clamped-to-usage")
        elif u.create:
            row.flags.append("missing")
        scope = obs.scopes.get(u.name)
        if scope is not None:
            row.oom_score_adj = sorted({v for v in (procfs.read_oom_score_adj(p) for p in scope.pids) if v is not None})
            b = obs.bindings.get(u.name)
            if b is not None and row.oom_score_adj and row.oom_score_adj != [b.oom_score_adj]:
                row.flags.append("oom-score-off")
        rows.append(row)
    for name in obs.unmatched:
        lu = obs.live.get(name) or LiveUnit(name)
        sc = obs.scopes[name]
        rows.append(Row(name, "foreign", sc.slice, lu.description or "not created by sdqos", None, True,
                        usage={"memoryBytes": lu.memory_current, "cpuCores": None, "tasks": lu.tasks_current},
                        flags=["foreign"]))
    if any("requests exceed node allocatable" in w for w in warnings):
        for r in rows:
            if r.kind == "node":
                r.flags.append("over-committed")
    bound_vms = {u.owner for u in plan.units if u.kind == "vm"}  # bind_scopes added these to the plan
    for v in plan.vms:
        if f"vm:{v.vm.name}" not in bound_vms:
            rows.append(Row(v.scope or f"(vm {v.vm.name})", "vm", "machine.slice", f"vm {v.vm.name} ({v.qos})", v.qos,
                            False, _entitled(v.properties), flags=["not-running"]))
    rows = _tree_order(rows)
    summary = {
        "units": len(rows),
        "running": sum(r.running for r in rows),
        "drift": sum("drift" in r.flags for r in rows),
        "flagged": sum(bool(r.flags) for r in rows),
        "pods": len(plan.pods),
        "vms": len(plan.vms),
    }
    return Status(plan.cgroup, rows, warnings, interval, summary)


# --- text -----------------------------------------------------------------------------------------


def _cpu_text(e: dict) -> str:
    from sdqos import humanize as H

    share = f"{e['cpuShares']} sh" if e.get("cpuShares") is not None else (
        f"w {e['cpuWeight']}" if e.get("cpuWeight") is not None else "-")
    quota = H.quota(e.get("cpuQuotaPerSecUSec")) if "cpuQuotaPerSecUSec" in e else ""
    return f"{share} · {quota}" if quota and quota != "no quota" else share


def _usage_text(r: Row) -> str:
    from sdqos import humanize as H

    if not r.running:
        return "no process" if r.kind == "container" else "-"
    u = r.usage
    mem = H.size(u.get("memoryBytes")) if u.get("memoryBytes") is not None else "?"
    cpu = f"{u['cpuCores']:.2f} cpu" if u.get("cpuCores") is not None else "? cpu"
    tasks = f"{u['tasks']} tasks" if u.get("tasks") is not None else ""
    return " · ".join(x for x in (mem, cpu, tasks) if x)


def table(status: Status) -> list[list[str]]:
    """Rows of (UNIT, CLASS, CPU, MEMORY, USAGE, OOM, FLAGS), the unit indented by tree depth."""
    from sdqos import humanize as H

    depth: dict[str, int] = {}
    out = []
    for r in status.rows:
        depth[r.unit] = depth.get(r.parent, -1) + 1
        mem = r.entitled.get("memoryLimit")
        out.append([
            "  " * depth[r.unit] + r.unit,
            r.qos or r.kind,
            _cpu_text(r.entitled) if r.kind != "foreign" else "-",
            H.size(mem) if mem is not None else ("unlimited" if r.kind != "foreign" else "-"),
            _usage_text(r),
            ",".join(map(str, r.oom_score_adj)) or "-",
            " ".join(r.flags) or "ok",
        ])
    return out


HEADERS = ["UNIT", "CLASS", "CPU", "MEMORY", "USAGE", "OOM", "FLAGS"]


def render_plain(status: Status) -> str:
    rows = [HEADERS] + table(status)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    s = status.summary
    lines.append("")
    lines.append(f"{s['pods']} pods · {s['vms']} VMs · {s['running']}/{s['units']} units running · "
                 f"{s['drift']} drifted · {s['flagged']} flagged")
    lines += [f"warning: {w}" for w in status.warnings]
    return "\n".join(lines)


def render_rich(status: Status):
    """A rich Table for a terminal (flags in color)."""
    from rich.table import Table

    t = Table(box=None, header_style="bold", pad_edge=False)
    for h in HEADERS:
        t.add_column(h, overflow="fold" if h == "UNIT" else None)
    for row in table(status):
        flags = row[-1]
        style = "green" if flags == "ok" else ("red" if any(f in flags for f in ("drift", "missing", "oom-score-off")) else "yellow")
        t.add_row(*row[:-1], f"[{style}]{flags}[/{style}]")
    return t
