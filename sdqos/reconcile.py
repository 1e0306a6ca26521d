"""``sdqos sync``: make systemd hold the plan. The imperative shell around :mod:`sdqos.diff`.

1. read the live state of every unit sdqos manages, in a handful of D-Bus calls;
2. diff it against the plan (pure);
3. apply the changes in order — removals, growing limits top-down, creations top-down, shrinking
   limits bottom-up — through StartTransientUnit / SetUnitProperties / StopUnit only;
4. remember what was applied (drift detection next time) and report.

A failure on one unit does not stop the others; it is reported and the exit status says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import host, kernelstate, procfs, rundir
from .diff import PHASE_CREATE, PHASE_GROW, PHASE_REMOVE, PHASE_SHRINK, Action, Diff, LiveUnit, clamp_to_usage, compute_diff
from .engine import Plan, UnitPlan
from .naming import MACHINE_SLICE
from .scopes import LiveScope, match_container, pods_by_slice, scopes_from_processes, vm_scope_for
from .errors import NoSuchUnit, SystemdError, UnitExists
from .properties import INFINITY, PERIOD_PROPERTY, owned
from .systemd import SCOPE, SLICE, UNIT, Systemd

SERVICE_IFACE = "org.freedesktop.systemd1.Service"
CREATE_EXTRAS = {"DefaultDependencies": False, "CPUAccounting": True, "MemoryAccounting": True, "TasksAccounting": True}

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Report:
    """What a sync did, as ``sdqos sync`` prints it (``as_json``: the stable JSON contract)."""

    created: list[str] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)  # failed units reset (scopes: their name is free again)
    unchanged: list[str] = field(default_factory=list)
    drift: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    dry_run: bool = False
    aborted: bool = False  # refused to write anything (see Diff.abort)
    duration_s: float = 0.0
    dbus_calls: int = 0
    disconnects: int = 0
    oom_adjusted: int = 0  # processes whose oom_score_adj this sync wrote

    def as_json(self) -> dict:
        return {
            "created": self.created,
            "updated": self.updated,
            "removed": self.removed,
            "reset": self.reset,
            "unchanged": self.unchanged,
            "drift": self.drift,
            "warnings": self.warnings,
            "errors": self.errors,
            "invalid": self.invalid,
            "kept": self.kept,
            "foreign": self.foreign,
            "dryRun": self.dry_run,
            "aborted": self.aborted,
            "durationSeconds": round(self.duration_s, 4),
            "dbusCalls": self.dbus_calls,
            "disconnects": self.disconnects,
            "oomAdjusted": self.oom_adjusted,
        }

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed or self.reset)


def live_patterns(plan: Plan) -> list[str]:
    """Globs covering every unit sdqos may manage: the kubepods tree, container scopes, and the
    plan's other units (machine.slice, VM scopes, reserved cgroups) by name."""
    stem = plan.root_slice[: -len(".slice")]
    patterns = [f"{stem}.slice", f"{stem}-*.slice", "sdqos-pod*.scope"]
    extra = [u.name for u in plan.units if not (u.name.startswith(stem) or u.name.startswith("sdqos-pod"))]
    return patterns + sorted(set(extra))


USAGE = ("MemoryCurrent", "CPUUsageNSec", "TasksCurrent")


def _live_unit(name: str, st, props: list[str]) -> LiveUnit:
    return LiveUnit(
        name=name,
        load_state=st.load_state,
        active_state=st.active_state,
        transient=bool(st.transient),
        description=str(st.props.get("Description", "")),
        props={k: int(v) for k, v in st.props.items() if k in props},
        memory_current=_counter(st.props.get("MemoryCurrent")),
        cpu_usage_ns=_counter(st.props.get("CPUUsageNSec")),
        tasks_current=_counter(st.props.get("TasksCurrent")),
        control_group=st.control_group,
    )


async def read_live(sd: Systemd, plan: Plan, *, usage: bool = False) -> dict[str, LiveUnit]:
    """Every unit sdqos may manage, with its owned properties (and usage counters for status).

    Fast path (no usage wanted, and this process sees systemd's cgroup tree): one list call, then
    a planned unit whose kernel values are exactly what its planned properties produce is taken as
    in sync without asking systemd, and a slice outside the plan is known from the list alone;
    only the others (and the node/tier units, whose usage the qosReserved clamp needs) get a D-Bus
    read. A unit whose kernel values differ although systemd's properties match (a cgroupfs write
    behind systemd's back) is marked for re-applying."""
    props = list(owned(plan.cgroup))
    extra = list(USAGE) if usage else ["MemoryCurrent"]  # MemoryCurrent: tier clamping
    ifaces = {SLICE: props + extra, SCOPE: props + (list(USAGE) if usage else []), SERVICE_IFACE: props,
              UNIT: ["Description"]}
    if usage or not kernelstate.available():
        units = await sd.read_units(live_patterns(plan), ifaces)
        return {name: _live_unit(name, st, props) for name, st in units.items()}
    listed = await sd.read_units(live_patterns(plan), {UNIT: ["Description"]})
    planned = {u.name: u for u in plan.units}
    page = host.page_size()
    live: dict[str, LiveUnit] = {}
    kernel_off: dict[str, dict] = {}
    need: list[str] = []
    for name, st in listed.items():
        u = planned.get(name)
        if u is None and name.endswith(".slice"):
            # Not in the plan (a pod that left the config, or someone else's slice): the diff
            # stops it or reports it on its state and Description, both in the list. A slice is
            # never bound to a container or VM, so its properties are not needed (removing 100
            # of 1000 pods: 108 D-Bus calls instead of 208).
            live[name] = _listed_unit(name, st)
            continue
        if u is None or st.active_state != "active" or u.kind in ("node", "tier", "reserved"):
            need.append(name)
            continue
        check = dict(u.properties)
        check.setdefault(PERIOD_PROPERTY, INFINITY)
        want = kernelstate.expected(check, plan.cgroup, page)
        have = kernelstate.read(kernelstate.cgroup_of(name, u.slice), want) if want is not None else None
        if have is not None and have == want:
            live[name] = _listed_unit(name, st, props=dict(u.properties))
        else:
            need.append(name)
            if have is not None and want is not None:
                kernel_off[name] = {f: [have[f], want[f]] for f in want if have[f] != want[f]}
    if need:
        units = await sd.read_units(need, ifaces)
        for name, st in units.items():
            live[name] = _live_unit(name, st, props)
            live[name].kernel_drift = kernel_off.get(name, {})
    return live


def _listed_unit(name: str, st, props: dict[str, int] | None = None) -> LiveUnit:
    """A unit as the list call describes it (state, Description), with ``props`` where the kernel
    showed them to be in place; no D-Bus read of its own."""
    return LiveUnit(name, st.load_state, st.active_state, description=str(st.props.get("Description", "")),
                    props=props if props is not None else {})


def _counter(value) -> int | None:
    if value is None or int(value) >= 2**64 - 1:
        return None  # accounting off or not known
    return int(value)


@dataclass(slots=True)
class Observation:
    """What systemd holds for the plan: units, the scopes with processes, and which container or
    VM each scope belongs to."""

    live: dict[str, LiveUnit]
    scopes: dict[str, LiveScope]
    bindings: dict[str, "Binding"]
    unmatched: list[str]


async def observe(sd: Systemd, plan: Plan, applied: dict, warnings: list[str], *, usage: bool = False) -> Observation:
    """Read the live state in a few calls and bind scopes (extends the plan with matched scopes)."""
    live = await read_live(sd, plan, usage=usage)
    # VMs that left the config are still looked at (and reported) while machine.slice was ours.
    scopes = await discover_scopes(sd, plan, live, machine=bool(plan.vms) or MACHINE_SLICE in applied)
    unknown = [name for name in scopes if name not in live]
    if unknown:  # scopes made by others: their Description and values, for matching and diffing
        live.update(await _read_named(sd, plan, unknown, usage=usage))
    for name, scope in scopes.items():
        if name in live:
            scope.description = live[name].description
    bindings, unmatched = bind_scopes(plan, scopes, warnings)
    return Observation(live, scopes, bindings, unmatched)


def create_properties(u: UnitPlan) -> dict:
    """Everything a new unit is created with: its owned properties, a Description that says what
    it is (so `systemctl status` reads well), and what runc's systemd driver adds."""
    props = dict(u.properties)
    props["Description"] = u.description
    props.update(CREATE_EXTRAS)
    if u.name.endswith(".scope"):
        props["Slice"] = u.slice
        props["Delegate"] = True  # processes can later be attached (adopt), as runc does
        props["CollectMode"] = "inactive-or-failed"  # an OOM-killed scope frees its name
    elif u.slice != "-.slice":
        props["Wants"] = [u.slice]  # as runc does: the parent is started first
    return props


async def apply(sd: Systemd, diff: Diff, report: Report, progress: Progress | None = None) -> set[str]:
    """Carry out the diff. Returns the names of units whose planned values are now in place."""
    done: set[str] = set()
    failed_creates: set[str] = set()
    failed_updates: set[str] = set()
    total = len(diff.actions)
    count = 0

    def tick(n: int = 1) -> None:
        nonlocal count
        count += n
        if progress:
            progress(count, total)

    updated: dict[str, dict] = {}
    phases: dict[int, list[Action]] = {}
    for a in diff.actions:
        phases.setdefault(a.phase, []).append(a)

    for a in phases.get(PHASE_REMOVE, []):
        try:
            await sd.stop_unit(a.unit)
            report.removed.append(a.unit)
        except SystemdError as e:
            if e.name == "org.freedesktop.systemd1.NoSuchUnit":
                report.removed.append(a.unit)
            else:
                report.errors.append(f"stop {a.unit}: {e}")
        tick()

    for phase in (PHASE_GROW, PHASE_CREATE, PHASE_SHRINK):
        actions = phases.get(phase, [])
        for a in [a for a in actions if a.kind == "reset"]:
            try:
                await sd.reset_failed_unit(a.unit)
                report.reset.append(a.unit)
            except SystemdError as e:
                report.errors.append(f"reset-failed {a.unit}: {e}")
            tick()
        creates = [a for a in actions if a.kind == "create"]
        if creates:
            todo, skipped = [], []
            for a in creates:
                (todo if a.plan is not None and a.plan.slice not in failed_creates else skipped).append(a)
            for a in skipped:
                failed_creates.add(a.unit)
                report.errors.append(f"create {a.unit}: skipped, its parent {a.plan.slice if a.plan else '?'} failed")
            results = await sd.start_transient_units((a.unit, create_properties(a.plan)) for a in todo)
            for a, err in zip(todo, results):
                if err is None:
                    report.created.append(a.unit)
                    done.add(a.unit)
                elif isinstance(err, UnitExists):
                    # A unit file or an implicit slice has the name (or a create raced us): set
                    # the properties on it instead.
                    try:
                        await sd.set_unit_properties(a.unit, a.plan.properties)
                        await _start_if_inactive(sd, a.unit)
                        updated.setdefault(a.unit, {})
                        done.add(a.unit)
                    except SystemdError as e:
                        failed_creates.add(a.unit)
                        report.errors.append(f"create {a.unit}: exists, and setting it failed: {e}")
                else:
                    failed_creates.add(a.unit)
                    report.errors.append(f"create {a.unit}: {err}")
            tick(len(creates))
        updates = [a for a in actions if a.kind == "update"]
        if updates:
            results = await sd.set_units_properties([(a.unit, a.props) for a in updates])
            for a, err in zip(updates, results):
                if err is None:
                    updated.setdefault(a.unit, {}).update({p: [o, n] for p, (o, n) in a.changes.items()})
                    done.add(a.unit)
                else:
                    failed_updates.add(a.unit)
                    report.errors.append(f"update {a.unit}: {err}")
            tick(len(updates))

    # A unit updated in two phases (grow + shrink) is one entry; a failed half un-marks it.
    report.updated.extend({"unit": u, "changes": ch} for u, ch in updated.items() if u not in failed_updates)
    return done - failed_updates - failed_creates


async def discover_scopes(sd: Systemd, plan: Plan, live: dict[str, LiveUnit], *, machine: bool) -> dict[str, LiveScope]:
    """Every scope with processes below kubepods.slice (and machine.slice when ``machine``),
    from one GetUnitProcesses each: the cgroup path of each process names its scope."""
    rows: list[tuple[str, int, str]] = []
    if plan.root_slice in live and live[plan.root_slice].exists:
        rows.extend(await sd.get_unit_processes(plan.root_slice))
    if machine:
        try:
            rows.extend(await sd.get_unit_processes(MACHINE_SLICE))
        except NoSuchUnit:
            pass
    return scopes_from_processes(rows)


@dataclass(slots=True)
class Binding:
    """A live scope and what it runs: whose OOM score its processes get."""

    owner: str  # "pod ns/name container c" or "vm name"
    oom_score_adj: int


def bind_scopes(plan: Plan, scopes: dict[str, LiveScope], warnings: list[str]) -> tuple[dict[str, Binding], list[str]]:
    """Match live scopes to containers and VMs (rules in sdqos.scopes). A matched scope that is
    not sdqos's own name gets a unit in the plan with the container's (VM's) values, so the diff
    tunes it like any other. Returns the bindings and the unmatched scopes."""
    bindings: dict[str, Binding] = {}
    unmatched: list[str] = []
    by_slice = pods_by_slice(plan)
    planned = {u.name: u for u in plan.units}
    for name, scope in sorted(scopes.items()):
        pp = by_slice.get(scope.slice)
        if pp is None:
            continue
        own = {c.scope: c for c in pp.containers}
        if name in own:
            c = own[name]
        else:
            cname = match_container(scope, pp)
            if cname is None:
                unmatched.append(name)
                continue
            c = next(x for x in pp.containers if x.name == cname)
            base = planned[c.scope]
            props = {k: v for k, v in c.properties.items() if k != "TasksMax"}  # the runtime's pids limit stays
            plan.units.append(UnitPlan(name, pp.slice, "container", base.description, props, base.resources,
                                       owner=base.owner, create=False, why=base.why))
        bindings[name] = Binding(f"pod {pp.key} container {c.name}", c.oom_score_adj)
    machine = {n: s for n, s in scopes.items() if s.slice == MACHINE_SLICE}
    claimed = set()
    for vp in plan.vms:
        found = vm_scope_for(vp, machine, read_pid_file(vp.vm.pid_file) if vp.vm.pid_file else None)
        if found is None:
            where = f": no {vp.vm.scope} with processes in machine.slice" if vp.vm.scope else ""
            warnings.append(f"VM {vp.vm.name} is declared but not running{where}")
            continue
        located = vp.vm.scope or vp.vm.libvirt_domain or vp.vm.pid_file
        if not located and not machine[found].description.startswith("sdqos vm "):
            # machine-<name>.scope made by someone else (machined for a container, say): never
            # claim it by name alone.
            warnings.append(f"VM {vp.vm.name}: {found} exists but was not started by sdqos; left alone"
                            " (set spec.scope to claim it)")
            claimed.add(found)
            continue
        claimed.add(found)
        if found not in planned:
            plan.units.append(UnitPlan(found, MACHINE_SLICE, "vm", f"sdqos vm {vp.vm.name} ({vp.qos})", dict(vp.properties),
                                       vp.resources, owner=f"vm:{vp.vm.name}", create=False, why=vp.why))
        bindings[found] = Binding(f"vm {vp.vm.name}", vp.oom_score_adj)
    for name in sorted(set(machine) - claimed):
        warnings.append(f"{name} in machine.slice is not a VM in the config: left running, untouched")
    return bindings, unmatched


async def _read_named(sd: Systemd, plan: Plan, names: list[str], *, usage: bool = False) -> dict[str, LiveUnit]:
    props = list(owned(plan.cgroup))
    units = await sd.read_units(names, {SCOPE: props + (list(USAGE) if usage else []), UNIT: ["Description"]})
    return {name: _live_unit(name, st, props) for name, st in units.items()}


def apply_oom_scores(bindings: dict[str, Binding], scopes: dict[str, LiveScope], warnings: list[str]) -> int:
    """Write each bound scope's processes' oom_score_adj where it differs. A process that exited
    meanwhile is fine; a refused negative value (no CAP_SYS_RESOURCE) is a warning; a PID that is
    not in the scope's cgroup as we see it (another PID namespace than systemd's) is never written."""
    adjusted, elsewhere, seen = 0, 0, 0
    for name, b in bindings.items():
        scope = scopes.get(name)
        if scope is None:
            continue
        denied = []
        for pid in scope.pids:
            r = procfs.write_oom_score_adj(pid, b.oom_score_adj, cgroup=scope.cgroup)
            seen += 1
            if r.outcome == procfs.SET:
                adjusted += 1
            elif r.outcome == procfs.DENIED:
                denied.append(pid)
            elif r.outcome == procfs.ELSEWHERE:
                elsewhere += 1
        if denied:
            warnings.append(
                f"{b.owner}: the kernel refused oom_score_adj {b.oom_score_adj} for PID "
                f"{', '.join(map(str, denied))} (lowering it needs CAP_SYS_RESOURCE)"
            )
    if seen and elsewhere == seen:
        warnings.append("OOM scores not written: this sdqos does not share systemd's PID namespace")
    return adjusted


def read_pid_file(path: str | None) -> int | None:
    try:
        return int(Path(path).read_text().split()[0]) if path else None
    except (OSError, ValueError, IndexError):
        return None


async def _start_if_inactive(sd: Systemd, unit: str) -> None:
    """A unit file that exists but is not running: start it after setting its properties."""
    props = await sd.get_properties(unit, UNIT, ["ActiveState"])
    if props.get("ActiveState") in ("inactive", "failed"):
        await sd.start_unit(unit)


async def sync(
    sd: Systemd,
    plan: Plan,
    *,
    complete: bool,
    removals_safe: bool,
    invalid_keys: set[str],
    allow_empty: bool = False,
    dry_run: bool = False,
    run_dir: Path = rundir.DEFAULT_RUN_DIR,
    progress: Progress | None = None,
) -> Report:
    """One reconciliation pass. The caller holds the sync lock."""
    t0 = time.monotonic()
    calls0, disc0 = sd.stats.calls, sd.stats.disconnects
    report = Report(dry_run=dry_run)
    applied = rundir.load_applied(run_dir)
    obs = await observe(sd, plan, applied, report.warnings)
    live, scopes, bindings, unmatched = obs.live, obs.scopes, obs.bindings, obs.unmatched
    clamp_to_usage(plan, live, report.warnings)
    diff = compute_diff(
        plan, live, applied, complete=complete, removals_safe=removals_safe,
        invalid_keys=invalid_keys, allow_empty=allow_empty,
    )
    report.warnings.extend(diff.warnings)
    report.errors.extend(diff.errors)
    report.drift = diff.drift
    report.kept = diff.kept
    report.foreign = diff.foreign + unmatched
    report.unchanged = list(diff.unchanged)
    if diff.abort:
        report.aborted = True
        report.duration_s = time.monotonic() - t0
        return report
    if dry_run:
        report.created = [a.unit for a in diff.actions if a.kind == "create"]
        report.removed = [a.unit for a in diff.actions if a.kind == "stop"]
        report.reset = [a.unit for a in diff.actions if a.kind == "reset"]
        merged: dict[str, dict] = {}
        for a in diff.actions:
            if a.kind == "update":
                merged.setdefault(a.unit, {}).update({p: [o, n] for p, (o, n) in a.changes.items()})
        report.updated = [{"unit": u, "changes": ch} for u, ch in merged.items()]
    else:
        done = await apply(sd, diff, report, progress)
        vm_scopes_seen = any(sc.slice == MACHINE_SLICE for sc in scopes.values())
        removed = set(report.removed)
        new_applied = {k: v for k, v in applied.items()
                       if (k in live or (k == MACHINE_SLICE and vm_scopes_seen)) and k not in removed}
        planned = {u.name: u for u in plan.units}
        for name in done | set(diff.unchanged):
            if name in planned:
                new_applied[name] = dict(planned[name].properties)
        for name in removed:
            new_applied.pop(name, None)
        if new_applied != applied:
            rundir.save_applied(new_applied, run_dir)
        report.oom_adjusted = apply_oom_scores(bindings, scopes, report.warnings)
    report.duration_s = time.monotonic() - t0
    report.dbus_calls = sd.stats.calls - calls0
    report.disconnects = sd.stats.disconnects - disc0
    return report
