"""sdqos.reconcile.prefetch against a real systemd: a full sync's kernel reads are done by a child
while it plans. The child reads the slices the last sync applied; a unit whose files are what its
applied values print is confirmed (the live read does not read it again while the plan wants those
values), one written behind systemd's back is not, and the sync reports and restores it as before.
No child outlives the sync."""

from __future__ import annotations

import json
import subprocess
import sys

from sdqos import sandbox as sbx

from ..sbhelpers import cgroup_rel, copy_config, kernel, sync_json

WEB = "kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"
DB = "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"

# Inside the sandbox: what the child prefetch starts doubts, and for each planned unit the live
# read checks in the kernel whether it is confirmed (then the live read does not read it).
PREFETCH = r"""
import json, os, sys
from pathlib import Path
from sdqos.cli.app import load_planned
from sdqos.host import rundir
from sdqos.host.facts import detect_cgroup_mode
from sdqos.reconcile.prefetch import confirmed, prefetch
run = Path("/run/sdqos")
mode = detect_cgroup_mode()
checked = prefetch(run, mode)
assert checked is not None, "a child was started"
doubts = checked.take()
assert doubts is not None and checked.take() is None, "taken once"
checked.close()
applied = rundir.load_applied(run)
_, plan = load_planned(Path(sys.argv[1]), False, mode)
out = {"doubts": sorted(doubts), "applied": len(applied), "confirmed": {}}
for u in plan.units:
    if u.kind in ("node", "tier", "reserved", "machine") or not u.create:
        continue
    out["confirmed"][u.name] = confirmed(u.name, u.properties, applied, doubts, mode)
try:
    os.waitpid(-1, os.WNOHANG)
    out["children"] = "left"
except ChildProcessError:
    out["children"] = "none"
print(json.dumps(out))
"""


FILLER = """apiVersion: v1
kind: Pod
metadata: {{name: filler-{i}, namespace: fill}}
spec:
  containers:
  - name: app
    image: busybox
    resources: {{requests: {{cpu: {cpu}m, memory: 16Mi}}, limits: {{memory: 32Mi}}}}
"""


def with_fillers(config, n: int = 120):
    """The examples and ``n`` more pods: enough that applied.json is past prefetch.MIN_BYTES."""
    for i in range(n):
        path = config / "pods" / f"filler-{i:03d}.yaml"
        path.write_text(FILLER.format(i=i, cpu=10 + i))
        path.chmod(0o644)
    return config


def test_a_full_sync_reads_the_kernel_in_a_child_while_it_plans(clean_sandbox, tmp_path):
    from sdqos.reconcile.prefetch import MIN_BYTES

    sb = clean_sandbox
    config = with_fillers(copy_config(tmp_path))
    sync_json(sb, config)
    assert int(sbx.run(sb, ["stat", "-c", "%s", "/run/sdqos/applied.json"], check=True).stdout) >= MIN_BYTES
    rel = cgroup_rel(WEB)
    (sb.cgroup_path("cpu") / rel / "cpu.shares").write_text("77")  # behind systemd's back
    seen = json.loads(sbx.run(sb, [sys.executable, "-c", PREFETCH, str(config)], check=True).stdout)
    assert seen["doubts"] == [WEB] and seen["applied"] >= 120  # the one written behind systemd's back
    assert seen["confirmed"] == {**{u: True for u in seen["confirmed"]}, WEB: False} and len(seen["confirmed"]) >= 3
    assert seen["children"] == "none"
    # through the CLI: a pod file edited, the value behind systemd's back found and restored
    path = config / "pods" / "db.yaml"
    path.write_text(path.read_text().replace('limits: {cpu: "2", memory: 4Gi}', 'limits: {cpu: "3", memory: 6Gi}'))
    report = sync_json(sb, config)
    assert DB in [u["unit"] for u in report["updated"]]
    assert report["drift"] == [{"unit": WEB, "changes": {}, "kernel": {"cpu/cpu.shares": [77, 512]}}]
    assert kernel(sb, "cpu", rel, "cpu.shares") == 512
    assert kernel(sb, "memory", cgroup_rel(DB), "memory.limit_in_bytes") == 6 * 2**30
    left = sbx.run(sb, ["pgrep", "-f", "--", "-m sdqos sync"])
    assert left.returncode == 1, left.stdout  # no child of the sync still runs
    # a small tree: no child (its few reads cost less than a fork); the same answers
    for path in (config / "pods").glob("filler-*.yaml"):
        path.unlink()
    sync_json(sb, config)
    small = json.loads(sbx.run(sb, [sys.executable, "-c", SMALL], check=True).stdout)
    assert small == {"started": False}


SMALL = r"""
import json
from pathlib import Path
from sdqos.reconcile.prefetch import prefetch
print(json.dumps({"started": prefetch(Path("/run/sdqos"), "v1") is not None}))
"""

HARDENED = r"""
import json, sys
from pathlib import Path
from sdqos.host import cgroupfs
from sdqos.host.facts import detect_cgroup_mode
from sdqos.reconcile.prefetch import prefetch
s = prefetch(Path("/run/sdqos"), detect_cgroup_mode())
doubts = s.take() if s is not None else None
print(json.dumps({"view": cgroupfs.available(), "started": s is not None,
                  "doubts": None if doubts is None else sorted(doubts)}))
"""


def test_the_child_runs_under_the_shipped_services_hardening(clean_sandbox, tmp_path):
    """The installed service's sandboxing (its system call filter, capabilities, namespaces) lets
    the child be made and deliver: run as a transient service with every hardening setting of the
    unit install-units writes, prefetch starts it and takes its answer (nothing in doubt)."""
    from sdqos.host import unitfiles

    sb = clean_sandbox
    config = with_fillers(copy_config(tmp_path))
    sync_json(sb, config)
    units = tmp_path / "units"
    r = subprocess.run([sys.executable, "-m", "sdqos", "install-units", "--dir", str(units), "--config", str(config)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    section = (units / unitfiles.SERVICE).read_text().split("[Service]", 1)[1]
    settings = [ln for ln in section.splitlines() if "=" in ln and not ln.startswith("#")
                and ln.split("=", 1)[0] not in ("Type", "ExecStart", "EnvironmentFile", "StandardOutput",
                                                "StandardError", "SyslogIdentifier", "TimeoutStartSec")]
    assert any(s.startswith("SystemCallFilter=") for s in settings) and len(settings) >= 10
    cmd = ["systemd-run", "--wait", "--pipe", "--quiet", *[f"--property={s}" for s in settings],
           sys.executable, "-c", HARDENED]
    out = sbx.run(sb, cmd, check=True).stdout
    assert json.loads(out) == {"view": True, "started": True, "doubts": []}, out


# `sdqos sync` whose prefetch child stops itself (SIGSTOP) as soon as it is made: a child that never
# ends. Its PID and the sync's are written to argv[1] for the test to check (and to end on failure).
STOPPED = r"""
import os, signal, sys
from sdqos.host import children
pids = open(sys.argv[1], "w")
pids.write(f"{os.getpid()}\n"); pids.flush()
spawn = children.spawn
def stopped(fn, items):
    if fn.__module__ != "sdqos.reconcile.prefetch":
        return spawn(fn, items)
    def stop_first(items):  # (in the child: it stops itself before any work)
        os.kill(os.getpid(), signal.SIGSTOP)
        return fn(items)
    child = spawn(stop_first, items)
    if child is not None:
        pids.write(f"{child[0]}\n"); pids.flush()
    return child
children.spawn = stopped
sys.argv = ["sdqos", *sys.argv[2:]]
from sdqos.cli.app import main
main()
"""


def test_a_prefetch_child_that_never_ends_costs_the_sync_only_its_wait(clean_sandbox, tmp_path):
    """The child stopped: the sync kills and reaps it after prefetch.WAIT, reads every unit itself,
    and finds and restores what was written behind systemd's back (it waited for the child forever,
    holding its lock)."""
    import time

    sb = clean_sandbox
    config = with_fillers(copy_config(tmp_path))
    sync_json(sb, config)
    rel = cgroup_rel(WEB)
    (sb.cgroup_path("cpu") / rel / "cpu.shares").write_text("77")  # behind systemd's back
    script, pids = tmp_path / "stopped.py", tmp_path / "pids"
    script.write_text(STOPPED)
    t = time.monotonic()
    try:
        r = sbx.run(sb, [sys.executable, str(script), str(pids), "sync", "--config", str(config), "-o", "json"],
                    timeout=120)
        took = time.monotonic() - t
        started = [int(p) for p in pids.read_text().split()]
        assert len(started) == 2, "the prefetch child was made (and stopped)"
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["drift"] == [{"unit": WEB, "changes": {}, "kernel": {"cpu/cpu.shares": [77, 512]}}]
        assert kernel(sb, "cpu", rel, "cpu.shares") == 512
        assert took < 65, took  # (prefetch.WAIT is 5 s)
        for pid in started:  # the sync and its child: both gone (the child reaped, not orphaned)
            assert sbx.run(sb, ["kill", "-0", str(pid)]).returncode != 0, f"process {pid} still there"
    finally:  # on failure: end what this test started (the stopped child, a sync waiting on it)
        for pid in (pids.read_text().split() if pids.exists() else []):
            sbx.run(sb, ["kill", "-KILL", pid])
