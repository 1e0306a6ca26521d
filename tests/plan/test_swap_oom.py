"""kubelet's cgroup v2 container settings beyond the resource table: memory.swap.max by
memorySwap.swapBehavior (kuberuntime configureContainerSwapResources / calcSwapForBurstablePods) and
memory.oom.group by singleProcessOOMKill, carried as MemorySwapMax and the scope's OOMPolicy."""

from __future__ import annotations

import pytest

from sdqos.kube.model import MEMORY, SWAP
from sdqos.kube.nodeconfig import parse_node_config
from sdqos.kube.quantity import parse_quantity
from sdqos.plan.engine import build_plan
from sdqos.plan.properties import oom_policy
from sdqos.plan.creation import create_properties

from ..helpers import node, pod_from

GI = 2**30


def one_pod(requests=None, limits=None, priority_class=None):
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    spec = {"containers": [{"name": "c", "resources": res}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return pod_from({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


def container(p, cgroup="v2", **kw):
    plan = build_plan(node(memory="16Gi", **kw), [p], cgroup=cgroup)
    return plan.pods[0].containers[0]


# (requests, limits, priority class, behaviour, expected memory.swap.max) with 16 GiB of memory and
# 4 GiB of swap: LimitedSwap gives request/16Gi × 4Gi to Burstable containers whose memory request
# differs from their limit, 0 to everything else; NoSwap gives 0 to all.
CASES = [
    ({"memory": "1Gi"}, None, None, "LimitedSwap", GI // 4),  # Burstable, request only
    ({"memory": "1Gi"}, {"memory": "2Gi"}, None, "LimitedSwap", GI // 4),
    ({"memory": "3Gi", "cpu": "1"}, {"memory": "3Gi", "cpu": "1"}, None, "LimitedSwap", 0),  # Guaranteed
    ({"memory": "1Gi"}, {"memory": "1Gi"}, None, "LimitedSwap", 0),  # Burstable (no cpu), request == limit
    ({"cpu": "1"}, None, None, "LimitedSwap", 0),  # Burstable without any memory
    (None, None, None, "LimitedSwap", 0),  # BestEffort
    ({"memory": "1Gi"}, None, "system-node-critical", "LimitedSwap", 0),  # critical
    ({"memory": "1Gi"}, None, None, "NoSwap", 0),
    (None, None, None, "NoSwap", 0),
    ({"memory": "3Gi", "cpu": "1"}, {"memory": "3Gi", "cpu": "1"}, None, "NoSwap", 0),
    ({"memory": "1000Mi"}, None, None, "LimitedSwap", int(1000 * 2**20 / (16 * GI) * 4 * GI)),
]


@pytest.mark.parametrize("requests,limits,pc,behavior,swap", CASES)
def test_swap_as_kubelet_computes_it(requests, limits, pc, behavior, swap):
    c = container(one_pod(requests, limits, pc), swap_behavior=behavior, swap_capacity=4 * GI)
    assert c.resources.swap == swap
    assert c.properties["MemorySwapMax"] == swap


def test_limited_swap_is_floor_of_the_float_product():
    # calcSwapForBurstablePods: int64(float64(req)/float64(total) * float64(swap)); 1 byte of 3 bytes of memory
    c = container(one_pod({"memory": "333333333"}), swap_behavior="LimitedSwap", swap_capacity=10**9 + 7)
    assert c.resources.swap == int(333333333 / (16 * GI) * (10**9 + 7))


def test_no_swap_setting_on_v1_or_for_pods_tiers_and_vms():
    p = one_pod({"memory": "1Gi"})
    v1 = container(p, cgroup="v1", swap_behavior="LimitedSwap", swap_capacity=GI)
    assert "MemorySwapMax" not in v1.properties and v1.resources.swap is None and v1.resources.oom_group is None
    plan = build_plan(node(), [p], cgroup="v2")
    containers = {c.scope for pp in plan.pods for c in pp.containers}
    for u in plan.units:
        assert ("MemorySwapMax" in u.properties) == (u.name in containers), u.name


@pytest.mark.parametrize("single,group,policy", [(None, True, "kill"), (False, True, "kill"), (True, False, "continue")])
def test_oom_group_by_single_process_oom_kill(single, group, policy):
    c = container(one_pod({"memory": "1Gi"}), single_process_oom_kill=single)
    assert c.resources.oom_group is group
    assert oom_policy(c.resources) == policy
    plan = build_plan(node(single_process_oom_kill=single), [one_pod({"memory": "1Gi"})], cgroup="v2")
    scope = plan.unit(plan.pods[0].containers[0].scope)
    assert create_properties(scope)["OOMPolicy"] == policy
    slice_ = plan.unit(plan.pods[0].slice)
    assert "OOMPolicy" not in create_properties(slice_)


def test_v1_scopes_keep_systemds_oom_policy():
    plan = build_plan(node(), [one_pod({"memory": "1Gi"})], cgroup="v1")
    assert "OOMPolicy" not in create_properties(plan.unit(plan.pods[0].containers[0].scope))


def test_explain_says_why():
    plan = build_plan(node(swap_behavior="LimitedSwap", swap_capacity=4 * GI), [one_pod({"memory": "1Gi"})],
                      cgroup="v2", explain=True)
    why = plan.pods[0].containers[0].why
    assert why["swap"] == "1 GiB request / 16 GiB node memory × 4 GiB node swap (LimitedSwap)"
    assert why["oom_group"].startswith("memory.oom.group=1")


DETECTED = {"cpu": parse_quantity("4"), MEMORY: parse_quantity("8Gi"), "pid": parse_quantity("32768"),
            SWAP: parse_quantity("2Gi")}


@pytest.mark.parametrize("raw,errors,behavior,single,swap", [
    ({}, [], "NoSwap", None, 2 * GI),
    ({"memorySwap": {"swapBehavior": ""}}, [], "NoSwap", None, 2 * GI),
    ({"memorySwap": {"swapBehavior": "LimitedSwap"}, "singleProcessOOMKill": True}, [], "LimitedSwap", True, 2 * GI),
    ({"capacity": {"swap": "1Gi"}}, [], "NoSwap", None, GI),
    ({"memorySwap": {"swapBehavior": "UnlimitedSwap"}},
     ["node.yaml: memorySwap.swapBehavior: 'UnlimitedSwap' must be one of: \"\", \"NoSwap\" or \"LimitedSwap\""],
     "NoSwap", None, 2 * GI),
    ({"memorySwap": {"swapBehaviour": "LimitedSwap"}}, ["node.yaml: memorySwap.swapBehaviour: unknown field"],
     "NoSwap", None, 2 * GI),
    ({"singleProcessOOMKill": "yes"}, ["node.yaml: singleProcessOOMKill: must be true or false, not 'yes'"],
     "NoSwap", None, 2 * GI),
    ({"capacity": {"swap": "lots"}}, ['node.yaml: capacity.swap: "lots" is not a quantity'], "NoSwap", None, 0),
])
def test_node_yaml_fields(raw, errors, behavior, single, swap):
    cfg, errs = parse_node_config(raw, DETECTED)
    assert [str(e) for e in errs] == errors
    assert (cfg.swap_behavior, cfg.single_process_oom_kill, cfg.swap_capacity) == (behavior, single, swap)
