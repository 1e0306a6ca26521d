"""explain gives MemoryMin/MemoryLow/MemoryHigh their formula (MemoryQoS, KEP-2570): every v2
memory property of every unit has a reason, and memory.high's reason is kubelet's formula with the
numbers that give the planned value."""

from __future__ import annotations

import math
import re

import pytest

from sdqos import humanize as H
from sdqos.plan.engine import build_plan
from sdqos.plan.explain import _WHY_KEY, explain_pod

from ..helpers import node, pod_from

MI = 2**20


def pod(name: str, requests: dict | None, limits: dict | None):
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return pod_from({"metadata": {"name": name, "namespace": "t"},
                     "spec": {"containers": [{"name": "c", "resources": res}]}})


PODS = [pod("g", {"cpu": "1", "memory": "256Mi"}, {"cpu": "1", "memory": "256Mi"}),
        pod("b", {"memory": "64Mi"}, {"memory": "512Mi"}),
        pod("r", {"memory": "64Mi"}, None),
        pod("be", None, None)]


@pytest.mark.parametrize("policy", ["TieredReservation", "None"])
@pytest.mark.parametrize("gate", [True, False])
def test_every_v2_memory_property_has_its_reason(policy, gate):
    n = node(gates={"MemoryQoS": gate}, memory_reservation_policy=policy)
    plan = build_plan(n, PODS, cgroup="v2", explain=True)
    for u in plan.units:
        if u.kind in ("node", "tier", "pod", "container"):
            for prop in ("MemoryMin", "MemoryLow", "MemoryHigh"):
                assert u.why.get(_WHY_KEY[prop]), (u.name, prop)
    for pp in plan.pods:
        text = explain_pod(plan, pp)
        for prop in ("MemoryMin", "MemoryLow", "MemoryHigh"):
            for block in re.findall(rf"    {prop} .*\n(.*)", text):
                assert block.startswith("      = "), (pp.key, prop, block)


def test_memory_high_reason_is_kubelets_formula_with_the_numbers_that_give_the_value():
    n = node(memory="16Gi", gates={"MemoryQoS": True}, memory_reservation_policy="TieredReservation")
    plan = build_plan(n, PODS, cgroup="v2", explain=True)
    for key, limit, what in (("t/b", 512 * MI, "memory limit"), ("t/r", plan.allocatable["memory"],
                                                                   "node allocatable memory")):
        c = plan.pod(key).containers[0]
        req = 64 * MI
        want = math.floor((req + 0.9 * (limit - req)) / n.page_size) * n.page_size
        assert c.properties["MemoryHigh"] == want
        why = c.why["memory_high"]
        assert f"{H.size(req)} request + memoryThrottlingFactor 0.9 × ({H.size(limit)} {what}" in why, why
        assert c.why["memory_low"].startswith(f"the container's memory request {H.size(req)}")
    g = plan.pod("t/g")
    assert g.why["memory_min"].startswith("pod memory request 256 MiB") and g.properties["MemoryMin"] == 256 * MI
    assert g.containers[0].why["memory_high"].startswith("max: the memory request equals the limit")
    kubepods = plan.unit(plan.root_slice)
    assert kubepods.properties["MemoryMin"] == (256 + 64 + 64) * MI
    assert kubepods.why["memory_min"] == "Σ Guaranteed requests 256 MiB + Σ Burstable requests 128 MiB (TieredReservation)"
    assert plan.unit("kubepods-burstable.slice").why["memory_low"] == "Σ Burstable requests 128 MiB (TieredReservation)"
