"""Carrying out a diff, in its order: removals, then growing limits top-down, creations top-down,
shrinking limits bottom-up (``diff.APPLY_ORDER``, declared there once), through StartTransientUnit,
SetUnitProperties and StopUnit only — and, for a VM ``sdqos run --vm`` starts, systemd-machined's
CreateMachine. This is the only writer of unit values: sync, and the narrow passes of ``run``,
``adopt`` and ``podman start``, which also create the scope around their processes here (a create
with PIDs, after the slices above it). A failure on one unit does not stop the others; a child of
a unit that failed to be created is skipped."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from sdqos.errors import CallTimeout, NoSuchUnit, SystemdError, UnitExists
from sdqos.host import machined
from sdqos.host.systemd import UNIT, SystemdAPI
from sdqos.plan.engine import UnitPlan
from sdqos.plan.creation import create_properties
from sdqos.reconcile.diff import APPLY_ORDER, PHASE_REMOVE, Action, Diff
from sdqos.reconcile.report import Report

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class _Outcome:
    """What one apply has done so far: units in place, creations and updates that failed, and each
    updated unit's changes (old → new)."""

    report: Report
    done: set[str] = field(default_factory=set)
    failed_creates: set[str] = field(default_factory=set)
    failed_updates: set[str] = field(default_factory=set)
    updated: dict[str, dict] = field(default_factory=dict)


async def apply(sd: SystemdAPI, diff: Diff, report: Report, progress: Progress | None = None,
                created: Callable[[str], None] | None = None) -> set[str]:
    """Carry out the diff. Returns the names of units whose planned values are now in place.
    ``created(unit)``: called as each unit made without processes is, while the next are made
    (the kernel read-back, :class:`sdqos.reconcile.live.ReadBack`)."""
    out = _Outcome(report)
    total = len(diff.actions)
    count = 0

    def tick(n: int = 1) -> None:
        nonlocal count
        count += n
        if progress:
            progress(count, total)

    phases: dict[int, list[Action]] = {}
    for a in diff.actions:
        phases.setdefault(a.phase, []).append(a)

    for phase in APPLY_ORDER:
        actions = phases.get(phase, [])
        if phase == PHASE_REMOVE:  # side by side (stop_all), each pod's grace period at once
            if actions:
                await stop_all(sd, [a.unit for a in actions], report)
                tick(len(actions))
            continue
        for a in [a for a in actions if a.kind == "reset"]:
            try:
                await sd.reset_failed_unit(a.unit)
                report.reset.append(a.unit)
            except SystemdError as e:
                report.errors.append(f"reset-failed {a.unit}: {e}")
            tick()
        # in waves: a slice's result is known before anything is made in it
        for wave in _waves([a for a in actions if a.kind == "create"]):
            await _create_wave(sd, wave, out, created)
            tick(len(wave))
        updates = [a for a in actions if a.kind == "update"]
        if updates:
            await _update_all(sd, updates, out)
            tick(len(updates))

    report.failed_creates.extend(u for u in out.failed_creates if u not in report.failed_creates)
    # A unit updated in two phases (grow + shrink) is one entry; a failed half un-marks it.
    report.updated.extend({"unit": u, "changes": ch} for u, ch in out.updated.items() if u not in out.failed_updates)
    return out.done - out.failed_updates - out.failed_creates


async def _create_wave(sd: SystemdAPI, wave: list[Action], out: _Outcome,
                       created: Callable[[str], None] | None) -> None:
    """One wave of creations: a unit whose slice failed is skipped; a name a unit file or an
    implicit slice holds (or a create that raced us) gets the properties set instead."""
    report = out.report
    todo: list[tuple[Action, UnitPlan]] = []
    for a in wave:
        if a.plan is not None and a.plan.slice not in out.failed_creates:
            todo.append((a, a.plan))
        else:
            out.failed_creates.add(a.unit)
            report.errors.append(f"create {a.unit}: skipped, its parent {a.plan.slice if a.plan else '?'} failed")
    results = await _create(sd, todo, created)
    for (a, u), err in zip(todo, results):
        if err is None:
            report.created.append(a.unit)
            out.done.add(a.unit)
        elif isinstance(err, UnitExists) and not a.pids:
            try:
                await sd.set_unit_properties(a.unit, u.properties)
                await _start_if_inactive(sd, a.unit)
                out.updated.setdefault(a.unit, {})
                out.done.add(a.unit)
            except SystemdError as e:
                out.failed_creates.add(a.unit)
                report.errors.append(f"create {a.unit}: exists, and setting it failed: {e}")
        else:
            out.failed_creates.add(a.unit)
            report.errors.append(f"create {a.unit}: {err}")


async def _update_all(sd: SystemdAPI, updates: list[Action], out: _Outcome) -> None:
    """One phase's updates, in one pipelined call."""
    results = await sd.set_units_properties([(a.unit, a.props) for a in updates])
    for a, err in zip(updates, results):
        if err is None:
            out.updated.setdefault(a.unit, {}).update({p: [o, n] for p, (o, n) in a.changes.items()})
            out.done.add(a.unit)
        else:
            out.failed_updates.add(a.unit)
            out.report.errors.append(f"update {a.unit}: {err}")


async def _create(sd: SystemdAPI, todo: list[tuple[Action, UnitPlan]],
                  created: Callable[[str], None] | None = None) -> list[SystemdError | None]:
    """One wave of creations, one result each: the units without processes in one pipelined call,
    then each scope around processes (:func:`_create_with_pids`)."""
    out: list[SystemdError | None] = [None] * len(todo)
    plain = [i for i, (a, _) in enumerate(todo) if not a.pids]
    on_done = None if created is None else (lambda j: created(todo[plain[j]][0].unit))
    results = await sd.start_transient_units(((todo[i][0].unit, create_properties(todo[i][1])) for i in plain),
                                             on_done=on_done)
    for i, err in zip(plain, results):
        out[i] = err
    for i, (a, u) in enumerate(todo):
        if a.pids:
            try:
                await _create_with_pids(sd, a, u)
            except SystemdError as err:
                out[i] = err
    return out


async def _create_with_pids(sd: SystemdAPI, a: Action, u: UnitPlan) -> None:
    """A new scope holding ``a.pids`` (systemd moves them into it), with ``a.stop_timeout_us``.
    A VM (``a.machine``, one process) is registered with systemd-machined, as libvirt does:
    machined creates the scope (same name, machine.slice) with these values in the same call, so
    the VM is limited from its first instruction and machinectl knows it. When machined does not
    run or cannot take the name: systemd alone (StartTransientUnit with PIDs)."""
    props = create_properties(u, a.stop_timeout_us)
    if a.machine is not None and len(a.pids) == 1 and machined.valid_name(a.machine):
        try:
            await machined.create_machine(sd, a.machine, a.pids[0], props)
            return
        except SystemdError as exc:
            if not machined.not_running(exc):
                raise
    props["PIDs"] = list(a.pids)
    await sd.start_transient_unit(a.unit, props)


def _waves(creates: list[Action]) -> list[list[Action]]:
    """The creations in waves: a unit whose slice is created in the same phase goes one wave after
    it, so that a slice that failed is known before its children are sent (systemd would load the
    missing slice implicitly, without its limits, and make them in it). Each wave is one pipelined
    call; a cold sync is three (node; tiers and Guaranteed pods; the other pods), whatever its size."""
    by_unit = {a.unit: a for a in creates}
    depth: dict[str, int] = {}

    def level(a: Action) -> int:
        if a.unit not in depth:
            parent = by_unit.get(a.plan.slice) if a.plan is not None else None
            depth[a.unit] = 0 if parent is None or parent is a else level(parent) + 1
        return depth[a.unit]

    waves: list[list[Action]] = []
    for a in creates:
        n = level(a)
        waves.extend([] for _ in range(n + 1 - len(waves)))
        waves[n].append(a)
    return waves


SLOW_STOP_S = 1.0


async def stop_all(sd: SystemdAPI, units: list[str], report: Report) -> None:
    """Stop units side by side (deepest first within the window). Stopping a slice stops what runs
    in it: systemd sends SIGTERM, and SIGKILL to what is left when the scope's stop timeout (a pod's
    grace period, ``sdqos run``) ends — so N pods ignoring SIGTERM cost one grace period, not N.
    A stop that took that long is reported; one still going when sdqos stops waiting is a warning
    (systemd finishes it)."""
    t0 = time.monotonic()
    results = await sd.stop_units(units)
    took = time.monotonic() - t0
    for unit, err in zip(units, results):
        if err is None or isinstance(err, NoSuchUnit):  # already gone
            report.removed.append(unit)
        elif isinstance(err, CallTimeout):
            report.removed.append(unit)
            report.warnings.append(f"{unit}: still stopping after {took:.0f}s; systemd goes on with it")
        else:
            report.errors.append(f"stop {unit}: {err}")
    if took >= SLOW_STOP_S and results:
        report.warnings.append(f"stopping {len(units)} unit(s) took {took:.1f}s: their processes did not all exit "
                               "on SIGTERM and were killed when their grace period ended")


async def _start_if_inactive(sd: SystemdAPI, unit: str) -> None:
    """A unit file that exists but is not running: start it after setting its properties."""
    props = await sd.get_properties(unit, UNIT, ["ActiveState"])
    if props.get("ActiveState") in ("inactive", "failed"):
        await sd.start_unit(unit)
