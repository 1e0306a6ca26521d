"""The least a sync that re-checks every unit must do, without sdqos: start the interpreter, import
the required stack, stat every config file (to notice an edit), list the units in one D-Bus call
and read each unit's kernel values (to notice drift). No parsing, no plan, no comparison.

It is the yardstick for a warm or one-change sync, as the raw StartTransientUnit loop is for a cold
one. Run by sync_bench.py where the syncs run (inside the sandbox), after a warm sync, so every
unit exists:

    python bench/recheck_floor.py CONFIG_DIR v1|v2

Prints {"units": U, "files": F, "values": V} and exits 0; exits 1 if a unit's cgroup is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import typer  # noqa: F401  (every sdqos command imports its CLI library)

try:
    from dbus_fast import BusType, Message
    from dbus_fast.aio import MessageBus
except ImportError:  # the other supported backend
    from dbus_next import BusType, Message
    from dbus_next.aio import MessageBus

ROOT = "/sys/fs/cgroup"
# what sdqos reads for a pod slice (sdqos.host.cgroupfs.expected with CPU, quota, memory and tasks set;
# listed here, not imported, for the same reason)
FILES = {
    "v1": ("cpu/cpu.shares", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us", "memory/memory.limit_in_bytes",
           "pids/pids.max"),
    "v2": ("cpu.weight", "cpu.max", "memory.max", "pids.max"),
}


def cgroup_path(slice_name: str) -> str:
    """a-b.slice -> a.slice/a-b.slice (systemd nests slices by their dashes). The rule of
    sdqos.host.cgroupfs.cgroup_of, written again on purpose: the floor imports nothing of sdqos."""
    parts = slice_name[: -len(".slice")].split("-")
    return "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def stat_config(config: str) -> int:
    n = 0
    for sub in ("pods", "vms"):
        d = os.path.join(config, sub)
        if os.path.isdir(d):
            for name in os.listdir(d):
                os.stat(os.path.join(d, name))
                n += 1
    os.stat(os.path.join(config, "node.yaml"))
    return n + 1


async def main(config: str, mode: str) -> int:
    files = stat_config(config)
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    reply = await bus.call(Message(destination="org.freedesktop.systemd1", path="/org/freedesktop/systemd1",
                                   interface="org.freedesktop.systemd1.Manager", member="ListUnitsByPatterns",
                                   signature="asas", body=[["active"], ["kubepods*.slice"]]))
    bus.disconnect()
    values = 0
    for row in reply.body[0]:
        rel = cgroup_path(row[0])
        for f in FILES[mode]:
            controller, _, name = f.rpartition("/")
            path = f"{ROOT}/{controller}/{rel}/{name}" if controller else f"{ROOT}/{rel}/{name}"
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                print(f"recheck_floor: {path} is missing", file=sys.stderr)
                return 1
            try:
                os.read(fd, 128)
            finally:
                os.close(fd)
            values += 1
    print(json.dumps({"units": len(reply.body[0]), "files": files, "values": values}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in FILES:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
