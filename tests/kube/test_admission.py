"""kubelet's admission (sdqos/kube/admission.py) against the cases of the scheduler's Fit plugin
that kubelet runs, the effective pod count (maxPods, podsPerCore), and plan's flags."""

from __future__ import annotations

import pytest

from sdqos.kube import admission, qos
from sdqos.kube.model import CPU, MEMORY, PID, Container, NodeConfig, Pod
from sdqos.kube.nodeconfig import parse_node_config
from sdqos.kube.quantity import parse_quantity as q
from sdqos.plan.engine import build_plan

from ..k8s_cases import admission_cases


def _requests(spec) -> dict[str, int]:
    def c(name, cpu, mem, init=False):
        return Container(name, {CPU: q(f"{cpu}m"), MEMORY: q(str(mem))}, {}, init=init)

    pod = Pod("p", "ns", "u", tuple(c(f"c{i}", *r) for i, r in enumerate(spec["containers"])),
              tuple(c(f"i{i}", *r, init=True) for i, r in enumerate(spec["init"])))
    reqs = qos.pod_requests(pod)
    return {CPU: reqs[CPU].milli_value() if CPU in reqs else 0, MEMORY: reqs[MEMORY].value() if MEMORY in reqs else 0}


@pytest.mark.parametrize("case", admission_cases.CASES, ids=lambda c: c["name"])
def test_fit_cases(case):
    used = {CPU: case["used"][0], MEMORY: case["used"][1]}
    why = admission.fits(case["allocatable"], [used], _requests(case["pod"]))
    if case["expected"] is None:
        assert why is None
    else:
        assert why is not None and (why.resource, why.requested, why.used, why.capacity) == case["expected"]
        assert why.reason == f"OutOf{case['expected'][0]}"
        assert why.message == ("Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}"
                               .format(*case["expected"]))


DETECTED = {CPU: q("4"), MEMORY: q("8Gi"), PID: q("32768")}


@pytest.mark.parametrize("max_pods,per_core,allowed", [(110, 0, 110), (110, 10, 40), (20, 10, 20), (0, 10, 0)])
def test_pods_per_core_caps_max_pods(max_pods, per_core, allowed):
    node, errors = parse_node_config({"maxPods": max_pods, "podsPerCore": per_core}, DETECTED)
    assert errors == []
    assert admission.allowed_pods(node, 4000) == allowed


def test_node_allocatable_subtracts_reservations_and_hard_eviction():
    node, errors = parse_node_config({"kubeReserved": {"cpu": "500m", "memory": "1Gi"},
                                      "systemReserved": {"memory": "1Gi"}}, DETECTED)
    assert errors == []
    alloc = admission.node_allocatable(node, {CPU: 4000, MEMORY: 8 * 2**30})
    assert alloc == {CPU: 3500, MEMORY: 6 * 2**30 - 100 * 2**20, admission.PODS: 110}


def _pod(name: str, cpu: str) -> Pod:
    return Pod(name, "default", name, (Container("c", {CPU: q(cpu), MEMORY: q("1Gi")}, {}),))


def test_plan_flags_pods_beyond_max_pods_in_config_order():
    node, _ = parse_node_config({"maxPods": 1}, DETECTED)
    plan = build_plan(node, [_pod("a", "1"), _pod("b", "1"), _pod("c", "1")])
    assert list(plan.not_admitted) == ["default/b", "default/c"]
    assert "pod default/b would not be admitted: OutOfpods (1 of 1 pods admitted)" in plan.warnings


def test_plan_flags_the_pod_whose_cpu_does_not_fit_and_admits_those_after_it_that_do():
    node, _ = parse_node_config({"reservedSystemCPUs": "0"}, DETECTED, online_cpus=frozenset(range(4)))
    plan = build_plan(node, [_pod("a", "2"), _pod("b", "2"), _pod("c", "1")])
    assert {k: v.reason for k, v in plan.not_admitted.items()} == {"default/b": "OutOfcpu"}
    assert "pod default/b would not be admitted: OutOfcpu (1 of 3 CPU left)" in plan.warnings


def test_nothing_flagged_when_everything_fits():
    node = NodeConfig(capacity=DETECTED, capacity_source={})
    assert build_plan(node, [_pod("a", "1")]).not_admitted == {}
