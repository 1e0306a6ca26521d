"""``sdqos sync``: make systemd hold the plan. The imperative shell around :mod:`sdqos.reconcile.diff`.

1. read the live state of every unit sdqos manages, in a handful of D-Bus calls;
2. the desired state from the plan and what was read (pure: :mod:`sdqos.reconcile.desired`), and
   the diff of the live state against it (pure);
3. apply the changes in order — removals, growing limits top-down, creations top-down, shrinking
   limits bottom-up — through StartTransientUnit / SetUnitProperties / StopUnit only (the one
   writer, :mod:`sdqos.reconcile.apply`; a narrow pass of ``run``/``adopt`` creates its scope there too);
4. remember what was applied (drift detection next time) and report.

A failure on one unit does not stop the others; it is reported and the exit status says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sdqos.errors import HostError, SdqosError
from sdqos.host import rundir
from sdqos.host.systemd import SystemdAPI
from sdqos.plan.engine import MachineCharge, Plan, UnitPlan
from sdqos.reconcile.apply import Progress, apply
from sdqos.reconcile.binding import apply_oom_scores
from sdqos.reconcile.desired import Desired, desired
from sdqos.reconcile.diff import (
    Diff,
    Launch,
    DiffPolicy,
    compute_diff,
    kept_pods,
    launch_actions,
    narrowed,
    pod_requests_record,
    recorded_keys,
    recorded_owner,
)
from sdqos.reconcile import oomwatch
from sdqos.reconcile.live import (KUBELET, Observation, ReadBack, check_kernel, container_kernel_off,
                                  container_refusals, kernel_refusals, observe)
from sdqos.reconcile.memo import Memo
from sdqos.reconcile.prefetch import KernelCheck
from sdqos.reconcile.report import Report


def warn_if_kubelet(live: dict, plan: Plan, warnings: list[str]) -> None:
    """kubelet manages its own kubepods tree: running beside it on the same tree means a fight."""
    st = live.pop(KUBELET, None)
    if st is not None and st.exists:
        warnings.append(f"{KUBELET} is active on this host: kubelet manages its own cgroup tree; sdqos manages "
                        f"{plan.root_slice} — make sure they differ (cgroupRoot in node.yaml)")


@dataclass(frozen=True, slots=True)
class Settings:
    """What one pass may do, as one record: the diff's rules (``policy``: what the config allows,
    the loader's verdict on the config dir, and what the sync's options ask: :class:`DiffPolicy`;
    a narrow pass removes nothing, ``removals_safe`` False), whether it only reports (``dry_run``),
    and where its records live (``run_dir``). sdqos.reconcile.syncpass builds it from its Options."""

    policy: DiffPolicy = DiffPolicy()
    dry_run: bool = False
    run_dir: Path = rundir.DEFAULT_RUN_DIR


@dataclass(slots=True)
class _Pass:
    """One pass's state between its steps: what it wants, what it saw, what it will change."""

    want: Desired
    obs: Observation
    applied: dict
    diff: Diff
    managed: dict  # the runtime's containers this pass looks after (scope → Workload)
    synced: Plan  # the desired units as a plan (what the OOM watch names)
    mine: set[str] | None = None  # a narrow pass: its units
    launched: dict[str, UnitPlan] = field(default_factory=dict)  # the scope a narrow pass makes around processes


async def sync(
    sd: SystemdAPI,
    plan: Plan,
    settings: Settings,
    *,
    only: Narrow | None = None,
    replan: Callable[[tuple[MachineCharge, ...]], Plan] | None = None,
    checked: KernelCheck | None = None,
    progress: Progress | None = None,
) -> Report:
    """One reconciliation pass. The caller holds the sync lock. ``replan``: the plan again with
    what runs in machine.slice counted (called when that differs from what ``plan`` counted).
    ``only``: a narrow pass (:class:`Narrow`) over a few units, through the same desired state,
    diff and apply. ``checked``: the child that checked the kernel files of the units the last sync
    applied while this sync planned (:mod:`sdqos.reconcile.prefetch`), for the first live read."""
    t0 = time.monotonic()
    calls0, disc0 = sd.stats.calls, sd.stats.disconnects
    report = Report(dry_run=settings.dry_run)
    applied = rundir.load_applied(settings.run_dir)
    obs, plan = await _observe(sd, plan, applied, settings, report, replan, checked)
    want, diff = _want_and_diff(plan, obs, applied, settings)
    report.desired = want
    synced = report.plan = want.as_plan()  # (its units are the desired ones: what the renderers and the OOM watch name)
    state = _Pass(want, obs, applied, diff, obs.runtime_managed, synced)
    if only is not None:  # the rest of the tree is the next sync's; its warnings: its adjustments
        await _narrow(sd, state, only, report)
    runtime, inside, moved = _report_diff(state, report)
    if state.diff.abort:
        report.aborted = True
        report.duration_s = time.monotonic() - t0
        return report
    if settings.dry_run:
        _report_pending(state.diff, report)
        for name in sorted(moved):
            report.note_update(name, "container", moved[name])
        if plan.node.cpu_manager_policy == "static" and only is None:  # the affinity it would set (cgroup v1)
            _cpu_pass(state, obs.bindings, set(report.removed), settings.run_dir, report, dry_run=True)
    else:
        await _carry_out(sd, state, settings, report, progress, runtime, inside, moved)
    report.duration_s = time.monotonic() - t0
    report.dbus_calls = sd.stats.calls - calls0
    report.disconnects = sd.stats.disconnects - disc0
    return report


async def _observe(sd: SystemdAPI, plan: Plan, applied: dict, settings: Settings, report: Report,
                   replan: Callable[[tuple[MachineCharge, ...]], Plan] | None,
                   checked: KernelCheck | None) -> tuple[Observation, Plan]:
    """The live state, and the plan again when what runs in machine.slice changed."""
    seen: list[str] = []
    memo = Memo(settings.run_dir)
    obs = await observe(sd, plan, applied, seen, memo=memo, checked=checked)
    if replan is not None and obs.machines != plan.machines:
        plan = replan(obs.machines)  # one node budget: what runs in machine.slice is counted before pods
        seen = []
        obs = await observe(sd, plan, applied, seen, memo=memo)
    if not settings.dry_run:
        memo.save()
    report.warnings.extend(seen)
    report.errors.extend(obs.errors)
    warn_if_kubelet(obs.live, plan, report.warnings)
    return obs, plan


def _want_and_diff(plan: Plan, obs: Observation, applied: dict, settings: Settings) -> tuple[Desired, Diff]:
    """The desired state (kept pods counted in their tiers) and the diff of the live state against it."""
    live, scopes, policy = obs.live, obs.scopes, settings.policy

    def diff_against(want: Desired) -> Diff:
        return compute_diff(want, live, applied, policy, scopes=scopes, runtime_owned=obs.runtime_managed,
                            unsure=obs.unsure)

    want = desired(plan, obs)
    diff = diff_against(want)
    kept = kept_pods(want.plan, diff, live, applied)  # (what the diff keeps does not depend on the kernel)
    again = kept != want.kept
    if again:  # pods still running in kept slices count in their tiers: the tree again
        want = desired(plan, obs, kept=kept)
    # the kernel files of the units read over D-Bus (node, tiers, bound scopes) against what the
    # final desired state holds (kept pods counted, clamps in)
    if check_kernel(want, live, scopes) or again:
        diff = diff_against(want)
    return want, diff


async def _narrow(sd: SystemdAPI, state: _Pass, only: Narrow, report: Report) -> None:
    """The diff narrowed to ``only``'s units, with the creation of its launched scope."""
    want = state.want
    mine = state.mine = only.units(want, state.obs)
    made = []
    if only.launch is not None:
        unit = want.by_name.get(only.launch.unit.name) or only.launch.unit
        made = launch_actions(only.launch, unit, await _state(sd, unit.name))  # (ScopeBusy: nothing written)
        state.launched[unit.name] = unit
        mine.add(unit.name)
    state.diff = narrowed(state.diff, mine, [a.warning for a in want.adjustments if a.unit in mine],
                          creatable=only.creatable(want), launch=made)
    report.errors[:] = [e for e in report.errors if any(u in e for u in mine)]
    report.warnings[:] = []
    state.managed = {n: c for n, c in state.managed.items() if n in mine}


def _report_diff(state: _Pass, report: Report) -> tuple[dict, dict, dict]:
    """What the diff found, into the report; returns the runtime's containers bound here, those
    whose own cgroup is off the desired values, and of those the files a plan that changed moves
    (an update, reported once the runtime made it: {scope: {file: [old, new]}})."""
    diff, want, obs = state.diff, state.want, state.obs
    report.warnings.extend(diff.warnings)
    report.errors.extend(diff.errors)
    report.invalid.extend(diff.invalid)
    report.drift = diff.drift
    runtime = {s: c for s, c in state.managed.items() if s in obs.bindings}
    inside = container_kernel_off(want, runtime, obs.scopes)  # a container's own cgroup off the desired values
    # Drift only where it does not hold what the last sync applied either (changed behind our back);
    # one that holds it is a plan that changed: an update (podman update, below), as the diff tells them.
    behind = container_kernel_off(want, {n: runtime[n] for n in inside}, obs.scopes, against=state.applied) \
        if inside else {}
    moved: dict[str, dict] = {}
    for name, files in inside.items():
        drifted = {f: v for f, v in files.items() if f in behind.get(name, {})}
        if drifted:
            d = next((d for d in report.drift if d["unit"] == name), None)
            if d is None:
                report.drift.append({"unit": name, "changes": {}, "kernel": drifted})
            else:  # the scope drifted too: the container's files beside its own
                d["container"] = drifted
        if rest := {f: v for f, v in files.items() if f not in drifted}:
            moved[name] = rest
    report.kept = diff.kept
    report.kept_why = dict(diff.kept_why)
    report.foreign = diff.foreign + obs.unmatched
    report.unchanged = list(diff.unchanged)
    keys = recorded_keys(state.applied) if any(a.kind == "stop" for a in diff.actions) else {}
    report.whose = {a.unit: f"{o.name}/{o.container}" if o.container else o.name for a in diff.actions
                    if a.kind == "stop" and (o := recorded_owner(a.unit, keys)) is not None}
    return runtime, inside, moved


def _report_pending(diff: Diff, report: Report) -> None:
    """A dry run: what the diff would do, as the report of a sync that did it."""
    report.created = [a.unit for a in diff.actions if a.kind == "create"]
    report.removed = [a.unit for a in diff.actions if a.kind == "stop"]
    report.reset = [a.unit for a in diff.actions if a.kind == "reset"]
    merged: dict[str, dict] = {}
    for a in diff.actions:
        if a.kind == "update":
            merged.setdefault(a.unit, {}).update({p: [o, n] for p, (o, n) in a.changes.items()})
    report.updated = [{"unit": u, "changes": ch} for u, ch in merged.items()]


async def _carry_out(sd: SystemdAPI, state: _Pass, settings: Settings, report: Report, progress: Progress | None,
                     runtime: dict, inside: dict, moved: dict) -> None:
    """The diff applied, what was applied recorded, then the OOM scores, the CPUs and the OOM watch."""
    want, obs, diff = state.want, state.obs, state.diff
    plan, scopes, bindings = want.plan, obs.scopes, obs.bindings
    await _remove_runtime_containers(sd, plan, diff, obs, report)
    tried = {a.unit for a in diff.actions if a.kind == "update"} | set(inside)
    failed = _update_runtime_containers(plan, tried, obs, bindings)  # before: systemd writes the scope last
    readback = ReadBack.of(want, scopes)
    done = await apply(sd, diff, report, progress, readback)
    done -= await kernel_refusals(want, done, scopes, report, held=readback.held if readback else set())
    if tried & set(obs.runtime_managed):  # once more where it failed or the container is still off: on v1
        # the kernel refuses a container a quota above its scope's, so a raised or lifted one goes after systemd's
        off = container_kernel_off(want, {n: w for n, w in obs.runtime_managed.items() if n in tried}, scopes)
        failed = _update_runtime_containers(plan, set(failed) | set(off), obs, bindings)
    report.errors.extend(failed[n] for n in sorted(failed))
    for name in sorted(set(moved) - set(failed)):  # (one the container did not take: its refusal, below)
        report.note_update(name, "container", moved[name])
    done -= container_refusals(want, runtime, bindings, scopes, report)
    removed = set(report.removed)
    _record_applied(state, done, removed, settings.run_dir, report)
    mine = state.mine
    if mine is not None:  # (a launched scope's processes get theirs from run/adopt, after)
        bindings = {n: b for n, b in bindings.items() if n in mine and n not in state.launched}
    report.oom_adjusted = apply_oom_scores(bindings, scopes, report.warnings)
    if plan.node.cpu_manager_policy == "static":  # assignments of removed pods released, affinity re-checked
        _cpu_pass(state, bindings, removed, settings.run_dir, report)
    if mine is None:  # (a narrow pass leaves new OOM kills to the next sync, which reports them)
        report.oom_kills, oom_error = oomwatch.track(state.synced, {n: sc.cgroup for n, sc in scopes.items()},
                                                     settings.run_dir)
        if oom_error:
            report.warnings.append(oom_error)


def _cpu_pass(state: _Pass, bindings: dict, removed: set[str], run_dir: Path, report: Report,
              dry_run: bool = False) -> None:
    """cpuManagerPolicy static: the CPU manager's part of a sync (:func:`sdqos.reconcile.cpus.sync_cpus`)
    over the units left once ``removed`` are gone; imported only then (policy none loads no CPU
    manager). ``dry_run``: what it would do, reported, nothing written or set."""
    from sdqos.reconcile import cpus

    obs, plan = state.obs, state.want.plan
    units = [n for n in [*obs.live, *obs.scopes] if n not in removed]
    try:
        moved = cpus.sync_cpus(plan, units, bindings, obs.scopes, report.warnings, full=state.mine is None,
                               run_dir=run_dir, dry_run=dry_run)
    except SdqosError as exc:
        report.errors.append(str(exc))
        return
    for name in sorted(moved):  # (an update: a thread off its CPUs cannot tell who moved it, see cpus.py)
        report.note_update(name, "affinity", moved[name])


def _record_applied(state: _Pass, done: set[str], removed: set[str], run_dir: Path, report: Report) -> None:
    """applied.json: the desired values (adjustments in) of every unit made, updated or found right."""
    applied, live = state.applied, state.obs.live
    new_applied = {k: v for k, v in applied.items() if k in live and k not in removed}
    planned = state.want.by_name  # what was applied: the desired values, adjustments in
    pods = {pp.slice: pp for pp in state.want.plan.pods}
    for name in done | set(state.diff.unchanged):
        u = planned.get(name) or state.launched.get(name)
        if u is not None:
            new_applied[name] = dict(u.properties)
            if name in pods:  # its requests, to count it in its tier should it be kept
                new_applied[name].update(pod_requests_record(pods[name]))
    for name in [*removed, *state.diff.released]:
        if name not in done:  # (a scope stopped and made again, --replace: recorded as made)
            new_applied.pop(name, None)
    if new_applied != applied:
        try:
            rundir.save_applied(new_applied, run_dir)
        except HostError as e:  # the units changed; say so, and still write the OOM scores
            report.errors.append(f"{e}; the next sync reports what it restores as updates, not drift")


@dataclass(frozen=True, slots=True)
class Narrow:
    """A narrow pass: only some units are updated and recorded as applied, nothing is removed —
    what ``run``, ``adopt`` and ``sdqos podman start`` do, so their units hold the desired values
    at once (clamps included) through the one writer, the diff and apply, without waiting for the
    next sync. ``pod`` (NS/NAME): its slice, the slices above it and the scopes in it; ``vm``: its
    scope and the node budget it changes (the node, the tiers, machine.slice). ``create``: the
    missing slices above the pod's (the VM's) scope are created too (``podman start``);
    ``launch``: and its scope, around running processes (``run``, ``adopt``; :class:`Launch`),
    a running one stopped first with ``replace``."""

    pod: str | None = None
    vm: str | None = None
    create: bool = False
    launch: Launch | None = None

    def creatable(self, want: Desired) -> frozenset[str]:
        """The units this pass may create: the slices above the pod's or VM's scope, top-down."""
        from sdqos.kube.naming import MACHINE_SLICE
        from sdqos.reconcile.launch import ancestors

        if not (self.create or self.launch is not None):
            return frozenset()
        pp = want.plan.pod(self.pod) if self.pod is not None else None
        top = pp.slice if pp is not None else MACHINE_SLICE if self.vm is not None else None
        return frozenset(u.name for u in ancestors(want.plan, top)) if top is not None else frozenset()

    def units(self, want: Desired, obs: Observation) -> set[str]:
        from sdqos.kube.naming import owning_slice
        from sdqos.reconcile.launch import ancestors

        out: set[str] = set()
        pp = want.plan.pod(self.pod) if self.pod is not None else None
        if pp is not None:
            out |= {u.name for u in ancestors(want.plan, pp.slice)}
            out |= {n for n, sc in obs.scopes.items() if owning_slice(sc.slice) == pp.slice}
        if self.vm is not None:
            out |= {u.name for u in want.units if u.kind in ("node", "tier", "machine")}
            out |= {u.name for u in want.bound if u.owner is not None and u.owner.vm_name == self.vm}
        return out


async def _state(sd: SystemdAPI, name: str) -> str | None:
    """A unit's ActiveState now (None: not loaded)."""
    from sdqos.host.systemd import UNIT

    st = (await sd.read_units([name], {UNIT: ["ActiveState"]})).get(name)
    return st.active_state if st is not None else None


async def _remove_runtime_containers(sd: SystemdAPI, plan: Plan, diff, obs, report: Report) -> None:
    """Before a pod slice is stopped, the containers sdqos started for that pod through a runtime
    (podman: its managed label and the pod's uid; running or exited) are stopped and removed
    through that runtime, every pod's side by side with its own grace period, so the runtime's own
    record is right and a pod that comes back starts afresh. If the runtime cannot, the slices
    holding its containers stay and the error says why."""
    from sdqos.kube.naming import owning_slice
    from sdqos.reconcile.diff import pod_slice_in

    if not any(a.kind == "stop" for a in diff.actions):
        return  # nothing stops (every warm sync): the runtimes' modules are not even imported
    from sdqos.host import volumes as host_volumes
    from sdqos.reconcile import runtimes

    stopping: dict[str, str] = {}  # uid → slice
    for a in diff.actions:
        ps = pod_slice_in(plan, a.unit) if a.kind == "stop" else None
        if ps is not None:
            stopping[ps.uid] = a.unit
    if not stopping:
        return
    for rt in runtimes.TABLE:
        holding = {owning_slice(sc.slice) for name, sc in obs.scopes.items() if rt.claims(name)}
        try:
            found = rt.pod_workloads(set(stopping), any(w.runtime == rt.name for w in obs.runtime_managed.values()))
        except SdqosError as exc:  # its containers stay, running ones in their slice
            for uid, slice_name in sorted(stopping.items(), key=lambda x: x[1]):
                if slice_name in holding:
                    report.errors.append(f"{slice_name}: not stopped: {exc}")
                    diff.actions[:] = [a for a in diff.actions if a.unit != slice_name]
                else:
                    report.errors.append(f"{slice_name}: stopped, but its pod's exited {rt.name} containers (if any) "
                                         f"were not removed: {exc}")
            continue
        groups = sorted(found.items())
        if not groups:
            continue
        results = await rt.stop(sd, [(ws, max(w.grace_s or 0 for w in ws)) for _, ws in groups])
        for (uid, ws), error in zip(groups, results):
            slice_name = stopping[uid]
            if error is None:
                report.containers_removed.extend(sorted(w.name for w in ws))
                try:  # its emptyDirs go with it, as `sdqos podman stop` removes them
                    host_volumes.remove(uid, host_volumes.volume_root())
                except SdqosError as exc:
                    report.errors.append(f"{slice_name}: its emptyDir volumes were not removed: {exc}")
            else:
                report.errors.append(f"{slice_name}: not stopped: {error}")
                diff.actions[:] = [a for a in diff.actions if a.unit != slice_name]


def _update_runtime_containers(plan: Plan, changed: set[str], obs, bindings) -> dict[str, str]:
    """A container sdqos started through a runtime whose values just changed on its scope (or whose
    own cgroup no longer holds them; ``changed``: scopes): the same values through the runtime
    (``podman update``), so they reach the cgroup the runtime keeps below the scope — its CPUs too
    (cpuManagerPolicy static), as kubelet's CPU manager updates every container whose
    CPUs changed (reconcileState, pkg/kubelet/cm/cpumanager/cpu_manager.go). Returns the errors by scope."""
    failed: dict[str, str] = {}
    if not changed & set(obs.runtime_managed):
        return failed
    from sdqos.reconcile import runtimes

    for scope in sorted(changed & set(obs.runtime_managed)):
        b = bindings.get(scope)
        pp = plan.pod(b.pod) if b is not None and b.pod else None
        c = next((x for x in pp.containers if x.name == b.container), None) if pp is not None else None
        w = obs.runtime_managed[scope]
        rt = runtimes.row(w.runtime)
        if c is None or rt is None:
            continue
        try:
            rt.update(w, c, plan.cgroup)
        except SdqosError as exc:
            failed[scope] = f"{scope} ({b.pod}/{b.container}): its scope has the new values, the container does not: {exc}"
    return failed
