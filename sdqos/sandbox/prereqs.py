"""What a sandbox needs from the host (root, unshare, nsenter, systemd, dbus-daemon; for VMs
machined, libvirtd, qemu), each missing piece named with the Debian package that has it."""

from __future__ import annotations

import os
import shutil
import subprocess

from sdqos.errors import SandboxError
from sdqos.sandbox.cgroups import _host_hierarchies
from sdqos.sandbox.nsenter import _path
from sdqos.sandbox.state import _cgroup_mode
from sdqos.sandbox.units import CGROUP_ROOT, LIBVIRTD_BINARY, MACHINED_BINARIES, SYSTEMD_CANDIDATES

# --- prerequisites -------------------------------------------------------------------------------


def missing_prerequisites(*, machined: bool = False, libvirt: bool = False) -> list[str]:
    """Why a sandbox cannot be booted here (empty list: it can). Each entry is one short reason.
    `machined`/`libvirt`: also what those opt-in services need (`missing_vm_prerequisites`)."""
    out = []
    if os.geteuid() != 0:
        out.append(f"must run as root (euid {os.geteuid()})")
    out.extend(missing_vm_prerequisites(machined=machined, libvirt=libvirt))
    for tool, pkg in (("unshare", "util-linux"), ("nsenter", "util-linux"), ("mount", "mount"),
                      ("umount", "mount"), ("busctl", "systemd")):
        if shutil.which(tool, path=_path()) is None:
            out.append(f"{tool} not found (Debian package {pkg})")
    if _systemd_binary() is None:
        out.append(f"no systemd binary at {' or '.join(SYSTEMD_CANDIDATES)} (Debian package systemd)")
    if not os.access("/usr/bin/dbus-daemon", os.X_OK):
        out.append("/usr/bin/dbus-daemon not found (Debian package dbus)")
    elif not os.path.exists("/usr/share/dbus-1/system.conf"):
        out.append("/usr/share/dbus-1/system.conf not found (Debian package dbus)")
    if not os.path.isfile("/etc/machine-id"):
        out.append("/etc/machine-id missing (systemd would create it on the host; run systemd-machine-id-setup)")
    try:
        hs = _host_hierarchies()
    except SandboxError as e:
        out.append(str(e))
        return out
    if _cgroup_mode(hs) != "unified":
        if not any(h["type"] == "cgroup" and h["name"] == "systemd" for h in hs):
            out.append(f"no name=systemd cgroup v1 hierarchy under {CGROUP_ROOT}")
        version = _systemd_version()
        if version is not None and version >= 258:
            out.append(f"systemd {version} cannot boot on cgroup v1/hybrid (support removed in 258)")
    return out


def missing_vm_prerequisites(*, machined: bool = True, libvirt: bool = False) -> list[str]:
    """What the opt-in VM services lack here (empty list: nothing), one short reason each."""
    out = []
    if machined or libvirt:
        if not any(os.access(p, os.X_OK) for p in MACHINED_BINARIES):
            out.append(f"no systemd-machined at {' or '.join(MACHINED_BINARIES)} (Debian package systemd-container)")
        elif not os.path.exists("/usr/share/dbus-1/system.d/org.freedesktop.machine1.conf"):
            out.append("no D-Bus policy for org.freedesktop.machine1 (Debian package systemd-container)")
    if libvirt:
        if not os.access(LIBVIRTD_BINARY, os.X_OK):
            out.append(f"{LIBVIRTD_BINARY} not found (Debian package libvirt-daemon-system)")
        if shutil.which("virsh", path=_path()) is None:
            out.append("virsh not found (Debian package libvirt-clients)")
        if shutil.which("qemu-system-x86_64", path=_path()) is None:
            out.append("qemu-system-x86_64 not found (Debian package qemu-system-x86)")
    return out


def _systemd_version() -> int | None:
    binary = _systemd_binary()
    if binary is None:
        return None
    try:
        cp = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
        return int(cp.stdout.split()[1].split(".")[0].split("~")[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _systemd_binary() -> str | None:
    return next((p for p in SYSTEMD_CANDIDATES if os.access(p, os.X_OK)), None)
