"""Issue 30 on a real cgroup v2 kernel, where squeezing kubepods.slice below its pods' usage does
not fail (as v1's EBUSY does) but OOM-kills them: what runs in machine.slice never does that, and a
container's MemoryQoS memory.high does not move with it (kubelet computes it from node allocatable)."""

from __future__ import annotations

import json
import time

from .test_v2_guest import PAGE, cgroup_dir, write_config
from .suites import one_suite

MiB, GiB = 2**20, 2**30
NODE = """\
capacity: {cpu: "2", memory: 1Gi, pids: "100000"}
featureGates: {MemoryQoS: true}
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


@one_suite("trixie")
def test_machine_slice_never_oom_kills_running_pods_nor_moves_their_memory_high(v2guest):
    g = v2guest
    cfg = write_config(g, NODE, POD)
    g.check(f"sdqos sync --config {cfg}")
    plan = json.loads(g.check(f"sdqos plan --config {cfg} -o json"))
    pod = plan["pods"][0]
    scope = pod["containers"][0]["scope"]
    d = f"{cgroup_dir(pod['slice'])}/{scope}"
    # kubelet's memory.high for a container without a limit: request + 0.9 × (allocatable − request)
    high = int((64 * MiB + 0.9 * (GiB - 64 * MiB)) // PAGE * PAGE)
    g.sdqos_run(f"--config {cfg} t/hold app -- {HOLD.format(mib=300)}")
    _wait(lambda: g.run(f"cat {d}/memory.current").rc == 0 and int(g.check(f"cat {d}/memory.current")) >= 300 * MiB,
          "the pod holds 300 MiB")
    pid = g.check(f"cat {d}/cgroup.procs").split()[0]
    assert int(g.check(f"cat {d}/memory.high")) == high

    def pods_intact(before_kills: str) -> None:
        assert g.run(f"kill -0 {pid}").rc == 0, "the pod's process was killed"
        assert g.check("grep -h oom_kill /sys/fs/cgroup/kubepods.slice/memory.events").strip() == before_kills
        limit = int(g.check("cat /sys/fs/cgroup/kubepods.slice/memory.max"))
        assert limit >= int(g.check("cat /sys/fs/cgroup/kubepods.slice/memory.current"))
        assert int(g.check(f"cat {d}/memory.high")) == high  # from allocatable, not from what machine.slice leaves

    kills = g.check("grep -h oom_kill /sys/fs/cgroup/kubepods.slice/memory.events").strip()
    try:
        # A foreign scope with MemoryMax=800M running sleep: it holds nothing, so it takes nothing.
        g.check("(systemd-run --scope --slice machine.slice --unit sleeper -p MemoryMax=800M sleep 100000 "
                ">/dev/null 2>&1 &)")
        _wait(lambda: g.run("grep -q . /sys/fs/cgroup/machine.slice/sleeper.scope/cgroup.procs").rc == 0,
              "the sleeper runs")
        report = json.loads(g.check(f"sdqos sync --config {cfg} -o json"))
        assert report["errors"] == [], report
        pods_intact(kills)
        assert int(g.check("cat /sys/fs/cgroup/kubepods.slice/memory.max")) >= GiB - 16 * MiB
        # One without a limit holding 800 MiB: the pods (holding 300) are left less than they use:
        # kubepods.slice is clamped to their usage, warned, and nothing is killed.
        g.check(f"(systemd-run --scope --slice machine.slice --unit hog {HOLD.format(mib=800)} >/dev/null 2>&1 &)")
        _wait(lambda: int(g.run("cat /sys/fs/cgroup/machine.slice/hog.scope/memory.current").stdout or 0) >= 800 * MiB,
              "the hog holds 800 MiB")
        report = json.loads(g.check(f"sdqos sync --config {cfg} -o json"))
        assert any(w.startswith("kubepods.slice: MemoryMax clamped to current usage") for w in report["warnings"])
        time.sleep(2)
        pods_intact(kills)
        assert int(g.check("cat /sys/fs/cgroup/kubepods.slice/memory.max")) < GiB - 700 * MiB
    finally:
        g.run("systemctl stop hog.scope sleeper.scope; pkill -f '[t]ime.sleep(100000)'")
