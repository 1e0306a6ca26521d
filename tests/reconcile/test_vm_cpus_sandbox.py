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
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from .. import vmtools as vm
from ..sandbox.test_vmtools import need
from ..sbhelpers import active_state, cgroup_rel, sdqos_in, sync_json, wait_for
from .test_scopes_sandbox import kill_all, procs_of, run_bg

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not Path("/sys/devices/system/cpu/cpu1").exists(),
                                reason="needs CPUs 0 and 1")

STATIC = 'capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\nreservedSystemCPUs: "0"\ncpuManagerPolicy: static\n'
NONE = 'capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\nreservedSystemCPUs: "0"\n'
DV_UID = stable_uid("VirtualMachine", "dv")  # no metadata.uid: derived from the name, as a pod's is


def _vm(name: str, dedicated: bool) -> str:
    return f"""\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: {name}}}
spec:
  resources:
    limits: {{cpu: "1", memory: 64Mi}}
  overhead: {{cpu: 100m, memory: 64Mi}}
{"  cpu: {dedicatedCpuPlacement: true}" if dedicated else ""}
"""


def _pod(name: str, cpu: str, limit: bool) -> str:
    res = f'{{cpu: "{cpu}", memory: 16Mi}}'
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: st}}
spec:
  containers:
  - name: app
    resources: {{requests: {res}{", limits: " + res if limit else ""}}}
"""


@pytest.fixture
def qsb(clean_sandbox):
    """The sandbox with no CPU manager state before and after (clean_sandbox keeps that file, and
    a VM's CPUs are given back only by a sync after it is gone: the next test must not find them)."""
    need(vm.qemu_available())
    sbx.run(clean_sandbox, ["rm", "-f", "/run/sdqos/cpu_manager_state"])
    yield clean_sandbox
    sbx.run(clean_sandbox, ["rm", "-f", "/run/sdqos/cpu_manager_state"])


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "vms").mkdir()
    (d / "node.yaml").write_text(STATIC)
    (d / "vms" / "dv.yaml").write_text(_vm("dv", True))
    (d / "pods" / "gu.yaml").write_text(_pod("gu", "1", True))
    (d / "pods" / "bu.yaml").write_text(_pod("bu", "100m", False))
    return d


def _state(sb) -> dict:
    return json.loads((Path(sb.run_dir) / "sdqos" / "cpu_manager_state").read_text())


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
    d = vm.vm_dir(sb)
    for f in (f"{name}.pid", f"{name}.qmp"):
        (d / f).unlink(missing_ok=True)
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "--vm", name, "--",
                       *vm.qemu_argv(name)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    def running() -> bool:
        if p.poll() is not None:  # refused or failed: say why at once
            raise AssertionError(f"sdqos run --vm {name} exited {p.returncode}: {p.stderr.read() if p.stderr else ''}")
        return (d / f"{name}.pid").exists() and vm.qmp_status(sb, name) == "running"

    try:
        wait_for(running, f"guest {name} running", timeout=120)
        host = vm.qemu_host_pid(p)
        assert host is not None
    except BaseException:
        vm.stop_qemu(p)
        raise
    return p, host


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _one_pid(sb, rel: str) -> int:
    return wait_for(lambda: (lambda ps: ps[0] if len(ps) == 1 and _comm(ps[0]) == "sleep" else None)(procs_of(sb, rel)),
                    what=f"sleep alone in {rel}", timeout=90)


def _rel(name: str, tier: str) -> str:
    uid = stable_uid("st", name)
    return cgroup_rel(container_scope(uid, "app"), f"kubepods{tier}-pod{uid.replace('-', '_')}.slice")


def _gone(sb, p: subprocess.Popen, scope: str) -> None:
    vm.stop_qemu(p)
    wait_for(lambda: active_state(sb, scope) in ("inactive", "failed", ""), f"{scope} gone", timeout=60)


def test_a_dedicated_vm_takes_cpu_1_from_the_pods_pool_and_gives_it_back(qsb, config):
    sb = qsb
    (config / "vms" / "sv.yaml").write_text(_vm("sv", False))
    dv = sv = bu = gu = None
    try:
        dv, dv_pid = _run_vm(sb, config, "dv")
        threads = _threads_cpus(dv_pid)
        assert len(threads) > 1 and set(threads.values()) == {"1"}, threads  # every qemu thread: CPU 1
        st = _state(sb)
        assert st["defaultCpuSet"] == "0" and st["entries"] == {DV_UID: {"compute": "1"}}, st
        sv, sv_pid = _run_vm(sb, config, "sv")  # no dedicatedCpuPlacement: the shared pool
        assert set(_threads_cpus(sv_pid).values()) == {"0"}

        r = sdqos_in(sb, "run", "--config", str(config), "st/gu", "app", "--", "true")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "pod st/gu: container app needs 1 exclusive CPUs (cpuManagerPolicy " \
            "static), CPUs free: 0 (none)" in r.stderr, r.stderr
        bu = run_bg(sb, config, "st/bu", "app", "--", "sleep", "300")
        bu_pid = _one_pid(sb, _rel("bu", "-burstable"))
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
        assert _state(sb)["entries"] == {DV_UID: {"compute": "1"}}  # kept while the VM runs
        assert not any("dedicatedCpuPlacement" in w for w in report["warnings"]), report["warnings"]

        _gone(sb, dv, "machine-dv.scope")
        sync_json(sb, config)
        st = _state(sb)
        assert st.get("entries") in ({}, None) and st["defaultCpuSet"] == "0-1", st  # the pool grew back
        assert set(_threads_cpus(sv_pid).values()) == {"0-1"} and os.sched_getaffinity(bu_pid) == {0, 1}
        gu = run_bg(sb, config, "st/gu", "app", "--", "sleep", "300")
        assert os.sched_getaffinity(_one_pid(sb, _rel("gu", ""))) == {1}
    finally:
        kill_all(bu, gu)
        for p in (dv, sv):
            if p is not None:
                vm.stop_qemu(p)


def test_a_dedicated_vm_found_running_without_cpus_gets_them_when_free_and_a_warning_before(qsb, config):
    sb = qsb
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
        gu_pid = _one_pid(sb, gu_rel)
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
        assert _state(sb)["entries"] == {DV_UID: {"compute": "1"}}
        assert set(_threads_cpus(dv_pid).values()) == {"1"}
    finally:
        kill_all(gu)
        if dv is not None:
            vm.stop_qemu(dv)
