"""Issue 30 against the sandbox systemd (cgroup v1) with real processes: running pods are never
squeezed — not by what runs in machine.slice, nor by a CPU weight, nor by kept pods' changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import cgroup_rel, kernel, pids_below, sdqos_in, wait_for

MiB, GiB = 2**20, 2**30
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: {cpu}, memory: 32Mi}}
      limits: {{memory: {limit}}}
"""
GUARANTEED = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
    resources:
      limits: {{cpu: 400m, memory: 64Mi}}
"""
HOLD = "import sys, time; b = b'\\x01' * int(sys.argv[1]); time.sleep(600)"  # touches every page


def burst_slice(name: str) -> str:
    return f"kubepods-burstable-pod{stable_uid('t', name).replace('-', '_')}.slice"


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    return d


def node(cfg: Path, cpu: str, memory: str, extra: str = "") -> None:
    (cfg / "node.yaml").write_text(f'capacity: {{cpu: "{cpu}", memory: {memory}, pids: "100000"}}\n{extra}')


def add_pod(cfg: Path, name: str, cpu: str = "100m", limit: str = "512Mi") -> None:
    (cfg / "pods" / f"{name}.yaml").write_text(POD.format(name=name, cpu=cpu, limit=limit))


def sync(sb, cfg: Path, *extra: str) -> subprocess.CompletedProcess:
    return sdqos_in(sb, "sync", "--config", str(cfg), "-o", "json", *extra)


def status(sb, cfg: Path) -> dict:
    r = sdqos_in(sb, "status", "--config", str(cfg), "-o", "json", "--interval", "0")
    assert r.returncode == 0, r.stderr
    return {row["unit"]: row for row in json.loads(r.stdout)["units"]}


def run_pod(sb, cfg: Path, name: str, *argv: str) -> subprocess.Popen:
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), f"t/{name}", "app", "--", *argv],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    unit = container_scope(stable_uid("t", name), "app")
    wait_for(lambda: pids_below(sb.cgroup_path("pids") / cgroup_rel(unit, burst_slice(name))), what=f"{name} runs")
    return p


def foreign(sb, name: str, *props: str, argv=("sleep", "600")) -> subprocess.Popen:
    """A scope in machine.slice sdqos did not make and no VM declares (as podman or nspawn make them)."""
    args = ["systemd-run", "--scope", "--slice", "machine.slice", "--unit", name]
    for p in props:
        args += ["-p", p]
    proc = sbx.popen(sb, args + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: sb.systemctl("is-active", f"{name}.scope").stdout.strip() == "active", what=f"{name}.scope")
    return proc


def kill(*procs) -> None:
    for p in procs:
        p.kill()
        p.wait(10)


def usage(sb, rel: str) -> int:
    return kernel(sb, "memory", rel, "memory.usage_in_bytes")


def hold(sb, name: str, cgroup_unit: str, parent: str, size: int) -> None:
    wait_for(lambda: usage(sb, cgroup_rel(cgroup_unit, parent)) >= size, what=f"{name} holds {size} bytes", timeout=60)


def test_a_limited_scope_using_nothing_takes_nothing_from_running_pods(clean_sandbox, cfg):
    """Case 1: 1 GiB node, pods holding 300 MiB, a foreign scope with MemoryLimit=800M running sleep."""
    sb = clean_sandbox
    node(cfg, "2", "1Gi")
    add_pod(cfg, "a")
    assert sync(sb, cfg).returncode == 0
    procs = [run_pod(sb, cfg, "a", sys.executable, "-c", HOLD, str(300 * MiB))]
    try:
        hold(sb, "a", container_scope(stable_uid("t", "a"), "app"), burst_slice("a"), 300 * MiB)
        procs.append(foreign(sb, "sleeper", "MemoryLimit=800M"))
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        pods = kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes")
        assert pods >= usage(sb, "kubepods.slice") and pods >= GiB - 16 * MiB  # the sleeper counts by its usage
        assert kernel(sb, "memory", "machine.slice", "memory.limit_in_bytes") > GiB  # its own 800M bounds it
        again = sync(sb, cfg)
        assert again.returncode == 0 and json.loads(again.stdout)["updated"] == []  # stable
        row = status(sb, cfg)["kubepods.slice"]
        assert "drift" not in row["flags"] and "clamped-to-usage" not in row["flags"]
    finally:
        kill(*procs)


def test_kubepods_is_clamped_to_its_pods_usage_and_status_says_so(clean_sandbox, cfg):
    """Case 1's clamp: a scope without a limit holding 800 MiB leaves the pods 216 MiB of a 1 GiB
    node while they hold 300 MiB: kubepods.slice is set to their usage (the v1 kernel refuses less,
    v2 would OOM-kill them), warned, and status shows clamped-to-usage, not drift."""
    sb = clean_sandbox
    node(cfg, "2", "1Gi")
    add_pod(cfg, "a")
    assert sync(sb, cfg).returncode == 0
    procs = [run_pod(sb, cfg, "a", sys.executable, "-c", HOLD, str(300 * MiB))]
    try:
        hold(sb, "a", container_scope(stable_uid("t", "a"), "app"), burst_slice("a"), 300 * MiB)
        procs.append(foreign(sb, "hog", argv=(sys.executable, "-c", HOLD, str(800 * MiB))))
        hold(sb, "hog", "hog.scope", "machine.slice", 800 * MiB)
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        rep = json.loads(r.stdout)
        assert any(w.startswith("kubepods.slice: MemoryLimit clamped to current usage") for w in rep["warnings"])
        pods = kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes")
        assert 300 * MiB <= usage(sb, "kubepods.slice") <= pods < 400 * MiB
        row = status(sb, cfg)["kubepods.slice"]
        assert "clamped-to-usage" in row["flags"] and "drift" not in row["flags"], row
        assert "raised to its usage" in row["reasons"]["clamped-to-usage"]
        assert row["entitled"]["memoryLimit"] == pods
        metrics = sdqos_in(sb, "metrics", "--config", str(cfg), "--interval", "0")
        assert metrics.returncode == 0, metrics.stderr
        mine = [ln for ln in metrics.stdout.splitlines() if 'unit="kubepods.slice"' in ln]
        assert [ln.rsplit(" ", 1)[1] for ln in mine if ln.startswith("sdqos_unit_drift{")] == ["0"]
        assert [int(float(ln.rsplit(" ", 1)[1])) for ln in mine
                if ln.startswith("sdqos_unit_memory_limit_bytes{")] == [pods]
    finally:
        kill(*procs)


def test_a_cpu_weight_in_machine_slice_takes_no_shares_from_pods(clean_sandbox, cfg):
    """Case 2: a scope with CPUShares=16384 on an 8-CPU node (1 reserved): kubepods.slice keeps 7168."""
    sb = clean_sandbox
    node(cfg, "8", "8Gi", 'kubeReserved: {cpu: "1"}\n')
    add_pod(cfg, "a", cpu="2")
    procs = [foreign(sb, "heavy", "CPUShares=16384")]
    try:
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == 7168
        # machine.slice weighs what the pods leave of allocatable (7 − 2 CPUs), not 16 CPUs
        assert kernel(sb, "cpu", "machine.slice", "cpu.shares") == 5120
    finally:
        kill(*procs)


def test_held_back_and_refused_pods_keep_their_tier_and_are_listed_as_kept(clean_sandbox, cfg):
    """Case 3: --max-removals holding two running pods back, then a refused QoS-class change: the
    Burstable tier keeps their requests; the report and status name each kept unit and why."""
    sb = clean_sandbox
    node(cfg, "4", "8Gi")
    for n in ("a", "b", "c"):
        add_pod(cfg, n, cpu="400m")
    assert sync(sb, cfg).returncode == 0
    tier = "kubepods-burstable.slice"
    assert kernel(sb, "cpu", cgroup_rel(tier), "cpu.shares") == 1228
    procs = [run_pod(sb, cfg, n, "sleep", "600") for n in ("a", "b", "c")]
    try:
        for n in ("a", "b"):
            (cfg / "pods" / f"{n}.yaml").unlink()
        r = sync(sb, cfg)
        assert r.returncode == 1  # refused: 2 of 3 running pods at once
        rep = json.loads(r.stdout)
        held = {burst_slice("a"), burst_slice("b")}
        assert held <= set(rep["kept"])
        assert all(rep["keptWhy"][s] == "held back by --max-removals 50%" for s in held)
        assert kernel(sb, "cpu", cgroup_rel(tier), "cpu.shares") == 1228  # was 2 with them inside
        text = sdqos_in(sb, "sync", "--config", str(cfg))
        for s in held:
            assert f"  kept     {s}" in text.stdout, text.stdout
        rows = status(sb, cfg)
        for s in held:
            assert rows[s]["flags"] == ["kept"] and rows[s]["reasons"]["kept"].startswith("held back"), rows[s]
        assert "drift" not in rows[tier]["flags"]
        # a and b back; c turns Guaranteed while it runs: refused (exit 2); its old values still count
        for n in ("a", "b"):
            add_pod(cfg, n, cpu="400m")
        (cfg / "pods" / "c.yaml").write_text(GUARANTEED.format(name="c"))
        r = sync(sb, cfg)
        assert r.returncode == 2, r.stderr
        assert kernel(sb, "cpu", cgroup_rel(tier), "cpu.shares") == 1228  # was 716
        assert "refused" in json.loads(r.stdout)["keptWhy"][burst_slice("c")]
    finally:
        kill(*procs)
