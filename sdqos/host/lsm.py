"""What the host's Linux security modules offer podman's containers: whether AppArmor is enabled,
and where Localhost seccomp profiles live (kubelet's ``<root-dir>/seccomp``, or
``SDQOS_SECCOMP_ROOT``). Read once per ``sdqos podman start``."""

from __future__ import annotations

import os

from sdqos.errors import InvalidInput
from sdqos.kube.security import DEFAULT_SECCOMP_ROOT, HostSecurity

APPARMOR_ENABLED = "/sys/module/apparmor/parameters/enabled"


def apparmor_enabled() -> bool:
    try:
        with open(APPARMOR_ENABLED) as f:
            return f.read().strip() == "Y"
    except OSError:
        return False


def host_security() -> HostSecurity:
    root = os.environ.get("SDQOS_SECCOMP_ROOT") or DEFAULT_SECCOMP_ROOT
    if not root.startswith("/") or not root.isprintable():
        raise InvalidInput(f"{root!r} must be an absolute path", where="SDQOS_SECCOMP_ROOT")
    return HostSecurity(apparmor=apparmor_enabled(), seccomp_root=root)
