"""The reconciler against the in-memory systemd (tests/fakesystemd.py), without root: the apply
order, failures in the middle of a sync, skipped children, reset-then-create, a create that meets an
existing unit, a stop of a unit already gone. In addition to the tests against the real systemd in
the sandbox (test_sync_sandbox.py and the others), never instead of them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos.errors import AccessDenied, CallTimeout, InvalidProperty, JobFailed, ScopeBusy, UnitExists
from sdqos.host import cgroupfs, rundir
from sdqos.plan.engine import Plan, build_plan
from sdqos.reconcile.apply import apply
from sdqos.reconcile.diff import PHASE_CREATE, PHASE_REMOVE, Action, Diff, DiffPolicy, compute_diff
from sdqos.reconcile.live import read_live
from sdqos.reconcile.report import Report
from sdqos.reconcile.launch import container_target, vm_target
from sdqos.reconcile.sync import Narrow, Settings, sync

from ..fakesystemd import FakeSystemd
from ..helpers import node, pod_from

ROOT = Path(__file__).resolve().parents[2]
GiB = 2**30


@pytest.fixture(autouse=True)
def _no_host_cgroups(monkeypatch):
    """The fake is a systemd elsewhere (as with --bus-address): this process does not see its
    cgroup tree, so sdqos reads everything over the (fake) bus and never the host's files; nor
    does it have this host's podman (no runtime: a removal asks none)."""
    monkeypatch.setattr(cgroupfs, "available", lambda *a, **k: False)
    monkeypatch.setenv("SDQOS_PODMAN", "/nonexistent/podman")


def pod(name: str, memory: str | None = None, cpu: str = "1", *, burstable: bool = False):
    res = {"requests": {"cpu": "100m"}} if burstable else {"limits": {"cpu": cpu, "memory": memory}}
    return pod_from({"metadata": {"name": name, "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "resources": res}]}})


def plan_of(*pods, memory: str = "16Gi", cgroup: str = "v1") -> Plan:
    return build_plan(node(memory=memory), list(pods), cgroup=cgroup)


def slice_of(plan: Plan, name: str) -> str:
    return next(p.slice for p in plan.pods if p.pod.name == name)


def mem(cgroup: str) -> str:
    return "MemoryLimit" if cgroup == "v1" else "MemoryMax"


def run_sync(fake: FakeSystemd, plan: Plan, run_dir: Path) -> Report:
    return asyncio.run(sync(fake, plan, Settings(DiffPolicy(), run_dir=run_dir)))


def diff_of(fake: FakeSystemd, plan: Plan) -> Diff:
    """The diff a sync would apply (the live state read through the fake, as sync reads it)."""
    live = asyncio.run(read_live(fake, plan, usage=True))
    return compute_diff(plan, live)


def run_apply(fake: FakeSystemd, diff: Diff) -> tuple[Report, set[str]]:
    report = Report()
    done = asyncio.run(apply(fake, diff, report))
    return report, done


def phases_of(fake: FakeSystemd, shrinking: set[tuple[str, str]]) -> list[str]:
    """The apply phase of each write, in the order the writes came (repeats folded): a
    SetUnitProperties of one of the ``shrinking`` (unit, property) pairs is "shrink", any other "grow"."""
    out: list[str] = []
    for method, unit, props in fake.calls:
        kind = {"StopUnit": "remove", "StartTransientUnit": "create", "ResetFailedUnit": "create"}.get(method)
        if method == "SetUnitProperties":
            kind = "shrink" if any((unit, p) in shrinking for p in props) else "grow"
        if kind and (not out or out[-1] != kind):
            out.append(kind)
    return out


# --- the order --------------------------------------------------------------------------------


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
def test_sync_orders_removals_growth_creations_then_shrinking_and_never_puts_a_child_above_its_parent(
        tmp_path, cgroup):
    """Each sync changes limits both ways at once: the node's memory and a pod's grow while a new pod
    needs the room, then all shrink back while a pod leaves. Written in the wrong order, a child's limit
    would be above its parent's for a moment (``exceeded``), or a removal would come after the writes."""
    fake = FakeSystemd()
    small = plan_of(pod("g", "2Gi"), pod("old", "1Gi"), memory="4Gi", cgroup=cgroup)
    first = run_sync(fake, small, tmp_path)
    assert first.errors == [] and fake.exceeded == []
    assert sorted(first.created) == sorted(u.name for u in small.units if u.create)
    for method, unit, _ in fake.calls:  # creations top-down: a unit's slices were made before it
        if method == "StartTransientUnit":
            made_before = {n for m, n, _ in fake.calls[:fake.calls.index((method, unit, _))] if m == method}
            assert set(fake.ancestors(unit)) <= made_before, unit

    big = plan_of(pod("g", "8Gi", cpu="2"), pod("new", "8Gi"), memory="16Gi", cgroup=cgroup)
    fake.calls.clear()
    grown = run_sync(fake, big, tmp_path)
    g, new, old = slice_of(big, "g"), slice_of(big, "new"), slice_of(small, "old")
    assert grown.errors == [] and fake.exceeded == []
    assert grown.removed == [old] and grown.created == [new]
    assert phases_of(fake, shrinking=set()) == ["remove", "grow", "create"]
    assert fake.units["kubepods.slice"].props[mem(cgroup)] == 16 * GiB
    assert fake.units[g].props[mem(cgroup)] == 8 * GiB and fake.units[g].props["CPUQuotaPerSecUSec"] == 2_000_000
    assert fake.units[new].props[mem(cgroup)] == 8 * GiB and old not in fake.units

    # g's CPU grows while its memory shrinks: one unit in two phases, one entry in the report
    back = plan_of(pod("g", "2Gi", cpu="3"), pod("later", "1Gi"), memory="4Gi", cgroup=cgroup)
    fake.calls.clear()
    shrunk = run_sync(fake, back, tmp_path)
    later = slice_of(back, "later")
    assert shrunk.errors == [] and fake.exceeded == []
    assert shrunk.removed == [new] and shrunk.created == [later]
    assert phases_of(fake, {(g, mem(cgroup)), ("kubepods.slice", mem(cgroup))}) == ["remove", "grow", "create", "shrink"]
    sets = [(u, p.get("CPUQuotaPerSecUSec"), p.get(mem(cgroup))) for m, u, p in fake.calls if m == "SetUnitProperties"]
    assert sets == [(g, 3_000_000, None), (g, None, 2 * GiB), ("kubepods.slice", None, 4 * GiB)]  # shrinking bottom-up
    assert [u["unit"] for u in shrunk.updated].count(g) == 1
    assert fake.units["kubepods.slice"].props[mem(cgroup)] == 4 * GiB

    fake.calls.clear()
    again = run_sync(fake, back, tmp_path)
    assert fake.writes() == [] and not again.changed and again.errors == []


# --- failures in the middle of an apply ----------------------------------------------------------


def test_a_failed_create_and_a_refused_update_leave_the_rest_applied_and_the_sync_failed(tmp_path):
    before = plan_of(pod("a", "1Gi"), pod("b", "1Gi"))
    fake = FakeSystemd()
    assert run_sync(fake, before, tmp_path).errors == []
    after = plan_of(pod("a", "2Gi"), pod("b", "2Gi"), pod("c", "1Gi"), pod("d", "1Gi"))
    a, b, c, d = (slice_of(after, n) for n in "abcd")
    fake.faults[("SetUnitProperties", a)] = InvalidProperty("SetUnitProperties: Invalid argument",
                                                            "org.freedesktop.DBus.Error.InvalidArgs", a)
    fake.faults[("StartTransientUnit", c)] = JobFailed(c, "resources")
    report = run_sync(fake, after, tmp_path)
    assert len(report.errors) == 2 and f"update {a}" in report.errors[0] and f"create {c}" in report.errors[1]
    assert report.created == [d] and [u["unit"] for u in report.updated] == [b]
    assert fake.units[b].props["MemoryLimit"] == 2 * GiB and fake.units[d].active_state == "active"
    assert fake.units[a].props["MemoryLimit"] == GiB  # as it was
    assert fake.units[c].active_state == "failed"  # systemd made it; its start job failed

    # The next sync retries both: the failed unit is reset first, then created again.
    fake.faults.clear()
    fake.calls.clear()
    report = run_sync(fake, after, tmp_path)
    assert report.errors == [] and report.reset == [c] and report.created == [c]
    assert fake.writes() == [("SetUnitProperties", a), ("ResetFailedUnit", c), ("StartTransientUnit", c)]
    assert fake.units[c].active_state == "active" and fake.units[a].props["MemoryLimit"] == 2 * GiB


def test_the_report_of_a_partly_failed_apply_names_each_failure_and_what_was_done():
    plan = plan_of(pod("a", "1Gi"), pod("b", "1Gi"))
    fake = FakeSystemd()
    a, b = slice_of(plan, "a"), slice_of(plan, "b")
    fake.faults[("StartTransientUnit", a)] = AccessDenied("StartTransientUnit: Access denied",
                                                          "org.freedesktop.DBus.Error.AccessDenied", a)
    report, done = run_apply(fake, diff_of(fake, plan))
    assert report.errors == [f"create {a}: {fake.faults[('StartTransientUnit', a)]}"]
    assert a not in done and b in done and a not in fake.units and fake.units[b].active_state == "active"


def test_a_unit_whose_shrinking_half_failed_is_not_done_nor_reported_updated():
    """Its CPU grew, its memory could not shrink: it does not hold its planned values, so it is not
    recorded as applied (sync would restore the rest next time, and call no drift)."""
    before, after = plan_of(pod("g", "2Gi")), plan_of(pod("g", "1Gi", cpu="2"))
    g = slice_of(after, "g")
    fake = FakeSystemd()
    run_apply(fake, diff_of(fake, before))
    fake.calls.clear()
    fake.faults[("SetUnitProperties", g)] = [None, InvalidProperty("SetUnitProperties: Invalid argument", unit=g)]
    report, done = run_apply(fake, diff_of(fake, after))
    assert [n for m, n in fake.writes()] == [g, g]
    assert g not in done and report.updated == [] and report.errors == [f"update {g}: {g}: SetUnitProperties: Invalid argument"]
    assert fake.units[g].props["CPUQuotaPerSecUSec"] == 2_000_000 and fake.units[g].props["MemoryLimit"] == 2 * GiB


@pytest.mark.parametrize("failing, skipped", [
    ("kubepods-burstable.slice", {"burstable"}),
    ("kubepods.slice", {"kubepods-burstable.slice", "kubepods-besteffort.slice", "g", "burstable"}),
])
def test_children_of_a_unit_that_failed_to_be_created_are_skipped_not_created(failing, skipped):
    """Not even tried: systemd would load the missing parent implicitly and make the child in it,
    with none of the parent's limits. Grandchildren are skipped too."""
    plan = plan_of(pod("g", "1Gi"), pod("burstable", burstable=True))
    names = {"g": slice_of(plan, "g"), "burstable": slice_of(plan, "burstable")}
    skipped = {names.get(s, s) for s in skipped}
    fake = FakeSystemd()
    fake.faults[("StartTransientUnit", failing)] = JobFailed(failing, "failed")
    report, done = run_apply(fake, diff_of(fake, plan))
    tried = [n for m, n in fake.writes() if m == "StartTransientUnit"]
    assert not skipped & set(tried) and failing in tried
    assert set(report.created) == {u.name for u in plan.units if u.create} - skipped - {failing}
    assert sorted(e.split(":")[0] for e in report.errors) == sorted(f"create {n}" for n in skipped | {failing})
    assert all("skipped, its parent" in e for e in report.errors if not e.startswith(f"create {failing}:"))
    assert not (skipped | {failing}) & done
    assert not skipped & set(fake.units)


def test_a_create_that_times_out_skips_its_children_and_the_next_sync_finds_it(tmp_path):
    """systemd made the slice but its job outlasted the wait: an error now (its children are not
    sent into a slice that may not be set up); the next sync sees it there and goes on."""
    plan = plan_of(pod("g", "1Gi"), pod("b", burstable=True))
    b = slice_of(plan, "b")
    fake = FakeSystemd()
    fake.faults[("StartTransientUnit", "kubepods-burstable.slice")] = [CallTimeout("job did not finish within 30s")]
    report = run_sync(fake, plan, tmp_path)
    assert report.errors == ["create kubepods-burstable.slice: job did not finish within 30s",
                             f"create {b}: skipped, its parent kubepods-burstable.slice failed"]
    assert fake.units["kubepods-burstable.slice"].active_state == "activating" and b not in fake.units
    fake.units["kubepods-burstable.slice"].active_state = "active"  # its job ended meanwhile
    fake.calls.clear()
    again = run_sync(fake, plan, tmp_path)
    assert again.errors == [] and again.created == [b] and fake.writes() == [("StartTransientUnit", b)]


# --- a unit that is there after all, or gone already ----------------------------------------------


def test_a_create_that_meets_a_unit_file_sets_its_values_and_starts_it():
    """kubepods-besteffort.slice is a unit file here (loaded, inactive): StartTransientUnit gets
    UnitExists, so its properties are set on it and it is started."""
    plan = plan_of(pod("g", "1Gi"))
    fake = FakeSystemd()
    fake.add("kubepods-besteffort.slice", "inactive", transient=False, Description="a unit file")
    diff = diff_of(fake, plan)
    assert any(a.kind == "create" and a.unit == "kubepods-besteffort.slice" for a in diff.actions)
    report, done = run_apply(fake, diff)
    u = fake.units["kubepods-besteffort.slice"]
    planned = plan.unit("kubepods-besteffort.slice")
    assert report.errors == [] and "kubepods-besteffort.slice" in done
    assert "kubepods-besteffort.slice" not in report.created
    assert u.active_state == "active" and not u.transient
    assert {k: u.props[k] for k in planned.properties} == planned.properties
    calls = [(m, n) for m, n, _ in fake.calls if n == "kubepods-besteffort.slice"]
    assert calls[-3:] == [("SetUnitProperties", u.name), ("Get", u.name), ("StartUnit", u.name)]


def test_a_create_that_races_another_creator_sets_the_values_on_what_it_made():
    """Between the read and the write someone made the pod's slice (or a lost reply's retry did):
    UnitExists, and the values are set on it; it runs already, so it is not started again."""
    plan = plan_of(pod("g", "1Gi"))
    g = slice_of(plan, "g")
    fake = FakeSystemd()
    diff = diff_of(fake, plan)
    fake.add(g, Description="made meanwhile", MemoryLimit=5 * GiB)
    report, done = run_apply(fake, diff)
    assert report.errors == [] and g in done and g not in report.created
    assert fake.units[g].props["MemoryLimit"] == GiB
    assert ("StartUnit", g) not in fake.writes()
    assert isinstance(asyncio.run(_start_twice(fake, g)), UnitExists)


async def _start_twice(fake: FakeSystemd, name: str):
    try:
        await fake.start_transient_unit(name, {})
    except UnitExists as e:
        return e


def test_a_stop_of_a_unit_already_gone_counts_as_removed():
    """A container scope whose processes all exited is collected before sync stops it: NoSuchUnit."""
    gone, stuck, there = "sdqos-podx-c.scope", "kubepods-burstable-podz.slice", "kubepods-burstable-pody.slice"
    fake = FakeSystemd()
    fake.add(there, Description="sdqos pod default/y")
    fake.add(stuck, Description="sdqos pod default/z")
    fake.faults[("StopUnit", stuck)] = CallTimeout("job did not finish within 600s", unit=stuck)
    diff = Diff(actions=[Action("stop", n, PHASE_REMOVE) for n in (gone, stuck, there)])
    report, _ = run_apply(fake, diff)
    assert report.errors == [] and report.removed == [gone, stuck, there]
    assert [w for w in report.warnings if w.startswith(stuck)] == [f"{stuck}: still stopping after 0s; "
                                                                  "systemd goes on with it"]
    assert there not in fake.units and fake.units[stuck].active_state == "deactivating"


def test_a_stop_systemd_refuses_is_an_error():
    fake = FakeSystemd()
    fake.add("kubepods-podq.slice", Description="sdqos pod default/q")
    fake.faults[("StopUnit", "kubepods-podq.slice")] = AccessDenied("StopUnit: Access denied", unit="kubepods-podq.slice")
    report, _ = run_apply(fake, Diff(actions=[Action("stop", "kubepods-podq.slice", PHASE_REMOVE)]))
    assert report.removed == [] and report.errors == ["stop kubepods-podq.slice: kubepods-podq.slice: StopUnit: Access denied"]


def test_a_reset_that_fails_is_reported_and_the_create_then_meets_the_failed_unit():
    plan = plan_of(pod("g", "1Gi"))
    g = slice_of(plan, "g")
    fake = FakeSystemd()
    asyncio.run(apply(fake, diff_of(fake, plan), Report()))
    fake.units[g].active_state = "failed"
    diff = diff_of(fake, plan)
    assert [(a.kind, a.unit) for a in diff.actions] == [("reset", g), ("create", g)]
    fake.faults[("ResetFailedUnit", g)] = AccessDenied("ResetFailedUnit: Access denied", unit=g)
    report, done = run_apply(fake, diff)
    assert report.errors[0] == f"reset-failed {g}: {fake.faults[('ResetFailedUnit', g)]}"
    # UnitExists: the values are set on the failed unit and it is started again
    assert fake.writes()[-3:] == [("StartTransientUnit", g), ("SetUnitProperties", g), ("StartUnit", g)]
    assert fake.units[g].active_state == "active" and g in done and report.reset == []


def test_creations_skip_only_below_the_unit_that_failed():
    """A create skipped as a child of a failed unit is itself a failed parent for its children; a
    sibling subtree is untouched. (Hand-made diff: apply's own rule, whatever the diff's order.)"""
    plan = plan_of(pod("g", "1Gi"), pod("b", burstable=True))
    units = {u.name: u for u in plan.units}
    b = slice_of(plan, "b")
    names = ["kubepods.slice", "kubepods-besteffort.slice", "kubepods-burstable.slice", b]
    fake = FakeSystemd()
    fake.add("kubepods.slice", Description="sdqos node")
    fake.faults[("StartTransientUnit", "kubepods-burstable.slice")] = InvalidProperty("bad", unit="x")
    diff = Diff(actions=[Action("create", n, PHASE_CREATE, props=dict(units[n].properties), plan=units[n])
                         for n in names[1:]])
    report, done = run_apply(fake, diff)
    assert done == {"kubepods-besteffort.slice"}
    assert [n for m, n in fake.writes()] == ["kubepods-besteffort.slice", "kubepods-burstable.slice"]
    assert report.errors[-1] == f"create {b}: skipped, its parent kubepods-burstable.slice failed"


# --- run/adopt: the narrow pass that creates a scope around processes ----------------------------


def narrow(fake: FakeSystemd, plan: Plan, run_dir: Path, launch=None, **kw) -> Report:
    return asyncio.run(sync(fake, plan, Settings(DiffPolicy(removals_safe=False), run_dir=run_dir),
                            only=Narrow(launch=launch, **kw)))


def created_props(fake: FakeSystemd, unit: str) -> dict:
    return next(p for m, n, p in fake.calls if m == "StartTransientUnit" and n == unit)


def test_a_launch_creates_its_scope_with_the_pids_after_the_slices_above_it(tmp_path):
    """`sdqos run` on an empty host: one pass creates the node, the tier, the pod slice, then the
    container's scope around the process (PIDs, its pod's grace period as stop timeout) — every
    write through apply, nothing else of the tree created (another pod's slice waits for sync)."""
    plan = plan_of(pod("b", burstable=True), pod("other", "1Gi"))
    target = container_target(plan, "default/b", "c")
    fake = FakeSystemd()
    report = narrow(fake, plan, tmp_path, target.launch([4242]), pod="default/b")
    b = slice_of(plan, "b")
    chain = ["kubepods.slice", "kubepods-burstable.slice", b, target.unit.name]
    assert report.errors == [] and report.created == chain
    assert [n for m, n in fake.writes()] == chain  # top-down, the scope last: nothing else written
    assert slice_of(plan, "other") not in fake.units
    props = created_props(fake, target.unit.name)
    assert props["PIDs"] == [4242] and props["Slice"] == b and props["Delegate"] is True
    assert props["TimeoutStopUSec"] == target.stop_timeout_us == 30_000_000
    assert {k: props[k] for k in target.unit.properties} == target.unit.properties
    assert fake.units[target.unit.name].active_state == "active"
    recorded = rundir.load_applied(tmp_path)  # recorded as applied: the next sync sees no drift
    assert recorded[target.unit.name] == dict(target.unit.properties)
    fake.calls.clear()
    again = run_sync(fake, plan_of(pod("b", burstable=True)), tmp_path)
    assert again.errors == [] and again.drift == [] and target.unit.name not in {u["unit"] for u in again.updated}


def test_a_failed_slice_above_skips_the_scope_and_nothing_runs_in_it(tmp_path):
    plan = plan_of(pod("b", burstable=True))
    target = container_target(plan, "default/b", "c")
    fake = FakeSystemd()
    fake.faults[("StartTransientUnit", "kubepods-burstable.slice")] = AccessDenied("no", unit="x")
    report = narrow(fake, plan, tmp_path, target.launch([4242]), pod="default/b")
    b = slice_of(plan, "b")
    assert report.created == ["kubepods.slice"]
    assert set(report.failed_creates) == {"kubepods-burstable.slice", b, target.unit.name}
    assert f"create {target.unit.name}: skipped, its parent {b} failed" in report.errors
    assert target.unit.name not in fake.units and b not in fake.units


def test_a_running_scope_is_busy_unless_replaced_and_replace_stops_it_first(tmp_path):
    plan = plan_of(pod("g", "1Gi"))
    target = container_target(plan, "default/g", "c")
    fake = FakeSystemd()
    assert run_sync(fake, plan, tmp_path).errors == []
    fake.add(target.unit.name, pids=[7], Slice=target.unit.slice, Description=target.unit.description)
    fake.calls.clear()
    with pytest.raises(ScopeBusy, match=r"already runs in .*--replace"):
        narrow(fake, plan, tmp_path, target.launch([4242]), pod="default/g")
    assert fake.writes() == []  # refused before anything was written
    report = narrow(fake, plan, tmp_path, target.launch([4242], replace=True), pod="default/g")
    assert report.errors == [] and report.removed == [target.unit.name] and report.created == [target.unit.name]
    assert fake.writes() == [("StopUnit", target.unit.name), ("StartTransientUnit", target.unit.name)]
    assert fake.units[target.unit.name].pids == [] and created_props(fake, target.unit.name)["PIDs"] == [4242]
    assert target.unit.name in rundir.load_applied(tmp_path)


def test_a_failed_scope_is_reset_then_made_and_a_create_that_meets_one_fails(tmp_path):
    plan = plan_of(pod("g", "1Gi"))
    target = container_target(plan, "default/g", "c")
    fake = FakeSystemd()
    assert run_sync(fake, plan, tmp_path).errors == []
    fake.add(target.unit.name, "failed", Slice=target.unit.slice)
    fake.calls.clear()
    report = narrow(fake, plan, tmp_path, target.launch([4242]), pod="default/g")
    assert report.errors == [] and report.reset == [target.unit.name] and report.created == [target.unit.name]
    assert fake.writes() == [("ResetFailedUnit", target.unit.name), ("StartTransientUnit", target.unit.name)]
    # a scope made by someone else in between: never values set on it, the processes are not in it
    fake.faults[("StartTransientUnit", target.unit.name)] = UnitExists("exists", unit=target.unit.name)
    fake.calls.clear()
    report = narrow(fake, plan, tmp_path, target.launch([4243], replace=True), pod="default/g")
    assert target.unit.name not in report.created and target.unit.name in report.failed_creates
    assert not [m for m, n in fake.writes() if m == "SetUnitProperties" and n == target.unit.name]


MACHINED = ("org.freedesktop.machine1", "CreateMachine")


def vm_plan() -> Plan:
    from sdqos.kube.manifests import ParseResult, parse_vm_documents

    r = ParseResult()
    parse_vm_documents([{"apiVersion": "sdqos.io/v1alpha1", "kind": "VirtualMachine", "metadata": {"name": "vm1"},
                         "spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}}], "vms/x.yaml", r)
    assert not r.errors
    return build_plan(node(memory="16Gi"), [], r.vms, cgroup="v1")


@pytest.mark.parametrize("machined_runs", [True, False])
def test_a_vm_is_made_through_machined_with_its_limits_or_by_systemd_when_machined_does_not_run(
        tmp_path, machined_runs):
    """`run --vm`: machine.slice first, then the VM's scope — through machined's CreateMachine with
    the limits in the same call (machined makes the scope), or StartTransientUnit with the PID."""
    plan = vm_plan()
    target = vm_target(plan, "vm1")
    fake = FakeSystemd()
    asked = []
    if machined_runs:
        def create_machine(name, _id, service, cls, leader, root, props):
            asked.append((name, service, cls, leader, dict(props)))
            fake.add(target.unit.name, Slice="machine.slice", pids=[leader], **dict(props))
            return []
        fake.services[MACHINED] = create_machine
    report = narrow(fake, plan, tmp_path, target.launch([4242]), vm="vm1")
    assert report.errors == [] and report.created == ["machine.slice", target.unit.name]
    if machined_runs:
        (name, service, cls, leader, props), = asked
        assert (name, service, cls, leader) == ("vm1", "sdqos", "vm", 4242)
        assert props["MemoryLimit"] == target.unit.properties["MemoryLimit"] and "PIDs" not in props
        assert [n for m, n in fake.writes()] == ["machine.slice"]  # the scope: machined's
    else:
        assert [n for m, n in fake.writes()] == ["machine.slice", target.unit.name]
        assert created_props(fake, target.unit.name)["PIDs"] == [4242]


# --- the fake itself -----------------------------------------------------------------------------


def test_the_fake_has_every_member_of_the_systemd_protocol():
    """mypy checks tests/fakesystemd.py's ``_conforms``: a member missing or with another signature
    than sdqos.host.systemd.SystemdAPI's fails here."""
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "tests/fakesystemd.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
