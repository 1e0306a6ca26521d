"""D-Bus errors arrive as their own classes (sdqos.errors), so callers match them by type, never by
name or message: against the sandbox's real bus."""

from __future__ import annotations

import asyncio

import pytest

from sdqos import sandbox as sbx
from sdqos.errors import BusDisconnected, NoSuchUnit, ServiceNotRunning
from sdqos.host import machined
from sdqos.host.systemd import Systemd


def test_a_service_not_on_the_bus_and_a_missing_unit_have_their_classes(clean_sandbox):
    sb = clean_sandbox
    assert sbx.run(sb, ["systemctl", "is-active", "systemd-machined.service"]).stdout.strip() != "active"

    async def main():
        async with Systemd(sb.bus_address) as sd:
            with pytest.raises(ServiceNotRunning) as e:  # sdqos never starts machined (NO_AUTOSTART)
                await sd.call_service(machined.MACHINED, machined.PATH, machined.MANAGER, "ListMachines")
            assert isinstance(e.value, BusDisconnected)  # for systemd itself: gone, retried
            assert await machined.list_machines(sd) is None
            with pytest.raises(NoSuchUnit):
                await sd.stop_unit("sdqos-podnone-c.scope")
    asyncio.run(main())
