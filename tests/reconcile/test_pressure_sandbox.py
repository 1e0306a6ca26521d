"""`sdqos pressure --once` against the sandbox with real processes holding real memory: the
signals are the kernel's, the thresholds node.yaml's, and the eviction order kubelet's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.host import pressure

from ..sbhelpers import sdqos_in, sync_json

Mi = 2**20
NODE = """\
capacity: {cpu: "2", memory: 4Gi, pids: "100000"}
evictionHard: {memory.available: %s}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: t}
spec:
  %s
  containers:
  - name: app
    %s
"""
PODS = {
    "be": ("", ""),
    "crit": ("priorityClassName: system-node-critical", ""),
    "burst": ("", "resources: {requests: {memory: 64Mi}, limits: {memory: 256Mi}}"),
    "guar": ("", "resources: {limits: {cpu: 100m, memory: 128Mi}}"),
}
HOLD = ("import sys, time; b = b'\\x01' * (int(sys.argv[1]) << 20); print('ready', flush=True); "
        "time.sleep(600)")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE % "100Mi")
    for name, (spec, res) in PODS.items():
        (d / "pods" / f"{name}.yaml").write_text(POD % (name, spec, res))
    return d


def pressure_json(sb, config: Path) -> dict:
    r = sdqos_in(sb, "pressure", "--once", "--config", str(config), "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_pressure_once_in_kubelets_order(clean_sandbox, config):
    sb = clean_sandbox
    sync_json(sb, config)
    procs = []
    try:
        for pod, mib in (("be", 200), ("crit", 40), ("burst", 0), ("guar", 0)):
            p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), f"t/{pod}", "app", "--",
                               sys.executable, "-c", HOLD, str(mib)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
            procs.append(p)
            assert p.stdout.readline().strip() == "ready", p.stderr.read() if p.poll() is not None else ""

        calm = pressure_json(sb, config)
        mem = calm["signals"][0]
        assert mem["signal"] == "memory.available" and mem["capacity"] == 4 * 2**30
        # the kernel's numbers: the sandbox's root memory cgroup, read here directly
        root = sb.cgroup_path("memory")
        usage = int((root / "memory.usage_in_bytes").read_text())
        inactive = pressure._stat((root / "memory.stat").read_text())["total_inactive_file"]
        assert abs(mem["available"] - (4 * 2**30 - (usage - inactive))) < 32 * Mi
        assert mem["thresholds"][0]["amount"] == 100 * Mi and not mem["thresholds"][0]["met"]
        assert calm["conditions"] == {"MemoryPressure": False, "PIDPressure": False}
        ranking = {r["name"]: r for r in calm["ranking"]}
        # exceeds its request first (be, crit), by priority (be 0 < crit 2000001000), then the
        # largest usage above request (burst: ~-60 MiB before guar: ~-125 MiB)
        assert [r["name"] for r in calm["ranking"]] == ["t/be", "t/crit", "t/burst", "t/guar"]
        assert ranking["t/be"]["memoryUsage"] >= 200 * Mi and ranking["t/be"]["exceedsRequest"]
        assert ranking["t/crit"]["notEvictable"].startswith("critical pod")
        assert calm["victim"] is None

        # a threshold above what is available now: MemoryPressure, and BestEffort be goes first
        (config / "node.yaml").write_text(NODE % f"{(mem['available'] + 150 * Mi) // Mi}Mi")
        tight = pressure_json(sb, config)
        assert tight["conditions"]["MemoryPressure"] is True
        assert tight["reclaim"] == {"signal": "memory.available", "hard": True}
        assert tight["victim"] == "t/be" and tight["gracePeriodSeconds"] == 0

        text = sdqos_in(sb, "pressure", "--once", "--config", str(config)).stdout
        assert "MemoryPressure=True" in text and "t/be" in text and "<- next" in text
    finally:
        for p in procs:
            p.kill()
            p.wait()
