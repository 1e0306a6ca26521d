"""VMs with spec.cpu.dedicatedCpuPlacement under cpuManagerPolicy static on cgroup v1, against the
sandbox's systemd, real qemu guests (TCG, as tests/reconcile/test_vms_sandbox.py runs them) and the
kernel's own record of each thread's CPUs (/proc/PID/task/*/status Cpus_allowed_list). The host has 2
CPUs and node.yaml reserves CPU 0: a dedicated 1-CPU VM gets CPU 1, then a Guaranteed 1-CPU pod is
refused (no CPU left) while a Burstable pod and a VM without the field run on the shared pool {0};
when the VM leaves, the pool grows back. A dedicated VM found running without its CPUs gets them at
the sync that finds them free, and a warning naming it before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from .. import vmtools as vm
from ..cpufixtures import needs_cpus_0_and_1, one_pid, pod_yaml, vm_yaml, vm_cpu_config  # noqa: F401 (fixture)
from ..sbhelpers import active_state, cgroup_rel, cpu_state, forget_cpu_state, sdqos_in, sdqos_run_vm, static_node, \
    sync_json, wait_for
from .test_scopes_sandbox import kill_all, procs_of, run_bg

pytestmark = needs_cpus_0_and_1

STATIC = static_node()
NONE = static_node(policy=None)
DV_UID = stable_uid("VirtualMachine", "dv")  # no metadata.uid: derived from the name, as a pod's is


@pytest.fixture
def qemu_cpu_sandbox(qemu_sandbox):
    """qemu_sandbox (tests/conftest.py) with no CPU manager state before (clean_sandbox) and after (a
    VM's CPUs are given back only by a sync after it is gone: the next test must not find them)."""
    yield qemu_sandbox
    forget_cpu_state(qemu_sandbox)


@pytest.fixture
def config(vm_cpu_config: Path) -> Path:
    (vm_cpu_config / "vms" / "dv.yaml").write_text(vm_yaml("dv", True))
    (vm_cpu_config / "pods" / "bu.yaml").write_text(pod_yaml("bu", "100m", False))
    return vm_cpu_config


def _threads_cpus(pid: int) -> dict[int, str]:
    """Each thread's CPUs as the kernel holds them (Cpus_allowed_list)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        out[int(task.name)] = next(ln.split(":", 1)[1].strip() for ln in status.splitlines()
                                   if ln.startswith("Cpus_allowed_list:"))
    return out


def _run_vm(sb, config: Path, name: str) -> tuple[subprocess.Popen, int]:
    p = sdqos_run_vm(sb, config, name, timeout=120)
    try:
        host = vm.qemu_host_pid(p)
        assert host is not None
    except BaseException:
        vm.stop_qemu(p)
        raise
    return p, host


def _rel(name: str, tier: str) -> str:
    uid = stable_uid("st", name)
    return cgroup_rel(container_scope(uid, "app"), f"kubepods{tier}-pod{uid.replace('-', '_')}.slice")


def _gone(sb, p: subprocess.Popen, scope: str) -> None:
    vm.stop_qemu(p)
    wait_for(lambda: active_state(sb, scope) in ("inactive", "failed", ""), f"{scope} gone", timeout=60)


def test_a_dedicated_vm_takes_cpu_1_from_the_pods_pool_and_gives_it_back(qemu_cpu_sandbox, config):
    sb = qemu_cpu_sandbox
    (config / "vms" / "sv.yaml").write_text(vm_yaml("sv", False))
    dv = sv = bu = gu = None
    try:
        dv, dv_pid = _run_vm(sb, config, "dv")
        threads = _threads_cpus(dv_pid)
        assert len(threads) > 1 and set(threads.values()) == {"1"}, threads  # every qemu thread: CPU 1
        st = cpu_state(sb)
        assert st["defaultCpuSet"] == "0" and st["entries"] == {DV_UID: {"compute": "1"}}, st
        sv, sv_pid = _run_vm(sb, config, "sv")  # no dedicatedCpuPlacement: the shared pool
        assert set(_threads_cpus(sv_pid).values()) == {"0"}

        r = sdqos_in(sb, "run", "--config", str(config), "st/gu", "app", "--", "true")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "pod st/gu: container app needs 1 exclusive CPUs (cpuManagerPolicy " \
            "static), CPUs free: 0 (none)" in r.stderr, r.stderr
        bu = run_bg(sb, config, "st/bu", "app", "--", "sleep", "300")
        bu_pid = one_pid(sb, _rel("bu", "-burstable"))
        assert os.sched_getaffinity(bu_pid) == {0}

        tid = next(iter(threads))
        os.sched_setaffinity(tid, {0, 1})  # changed behind sdqos's back: status shows it, the sync sets it again
        r = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
        assert r.returncode == 0, r.stderr
        vms = {u["vm"]: u for u in json.loads(r.stdout)["units"] if u.get("kind") == "vm"}
        assert vms["dv"]["cpus"]["cpus"] == "1" and vms["dv"]["cpus"]["exclusive"] is True, vms["dv"]
        assert list(vms["dv"]["cpus"]["affinityOff"].values()) == ["0-1"] and "drift" in vms["dv"]["flags"], vms["dv"]  # thread ids: the sandbox's
        assert vms["sv"]["cpus"] == {"cpus": "0", "count": 1, "exclusive": False, "affinityOff": {}}, vms["sv"]
        report = sync_json(sb, config)
        assert set(_threads_cpus(dv_pid).values()) == {"1"} and set(_threads_cpus(sv_pid).values()) == {"0"}
        assert cpu_state(sb)["entries"] == {DV_UID: {"compute": "1"}}  # kept while the VM runs
        assert not any("dedicatedCpuPlacement" in w for w in report["warnings"]), report["warnings"]

        _gone(sb, dv, "machine-dv.scope")
        sync_json(sb, config)
        st = cpu_state(sb)
        assert st.get("entries") in ({}, None) and st["defaultCpuSet"] == "0-1", st  # the pool grew back
        assert set(_threads_cpus(sv_pid).values()) == {"0-1"} and os.sched_getaffinity(bu_pid) == {0, 1}
        gu = run_bg(sb, config, "st/gu", "app", "--", "sleep", "300")
        assert os.sched_getaffinity(one_pid(sb, _rel("gu", ""))) == {1}
    finally:
        kill_all(bu, gu)
        for p in (dv, sv):
            if p is not None:
                vm.stop_qemu(p)


def test_a_dedicated_vm_found_running_without_cpus_gets_them_when_free_and_a_warning_before(qemu_cpu_sandbox, config):
    sb = qemu_cpu_sandbox
    (config / "node.yaml").write_text(NONE)
    dv = gu = None
    try:
        dv, dv_pid = _run_vm(sb, config, "dv")  # policy none: nothing allocated, said in the plan's warnings
        assert set(_threads_cpus(dv_pid).values()) == {"0-1"}
        plan = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)
        assert any(w.startswith("VM dv: spec.cpu.dedicatedCpuPlacement does not apply: cpuManagerPolicy is none")
                   for w in plan["warnings"]), plan["warnings"]

        (config / "node.yaml").write_text(STATIC)
        gu = run_bg(sb, config, "st/gu", "app", "--", "sleep", "300")  # the pod takes CPU 1 first
        gu_rel = _rel("gu", "")
        gu_pid = one_pid(sb, gu_rel)
        assert os.sched_getaffinity(gu_pid) == {1}
        report = sync_json(sb, config)
        assert any(w.startswith("VM dv needs 1 exclusive CPUs (spec.cpu.dedicatedCpuPlacement, cpuManagerPolicy "
                                "static), CPUs free: 0 (none)") and w.endswith("it runs on the shared pool until a "
                                                                               "sync finds them free")
                   for w in report["warnings"]), report["warnings"]
        assert set(_threads_cpus(dv_pid).values()) == {"0"}  # the shared pool; the pod keeps its CPU
        assert os.sched_getaffinity(gu_pid) == {1}

        os.kill(gu_pid, signal.SIGKILL)
        kill_all(gu)
        (config / "pods" / "gu.yaml").unlink()
        wait_for(lambda: not procs_of(sb, gu_rel), what="gu's scope empty", timeout=60)
        report = sync_json(sb, config)  # gu's CPU back in the pool, and the running VM takes it
        assert not any(w.startswith("VM dv needs") for w in report["warnings"]), report["warnings"]
        assert cpu_state(sb)["entries"] == {DV_UID: {"compute": "1"}}
        assert set(_threads_cpus(dv_pid).values()) == {"1"}
    finally:
        kill_all(gu)
        if dv is not None:
            vm.stop_qemu(dv)
