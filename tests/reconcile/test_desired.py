"""The desired state (pure, no root): the plan plus what was observed — bound scopes, kept pods,
clamps as data — and the plan never edited on the way (reconcile/desired.py)."""

from __future__ import annotations

import copy

from hypothesis import example, given
from hypothesis import strategies as st

from sdqos.kube.manifests import ParseResult, parse_vm_documents
from sdqos.kube.model import BESTEFFORT, BURSTABLE, GUARANTEED, MEMORY
from sdqos.kube.naming import Owner, description
from sdqos.plan.engine import KeptPod, UnitPlan, build_plan
from sdqos.plan.properties import INFINITY
from sdqos.reconcile.desired import Adjustment, desired, of_plan
from sdqos.reconcile.diff import LiveUnit, compute_diff

from ..helpers import node, pod_from

MiB, GiB = 2**20, 2**30


class Seen:
    """An observation as desired() reads it (reconcile.live.Observation has these fields)."""

    def __init__(self, live, bound=()):
        self.live, self.bound = live, tuple(bound)


def pod(name, requests=None, limits=None):
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return pod_from({"metadata": {"name": name, "namespace": "t"},
                     "spec": {"containers": [{"name": "c", "resources": res}]}})


def vm(name: str, memory: str = "1Gi"):
    r = ParseResult()
    parse_vm_documents([{"apiVersion": "sdqos.io/v1alpha1", "kind": "VirtualMachine", "metadata": {"name": name},
                         "spec": {"resources": {"limits": {"cpu": "1", "memory": memory}},
                                  "overhead": {"cpu": "100m", "memory": "0"}}}], "vms/x.yaml", r)
    assert not r.errors
    return r.vms[0]


def a_plan():
    """Tiers with qosReserved memory limits, a Guaranteed and a Burstable pod, one VM."""
    n = node(cpu="4", memory="8Gi", gates={"QOSReserved": True}, qos_reserved={MEMORY: 100})
    pods = [pod("g", limits={"cpu": "1", "memory": "1Gi"}), pod("b", requests={"cpu": "500m", "memory": "256Mi"})]
    return build_plan(n, pods, [vm("db")], "v1")


def vm_unit(plan, name="machine-db.scope"):
    """The unit bind_scopes returns for the VM's running scope."""
    vp = plan.vms[0]
    owner = Owner.vm(vp.vm.name)
    return UnitPlan(name, "machine.slice", "vm", description("vm", owner, vp.qos), dict(vp.properties),
                    vp.resources, owner=owner, create=False, why=vp.why)


def live_of(units, usage=None):
    usage = usage or {}
    return {u.name: LiveUnit(u.name, description=u.description, props=dict(u.properties),
                             memory_current=usage.get(u.name)) for u in units}


def test_bound_units_are_in_the_desired_state_not_in_the_plan():
    plan = a_plan()
    before = copy.deepcopy(plan)
    want = desired(plan, Seen(live_of(plan.units), [vm_unit(plan)]))
    assert [u.name for u in want.bound] == ["machine-db.scope"]
    assert want.unit("machine-db.scope").kind == "vm"
    assert [u.name for u in want.units] == [u.name for u in plan.units] + ["machine-db.scope"]
    assert plan.unit("machine-db.scope") is None and plan == before


def test_a_clamp_is_an_adjustment_and_the_diff_sees_the_clamped_value_as_in_place():
    plan = a_plan()
    tier = "kubepods-burstable.slice"
    wanted = plan.unit(tier).properties["MemoryLimit"]
    used = wanted + 12345
    live = live_of(plan.units, {tier: used})
    before = copy.deepcopy(plan)
    want = desired(plan, Seen(live))
    assert want.adjustments == (Adjustment(tier, "MemoryLimit", wanted, used, used,
                                           f"MemoryLimit clamped to current usage {used} (qosReserved wanted {wanted})"),)
    assert want.unit(tier).properties["MemoryLimit"] == used
    # systemd holds the clamped value (the last sync set it): nothing to do, no drift, the warning said
    live[tier].props["MemoryLimit"] = used
    d = compute_diff(want, live, {tier: {"MemoryLimit": used}})
    assert tier in d.unchanged and not d.drift and not [a for a in d.actions if a.unit == tier]
    assert want.adjustments[0].warning in d.warnings
    # the bare plan (no observation): the tier would go back to what the plan wants
    d = compute_diff(plan, live, {tier: {"MemoryLimit": used}})
    assert [a.props for a in d.actions if a.unit == tier] == [{"MemoryLimit": wanted}]
    assert plan == before


def test_a_vm_is_clamped_in_4_mib_steps_and_says_why():
    plan = a_plan()
    u = vm_unit(plan)
    wanted = u.properties["MemoryLimit"]
    want = desired(plan, Seen(live_of(plan.units) | live_of([u], {u.name: wanted + 1}), [u]))
    (a,) = want.adjustments
    assert a.unit == u.name and a.set == wanted + 4 * MiB - (wanted % (4 * MiB)) and a.set % (4 * MiB) == 0
    assert a.why.endswith("; it goes down when the guest frees memory")
    assert u.properties["MemoryLimit"] == wanted  # the bound unit handed in is not edited either


def test_recorded_adjustments_hold_while_the_plan_wants_what_was_clamped():
    """status shows what the last sync set, whatever the usage is now."""
    plan = a_plan()
    tier = "kubepods-burstable.slice"
    wanted = plan.unit(tier).properties["MemoryLimit"]
    held = Adjustment(tier, "MemoryLimit", wanted, wanted + GiB, wanted + GiB, "clamped")
    stale = Adjustment("kubepods-besteffort.slice", "MemoryLimit", 1, 2 * GiB, 2 * GiB, "clamped")  # plan moved on
    gone = Adjustment("nosuch.slice", "MemoryLimit", 1, 2, 2, "clamped")
    want = desired(plan, Seen(live_of(plan.units)), recorded=[held, stale, gone])
    assert want.adjustments == (held,)
    assert want.unit(tier).properties["MemoryLimit"] == wanted + GiB
    assert Adjustment.from_json(held.as_json()) == held
    assert Adjustment.from_json({"unit": "x"}) is None and Adjustment.from_json("x") is None


def test_kept_pods_count_in_their_tiers_of_the_desired_state_only():
    plan = a_plan()
    before = copy.deepcopy(plan)
    kept = (KeptPod("kubepods-burstable-podold.slice", BURSTABLE, 1500, 512 * MiB, "held back"),)
    want = desired(plan, Seen(live_of(plan.units)), kept=kept)
    assert want.kept == kept and want.plan.kept == kept and plan.kept == ()
    tier = "kubepods-burstable.slice"
    assert want.unit(tier).properties["CPUShares"] > plan.unit(tier).properties["CPUShares"]
    assert plan == before


def test_a_pod_whose_move_was_refused_has_no_new_units_while_its_old_slice_is_kept():
    plan = a_plan()
    b = plan.pod("t/b")
    kept = (KeptPod("kubepods-pod" + b.uid.replace("-", "_") + ".slice", GUARANTEED, 500, 256 * MiB,
                    "QoS class or uid change of t/b refused while it runs", replaces="t/b"),)
    want = desired(plan, Seen(live_of(plan.units)), kept=kept)
    mine = {u.name for u in plan.units if u.owner is not None and u.owner.pod_key == "t/b"}
    assert mine and not mine & set(want.by_name) and not mine & {u.name for u in want.units}
    assert plan.unit(b.slice) is not None and want.unit(plan.pod("t/g").slice) is not None  # the plan as it was
    assert desired(plan, Seen(live_of(plan.units))).unit(b.slice) is not None  # nothing kept: wanted


def test_over_committed_is_a_field_not_a_warning_to_match():
    n = node(cpu="1", memory="1Gi")
    plan = build_plan(n, [pod("big", requests={"cpu": "2", "memory": "64Mi"})], [], "v1")
    assert plan.over_committed and of_plan(plan).over_committed
    assert not of_plan(a_plan()).over_committed


usages = st.one_of(st.none(), st.integers(0, 16 * GiB))


@given(node_use=usages, tier_use=st.tuples(usages, usages), machine_use=usages, vm_use=usages,
       kept=st.lists(st.tuples(st.sampled_from([GUARANTEED, BURSTABLE, BESTEFFORT]), st.integers(0, 4000),
                               st.integers(0, 4 * GiB)), max_size=3))
@example(node_use=16 * GiB, tier_use=(16 * GiB, 16 * GiB), machine_use=16 * GiB, vm_use=16 * GiB, kept=[])
def test_desired_and_diff_never_edit_the_plan_and_every_difference_is_an_adjustment(
        node_use, tier_use, machine_use, vm_use, kept):
    plan = a_plan()
    bound = vm_unit(plan)
    before, bound_before = copy.deepcopy(plan), copy.deepcopy(bound)
    usage = {"kubepods.slice": node_use, "kubepods-burstable.slice": tier_use[0],
             "kubepods-besteffort.slice": tier_use[1], "machine.slice": machine_use, bound.name: vm_use}
    live = live_of(list(plan.units) + [bound], usage)
    keep = tuple(KeptPod(f"kubepods-pod{i}.slice", q, cpu, mem, "kept") for i, (q, cpu, mem) in enumerate(kept))
    want = desired(plan, Seen(live, [bound]), kept=keep)
    compute_diff(want, live, {}, scopes={})
    assert plan == before and bound == bound_before
    assert [u.properties for u in plan.units] == [u.properties for u in before.units]
    base = {u.name: u for u in [*want.plan.units, bound]}
    for u in want.units:
        mine = {a.prop: a for a in want.adjusted(u.name)}
        for prop, v in u.properties.items():
            planned = base[u.name].properties[prop]
            if prop in mine:
                a = mine[prop]
                assert a.wanted == planned != INFINITY and a.set == v and a.set >= a.usage > a.wanted
            else:
                assert v == planned


def test_desired_is_pure():
    """desired.py imports only the pure layers and the one comparison (compare.py: LiveUnit, the clamp)."""
    import subprocess
    import sys

    code = ("import sys; import sdqos.reconcile.desired; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('sdqos.host', 'sdqos.reconcile', "
            "'dbus', 'asyncio', 'subprocess', 'socket')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["sdqos.reconcile", "sdqos.reconcile.compare", "sdqos.reconcile.desired"], out
