"""The QoS engine against tables transcribed from Kubernetes' own tests (tests/k8s_cases/*).

Each case carries its upstream source (repo, commit or index id, file and test function); the
test id is the upstream case name. Cases run without API defaulting, exactly as the Go tests
build their pods.
"""

from __future__ import annotations

import pytest

from sdqos.kube import qos
from sdqos.kube.model import CPU, MEMORY
from sdqos.kube.quantity import parse_quantity
from sdqos.plan.engine import build_plan, pod_resource_config

from ..helpers import node, pod_from
from ..k8s_cases import memory_reserve_cases, oom_cases, pod_requests_cases, qos_cases, resource_config_cases


def _ids(cases):
    return [c["name"] for c in cases]


def _pod_level(case) -> bool:
    return (case.get("gates") or {}).get("PodLevelResources", True)


# --- QoS class: qos_test.go TestComputePodQOS, kubectl TestGetPodQOS --------------------------


STATUS_ONLY = {"guaranteed pod with status", "burstable pod with status", "besteffort pod with status"}


@pytest.mark.parametrize("case", qos_cases.CASES, ids=_ids(qos_cases.CASES))
def test_qos_class(case):
    if case["name"] in STATUS_ONLY:
        pytest.skip("GetPodQOS returns status.qosClass as-is; sdqos computes the class from the spec")
    pod = pod_from(case["pod"], defaults=False)
    assert qos.pod_qos(pod, pod_level=_pod_level(case)) == case["qos"], case["source"]


@pytest.mark.parametrize("case", qos_cases.CASES_137, ids=_ids(qos_cases.CASES_137))
def test_qos_class_1_36_on_newer_cases(case):
    """Cases upstream added after 1.36: sdqos gives the 1.36 answer (derived in the table)."""
    pod = pod_from(case["pod"], defaults=False)
    assert qos.pod_qos(pod, pod_level=_pod_level(case)) == case["qos"], case["source"]


# --- PodRequests / PodLimits: component-helpers resource/helpers_test.go -----------------------


def _cpu_mem(d):
    return {k: v for k, v in d.items() if k in (CPU, MEMORY)}


@pytest.mark.parametrize("case", pod_requests_cases.CASES, ids=_ids(pod_requests_cases.CASES))
def test_pod_requests_and_limits(case):
    pod = pod_from(case["pod"], defaults=False)
    opts = case["options"]
    kwargs = dict(pod_level=not opts.get("skip_pod_level", False), exclude_overhead=opts.get("exclude_overhead", False))
    if case["requests"] is not None:
        want = {k: parse_quantity(v) for k, v in case["requests"].items()}
        assert _cpu_mem(qos.pod_requests(pod, **kwargs)) == want, case["source"]
    if case["limits"] is not None:
        want = {k: parse_quantity(v) for k, v in case["limits"].items()}
        assert _cpu_mem(qos.pod_limits(pod, **kwargs)) == want, case["source"]


# --- ResourceConfigForPod and conversions: helpers_linux_test.go -----------------------------


@pytest.mark.parametrize("case", resource_config_cases.CASES, ids=_ids(resource_config_cases.CASES))
def test_resource_config_for_pod(case):
    pod = pod_from(case["pod"], defaults=False)
    n = node(
        gates=case.get("gates"),
        cpu_cfs_quota=case["enforce_cpu_limits"],
        cpu_cfs_quota_period_us=case["quota_period_us"],
    )
    cls = qos.pod_qos(pod, pod_level=_pod_level(case))
    rc, _, _ = pod_resource_config(pod, cls, n, "v1")
    got = {"cpu_shares": rc.cpu_shares, "cpu_quota": rc.cpu_quota, "cpu_period": rc.cpu_period, "memory": rc.memory}
    assert got == case["expected"], case["source"]


@pytest.mark.parametrize("case", resource_config_cases.MEMORY_QOS_CASES, ids=_ids(resource_config_cases.MEMORY_QOS_CASES))
def test_resource_config_memory_qos(case):
    pod = pod_from(case["pod"], defaults=False)
    n = node(
        gates={"MemoryQoS": case["enforce_memory_qos"], **(case.get("gates") or {})},
        cpu_cfs_quota=case["enforce_cpu_limits"],
        cpu_cfs_quota_period_us=case["quota_period_us"],
        memory_reservation_policy=case["memory_reservation_policy"],
    )
    cls = qos.pod_qos(pod, pod_level=_pod_level(case))
    rc, _, _ = pod_resource_config(pod, cls, n, "v2")
    unified = {}
    if rc.memory_min:
        unified["memory.min"] = str(rc.memory_min)
    if rc.memory_low:
        unified["memory.low"] = str(rc.memory_low)
    assert (unified or None) == case["expected_unified"], case["source"]


@pytest.mark.parametrize("milli,shares", resource_config_cases.SHARES_CASES)
def test_milli_cpu_to_shares(milli, shares):
    assert qos.milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize("milli,period,quota", resource_config_cases.QUOTA_CASES)
def test_milli_cpu_to_quota(milli, period, quota):
    assert qos.milli_cpu_to_quota(milli, period) == quota


@pytest.mark.parametrize("shares,weight", resource_config_cases.WEIGHT_CASES)
def test_kubelet_cpu_weight(shares, weight):
    assert qos.shares_to_weight_kubelet(shares) == weight


# --- OOM score: policy_test.go ------------------------------------------------------------------


@pytest.mark.parametrize("case", oom_cases.CASES, ids=_ids(oom_cases.CASES))
def test_oom_score_adj(case):
    pod = pod_from(case["pod"], defaults=False)
    container = next(c for c in pod.all_containers() if c.name == case["container"])
    got = qos.container_oom_score_adj(pod, container, case["memory_capacity"], pod_level=_pod_level(case))
    if "expected" in case:
        assert got == case["expected"], case["source"]
    else:
        low, high = case["expected_range"]
        assert low <= got <= high, case["source"]


# --- QoS tiers: qos_container_manager_linux_test.go ---------------------------------------------


@pytest.mark.parametrize("case", memory_reserve_cases.CASES, ids=_ids(memory_reserve_cases.CASES))
def test_tier_memory_reserve(case):
    pods = [pod_from(p, defaults=False) for p in case["pods"]]
    alloc = case["allocatable"]
    n = node(cpu=alloc["cpu"], memory=alloc["memory"], gates={"QOSReserved": True}, qos_reserved={MEMORY: case["reserve_pct"]})
    plan = build_plan(n, pods, cgroup="v1")
    exp = case["expected"]
    assert plan.unit("kubepods-burstable.slice").resources.memory == exp["burstable"]
    assert plan.unit("kubepods-besteffort.slice").resources.memory == exp["besteffort"]
    if "burstable_cpu_shares" in exp:
        assert plan.unit("kubepods-burstable.slice").resources.cpu_shares == exp["burstable_cpu_shares"]
        assert plan.unit("kubepods-besteffort.slice").resources.cpu_shares == exp["besteffort_cpu_shares"]


@pytest.mark.parametrize("case", memory_reserve_cases.CPU_CASES, ids=_ids(memory_reserve_cases.CPU_CASES))
def test_tier_cpu_shares(case):
    pods = [pod_from(p, defaults=False) for p in case["pods"]]
    plan = build_plan(node(), pods, cgroup="v1")
    exp = case["expected"]
    assert plan.unit("kubepods-burstable.slice").resources.cpu_shares == exp["burstable_cpu_shares"]
    assert plan.unit("kubepods-besteffort.slice").resources.cpu_shares == exp["besteffort_cpu_shares"]


@pytest.mark.parametrize("case", memory_reserve_cases.MEMORY_QOS_CASES, ids=_ids(memory_reserve_cases.MEMORY_QOS_CASES))
def test_tier_memory_qos(case):
    pods = [pod_from(p, defaults=False) for p in case["pods"]]
    gates = {"MemoryQoS": True, **(case.get("gates") or {})}
    n = node(gates=gates, memory_reservation_policy=case["memory_reservation_policy"])
    plan = build_plan(n, pods, cgroup="v2")
    exp = case["expected"]
    kubepods = plan.unit("kubepods.slice").properties
    burstable = plan.unit("kubepods-burstable.slice").properties
    if exp.get("guaranteed_memory_min") is not None:
        assert kubepods["MemoryMin"] == int(exp["guaranteed_memory_min"])
    if exp.get("burstable_memory_low") is not None:
        assert burstable["MemoryLow"] == int(exp["burstable_memory_low"])
