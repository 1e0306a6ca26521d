"""VMs with spec.cpu.dedicatedCpuPlacement (KubeVirt's domain.cpu.dedicatedCpuPlacement): validated
as KubeVirt's validateCpuPinning does (a Guaranteed VM, whole CPUs), keyed in the static CPU
manager's state as KubeVirt's virt-launcher pod is (the VM's uid, container "compute"), and given
exclusive CPUs from the same pool as the pods; the plan carries them (and says when they do not
apply)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdqos.errors import CPUsUnavailable, InvalidInput
from sdqos.host import cpustate
from sdqos.kube import cpumanager as cm
from sdqos.kube.cpuset import CPUSet
from sdqos.kube.cputopology import CPUInfo, make_topology
from sdqos.kube.manifests import ParseResult, check_duplicate_vms, parse_vm_documents, stable_uid
from sdqos.kube.naming import Owner
from sdqos.loading.cache import vm_from_json, vm_to_json
from sdqos.plan.engine import build_plan, plan_basis
from sdqos.plan.explain import explain_vm, explain_vm_json
from sdqos.plan.properties import INFINITY
from sdqos.reconcile import cpus
from sdqos.reconcile.binding import Binding
from sdqos.reconcile.scopes import LiveScope

from ..helpers import node, pod_from


def vm_doc(name="dv", res=None, cpu=None, uid=None):
    meta = {"name": name, **({"uid": uid} if uid else {})}
    spec = {"resources": res if res is not None else {"limits": {"cpu": "1", "memory": "64Mi"}}}
    if cpu is not None:
        spec["cpu"] = cpu
    return {"apiVersion": "sdqos.io/v1alpha1", "kind": "VirtualMachine", "metadata": meta, "spec": spec}


def parse(*docs):
    r = ParseResult()
    parse_vm_documents(list(docs), "vms/a.yaml", r)
    check_duplicate_vms(r)
    return r


DEDICATED = {"dedicatedCpuPlacement": True}


def test_a_guaranteed_vm_with_whole_cpus_is_dedicated_and_keyed_by_a_uid_derived_as_a_pods():
    r = parse(vm_doc(cpu=DEDICATED), vm_doc("plain", cpu={"dedicatedCpuPlacement": False}), vm_doc("none"))
    assert r.errors == []
    dv, plain, none = r.vms
    assert dv.dedicated_cpu_placement and not plain.dedicated_cpu_placement and not none.dedicated_cpu_placement
    # no metadata.uid: derived from the name as a pod's from namespace/name, under a namespace no pod can have
    assert dv.uid == stable_uid("VirtualMachine", "dv") != stable_uid("default", "dv")
    assert parse(vm_doc(cpu=DEDICATED, uid="abc-1")).vms[0].uid == "abc-1"


@pytest.mark.parametrize("res, cpu, message", [
    ({"limits": {"cpu": "1500m", "memory": "64Mi"}}, DEDICATED,
     "spec.cpu.dedicatedCpuPlacement: needs a whole number of CPUs (at least 1): spec.resources.limits.cpu is 1500m"),
    ({"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "64Mi"}}, DEDICATED,
     "spec.cpu.dedicatedCpuPlacement: needs a Guaranteed VM (requests equal to limits for cpu and memory): "
     "spec.resources.requests.cpu 1 is not spec.resources.limits.cpu 2"),
    ({"requests": {"cpu": "1"}, "limits": {"memory": "64Mi"}}, DEDICATED,
     "spec.cpu.dedicatedCpuPlacement: needs a Guaranteed VM (requests equal to limits for cpu and memory): "
     "spec.resources.limits.cpu is not set"),
    ({"requests": {"memory": "32Mi"}, "limits": {"cpu": "1", "memory": "64Mi"}}, DEDICATED,
     "spec.cpu.dedicatedCpuPlacement: needs a Guaranteed VM (requests equal to limits for cpu and memory): "
     "spec.resources.requests.memory 32Mi is not spec.resources.limits.memory 64Mi"),
    ({"limits": {"cpu": "0", "memory": "64Mi"}}, DEDICATED,
     "spec.cpu.dedicatedCpuPlacement: needs a whole number of CPUs (at least 1): spec.resources.limits.cpu is 0"),
    (None, {"dedicatedCpuPlacement": "yes"}, "spec.cpu.dedicatedCpuPlacement: must be a boolean, not a string"),
    (None, {"dedicatedCpuPlacement": True, "isolateEmulatorThread": True}, "spec.cpu.isolateEmulatorThread: unknown field"),
    (None, "2", "spec.cpu: must be a mapping, not a string"),
])
def test_a_vm_that_cannot_have_dedicated_cpus_is_one_error_naming_file_document_and_field(res, cpu, message):
    r = parse(vm_doc(res=res, cpu=cpu))
    assert r.vms == [] and [str(e) for e in r.errors] == [f"vms/a.yaml[0]: {message}"]
    assert "vm:dv" in r.invalid_keys  # its units are kept, not treated as gone


def test_two_vms_with_one_uid_are_both_refused():
    r = parse(vm_doc("a", uid="same"), vm_doc("b", uid="same"))
    assert r.vms == [] and {e.field for e in r.errors} == {"metadata.uid"}


def test_the_cache_keeps_the_uid_and_the_field():
    v = parse(vm_doc(cpu=DEDICATED)).vms[0]
    assert vm_from_json(vm_to_json(v)) == v


# --- one pool for pods and VMs ----------------------------------------------------------------------

TWO_CORES = make_topology({0: CPUInfo(0, 0, 0), 1: CPUInfo(0, 0, 1)})


def policy():
    return cm.new_static_policy(TWO_CORES, 1, [0])


def pod(name, cpu, guaranteed=True):
    res = {"cpu": cpu, "memory": "16Mi"}
    return pod_from({"metadata": {"name": name, "namespace": "st"},
                     "spec": {"containers": [{"name": "app", "image": "i",
                                              "resources": {"requests": res, **({"limits": res} if guaranteed else {})}}]}})


def test_a_dedicated_vm_and_guaranteed_pods_never_share_a_cpu_and_the_pool_grows_back():
    p = policy()
    state = cm.validate_state(p, cm.CPUManagerState("static"))
    dv = parse(vm_doc(cpu=DEDICATED)).vms[0]
    state = cm.admit_vm(p, state, dv)
    assert state.get(dv.uid, "compute") == CPUSet([1]) and state.default_cpuset == CPUSet([0])
    assert cm.admit_vm(p, state, dv) == state  # held: kept, nothing more taken
    with pytest.raises(CPUsUnavailable) as exc:  # the pod's CPU is the VM's
        cm.admit_pod(p, state, pod("gu", "1"), "st/gu")
    assert "pod st/gu: container app needs 1 exclusive CPUs (cpuManagerPolicy static), CPUs free: 0 (none)" in str(exc.value)
    assert cm.admit_pod(p, state, pod("bu", "100m", guaranteed=False), "st/bu") == state  # the shared pool: {0}
    assert cm.release_gone_pods(state, [dv.uid]) == state  # while its scope runs
    back = cm.release_gone_pods(state, [])
    assert back.entries == {} and back.default_cpuset == CPUSet([0, 1])
    assert cm.admit_pod(p, back, pod("gu", "1"), "st/gu").get(stable_uid("st", "gu"), "app") == CPUSet([1])


def test_a_vm_that_cannot_have_its_cpus_is_refused_naming_it_and_the_cpus_free():
    p = policy()
    state = cm.admit_pod(p, cm.validate_state(p, cm.CPUManagerState("static")), pod("gu", "1"), "st/gu")
    dv = parse(vm_doc(cpu=DEDICATED)).vms[0]
    with pytest.raises(CPUsUnavailable) as exc:
        cm.admit_vm(p, state, dv)
    assert str(exc.value).startswith("VM dv needs 1 exclusive CPUs (spec.cpu.dedicatedCpuPlacement, cpuManagerPolicy "
                                     "static), CPUs free: 0 (none): not enough cpus available")
    plain = parse(vm_doc("plain")).vms[0]
    assert cm.admit_vm(p, state, plain) == state  # a VM without the field takes nothing


# --- the plan ---------------------------------------------------------------------------------------


def test_the_plan_carries_the_vms_cpus_drops_its_quota_and_explain_says_so():
    dv = parse(vm_doc(cpu=DEDICATED, res={"limits": {"cpu": "2", "memory": "64Mi"}})).vms[0]
    static = node("4", reserved_system_cpus="0", cpu_manager_policy="static")
    held = plan_basis(static, [dv], "v1", explain=True, exclusive={dv.uid: {"compute": "1-2"}}).vms[0]
    assert held.cpus == "1-2" and held.why["cpus"] == "exclusive: dedicatedCpuPlacement, 2 integer CPUs, CPUs 1-2"
    assert held.properties["CPUQuotaPerSecUSec"] == INFINITY
    assert held.why["cpu_quota"].startswith("no quota: the VM holds exclusive CPUs")
    waiting = plan_basis(static, [dv], "v1", explain=True).vms[0]
    assert waiting.cpus == "" and waiting.why["cpus"].startswith("exclusive: dedicatedCpuPlacement, 2 integer CPUs, "
                                                                  "none held yet")
    assert waiting.properties["CPUQuotaPerSecUSec"] == 2_100_000  # (2 + the default 100m overhead)
    plan = build_plan(static, [], [dv], "v1", explain=True)
    assert "    CPUs" in explain_vm(plan, plan.vms[0])
    assert explain_vm_json(plan, plan.vms[0])["cpusWhy"].startswith("exclusive: dedicatedCpuPlacement")


def test_with_policy_none_the_field_is_said_not_to_apply():
    dv = parse(vm_doc(cpu=DEDICATED)).vms[0]
    basis = plan_basis(node("4"), [dv], "v1", explain=True)
    assert ("VM dv: spec.cpu.dedicatedCpuPlacement does not apply: cpuManagerPolicy is none in node.yaml "
            "(exclusive CPUs need static); it runs on every CPU") in basis.warnings
    assert basis.vms[0].why["cpus"].endswith("not applied: cpuManagerPolicy is none")
    assert not any("dedicatedCpuPlacement" in w for w in plan_basis(node("4"), parse(vm_doc()).vms, "v1").warnings)


# --- sync's bookkeeping (reconcile/cpus.py): this host's CPUs, a temp run dir, no process touched ----

needs_two = pytest.mark.skipif(not Path("/sys/devices/system/cpu/cpu1").exists(), reason="needs CPUs 0 and 1")


def _static_plan(vms, pods=()):
    static = node("4", reserved_system_cpus="0", cpu_manager_policy="static")
    return build_plan(static, list(pods), list(vms), "v1")


def _running(*names):
    """Bindings and live scopes as sync finds them for running VMs (no PIDs: no affinity is set)."""
    bindings = {f"machine-{n}.scope": Binding(Owner.vm(n), 0) for n in names}
    scopes = {f"machine-{n}.scope": LiveScope(f"machine-{n}.scope", "machine.slice", f"/machine.slice/machine-{n}.scope")
              for n in names}
    return bindings, scopes


@needs_two
def test_sync_keeps_a_running_vms_cpus_takes_them_when_free_and_releases_them_when_it_leaves(tmp_path):
    dv = parse(vm_doc(cpu=DEDICATED)).vms[0]
    gu = pod("gu", "1")
    with_pod = _static_plan([dv], [gu])
    cpus.admit(with_pod, "st/gu", tmp_path)  # the pod holds CPU 1
    warnings: list[str] = []
    cpus.sync_cpus(with_pod, [], *_running("dv"), warnings, full=False, run_dir=tmp_path)
    assert [w for w in warnings if w.startswith("VM dv")] == [
        'VM dv needs 1 exclusive CPUs (spec.cpu.dedicatedCpuPlacement, cpuManagerPolicy static), CPUs free: 0 (none): '
        'not enough cpus available to satisfy request: requested=1, available=0; it runs on the shared pool until a '
        'sync finds them free']
    plan = _static_plan([dv])
    cpus.sync_cpus(plan, [], *_running("dv"), (warnings := []), full=True, run_dir=tmp_path)  # gu gone: CPU 1 is free
    state = cpustate.load(cpus.policy_for(plan.node), tmp_path)
    assert warnings == [] and state.entries == {dv.uid: {"compute": CPUSet([1])}}
    cpus.sync_cpus(plan, [], *_running("dv"), [], full=True, run_dir=tmp_path)  # running: kept
    assert cpustate.load(cpus.policy_for(plan.node), tmp_path).entries == {dv.uid: {"compute": CPUSet([1])}}
    plain = parse(vm_doc()).vms[0]  # the same VM no longer asking: its CPU goes back, though it runs
    cpus.sync_cpus(_static_plan([plain]), [], *_running("dv"), [], full=True, run_dir=tmp_path)
    assert cpustate.load(cpus.policy_for(plan.node), tmp_path).default_cpuset == CPUSet([0, 1])
    assert cpus.launch_cpus(plan, "dv", None, None, tmp_path) == [frozenset({1})]  # run --vm: its CPU
    cpus.sync_cpus(plan, [], {}, {}, [], full=True, run_dir=tmp_path)  # its scope gone
    assert cpustate.load(cpus.policy_for(plan.node), tmp_path).entries == {}


def test_a_vm_whose_uid_is_a_pods_is_refused_before_anything_is_read(tmp_path):
    dv = parse(vm_doc(cpu=DEDICATED, uid="same")).vms[0]
    gu = pod_from({"metadata": {"name": "gu", "namespace": "st", "uid": "same"},
                   "spec": {"containers": [{"name": "app", "image": "i"}]}})
    with pytest.raises(InvalidInput) as exc:
        cpus.admit_vm(_static_plan([dv], [gu]), "dv", tmp_path)
    assert str(exc.value) == ("vms/a.yaml[0]: metadata.uid: VM dv: uid same is also pod st/gu's; the CPU manager "
                              "keys both by uid")
    assert not (tmp_path / "cpu_manager_state").exists()


def test_with_policy_none_run_vm_sets_no_cpus(tmp_path):
    dv = parse(vm_doc(cpu=DEDICATED)).vms[0]
    assert cpus.launch_cpus(build_plan(node("4"), [], [dv], "v1"), "dv", None, None, tmp_path) == []
    assert not (tmp_path / "cpu_manager_state").exists()
