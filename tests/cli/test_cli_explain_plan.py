"""What `plan` and `explain` show beyond the values (issues 31 and 32): the eviction thresholds in
force, each container's OOMPolicy and the properties it is created with (the very dict apply and
run use), and a pod's eviction rank, through the real command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos.plan.creation import create_properties, grace_period_us

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def sdqos(*args):
    return subprocess.run([sys.executable, "-m", "sdqos", *args], capture_output=True, text=True)


@pytest.fixture
def config(tmp_path):
    d = tmp_path / "cfg"
    shutil.copytree(EXAMPLES, d)
    return d


def test_plan_shows_the_thresholds_in_force(config):
    node = config / "node.yaml"
    node.write_text(node.read_text() + "evictionSoft: {memory.available: 10%}\n"
                    "evictionSoftGracePeriod: {memory.available: 1m30s}\n"
                    "evictionMinimumReclaim: {memory.available: 300Mi}\nevictionMaxPodGracePeriod: 20\n")
    r = sdqos("plan", "--config", str(config), "--cgroup", "v1", "-o", "json")
    assert r.returncode == 0, r.stderr
    ev = json.loads(r.stdout)["eviction"]
    assert [(t["signal"], t["hard"], t["value"], t["gracePeriodSeconds"], t["minimumReclaim"])
            for t in ev["thresholds"]] == [
        ("memory.available", True, {"quantity": 200 * 2**20}, 0, {"quantity": 300 * 2**20}),
        ("memory.available", False, {"percentage": "10%"}, 90, {"quantity": 300 * 2**20}),
        ("allocatableMemory.available", True, {"quantity": 200 * 2**20}, 0, {"quantity": 300 * 2**20}),
    ]
    assert ev["maxPodGracePeriodSeconds"] == 20 and ev["pressureTransitionPeriodSeconds"] == 300
    text = sdqos("plan", "--config", str(config), "--cgroup", "v1").stdout
    assert "  memory.available < 200Mi  hard\n    minimum reclaim 300Mi\n" in text
    assert "  memory.available < 10%  soft, after 90s\n" in text
    assert "  allocatableMemory.available < 200Mi  hard (copy of memory.available)\n" in text
    assert "  evictionMaxPodGracePeriod 20s, evictionPressureTransitionPeriod 300s" in text


def test_plan_default_threshold_is_kubelets(tmp_path):
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "1000"}\n')
    text = sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure").stdout
    assert "  memory.available < 100Mi  hard (kubelet's default)\n" in text


def test_plan_json_has_oom_policy_and_the_creation_values(config):
    from sdqos.loading.load import load

    r = sdqos("plan", "--config", str(config), "--cgroup", "v2", "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    _, plan = load(config, "v2", machines=())
    web = next(p for p in data["pods"] if p["name"] == "web")
    pp = plan.pod("shop/web")
    for c, cp in zip(web["containers"], pp.containers):
        assert c["oomPolicy"] == "kill"  # memory.oom.group, kubelet's v2 default
        assert c["create"] == json.loads(json.dumps(create_properties(plan.unit(cp.scope), grace_period_us(pp.grace_period))))
        assert c["create"]["Delegate"] is True and c["create"]["CollectMode"] == "inactive-or-failed"
        assert c["create"]["OOMPolicy"] == "kill" and c["create"]["TimeoutStopUSec"] == grace_period_us(pp.grace_period)
    units = {u["name"]: u for u in data["units"]}
    assert units["kubepods-burstable.slice"]["create"]["Wants"] == ["kubepods.slice"]
    v1 = json.loads(sdqos("plan", "--config", str(config), "--cgroup", "v1", "-o", "json").stdout)
    assert all(c["oomPolicy"] is None and "OOMPolicy" not in c["create"] for p in v1["pods"] for c in p["containers"])


def test_explain_tells_the_eviction_rank_or_why_there_is_none(config, tmp_path):
    r = sdqos("explain", "--config", str(config), "--cgroup", "v1", "shop/web")
    assert r.returncode == 0, r.stderr
    assert "  Eviction (kubelet's node-pressure order; docs/eviction.md)\n    Burstable, priority 0, memory request" in r.stdout
    assert "    no rank: " in r.stdout  # nothing of the example runs here
    new = tmp_path / "new.yaml"
    new.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: extra, namespace: shop}\n"
                   "spec:\n  containers:\n  - name: c\n    resources: {requests: {memory: 1Gi}}\n")
    doc = json.loads(sdqos("explain", "--config", str(config), "--cgroup", "v1", str(new), "-o", "json").stdout)
    ev = doc["pods"][0]["eviction"]
    assert ev["memoryRequest"] == 2**30 and ev["orders"] == [] and "what-if" in ev["why"]
    assert doc["machines"] == [] and "kubepods.slice" in doc["pods"][0]["tiers"]


def test_explain_of_a_what_if_file_clashing_with_a_pod_exits_2(config, tmp_path):
    from sdqos.kube.manifests import stable_uid

    clash = tmp_path / "clash.yaml"
    clash.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: other, namespace: shop, uid: "
                     f"{stable_uid('shop', 'web')}}}\nspec:\n  containers:\n  - name: c\n")
    r = sdqos("explain", "--config", str(config), "--cgroup", "v1", str(clash))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("sdqos: error: ") and "uid" in r.stderr, r.stderr


def test_explain_asks_podman_nothing_when_the_pods_slice_runs_nothing(config, tmp_path):
    """A pod whose slice holds no process has no running container: podman is not asked (a
    `podman ps` on a host sets up its storage, /var/lib/containers, and takes its locks). The
    podman here only records that it was called."""
    calls = tmp_path / "podman-calls"
    fake = tmp_path / "podman"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\necho '[]'\n")
    fake.chmod(0o755)
    r = subprocess.run([sys.executable, "-m", "sdqos", "explain", "shop/web", "--config", str(config), "--cgroup", "v1"],
                       capture_output=True, text=True, env={**__import__("os").environ, "SDQOS_PODMAN": str(fake)})
    assert r.returncode == 0, r.stderr
    assert not calls.exists(), calls.read_text()


def test_plan_shows_a_soft_threshold_with_grace_0_as_soft_and_hard_not_as_the_default(tmp_path):
    """evictionSoft with grace period 0 is hard to kubelet (isHardEvictionThreshold), but it is not
    kubelet's default evictionHard: plan says where it came from."""
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "1000"}\n'
                                 "evictionSoft: {memory.available: 300Mi}\nevictionSoftGracePeriod: {memory.available: 0s}\n")
    r = sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure")
    assert r.returncode == 0, r.stderr
    assert "  memory.available < 100Mi  hard (kubelet's default)\n" in r.stdout
    assert "  memory.available < 300Mi  hard (evictionSoft, grace period 0)\n" in r.stdout
    ev = json.loads(sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure", "-o", "json").stdout)["eviction"]
    assert [(t["signal"], t["value"], t["hard"], t["from"]) for t in ev["thresholds"]] == [
        ("memory.available", {"quantity": 100 * 2**20}, True, "evictionHard, kubelet's default"),
        ("memory.available", {"quantity": 300 * 2**20}, True, "evictionSoft with grace period 0: hard"),
        ("allocatableMemory.available", {"quantity": 100 * 2**20}, True,
         "copied from evictionHard memory.available: enforceNodeAllocatable has pods"),
        ("allocatableMemory.available", {"quantity": 300 * 2**20}, True,
         "copied from evictionSoft memory.available: enforceNodeAllocatable has pods"),
    ]
