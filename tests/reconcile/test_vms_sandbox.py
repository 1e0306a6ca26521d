"""VMs in machine.slice next to pods, one node budget — with real qemu guests in the sandbox, a
scope made exactly as systemd-machined makes one, and a libvirt domain started with virsh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .. import vmtools as vm
from ..sbhelpers import active_state, kernel, sdqos_in, sync_json, wait_for
from ..sandbox.test_vmtools import need, vm_sandbox  # noqa: F401 (fixture)

NODE = 'capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\n'
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: g, namespace: t}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "1", memory: 512Mi}
"""


def vm_yaml(name: str, locator: str = "") -> str:
    return f"""\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: {name}}}
spec:
  resources:
    requests: {{cpu: 500m}}
    limits: {{cpu: "1", memory: 64Mi}}
  overhead: {{cpu: 100m, memory: 64Mi}}
{locator}"""


# Values every VM above gets: shares(500m + 100m), quota(1 + 100m), 64 + 64 MiB; Burstable OOM.
VM_SHARES = 614
VM_QUOTA_US = 110_000
VM_MEMORY = 128 * 2**20
VM_OOM = 1000 - 1000 * VM_MEMORY // (4 * 2**30)


@pytest.fixture
def qsb(clean_sandbox):
    need(vm.qemu_available())
    return clean_sandbox


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "vms").mkdir()
    (d / "node.yaml").write_text(NODE)
    (d / "pods" / "g.yaml").write_text(POD)
    return d


def scope_values(sb, scope: str) -> dict[str, int]:
    rel = f"machine.slice/{scope}"
    return {
        "cpu.shares": kernel(sb, "cpu", rel, "cpu.shares"),
        "cpu.cfs_quota_us": kernel(sb, "cpu", rel, "cpu.cfs_quota_us"),
        "memory.limit_in_bytes": kernel(sb, "memory", rel, "memory.limit_in_bytes"),
    }


def oom_of(host_pid: int) -> int:
    return int(Path(f"/proc/{host_pid}/oom_score_adj").read_text())


def test_sdqos_run_vm_starts_real_qemu_in_its_machine_scope(qsb, config):
    sb = qsb
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1"))
    d = vm.vm_dir(sb)
    for f in ("vm1.pid", "vm1.qmp"):
        (d / f).unlink(missing_ok=True)
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "--vm", "vm1", "--",
                       *vm.qemu_argv("vm1")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (d / "vm1.pid").exists() and vm.qmp_status(sb, "vm1") == "running", "guest running")
        assert active_state(sb, "machine-vm1.scope") == "active"
        assert scope_values(sb, "machine-vm1.scope") == {
            "cpu.shares": VM_SHARES, "cpu.cfs_quota_us": VM_QUOTA_US, "memory.limit_in_bytes": VM_MEMORY}
        host = vm.qemu_host_pid(p)
        assert host is not None and oom_of(host) == VM_OOM
        assert "machine.slice/machine-vm1.scope" in Path(f"/proc/{host}/cgroup").read_text()
        # The budget split is in the kernel: pods get what VMs do not reserve.
        sync_json(sb, config)
        assert kernel(sb, "cpu", "machine.slice", "cpu.shares") == VM_SHARES
        assert kernel(sb, "memory", "machine.slice", "memory.limit_in_bytes") == VM_MEMORY
        assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == (4000 - 600) * 1024 // 1000
        assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 4 * 2**30 - VM_MEMORY
        # A VM removed from the config keeps running, untouched, and is reported.
        (config / "vms" / "vm1.yaml").unlink()
        report = sync_json(sb, config)
        assert "machine-vm1.scope" not in report["removed"]
        assert "machine-vm1.scope in machine.slice is not a VM in the config: left running, untouched" in report["warnings"]
        assert active_state(sb, "machine-vm1.scope") == "active" and p.poll() is None
        assert scope_values(sb, "machine-vm1.scope")["cpu.shares"] == VM_SHARES
        assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 4 * 2**30  # budget back to pods
        later = sync_json(sb, config)  # and it keeps being reported while it runs
        assert "machine-vm1.scope in machine.slice is not a VM in the config: left running, untouched" in later["warnings"]
    finally:
        vm.stop_qemu(p)


def test_machined_scope_found_by_libvirt_domain_tuned_and_declared_not_running_reported(qsb, config):
    sb = qsb
    (config / "vms" / "web.yaml").write_text(vm_yaml("web", "  libvirt: {domain: web}\n"))
    (config / "vms" / "absent.yaml").write_text(vm_yaml("absent"))
    scope = "machine-qemu\\x2d1\\x2dweb.scope"
    p, inner = vm.start_qemu(sb, "web", before_exec=lambda pid: vm.machined_style_scope(sb, "qemu-1-web", pid))
    try:
        assert active_state(sb, scope) == "active"
        report = sync_json(sb, config)
        changes = {u["unit"]: u["changes"] for u in report["updated"]}
        assert changes[scope]["CPUShares"][1] == VM_SHARES
        assert changes[scope]["MemoryLimit"] == [2**64 - 1, VM_MEMORY]
        assert scope_values(sb, scope) == {"cpu.shares": VM_SHARES, "cpu.cfs_quota_us": VM_QUOTA_US,
                                           "memory.limit_in_bytes": VM_MEMORY}
        assert sbx.run(sb, ["systemctl", "show", scope, "-p", "TasksMax", "--value"]).stdout.strip() == "16384"  # machined's
        assert oom_of(vm.qemu_host_pid(p)) == VM_OOM
        assert "VM absent is declared but not running" in report["warnings"]
        assert report["errors"] == []
        again = sync_json(sb, config)
        assert again["updated"] == [] and again["oomAdjusted"] == 0
    finally:
        vm.stop_qemu(p)


def test_libvirt_domain_started_with_virsh_is_tuned(vm_sandbox, config):  # noqa: F811
    sb = vm_sandbox
    (config / "vms" / "lv.yaml").write_text(vm_yaml("lv", "  libvirt: {domain: lvdom}\n"))
    dom = vm.libvirt_start_domain(sb, "lvdom")
    try:
        r = sdqos_in(sb, "sync", "--config", str(config), "-o", "json")
        assert r.returncode == 0, r.stderr
        assert kernel(sb, "cpu", f"machine.slice/{dom.scope}", "cpu.shares") == VM_SHARES
        assert kernel(sb, "memory", f"machine.slice/{dom.scope}", "memory.limit_in_bytes") == VM_MEMORY
        host = vm.host_pid(sb, dom.inner_pid)
        assert host is not None and oom_of(host) == VM_OOM
    finally:
        vm.libvirt_destroy_domain(sb, "lvdom")
