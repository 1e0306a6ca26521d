"""VM eviction through the product: `sdqos install-units --now` in a sandbox running real libvirtd,
systemd-machined and qemu, and from then on sdqos-pressure.service alone — under the unit's own
sandboxing (capability bounding set, syscall filter, address families) — stops a libvirt domain
with `virsh destroy` (the domain reads `shut off (destroyed)`) and a `sdqos run --vm` guest through
machined (`machinectl list` no longer shows it), never by the scope-stop fallback.
tests/reconcile/test_evict_vms_sandbox.py proves the same with `sdqos pressure --once --evict` run
from a shell."""

from __future__ import annotations

import json
import time

from sdqos import sandbox as sbx

from .. import vmtools as vm
from ..sbhelpers import active_state, remove_sync_units, sdqos_run_vm, show, wait_for
from .test_evict_vms_sandbox import config, cross_hard_threshold, machines, vm_yaml  # noqa: F401
from .test_pressure_service_sandbox import UNIT, install, journal


def evicted_by_the_service(sb, victim: str) -> tuple[str, dict, float]:
    """Wait for the service's journal line `evicted vm VICTIM: …` (its next pass reads the crossed
    threshold: at most its 10 s period); the line, the record it wrote, the seconds waited."""
    t0 = time.monotonic()
    lines = wait_for(lambda: [ln for ln in journal(sb) if ln.startswith(f"evicted vm {victim}: ")] or None,
                     f"{UNIT}'s eviction of {victim} in the journal", timeout=60)
    took = time.monotonic() - t0
    record = json.loads((sb.run_dir / "sdqos" / "evicted.json").read_text())["evicted"]
    assert len(lines) == 1, lines
    return lines[0], record[f"vm:{victim.removeprefix('vm/')}"], took


# capability numbers (linux/capability.h) of the unit's CapabilityBoundingSet=
CAPS = {"CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_KILL": 5, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
        "CAP_SYS_ADMIN": 21, "CAP_SYS_RESOURCE": 24}


def sandboxed(sb, pid: int) -> None:
    """The service's process runs under the unit's sandboxing, where the kernel holds it: a seccomp
    filter, no new privileges, and a bounding set within the unit's capabilities."""
    proc = sbx.run(sb, ["cat", f"/proc/{pid}/status"], check=True).stdout
    status = dict(ln.split(":", 1) for ln in proc.splitlines())
    bounding = show(sb, UNIT, "CapabilityBoundingSet")["CapabilityBoundingSet"].upper().split()
    assert sorted(bounding) == sorted(CAPS), bounding
    allowed = sum(1 << n for n in CAPS.values())
    assert status["Seccomp"].strip() == "2" and status["NoNewPrivs"].strip() == "1", status
    assert int(status["CapBnd"], 16) & ~allowed == 0, status["CapBnd"]


def still_the_same_service(sb, pid: int) -> None:
    assert active_state(sb, UNIT) == "active" and show(sb, UNIT, "NRestarts")["NRestarts"] == "0"
    assert int(show(sb, UNIT, "MainPID")["MainPID"]) == pid


def test_the_installed_service_destroys_a_libvirt_vm_through_libvirt(lv_sandbox, config):  # noqa: F811
    """A defined libvirt domain with `eviction: Allowed` under a crossed hard threshold: the
    installed service runs `virsh destroy` by the domain's UUID — the domain reads `shut off
    (destroyed)` (a scope stop would read `shutdown` or `crashed`), the record's `how` names virsh
    and no fallback, machined's record of it is gone, and a second domain runs on."""
    sb = lv_sandbox
    decoy = vm.libvirt_start_domain(sb, "decoy")
    dom = None
    try:
        dom = vm.libvirt_define_domain(sb, "lvs")
        (config / "vms" / "lv.yaml").write_text(vm_yaml("lv", "  libvirt: {domain: lvs}\n"))
        install(sb, config)
        pid = int(show(sb, UNIT, "MainPID")["MainPID"])
        sandboxed(sb, pid)
        assert not any(ln.startswith("evicted") for ln in journal(sb))
        cross_hard_threshold(sb, config)
        line, rec, took = evicted_by_the_service(sb, "vm/lv")
        state = vm.domstate(sb, dom.uuid)
        print(f"{line}\ndomstate {state!r}; threshold written → the service's journal line {took:.1f} s")
        assert "(hard), grace 1s" in line and line.endswith(f"({rec['how'][0]})"), line
        assert rec["stopped"] == [dom.scope] and rec["gracePeriodSeconds"] == 1, rec
        assert len(rec["how"]) == 1 and rec["how"][0].startswith("libvirt domain lvs: virsh destroy ("), rec
        assert "instead" not in rec["how"][0]
        assert state == "shut off (destroyed)"
        assert vm.domstate(sb, "decoy") == "running (booted)"
        assert dom.machine not in machines(sb) and decoy.machine in machines(sb)
        wait_for(lambda: active_state(sb, dom.scope) in ("inactive", "failed", ""), "the domain's scope gone")
        still_the_same_service(sb, pid)
    finally:
        remove_sync_units(sb)
        if dom is not None:
            vm.libvirt_remove_domain(sb, dom.uuid)
        vm.libvirt_destroy_domain(sb, "decoy")


def test_the_installed_service_stops_a_run_vm_guest_through_machined(lv_sandbox, config):  # noqa: F811
    """A qemu guest `sdqos run --vm` registered with machined, under a crossed hard threshold: the
    installed service asks machined (TerminateMachine, said in the record, no fallback), QEMU ends
    and `machinectl list` no longer shows the machine."""
    sb = lv_sandbox
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1", ""))
    p = sdqos_run_vm(sb, config, "vm1", timeout=30)
    try:
        assert vm.machine_info(sb, machine_name="vm1")["Service"] == "sdqos"
        install(sb, config)
        pid = int(show(sb, UNIT, "MainPID")["MainPID"])
        sandboxed(sb, pid)
        assert p.poll() is None and " vm1 " in f" {machines(sb)} "
        cross_hard_threshold(sb, config)
        line, rec, took = evicted_by_the_service(sb, "vm/vm1")
        print(f"{line}\nthreshold written → the service's journal line {took:.1f} s")
        assert "(hard), grace 1s" in line, line
        assert rec["stopped"] == ["machine-vm1.scope"] and rec["gracePeriodSeconds"] == 1, rec
        assert len(rec["how"]) == 1 and rec["how"][0].startswith(
            "VM vm1 (machined, registered by sdqos): TerminateMachine ("), rec
        p.wait(timeout=20)
        assert " vm1 " not in f" {machines(sb)} "
        wait_for(lambda: active_state(sb, "machine-vm1.scope") in ("inactive", "failed", ""), "the VM's scope gone")
        still_the_same_service(sb, pid)
    finally:
        remove_sync_units(sb)
        vm.stop_qemu(p)
        sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
