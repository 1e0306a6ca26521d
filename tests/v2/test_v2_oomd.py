"""systemd-oomd (Debian 13's 257, as Fedora and Ubuntu run it) picks in kubelet's QoS order on the
units sdqos creates: a Guaranteed container that thrashes is not killed while a BestEffort one is
left. The control first shows oomd, left to its own order (reclaim rate), kills the thrasher."""

from __future__ import annotations

import json
import time

NODE = 'capacity: {cpu: "2", memory: 2Gi, pids: "100000"}\n'
PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: gold, namespace: t}
spec:
  containers:
  - name: app
    resources: {limits: {cpu: 500m, memory: 96Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: free, namespace: t}
spec:
  containers:
  - name: app
"""
CFG = "/root/oomd"
BIG = "/var/tmp/sdqos-oomd-big"
THRASH = f"sh -c 'while :; do cat {BIG} >/dev/null; done'"  # page cache through a 96 MiB limit: reclaim, stalls
HOLD = "python3 -c 'a = bytearray(30 << 20); import time; time.sleep(1e6)'"
# What an operator (or a distribution's default) turns on; 1 % for 2 s so the test is quick.
WATCH = ("systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=kill "
         "ManagedOOMMemoryPressureLimit=1% ManagedOOMMemoryPressureDurationSec=2s")
UNWATCH = "systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=auto"


def wait(cond, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(1)


def active(g, unit: str) -> bool:
    return g.run(f"systemctl is-active -q {unit}").rc == 0


def thrashing(g) -> bool:
    """kubepods.slice under memory pressure (full avg10 above oomd's 1 %): the thrasher is reclaiming."""
    line = g.check("grep full /sys/fs/cgroup/kubepods.slice/memory.pressure")
    return float(line.split()[1].split("=")[1]) > 2.0


def first_killed(g, units: dict[str, str]) -> str:
    """Watch with oomd until one of ``units`` (label → unit) is killed; its label."""
    g.check(WATCH)
    try:
        wait(lambda: not all(active(g, u) for u in units.values()), "systemd-oomd killed nothing")
    finally:
        g.check(UNWATCH)
    gone = [label for label, u in units.items() if not active(g, u)]
    assert len(gone) == 1, gone
    return gone[0]


def test_oomd_kills_besteffort_before_a_thrashing_guaranteed_container(v2oomd):
    g = v2oomd
    assert g.check("systemctl is-active systemd-oomd").strip() == "active"
    g.check(f"mkdir -p {CFG}/pods && cat > {CFG}/node.yaml <<'X'\n{NODE}X\ncat > {CFG}/pods/p.yaml <<'X'\n{PODS}X\n"
            f"sdqos sync --config {CFG} && dd if=/dev/urandom of={BIG} bs=1M count=300 status=none", timeout=300)
    plan = json.loads(g.check(f"sdqos plan --config {CFG} -o json"))
    scope = {p["name"]: p["containers"][0]["scope"] for p in plan["pods"]}
    create = {p["name"]: p["containers"][0]["create"] for p in plan["pods"]}
    assert create["gold"]["ManagedOOMPreference"] == "avoid" and create["free"]["ManagedOOMPreference"] == "none"

    def start_free() -> None:
        g.check(f"(sdqos run --config {CFG} t/free app -- {HOLD} >/dev/null 2>&1 &)")
        wait(lambda: active(g, scope["free"]), "the BestEffort container did not start")

    # Control: a thrasher in kubepods.slice that nobody gave a preference (a scope made by hand).
    start_free()
    g.check("sync; echo 3 > /proc/sys/vm/drop_caches; (systemd-run --scope --unit=sdqos-test-thrash.scope "
            f"--slice=kubepods.slice -p MemoryMax=96M {THRASH} >/dev/null 2>&1 &)")
    wait(lambda: thrashing(g), "no memory pressure from the thrasher")
    assert first_killed(g, {"thrasher": "sdqos-test-thrash.scope", "besteffort": scope["free"]}) == "thrasher"

    # sdqos's Guaranteed container thrashing the same way: oomd takes the BestEffort one instead.
    g.run("systemctl reset-failed")
    g.check("sync; echo 3 > /proc/sys/vm/drop_caches")
    g.check(f"(sdqos run --config {CFG} t/gold app -- {THRASH} >/dev/null 2>&1 &)")
    wait(lambda: active(g, scope["gold"]), "the Guaranteed container did not start")
    gold_slice = next(p["slice"] for p in plan["pods"] if p["name"] == "gold")
    gold_cgroup = f"/sys/fs/cgroup/kubepods.slice/{gold_slice}/{scope['gold']}"
    xattr = g.check(f"python3 -c \"import os; print(os.getxattr('{gold_cgroup}', 'user.oomd_avoid').decode())\"")
    assert xattr.strip() == "1"  # what oomd reads (oomd_fetch_cgroup_oom_preference)
    assert g.check(f"systemctl show -P ManagedOOMPreference {scope['gold']} {scope['free']}").split() == ["avoid", "none"]
    wait(lambda: thrashing(g), "no memory pressure from the Guaranteed container")
    assert first_killed(g, {"guaranteed": scope["gold"], "besteffort": scope["free"]}) == "besteffort"
    log = g.check("journalctl -u systemd-oomd --no-pager -o cat")
    assert "Killed /kubepods.slice/kubepods-besteffort.slice/" in log and scope["free"] in log
    g.run(f"systemctl stop {scope['gold']}; rm -f {BIG}")
