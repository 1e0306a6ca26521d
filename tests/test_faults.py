"""A misbehaving world never costs a running workload its QoS.

Real processes, real systemd (a private sandbox of this module's own): the bus goes away, systemd
reloads or re-executes, sync is SIGKILLed at random points, two syncs race for the lock, units are
failed, stopped or changed by hand, foreign units sit in the tree, processes exit while their OOM
score is written. Every test checks what the operator reads (stderr: sdqos's one-line messages
only), the exit code, and that no unit was stopped, recreated or changed that should not be —
then that one clean sync converges to exactly `sdqos plan` (systemd's values and the kernel's).

Random delays use fixed seeds: where a fault lands varies with the machine's speed, the outcome
checked does not.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .hostile_helpers import (
    DB_SLICE,
    FRESH,
    FRESH_SLICE,
    WEB_SLICE,
    cgroup_rel,
    check_converged,
    diff_snapshots,
    error_lines,
    inner_pid,
    kernel_of,
    loaded_units,
    nsenter_child,
    plan_json_in_process,
    private_sandbox,
    show_many,
    snapshot,
    stderr_lines,
    sync,
    wait_bus,
    wait_for,
    wait_for_lock_holder,
    write_load,
)
from .sbhelpers import sdqos_in


@pytest.fixture(scope="module")
def fsb(sandbox, sandbox_name):
    with private_sandbox(f"{sandbox_name}-faults") as sb:
        yield sb


class Load:
    """The fault tests' config (tests/hostile_helpers.write_load) and the variant it holds."""

    def __init__(self, sb, cfg: Path):
        self.sb, self.cfg, self.variant = sb, cfg, 0

    def set(self, variant: int) -> Path:
        self.variant = variant
        write_load(self.cfg, variant)
        return self.cfg

    def flip(self) -> Path:
        return self.set(self.variant + 1)

    def plan(self) -> dict:
        return plan_json_in_process(self.cfg)

    def converge(self) -> dict:
        rc, report, err = sync(self.sb, self.cfg, "--lock-timeout", "30")
        assert rc == 0, err
        stderr_lines(err)
        return report


@pytest.fixture(scope="module")
def load_module(fsb, tmp_path_factory):
    return Load(fsb, tmp_path_factory.mktemp("faults") / "cfg")


@pytest.fixture
def load(load_module):
    """Variant 0 synced: 5 realistic pods + 120 load pods, all in place."""
    ld = load_module
    ld.set(0)
    ld.converge()
    wait_bus(ld.sb)
    return ld


def invocation_ids(sb) -> dict[str, str]:
    units = loaded_units(sb, ("kubepods*", "sdqos-pod*"))
    return {u: v.get("InvocationID", "") for u, v in show_many(sb, units, ("Id", "ActiveState", "InvocationID")).items()
            if v.get("ActiveState") == "active"}


def assert_nothing_recreated(before_ids: dict[str, str], after_ids: dict[str, str], plan: dict) -> None:
    """Every unit that was running before and is still planned keeps its InvocationID: it was
    never stopped and started again (a recreated slice loses its values and its processes' place)."""
    planned = {u["name"] for u in plan["units"]}
    changed = [u for u, inv in before_ids.items() if u in planned and after_ids.get(u) != inv]
    assert not changed, f"{len(changed)} unit(s) stopped or recreated: {changed[:5]}"


def assert_converged(ld: Load) -> None:
    plan = ld.plan()
    problems = check_converged(ld.sb, plan)
    assert not problems, "\n".join(problems[:20])
    again = ld.converge()
    assert (again["created"], again["updated"], again["removed"], again["drift"]) == ([], [], [], []), again


def start_sync(sb, cfg: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, int, int]:
    """A background `sdqos sync -o json` inside: (nsenter Popen, host PID of sdqos, its PID inside)."""
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "sync", "--config", str(cfg), "-o", "json", *extra],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(sbx.inner_env(), **(env or {})))
    child = nsenter_child(p)
    return p, child, inner_pid(child)


def finish(p: subprocess.Popen, timeout: float = 120) -> tuple[int, dict | None, str]:
    out, err = p.communicate(timeout=timeout)
    return p.returncode, (json.loads(out) if out.strip() else None), err


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def resume(p: subprocess.Popen, child: int) -> None:
    """SIGCONT a sync stopped with SIGSTOP. nsenter stops itself when its child stops (to pass the
    stop on to its own parent) and only then resumes the child: continue nsenter once it is
    stopped, and the child too."""
    try:
        wait_for(lambda: _state(p.pid) in ("T", "t", ""), "nsenter to follow its child's stop", timeout=5)
    finally:
        for pid in (p.pid, child):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def applied_bytes(sb) -> bytes:
    p = sb.run_dir / "sdqos" / "applied.json"
    return p.read_bytes() if p.exists() else b""


# --- the bus is not there at all ------------------------------------------------------------------


def test_bus_unreachable_is_one_line_exit_1_nothing_written(fsb, load):
    (load.cfg / "pods" / "zz-fresh.yaml").write_text(FRESH)  # there would be something to do
    before, applied = snapshot(fsb), applied_bytes(fsb)
    rc, report, err = sync(fsb, load.cfg, "--bus-address", "unix:path=/nonexistent/bus")
    assert rc == 1, err
    (line,) = error_lines(err)
    assert "/nonexistent/bus" in line, line
    assert report is None
    assert diff_snapshots(before, snapshot(fsb)) == []
    assert applied_bytes(fsb) == applied


BUS = "unix:path=/run/dbus/system_bus_socket"


def test_dbus_stopped_is_one_line_exit_1_then_recovers(fsb, load):
    """With the bus named (as --bus-address or DBUS_SYSTEM_BUS_ADDRESS name it) and dbus-daemon
    stopped: one line, exit 1, nothing written. As root with no bus named, sdqos talks to systemd
    through its private socket, as systemctl does: the same sync works with dbus-daemon down."""
    (load.cfg / "pods" / "zz-fresh.yaml").write_text(FRESH)
    before, applied = snapshot(fsb), applied_bytes(fsb)
    sbx.run(fsb, ["systemctl", "stop", "dbus.socket", "dbus.service"], check=True)
    try:
        t0 = time.monotonic()
        rc, report, err = sync(fsb, load.cfg, "--bus-address", BUS)
        took = time.monotonic() - t0
        assert rc == 1, err
        (line,) = error_lines(err)
        assert re.search(r"bus|D-Bus|systemd1", line), line
        assert took < 30, f"gave up only after {took:.0f}s"
        assert diff_snapshots(before, snapshot(fsb)) == []
        assert applied_bytes(fsb) == applied
        rc, report, err = sync(fsb, load.cfg)  # systemd's private socket: no dbus-daemon needed
        assert rc == 0, err
        assert report["created"] == [FRESH_SLICE] and report["errors"] == [], report
    finally:
        sbx.run(fsb, ["systemctl", "start", "dbus.socket", "dbus.service"], check=True)
        wait_bus(fsb)
    report = load.converge()
    assert report["created"] == [] and report["drift"] == [], report


# --- systemd drops off the bus, reloads, re-executes: mid-sync --------------------------------------


def _fault_mid_sync(ld: Load, action: list[str], delay: float, backend: str, via: str) -> tuple[int, dict | None, str]:
    # Killing the bus five times in ten seconds trips dbus.service's start limit: that is the test
    # rig's doing, not a fault under test.
    sbx.run(ld.sb, ["systemctl", "reset-failed", "dbus.socket", "dbus.service"])
    env = {"SDQOS_DBUS_BACKEND": backend}
    if via == "bus":  # named, the bus is used; else, as root, systemd's private socket
        env["DBUS_SYSTEM_BUS_ADDRESS"] = BUS
    p, _child, inner = start_sync(ld.sb, ld.cfg, env=env)
    if wait_for_lock_holder(ld.sb, inner, p):
        time.sleep(delay)
        r = sbx.run(ld.sb, action, timeout=60)
        assert r.returncode == 0, r.stderr
    return finish(p)


KILL_DBUS = ["systemctl", "kill", "--signal=SIGKILL", "dbus.service"]
RESTART_DBUS = ["systemctl", "restart", "dbus.service"]


@pytest.mark.parametrize("action,backend,seed,rounds,via", [
    (KILL_DBUS, "dbus-fast", 11, 3, "bus"),
    (RESTART_DBUS, "dbus-fast", 12, 3, "bus"),
    (KILL_DBUS, "dbus-next", 15, 2, "bus"),
    (RESTART_DBUS, "dbus-next", 16, 2, "bus"),
    (["systemctl", "daemon-reload"], "dbus-fast", 13, 2, "bus"),
    (["systemctl", "daemon-reexec"], "dbus-fast", 14, 2, "bus"),
    (KILL_DBUS, "dbus-fast", 17, 2, "private"),
    (["systemctl", "daemon-reload"], "dbus-fast", 18, 2, "private"),
    (["systemctl", "daemon-reexec"], "dbus-fast", 19, 3, "private"),
    (["systemctl", "daemon-reexec"], "dbus-next", 20, 2, "private"),
], ids=["dbus-killed", "dbus-restarted", "dbus-killed-dbus-next", "dbus-restarted-dbus-next", "daemon-reload",
        "daemon-reexec", "private-dbus-killed", "private-daemon-reload", "private-daemon-reexec",
        "private-daemon-reexec-dbus-next"])
def test_sync_survives_systemd_going_away_mid_sync(fsb, load, action, backend, seed, rounds, via):
    """A client must survive a disconnect (docs/promises.md) — wait for systemd1 to come back and carry on
    idempotently. Each fault lands while a sync that creates, updates and removes is under way, on
    the bus (named) and on systemd's private socket (root, nothing named: re-executing systemd
    closes it; a killed dbus-daemon does not touch it)."""
    rnd = random.Random(seed)
    try:
        for _ in range(rounds):
            ids = invocation_ids(fsb)
            load.flip()
            rc, report, err = _fault_mid_sync(load, action, rnd.uniform(0.0, 0.4), backend, via)
            stderr_lines(err)  # one-line messages only: no traceback, no "exception never retrieved"
            assert rc == 0, f"exit {rc}: {err}"
            assert report["errors"] == [] and report["drift"] == [], report
            wait_bus(fsb)
            plan = load.plan()
            assert_converged(load)
            assert_nothing_recreated(ids, invocation_ids(fsb), plan)
    finally:
        sbx.run(fsb, ["systemctl", "reset-failed", "dbus.socket", "dbus.service"])
        sbx.run(fsb, ["systemctl", "start", "dbus.socket", "dbus.service"])
        wait_bus(fsb)


def test_sigkill_at_random_points_then_one_clean_sync_converges(fsb, load):
    rnd = random.Random(20240601)
    for i in range(10):
        ids = invocation_ids(fsb)
        load.flip()
        p, child, inner = start_sync(fsb, load.cfg)
        if wait_for_lock_holder(fsb, inner, p):
            time.sleep(rnd.uniform(0.0, 0.6))
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it finished first: fine
        p.communicate(timeout=60)
        # One clean sync, which must not wait for a lock left behind by the killed one.
        rc, report, err = sync(fsb, load.cfg, "--lock-timeout", "5")
        stderr_lines(err)
        assert rc == 0, f"iteration {i}: exit {rc}: {err}"
        assert report["errors"] == [], report["errors"]
        assert report["drift"] == [], f"iteration {i}: a killed sync's own work reported as drift: {report['drift'][:3]}"
        plan = load.plan()
        problems = check_converged(fsb, plan)
        assert not problems, f"iteration {i}:\n" + "\n".join(problems[:20])
        assert_nothing_recreated(ids, invocation_ids(fsb), plan)
    again = load.converge()
    assert (again["created"], again["updated"], again["removed"], again["drift"]) == ([], [], [], [])
    run = fsb.run_dir / "sdqos"
    for f in run.iterdir():
        if f.is_file():
            st = f.lstat()
            assert st.st_uid == 0 and st.st_mode & 0o077 == 0, f"{f.name}: {st.st_mode & 0o7777:04o}"


# --- the lock --------------------------------------------------------------------------------------


def test_two_syncs_started_together_never_interleave(fsb, load):
    load.flip()
    a = start_sync(fsb, load.cfg)
    b = start_sync(fsb, load.cfg)
    ra, rb = finish(a[0]), finish(b[0])
    for rc, report, err in (ra, rb):
        stderr_lines(err)
        assert rc == 0, err
        assert report["errors"] == [] and report["drift"] == []
    work = [r for _, r, _ in (ra, rb) if r["created"] or r["updated"] or r["removed"]]
    assert len(work) == 1, "both syncs changed units: they interleaved"
    assert_converged(load)


def test_lock_timeout_exits_3_with_one_line_and_writes_nothing(fsb, load):
    load.flip()
    p, child, inner = start_sync(fsb, load.cfg)
    assert wait_for_lock_holder(fsb, inner, p), "the first sync finished before it could be held"
    os.kill(child, signal.SIGSTOP)  # the holder stays in the middle of its work
    try:
        before = snapshot(fsb)
        rc, report, err = sync(fsb, load.cfg, "--lock-timeout", "0.2")
        assert rc == 3, err
        assert report is None
        (line,) = error_lines(err)
        assert line == (f"sdqos: error: another sdqos sync holds /run/sdqos/sync.lock (pid {inner}); "
                        "gave up after 0.2s (--lock-timeout)"), line
        assert diff_snapshots(before, snapshot(fsb)) == []
    finally:
        resume(p, child)
    rc, report, err = finish(p)
    assert rc == 0, err
    stderr_lines(err)
    assert_converged(load)


# --- units failed, stopped or changed by hand; units that are not ours ---------------------------------


def test_failed_container_scope_is_reset_and_reported(fsb, load):
    scope = "sdqos-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55-postgres.scope"
    r = sbx.run(fsb, ["systemd-run", "--scope", f"--unit={scope}", f"--slice={DB_SLICE}", "-p", "RuntimeMaxSec=1",
                      "--description=sdqos container shop/db postgres", "sleep", "60"], timeout=30)
    assert r.returncode != 0  # killed by RuntimeMaxSec
    wait_for(lambda: show_many(fsb, [scope], ("Id", "ActiveState"))[scope].get("ActiveState") == "failed", "failed scope")
    before = snapshot(fsb)
    r = sdqos_in(fsb, "sync", "--config", str(load.cfg))
    after = snapshot(fsb)
    stderr_lines(r.stderr)
    assert r.returncode == 0, r.stderr
    assert after.get(scope, {}).get("ActiveState") != "failed"
    assert scope in r.stdout, f"sync did not say what it did about the failed {scope}:\n{r.stdout}"
    before.pop(scope)
    after.pop(scope, None)
    assert diff_snapshots(before, after) == []
    assert_converged(load)


def test_pod_slice_stopped_by_hand_is_recreated(fsb, load):
    ids = invocation_ids(fsb)
    sbx.run(fsb, ["systemctl", "stop", WEB_SLICE], check=True)
    rc, report, err = sync(fsb, load.cfg)
    stderr_lines(err)
    assert rc == 0, err
    assert report["created"] == [WEB_SLICE] and report["updated"] == [] and report["removed"] == []
    ids.pop(WEB_SLICE)
    assert_nothing_recreated(ids, invocation_ids(fsb), load.plan())
    assert_converged(load)


def test_property_changed_by_hand_is_restored_and_reported_as_drift(fsb, load):
    ids = invocation_ids(fsb)
    sbx.run(fsb, ["systemctl", "set-property", "--runtime", DB_SLICE, "CPUShares=100", "MemoryLimit=1G", "TasksMax=10"],
            check=True)
    assert kernel_of(fsb, cgroup_rel(DB_SLICE))["cpu.shares"] == 100
    rc, report, err = sync(fsb, load.cfg)
    stderr_lines(err)
    assert rc == 0, err
    assert report["drift"] == [{"unit": DB_SLICE, "changes": {
        "CPUShares": [100, 2048], "MemoryLimit": [2**30, 4 * 2**30], "TasksMax": [10, 1024]}}], report["drift"]
    assert kernel_of(fsb, cgroup_rel(DB_SLICE)) == {"cpu.shares": 2048, "cpu.cfs_quota_us": 200_000,
                                                   "cpu.cfs_period_us": 100_000, "memory.limit_in_bytes": 4 * 2**30,
                                                   "pids.max": 1024}
    assert_nothing_recreated(ids, invocation_ids(fsb), load.plan())  # restored in place
    r = sdqos_in(fsb, "sync", "--config", str(load.cfg))
    assert r.stdout.startswith("nothing to do"), r.stdout


def test_foreign_units_in_kubepods_are_reported_and_never_touched(fsb, load):
    foreign_pod = "kubepods-besteffort-podf0e1d2c3.slice"  # named like a pod slice, not made by sdqos
    foreign_slice = "kubepods-burstable-agent.slice"
    procs = [sbx.popen(fsb, ["systemd-run", "--scope", "--unit=f-one.scope", f"--slice={foreign_pod}", "sleep", "300"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             sbx.popen(fsb, ["systemd-run", "--scope", "--unit=f-two.scope", f"--slice={foreign_slice}", "sleep", "300"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        units = [foreign_pod, foreign_slice, "f-one.scope", "f-two.scope"]
        wait_for(lambda: all(v.get("ActiveState") == "active"
                             for v in show_many(fsb, units, ("Id", "ActiveState")).values()), "foreign units")
        sbx.run(fsb, ["systemctl", "set-property", "--runtime", foreign_pod, "CPUShares=77", "MemoryLimit=77M"], check=True)
        (load.cfg / "pods" / "db.yaml").unlink()  # a real removal in the same run
        before = show_many(fsb, units)
        rc, report, err = sync(fsb, load.cfg)
        stderr_lines(err)
        assert rc == 0, err
        assert report["removed"] == [DB_SLICE]
        assert foreign_pod in report["foreign"] and foreign_slice in report["foreign"], report["foreign"]
        assert diff_snapshots(before, show_many(fsb, units)) == [], "a foreign unit was changed"
        assert all(p.poll() is None for p in procs)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        sbx.run(fsb, ["systemctl", "stop", "f-one.scope", "f-two.scope", foreign_pod, foreign_slice])


# --- processes that exit while their OOM score is written ------------------------------------------

CHURN = r"""
import os, random, subprocess, sys, time
open('/proc/self/oom_score_adj', 'w').write('0')          # every process here starts at 0
marker = subprocess.Popen(['sleep', '300'])                # long-lived: its score is checked
print(marker.pid, flush=True)
rnd, kids, end = random.Random(7), [], time.monotonic() + 60
while time.monotonic() < end:
    kids.append(subprocess.Popen(['sleep', '0.0%d' % rnd.randint(0, 3)]))
    kids = [k for k in kids if k.poll() is None]
    time.sleep(0.002)
"""


def test_oom_scores_written_while_processes_come_and_go(fsb, load):
    plan = load.plan()
    web = next(p for p in plan["pods"] if p["name"] == "web")
    nginx = next(c for c in web["containers"] if c["name"] == "nginx")
    want = nginx["oomScoreAdj"]
    assert want > 0  # raising needs no CAP_SYS_RESOURCE
    p = sbx.popen(fsb, [sys.executable, "-m", "sdqos", "run", "--config", str(load.cfg), "shop/web", "nginx", "--",
                        sys.executable, "-c", CHURN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        marker = int(p.stdout.readline())
        time.sleep(0.3)
        adjusted = 0
        for _ in range(4):
            rc, report, err = sync(fsb, load.cfg)
            stderr_lines(err)
            assert rc == 0, err
            assert report["errors"] == [], report["errors"]
            noisy = [w for w in report["warnings"] if re.search(r"oom|PID|process", w, re.IGNORECASE)]
            assert not noisy, noisy
            adjusted += report["oomAdjusted"]
        assert adjusted >= 2, "the churning parent and the marker were not adjusted"
        r = sbx.run(fsb, ["cat", f"/proc/{marker}/oom_score_adj"], check=True)
        assert int(r.stdout) == want
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
        sbx.run(fsb, ["systemctl", "kill", "--signal=SIGKILL", nginx["scope"]])


def test_cgroupfs_written_behind_systemds_back_is_restored_as_drift(fsb, load):
    """README: a cgroupfs file written behind systemd's back is restored and reported as drift."""
    ids = invocation_ids(fsb)
    rel = cgroup_rel(DB_SLICE)
    (fsb.cgroup_path("cpu") / rel / "cpu.shares").write_text("100\n")
    (fsb.cgroup_path("memory") / rel / "memory.limit_in_bytes").write_text(str(2**30))
    rc, report, err = sync(fsb, load.cfg)
    stderr_lines(err)
    assert rc == 0, err
    drifted = {d["unit"]: d["changes"] for d in report["drift"]}
    assert set(drifted) == {DB_SLICE}, report["drift"]
    assert kernel_of(fsb, rel)["cpu.shares"] == 2048
    assert kernel_of(fsb, rel)["memory.limit_in_bytes"] == 4 * 2**30
    assert_nothing_recreated(ids, invocation_ids(fsb), load.plan())
