"""Node-pressure eviction on a real cgroup v2 kernel: the signals from v2's files (the root has no
memory.current: anon + file − inactive_file), and a BestEffort hog evicted for a crossed hard
threshold (docs/eviction.md)."""

from __future__ import annotations

import json
import time

from .suites import one_suite

Mi = 2**20
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
    {res}
"""
HOLD = "import time; b = b'\\\\x01' * (200 << 20); time.sleep(100000)"


def config(g, node: str) -> str:
    pods = POD.format(name="be", res="") + "---\n" + POD.format(
        name="guar", res="resources: {limits: {cpu: 100m, memory: 64Mi}}")
    g.check(f"rm -rf /root/pr && mkdir -p /root/pr/pods && cat > /root/pr/node.yaml <<'X'\n{node}X\n"
            f"cat > /root/pr/pods/t.yaml <<'X'\n{pods}X\n")
    return "/root/pr"


def pressure(g, cfg: str, *extra: str) -> dict:
    return json.loads(g.check(f"sdqos pressure --once --config {cfg} -o json {' '.join(extra)}"))


def test_v2_signals_and_an_eviction(v2guest):
    g = v2guest
    cfg = config(g, "evictionHard: {memory.available: 100Mi}\n")
    g.check(f"sdqos sync --config {cfg}")
    for pid in [g.spawn_run(f"--config {cfg} t/be app -- python3 -c \"{HOLD}\""),
                g.spawn_run(f"--config {cfg} t/guar app -- sleep 100000")]:
        g.wait_running(pid)
    deadline = time.monotonic() + 60
    while True:
        out = pressure(g, cfg)
        ranked = {r["name"]: r for r in out["ranking"]}
        if "t/be" in ranked and ranked["t/be"]["memoryUsage"] >= 200 * Mi or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert ranked["t/be"]["memoryUsage"] >= 200 * Mi and [r["name"] for r in out["ranking"]] == ["t/be", "t/guar"]
    mem = out["signals"][0]
    # the kernel's own numbers for the node, read in the guest right after
    stat = dict(line.split() for line in g.check("cat /sys/fs/cgroup/memory.stat").splitlines())
    total = int(g.check("awk '/MemTotal/ {print $2}' /proc/meminfo")) * 1024
    ws = int(stat["anon"]) + int(stat["file"]) - int(stat["inactive_file"])
    assert mem["capacity"] == total and abs(mem["available"] - (total - ws)) < 32 * Mi, (mem, total, ws)
    assert out["conditions"]["MemoryPressure"] is False

    g.check(f"sed -i 's/100Mi/{(mem['available'] + 100 * Mi) // Mi}Mi/' {cfg}/node.yaml")
    out = pressure(g, cfg, "--evict")
    assert out["conditions"]["MemoryPressure"] is True and out["evicted"]["name"] == "t/be", out
    time.sleep(2)
    assert g.run("pgrep -f '[t]ime.sleep.100000'").rc != 0  # the hog is gone
    assert g.run("pgrep -f '[s]leep 100000'").rc == 0  # the Guaranteed pod's sleep is not
    status = json.loads(g.check(f"sdqos status --config {cfg} -o json --interval 0"))
    assert {(u["kind"], u["pod"]) for u in status["units"] if "evicted" in u["flags"]} == {("pod", "be"),
                                                                                          ("container", "be")}


@one_suite("trixie")
def test_v2_watching_loop_polls_and_evicts(v2guest):
    """On v2 the loop has no memcg notifications: it polls every --interval and evicts the hog."""
    g = v2guest
    cfg = config(g, "evictionHard: {memory.available: 100Mi}\n")
    g.check(f"sdqos sync --config {cfg}")
    g.sdqos_run(f"--config {cfg} t/guar app -- sleep 100000")
    available = pressure(g, cfg)["signals"][0]["available"]
    g.check(f"sed -i 's/100Mi/{(available - 100 * Mi) // Mi}Mi/' {cfg}/node.yaml")
    g.check(f"(sh -c 'echo $$ > /run/pressure-loop.pid; exec sdqos pressure --evict --interval 1 --config {cfg}' "
            "> /root/loop.log 2>&1 &); sleep 2")
    try:
        g.check(f"(sdqos run --config {cfg} t/be app -- python3 -c \"{HOLD}\" >/dev/null 2>&1 &)")
        deadline = time.monotonic() + 120
        while "evicted pod t/be" not in (log := g.check("cat /root/loop.log")):
            assert time.monotonic() < deadline, log
            time.sleep(1)
        lines = log.splitlines()
        assert lines[0] == "watching node pressure every 1s, evicting" and lines[1] == "node conditions: none", lines
        assert any(x.startswith("node conditions: MemoryPressure (memory.available ") for x in lines), lines
        time.sleep(2)
        assert g.run("pgrep -f '[t]ime.sleep.100000'").rc != 0
        assert g.run("pgrep -f '[s]leep 100000'").rc == 0
    finally:
        g.run("kill $(cat /run/pressure-loop.pid)")


# --- issue 32's proof on a real kernel: a mixed node, a real hog, the installed service -------------

MIXED = """\
apiVersion: v1
kind: Pod
metadata: {name: guar, namespace: mx}
spec:
  containers:
  - {name: app, resources: {limits: {cpu: 100m, memory: 128Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: under, namespace: mx}
spec:
  containers:
  - {name: app, resources: {requests: {memory: 256Mi}, limits: {memory: 512Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: over, namespace: mx}
spec:
  containers:
  - {name: app, resources: {requests: {memory: 32Mi}, limits: {memory: 512Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: be, namespace: mx}
spec:
  containers:
  - {name: app}
"""
VM = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: vm1}
spec:
  resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: "1", memory: 512Mi}}
  overhead: {cpu: 100m, memory: 16Mi}
  priority: -1
  eviction: Allowed
"""
# each workload holds MiB under its own marker (argv[2]), so pgrep tells which still runs
HOLDS = "import sys, time; b = b'\\\\x01' * (int(sys.argv[1]) << 20); time.sleep(100000)"
WORKLOADS = {"mx/guar": 40, "mx/under": 40, "mx/over": 200, "mx/be": 300, "vm/vm1": 150}
# A process no pod holds (a leaking system daemon: not sdqos's) that grows in 8 MiB steps to argv[1]
# MiB, then stays; it writes /run/hog.done when it got there.
HOG = ("import sys, time; n = int(sys.argv[1]); c = []\n"
       "while len(c) * 8 < n:\n    c.append(b'\\x01' * (8 << 20)); time.sleep(0.02)\n"
       "open('/run/hog.done', 'w').write('x'); time.sleep(100000)")
# The guest's side of the measurement: every 50 ms, memory.available as sdqos computes it (MemTotal −
# the root's anon + file − inactive_file), the first time it is below the threshold (argv[1], bytes),
# the time the first evicted workload's cgroup (argv[2]) has no process left, and the largest gap
# between two of its 50 ms sleeps (a node that stalls shows here). Until /run/hog.done + 20 s.
MONITOR = r"""
import json, os, sys, time
T, first = int(sys.argv[1]), sys.argv[2]
total = int(open('/proc/meminfo').read().split()[1]) * 1024
def available():
    st = dict(l.split() for l in open('/sys/fs/cgroup/memory.stat'))
    return total - (int(st['anon']) + int(st['file']) - int(st['inactive_file']))
def alive(cg):
    try:
        return bool(open(cg + '/cgroup.procs').read().strip())
    except OSError:
        return False
crossed = stopped = done = None
gap, low, last = 0.0, None, time.monotonic()
start = last
while True:
    time.sleep(0.05)
    now = time.monotonic()
    gap, last = max(gap, now - last), now
    a = available()
    low = a if low is None else min(low, a)
    if crossed is None and a < T:
        crossed = now
    if crossed is not None and stopped is None and not alive(first):
        stopped = now
    if done is None and os.path.exists('/run/hog.done'):
        done = now
    if done is not None and now - done > 20 or now - start > 600:
        break
json.dump({'crossed': crossed, 'stopped': stopped, 'gap': gap, 'low': low}, open('/run/monitor.json', 'w'))
"""


def _ranking(g, cfg: str) -> dict:
    return {r["name"]: r for r in pressure(g, cfg)["ranking"]}


def _counters(g) -> dict:
    """The kernel's OOM counters: global (vmstat oom_kill), every top slice's memory.events
    oom/oom_kill, and the kernel log's oom-kill lines."""
    out = {"vmstat": int(g.check("awk '/^oom_kill / {print $2}' /proc/vmstat"))}
    for s in ("kubepods.slice", "machine.slice", "system.slice"):
        ev = dict(line.split() for line in g.run(f"cat /sys/fs/cgroup/{s}/memory.events").stdout.splitlines())
        out[s] = (int(ev.get("oom", 0)), int(ev.get("oom_kill", 0)))
    out["dmesg"] = int(g.run("dmesg | grep -c 'oom-kill:'").stdout.strip() or 0)
    return out


@one_suite("bookworm")
def test_v2_mixed_node_a_real_hog_and_the_installed_service(v2guest):
    """Guaranteed, Burstable under and over requests, BestEffort and a VM allowed to be evicted (a
    stand-in process in its machine-vm1.scope: qemu under TCG in this guest would take minutes), and a
    process in system.slice that sdqos does not own growing until the node is short by ~330 MiB (a
    real hog: with nothing evicted, less than nothing would be left). The installed
    sdqos-pressure.service alone evicts in kubelet's order — the VM (priority -1), then BestEffort —
    and no more, the Guaranteed pod, the others and every unit not sdqos's keep running, the kernel's
    OOM killer never acts, and the node never stalls for a second. Reaction time printed."""
    g = v2guest
    g.check("rm -rf /root/mx && mkdir -p /root/mx/pods /root/mx/vms && "
            f"cat > /root/mx/pods/mx.yaml <<'X'\n{MIXED}X\ncat > /root/mx/vms/vm1.yaml <<'X'\n{VM}X\n"
            "echo 'evictionHard: {memory.available: 300Mi}' > /root/mx/node.yaml; rm -f /run/hog.done /run/monitor.json")
    cfg = "/root/mx"
    g.check(f"sdqos sync --config {cfg}")
    try:
        for name, mib in WORKLOADS.items():  # one after the other: each `sdqos run` takes seconds under TCG
            who = f"--vm {name[3:]} --force" if name.startswith("vm/") else f"{name} app"
            log = f"/root/mx/{name.replace('/', '-')}.log"
            g.check(f"(sdqos run --config {cfg} {who} -- python3 -c \"{HOLDS}\" {mib} {name} >{log} 2>&1 &)")
            deadline = time.monotonic() + 120
            while g.run(f"pgrep -f '^python3 -c .* {name}$'").rc != 0:
                assert time.monotonic() < deadline, g.run(f"cat {log}").stdout
                time.sleep(1)
        deadline = time.monotonic() + 300
        while True:
            ranked = _ranking(g, cfg)
            if len(ranked) == len(WORKLOADS) and all(r["memoryUsage"] >= WORKLOADS[n] * Mi for n, r in ranked.items()):
                break
            assert time.monotonic() < deadline, ranked
            time.sleep(2)
        # kubelet's order: over their request first (vm1 by priority -1, then by usage above request)
        assert list(ranked) == ["vm/vm1", "mx/be", "mx/over", "mx/guar", "mx/under"], list(ranked)
        out = g.check(f"sdqos install-units --config {cfg} --now")
        assert "sdqos-pressure.service" in out
        g.check("systemctl stop sdqos-sync.timer sdqos-sync.path")  # no sync's memory in the figures
        deadline = time.monotonic() + 120
        while "node conditions: none" not in g.run("journalctl -o cat _SYSTEMD_INVOCATION_ID=$(systemctl show -P "
                                                   "InvocationID sdqos-pressure)").stdout:
            assert time.monotonic() < deadline, g.run("journalctl -b -o cat -u sdqos-pressure").stdout
            time.sleep(1)
        time.sleep(3)
        before = _counters(g)
        units = set(g.check("systemctl list-units --no-legend --plain --state=active | awk '{print $1}'").split())
        a0 = pressure(g, cfg)["signals"][0]["available"]
        threshold = 300 * Mi
        hog = (a0 - threshold + 330 * Mi) // Mi  # the node short by 330 MiB: vm1 (~160) is not enough, be (~310) is
        g.check("systemd-run -q --unit=sdqos-test-monitor -p CPUWeight=1000 python3 -c "
                f"{sh_quote(MONITOR)} {threshold} /sys/fs/cgroup/machine.slice/machine-vm1.scope")
        g.check(f"systemd-run -q --unit=sdqos-test-hog python3 -c {sh_quote(HOG)} {hog}")
        deadline = time.monotonic() + 900
        while g.run("test -e /run/monitor.json").rc != 0:
            assert time.monotonic() < deadline, g.run("journalctl -b -o cat -u sdqos-pressure").stdout
            time.sleep(3)
        m = json.loads(g.check("cat /run/monitor.json"))
        # this instance's lines only (an earlier test may have run the service in this guest)
        invocation = g.check("systemctl show -P InvocationID sdqos-pressure").strip()
        said = g.check(f"journalctl -o cat _SYSTEMD_INVOCATION_ID={invocation}").splitlines()
        evicted = [ln.split(":")[0] for ln in said if ln.startswith("evicted ")]
        reaction = m["stopped"] - m["crossed"] if m["crossed"] and m["stopped"] else None
        print(f"\nv2 {g.suite}: hog {hog} MiB, available before {a0 / Mi:.0f} MiB, lowest {m['low'] / Mi:.0f} MiB, "
              f"threshold 300 MiB; evicted {evicted}; threshold crossed → vm1 stopped "
              f"{reaction if reaction is None else round(reaction, 2)} s; largest gap of a 50 ms probe loop "
              f"{m['gap']:.2f} s")
        assert evicted == ["evicted vm vm/vm1", "evicted pod mx/be"], said
        for name in ("mx/guar", "mx/under", "mx/over"):
            assert g.run(f"pgrep -f '^python3 -c .* {name}$'").rc == 0, name
        for name in ("vm/vm1", "mx/be"):
            assert g.run(f"pgrep -f '^python3 -c .* {name}$'").rc != 0, name
        assert g.check("systemctl is-active sdqos-test-hog.service").strip() == "active"  # not sdqos's
        left = set(g.check("systemctl list-units --no-legend --plain --state=active | awk '{print $1}'").split())
        gone = {u for u in units - left if not u.startswith(("sdqos-pod", "machine-vm1"))}
        assert not gone, gone  # every unit sdqos does not own survives
        assert _counters(g) == before  # the kernel's OOM killer never acted
        assert reaction is not None and m["gap"] < 1.0, m
    finally:
        g.run("systemctl stop sdqos-test-hog sdqos-test-monitor; systemctl disable --now sdqos-sync.timer "
              "sdqos-sync.path sdqos-pressure.service; rm -f /etc/systemd/system/sdqos-* /run/hog.done; "
              "systemctl daemon-reload; systemctl reset-failed; pkill -f '[t]ime.sleep.100000'")


def sh_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


PSI = r"""
import subprocess, time
from pathlib import Path
from sdqos.host import pressure as hp
cg = Path('/sys/fs/cgroup/psitest'); cg.mkdir(exist_ok=True)
(cg / 'memory.high').write_text(str(32 << 20))
local, node = hp.PsiTrigger(cg / 'memory.pressure'), hp.PsiTrigger()
print('armed', local.stall_us, local.window_us, node.stall_us, node.window_us)
print('quiet', len(hp.wait([local, node], 2.0)))
p = subprocess.Popen(['sh', '-c', f"echo $$ > {cg}/cgroup.procs; exec python3 -c 'b = bytearray(100 << 20)'"])
fired, deadline = set(), time.monotonic() + 60
while len(fired) < 2 and time.monotonic() < deadline:
    fired |= {str(t.path) for t in hp.wait([local, node], 1.0)}
print('fired', ' '.join(sorted(fired)))
p.kill(); p.wait(); time.sleep(1); cg.rmdir()
"""


def test_v2_psi_triggers_register_and_fire(v2guest):
    """PSI triggers on a real kernel: one on a cgroup's memory.pressure and one on
    /proc/pressure/memory (what the watching loop arms) are quiet on an idle node, and both fire when
    a process stalls on memory (over its cgroup's memory.high, the kernel throttles it: a memory stall)."""
    g = v2guest
    out = g.check(f"python3 -c {sh_quote(PSI)}", timeout=200).splitlines()
    assert out[0] == "armed 50000 500000 50000 500000", out  # root: the 500 ms window is taken
    assert out[1] == "quiet 0", out
    assert out[2] == "fired /proc/pressure/memory /sys/fs/cgroup/psitest/memory.pressure", out


BOMB = ("import os, sys, time; n = int(sys.argv[1])\n"
        "for _ in range(n):\n    if os.fork() == 0:\n        time.sleep(100000); os._exit(0)\n"
        "time.sleep(100000)")


@one_suite("bookworm")
def test_v2_pid_pressure_a_bounded_fork_bomb_is_evicted(v2guest):
    """A bounded fork bomb (400 processes) in a BestEffort pod: pid.available (node.yaml's
    capacity.pids − the tasks that exist) falls below the hard threshold; the watching loop (its
    interval 10 s, the 0.5 s look at the signals wakes it) evicts that pod, every process of it is gone,
    the Guaranteed pod runs on."""
    g = v2guest
    cfg = config(g, "evictionHard: {memory.available: 100Mi}\n")
    g.check(f"sdqos sync --config {cfg}")
    g.sdqos_run(f"--config {cfg} t/guar app -- sleep 100000")
    pid = pressure(g, cfg)["signals"][2]
    tasks = pid["capacity"] - pid["available"]
    g.check(f"printf 'capacity: {{pids: \"{tasks + 600}\"}}\\nevictionHard: {{memory.available: 100Mi, "
            f"pid.available: \"300\"}}\\n' > {cfg}/node.yaml")
    assert pressure(g, cfg)["conditions"]["PIDPressure"] is False
    g.check(f"systemd-run -q --unit=sdqos-test-loop -p StandardOutput=file:/root/pidloop.log "
            f"sdqos pressure --evict --interval 10 --config {cfg}")
    try:
        deadline = time.monotonic() + 120
        while "node conditions: none" not in g.run("cat /root/pidloop.log").stdout:
            assert time.monotonic() < deadline, g.run("cat /root/pidloop.log; journalctl -u sdqos-test-loop").stdout
            time.sleep(1)
        g.check(f"(sdqos run --config {cfg} t/be app -- python3 -c {sh_quote(BOMB)} 400 >/dev/null 2>&1 &)")
        deadline = time.monotonic() + 300
        while "evicted pod t/be: pid.available" not in (log := g.check("cat /root/pidloop.log")):
            assert time.monotonic() < deadline, log
            time.sleep(1)
        assert "node conditions: PIDPressure (pid.available " in log, log
        deadline = time.monotonic() + 60
        while g.run("pgrep -f '^python3 -c import os, sys'").rc == 0:  # every process of the bomb
            assert time.monotonic() < deadline
            time.sleep(1)
        assert g.run("pgrep -f '^sleep 100000'").rc == 0, g.run(  # the Guaranteed pod
            "cat /root/pidloop.log; journalctl -b -n 100 --no-pager").stdout
        print(f"\nv2 {g.suite}: {log}")
    finally:
        g.run("systemctl stop sdqos-test-loop; systemctl reset-failed; pkill -f '^python3 -c import os, sys'")
