"""What runs in machine.slice besides declared VMs, and what it costs the node budget (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdqos.kube.manifests import ParseResult, parse_vm_documents
from sdqos.plan.engine import MachineCharge, build_plan
from sdqos.plan.properties import INFINITY
from sdqos.reconcile.budget import cpu_millis, machine_charges
from sdqos.reconcile.diff import LiveUnit
from sdqos.reconcile.scopes import LiveScope

from ..helpers import node

MiB, GiB = 2**20, 2**30


def vm(name: str, memory: str = "1Gi") -> object:
    r = ParseResult()
    parse_vm_documents([{"apiVersion": "sdqos.io/v1alpha1", "kind": "VirtualMachine", "metadata": {"name": name},
                         "spec": {"resources": {"limits": {"cpu": "1", "memory": memory}},
                                  "overhead": {"cpu": "100m", "memory": "0"}}}], "vms/x.yaml", r)
    assert not r.errors
    return r.vms[0]


def scope(name: str, slice_name: str = "machine.slice") -> LiveScope:
    return LiveScope(name, slice_name, f"/machine.slice/{name}", [1])


@pytest.mark.parametrize("props, cgroup, millis", [
    ({"CPUShares": 1024}, "v1", 1000),
    ({"CPUShares": INFINITY}, "v1", 1000),   # unset: systemd's default, 1024
    ({"CPUShares": 614}, "v1", 600),         # what sdqos gave a 600m VM, counted back as 600m
    ({"CPUWeight": 39}, "v2", 1000),          # kubelet: 1000m → 1024 shares → weight 39
    ({"CPUWeight": INFINITY}, "v2", 2561),    # unset: weight 100, what about 2.5 CPUs get from kubelet
])
def test_cpu_weight_counts_as_the_millicores_kubelet_gives_it(props, cgroup, millis):
    assert cpu_millis(props, cgroup) == millis


@given(st.integers(1000, 4_000_000))
def test_a_weight_counted_back_gives_the_same_weight(milli):
    """Counting a scope's weight (shares) as millicores, then planning those, gives it again."""
    from sdqos.kube import qos

    shares = qos.milli_cpu_to_shares(milli)
    assert qos.milli_cpu_to_shares(cpu_millis({"CPUShares": shares}, "v1")) == shares
    weight = qos.shares_to_weight_kubelet(qos.milli_cpu_to_shares(milli))
    back = cpu_millis({"CPUWeight": weight}, "v2")
    assert qos.shares_to_weight_kubelet(qos.milli_cpu_to_shares(back)) == weight


def test_undeclared_scopes_are_counted_by_limit_guest_ram_or_usage():
    plan = build_plan(node(), [], [vm("db")], "v1")
    scopes = {n: scope(n) for n in ("machine-db.scope", "limited.scope", "machine-qemu\\x2d1\\x2dlv.scope",
                                    "libpod-x.scope")}
    live = {
        "limited.scope": LiveUnit("limited.scope", props={"MemoryLimit": 256 * MiB, "CPUShares": 512},
                                  memory_current=100 * MiB),
        "machine-qemu\\x2d1\\x2dlv.scope": LiveUnit("lv", props={"MemoryLimit": INFINITY}, memory_current=50 * MiB),
        "libpod-x.scope": LiveUnit("libpod-x.scope", props={}, memory_current=65 * MiB),
    }
    charges = machine_charges(plan, scopes, {"machine-db.scope"}, live,
                              {"machine-qemu\\x2d1\\x2dlv.scope": "libvirt domain lv"},
                              {"machine-qemu\\x2d1\\x2dlv.scope": (512 * MiB, 2)}, slice_usage=None)
    assert charges == (
        MachineCharge("libpod-x.scope", "scope", 1000, 72 * MiB, bounded=False),  # 65 MiB in 8 MiB steps
        MachineCharge("limited.scope", "scope", 500, 256 * MiB),
        # RAM + the default overhead: 30 + 8 + 32 MiB + 2 vCPUs × 8 MiB + 512 MiB / 512
        MachineCharge("machine-qemu\\x2d1\\x2dlv.scope", "libvirt domain lv", 1000, 512 * MiB + 87 * MiB),
    )


def test_a_count_by_usage_moves_when_usage_really_moves():
    """Usage in 8 MiB steps, and a count that stays while usage is less than 32 MiB below it: not a new
    budget (and a re-plan of every pod) at every sync."""
    scopes = {"libpod-x.scope": scope("libpod-x.scope")}

    def count(usage, before=None):
        plan = build_plan(node(), [], [], "v1", machines=[before] if before else [])
        (c,) = machine_charges(plan, scopes, set(), {"libpod-x.scope": LiveUnit("x", memory_current=usage)},
                               {}, {}, slice_usage=None)
        return c

    first = count(100 * MiB)
    assert first.memory == 104 * MiB
    assert count(101 * MiB, first) == first       # moved a little: the same count
    assert count(80 * MiB, first) == first        # down, but less than 32 MiB below it
    assert count(60 * MiB, first).memory == 64 * MiB  # down more: counted anew
    assert count(105 * MiB, first).memory == 112 * MiB  # up past it: always counted anew


def test_machine_slice_is_never_planned_below_what_it_holds():
    plan = build_plan(node(), [], [vm("db", "1Gi")], "v1")
    scopes = {"machine-db.scope": scope("machine-db.scope")}
    # db's guest holds 1.5 GiB (its limit was refused): the rest is counted on machine.slice itself.
    charges = machine_charges(plan, scopes, {"machine-db.scope"}, {}, {}, {}, slice_usage=GiB + GiB // 2)
    assert charges == (MachineCharge("machine.slice", "usage beyond what is counted", 0, 512 * MiB),)  # 8 MiB steps
    again = build_plan(node(), [], [vm("db", "1Gi")], "v1", machines=charges)
    assert again.unit("machine.slice").properties["MemoryLimit"] == GiB + GiB // 2


def test_the_budget_counts_machines_and_unbounded_ones_lift_machine_slices_limit():
    n = node(cpu="8", memory="16Gi")
    bounded = (MachineCharge("limited.scope", "a podman container", 500, 2 * GiB),)
    plan = build_plan(n, [], [], "v1", machines=bounded)
    assert plan.unit("machine.slice").properties["MemoryLimit"] == 2 * GiB
    assert plan.unit("kubepods.slice").properties["MemoryLimit"] == 16 * GiB - 2 * GiB
    assert plan.unit("kubepods.slice").properties["CPUShares"] == 7500 * 1024 // 1000
    loose = bounded + (MachineCharge("libpod-y.scope", "podman container y", 1000, 64 * MiB, bounded=False),)
    plan = build_plan(n, [], [], "v1", machines=loose)
    assert plan.unit("machine.slice").properties["MemoryLimit"] == INFINITY
    assert plan.unit("kubepods.slice").properties["MemoryLimit"] == 16 * GiB - 2 * GiB - 64 * MiB
    assert any(w.startswith("libpod-y.scope (podman container y) in machine.slice has no memory limit")
               for w in plan.warnings)
    assert build_plan(n, [], [], "v1").unit("machine.slice") is None  # nothing there: not planned


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 8 * GiB), st.booleans()), max_size=6),
       st.lists(st.sampled_from(["256Mi", "1Gi", "3Gi"]), max_size=3))
def test_pods_and_machines_never_exceed_allocatable(machines, vm_sizes):
    n = node(cpu="8", memory="16Gi")
    charges = [MachineCharge(f"m{i}.scope", "scope", cpu, mem, bounded) for i, (cpu, mem, bounded) in enumerate(machines)]
    plan = build_plan(n, [], [vm(f"v{i}", s) for i, s in enumerate(vm_sizes)], "v1", machines=charges)
    pods = plan.unit("kubepods.slice").properties["MemoryLimit"]
    counted = sum(v.limits["memory"] for v in plan.vms) + sum(c.memory for c in charges)
    machine = plan.unit("machine.slice")
    if counted >= plan.allocatable["memory"]:  # over-committed: said so (and pods get no limit, as kubelet's 0)
        assert any("reserve more than the node has for workloads" in w for w in plan.warnings)
        return
    assert pods + counted == plan.allocatable["memory"]
    if machine is not None and machine.properties["MemoryLimit"] != INFINITY:
        assert pods + machine.properties["MemoryLimit"] == plan.allocatable["memory"]
        assert all(c.bounded for c in charges)
