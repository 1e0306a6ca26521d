"""Evicting a VM through the runtime that runs it, with real qemu, libvirtd and systemd-machined in
the sandbox: a libvirt domain with `virsh destroy` (hard) or `shutdown` then `destroy` (soft), by
its UUID whatever its name; a VM `sdqos run --vm` registered with machined through machined; the
scope stop when virsh is not there, said in the record."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .. import vmtools as vm
from ..sbhelpers import active_state, sdqos_in, sdqos_run_vm, wait_for
from .test_pressure_sandbox import STUBBORN, readline, settled_available, stop

Mi = 2**20
NODE = 'capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\n'


def vm_yaml(name: str, locator: str) -> str:
    return f"""\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: {name}}}
spec:
  resources: {{requests: {{cpu: 100m, memory: 1Mi}}, limits: {{cpu: "1", memory: 256Mi}}}}
  overhead: {{cpu: 100m, memory: 1Mi}}
  priority: -5
  eviction: Allowed
{locator}"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "vms").mkdir(parents=True)
    (d / "pods").mkdir()
    (d / "node.yaml").write_text(NODE)
    return d


def above_available(sb, config: Path) -> int:
    """A threshold (MiB) above what is available now, below the capacity (kubelet refuses a
    reservation as large as the capacity): the sandbox's working set is small."""
    available = settled_available(sb, config)
    used = 4 * 2**30 - available
    assert used > 8 * Mi, used
    return (available + min(50 * Mi, used // 2)) // Mi


def cross_hard_threshold(sb, config: Path) -> None:
    (config / "node.yaml").write_text(NODE + f"evictionHard: {{memory.available: {above_available(sb, config)}Mi}}\n")


def watch_soft_threshold(sb, config: Path) -> subprocess.Popen:
    """A soft threshold already crossed (grace 1 s, evictionMaxPodGracePeriod 3) and the evicting
    loop started on it, past its first two lines (watching; MemoryPressure)."""
    (config / "node.yaml").write_text(
        NODE + f"evictionHard: {{memory.available: 1Mi}}\nevictionSoft: {{memory.available: "
        f"{above_available(sb, config)}Mi}}\nevictionSoftGracePeriod: {{memory.available: 1s}}\n"
        "evictionMaxPodGracePeriod: 3\n")
    service = sbx.popen(sb, [sys.executable, "-m", "sdqos", "pressure", "--evict", "--interval", "0.5",
                             "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert readline(service) == "watching node pressure every 0.5s, evicting"
        assert readline(service).startswith("node conditions: MemoryPressure")
    except BaseException:
        stop(service)
        raise
    return service


def machines(sb) -> str:
    return sbx.run(sb, ["machinectl", "list", "--no-legend"]).stdout


def evict_once(sb, config: Path, env: dict | None = None) -> tuple[dict, float]:
    t0 = time.monotonic()
    r = sdqos_in(sb, "pressure", "--once", "--evict", "--config", str(config), "-o", "json", env=env)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), took


@pytest.mark.parametrize("case", ["plain", "dashes", "another-domains-id", "no-virsh"])
def test_a_libvirt_vm_evicted_hard_is_destroyed_by_libvirt(lv_sandbox, config, case):
    """Hard threshold: `virsh destroy` of the domain, found by libvirt's status XML and named to
    virsh by its UUID: the domain reads `shut off (destroyed)` (not crashed), machined's record is
    gone, a decoy domain runs on — also when the domain is named `--lvx` (never a virsh option) or
    after the decoy's id (virsh would read that name as the decoy's id). Without virsh, the scope
    is stopped instead and the record says so."""
    sb = lv_sandbox
    decoy = vm.libvirt_start_domain(sb, "decoy")
    name = {"plain": "lvx", "dashes": "--lvx", "another-domains-id": str(decoy.id), "no-virsh": "lvx"}[case]
    dom = None
    try:
        dom = vm.libvirt_define_domain(sb, name)
        (config / "vms" / "lv.yaml").write_text(vm_yaml("lv", f"  libvirt: {{domain: {json.dumps(name)}}}\n"))
        cross_hard_threshold(sb, config)
        env = {**os.environ, "PATH": "/nonexistent"} if case == "no-virsh" else None
        out, took = evict_once(sb, config, env)
        rec = out["evicted"]
        assert out["victim"] == "vm/lv" and rec["stopped"] == [dom.scope] and rec["gracePeriodSeconds"] == 1, out
        # (libvirtd learns that QEMU ended from its monitor socket, on its own time: "in shutdown" until then)
        def settled() -> str | None:
            st = vm.domstate(sb, dom.uuid)
            return None if st.startswith("in shutdown") else st
        state = wait_for(settled, "libvirt to see QEMU gone", timeout=20)
        print(f"{case}: {rec['how']}; domstate {state!r}; `pressure --once --evict` took {took:.2f} s")
        if case == "no-virsh":
            assert rec["how"] == [f"libvirt domain {name}: virsh not found (Debian package libvirt-clients); "
                                  "its scope was stopped instead"], rec
            assert state.startswith("shut off"), state  # QEMU ended under libvirt (SIGTERM: "shutdown")
        else:
            assert len(rec["how"]) == 1 and rec["how"][0].startswith(f"libvirt domain {name}: virsh destroy ("), rec
            assert state == "shut off (destroyed)"
        listed = {ln.split()[1]: " ".join(ln.split()[2:]) for ln in vm.virsh(sb, "list", "--all").stdout.splitlines()
                  if ln.strip()}
        assert listed[name] == "shut off" and listed["decoy"] == "running", listed
        assert vm.domstate(sb, "decoy") == "running (booted)"
        assert dom.machine not in machines(sb) and decoy.machine in machines(sb)
        wait_for(lambda: active_state(sb, dom.scope) in ("inactive", "failed", ""), "the domain's scope gone")
        line = sdqos_in(sb, "pressure", "--once", "--evict", "--config", str(config)).stdout
        assert "evicted" not in line  # nothing ranked any more: it stays stopped
    finally:
        if dom is not None:
            vm.libvirt_remove_domain(sb, dom.uuid)
        vm.libvirt_destroy_domain(sb, "decoy")


def test_a_libvirt_vm_evicted_soft_is_shut_down_then_destroyed_after_the_grace_period(lv_sandbox, config):
    """Soft threshold (grace 1 s, evictionMaxPodGracePeriod 3): `virsh shutdown` (ACPI), and —
    the test guest halts with interrupts off and never answers it — `virsh destroy` once the 3 s
    are over: the domain reads `shut off (destroyed)`, machined's record is gone."""
    sb = lv_sandbox
    name = "soft"
    dom = vm.libvirt_define_domain(sb, name)
    service = None
    try:
        (config / "vms" / "lv.yaml").write_text(vm_yaml("lv", f"  libvirt: {{domain: {name}}}\n"))
        service = watch_soft_threshold(sb, config)
        line = readline(service)
        assert line.startswith("evicted vm vm/lv: memory.available ") and "(soft), grace 3s" in line, line
        how = line[line.index(f"(libvirt domain {name}:"):]
        assert how.startswith(f"(libvirt domain {name}: virsh shutdown, destroy after 3s ("), line
        took = float(how.rsplit("(", 1)[1].split("s)")[0])
        print(f"{line}\nshutdown → destroyed: {took:.1f} s")
        assert took >= 3  # the grace period was given
        assert vm.domstate(sb, dom.uuid) == "shut off (destroyed)"
        assert dom.machine not in machines(sb)
    finally:
        if service is not None:
            stop(service)
        vm.libvirt_remove_domain(sb, dom.uuid)


def test_a_run_vm_vm_is_evicted_through_machined(lv_sandbox, config):
    """`sdqos run --vm` registered the guest with machined: a hard eviction goes through machined
    (TerminateMachine), QEMU ends, and `machinectl list` no longer shows it."""
    sb = lv_sandbox
    (config / "vms" / "vm1.yaml").write_text(vm_yaml("vm1", ""))
    p = sdqos_run_vm(sb, config, "vm1", timeout=30)
    try:
        assert vm.machine_info(sb, machine_name="vm1")["Service"] == "sdqos"
        cross_hard_threshold(sb, config)
        out, took = evict_once(sb, config)
        rec = out["evicted"]
        assert out["victim"] == "vm/vm1" and rec["stopped"] == ["machine-vm1.scope"], out
        print(f"{rec['how']}; `pressure --once --evict` took {took:.2f} s")
        assert len(rec["how"]) == 1 and rec["how"][0].startswith(
            "VM vm1 (machined, registered by sdqos): TerminateMachine ("), rec
        p.wait(timeout=20)
        assert " vm1 " not in f" {machines(sb)} "
        wait_for(lambda: active_state(sb, "machine-vm1.scope") in ("inactive", "failed", ""), "the VM's scope gone")
    finally:
        vm.stop_qemu(p)


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
def test_a_machined_vm_that_ignores_sigterm_is_killed_through_machined_when_the_grace_is_over(lv_sandbox, config, soft):
    """A guest that does not end on SIGTERM (a stand-in process that ignores it, registered with
    machined by `sdqos run --vm`): hard — TerminateMachine (systemd would wait 90 s), KillMachine
    SIGKILL after 1 s; soft — KillMachine SIGTERM, SIGKILL after the 3 s; machined's record gone."""
    sb = lv_sandbox
    (config / "vms" / "vm2.yaml").write_text(vm_yaml("vm2", ""))
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "--vm", "vm2", "--",
                       sys.executable, "-c", STUBBORN, "8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    service = None
    try:
        assert readline(p) == "ready", p.stderr.read() if p.poll() is not None else ""
        assert vm.machine_info(sb, machine_name="vm2")["Service"] == "sdqos"
        if soft:
            service = watch_soft_threshold(sb, config)
            line = readline(service)
            how = line[line.index("(VM vm2 "):]
            print(line)
            # TerminateMachine too, unless machined had dropped the machine by then (its scope ended)
            assert re.match(r"\(VM vm2 \(machined, registered by sdqos\): KillMachine SIGTERM, SIGKILL after 3s"
                            r"(, TerminateMachine)? \([0-9.]+s\)\)$", how), line
        else:
            cross_hard_threshold(sb, config)
            out, took = evict_once(sb, config)
            how = out["evicted"]["how"][0]
            print(f"{how}; `pressure --once --evict` took {took:.2f} s")
            assert how.startswith("VM vm2 (machined, registered by sdqos): TerminateMachine, KillMachine SIGKILL "
                                  "after 1s ("), how
        p.wait(timeout=20)
        assert p.returncode == -9  # it ignored SIGTERM: killed when the grace period was over
        assert " vm2 " not in f" {machines(sb)} "
    finally:
        if service is not None:
            stop(service)
        p.kill()
        p.wait()
