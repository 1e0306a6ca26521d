"""tests/vmtools.py against the real thing: qemu guests inside the sandbox, scopes made as
systemd-machined makes them, and machined and libvirtd themselves running inside a sandbox
(fixtures qemu_sandbox and vm_sandbox, tests/conftest.py).

Without qemu (or machined/libvirt for the last tests) they skip with the reason; with
SDQOS_REQUIRE_VM=1 (CI) that is a failure instead."""

from __future__ import annotations

import asyncio
import struct
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.host.systemd import Systemd
from sdqos.kube.naming import machine_scope

from .. import vmtools as vm
from ..sbhelpers import pids_below

LIBVIRT_AFTER = {"libvirtd.service", "virtqemud.service"}  # libvirt 9's extra scope properties
# what differs between two scopes of identical making: names, ids, times, who holds a bus ref
VOLATILE = ("Id", "Names", "Description", "ControlGroup", "ControlGroupId", "FragmentPath", "InvocationID",
            "Refs", "MainPID")


def wait_for(cond, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def show(sb: sbx.Sandbox, unit: str) -> dict[str, str]:
    out = sb.systemctl("show", unit, check=True).stdout
    return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)


def loaded(sb: sbx.Sandbox, unit: str) -> bool:
    return sb.systemctl("show", unit, "-p", "LoadState", "--value").stdout.strip() == "loaded"


def procs(d: Path) -> set[int]:
    """PIDs in cgroup dir `d` and below."""
    return set(pids_below(d))


def cpu_ticks(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


# --- pure --------------------------------------------------------------------------------------------


def test_halt_kernel_is_a_multiboot_image():
    k = vm.HALT_KERNEL
    magic, flags, checksum, header_addr, load_addr, load_end, bss_end, entry = struct.unpack("<8I", k[:32])
    assert (magic, flags) == (0x1BADB002, 0x00010000)
    assert (magic + flags + checksum) % 2**32 == 0
    assert header_addr == load_addr == 0x100000 and entry == 0x100000 + 32 and load_end == bss_end == 0
    assert k[32:] == bytes([0xFA, 0xF4, 0xEB, 0xFD])  # cli; hlt; jmp back to hlt


def test_qemu_available_names_the_package(monkeypatch: pytest.MonkeyPatch):
    vm.qemu_available.cache_clear()
    monkeypatch.setattr(vm, "QEMU", "qemu-system-nonexistent")
    try:
        assert "qemu-system-x86" in (vm.qemu_available() or "")
    finally:
        vm.qemu_available.cache_clear()


def test_machined_scope_properties():
    assert vm.machined_scope_properties("qemu-1-vm1", 42) == {
        "Slice": "machine.slice", "Description": "Virtual Machine qemu-1-vm1", "PIDs": [42], "Delegate": True,
        "CollectMode": "inactive-or-failed", "AddRef": True, "TasksMax": 16384,
    }
    assert "AddRef" not in vm.machined_scope_properties("x", 1, add_ref=False)
    with pytest.raises(ValueError, match="machined takes"):
        vm.machined_style_scope(None, "a/b", 1)  # type: ignore[arg-type]


# --- qemu in the session sandbox -----------------------------------------------------------------------


def test_start_qemu_runs_a_real_idle_guest(qemu_sandbox: sbx.Sandbox):
    sb = qemu_sandbox
    with vm.running_qemu(sb, "g1") as (p, inner):
        host = vm.qemu_host_pid(p)
        assert host is not None and vm.host_pid(sb, inner) == host
        assert Path(f"/proc/{host}/comm").read_text().startswith("qemu-system")
        assert vm.qmp(sb, "g1", "query-status")["status"] == "running"
        regs = vm.qmp(sb, "g1", "human-monitor-command", {"command-line": "info registers"})
        assert "HLT=1" in regs and "EIP=00100022" in regs  # halted in the halt kernel, after `hlt`
        t0 = cpu_ticks(host)
        time.sleep(1.0)
        assert cpu_ticks(host) - t0 <= 10  # idle: < 10 % of a CPU (measured: ~0.1-0.3 %)
    assert p.returncode is not None and not vm._alive(host)


def test_start_qemu_paused(qemu_sandbox: sbx.Sandbox):
    with vm.running_qemu(qemu_sandbox, "g2", paused=True) as (_p, _inner):
        assert vm.qmp(qemu_sandbox, "g2", "query-status")["status"] == "prelaunch"


def test_start_qemu_failure_says_why(qemu_sandbox: sbx.Sandbox):
    with pytest.raises(RuntimeError, match="qemu g3 exited 1|before writing its pidfile"):
        vm.stop_qemu(vm.start_qemu(qemu_sandbox, "g3", memory_mib=-1)[0])  # "Invalid RAM size"
    with pytest.raises(ValueError):
        vm.start_qemu(qemu_sandbox, "../x")


def test_machined_style_scope_takes_the_vm_into_machine_slice(qemu_sandbox: sbx.Sandbox):
    sb = qemu_sandbox
    with vm.running_qemu(sb, "s1") as (p, inner):
        unit = vm.machined_style_scope(sb, "qemu-1-s1", inner)
        assert unit == "machine-qemu\\x2d1\\x2ds1.scope"
        props = show(sb, unit)
        assert props["ActiveState"] == "active" and props["Transient"] == "yes"
        assert (props["Slice"], props["Delegate"], props["CollectMode"], props["TasksMax"]) == (
            "machine.slice", "yes", "inactive-or-failed", "16384")
        assert props["Description"] == "Virtual Machine qemu-1-s1"
        host = vm.qemu_host_pid(p)
        for ctl in ("cpu", "memory", "pids"):  # the kernel's files are under the sandbox's dirs
            d = sb.cgroup_path(ctl) / "machine.slice" / unit
            assert procs(d) == {host}, ctl

        async def limit() -> None:  # what sdqos does to a VM scope
            async with Systemd(sb.bus_address) as sd:
                await sd.set_unit_properties(unit, {"CPUShares": 512, "MemoryLimit": 512 << 20})

        asyncio.run(limit())
        assert (sb.cgroup_path("cpu") / "machine.slice" / unit / "cpu.shares").read_text().strip() == "512"
        assert (sb.cgroup_path("memory") / "machine.slice" / unit / "memory.limit_in_bytes").read_text().strip() \
            == str(512 << 20)
    wait_for(lambda: not loaded(sb, unit), f"{unit} collected once qemu is gone")


def test_before_exec_accounts_all_of_qemu_in_the_scope(qemu_sandbox: sbx.Sandbox):
    sb = qemu_sandbox
    made: list[str] = []
    with vm.running_qemu(sb, "s2", before_exec=lambda pid: made.append(vm.machined_style_scope(sb, "qemu-2-s2", pid))) \
            as (p, inner):
        (unit,) = made
        mem = sb.cgroup_path("memory") / "machine.slice" / unit
        assert procs(mem) == {vm.qemu_host_pid(p)}
        assert int((mem / "memory.usage_in_bytes").read_text()) > 8 << 20  # qemu's start-up, charged here
    wait_for(lambda: not loaded(sb, unit), f"{unit} collected")


# --- machined and libvirt in a sandbox of their own -----------------------------------------------------


def test_machined_makes_the_same_scope(vm_sandbox: sbx.Sandbox):
    sb = vm_sandbox
    with vm.running_qemu(sb, "m1") as (_p1, pid1), vm.running_qemu(sb, "m2") as (_p2, pid2):
        ours = vm.machined_style_scope(sb, "qemu-1-m1", pid1)
        theirs = vm.machined_create_machine(sb, "qemu-1-m2", pid2)
        assert theirs == machine_scope("qemu-1-m2")
        info = vm.machine_info(sb, inner_pid=pid2)
        assert (info["Name"], info["Unit"], info["Leader"], info["Class"]) == ("qemu-1-m2", theirs, pid2, "vm")
        a, b = show(sb, ours), show(sb, theirs)
        diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b)
                if a.get(k) != b.get(k) and k not in VOLATILE and not k.endswith("Timestamp")
                and not k.endswith("TimestampMonotonic")}
        assert diff == {}
        assert b["Description"] == "Virtual Machine qemu-1-m2" and b["Refs"]  # machined holds its AddRef
        transient = sb.run_dir / "systemd" / "transient"
        unit_file = (transient / ours).read_text().replace("m1", "mX")
        assert unit_file == (transient / theirs).read_text().replace("m2", "mX")
    wait_for(lambda: not loaded(sb, ours) and not loaded(sb, theirs), "both scopes collected")
    wait_for(lambda: "qemu-1-m2" not in sb.run(["machinectl", "list", "--no-legend"]).stdout, "machine gone")


def test_libvirt_domain_is_registered_as_machined_does(vm_sandbox: sbx.Sandbox):
    sb = vm_sandbox
    dom = vm.libvirt_start_domain(sb, "lv1")
    try:
        assert dom.machine == f"qemu-{dom.id}-lv1"
        assert dom.scope == machine_scope(dom.machine) == f"machine-qemu\\x2d{dom.id}\\x2dlv1.scope"
        props = show(sb, dom.scope)
        assert (props["Slice"], props["Delegate"], props["CollectMode"], props["TasksMax"]) == (
            "machine.slice", "yes", "inactive-or-failed", "16384")
        assert LIBVIRT_AFTER <= set(props["After"].split())
        assert "virt-guest-shutdown.target" in props["Before"].split()
        host = vm.host_pid(sb, dom.inner_pid)
        assert host is not None
        # cgroup v1: libvirt nests the threads in <scope>/libvirt/{emulator,vcpu0}
        cpu = sb.cgroup_path("cpu") / "machine.slice" / dom.scope
        assert procs(cpu) == {host}
        if sb.cgroup_mode != "unified":
            assert (cpu / "libvirt" / "emulator").is_dir() and (cpu / "libvirt" / "vcpu0").is_dir()
        # and our helper with libvirt's extra properties makes the same unit
        with vm.running_qemu(sb, "lv2") as (_p, pid):
            ours = vm.machined_style_scope(sb, "qemu-99-lv2", pid, extra={
                "After": ["libvirtd.service", "virtqemud.service"], "Before": ["virt-guest-shutdown.target"]})
            a = show(sb, ours)
            for k in ("Slice", "Delegate", "CollectMode", "TasksMax", "After", "Before", "Transient"):
                assert sorted(a[k].split()) == sorted(props[k].split()), k
    finally:
        vm.libvirt_destroy_domain(sb, "lv1")
    wait_for(lambda: not loaded(sb, dom.scope), f"{dom.scope} collected after destroy")
    assert vm.host_pid(sb, dom.inner_pid) is None


def test_vm_prerequisites_name_the_packages(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sbx.prereqs, "MACHINED_BINARIES", ("/nonexistent/systemd-machined",))
    monkeypatch.setattr(sbx.prereqs, "LIBVIRTD_BINARY", "/nonexistent/libvirtd")
    assert sbx.missing_vm_prerequisites(machined=False) == []
    problems = " ".join(sbx.missing_vm_prerequisites(libvirt=True))
    assert "systemd-container" in problems and "libvirt-daemon-system" in problems
    assert "systemd-container" in (vm.machined_available() or "")
    if not sbx.missing_prerequisites():
        with pytest.raises(sbx.SandboxError, match="cannot boot sandbox x: .*systemd-container"):
            sbx.up("x", machined=True)


def test_a_vm_service_that_fails_fails_up(sandbox: sbx.Sandbox, sandbox_name: str, monkeypatch: pytest.MonkeyPatch):
    vm.need(vm.machined_available())
    monkeypatch.setattr(sbx.units, "MACHINED_UNIT", sbx.MACHINED_UNIT.replace("ExecStart={binary}", "ExecStart=/bin/false"))
    name = f"{sandbox_name}-vmfail"
    with pytest.raises(sbx.SandboxError, match="systemd-machined.service (failed|inactive)"):
        sbx.up(name, machined=True)
    assert not sbx.state_dir(name).exists()
