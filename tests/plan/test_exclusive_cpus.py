"""The plan given the static CPU manager's assignments (an input, like the last sync's record):
kubelet drops the CFS quota of a pod holding exclusive CPUs and of each container holding them
(DisableCPUQuotaWithExclusiveCPUs), keeps it on the pod's other containers, and explain says which
CPUs a container holds."""

from __future__ import annotations

from sdqos.plan.engine import plan_basis, plan_pod
from sdqos.plan.properties import INFINITY

from ..helpers import node, pod_from


def _pod():
    res = lambda cpu: {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}  # noqa: E731
    return pod_from({"metadata": {"name": "gu", "namespace": "default", "uid": "uid-gu"},
                     "spec": {"containers": [{"name": "app", "image": "i", "resources": res("2")},
                                             {"name": "side", "image": "i", "resources": res("500m")}]}})


def _plan(gates=None, exclusive=None):
    ctx = plan_basis(node("4", gates=gates or {}), cgroup="v1").context
    return plan_pod(_pod(), ctx, explain=True, exclusive=exclusive)


def test_without_assignments_every_quota_stays():
    pp = _plan()
    assert pp.properties["CPUQuotaPerSecUSec"] == 2_500_000
    assert [c.properties["CPUQuotaPerSecUSec"] for c in pp.containers] == [2_000_000, 500_000]
    assert [c.cpus for c in pp.containers] == ["", ""] and "cpus" not in pp.containers[0].why


def test_exclusive_cpus_drop_the_quota_of_the_pod_and_of_that_container_only():
    pp = _plan(exclusive={"app": "2-3"})
    app, side = pp.containers
    assert pp.properties["CPUQuotaPerSecUSec"] == INFINITY
    assert app.properties["CPUQuotaPerSecUSec"] == INFINITY and side.properties["CPUQuotaPerSecUSec"] == 500_000
    assert app.cpus == "2-3" and side.cpus == ""
    assert app.why["cpus"] == "exclusive: Guaranteed, 2 integer CPUs, CPUs 2-3"
    assert app.why["cpu_quota"].startswith("no quota: the container holds exclusive CPUs (DisableCPUQuotaWithExclusiveCPUs")
    assert pp.why["cpu_quota"].startswith("no quota: a container of the pod holds exclusive CPUs")
    assert side.why["cpu_quota"].startswith("50000µs per 100000µs period")


def test_with_the_gate_off_the_quotas_stay_and_the_cpus_are_still_said():
    pp = _plan(gates={"DisableCPUQuotaWithExclusiveCPUs": False}, exclusive={"app": "2-3"})
    assert pp.properties["CPUQuotaPerSecUSec"] == 2_500_000
    assert pp.containers[0].properties["CPUQuotaPerSecUSec"] == 2_000_000 and pp.containers[0].cpus == "2-3"


def test_explain_says_the_cpus_in_text_and_json():
    from sdqos.plan.engine import build_plan
    from sdqos.plan.explain import explain_json, explain_pod

    pp = _plan(exclusive={"app": "2-3"})
    plan = build_plan(node("4"), [], explain=True)
    text = explain_pod(plan, pp)
    assert "CPUs" in text and "= exclusive: Guaranteed, 2 integer CPUs, CPUs 2-3" in text
    app, side = explain_json(pp)["containers"]
    assert app["cpus"] == "2-3" and app["cpusWhy"] == "exclusive: Guaranteed, 2 integer CPUs, CPUs 2-3"
    assert "cpus" not in side


def test_with_the_hosts_topology_explain_says_where_the_cpus_lie():
    """explain reads the topology (loading/incremental): "whole core 2" as the issue's operator
    would read it, on kubelet's single-socket HT test topology (cores 0-3, threads c and c+4)."""
    from ..kube.test_cpumanager import topo

    t = topo("topoSingleSocketHT")
    ctx = plan_basis(node("4"), cgroup="v1", explain=True, topology=t).context
    app = plan_pod(_pod(), ctx, explain=True, exclusive={"app": "2,6"}).containers[0]
    assert app.why["cpus"] == "exclusive: Guaranteed, 2 integer CPUs, whole core 2 (CPUs 2,6)"
    app = plan_pod(_pod(), ctx, explain=True, exclusive={"app": "1-2"}).containers[0]
    assert app.why["cpus"] == ("exclusive: Guaranteed, 2 integer CPUs, core 1 (1 of 2 threads), "
                               "core 2 (1 of 2 threads) (CPUs 1-2)")
