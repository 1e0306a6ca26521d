"""The instance's own units and paths: its target, dbus, slices, and the opt-in machined and
libvirtd units with libvirt's qemu.conf. Texts and where they go; nothing here runs anything."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_NAME = "sdqos"
STATE_ROOT = Path(os.environ.get("SDQOS_SANDBOX_ROOT", "/run/sdqos-sandbox"))
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "sdqos-sandbox-"  # cgroup dir of instance NAME: sdqos-sandbox-NAME
TARGET = "sdqos-sandbox.target"
INNER_UNIT_DIR = "/run/sdqos/units"
# An empty dir as generator path: the host's generators (fstab, sysv, getty, postgresql ...) would
# run at every boot and daemon-reload (~120 ms of a ~175 ms boot here) for output that is not on
# the unit path anyway.
INNER_GENERATOR_DIR = "/run/sdqos/generators"
# systemd's own order, less the vendor dirs: the instance's /etc is private (copy-on-write, see
# _init), so `systemctl enable` and `sdqos install-units` work inside as on a host.
UNIT_PATH = ("/etc/systemd/system.control:/run/systemd/system.control:/run/systemd/transient:"
             f"/etc/systemd/system:/run/systemd/system:{INNER_UNIT_DIR}")
SYSTEMD_CANDIDATES = ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
BOOT_TIMEOUT = 30.0
DOWN_TIMEOUT = 15.0
CONSOLE_LOG_MAX = 4 << 20


# The instance's units. -.slice, system.slice and init.scope are built into systemd (perpetual).
UNITS: dict[str, str] = {
    TARGET: """\
[Unit]
Description=sdqos sandbox
Wants=dbus.socket dbus.service machine.slice systemd-journald.socket
""",
    # A journal of its own (volatile: in the instance's /run/log/journal), so `journalctl -u UNIT`
    # inside shows a service's output as on a host. Not the packaged units: their sandboxing and
    # the /dev/log socket (a symlink in the host's /dev) do not belong here; the kernel's log is
    # the host's and is not read (journald.conf below).
    "systemd-journald.socket": """\
[Unit]
Description=Journal Socket (sdqos sandbox)
DefaultDependencies=no

[Socket]
ListenStream=/run/systemd/journal/stdout
ListenDatagram=/run/systemd/journal/socket
SocketMode=0666
PassCredentials=yes
PassSecurity=yes
ReceiveBuffer=8M
Service=systemd-journald.service
""",
    "systemd-journald.service": """\
[Unit]
Description=Journal Service (sdqos sandbox)
DefaultDependencies=no
Requires=systemd-journald.socket
After=systemd-journald.socket

[Service]
Type=notify
Sockets=systemd-journald.socket
ExecStart={journald}
Restart=always
RestartSec=0
FileDescriptorStoreMax=4224
""",
    # systemd connects to the bus only while units with exactly these two names are active.
    "dbus.socket": """\
[Unit]
Description=D-Bus System Message Bus Socket (sdqos sandbox)
DefaultDependencies=no

[Socket]
ListenStream=/run/dbus/system_bus_socket
""",
    "dbus.service": """\
[Unit]
Description=D-Bus System Message Bus (sdqos sandbox)
DefaultDependencies=no
Requires=dbus.socket
After=dbus.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only
""",
    "machine.slice": """\
[Unit]
Description=Virtual Machine and Container Slice (sdqos sandbox)
""",
    # Services and timers with default dependencies Require= sysinit.target: without it
    # `systemd-run --unit=x cmd` or a test timer fails with result 'dependency'.
    "sysinit.target": """\
[Unit]
Description=System Initialization (sdqos sandbox: empty)
DefaultDependencies=no
""",
}

JOURNALD_BINARIES = ("/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald")
# podman inside: the instance shares the host's network namespace with /proc/sys read-only, and
# podman's default network (a bridge) and default sysctls (net.ipv4.ping_group_range) need
# /proc/sys/net writable. Its containers get no network of their own, as with `--network none`.
PODMAN_CONF = """\
# Written by sdqos sandbox: the instance's /proc/sys is the host's, read-only.
[containers]
netns = "none"
default_sysctls = []
"""


# In the instance's copy-on-write /etc: nothing on the host's disk, no kernel log, no audit.
JOURNALD_CONF = """\
[Journal]
Storage=volatile
ReadKMSG=no
ForwardToSyslog=no
ForwardToWall=no
RuntimeMaxUse=16M
"""


def unit_text(unit: str) -> str:
    """A unit of UNITS as written into the instance (journald's binary filled in)."""
    text = UNITS[unit]
    if unit == "systemd-journald.service":
        text = text.format(journald=next((p for p in JOURNALD_BINARIES if os.access(p, os.X_OK)), JOURNALD_BINARIES[0]))
    return text


# --- opt-in VM services: up(name, machined=True) / up(name, libvirt=True) -----------------------
#
# With them the instance runs VM workloads the way a host does: libvirtd starts a qemu domain,
# registers it with systemd-machined (CreateMachine), and machined has the instance's systemd create
# `machine-qemu\x2d<id>\x2d<name>.scope` in machine.slice. The units are minimal ones of our own:
# the packaged ones depend on units the instance does not have. machined's D-Bus policy and
# activation file are the host's (the instance's dbus-daemon reads /usr/share/dbus-1 like the
# host's would). The file system is the host's but for /run, so libvirtd gets private dirs (under
# the instance's /run/sdqos/libvirt) bound over every place it writes to outside /run, a
# qemu.conf of ours, and a network namespace of its own (its network driver must never touch the
# host's interfaces or iptables). Logs: machined's to the console log, libvirtd's to
# /run/sdqos/libvirt/libvirtd.log, each domain's qemu output to /run/sdqos/libvirt/log/qemu/.
MACHINED_BINARIES = ("/lib/systemd/systemd-machined", "/usr/lib/systemd/systemd-machined")
LIBVIRTD_BINARY = "/usr/sbin/libvirtd"
INNER_LIBVIRT_DIR = "/run/sdqos/libvirt"
# libvirtd's state outside /run, each bound to INNER_LIBVIRT_DIR/<key> (created at `up`)
_LIBVIRT_BINDS = {"etc-qemu": "/etc/libvirt/qemu", "lib": "/var/lib/libvirt", "log": "/var/log/libvirt",
                  "cache": "/var/cache/libvirt"}
MACHINED_UNIT = """\
[Unit]
Description=Virtual Machine and Container Registration Service (sdqos sandbox)
Requires=dbus.socket
Wants=machine.slice
After=dbus.socket machine.slice

[Service]
BusName=org.freedesktop.machine1
ExecStart={binary}
Environment=SYSTEMD_LOG_TARGET=console
StandardOutput=tty
StandardError=inherit
"""
LIBVIRTD_UNIT = f"""\
[Unit]
Description=Virtualization daemon (sdqos sandbox)
Requires=dbus.socket
Wants=systemd-machined.service
After=dbus.service systemd-machined.service

[Service]
Type=notify
ExecStart={LIBVIRTD_BINARY}
Environment=LIBVIRT_LOG_OUTPUTS=3:file:{INNER_LIBVIRT_DIR}/libvirtd.log
KillMode=process
PrivateNetwork=yes
BindReadOnlyPaths={INNER_LIBVIRT_DIR}/qemu.conf:/etc/libvirt/qemu.conf
BindPaths={' '.join(f'{INNER_LIBVIRT_DIR}/{k}:{v}' for k, v in _LIBVIRT_BINDS.items())}
"""
# qemu runs as root: as libvirt-qemu it could not open a root-only (udev-less) /dev/kvm, and libvirt
# would then find its capability cache "probed with KVM, KVM not available now" and re-probe qemu on
# every domain start (~10 s each). No relabelling or chown, no per-domain /dev (it would mknod and
# chown /dev/kvm), qemu's stdout/stderr to a plain file (no virtlogd needed).
LIBVIRT_QEMU_CONF = """\
# sdqos sandbox (see sdqos/sandbox.py)
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = [ ]
stdio_handler = "file"
"""


def _vm_services(machined: bool, libvirt: bool) -> list[str]:
    """The opt-in units `up` must start and check, in start order."""
    return (["systemd-machined.service"] if machined or libvirt else []) + (["libvirtd.service"] if libvirt else [])


def _write_vm_units(st: Mapping[str, Any], services: Sequence[str]) -> None:
    unit_dir, run_dir = Path(st["unit_dir"]), Path(st["run_dir"])
    if "systemd-machined.service" in services:
        binary = next(p for p in MACHINED_BINARIES if os.access(p, os.X_OK))
        (unit_dir / "systemd-machined.service").write_text(MACHINED_UNIT.format(binary=binary))
        # what dbus-daemon asks systemd to start for org.freedesktop.machine1 (bus activation)
        os.symlink("systemd-machined.service", unit_dir / "dbus-org.freedesktop.machine1.service")
    if "libvirtd.service" in services:
        (unit_dir / "libvirtd.service").write_text(LIBVIRTD_UNIT)
        lv = run_dir / INNER_LIBVIRT_DIR.removeprefix("/run/")
        for key in _LIBVIRT_BINDS:
            (lv / key).mkdir(parents=True)
        (lv / "qemu.conf").write_text(LIBVIRT_QEMU_CONF)
    if services:
        dropin = unit_dir / f"{TARGET}.d"
        dropin.mkdir()
        (dropin / "vm.conf").write_text(f"[Unit]\nWants={' '.join(services)}\n")
