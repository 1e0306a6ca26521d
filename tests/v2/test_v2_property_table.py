"""The property table (sdqos/plan/properties.py) on a real cgroup v2 kernel: after a sync with
MemoryQoS, a 50 ms CFS period and running containers, every owned v2 property of every planned
slice and running container scope reads back from its kernel file through the table as systemd
holds it, and each row's D-Bus signature is systemd's (the v1 side: tests/reconcile/
test_property_table_sandbox.py)."""

from __future__ import annotations

import json
import shlex
import time

from sdqos.host import cgroupfs
from sdqos.host.systemd import unit_path
from sdqos.plan import properties as P

from .test_v2_guest import NODE, PODS, cgroup_dir, write_config

PAGE = 4096
MEMORY_QOS = NODE.replace("featureGates: {QOSReserved: true}",
                          "featureGates: {QOSReserved: true, MemoryQoS: true}\nmemoryReservationPolicy: TieredReservation")


def _typed(g, unit: str, names: list[str]) -> dict[str, tuple[str, int]]:
    iface = "org.freedesktop.systemd1." + unit.rsplit(".", 1)[1].capitalize()
    out = g.check(f"busctl get-property org.freedesktop.systemd1 {shlex.quote(unit_path(unit))} {iface} {' '.join(names)}")
    lines = out.splitlines()
    assert len(lines) == len(names), out
    return {n: (ln.split()[0], int(ln.split()[1])) for n, ln in zip(names, lines)}


def _held(g, d: str, files) -> dict[str, object]:
    out = g.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in files))
    return {f: cgroupfs._parse(f, v) for f, v in (ln.split("=", 1) for ln in out.splitlines())}


def _same(want: dict, held: dict) -> bool:
    def one(w, h) -> bool:
        if isinstance(w, tuple) and w[1] is cgroupfs.ANY_PERIOD:
            return isinstance(h, tuple) and h[0] == w[0]
        return h == w

    return set(want) == set(held) and all(one(w, held[f]) for f, w in want.items())


def test_every_owned_v2_property_reads_back_from_its_kernel_file_through_the_table(v2guest):
    g = v2guest
    assert "MemoryQoS: true" in MEMORY_QOS
    cfg = write_config(g, MEMORY_QOS, PODS)
    r = g.run(f"sdqos sync --config {cfg} -o json")
    assert r.rc == 0, r.stderr
    for pod, c in (("shop/db", "postgres"), ("shop/web", "nginx"), ("shop/batch", "job")):
        g.sdqos_run(f"--config {cfg} {pod} {c} -- sleep 100000")
    plan = json.loads(g.check(f"sdqos plan --config {cfg} -o json"))
    assert plan["cgroup"] == "v2"
    units = [(u["name"], cgroup_dir(u["name"]), u["properties"]) for u in plan["units"]
             if u["name"].endswith(".slice") and u["kind"] in ("node", "tier", "pod")]
    deadline = time.monotonic() + 60
    for p in plan["pods"]:
        for c in p["containers"]:
            d = f"{cgroup_dir(p['slice'])}/{c['scope']}"
            if c["name"] in ("postgres", "nginx", "job"):
                while g.run(f"test -d {d}").rc:
                    assert time.monotonic() < deadline, f"{c['scope']} did not start"
                    time.sleep(0.5)
                units.append((c["scope"], d, c["properties"]))
    names = list(P.owned("v2"))
    checked: set[str] = set()
    for unit, d, planned in units:
        present = [n for n in names if n in planned or n == P.PERIOD_PROPERTY]
        typed = _typed(g, unit, present)
        systemd = {n: v for n, (_, v) in typed.items()}
        for prop in present:
            row = P.BY_NAME[prop]
            assert typed[prop][0] == row.signature, (unit, prop, typed[prop])
            assert systemd[prop] == P.planned_value(planned, prop), (unit, prop)
            k = row.kernel["v2"]
            if k is None:  # (the period: in cpu.max, with the quota)
                continue
            held = _held(g, d, k.files)
            assert k.from_files(held) == systemd[prop], f"{unit}: {prop} reads back {held}, systemd holds {systemd[prop]}"
            assert _same(k.to_files(systemd[prop], systemd, PAGE), held), (unit, prop, held)
            checked.add(prop)
    # AllowedCPUs is planned under cpuManagerPolicy static only: test_v2_cpu_static.py checks it
    # (systemctl show, cpuset.cpus and its drift) in a guest with CPUs to hold
    assert checked == {n for n in names if P.BY_NAME[n].kernel["v2"] is not None} - {"AllowedCPUs"}
    assert any(v[2].get("MemoryMin") for v in units) and any(v[2].get("MemoryLow") for v in units)
    assert any(v[2].get("MemoryHigh", P.INFINITY) != P.INFINITY for v in units)
    g.run("pkill -f '[s]leep 100000'")
