"""VMs in machine.slice next to pods, one node budget — with real qemu guests in the sandbox, a
scope made exactly as systemd-machined makes one, and a libvirt domain started with virsh."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .. import vmtools as vm
from ..sbhelpers import active_state, kernel, remove_sync_units, sdqos_in, sdqos_run_vm, sync_json, wait_for

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


UNLIMITED_V1 = 0x7FFFFFFFFFFFF000


def assert_budget(sb, allocatable: int = 4 * 2**30) -> tuple[int, int]:
    """kubepods.slice + machine.slice never exceed allocatable memory (as the kernel holds them)."""
    pods = kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes")
    machines = kernel(sb, "memory", "machine.slice", "memory.limit_in_bytes")
    assert pods + min(machines, allocatable) <= allocatable or machines == UNLIMITED_V1, (pods, machines)
    return pods, machines


def counted(sb, config: Path, scope: str) -> int:
    """What status says the budget counts for a scope in machine.slice that no VM declares."""
    st = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0").stdout)
    label = next(r["label"] for r in st["units"] if r["unit"] == scope)
    m = re.search(r"counted ([0-9.]+) (MiB|GiB)", label)
    assert m, label
    return round(float(m.group(1)) * {"MiB": 2**20, "GiB": 2**30}[m.group(2)])


def oom_of(host_pid: int) -> int:
    return int(Path(f"/proc/{host_pid}/oom_score_adj").read_text())


def test_sdqos_run_vm_starts_real_qemu_in_its_machine_scope(qemu_sandbox, config):
    sb = qemu_sandbox
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1"))
    p = sdqos_run_vm(sb, config, "vm1")
    try:
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
        assert_budget(sb)
        # A VM removed from the config keeps running, untouched, reported, and still counted: by what
        # it holds, at most its limit (it was promised nothing any more; issue 30).
        (config / "vms" / "vm1.yaml").unlink()
        report = sync_json(sb, config)
        assert "machine-vm1.scope" not in report["removed"]
        assert ("machine-vm1.scope (VM vm1, started by sdqos) in machine.slice is not a VM in the config: left "
                "running, untouched, counted in the node budget") in report["warnings"]
        assert active_state(sb, "machine-vm1.scope") == "active" and p.poll() is None
        assert scope_values(sb, "machine-vm1.scope")["cpu.shares"] == VM_SHARES
        count = counted(sb, config, "machine-vm1.scope")
        held = kernel(sb, "memory", "machine.slice/machine-vm1.scope", "memory.usage_in_bytes")
        assert held <= count <= VM_MEMORY
        pods, machines = assert_budget(sb)
        assert pods == 4 * 2**30 - count
        assert machines == (VM_MEMORY if count == VM_MEMORY else UNLIMITED_V1)  # its own limit bounds it
        later = sync_json(sb, config)  # and it keeps being reported while it runs, with nothing to change
        assert any(w.startswith("machine-vm1.scope (VM vm1") for w in later["warnings"])
        assert later["updated"] == [] and later["drift"] == []
        # The last one gone: machine.slice is released to systemd's defaults, the pods get it all.
        vm.stop_qemu(p)
        wait_for(lambda: active_state(sb, "machine-vm1.scope") in ("inactive", "failed", ""), "VM scope gone")
        gone = sync_json(sb, config)
        assert any(w.startswith("machine.slice: nothing declared or running there any more") for w in gone["warnings"])
        assert kernel(sb, "memory", "machine.slice", "memory.limit_in_bytes") == UNLIMITED_V1
        assert kernel(sb, "cpu", "machine.slice", "cpu.shares") == 1024
        assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 4 * 2**30
        assert sync_json(sb, config)["updated"] == []
    finally:
        vm.stop_qemu(p)


def test_machined_scope_found_by_libvirt_domain_tuned_and_declared_not_running_reported(qemu_sandbox, config):
    sb = qemu_sandbox
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


def test_libvirt_domain_started_with_virsh_is_tuned(lv_sandbox, config):
    sb = lv_sandbox
    (config / "vms" / "lv.yaml").write_text(vm_yaml("lv", "  libvirt: {domain: lvdom}\n"))
    dom = vm.libvirt_start_domain(sb, "lvdom")
    try:
        r = sdqos_in(sb, "sync", "--config", str(config), "-o", "json")
        assert r.returncode == 0, r.stderr
        assert kernel(sb, "cpu", f"machine.slice/{dom.scope}", "cpu.shares") == VM_SHARES
        assert kernel(sb, "memory", f"machine.slice/{dom.scope}", "memory.limit_in_bytes") == VM_MEMORY
        host = vm.host_pid(sb, dom.inner_pid)
        assert host is not None and oom_of(host) == VM_OOM
        assert "vm/lv" in ranked(sb, config)  # found for node-pressure eviction the way sync finds it
    finally:
        vm.libvirt_destroy_domain(sb, "lvdom")


def ranked(sb, config) -> dict[str, dict]:
    """The workloads `sdqos pressure --once` ranks for eviction, by name."""
    r = sdqos_in(sb, "pressure", "--once", "--config", str(config), "-o", "json")
    assert r.returncode == 0, r.stderr
    return {w["name"]: w for w in json.loads(r.stdout)["ranking"]}


def test_vm_resized_while_running_and_drift_on_its_scope_is_restored(qemu_sandbox, config):
    sb = qemu_sandbox
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1"))
    p = sdqos_run_vm(sb, config, "vm1")
    scope = "machine-vm1.scope"
    try:
        assert sync_json(sb, config)["errors"] == []
        assert_budget(sb)
        # A write behind systemd's back on the VM's scope is seen in the kernel and restored.
        (sb.cgroup_path("cpu") / "machine.slice" / scope / "cpu.shares").write_text("2")
        report = sync_json(sb, config)
        assert report["drift"] == [{"unit": scope, "changes": {}, "kernel": {"cpu/cpu.shares": [2, VM_SHARES]}}]
        assert scope_values(sb, scope)["cpu.shares"] == VM_SHARES
        text = sdqos_in(sb, "sync", "--config", str(config))
        assert text.returncode == 0 and "drift" not in text.stdout  # restored: nothing left
        # Resized up while running: the scope, machine.slice and the pods' share follow.
        (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1").replace("memory: 64Mi}\n  overhead",
                                                                        "memory: 96Mi}\n  overhead"))
        up = sync_json(sb, config)
        changes = {u["unit"]: u["changes"] for u in up["updated"]}
        assert changes[scope]["MemoryLimit"] == [VM_MEMORY, 160 * 2**20]
        assert scope_values(sb, scope)["memory.limit_in_bytes"] == 160 * 2**20
        assert assert_budget(sb) == (4 * 2**30 - 160 * 2**20, 160 * 2**20)
        # Resized below what the guest holds: clamped to its usage (the kernel would refuse it), said
        # so, never reported as the wanted value; machine.slice still holds what its children hold.
        (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1").replace("memory: 64Mi}\n  overhead: {cpu: 100m, memory: 64Mi}",
                                                                        "memory: 1Mi}\n  overhead: {cpu: 100m, memory: 1Mi}"))
        usage = kernel(sb, "memory", f"machine.slice/{scope}", "memory.usage_in_bytes")
        down = sync_json(sb, config)
        assert down["errors"] == [], down
        clamped = [w for w in down["warnings"] if w.startswith(f"{scope}: MemoryLimit clamped to current usage")]
        assert clamped and "wanted 2 MiB" in clamped[0], down["warnings"]
        held = scope_values(sb, scope)["memory.limit_in_bytes"]
        assert usage <= held < 160 * 2**20
        assert {u["unit"]: u["changes"] for u in down["updated"]}[scope]["MemoryLimit"][1] == held
        pods, machines = assert_budget(sb)
        assert machines >= kernel(sb, "memory", "machine.slice", "memory.usage_in_bytes")
        assert p.poll() is None and vm.qmp_status(sb, "vm1") == "running"  # the guest was not killed
        # status counts what the sync applied: the VM's scope is clamped-to-usage, not drifted
        st = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0").stdout)
        row = next(r for r in st["units"] if r["unit"] == scope)
        assert "clamped-to-usage" in row["flags"] and "drift" not in row["flags"], (row["drift"], row["reasons"])
        assert row["entitled"]["memoryLimit"] == held
    finally:
        vm.stop_qemu(p)


LONG = "db_replica.2-" + "x" * 60  # machined drops the '_' and cuts the machine name at 64 characters


def test_libvirt_vms_found_by_libvirts_record_counted_and_checked(lv_sandbox, config):
    """Odd names, a partition, an undeclared domain, a restart with a new id, a guest larger than
    its declared limit: libvirt's own record finds each, the budget counts each."""
    sb = lv_sandbox
    (config / "vms" / "db.yaml").write_text(vm_yaml("db", f"  libvirt: {{domain: {LONG}}}\n"))
    (config / "vms" / "small.yaml").write_text(vm_yaml("small", "  libvirt: {domain: small}\n").replace(
        "memory: 64Mi}\n  overhead", "memory: 32Mi}\n  overhead"))
    doms = []
    try:
        db = vm.libvirt_start_domain(sb, LONG, partition="/machine/tenant1")
        doms.append(LONG)
        assert "_" not in db.machine and len(db.machine) <= 64  # what machined made of the name
        stray = vm.libvirt_start_domain(sb, "stray")
        doms.append("stray")
        small = vm.libvirt_start_domain(sb, "small")
        doms.append("small")
        report = sync_json(sb, config)
        assert report["errors"] == [], report
        rel = f"machine.slice/machine-tenant1.slice/{db.scope}"
        assert kernel(sb, "cpu", rel, "cpu.shares") == VM_SHARES
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == VM_MEMORY
        assert oom_of(vm.host_pid(sb, db.inner_pid)) == VM_OOM
        assert not any("declared but not running" in w for w in report["warnings"]), report["warnings"]
        # The guest of `small` has 64 MiB of RAM, its declared limit is 32 MiB.
        assert ("VM small: libvirt domain small has 64 MiB of RAM but limits.memory is 32 MiB: the guest is "
                "OOM-killed when it uses its RAM; set limits.memory to at least 64 MiB") in report["warnings"]
        # The undeclared domain is named and counted by what it holds, at most its RAM + QEMU's overhead.
        assert any(w.startswith(f"{stray.scope} (libvirt domain stray) in machine.slice is not a VM in the config")
                   for w in report["warnings"]), report["warnings"]
        bound = 64 * 2**20 + (70 + 8) * 2**20 + 64 * 2**20 // 512  # RAM + default overhead, 1 vCPU
        # status lists every scope in machine.slice, declared or not, with what it is counted for.
        st = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0").stdout)
        rows = {r["unit"]: r for r in st["units"]}
        assert rows[stray.scope]["flags"] == ["undeclared"]
        assert rows[stray.scope]["label"].startswith("libvirt domain stray, not declared (counted ")
        stray_charge = counted(sb, config, stray.scope)
        assert stray_charge <= bound
        assert rows[db.scope]["kind"] == "vm" and rows[db.scope]["vm"] == "db"
        small_mem = 32 * 2**20 + 64 * 2**20
        machines = VM_MEMORY + small_mem + stray_charge
        pods, limit = assert_budget(sb)
        assert pods == 4 * 2**30 - machines and limit in (machines, UNLIMITED_V1)
        # Restarted with a new id: found again and tuned again.
        vm.libvirt_destroy_domain(sb, LONG)
        db2 = vm.libvirt_start_domain(sb, LONG, partition="/machine/tenant1")
        assert db2.id != db.id and db2.scope != db.scope
        again = sync_json(sb, config)
        assert again["errors"] == []
        assert kernel(sb, "memory", f"machine.slice/machine-tenant1.slice/{db2.scope}", "memory.limit_in_bytes") == VM_MEMORY
        machines = VM_MEMORY + small_mem + counted(sb, config, stray.scope)
        assert assert_budget(sb)[0] == 4 * 2**30 - machines
        # The undeclared one stops: the pods get its share back.
        vm.libvirt_destroy_domain(sb, "stray")
        sync_json(sb, config)
        declared = VM_MEMORY + small_mem
        assert assert_budget(sb) == (4 * 2**30 - declared, declared)
    finally:
        for name in doms:
            vm.libvirt_destroy_domain(sb, name)


def test_run_vm_registers_with_machined_and_updates_the_budget_at_once(lv_sandbox, config):
    """`sdqos run --vm` of a VM added since the last sync: machined creates its scope with the limits
    (machinectl knows it and can stop it), and the pods' share shrinks at once, not at the next sync."""
    sb = lv_sandbox
    assert sync_json(sb, config)["errors"] == []
    assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 4 * 2**30
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1"))
    p = sdqos_run_vm(sb, config, "vm1")
    try:
        info = vm.machine_info(sb, machine_name="vm1")
        assert info["Unit"] == "machine-vm1.scope" and info["Class"] == "vm" and info["Service"] == "sdqos"
        assert scope_values(sb, "machine-vm1.scope") == {
            "cpu.shares": VM_SHARES, "cpu.cfs_quota_us": VM_QUOTA_US, "memory.limit_in_bytes": VM_MEMORY}
        assert sbx.run(sb, ["systemctl", "show", "machine-vm1.scope", "-p", "Description", "--value"]
                       ).stdout.strip() == "sdqos vm vm1 (Burstable)"
        assert assert_budget(sb) == (4 * 2**30 - VM_MEMORY, VM_MEMORY)  # before any sync
        report = sync_json(sb, config)
        assert report["updated"] == [] and report["errors"] == [], report
        assert sbx.run(sb, ["machinectl", "terminate", "vm1"]).returncode == 0
        assert p.wait(timeout=20) is not None
        wait_for(lambda: active_state(sb, "machine-vm1.scope") in ("inactive", "failed", ""), "scope gone")
    finally:
        vm.stop_qemu(p)


def test_a_machine_registered_with_machined_is_named_and_a_pid_file_vm_elsewhere_is_located(lv_sandbox, config,
                                                                                          tmp_path):
    sb = lv_sandbox
    p, inner = vm.start_qemu(sb, "reg")
    other = sbx.popen(sb, ["systemd-run", "--scope", "--unit", "elsewhere-vm", "sleep", "300"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        scope = vm.machined_create_machine(sb, "reg", inner)  # as nspawn or another VM manager would
        wait_for(lambda: active_state(sb, "elsewhere-vm.scope") == "active", "the other scope")
        pid = int(sbx.run(sb, ["systemctl", "show", "elsewhere-vm.scope", "-p", "MainPID", "--value"]).stdout or 0) or \
            int(sbx.run(sb, ["sh", "-c", "cat /sys/fs/cgroup/systemd/system.slice/elsewhere-vm.scope/cgroup.procs"]
                        ).stdout.split()[0])
        pid_file = tmp_path / "pf.pid"
        pid_file.write_text(f"{pid}\n")
        (config / "vms" / "pf.yaml").write_text(vm_yaml("pf", f"  pidFile: {pid_file}\n"))
        report = sync_json(sb, config)
        assert (f"{scope} (VM reg (machined, registered by sdqos-test)) in machine.slice is not a VM in the config: "
                "left running, untouched, counted in the node budget") in report["warnings"], report["warnings"]
        assert (f"VM pf runs (PID {pid}) in /system.slice/elsewhere-vm.scope, outside machine.slice: not tuned and "
                "not counted there (start it in machine.slice, e.g. with sdqos run --vm)") in report["warnings"]
        assert not any(w.startswith("VM pf is declared but not running") for w in report["warnings"])
    finally:
        vm.stop_qemu(p)
        sbx.run(sb, ["systemctl", "stop", "elsewhere-vm.scope"])
        other.wait(timeout=20)


def test_pid_file_vm_is_tuned_and_adopt_vm_takes_one_pid(lv_sandbox, config):
    """A VM found by its pid file (qemu -pidfile) in a scope someone else made, and `sdqos adopt --vm
    NAME PID` with a single PID (click used to take it for the optional POD argument)."""
    sb = lv_sandbox
    (config / "vms" / "pf.yaml").write_text(vm_yaml("pf", f"  pidFile: {vm.INNER_DIR}/pf.pid\n"))
    (config / "vms" / "ad.yaml").write_text(vm_yaml("ad"))
    pf, _ = vm.start_qemu(sb, "pf", before_exec=lambda pid: vm.machined_style_scope(sb, "pf-by-hand", pid))
    ad, ad_pid = vm.start_qemu(sb, "ad")
    try:
        report = sync_json(sb, config)
        scope = "machine-pf\\x2dby\\x2dhand.scope"
        assert scope in {u["unit"] for u in report["updated"]}, report
        assert scope_values(sb, scope) == {"cpu.shares": VM_SHARES, "cpu.cfs_quota_us": VM_QUOTA_US,
                                           "memory.limit_in_bytes": VM_MEMORY}
        r = sdqos_in(sb, "adopt", "--config", str(config), "--vm", "ad", str(ad_pid))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "created machine-ad.scope with 1 process(es) of vm ad"
        assert scope_values(sb, "machine-ad.scope")["memory.limit_in_bytes"] == VM_MEMORY
        assert vm.machine_info(sb, machine_name="ad")["Leader"] == ad_pid  # registered with machined
        assert assert_budget(sb) == (4 * 2**30 - 2 * VM_MEMORY, 2 * VM_MEMORY)  # set by adopt, before a sync
        assert sync_json(sb, config)["updated"] == []
        both = ranked(sb, config)  # the pid-file VM by its pid file's PID, the adopted one by its scope's name
        assert {"vm/pf", "vm/ad"} <= set(both) and all(both[n]["processes"] for n in ("vm/pf", "vm/ad")), both
    finally:
        vm.stop_qemu(pf)
        vm.stop_qemu(ad)


def test_run_and_adopt_vm_refuse_a_vm_libvirt_already_runs(lv_sandbox, config):
    sb = lv_sandbox
    (config / "vms" / "dup.yaml").write_text(vm_yaml("dup"))  # declared without libvirt, but libvirt runs it
    dom = vm.libvirt_start_domain(sb, "dup")
    try:
        r = sdqos_in(sb, "run", "--config", str(config), "--vm", "dup", "--", "true")
        assert r.returncode == 2
        assert r.stderr.strip() == (f"sdqos: error: VM dup already runs in {dom.scope}, which libvirt or machined "
                                    "manage; pass --force to start another")
        a = sdqos_in(sb, "adopt", "--config", str(config), "--vm", "dup", str(dom.inner_pid))
        assert a.returncode == 2 and "libvirt" in a.stderr and dom.scope in a.stderr, a.stderr
        assert len(a.stderr.strip().splitlines()) == 1
        assert vm.machine_info(sb, inner_pid=dom.inner_pid)["Unit"] == dom.scope  # libvirt's, untouched
        assert vm.virsh(sb, "domstate", "dup").stdout.strip() == "running"
    finally:
        vm.libvirt_destroy_domain(sb, "dup")


def test_the_path_unit_limits_a_libvirt_vm_within_seconds_without_the_timer(lv_sandbox, config):
    """`virsh create` → the VM's limits in the kernel, by sdqos-sync.path alone (timer stopped), each
    time: libvirt writes its status file while a triggered sync may still run; --settle syncs again."""
    sb = lv_sandbox
    (config / "vms" / "lat.yaml").write_text(vm_yaml("lat", "  libvirt: {domain: lat}\n"))
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
    assert r.returncode == 0, r.stderr
    try:
        wait_for(lambda: active_state(sb, "kubepods.slice") == "active", "the first sync", timeout=30)
        sbx.run(sb, ["systemctl", "stop", "sdqos-sync.timer"])
        for _ in range(3):
            dom = vm.libvirt_start_domain(sb, "lat")
            try:
                mem = sb.cgroup_path("memory") / "machine.slice" / dom.scope / "memory.limit_in_bytes"
                try:
                    wait_for(lambda: mem.exists() and int(mem.read_text()) == VM_MEMORY, "the VM's limit", timeout=10)
                except AssertionError:
                    st = sbx.run(sb, ["systemctl", "status", "--no-pager", "sdqos-sync.path", "sdqos-sync.service"])
                    again = sdqos_in(sb, "sync", "--config", str(config))
                    raise AssertionError(f"{st.stdout}\n{again.stdout}\n{again.stderr}") from None
                assert assert_budget(sb) == (4 * 2**30 - VM_MEMORY, VM_MEMORY)
            finally:
                vm.libvirt_destroy_domain(sb, "lat")
    finally:
        remove_sync_units(sb)


def test_a_stale_libvirt_record_never_makes_sdqos_tune_the_scope_its_pid_now_runs_in(clean_sandbox, config):
    """libvirtd down while its guest ended, and the PID reused by another process: libvirt's status
    record still names the domain and that PID. The process is not the domain's QEMU (its command
    line has no `-name guest=<domain>`), so its scope is left alone and the VM is not running."""
    sb = clean_sandbox
    (config / "vms" / "ghost.yaml").write_text(vm_yaml("ghost", "  libvirt: {domain: ghost}\n"))
    p = sbx.popen(sb, ["systemd-run", "--quiet", "--scope", "--slice=machine.slice", "--unit=foreign-batch",
                       "sh", "-c", "echo $$; exec sleep 100000"], stdout=subprocess.PIPE, text=True)
    try:
        inner = int(p.stdout.readline())
        record = (f"<domstatus state='running' pid='{inner}'><domain type='kvm' id='3'><name>ghost</name>"
                  "<memory unit='KiB'>65536</memory><vcpu>1</vcpu></domain></domstatus>\n")
        sbx.run(sb, ["sh", "-c", "mkdir -p /run/libvirt/qemu && umask 077 && cat > /run/libvirt/qemu/ghost.xml"],
                input=record, check=True)
        report = sync_json(sb, config)
        rel = "machine.slice/foreign-batch.scope"
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == UNLIMITED_V1
        show = sbx.run(sb, ["systemctl", "show", "foreign-batch.scope", "-p", "CPUShares", "-p", "MemoryLimit",
                            "-p", "CPUQuotaPerSecUSec"]).stdout.splitlines()
        assert sorted(show) == ["CPUQuotaPerSecUSec=infinity", "CPUShares=[not set]", "MemoryLimit=infinity"], show
        host = vm.host_pid(sb, inner)
        assert host is not None and oom_of(host) == 0
        assert "foreign-batch.scope" not in {u["unit"] for u in report["updated"]}
        assert (f"/run/libvirt/qemu/ghost.xml names PID {inner} for domain ghost, but that process is not its QEMU "
                "(libvirtd down, or the guest gone): ignored, and that process's scope is not tuned as the VM"
                ) in report["warnings"], report["warnings"]
        assert "VM ghost is declared but not running" in report["warnings"]
        assert any(w.startswith("foreign-batch.scope in machine.slice is not a VM in the config")
                   for w in report["warnings"]), report["warnings"]
    finally:
        sbx.run(sb, ["rm", "-rf", "/run/libvirt/qemu/ghost.xml"])
        p.kill()
        sbx.run(sb, ["systemctl", "stop", "foreign-batch.scope"])


def test_an_nspawn_container_is_named_counted_and_left_running_through_machineds_row(lv_sandbox, config):
    """systemd-nspawn registers its containers with machined (class container, machine-NAME.scope):
    the runtime table's machined row names it, the budget counts it, sync never stops or claims it —
    not even for a declared VM of the same name (rows: sdqos/reconcile/runtimes/)."""
    sb = lv_sandbox
    (config / "vms" / "web.yaml").write_text(vm_yaml("web"))  # machine-web.scope by name alone: not claimed
    p = sbx.popen(sb, ["systemd-nspawn", "--quiet", "--directory=/", "--volatile=yes", "--register=yes",
                       "--machine=web", "sleep", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: active_state(sb, "machine-web.scope") == "active", "the nspawn container's scope")
        assert "web container systemd-nspawn" in " ".join(sbx.run(sb, ["machinectl", "list", "--no-legend"]).stdout.split())
        report = sync_json(sb, config)
        assert report["errors"] == [], report
        assert ("VM web: machine-web.scope exists but was not started by sdqos; left alone (set spec.scope to "
                "claim it)") in report["warnings"], report["warnings"]
        named = "machine-web.scope (container web (machined, registered by systemd-nspawn)) in machine.slice"
        assert any(w.startswith(f"{named} has no memory limit: counted by its usage ") for w in report["warnings"]), \
            report["warnings"]
        st = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0").stdout)
        row = next(r for r in st["units"] if r["unit"] == "machine-web.scope")
        assert row["label"].startswith("container web (machined, registered by systemd-nspawn), not declared (counted ")
        charge = counted(sb, config, "machine-web.scope")
        assert charge > 0
        pods, _ = assert_budget(sb)
        assert pods <= 4 * 2**30 - 64 * 2**20 - 64 * 2**20 - charge  # the declared VM and the container
        assert p.poll() is None and active_state(sb, "machine-web.scope") == "active"  # left running
    finally:
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
        sbx.run(sb, ["systemctl", "stop", "machine-web.scope"])
