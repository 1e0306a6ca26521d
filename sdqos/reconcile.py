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

from . import rundir
from .diff import PHASE_CREATE, PHASE_GROW, PHASE_REMOVE, PHASE_SHRINK, Action, Diff, LiveUnit, clamp_to_usage, compute_diff
from .engine import Plan, UnitPlan
from .errors import SystemdError, UnitExists
from .properties import owned
from .systemd import SCOPE, SLICE, UNIT, Systemd

SERVICE_IFACE = "org.freedesktop.systemd1.Service"
CREATE_EXTRAS = {"DefaultDependencies": False, "CPUAccounting": True, "MemoryAccounting": True, "TasksAccounting": True}

Progress = Callable[[int, int], None]


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
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

    def as_json(self) -> dict:
        return {
            "created": self.created,
            "updated": self.updated,
            "removed": self.removed,
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
        }

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)


def live_patterns(plan: Plan) -> list[str]:
    """Globs covering every unit sdqos may manage: the kubepods tree, container scopes, and the
    plan's other units (machine.slice, VM scopes, reserved cgroups) by name."""
    stem = plan.root_slice[: -len(".slice")]
    patterns = [f"{stem}.slice", f"{stem}-*.slice", "sdqos-pod*.scope"]
    extra = [u.name for u in plan.units if not (u.name.startswith(stem) or u.name.startswith("sdqos-pod"))]
    return patterns + sorted(set(extra))


async def read_live(sd: Systemd, plan: Plan) -> dict[str, LiveUnit]:
    props = list(owned(plan.cgroup))
    units = await sd.read_units(
        live_patterns(plan),
        {SLICE: props + ["MemoryCurrent"], SCOPE: props, SERVICE_IFACE: props, UNIT: ["Description"]},
    )
    live = {}
    for name, st in units.items():
        live[name] = LiveUnit(
            name=name,
            load_state=st.load_state,
            active_state=st.active_state,
            transient=bool(st.transient),
            description=str(st.props.get("Description", "")),
            props={k: int(v) for k, v in st.props.items() if k in props},
            memory_current=_memory_current(st.props.get("MemoryCurrent")),
        )
    return live


def _memory_current(value) -> int | None:
    if value is None or int(value) >= 2**64 - 1:
        return None  # accounting off or not known
    return int(value)


def create_properties(u: UnitPlan) -> dict:
    props = dict(u.properties)
    props["Description"] = u.description
    props.update(CREATE_EXTRAS)
    if u.slice != "-.slice":
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
            except SystemdError as e:
                report.errors.append(f"reset-failed {a.unit}: {e}")
            tick()
        creates = [a for a in actions if a.kind == "create"]
        if creates:
            todo = [a for a in creates if a.plan is not None and a.plan.slice not in failed_creates]
            skipped = [a for a in creates if a not in todo]
            for a in skipped:
                failed_creates.add(a.unit)
                report.errors.append(f"create {a.unit}: skipped, its parent {a.plan.slice if a.plan else '?'} failed")
            results = await sd.start_transient_units([(a.unit, create_properties(a.plan)) for a in todo])
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
    live = await read_live(sd, plan)
    clamp_to_usage(plan, live, report.warnings)
    applied = rundir.load_applied(run_dir)
    diff = compute_diff(
        plan, live, applied, complete=complete, removals_safe=removals_safe,
        invalid_keys=invalid_keys, allow_empty=allow_empty,
    )
    report.warnings.extend(diff.warnings)
    report.errors.extend(diff.errors)
    report.drift = diff.drift
    report.kept = diff.kept
    report.foreign = diff.foreign
    report.unchanged = list(diff.unchanged)
    if diff.abort:
        report.aborted = True
        report.duration_s = time.monotonic() - t0
        return report
    if dry_run:
        report.created = [a.unit for a in diff.actions if a.kind == "create"]
        report.removed = [a.unit for a in diff.actions if a.kind == "stop"]
        merged: dict[str, dict] = {}
        for a in diff.actions:
            if a.kind == "update":
                merged.setdefault(a.unit, {}).update({p: [o, n] for p, (o, n) in a.changes.items()})
        report.updated = [{"unit": u, "changes": ch} for u, ch in merged.items()]
    else:
        done = await apply(sd, diff, report, progress)
        new_applied = {k: v for k, v in applied.items() if k in live and k not in report.removed}
        planned = {u.name: u for u in plan.units}
        for name in done | set(diff.unchanged):
            if name in planned:
                new_applied[name] = dict(planned[name].properties)
        for name in report.removed:
            new_applied.pop(name, None)
        rundir.save_applied(new_applied, run_dir)
    report.duration_s = time.monotonic() - t0
    report.dbus_calls = sd.stats.calls - calls0
    report.disconnects = sd.stats.disconnects - disc0
    return report
