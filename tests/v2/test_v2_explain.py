"""Issue 31's disagreement on a real cgroup v2 kernel with MemoryQoS: a guest no VM declares runs
in machine.slice; after a sync, every value `explain` prints for a pod's container and tiers is
what systemd holds (busctl) and the container's memory.high is the kernel's, and `plan` says it
counted the guest."""

from __future__ import annotations

import json
import time

from .test_v2_guest import cgroup_dir, write_config
from .suites import one_suite

MiB = 2**20
NODE = """\
capacity: {cpu: "2", memory: 1Gi, pids: "100000"}
featureGates: {MemoryQoS: true}
memoryReservationPolicy: TieredReservation
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: hold, namespace: t}
spec:
  containers:
  - name: app
    resources: {requests: {cpu: 100m, memory: 64Mi}}
"""
HOLD = "python3 -c \"import time; b = b'\\x01' * ({mib} << 20); time.sleep(100000)\""


def _wait(cond, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def held(g, unit: str, props: list[str]) -> dict[str, int]:
    """The unit's values as systemd holds them (busctl: exact numbers)."""
    iface = "org.freedesktop.systemd1." + ("Scope" if unit.endswith(".scope") else "Slice")
    path = "/org/freedesktop/systemd1/unit/" + "".join(
        c if c.isalnum() else f"_{ord(c):02x}" for c in unit)
    out = g.check(f"busctl get-property org.freedesktop.systemd1 {path} {iface} {' '.join(props)}")
    return {p: int(line.split()[1]) for p, line in zip(props, out.splitlines())}


@one_suite("bookworm")
def test_explain_shows_what_sync_set_with_a_guest_in_machine_slice(v2guest):
    g = v2guest
    cfg = write_config(g, NODE, POD)
    g.check(f"sdqos sync --config {cfg}")
    try:
        g.check("(systemd-run --scope --slice machine.slice --unit guest -p MemoryMax=400M "
                f"{HOLD.format(mib=200)} >/dev/null 2>&1 &)")
        _wait(lambda: int(g.run("cat /sys/fs/cgroup/machine.slice/guest.scope/memory.current").stdout or 0)
              >= 200 * MiB, "the guest holds 200 MiB")
        g.sdqos_run(f"--config {cfg} t/hold app -- {HOLD.format(mib=100)}")
        report = json.loads(g.check(f"sdqos sync --config {cfg} -o json"))
        assert report["errors"] == [], report
        doc = json.loads(g.check(f"sdqos explain t/hold --config {cfg} -o json"))
        assert [m["unit"] for m in doc["machines"]] == ["guest.scope"]
        pod = doc["pods"][0]
        c = pod["containers"][0]
        units = {**pod["tiers"], pod["slice"]: pod["properties"], c["scope"]: c["properties"]}
        for unit, values in units.items():
            assert {p: v["value"] for p, v in values.items()} == held(g, unit, list(values)), unit
            for p in ("MemoryMin", "MemoryLow", "MemoryHigh"):
                assert values[p]["why"], (unit, p)
        kubepods = pod["tiers"]["kubepods.slice"]["MemoryMax"]["value"]
        assert kubepods <= 2**30 - 200 * MiB  # the guest is counted, as sync counted it
        d = f"{cgroup_dir(pod['slice'])}/{c['scope']}"
        assert int(g.check(f"cat {d}/memory.high")) == c["properties"]["MemoryHigh"]["value"]
        assert "+ 1 unit(s) counted by the last sync" in g.check(f"sdqos plan --config {cfg}")
    finally:
        g.run("systemctl stop guest.scope; pkill -f '[t]ime.sleep(100000)'")
