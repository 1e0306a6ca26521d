"""The engine's own rules: systemd property mapping, quota rounding, allocatable, VM budget, naming."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sdqos.kube import naming, qos
from sdqos.kube.model import CPU, MEMORY, VirtualMachine
from sdqos.kube.quantity import parse_quantity
from sdqos.plan.engine import build_plan
from sdqos.plan.properties import INFINITY, ResourceConfig, kernel_quota_us, owned, quota_per_sec_usec, to_properties

from ..helpers import node, pod_from


def pod(name, requests=None, limits=None, ns="default", **spec):
    res = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return pod_from({"metadata": {"name": name, "namespace": ns}, "spec": {"containers": [{"name": "c", "resources": res}], **spec}})


# runc's addCPUQuota test vectors (opencontainers/cgroups systemd/common_test.go) and derived ones.
@pytest.mark.parametrize(
    "quota,period,per_sec,kernel",
    [
        (123456, 100_000, 1_240_000, 124_000),
        (500_000, 900_000, 560_000, 504_000),
        (1_500, 100_000, 20_000, 2_000),  # a 15m limit: kubelet on systemd ends up with 2000
        (1_000, 100_000, 10_000, 1_000),  # 5m → kubelet's 1 ms minimum
        (100_000, 100_000, 1_000_000, 100_000),
    ],
)
def test_quota_rounding_as_runc(quota, period, per_sec, kernel):
    assert quota_per_sec_usec(quota, period) == per_sec
    assert kernel_quota_us(per_sec, period) == kernel


def test_no_quota_is_infinity():
    assert quota_per_sec_usec(0, 100_000) == INFINITY
    assert quota_per_sec_usec(-1, 100_000) == INFINITY
    assert quota_per_sec_usec(None, None) == INFINITY


@pytest.mark.parametrize("shares,linear,runc", [(2, 1, 1), (10, 1, 4), (102, 4, 17), (512, 20, 59), (1024, 39, 100), (2048, 79, 174), (4096, 157, 303), (16384, 625, 942), (262144, 10000, 10000)])
def test_v2_weights(shares, linear, runc):
    """Worked values of the fact sheet (§8): kubelet's linear rule vs runc ≥1.3.2's."""
    assert qos.shares_to_weight_kubelet(shares) == linear
    assert qos.shares_to_weight_runc(shares) == runc


def test_properties_v1_and_v2_always_complete():
    rc = ResourceConfig(cpu_shares=512, cpu_quota=50_000, cpu_period=100_000, memory=2**30, pids=100)
    v1 = to_properties(rc, "v1", 100_000)
    assert v1 == {"CPUShares": 512, "CPUQuotaPerSecUSec": 500_000, "MemoryLimit": 2**30, "TasksMax": 100}
    v2 = to_properties(rc, "v2", 100_000)
    assert v2 == {"CPUWeight": 20, "CPUQuotaPerSecUSec": 500_000, "MemoryMax": 2**30, "MemoryMin": 0,
                  "MemoryLow": 0, "MemoryHigh": INFINITY, "TasksMax": 100}
    empty = to_properties(ResourceConfig(), "v1", 100_000)
    assert empty == {"CPUShares": 1024, "CPUQuotaPerSecUSec": INFINITY, "MemoryLimit": INFINITY, "TasksMax": INFINITY}
    assert set(v1) <= set(owned("v1")) and set(v2) <= set(owned("v2"))


def test_custom_period_adds_period_property_everywhere():
    n = node(cpu_cfs_quota_period_us=50_000)
    plan = build_plan(n, [pod("g", limits={"cpu": "1", "memory": "1Gi"})])
    for u in plan.units:
        assert u.properties["CPUQuotaPeriodUSec"] == 50_000, u.name
    g = plan.pods[0]
    assert g.resources.cpu_quota == 50_000 and g.properties["CPUQuotaPerSecUSec"] == 1_000_000
    assert all("CPUQuotaPeriodUSec" not in u.properties for u in build_plan(node(), []).units)


def test_cpu_cfs_quota_false_removes_all_quotas():
    plan = build_plan(node(cpu_cfs_quota=False), [pod("g", limits={"cpu": "1", "memory": "1Gi"})])
    assert all(u.properties["CPUQuotaPerSecUSec"] == INFINITY for u in plan.units)
    assert plan.pods[0].resources.cpu_quota == -1  # kubelet's "no limit"


def test_allocatable_and_node_slice():
    n = node(cpu="4", memory="8Gi", pids="1000", kube_reserved={"cpu": "500m", "memory": "1Gi", "pid": "100"},
             system_reserved={"cpu": "500m"}, pod_pids_limit=256)
    plan = build_plan(n, [])
    assert plan.allocatable == {CPU: 3000, MEMORY: 7 * 2**30, "pid": 900}
    kp = plan.unit("kubepods.slice")
    assert kp.slice == "-.slice" and kp.kind == "node"
    assert kp.properties == {"CPUShares": 3072, "CPUQuotaPerSecUSec": INFINITY, "MemoryLimit": 7 * 2**30, "TasksMax": 900}


def test_allocatable_floors_at_zero_and_capacity_without_pods_enforcement():
    n = node(cpu="1", kube_reserved={"cpu": "2"})
    assert build_plan(n, []).allocatable[CPU] == 0
    n2 = node(cpu="4", kube_reserved={"cpu": "1"}, enforce_node_allocatable=frozenset())
    assert build_plan(n2, []).unit("kubepods.slice").properties["CPUShares"] == 4096  # capacity


def test_tree_names_and_parents():
    n = node(cgroup_root=("custom",))
    plan = build_plan(n, [pod("g", limits={"cpu": "1", "memory": "1Gi"}, ns="a"), pod("b", requests={"cpu": "1"}), pod("e")])
    by_kind = {u.name: u.slice for u in plan.units}
    assert by_kind["custom-kubepods.slice"] == "custom.slice"
    assert by_kind["custom-kubepods-burstable.slice"] == "custom-kubepods.slice"
    g, b, e = (p for p in sorted(plan.pods, key=lambda p: p.qos, reverse=True))
    assert g.slice == f"custom-kubepods-pod{g.pod.uid.replace('-', '_')}.slice"
    assert by_kind[g.slice] == "custom-kubepods.slice"
    assert by_kind[b.slice] == "custom-kubepods-burstable.slice"
    assert by_kind[e.slice] == "custom-kubepods-besteffort.slice"
    assert b.slice.count("-") == 3 and "_" in b.slice  # the uid's dashes never add levels


def test_overcommit_warning():
    plan = build_plan(node(cpu="1"), [pod("a", requests={"cpu": "800m"}), pod("b", requests={"cpu": "800m"})])
    assert any("requests exceed node allocatable: cpu 1600m requested of 1" in w for w in plan.warnings)


def test_qos_reserved_tier_limits_and_negative_warning():
    n = node(memory="4Gi", gates={"QOSReserved": True}, qos_reserved={MEMORY: 100})
    plan = build_plan(n, [pod("g", limits={"cpu": "1", "memory": "3Gi"}), pod("b", requests={"memory": "2Gi"})])
    assert plan.unit("kubepods-burstable.slice").resources.memory == 1 * 2**30
    assert plan.unit("kubepods-besteffort.slice").properties["MemoryLimit"] == INFINITY
    assert any("leaves the BestEffort tier no memory" in w for w in plan.warnings)


# kubelet's setMemoryReserve (pkg/kubelet/cm/qos_container_manager_linux.go), fed by
# GetNodeAllocatableAbsolute (container_manager_linux.go setupNode → qosContainerManager.Start):
#   base       = capacity − kubeReserved − systemReserved   (not eviction; whatever is enforced)
#   burstable  = base − Σ Guaranteed memory requests × pct / 100
#   besteffort = burstable − Σ Burstable memory requests × pct / 100
QOS_RESERVED_CASES = [
    # capacity, kubeReserved, systemReserved, enforceNodeAllocatable, evictionHard, pct, Guaranteed, Burstable → tiers
    ("8Gi", "1Gi", None, {"none"}, None, 100, ["1Gi"], [], (6442450944, 6442450944)),  # the example
    ("8Gi", "1Gi", None, {"pods"}, None, 100, ["1Gi"], [], (6442450944, 6442450944)),
    ("8Gi", "1Gi", "512Mi", {"none"}, None, 50, ["2Gi"], ["1Gi"], (5.5 * 2**30, 5 * 2**30)),
    ("8Gi", None, None, {"pods"}, {"memory.available": "1Gi"}, 100, ["1Gi"], ["1Gi"], (7 * 2**30, 6 * 2**30)),
    ("16Gi", "1Gi", "1Gi", {"pods", "system-reserved"}, None, 100, [], ["4Gi"], (14 * 2**30, 10 * 2**30)),
]


@pytest.mark.parametrize("cap, kube, system, enforce, eviction, pct, guaranteed, burstable, tiers", QOS_RESERVED_CASES)
def test_qos_reserved_tiers_as_kubelet_computes_them(cap, kube, system, enforce, eviction, pct, guaranteed, burstable,
                                                      tiers):
    kw = {}
    if kube:
        kw["kube_reserved"] = {"memory": kube}
    if system:
        kw["system_reserved"] = {"memory": system}
    n = node(memory=cap, gates={"QOSReserved": True}, qos_reserved={MEMORY: pct},
             enforce_node_allocatable=frozenset(enforce), eviction_hard=eviction or {}, **kw)
    pods = [pod(f"g{i}", limits={"cpu": "1", "memory": m}) for i, m in enumerate(guaranteed)]
    pods += [pod(f"b{i}", requests={"memory": m}) for i, m in enumerate(burstable)]
    plan = build_plan(n, pods)
    got = (plan.unit("kubepods-burstable.slice").resources.memory, plan.unit("kubepods-besteffort.slice").resources.memory)
    assert got == tuple(int(t) for t in tiers)


def test_vm_budget_split():
    vm = VirtualMachine(
        name="vm1",
        requests={CPU: parse_quantity("2"), MEMORY: parse_quantity("4Gi")},
        limits={CPU: parse_quantity("2"), MEMORY: parse_quantity("4Gi")},
        overhead={MEMORY: parse_quantity("256Mi")},
        scope="machine-vm1.scope",
    )
    n = node(cpu="8", memory="16Gi")
    plan = build_plan(n, [pod("g", limits={"cpu": "1", "memory": "1Gi"})], [vm])
    assert plan.unit("machine.slice").properties["CPUShares"] == 2048
    assert plan.unit("machine.slice").properties["MemoryLimit"] == 4 * 2**30 + 256 * 2**20
    assert plan.unit("kubepods.slice").properties["CPUShares"] == 6 * 1024
    assert plan.unit("kubepods.slice").properties["MemoryLimit"] == 16 * 2**30 - (4 * 2**30 + 256 * 2**20)
    assert plan.unit("machine-vm1.scope") is None  # VM scopes are claimed at sync, never planned by name
    v = plan.vms[0]
    assert v.scope == "machine-vm1.scope" and "TasksMax" not in v.properties
    assert v.properties["MemoryLimit"] == 4 * 2**30 + 256 * 2**20
    assert v.qos == "Guaranteed" and v.oom_score_adj == -997


# --- naming ---------------------------------------------------------------------------------------


ESCAPES = ["a-b", "../x", "x\\x2d", "wéb", ".hidden", "qemu-1-vm1", "a/b/c", "a b", "a" * 40]


@pytest.mark.parametrize("text", ESCAPES)
def test_escape_matches_systemd_escape(text):
    binary = shutil.which("systemd-escape")
    if not binary:
        pytest.skip("systemd-escape not installed")
    want = subprocess.run([binary, "--", text], capture_output=True, text=True, check=True).stdout.strip()
    assert naming.systemd_escape(text) == want
    assert naming.systemd_unescape(want) == text


def test_escaped_names_cannot_escape():
    """Text without '/' (all manifest names are validated that way) can add no slice level,
    no path and no hidden file: no '-', '/' or leading '.' survives escaping."""
    for text in ESCAPES:
        if "/" in text:
            continue
        esc = naming.systemd_escape(text)
        assert "/" not in esc and "-" not in esc and not esc.startswith("."), esc
    assert naming.container_scope("u", "../x").count("/") == 0


def test_machine_scope_as_machined():
    assert naming.machine_scope("qemu-1-vm1") == "machine-qemu\\x2d1\\x2dvm1.scope"


def test_slice_names_as_kubelet():
    assert naming.slice_name(["kubepods", "burstable", "pod1234-abcd"]) == "kubepods-burstable-pod1234_abcd.slice"
    assert naming.parent_slice("kubepods-burstable-pod1234_abcd.slice") == "kubepods-burstable.slice"
    assert naming.parent_slice("kubepods.slice") == "-.slice"
    assert naming.container_scope("1-2", "log-shipper") == "sdqos-pod1_2-log\\x2dshipper.scope"
