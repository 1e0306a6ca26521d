"""Issue 32's proof on cgroup v1 (the sandbox; node.yaml's `capacity` set small so that a few hundred
MiB make real pressure against it): a mixed node — Guaranteed, Burstable under and over requests,
BestEffort, a VM allowed to be evicted (a stand-in process in its machine-vm1.scope, as
tests/reconcile/test_pressure_sandbox.py's VM) — and a real hog that is not sdqos's. The installed
sdqos-pressure.service evicts in kubelet's order and no more than needed; the Guaranteed pod and
every unit sdqos does not own keep running; no OOM kill; the reaction time is printed. And no
eviction without pressure: minutes at 90 % of a threshold evict nothing. tests/v2/test_v2_pressure.py
does the same on a real cgroup v2 kernel's memory."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.host import pressure

from ..sbhelpers import remove_sync_units, sdqos_in, sync_json, wait_for
from .test_pressure_sandbox import HOLD, Mi, pressure_json, readline, settled_available, stop
from .test_pressure_service_sandbox import install, journal

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: guar, namespace: t}
spec:
  containers:
  - {name: app, resources: {limits: {cpu: 100m, memory: 128Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: under, namespace: t}
spec:
  containers:
  - {name: app, resources: {requests: {memory: 256Mi}, limits: {memory: 512Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: over, namespace: t}
spec:
  containers:
  - {name: app, resources: {requests: {memory: 32Mi}, limits: {memory: 512Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: be, namespace: t}
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
WORKLOADS = {"t/guar": 40, "t/under": 40, "t/over": 200, "t/be": 300, "vm/vm1": 150}
NODE = 'capacity: {cpu: "2", memory: %s, pids: "100000"}\nevictionHard: {memory.available: %s}\n'
# not sdqos's: a process in system.slice growing in 8 MiB steps to argv[1] MiB, then holding it
HOG = ("import sys, time; n = int(sys.argv[1]); c = []\n"
       "while len(c) * 8 < n:\n    c.append(b'\\x01' * (8 << 20)); time.sleep(0.02)\n"
       "open('/run/hog.done', 'w').write('x'); time.sleep(100000)")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "vms").mkdir()
    (d / "pods" / "t.yaml").write_text(PODS)
    (d / "vms" / "vm1.yaml").write_text(VM)
    (d / "node.yaml").write_text(NODE % ("4Gi", "100Mi"))
    return d


def start(sb, config: Path, names) -> dict[str, subprocess.Popen]:
    procs = {}
    for name in names:
        who = ["--vm", name[3:], "--force"] if name.startswith("vm/") else [name, "app"]
        p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), *who, "--",
                           sys.executable, "-c", HOLD, str(WORKLOADS[name])],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs[name] = p
        assert readline(p) == "ready", p.stderr.read() if p.poll() is not None else ""
    return procs


def small_node(sb, config: Path, threshold: str, room: int = 1024) -> int:
    """node.yaml's capacity set to what the sandbox uses now + ``room`` MiB: memory.available is then
    about ``room`` MiB. Returns the capacity in bytes."""
    used = 4 * 2**30 - settled_available(sb, config)
    capacity = (used + room * Mi) // Mi * Mi
    (config / "node.yaml").write_text(NODE % (f"{capacity // Mi}Mi", threshold))
    return capacity


def oom_kills(sb) -> int:
    """Every OOM kill the kernel counted in the sandbox's memory cgroups (v1 counts per memcg)."""
    n = 0
    for f in sb.cgroup_path("memory").rglob("memory.oom_control"):
        try:
            n += int(dict(ln.split() for ln in f.read_text().splitlines()).get("oom_kill", 0))
        except OSError:
            pass
    return n


def test_a_mixed_node_and_a_real_hog_the_installed_service_evicts_in_order(clean_sandbox, config):
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    sync_json(sb, config)
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs = start(sb, config, WORKLOADS)
        ranked = [r["name"] for r in pressure_json(sb, config)["ranking"]]
        # over their request first: vm1 (priority -1), then by usage above request; then the others
        assert ranked == ["vm/vm1", "t/be", "t/over", "t/guar", "t/under"], ranked
        capacity = small_node(sb, config, "300Mi")
        threshold = 300 * Mi
        install(sb, config)
        units = set(sbx.run(sb, ["systemctl", "list-units", "--no-legend", "--plain", "--state=active"]).stdout.split())
        kills = oom_kills(sb)
        a0 = pressure_json(sb, config)["signals"][0]["available"]
        hog_mib = (a0 - threshold + 330 * Mi) // Mi  # short by 330 MiB: vm1 (~160) is not enough, be (~310) is
        flag = sb.run_dir / "hog.done"
        flag.unlink(missing_ok=True)
        sbx.run(sb, ["systemd-run", "--quiet", "--unit=sdqos-test-hog", sys.executable, "-c", HOG, str(hog_mib)],
                check=True)
        root = sb.cgroup_path("memory")
        vm_cgroup = root / "machine.slice" / "machine-vm1.scope" / "cgroup.procs"
        crossed = stopped = done = None
        above = time.monotonic()  # the last look that found memory.available above the threshold
        while done is None or time.monotonic() - done < 15:
            time.sleep(0.02)
            usage = int((root / "memory.usage_in_bytes").read_text())
            inactive = pressure._stat((root / "memory.stat").read_text()).get("total_inactive_file", 0)
            now = time.monotonic()
            if crossed is None and capacity - max(0, usage - inactive) < threshold:
                crossed = now
            elif crossed is None:
                above = now
            if stopped is None and not (vm_cgroup.exists() and vm_cgroup.read_text().strip()):
                stopped = now
                # woken by the kernel's notification, the service may stop vm1 (and give its memory
                # back) between two looks here: then the crossing was after the last look above it
                crossed = crossed or above
            if done is None and flag.exists():
                done = now
            assert now - (crossed or now) < 300
        said = journal(sb)
        evicted = [ln.split(":")[0] for ln in said if ln.startswith("evicted ")]
        reaction = stopped - crossed if crossed and stopped else None
        print(f"\nsandbox (cgroup {sb.cgroup_mode}): capacity {capacity // Mi} MiB, hog {hog_mib} MiB, threshold 300 MiB;"
              f" evicted {evicted}; threshold crossed → vm1 stopped {reaction if reaction is None else round(reaction, 3)} s")
        assert evicted == ["evicted vm vm/vm1", "evicted pod t/be"], said
        for name in ("vm/vm1", "t/be"):
            procs[name].wait(timeout=30)
            assert procs[name].returncode == -15, name  # stopped by the eviction (SIGTERM), not OOM-killed
        for name in ("t/guar", "t/under", "t/over"):
            assert procs[name].poll() is None, name
        assert sbx.run(sb, ["systemctl", "is-active", "sdqos-test-hog.service"]).stdout.strip() == "active"
        left = set(sbx.run(sb, ["systemctl", "list-units", "--no-legend", "--plain", "--state=active"]).stdout.split())
        gone = {u for u in units - left if u.endswith((".service", ".scope", ".slice", ".socket"))
                and not u.startswith(("sdqos-pod", "machine-vm1"))}
        assert not gone, gone  # every unit sdqos does not own survives
        assert oom_kills(sb) == kills
        assert reaction is not None
    finally:
        sbx.run(sb, ["systemctl", "stop", "sdqos-test-hog.service"])
        sbx.run(sb, ["rm", "-f", "/run/hog.done"])
        remove_sync_units(sb)
        for p in procs.values():
            p.kill()
            p.wait()
        sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])


def test_no_eviction_at_90_percent_of_a_threshold_for_minutes(clean_sandbox, config):
    """The node held at 90 % of what it may use before the hard threshold (memory.available =
    threshold + 10 % of capacity − threshold) for 150 s, the loop looking every second: no
    condition, no eviction, every workload runs."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    sync_json(sb, config)
    procs: dict[str, subprocess.Popen] = {}
    loop = None
    try:
        procs = start(sb, config, ["t/guar", "t/under", "vm/vm1"])
        capacity = small_node(sb, config, "300Mi")
        threshold = 300 * Mi
        target = threshold + (capacity - threshold) // 10
        hold = (settled_available(sb, config) - target) // Mi
        p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "t/be", "app", "--",
                           sys.executable, "-c", HOLD, str(hold)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      text=True)
        procs["t/be"] = p
        assert readline(p) == "ready"
        available = settled_available(sb, config)
        used = (capacity - available) / (capacity - threshold)
        print(f"\nheld at {100 * used:.1f} % of the threshold's level (available {available // Mi} MiB, "
              f"threshold 300 MiB, capacity {capacity // Mi} MiB)")
        assert 0.85 < used < 0.95, used
        loop = sbx.popen(sb, [sys.executable, "-m", "sdqos", "pressure", "--evict", "--interval", "1",
                              "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert readline(loop) == "watching node pressure every 1s, evicting"
        assert readline(loop) == "node conditions: none"
        lowest = available
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            time.sleep(5)
            lowest = min(lowest, pressure_json(sb, config)["signals"][0]["available"])
            assert loop.poll() is None
        out, err = stop(loop)
        loop = None
        print(f"lowest memory.available seen: {lowest // Mi} MiB; the loop said {out.splitlines()}")
        assert out.splitlines() == [], (out, err)  # nothing after the two lines read above
        for name, q in procs.items():
            assert q.poll() is None, name
        assert not (sb.run_dir / "sdqos" / "evicted.json").exists()
    finally:
        if loop is not None:
            stop(loop)
        for q in procs.values():
            q.kill()
            q.wait()
        sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
