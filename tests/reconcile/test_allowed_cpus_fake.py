"""AllowedCPUs (cpuManagerPolicy static on cgroup v2) through the reconciler, against the in-memory
systemd (tests/fakesystemd.py, which keeps the value as systemd answers it: a byte array): the row's
encoding both ways, a launched scope created with its CPUs and left alone by the next sync, the shared
pool narrowed and widened on every shared container scope by the diff, a changed cpuset restored as
drift, and with the policy none no AllowedCPUs written at all. The kernel's side is
tests/v2/test_v2_cpu_static.py's, in a real cgroup v2 guest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdqos.host import cgroupfs
from sdqos.plan import properties as P
from sdqos.plan.engine import Plan, assemble, plan_basis, plan_pod
from sdqos.reconcile.launch import container_target
from sdqos.reconcile.report import Report
from sdqos.reconcile.diff import DiffPolicy
from sdqos.reconcile.sync import Narrow, Settings, sync

from ..fakesystemd import FakeSystemd
from ..helpers import node, pod_from


@pytest.fixture(autouse=True)
def _no_host_cgroups(monkeypatch):
    """A systemd elsewhere: everything is read over the (fake) bus, never the host's cgroup files."""
    monkeypatch.setattr(cgroupfs, "available", lambda *a, **k: False)
    monkeypatch.setenv("SDQOS_PODMAN", "/nonexistent/podman")


def _pod(name: str, cpu: str, guaranteed: bool):
    res = {"cpu": cpu, "memory": "64Mi"}
    resources = {"requests": res, "limits": res} if guaranteed else {"requests": res}
    return pod_from({"metadata": {"name": name, "namespace": "st"},
                     "spec": {"containers": [{"name": "app", "resources": resources}]}})


GU, BU = _pod("gu", "2", True), _pod("bu", "100m", False)


def plan_of(*, shared: str, held: str = "", policy: str = "static") -> Plan:
    """The plan sync gets on v2 with the state file holding ``held`` for gu's container and
    ``shared`` as its default cpuset (loading/incremental.py reads both)."""
    basis = plan_basis(node("4", cpu_manager_policy=policy, reserved_system_cpus="0"), cgroup="v2", shared_cpus=shared)
    return assemble(basis, [plan_pod(GU, basis.context, exclusive={"app": held} if held else None),
                            plan_pod(BU, basis.context)])


def run_sync(fake: FakeSystemd, plan: Plan, run_dir: Path, only: Narrow | None = None) -> Report:
    return asyncio.run(sync(fake, plan, Settings(DiffPolicy(removals_safe=only is None), run_dir=run_dir), only=only))


def launch(fake: FakeSystemd, plan: Plan, run_dir: Path, pod: str, pid: int) -> str:
    target = container_target(plan, pod, "app")
    report = run_sync(fake, plan, run_dir, Narrow(pod=pod, launch=target.launch([pid])))
    assert report.errors == [] and target.unit.name in report.created
    return target.unit.name


def allowed_writes(fake: FakeSystemd) -> dict[str, int]:
    return {unit: props["AllowedCPUs"] for method, unit, props in fake.calls if "AllowedCPUs" in props}


@given(cpus=st.frozensets(st.integers(0, 1023), max_size=64))
def test_a_cpu_set_goes_to_systemd_and_back_as_its_byte_array(cpus):
    mask = P.cpu_mask(cpus)
    data = P.cpu_mask_bytes(mask)
    for cpu in cpus:  # systemd's cpu_set_to_dbus: CPU n is bit n % 8 of byte n / 8
        assert data[cpu // 8] >> (cpu % 8) & 1
    assert P.mask_of_dbus(data) == mask and P.mask_of_dbus(data + b"\0\0") == mask  # systemd pads to its allocation
    assert P.mask_of_dbus(list(data)) == mask and P.from_dbus("AllowedCPUs", data) == mask
    assert P.mask_cpus(mask) == cpus and P.cpu_mask(str(P.mask_cpus(mask))) == mask
    assert P.from_kernel("AllowedCPUs", "v2", P.kernel_files({"AllowedCPUs": mask}, "v2") or {}) == mask


def test_the_row_encodes_as_systemd_wants_it():
    assert P.cpu_mask("2-3") == 0b1100 and P.cpu_mask_bytes(0b1100) == b"\x0c"
    assert P.cpu_mask_bytes(P.cpu_mask("0,9")) == b"\x01\x02"
    assert P.cpu_mask_bytes(0) == b"" and P.to_dbus("AllowedCPUs", 0) == b""  # not set: every CPU
    assert P.to_dbus("CPUWeight", 100) == 100
    assert P.shown("AllowedCPUs", 0b1011) == "cpus 0-1,3" and P.shown("AllowedCPUs", 0) == "all cpus"
    assert P.unsendable({"AllowedCPUs": 1 << 200}) == [] and P.unsendable({"AllowedCPUs": -1})


def test_a_launched_scope_is_created_with_its_cpus_and_the_next_sync_leaves_it(tmp_path):
    plan = plan_of(shared="0-1", held="2-3")
    fake = FakeSystemd()
    scope = launch(fake, plan, tmp_path, "st/gu", 4242)
    assert allowed_writes(fake) == {scope: 0b1100}
    assert fake.units[scope].props["AllowedCPUs"] == b"\x0c"  # as systemd holds it
    assert not any("AllowedCPUs" in props for _, unit, props in fake.calls if unit.endswith(".slice"))
    fake.calls.clear()
    again = run_sync(fake, plan, tmp_path)
    assert again.errors == [] and again.drift == [] and again.updated == []
    assert allowed_writes(fake) == {}


def test_the_shared_pool_narrows_and_widens_on_every_shared_scope(tmp_path):
    fake = FakeSystemd()
    bu = launch(fake, plan_of(shared="0-3"), tmp_path, "st/bu", 4243)  # no CPU held: the whole pool
    assert allowed_writes(fake) == {bu: 0b1111}
    gu = launch(fake, plan_of(shared="0-1", held="2-3"), tmp_path, "st/gu", 4242)
    fake.calls.clear()
    report = run_sync(fake, plan_of(shared="0-1", held="2-3"), tmp_path)  # kubelet's reconcileState
    assert report.errors == [] and report.drift == []
    assert allowed_writes(fake) == {bu: 0b0011}
    assert {u["unit"]: u["changes"]["AllowedCPUs"] for u in report.updated if "AllowedCPUs" in u["changes"]} \
        == {bu: [0b1111, 0b0011]}
    fake.calls.clear()
    assert allowed_writes(fake) == {} and run_sync(fake, plan_of(shared="0-1", held="2-3"), tmp_path).updated == []
    fake.units.pop(gu)  # gu's pod left, its CPUs released: the pool is every CPU again
    fake.calls.clear()
    run_sync(fake, plan_of(shared="0-3"), tmp_path)
    assert allowed_writes(fake) == {bu: 0b1111}


def test_a_changed_cpuset_is_drift_and_restored(tmp_path):
    plan = plan_of(shared="0-1", held="2-3")
    fake = FakeSystemd()
    scope = launch(fake, plan, tmp_path, "st/gu", 4242)
    fake.units[scope].props["AllowedCPUs"] = b"\x02"  # `systemctl set-property … AllowedCPUs=1` behind sdqos's back
    fake.calls.clear()
    report = run_sync(fake, plan, tmp_path)
    assert report.drift == [{"unit": scope, "changes": {"AllowedCPUs": [0b0010, 0b1100]}}]
    assert allowed_writes(fake) == {scope: 0b1100} and fake.units[scope].props["AllowedCPUs"] == b"\x0c"


def test_with_the_policy_none_no_cpuset_is_written(tmp_path):
    plan = plan_of(shared="0-3", policy="none")  # (a pool handed in is not used: the policy is none)
    assert all("AllowedCPUs" not in u.properties for u in plan.units)
    fake = FakeSystemd()
    launch(fake, plan, tmp_path, "st/gu", 4242)
    launch(fake, plan, tmp_path, "st/bu", 4243)
    run_sync(fake, plan, tmp_path)
    assert allowed_writes(fake) == {}


def test_a_vm_scope_carries_allowed_cpus_on_v2_from_the_same_field():
    """ResourceConfig.cpuset is the per-unit field the row reads: a VM with dedicatedCpuPlacement
    gets its exclusive CPUs, any other declared VM the shared pool; on v1 and with the policy
    none, no VM has the property."""
    from sdqos.kube.manifests import ParseResult, parse_vm_documents

    def vm(name: str, dedicated: bool) -> dict:
        return {"apiVersion": "sdqos.io/v1alpha1", "kind": "VirtualMachine", "metadata": {"name": name},
                "spec": {"resources": {"limits": {"cpu": "2", "memory": "64Mi"}},
                         "cpu": {"dedicatedCpuPlacement": dedicated}}}

    r = ParseResult()
    parse_vm_documents([vm("dv", True), vm("plain", False)], "vms/a.yaml", r)
    dv = next(v for v in r.vms if v.name == "dv")
    static = node("4", cpu_manager_policy="static", reserved_system_cpus="0")
    basis = plan_basis(static, r.vms, "v2", exclusive={dv.uid: {"compute": "2-3"}}, shared_cpus="0-1")
    got = {v.vm.name: (v.resources.cpuset, v.properties.get("AllowedCPUs")) for v in basis.vms}
    assert got == {"dv": ("2-3", 0b1100), "plain": ("0-1", 0b0011)}
    for other in (plan_basis(static, r.vms, "v1", shared_cpus="0-1"),
                  plan_basis(node("4"), r.vms, "v2", shared_cpus="0-1")):
        assert all("AllowedCPUs" not in v.properties for v in other.vms)
