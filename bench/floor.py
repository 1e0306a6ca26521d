"""The bench's floor: the units a sync creates, made by a minimal loop on raw dbus-fast, strictly
sequentially (sync_bench.py's module doc). Also run inside the sandbox on its own, for the floor over
systemd's private socket (which refuses a peer in another PID namespace):

    python bench/floor.py ITEMS.pickle ADDRESS [--direct]     # prints the seconds
"""

from __future__ import annotations

import asyncio
import pickle
import sys
import time
from typing import Any

from sdqos.host.systemd import JOB_REMOVED_RULE, MANAGER, MANAGER_PATH, PROPERTY_SIGNATURES, SYSTEMD, _lib


async def floor(address: str, items: list[tuple[str, dict]], subscribe: bool = False, direct: bool = False) -> float:
    """Seconds to create ``items`` one at a time: call, reply, JobRemoved, next. Without
    ``subscribe`` as systemctl (and sdqos since it stopped subscribing) waits for a job: systemd
    sends JobRemoved to the job's requester anyway. ``subscribe``: the floor of every run before
    that, where a Subscribe made systemd also send UnitNew, JobNew and PropertiesChanged for each
    unit (~10 % more of its CPU a unit). ``direct``: ``address`` is systemd's private socket (no
    bus: no match rule to add; systemd sends every signal there unasked)."""
    from dbus_fast import BusType, Message, MessageType, Variant
    from dbus_fast.aio import MessageBus

    # (on systemd's private socket, authenticated as sdqos does it: host/systemd._private_bus)
    bus_type = _lib("dbus-fast").PrivateBus if direct else MessageBus
    bus = await asyncio.wait_for(bus_type(bus_address=address, bus_type=BusType.SYSTEM).connect(), 30)
    loop = asyncio.get_running_loop()
    early: dict[str, str] = {}
    waiting: dict[str, asyncio.Future] = {}

    def on_msg(msg: Message) -> None:
        if msg.message_type == MessageType.SIGNAL and msg.member == "JobRemoved":
            _id, job, _unit, result = msg.body
            fut = waiting.pop(job, None)
            if fut is not None:
                fut.set_result(result)
            else:
                early[job] = result

    bus.add_message_handler(on_msg)
    try:
        setup = [] if direct else [Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                           interface="org.freedesktop.DBus", member="AddMatch", signature="s",
                                           body=[JOB_REMOVED_RULE])]
        if subscribe:
            setup.append(Message(destination=SYSTEMD, path=MANAGER_PATH, interface=MANAGER, member="Subscribe"))
        for m in setup:
            r = await bus.call(m)
            if r.message_type == MessageType.ERROR:
                raise RuntimeError(f"{m.member}: {r.error_name} {r.body}")

        def variant(k: str, v: Any) -> Any:
            sig = PROPERTY_SIGNATURES[k]
            return [k, Variant(sig, list(v) if sig.startswith("a") else v)]

        msgs = [Message(destination=SYSTEMD, path=MANAGER_PATH, interface=MANAGER, member="StartTransientUnit",
                        signature="ssa(sv)a(sa(sv))", body=[name, "fail", [variant(k, v) for k, v in props.items()], []])
                for name, props in items]
        t0 = time.perf_counter()
        for m in msgs:
            r = await bus.call(m)
            if r.message_type == MessageType.ERROR:
                raise RuntimeError(f"StartTransientUnit {m.body[0]}: {r.error_name} {r.body}")
            job = r.body[0]
            result = early.pop(job, None)
            if result is None:
                fut = waiting[job] = loop.create_future()
                result = await asyncio.wait_for(fut, 60)
            if result != "done":
                raise RuntimeError(f"job for {m.body[0]}: {result}")
            early.clear()  # other clients' jobs: nobody claims them
        return time.perf_counter() - t0
    finally:
        bus.disconnect()


def main(argv: list[str]) -> int:
    with open(argv[0], "rb") as fh:
        items = pickle.load(fh)
    print(f"{asyncio.run(floor(argv[1], items, direct='--direct' in argv[2:])):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
