"""systemd's private socket (/run/systemd/private): as root with no bus named, sdqos talks to systemd
itself there, as systemctl does; a named bus, a socket that is not there, and a systemd that
refuses the peer (another PID namespace) each give the system bus. Against the sandbox's systemd,
from inside it (where the socket is its own) and from the host."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

from sdqos import sandbox as sbx
from sdqos.errors import ServiceNotRunning
from sdqos.host import machined
from sdqos.host.systemd import DBUS, DBUS_PATH, Systemd

_INSIDE = r'''
import asyncio, json, logging, os, sys
logging.basicConfig(level=logging.INFO)  # (why the private socket was not used, on stderr)
from sdqos.errors import ServiceNotRunning
from sdqos.host import machined
from sdqos.host.systemd import DBUS, DBUS_PATH, Systemd

kwargs = json.loads(sys.argv[1])
name = sys.argv[2]


async def main():
    out = {}
    async with Systemd(**kwargs) as sd:
        out["direct"] = sd.direct
        out["version"] = (await sd.version())[0]
        await sd.start_transient_unit(name, {"Description": "private socket test", "CPUShares": 123})
        await sd.set_unit_properties(name, {"CPUShares": 124})
        out["shares"] = (await sd.get_properties(name, "org.freedesktop.systemd1.Slice", ["CPUShares"]))["CPUShares"]
        (out["bus_id"],) = await sd.call_service(DBUS, DBUS_PATH, DBUS, "GetId")  # another service: over the bus
        try:
            await sd.call_service(machined.MACHINED, machined.PATH, machined.MANAGER, "ListMachines")
        except ServiceNotRunning:
            out["machined"] = "not running"
        await sd.stop_unit(name)
        out["calls"], out["disconnects"] = sd.stats.calls, sd.stats.disconnects
    print(json.dumps(out))

asyncio.run(main())
'''


def _inside(sb, tmp_path, **kwargs) -> dict:
    script = tmp_path / "private.py"
    script.write_text(_INSIDE)
    name = f"kubepods-priv{uuid.uuid4().hex[:12]}.slice"
    cp = sbx.run(sb, [sys.executable, str(script), json.dumps(kwargs), name], timeout=60)
    assert cp.returncode == 0, cp.stderr[-2000:]
    return {**json.loads(cp.stdout), "log": cp.stderr[-2000:]}


def test_as_root_with_no_bus_named_the_calls_go_to_systemd_itself(clean_sandbox, tmp_path):
    """Jobs are waited for (JobRemoved comes unasked there), values set and read, and a call to
    another service goes over the bus (systemd's socket has no dbus-daemon behind it)."""
    got = _inside(clean_sandbox, tmp_path)
    assert got["direct"] is True, got["log"]
    assert got["shares"] == 124 and got["version"] >= 240
    assert got["bus_id"] and got["machined"] == "not running"  # (the sandbox runs no machined)
    assert got["disconnects"] == 0


def test_a_named_bus_or_a_missing_socket_give_the_bus(clean_sandbox, tmp_path):
    """The same calls over the system bus: when an address is named (a sandbox's, a test's: the
    private socket would be this host's systemd), and when the socket is not there."""
    named = _inside(clean_sandbox, tmp_path, address="unix:path=/run/dbus/system_bus_socket")  # (--bus-address)
    missing = _inside(clean_sandbox, tmp_path, private="unix:path=/run/systemd/no-such-socket")
    for got in (named, missing):
        assert got["direct"] is False
        assert got["shares"] == 124 and got["bus_id"] and got["machined"] == "not running"


def test_systemd_refusing_a_peer_it_cannot_see_gives_the_bus(clean_sandbox):
    """From the host the sandbox's socket is there, but systemd cannot see a peer in another PID
    namespace and resets the connection ("unprivileged client"): the bus, and the calls work."""
    sb = clean_sandbox
    socket = sbx.state_dir(sb.name) / "run" / "systemd" / "private"
    assert socket.exists()

    async def main():
        async with Systemd(sb.bus_address, private=f"unix:path={socket}") as sd:
            assert sd.direct is False
            assert (await sd.version())[0] >= 240
            try:
                await sd.call_service(machined.MACHINED, machined.PATH, machined.MANAGER, "ListMachines")
            except ServiceNotRunning:
                pass
            return (await sd.call_service(DBUS, DBUS_PATH, DBUS, "GetId"))[0]
    assert asyncio.run(main())


_CONNECTS = r'''
import asyncio, json, os, subprocess, sys, time
from sdqos.host.systemd import Systemd


async def connect():
    t = time.monotonic()
    async with Systemd(call_timeout=3) as sd:
        return sd.direct, time.monotonic() - t, sd.backend

out = []
for backend in ("dbus-fast", "dbus-next"):
    os.environ["SDQOS_DBUS_BACKEND"] = backend
    for i in range(25):
        if i % 5 == 0:
            subprocess.run(["systemctl", "daemon-reload"], check=True)
        out.append(asyncio.run(connect()))
print(json.dumps(out))
'''


def test_the_private_socket_answers_every_connect(clean_sandbox, tmp_path):
    """systemd 252 sometimes leaves a private connection that sends ``BEGIN`` only once it has read
    the ``OK`` (as both D-Bus libraries authenticate) in its authentication phase for good: seen
    as 1 connect in 8 waiting out its timeout, and in a sandbox after a daemon-reload as every one.
    sdqos authenticates as sd-bus clients do, ``AUTH`` and ``BEGIN`` in one write: 50 connects
    (daemon-reloads between), each direct and at once, with either library."""
    script = tmp_path / "connects.py"
    script.write_text(_CONNECTS)
    cp = sbx.run(clean_sandbox, [sys.executable, str(script)], timeout=600)
    assert cp.returncode == 0, cp.stderr[-2000:]
    got = json.loads(cp.stdout)
    assert [(direct, backend) for direct, _, backend in got] == \
        [(True, "dbus-fast")] * 25 + [(True, "dbus-next")] * 25, cp.stderr[-2000:]
    assert max(took for _, took, _ in got) < 2, got


def test_a_private_socket_peer_that_never_answers_gives_the_bus_promptly(clean_sandbox, tmp_path):
    """A peer at the private address that accepts and never answers: the handshake gives up after
    PRIVATE_HANDSHAKE_TIMEOUT and the bus is used (it waited the whole call timeout, 25 s)."""
    import socket
    import threading
    import time

    sb = clean_sandbox
    path = tmp_path / "silent"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_say_nothing():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue
    t = threading.Thread(target=accept_and_say_nothing, daemon=True)
    t.start()

    async def main():
        start = time.monotonic()
        async with Systemd(sb.bus_address, private=f"unix:path={path}") as sd:
            took = time.monotonic() - start
            assert sd.direct is False
            assert (await sd.version())[0] >= 240
            return took
    try:
        took = asyncio.run(main())
    finally:
        stop.set()
        t.join(10)
        for c in accepted:
            c.close()
        server.close()
    assert accepted, "the client never connected to the silent peer"
    assert took < 12, took  # (the handshake's bound is 2 s; the call timeout it waited before, 25 s)
