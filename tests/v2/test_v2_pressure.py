"""Node-pressure eviction on a real cgroup v2 kernel: the signals from v2's files (the root has no
memory.current: anon + file − inactive_file), and a BestEffort hog evicted for a crossed hard
threshold (docs/eviction.md)."""

from __future__ import annotations

import json
import time

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
    g.check(f"(sdqos run --config {cfg} t/be app -- python3 -c \"{HOLD}\" >/dev/null 2>&1 &); "
            f"(sdqos run --config {cfg} t/guar app -- sleep 100000 >/dev/null 2>&1 &); sleep 1")
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


def test_v2_watching_loop_polls_and_evicts(v2guest):
    """On v2 the loop has no memcg notifications: it polls every --interval and evicts the hog."""
    g = v2guest
    cfg = config(g, "evictionHard: {memory.available: 100Mi}\n")
    g.check(f"sdqos sync --config {cfg}")
    g.check(f"(sdqos run --config {cfg} t/guar app -- sleep 100000 >/dev/null 2>&1 &); sleep 1")
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
