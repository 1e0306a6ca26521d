"""The systemd units that run ``sdqos sync`` periodically (shipped rendered in ``units/``).

Transient units vanish at reboot; the timer brings the QoS tree back shortly after boot and then
re-applies it every 30 s, which also repairs drift and picks up config edits.
"""

from __future__ import annotations

SERVICE = "sdqos-sync.service"
TIMER = "sdqos-sync.timer"
DEFAULT_BINARY = "/usr/local/bin/sdqos"
DEFAULT_CONFIG = "/etc/sdqos"

_SERVICE = """\
[Unit]
Description=sdqos: apply kubelet's QoS tree (kubepods.slice, machine.slice) from {config}
Documentation=https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/
ConditionPathIsDirectory={config}
After=dbus.service

[Service]
Type=oneshot
ExecStart={binary} sync --config {config}{extra}
StandardOutput=journal
StandardError=journal
SyslogIdentifier=sdqos
TimeoutStartSec=10min
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


def render(binary: str = DEFAULT_BINARY, config: str = DEFAULT_CONFIG, extra_args: str = "") -> dict[str, str]:
    """File name → content, with the sdqos binary and config dir filled in."""
    for value in (binary, config):
        if not value.startswith("/") or any(c.isspace() or c in "\"'\\;$`%" for c in value):
            raise ValueError(f"{value!r} must be an absolute path without spaces or special characters")
    extra = f" {extra_args}" if extra_args else ""
    return {SERVICE: _SERVICE.format(binary=binary, config=config, extra=extra), TIMER: _TIMER}
