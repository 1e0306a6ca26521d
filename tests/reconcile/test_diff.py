"""The reconciler's pure half: plan vs. live → ordered actions (no systemd needed)."""

from __future__ import annotations

from sdqos.kube.model import MEMORY
from sdqos.plan.engine import build_plan
from sdqos.reconcile.desired import desired
from sdqos.reconcile.diff import PHASE_GROW, PHASE_SHRINK, DiffPolicy, LiveUnit, compute_diff

from ..helpers import node, pod_from


def mk(name, ns="default", requests=None, limits=None):
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return pod_from({"metadata": {"name": name, "namespace": ns}, "spec": {"containers": [{"name": "c", "resources": res}]}})


def live_from(plan, **overrides):
    """Live state identical to the plan (slices only, as sync would have made them)."""
    live = {}
    for u in plan.units:
        if u.create:
            live[u.name] = LiveUnit(u.name, description=u.description, props=dict(u.properties))
    live.update(overrides)
    return live


class Seen:
    """An observation as desired() reads it: the live units, no scope bound."""

    def __init__(self, live, bound=()):
        self.live, self.bound = live, tuple(bound)


def plan_of(*pods, n=None):
    return build_plan(n or node(), list(pods), cgroup="v1")


def test_cold_creates_slices_parents_first_and_no_scopes():
    plan = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}), mk("b", requests={"cpu": "1"}))
    d = compute_diff(plan, {})
    names = [a.unit for a in d.actions]
    assert all(a.kind == "create" for a in d.actions)
    assert names[:3] == ["kubepods.slice", "kubepods-burstable.slice", "kubepods-besteffort.slice"]
    assert len(names) == 5 and not any(n.endswith(".scope") for n in names)


def test_in_sync_is_a_no_op():
    plan = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}))
    d = compute_diff(plan, live_from(plan))
    assert d.actions == [] and d.drift == [] and len(d.unchanged) == 4


def test_config_change_updates_only_changed_property():
    old = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}))
    new = plan_of(mk("g", limits={"cpu": "1", "memory": "2Gi"}))
    applied = {u.name: dict(u.properties) for u in old.units}
    d = compute_diff(new, live_from(old), applied)
    pod_slice = new.pods[0].slice
    updates = {a.unit: a.changes for a in d.actions}
    assert updates == {pod_slice: {"MemoryLimit": (2**30, 2 * 2**30)}}
    assert d.drift == []


def test_drift_is_detected_against_what_was_applied_and_restored():
    plan = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}))
    applied = {u.name: dict(u.properties) for u in plan.units}
    live = live_from(plan)
    live["kubepods.slice"].props["CPUShares"] = 100
    d = compute_diff(plan, live, applied)
    assert d.drift == [{"unit": "kubepods.slice", "changes": {"CPUShares": [100, 8192]}}]
    assert [(a.kind, a.unit, a.props) for a in d.actions] == [("update", "kubepods.slice", {"CPUShares": 8192})]


def test_removed_pod_is_stopped_children_first_foreign_untouched():
    gone = mk("gone", requests={"cpu": "100m"})
    before = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}), gone)
    after = plan_of(mk("g", limits={"cpu": "1", "memory": "1Gi"}))
    live = live_from(before)
    slice_ = next(p.slice for p in before.pods if p.pod.name == "gone")
    scope = next(p.containers[0].scope for p in before.pods if p.pod.name == "gone")
    live[scope] = LiveUnit(scope, description="sdqos container default/gone/c (Burstable)")
    live["kubepods-burstable-podforeign.slice"] = LiveUnit("kubepods-burstable-podforeign.slice", description="kubelet pod")
    d = compute_diff(after, live)
    stops = [a.unit for a in d.actions if a.kind == "stop"]
    assert stops == [scope, slice_]
    assert d.foreign == ["kubepods-burstable-podforeign.slice"]


def test_invalid_pod_keeps_its_units():
    gone = mk("broken", requests={"cpu": "100m"})
    before = plan_of(gone)
    after = plan_of()
    d = compute_diff(after, live_from(before), policy=DiffPolicy(invalid_keys={f"uid:{gone.uid}"}, allow_empty=True))
    assert not any(a.kind == "stop" for a in d.actions)
    assert before.pods[0].slice in d.kept


def test_unreadable_file_blocks_every_removal():
    before = plan_of(mk("a", requests={"cpu": "1"}), mk("b", requests={"cpu": "1"}))
    after = plan_of(mk("a", requests={"cpu": "1"}))
    d = compute_diff(after, live_from(before), policy=DiffPolicy(removals_safe=False, complete=False))
    assert not any(a.kind == "stop" for a in d.actions)
    assert "1 pod(s) not in the config kept running: some config files could not be read" in d.warnings


def test_empty_config_refuses_to_remove_everything():
    before = plan_of(mk("a", requests={"cpu": "1"}))
    d = compute_diff(plan_of(), live_from(before))
    assert d.abort and d.actions == []
    assert "refusing to remove them all" in d.errors[0]
    assert d.kept == [before.pods[0].slice] and "--allow-empty" in d.kept_why[before.pods[0].slice]  # counted, shown kept
    d2 = compute_diff(plan_of(), live_from(before), policy=DiffPolicy(allow_empty=True))
    assert [a.kind for a in d2.actions if a.kind == "stop"] == ["stop"]


def test_invalid_input_freezes_tiers():
    before = plan_of(mk("a", requests={"cpu": "1"}))
    after = plan_of(mk("a", requests={"cpu": "1"}), mk("new", requests={"cpu": "2"}))
    d = compute_diff(after, live_from(before), policy=DiffPolicy(complete=False))
    assert "kubepods-burstable.slice" in d.kept
    created = [a.unit for a in d.actions if a.kind == "create"]
    assert created == [next(p.slice for p in after.pods if p.pod.name == "new")]
    assert not any(a.unit == "kubepods-burstable.slice" for a in d.actions)


def test_kernel_drift_on_the_node_and_tiers_is_restored_through_systemd_even_with_invalid_input():
    """kubepods.slice and the tiers hold systemd's values, the kernel another one (a cgroupfs write):
    drift, restored by setting the values systemd holds again — also while some input is invalid,
    where the tiers' values are frozen (that re-sets nothing new)."""
    plan = plan_of(mk("a", requests={"cpu": "1"}))
    live = live_from(plan)
    live["kubepods.slice"].kernel_drift = {"cpu/cpu.shares": [3, 7168]}
    live["kubepods-besteffort.slice"].kernel_drift = {"cpu/cpu.shares": [5000, 2]}
    for complete in (True, False):
        d = compute_diff(plan, live, policy=DiffPolicy(complete=complete))
        assert [x["unit"] for x in d.drift] == ["kubepods.slice", "kubepods-besteffort.slice"], complete
        acts = {a.unit: a for a in d.actions}
        assert set(acts) == {"kubepods.slice", "kubepods-besteffort.slice"} and all(a.drift for a in acts.values())
        assert acts["kubepods.slice"].props == plan.unit("kubepods.slice").properties
        assert "kubepods.slice" not in d.unchanged and d.kept == []


def test_shrink_children_first_grow_parents_first():
    n_big = node(memory="16Gi")
    n_small = node(memory="8Gi")
    big = plan_of(mk("g", limits={"cpu": "1", "memory": "4Gi"}), n=n_big)
    small = plan_of(mk("g", limits={"cpu": "1", "memory": "2Gi"}), n=n_small)
    d = compute_diff(small, live_from(big))
    order = [(a.unit, a.phase) for a in d.actions]
    pod_slice = small.pods[0].slice
    assert order.index((pod_slice, PHASE_SHRINK)) < order.index(("kubepods.slice", PHASE_SHRINK))
    d2 = compute_diff(big, live_from(small))
    order2 = [(a.unit, a.phase) for a in d2.actions]
    assert order2.index(("kubepods.slice", PHASE_GROW)) < order2.index((pod_slice, PHASE_GROW))


def test_failed_unit_is_reset_and_recreated():
    plan = plan_of()
    live = live_from(plan)
    live["kubepods-besteffort.slice"].active_state = "failed"
    d = compute_diff(plan, live)
    assert [(a.kind, a.unit) for a in d.actions] == [("reset", "kubepods-besteffort.slice"), ("create", "kubepods-besteffort.slice")]


def test_clamp_tier_limit_to_usage():
    n = node(memory="4Gi", gates={"QOSReserved": True}, qos_reserved={MEMORY: 100})
    plan = plan_of(mk("g", limits={"cpu": "1", "memory": "3Gi"}), n=n)
    live = live_from(plan)
    live["kubepods-burstable.slice"].memory_current = 2 * 2**30
    want = desired(plan, Seen(live))
    assert want.unit("kubepods-burstable.slice").properties["MemoryLimit"] == 2 * 2**30
    assert plan.unit("kubepods-burstable.slice").properties["MemoryLimit"] == 2**30  # the plan is not edited
    assert [a.warning for a in want.adjustments] == [
        "kubepods-burstable.slice: MemoryLimit clamped to current usage 2147483648 (qosReserved wanted 1073741824)"]


def test_a_narrow_pass_carries_out_only_its_units_updates_and_leaves_the_diff_as_it_was():
    from sdqos.reconcile.diff import Action, Diff, narrowed

    d = Diff(actions=[Action("stop", "kubepods-podx.slice", 0), Action("update", "kubepods.slice", 1),
                      Action("create", "kubepods-pody.slice", 2), Action("update", "kubepods-podz.slice", 3)],
             unchanged=["kubepods-burstable.slice", "kubepods-podz.slice"],
             drift=[{"unit": "kubepods.slice", "changes": {}}], warnings=["kubepods.slice: something"],
             errors=["kubepods.slice belongs to another manager", "update kubepods-podz.slice: refused"],
             released=["libpod-x.scope"], invalid=["pods/x.yaml: bad"])
    before = repr(d)
    n = narrowed(d, {"kubepods-podz.slice"}, ["a clamp"])
    assert [(a.kind, a.unit) for a in n.actions] == [("update", "kubepods-podz.slice")]
    assert n.unchanged == ["kubepods-podz.slice"] and n.drift == [] and n.released == [] and n.invalid == []
    assert n.warnings == ["a clamp"] and n.errors == ["update kubepods-podz.slice: refused"]
    assert repr(d) == before


def _uid_pod(uid):
    return pod_from({"metadata": {"name": "web", "namespace": "default", "uid": uid},
                     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}})


def test_a_kept_slice_is_known_by_the_record_sync_kept_never_by_its_description():
    """Who an old pod slice is for comes from applied.json (sync records the pod's key), not from
    its Description: a slice whose Description names another pod is still web's, and with a
    record written before the key was, the slice is known by its name alone (a stale pod)."""
    from sdqos.reconcile.diff import pod_requests_record
    from sdqos.reconcile.scopes import LiveScope

    before, after = plan_of(_uid_pod("1111")), plan_of(_uid_pod("2222"))
    old = before.pods[0]
    live = live_from(before)
    live[old.slice].description = "sdqos pod elsewhere/other (Burstable)"  # misleading: must not matter
    scope = old.containers[0].scope
    live[scope] = LiveUnit(scope, description="sdqos container elsewhere/other/c (Burstable)")
    scopes = {scope: LiveScope(scope, old.slice, f"/x/{scope}", pids=[4242])}
    applied = {old.slice: {**old.properties, **pod_requests_record(old)}}
    d = compute_diff(after, live, applied, scopes=scopes)
    assert d.frozen == {old.slice: "default/web"}  # the uid change is refused while it runs
    assert d.invalid and "metadata.uid: changed from 1111 to 2222" in d.invalid[0]
    assert not any(a.kind == "stop" for a in d.actions)
    # the same with an old record (no key): nothing says whose it is; the slice is a stale pod's
    old_record = {old.slice: {k: v for k, v in applied[old.slice].items() if k != "sdqos.pod"}}
    d = compute_diff(after, live, old_record, scopes=scopes)
    assert d.frozen == {} and [a.unit for a in d.actions if a.kind == "stop"] == [scope, old.slice]


def test_an_invalid_pod_is_protected_by_its_recorded_key():
    from sdqos.reconcile.diff import pod_requests_record

    gone = mk("broken", requests={"cpu": "100m"})
    before, after = plan_of(gone), plan_of()
    pp = before.pods[0]
    applied = {pp.slice: pod_requests_record(pp)}
    d = compute_diff(after, live_from(before), applied,
                     DiffPolicy(invalid_keys={"pod:default/broken"}, allow_empty=True))
    assert pp.slice in d.kept and not any(a.kind == "stop" for a in d.actions)
