"""The systemd units that run ``sdqos sync`` periodically (shipped rendered in ``units/``).

Transient units vanish at reboot; the timer brings the QoS tree back shortly after boot and then
re-applies it every 30 s, which also repairs drift. The path unit starts the same sync within
about a second when the config changes or a VM appears (libvirt writes its status file, machined
its machine file), so a libvirt VM is limited from its first second, without a daemon.

The service reads podman's settings from ``CONFIG/environment`` (systemd's EnvironmentFile format)
and is hardened only as far as every feature keeps working: docs/service.md says what it may do
and why (podman's rm must act in the host's mount and network namespaces).

``sdqos-pressure.service`` is the one daemon: ``sdqos pressure --evict`` must watch all the time to
act within a second of memory pressure (docs/eviction.md); it shares the sync service's sandbox.
"""

from __future__ import annotations

from sdqos.host.inputs import LIBVIRT_STATE, MACHINED_STATE  # what the path unit watches

SERVICE = "sdqos-sync.service"
TIMER = "sdqos-sync.timer"
PATH = "sdqos-sync.path"
PRESSURE = "sdqos-pressure.service"
DEFAULT_BINARY = "/usr/local/bin/sdqos"
DEFAULT_CONFIG = "/etc/sdqos"
ENVIRONMENT = "environment"  # in the config dir: the service's EnvironmentFile=
PODMAN_SETTINGS = ("SDQOS_PODMAN", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")

# The sandbox both services share (the reasons are in _SERVICE's comment and docs/service.md).
_HARDENING = """\
CapabilityBoundingSet=CAP_SYS_ADMIN CAP_SYS_RESOURCE CAP_KILL CAP_DAC_OVERRIDE CAP_FOWNER CAP_NET_ADMIN CAP_NET_RAW
NoNewPrivileges=yes
SystemCallFilter=@system-service @mount seccomp
SystemCallErrorNumber=EPERM
SystemCallArchitectures=native
RestrictNamespaces=~user pid uts mnt cgroup ipc
RestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6
IPAddressDeny=any
DevicePolicy=closed
ProtectClock=yes
ProtectHostname=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
MemoryDenyWriteExecute=yes
"""

_SERVICE = """\
[Unit]
Description=sdqos: apply kubelet's QoS tree (kubepods.slice, machine.slice) from {config}
Documentation=https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/
ConditionPathIsDirectory={config}
After=dbus.service
# Started by the timer and by the path unit on every change: never refuse a start (the default
# 5 starts in 10 s fails the path unit for good after a burst of edits or VMs starting).
StartLimitIntervalSec=0

[Service]
Type=oneshot
# podman's settings, as in the operator's shell (SDQOS_PODMAN, CONTAINERS_CONF, CONTAINERS_STORAGE_CONF)
EnvironmentFile=-{config}/{environment}
ExecStart={binary} sync --quiet --settle --config {config}{extra}
StandardOutput=journal
StandardError=journal
SyslogIdentifier=sdqos
TimeoutStartSec=10min
RuntimeDirectory=sdqos
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
# What the sync does: systemd over D-Bus; /proc/PID/oom_score_adj of the processes in its scopes
# (CAP_SYS_RESOURCE to lower it, CAP_DAC_OVERRIDE for processes of other users); podman ps, update
# and rm (rootful podman needs CAP_SYS_ADMIN; rm signals containers of any user (CAP_KILL), removes
# their files (CAP_DAC_OVERRIDE, CAP_FOWNER), unmounts (@mount) and tears their network down in the
# host's network namespace (netlink, CAP_NET_ADMIN, CAP_NET_RAW for iptables); podman update writes
# /var/tmp, crun the container's cgroup files). No private mount namespace (ProtectSystem=,
# PrivateTmp=, ...): podman rm in one races conmon's cleanup and fails or leaves the container's
# mounts behind in the host's. No IP traffic.
# The service never starts a container: it would inherit all of this. See docs/service.md.
{hardening}"""

# kubelet's eviction manager as a daemon: it must outlive the pressure it acts on, so the kernel's
# OOM killer never picks it first (-999, as kubelet's own score), systemd-oomd never picks it
# (ManagedOOMPreference=omit: where oomd watches -.slice, as Fedora's and Ubuntu's defaults do), and
# its own memory is bounded (it and the podman rm it runs; measured in
# tests/reconcile/test_pressure_service_sandbox.py).
_PRESSURE = """\
[Unit]
Description=sdqos: evict pods and VMs under node pressure as kubelet's eviction manager ({config})
Documentation=https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/
ConditionPathIsDirectory={config}
After=dbus.service

[Service]
Type=simple
Slice=system.slice
EnvironmentFile=-{config}/{environment}
ExecStart={binary} pressure --evict --config {config}
# Always back (5 s apart: never the default limit of 5 starts in 10 s).
Restart=always
RestartSec=5s
OOMScoreAdjust=-999
# Fast exactly when the node is short: its own pages stay resident (cgroup v2 memory.min) and it
# gets the CPU before what it is to stop.
MemoryMin=32M
CPUWeight=1000
ManagedOOMPreference=omit
MemoryHigh=96M
MemoryMax=160M
StandardOutput=journal
StandardError=journal
SyslogIdentifier=sdqos-pressure
RuntimeDirectory=sdqos
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
# The sync service's sandbox: it stops systemd units over D-Bus and removes podman containers with
# podman rm, which needs the same capabilities and the host's mount and network namespaces.
{hardening}
[Install]
WantedBy=multi-user.target
"""

_TIMER = """\
[Unit]
Description=Run sdqos sync at boot and every 30 seconds

[Timer]
OnBootSec=5s
OnUnitActiveSec=30s
AccuracySec=1s

[Install]
WantedBy=timers.target
"""


_PATH = """\
[Unit]
Description=Run sdqos sync when {config} changes or a VM starts or stops

[Path]
PathChanged={config}
PathChanged={config}/pods
PathChanged={config}/vms
PathChanged={libvirt}
PathChanged={machined}
Unit={service}

[Install]
WantedBy=paths.target
"""


def render(command: list[str] | None = None, config: str = DEFAULT_CONFIG,
           metrics_textfile: str | None = None) -> dict[str, str]:
    """File name → content. ``command`` is how to start sdqos (default /usr/local/bin/sdqos; e.g.
    ``[python, "-m", "sdqos"]``), ``metrics_textfile`` where each sync writes its metrics: absolute
    paths and plain words only, nothing systemd would expand."""
    command = command or [DEFAULT_BINARY]
    paths = [command[0], config] + ([metrics_textfile] if metrics_textfile is not None else [])
    for value in paths:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute path")
    for value in (*command, *paths):
        if not value or any(c.isspace() or c in "\"'\\;$`%" for c in value):
            raise ValueError(f"{value!r} must not contain spaces or special characters")
    extra = f" --metrics-textfile {metrics_textfile}" if metrics_textfile is not None else ""
    binary = " ".join(command)
    return {SERVICE: _SERVICE.format(binary=binary, config=config, extra=extra, environment=ENVIRONMENT,
                                     hardening=_HARDENING), TIMER: _TIMER,
            PATH: _PATH.format(config=config, libvirt=LIBVIRT_STATE, machined=MACHINED_STATE, service=SERVICE),
            PRESSURE: _PRESSURE.format(binary=binary, config=config, environment=ENVIRONMENT, hardening=_HARDENING)}


def default_command() -> list[str]:
    """How this sdqos was started, as an absolute command: the ``sdqos`` script next to the running
    interpreter (a venv or /usr/local), else ``<python> -m sdqos``."""
    import os
    import shutil
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "sdqos")
    if os.access(beside, os.X_OK):
        return [beside]
    found = shutil.which("sdqos")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "sdqos"]
