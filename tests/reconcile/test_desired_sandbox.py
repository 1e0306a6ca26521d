"""The desired state against the sandbox systemd (cgroup v1) with real processes: a clamp is an
adjustment sync records as data, status and metrics show it as clamped-to-usage (never drift)
from that record, and `run --vm` changes the node budget through the same diff and apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import cgroup_rel, dbus_props, kernel, pids_below, sdqos_in, wait_for

MiB, GiB = 2**20, 2**30
HOLD = "import sys, time; b = b'\\x01' * int(sys.argv[1]); time.sleep(600)"  # touches every page
TIER = "kubepods-besteffort.slice"
NODE = 'capacity: {cpu: "2", memory: 1Gi, pids: "100000"}\nfeatureGates: {QOSReserved: true}\nqosReserved: {memory: 100%}\n'
BESTEFFORT = """\
apiVersion: v1
kind: Pod
metadata: {name: e, namespace: t}
spec:
  containers:
  - name: app
"""
BURSTABLE = """\
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: t}
spec:
  containers:
  - name: app
    resources:
      requests: {cpu: 100m, memory: 900Mi}
"""


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    (d / "pods" / "e.yaml").write_text(BESTEFFORT)
    return d


def sync(sb, cfg: Path) -> dict:
    r = sdqos_in(sb, "sync", "--config", str(cfg), "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def status(sb, cfg: Path) -> dict:
    r = sdqos_in(sb, "status", "--config", str(cfg), "-o", "json", "--interval", "0")
    assert r.returncode == 0, r.stderr
    return {row["unit"]: row for row in json.loads(r.stdout)["units"]}


def unit_metrics(sb, cfg: Path, unit: str) -> dict[str, str]:
    """sdqos_unit_drift and sdqos_unit_clamped of one unit, from `sdqos metrics`."""
    r = sdqos_in(sb, "metrics", "--config", str(cfg), "--interval", "0")
    assert r.returncode == 0, r.stderr
    return {ln.split("{", 1)[0]: ln.rsplit(" ", 1)[1] for ln in r.stdout.splitlines()
            if ln.startswith(("sdqos_unit_drift{", "sdqos_unit_clamped{")) and f'{{unit="{unit}"}}' in ln}


def last_sync(sb) -> dict:
    return json.loads(sbx.run(sb, ["cat", "/run/sdqos/last-sync.json"], check=True).stdout)


def applied(sb) -> dict:
    return json.loads(sbx.run(sb, ["cat", "/run/sdqos/applied.json"], check=True).stdout)


def hold_in_besteffort(sb, cfg: Path, size: int) -> subprocess.Popen:
    uid = stable_uid("t", "e")
    pod_slice = f"kubepods-besteffort-pod{uid.replace('-', '_')}.slice"
    unit = container_scope(uid, "app")
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), "t/e", "app", "--",
                       sys.executable, "-c", HOLD, str(size)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rel = cgroup_rel(unit, pod_slice)
    wait_for(lambda: pids_below(sb.cgroup_path("pids") / rel), what="e runs")
    wait_for(lambda: kernel(sb, "memory", rel, "memory.usage_in_bytes") >= size, what=f"e holds {size}", timeout=60)
    return p


def test_a_clamped_tier_is_clamped_to_usage_in_status_and_metrics_not_drift(clean_sandbox, cfg):
    """qosReserved leaves BestEffort 1 GiB − 900 MiB of Burstable requests (124 MiB)
    while its pod holds 200 MiB: the tier is set to its usage (an adjustment, recorded as data in
    the last-sync record); status flags it clamped-to-usage from that record — also once the usage
    moved — and metrics report no drift; when the pod is gone the next sync sets the planned value."""
    sb = clean_sandbox
    sync(sb, cfg)
    proc = hold_in_besteffort(sb, cfg, 200 * MiB)
    try:
        (cfg / "pods" / "b.yaml").write_text(BURSTABLE)
        rep = sync(sb, cfg)
        clamp = [w for w in rep["warnings"] if w.startswith(f"{TIER}: MemoryLimit clamped to current usage")]
        assert clamp, rep["warnings"]
        held = kernel(sb, "memory", cgroup_rel(TIER), "memory.limit_in_bytes")
        used = kernel(sb, "memory", cgroup_rel(TIER), "memory.usage_in_bytes")
        assert 200 * MiB <= used <= held < 300 * MiB
        (adj,) = [a for a in last_sync(sb)["adjustments"] if a["unit"] == TIER]
        assert adj["property"] == "MemoryLimit" and adj["kind"] == "clamped-to-usage"
        assert adj["wanted"] == 124 * MiB and adj["set"] // 4096 * 4096 == held and adj["usage"] <= adj["set"]
        assert applied(sb)[TIER]["MemoryLimit"] == adj["set"]  # what was applied is the adjusted value
        again = sync(sb, cfg)  # (the tier follows its usage exactly, as kubelet's: an update, never drift)
        assert again["drift"] == [] and all(u["unit"] == TIER for u in again["updated"]), again
        (adj,) = [a for a in last_sync(sb)["adjustments"] if a["unit"] == TIER]
        row = status(sb, cfg)[TIER]
        assert "clamped-to-usage" in row["flags"] and "drift" not in row["flags"], row
        assert row["reasons"]["clamped-to-usage"].startswith("MemoryLimit raised to its usage")
        assert row["entitled"]["memoryLimit"] == adj["set"] and row["drift"] == {}
        assert unit_metrics(sb, cfg, TIER) == {"sdqos_unit_drift": "0", "sdqos_unit_clamped": "1"}
    finally:
        sb.systemctl("stop", container_scope(stable_uid("t", "e"), "app"))  # its processes (PID namespace)
        proc.kill()
        proc.wait(10)
    # the pod's process is gone: status still shows what the last sync set (no drift) until a sync
    wait_for(lambda: kernel(sb, "memory", cgroup_rel(TIER), "memory.usage_in_bytes") < 100 * MiB, what="freed")
    row = status(sb, cfg)[TIER]
    assert "clamped-to-usage" in row["flags"] and "drift" not in row["flags"], row
    rep = sync(sb, cfg)
    assert not [w for w in rep["warnings"] if "clamped" in w]
    assert kernel(sb, "memory", cgroup_rel(TIER), "memory.limit_in_bytes") == 124 * MiB
    assert last_sync(sb)["adjustments"] == []
    row = status(sb, cfg)[TIER]
    assert "clamped-to-usage" not in row["flags"] and "drift" not in row["flags"], row
    assert unit_metrics(sb, cfg, TIER) == {"sdqos_unit_drift": "0", "sdqos_unit_clamped": "0"}


VM = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: db}
spec:
  resources:
    limits: {cpu: "1", memory: 700Mi}
  overhead: {cpu: 100m, memory: 64Mi}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: t}
spec:
  containers:
  - name: app
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {memory: 512Mi}
"""


def test_run_vm_changes_the_node_budget_through_the_diff_clamp_included(clean_sandbox, tmp_path):
    """A VM declared and started with `run --vm` before any sync counted it leaves the pods
    1 GiB − 764 MiB while they hold 300 MiB: the node budget `run` applies comes from the same
    desired state and diff as sync's — kubepods.slice clamped to its pods' usage (systemd and the
    kernel agree), machine.slice at the VM's 764 MiB, both recorded as applied, so the next sync
    finds no drift."""
    sb = clean_sandbox
    cfg = tmp_path / "cfg"
    (cfg / "pods").mkdir(parents=True)
    (cfg / "vms").mkdir()
    (cfg / "node.yaml").write_text('capacity: {cpu: "2", memory: 1Gi, pids: "100000"}\n')
    (cfg / "pods" / "a.yaml").write_text(POD)
    sync(sb, cfg)
    uid = stable_uid("t", "a")
    pod_slice = f"kubepods-burstable-pod{uid.replace('-', '_')}.slice"
    scope = container_scope(uid, "app")
    procs = [sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), "t/a", "app", "--",
                            sys.executable, "-c", HOLD, str(300 * MiB)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)]
    try:
        wait_for(lambda: pids_below(sb.cgroup_path("pids") / cgroup_rel(scope, pod_slice)), what="a runs")
        wait_for(lambda: kernel(sb, "memory", cgroup_rel(scope, pod_slice), "memory.usage_in_bytes") >= 300 * MiB,
                 what="a holds 300 MiB", timeout=60)
        (cfg / "vms" / "db.yaml").write_text(VM)
        procs.append(sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), "--vm", "db", "--",
                                    "sleep", "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        vm_cgroup = sb.cgroup_path("pids") / "machine.slice" / "machine-db.scope"

        def exec_done() -> bool:  # run execs its command once the scope and the budget are in place
            return any(Path(f"/proc/{p}/comm").read_text().strip() == "sleep" for p in pids_below(vm_cgroup))
        wait_for(exec_done, what="run --vm db execs sleep", timeout=60)
        used = kernel(sb, "memory", "kubepods.slice", "memory.usage_in_bytes")
        held = kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes")
        assert 300 * MiB <= used <= held < 400 * MiB
        assert dbus_props(sb, "kubepods.slice", "MemoryLimit")["MemoryLimit"] == held  # no value the kernel refused
        assert kernel(sb, "memory", "machine.slice", "memory.limit_in_bytes") == 764 * MiB
        record = applied(sb)
        assert record["kubepods.slice"]["MemoryLimit"] == held and record["machine.slice"]["MemoryLimit"] == 764 * MiB
        assert "machine-db.scope" in record
        rep = sync(sb, cfg)
        assert rep["drift"] == [], rep
        assert any(w.startswith("kubepods.slice: MemoryLimit clamped to current usage") for w in rep["warnings"])
    finally:
        sb.systemctl("stop", "machine-db.scope", scope)
        for p in procs:
            p.kill()
            p.wait(10)
