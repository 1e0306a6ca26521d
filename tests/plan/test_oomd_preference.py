"""systemd-oomd's ManagedOOMPreference on the scopes sdqos creates (cgroup v2): what kubelet never
evicts is omitted, Guaranteed avoided, Burstable and BestEffort left to oomd's own order — so oomd,
where it runs, never picks a Guaranteed or critical workload while a BestEffort one is left.
The real oomd's choice is tested in tests/v2/test_v2_oomd.py."""

from __future__ import annotations

import pytest

from sdqos.kube.model import CPU, MEMORY, VirtualMachine
from sdqos.kube.quantity import parse_quantity
from sdqos.plan.creation import create_properties
from sdqos.plan.engine import build_plan
from sdqos.plan.properties import oomd_preference

from ..helpers import node, pod_from


def one_pod(requests=None, limits=None, priority_class=None):
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    spec: dict = {"containers": [{"name": "c", "resources": res}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return pod_from({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


GUARANTEED = ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})


@pytest.mark.parametrize("requests, limits, pc, want", [
    (*GUARANTEED, None, "avoid"),
    ({"memory": "1Gi"}, None, None, "none"),  # Burstable
    (None, None, None, "none"),  # BestEffort
    ({"memory": "1Gi"}, None, "system-node-critical", "omit"),  # critical: kubelet never evicts it
    (*GUARANTEED, "system-cluster-critical", "omit"),
])
def test_container_scopes_carry_the_qos_order_on_v2(requests, limits, pc, want):
    plan = build_plan(node(), [one_pod(requests, limits, pc)], cgroup="v2", explain=True)
    c = plan.pods[0].containers[0]
    assert c.resources.oomd_preference == want
    assert c.why["oomd_preference"].startswith(("critical pod", "Guaranteed", "Burstable", "BestEffort"))
    props = create_properties(plan.unit(c.scope))
    assert props["ManagedOOMPreference"] == want
    assert "ManagedOOMPreference" not in c.properties  # sent at creation only: not diffed, never "drift"


def test_nothing_on_v1_and_nothing_on_slices():
    plan = build_plan(node(), [one_pod(*GUARANTEED)], cgroup="v1")
    assert plan.pods[0].containers[0].resources.oomd_preference is None
    assert all("ManagedOOMPreference" not in create_properties(u) for u in plan.units)
    plan = build_plan(node(), [one_pod(*GUARANTEED)], cgroup="v2")
    assert all("ManagedOOMPreference" not in create_properties(u) for u in plan.units if u.name.endswith(".slice"))


def vm(eviction: str, guaranteed: bool) -> VirtualMachine:
    req = {CPU: parse_quantity("1"), MEMORY: parse_quantity("1Gi")}
    return VirtualMachine(name="v", requests=req, limits=dict(req) if guaranteed else {},
                          overhead={MEMORY: parse_quantity("64Mi")}, eviction=eviction)


@pytest.mark.parametrize("eviction, guaranteed, want", [
    ("Never", True, "omit"), ("Never", False, "omit"),  # sdqos never evicts it: neither may oomd
    ("Allowed", True, "avoid"), ("Allowed", False, "none"),
])
def test_vm_scopes(eviction, guaranteed, want):
    plan = build_plan(node(), [], [vm(eviction, guaranteed)], cgroup="v2", explain=True)
    assert plan.vms[0].resources.oomd_preference == want
    assert plan.vms[0].why["oomd_preference"]
    assert build_plan(node(), [], [vm(eviction, guaranteed)], cgroup="v1").vms[0].resources.oomd_preference is None


def test_the_order_never_puts_guaranteed_or_critical_before_besteffort():
    """oomd takes "none" before "avoid" and never "omit": rank the three the way it sorts them."""
    rank = {"none": 0, "avoid": 1, "omit": 2}
    be = rank[oomd_preference("BestEffort")[0]]
    assert be <= rank[oomd_preference("Burstable")[0]] < rank[oomd_preference("Guaranteed")[0]]
    assert rank[oomd_preference("BestEffort", critical=True)[0]] == 2
