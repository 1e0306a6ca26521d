"""systemd-machined over D-Bus: the machines it knows, and registering a VM sdqos starts.

machined is where ``machinectl list/status/terminate`` look. A VM sdqos starts is registered
there (``CreateMachine``: machined creates the scope, with the limits passed as its properties, so
the VM is limited from its first instruction); sync asks ``ListMachines`` to name what runs in
machine.slice; eviction stops a machine through machined (``KillMachine``, ``TerminateMachine``),
so that its record goes with it. machined is never started by sdqos (NO_AUTOSTART): without it, these say so and
sdqos falls back to systemd alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from sdqos.errors import ServiceNotRunning, SystemdError
from sdqos.host.systemd import SystemdAPI
from sdqos.kube.naming import machine_scope

MACHINED = "org.freedesktop.machine1"
PATH = "/org/freedesktop/machine1"
MANAGER = MACHINED + ".Manager"
# What machined puts on every scope it creates itself: the caller must not send these twice.
MACHINED_SETS = frozenset({"Slice", "PIDs", "Delegate", "CollectMode", "AddRef"})
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # what machined takes as a machine name (a hostname)


def valid_name(name: str) -> bool:
    """Whether machined takes ``name`` as a machine's name."""
    return bool(_NAME.match(name))


@dataclass(frozen=True, slots=True)
class Machine:
    name: str
    cls: str  # vm | container
    service: str  # who registered it: libvirt-qemu, systemd-nspawn, sdqos …

    @property
    def scope(self) -> str:
        """The scope machined makes for a machine it creates (CreateMachine)."""
        return machine_scope(self.name)


def not_running(exc: SystemdError) -> bool:
    """machined is not on the bus (never started: sdqos does not start it)."""
    return isinstance(exc, ServiceNotRunning)


async def list_machines(sd: SystemdAPI) -> list[Machine] | None:
    """Every machine machined knows; None when machined does not run."""
    try:
        (rows,) = await sd.call_service(MACHINED, PATH, MANAGER, "ListMachines")
    except SystemdError as exc:
        if not_running(exc):
            return None
        raise
    return [Machine(name, cls, service) for name, cls, service, _path in rows]


async def create_machine(sd: SystemdAPI, name: str, leader: int, scope_properties: Mapping[str, Any],
                         service: str = "sdqos") -> None:
    """Register ``leader`` as VM ``name``; machined creates ``machine-<name>.scope`` in machine.slice
    around it with ``scope_properties`` (limits, Description) added to its own."""
    props = {k: v for k, v in scope_properties.items() if k not in MACHINED_SETS}
    await sd.call_service(MACHINED, PATH, MANAGER, "CreateMachine", "sayssusa(sv)",
                          [name, b"", service, "vm", leader, "", sd.variant_properties(props, machine_scope(name))])


NO_SUCH_MACHINE = "org.freedesktop.machine1.NoSuchMachine"


def _gone(exc: SystemdError) -> bool:
    """machined no longer knows the machine: it ended (machined drops it when its scope stops)."""
    return exc.name == NO_SUCH_MACHINE


async def terminate_machine(sd: SystemdAPI, name: str) -> bool:
    """``TerminateMachine``: machined stops the machine's scope (systemd's stop: SIGTERM to every
    process, SIGKILL after the scope's stop timeout) and drops its record. False when machined no
    longer knows the machine."""
    try:
        await sd.call_service(MACHINED, PATH, MANAGER, "TerminateMachine", "s", [name])
    except SystemdError as exc:
        if _gone(exc):
            return False
        raise
    return True


async def kill_machine(sd: SystemdAPI, name: str, signal: int, whom: str = "all") -> bool:
    """``KillMachine``: ``signal`` to the machine's processes (``all``, or its ``leader``). False when
    machined no longer knows the machine."""
    try:
        await sd.call_service(MACHINED, PATH, MANAGER, "KillMachine", "ssi", [name, whom, signal])
    except SystemdError as exc:
        if _gone(exc):
            return False
        raise
    return True
