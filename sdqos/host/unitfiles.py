"""The systemd units that run ``sdqos sync`` periodically (shipped rendered in ``units/``).

Transient units vanish at reboot; the timer brings the QoS tree back shortly after boot and then
re-applies it every 30 s, which also repairs drift. The path unit starts the same sync within
about a second when the config changes or a VM appears (libvirt writes its status file, machined
its machine file), so a libvirt VM is limited from its first second, without a daemon.
"""

from __future__ import annotations

from sdqos.host.inputs import LIBVIRT_STATE, MACHINED_STATE  # what the path unit watches

SERVICE = "sdqos-sync.service"
TIMER = "sdqos-sync.timer"
PATH = "sdqos-sync.path"
DEFAULT_BINARY = "/usr/local/bin/sdqos"
DEFAULT_CONFIG = "/etc/sdqos"

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
ExecStart={binary} sync --quiet --settle --config {config}{extra}
StandardOutput=journal
StandardError=journal
SyslogIdentifier=sdqos
TimeoutStartSec=10min
# sdqos reads its config, /proc and /sys, talks to systemd over D-Bus and writes only /run/sdqos
# (and oom_score_adj of the processes in its scopes). Add ReadWritePaths= in a drop-in for a
# --metrics-textfile directory.
RuntimeDirectory=sdqos
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
ProtectSystem=strict
ProtectHome=read-only
PrivateNetwork=yes
NoNewPrivileges=yes
RestrictAddressFamilies=AF_UNIX
RestrictNamespaces=yes
LockPersonality=yes
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


def render(command: list[str] | None = None, config: str = DEFAULT_CONFIG, extra_args: str = "") -> dict[str, str]:
    """File name → content. ``command`` is how to start sdqos (default /usr/local/bin/sdqos; e.g.
    ``[python, "-m", "sdqos"]``): absolute paths and plain words only, nothing systemd would expand."""
    command = command or [DEFAULT_BINARY]
    for value in (command[0], config):
        if not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute path")
    for value in (*command, config):
        if not value or any(c.isspace() or c in "\"'\\;$`%" for c in value):
            raise ValueError(f"{value!r} must not contain spaces or special characters")
    extra = f" {extra_args}" if extra_args else ""
    return {SERVICE: _SERVICE.format(binary=" ".join(command), config=config, extra=extra), TIMER: _TIMER,
            PATH: _PATH.format(config=config, libvirt=LIBVIRT_STATE, machined=MACHINED_STATE, service=SERVICE)}


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
