"""`sdqos run --vm` refuses a QEMU guest larger than its VM's limits.memory (before anything starts)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sdqos.reconcile.launch import qemu_guest_ram

MiB, GiB = 2**20, 2**30


@pytest.mark.parametrize("argv, ram", [
    (["qemu-system-x86_64", "-m", "64"], 64 * MiB),             # QEMU's unit is MiB
    (["/usr/bin/qemu-system-x86_64", "-m", "2G"], 2 * GiB),
    (["qemu-system-aarch64", "-m", "size=1536M,slots=2,maxmem=8G"], 1536 * MiB),  # maxmem is not boot RAM
    (["qemu-system-x86_64", "-m", "1g", "-m", "512"], 512 * MiB),  # the last one wins, suffixes any case
    (["qemu-system-x86_64", "-m", "1.5G"], int(1.5 * GiB)),
    (["qemu-system-x86_64", "-nographic"], None),              # QEMU's own default, not known here
    (["firecracker", "-m", "4G"], None),                       # not QEMU: its flags mean other things
    (["qemu-system-x86_64", "-m"], None),
])
def test_qemu_guest_ram_reads_qemus_m_option(argv, ram):
    assert qemu_guest_ram(argv) == ram


def sdqos_with_vm(tmp_path, name: str, extra_spec: str, *args: str) -> subprocess.CompletedProcess:
    """`sdqos ARGS` with a config holding one VM; no bus (these must fail before D-Bus)."""
    cfg = tmp_path / "cfg"
    (cfg / "vms").mkdir(parents=True)
    (cfg / "node.yaml").write_text('capacity: {cpu: "4", memory: 4Gi}\n')
    (cfg / "vms" / "v.yaml").write_text(
        f"apiVersion: sdqos.io/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\n"
        f"spec:\n  resources:\n    limits: {{cpu: \"1\", memory: 1Gi}}\n{extra_spec}")
    return subprocess.run([sys.executable, "-m", "sdqos", args[0], "--config", str(cfg), *args[1:]],
                          capture_output=True, text=True,
                          env={"SDQOS_RUN_DIR": str(tmp_path / "run"), "PATH": "/usr/bin:/bin",
                               "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp_path}/no-bus"})


def test_run_vm_refuses_a_guest_larger_than_its_limit(tmp_path):
    r = sdqos_with_vm(tmp_path, "v", "", "run", "--vm", "v", "--", "qemu-system-x86_64", "-m", "2G")
    assert r.returncode == 2
    assert r.stderr.strip() == ("sdqos: error: vm v: qemu -m asks for 2 GiB of guest RAM but limits.memory is 1 GiB: "
                                "the guest would be OOM-killed when it uses its RAM; raise limits.memory or lower -m "
                                "(or pass --force)")


@pytest.mark.parametrize("command", [["run", "--vm", "lv", "--", "qemu-system-x86_64"], ["adopt", "--vm", "lv", "1"]])
def test_run_and_adopt_refuse_a_vm_libvirt_runs(tmp_path, command):
    r = sdqos_with_vm(tmp_path, "lv", "  libvirt: {domain: lv}\n", *command, "--force")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("sdqos: error: VM lv is libvirt's (spec.libvirt.domain: lv): libvirt starts it and sdqos "
                                "tunes it in libvirt's scope; run --vm and adopt --vm are for VMs no manager runs")
