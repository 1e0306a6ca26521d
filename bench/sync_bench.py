#!/usr/bin/env python3
"""Benchmark `sdqos sync` against systemd's own throughput and a shell loop — measured, in one run.

    sudo .venv/bin/python bench/sync_bench.py [--sizes 100,1000,5000] [--json]
        [--backend dbus-fast|dbus-next] [--repeat 3] [--profile [--profile-n 1000]] [--keep]

Boots its own `sdqos sandbox` (named sdqbench-<pid>; torn down at the end, on error and on
Ctrl-C/SIGTERM unless --keep) and, per N, in that one sandbox:

  floor       the exact units `sync` creates (kubepods.slice, 2 tiers, N pod slices; names and
              properties from sdqos.plan.engine.build_plan + sdqos.reconcile.create_properties, same
              order) created by a minimal loop on raw dbus-fast: one StartTransientUnit, wait for
              its reply, wait for its JobRemoved, next. Messages are built before the clock
              starts; the clock covers the loop only (no connect, no Python start-up): this is what
              systemd + dbus-daemon can do strictly sequentially, not what our client adds
              (bench/floor.py). The same loop on systemd's private socket, which sdqos uses as
              root, run inside the sandbox, is printed beside it (info).
  shell       `busctl call ... StartTransientUnit` once per unit, same properties, a shell script
              run inside the sandbox (one nsenter; the script ends when systemd has no jobs left).
              N <= 1000 only.
  cold        `sdqos sync` with nothing there (units reset, applied.json removed)
  warm        `sdqos sync` again, nothing to do
  one_change  one Burstable pod's memory limit changed (exactly one unit differs: checked)
  remove10    10 % of the pod files deleted (seeded choice; N/10 pod slices removed: checked)
  recheck     (--where inside) recheck_floor.py: start-up, stat every config file, one
              ListUnitsByPatterns, every unit's kernel files: the yardstick of warm and one change
  given       the one change with config and plan handed over (given_plan.py, unpickling
              subtracted): what a perfect incremental sync would still cost

Every sync is the wall time of the `sdqos` console script (what an operator or a systemd timer
runs: interpreter start-up, imports, config load, D-Bus, report), SDQOS_RUN_DIR pointing at a
per-sandbox temp dir, run inside the sandbox through nsenter (--where inside, the default: PID 1
is the systemd it talks to) or from the host with --bus-address (--where host). Peak RSS is GNU
time's figure for the sync (see bench/README.md); D-Bus calls and disconnects come from its JSON
report.
Systemd-side evidence of disconnects: the unique bus name of org.freedesktop.systemd1 before and
after each sync (systemd gets a new one when dbus-daemon throws it off) and its PeakMatchRules
(org.freedesktop.DBus.Debug.Stats). Times are medians of --repeat runs R (warm, one change,
recheck and given: 2R+1 runs; shell: one run).

Every measurement also records the CPU steal of the (virtual) machine over its interval and the
CPU seconds of the sync process and of the sandbox's systemd, because on a shared VM wall times
move with the neighbours: the steal column says how much to trust a row.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import os
import pickle
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _snapshot_source() -> str | None:
    """Copy the sdqos package as it is on disk now into a private dir and import it from there —
    this process and every sdqos child (PYTHONPATH beats the editable install's finder) — so
    others editing the work tree during a long run cannot change what is measured half-way.
    `--live-source` (or SDQOS_BENCH_LIVE=1) measures the installed package as it is instead."""
    if "--live-source" in sys.argv or os.environ.get("SDQOS_BENCH_LIVE") == "1":
        return None
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("sdqos")
    if spec is None or not spec.submodule_search_locations:
        return None
    src = Path(list(spec.submodule_search_locations)[0])
    snap = Path(tempfile.mkdtemp(prefix="sdqos-bench-src-"))
    shutil.copytree(src, snap / "sdqos", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    compileall.compile_dir(snap / "sdqos", quiet=1)  # no byte-compiling inside a measured sync
    if "--keep" not in sys.argv:  # with --keep the kept sandbox's supervisor runs from it
        import atexit

        atexit.register(shutil.rmtree, snap, True)
    sys.path.insert(0, str(snap))
    os.environ["PYTHONPATH"] = str(snap) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    os.environ["SDQOS_BENCH_SNAPSHOT_OF"] = str(src)
    return str(snap)


SNAPSHOT = _snapshot_source()

from workload import Workload, dump, generate, with_changed_limit  # noqa: E402

from sdqos import sandbox as sbx  # noqa: E402
from sdqos.loading.configdir import load_config  # noqa: E402
from sdqos.plan.engine import build_plan  # noqa: E402
from sdqos.reconcile.apply import create_properties  # noqa: E402
from sdqos.host.systemd import MANAGER, MANAGER_PATH, PRIVATE_ADDRESS, PROPERTY_SIGNATURES, SYSTEMD  # noqa: E402

TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None  # GNU time (Debian package time)
KEYS = ["n", "floor_s", "shell_s", "cold_s", "warm_s", "one_change_s", "remove10_s", "peak_rss_mb",
        "dbus_calls_cold", "dbus_calls_warm", "disconnects"]
SHELL_MAX_N = 1000
TARGETS = {
    "cold_vs_floor": 1.2,  # cold <= 1.2 x floor
    "warm_1000_s": 0.5,
    "one_change_1000_s": 0.3,
    "rss_5000_mb": 80.0,
    "shell_speedup": 10.0,
    # issue 34: the timer's sync against what any drift-repairing sync must do
    "warm_vs_recheck": 1.3,
    "one_change_vs_recheck": 1.6,
    "cold_vs_floor_warm_issue": 1.1,
    "rss_1000_mb": 40.0,
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- machine counters ------------------------------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_counters() -> tuple[int, int]:
    """(total jiffies, steal jiffies) of all CPUs from /proc/stat."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(f[:8]), f[7]


def proc_cpu_s(pid: int) -> float:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return float("nan")


@dataclass
class Sample:
    wall: float = 0.0
    start: float = 0.0  # time.time() when the interval began (right before the spawn, for a sync)
    steal: float = 0.0  # % of the machine's CPU time stolen by the hypervisor during the interval
    sd_cpu: float = 0.0  # CPU seconds the sandbox's systemd (PID 1) used during the interval
    cpu: float = 0.0  # CPU seconds of the measured process (sync) — nan where not applicable
    rss_mb: float = float("nan")
    report: dict = field(default_factory=dict)
    disconnects: int = 0  # max(report, systemd-side evidence) for this run
    sd_renamed: bool = False


class Meter:
    def __init__(self, systemd_pid: int):
        self.pid = systemd_pid

    def __enter__(self) -> "Meter":
        self.c0, self.s0 = cpu_counters()
        self.sd0 = proc_cpu_s(self.pid)
        self.start = time.time()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        c1, s1 = cpu_counters()
        self.steal = 100.0 * (s1 - self.s0) / max(1, c1 - self.c0)
        self.sd_cpu = proc_cpu_s(self.pid) - self.sd0

    def sample(self, **kw: Any) -> Sample:
        return Sample(wall=self.wall, start=self.start, steal=self.steal, sd_cpu=self.sd_cpu, **kw)


# --- bus evidence ----------------------------------------------------------------------------------


def bus_call(address: str, *args: str) -> Any:
    cp = subprocess.run(["busctl", f"--address={address}", "--json=short", "--timeout=10", "call", *args],
                        capture_output=True, text=True, timeout=30)
    if cp.returncode != 0:
        return None
    return json.loads(cp.stdout)["data"]


def systemd_on_bus(address: str) -> tuple[str | None, int | None]:
    """(unique name of org.freedesktop.systemd1, its PeakMatchRules) — None if not on the bus."""
    d = bus_call(address, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                 "s", SYSTEMD)
    if not d:
        return None, None
    owner = d[0]
    st = bus_call(address, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
                  "GetConnectionStats", "s", owner)
    peak = st[0].get("PeakMatchRules", {}).get("data") if st else None
    return owner, peak


# --- the floor: raw dbus-fast, strictly sequential -------------------------------------------------


from floor import floor as _floor  # noqa: E402  (bench/floor.py: also run inside the sandbox)


# --- the shell loop --------------------------------------------------------------------------------


def busctl_args(props: dict) -> list[str]:
    out = [str(len(props))]
    for k, v in props.items():
        sig = PROPERTY_SIGNATURES[k]
        out += [k, sig]
        if sig in ("t", "i", "u", "x"):
            out.append(str(int(v)))
        elif sig == "b":
            out.append("true" if v else "false")
        elif sig == "s":
            out.append(str(v))
        elif sig == "as":
            out += [str(len(v)), *map(str, v)]
        else:
            raise ValueError(f"no busctl spelling for {k} ({sig})")
    return out


def shell_script(items: list[tuple[str, dict]]) -> str:
    lines = ["#!/bin/sh", "set -e"]
    for name, props in items:
        argv = ["busctl", "call", "--", SYSTEMD, MANAGER_PATH, MANAGER, "StartTransientUnit", "ssa(sv)a(sa(sv))",
                name, "fail", *busctl_args(props), "0"]
        lines.append(" ".join(shlex.quote(a) for a in argv) + " >/dev/null")
    # busctl returns with the job queued: the loop is done when systemd has no job left
    lines.append('while [ -n "$(systemctl list-jobs --no-legend)" ]; do sleep 0.01; done')
    return "\n".join(lines) + "\n"


# --- the benchmark ---------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, sb: sbx.Sandbox, tmp: Path):
        self.args, self.sb, self.tmp = args, sb, tmp
        self.run_dir = tmp / "run"
        self.run_dir.mkdir(mode=0o755)
        venv_sdqos = Path(sys.executable).parent / "sdqos"
        self.sdqos = str(venv_sdqos) if venv_sdqos.exists() else (shutil.which("sdqos") or "sdqos")
        self.env = dict(os.environ, SDQOS_RUN_DIR=str(self.run_dir), SDQOS_DBUS_BACKEND=args.backend,
                        DBUS_SYSTEM_BUS_ADDRESS=sb.bus_address)
        self.env.pop("SDQOS_CONFIG", None)
        self.notes: list[str] = []
        self.profiles: dict[int, dict] = {}

    # -- helpers --

    def reset(self) -> None:
        """Back to a just-booted host: no kubepods units, and an empty SDQOS_RUN_DIR (it is on
        tmpfs on a real host: applied.json — and any cache sdqos may keep there — is gone too)."""
        sbx.reset_units(self.sb, ("kubepods*.slice",), timeout=300)
        for f in self.run_dir.iterdir():
            shutil.rmtree(f) if f.is_dir() and not f.is_symlink() else f.unlink()

    def note(self, msg: str) -> None:
        self.notes.append(msg)
        log("NOTE: " + msg)

    def median_wall(self, argv: list[str], times: int) -> float:
        """Median wall time of a command run where the syncs run (inside the sandbox, or on the host)."""
        ts = []
        for _ in range(times):
            t = time.perf_counter()
            if self.args.where == "inside":
                cp = sbx.run(self.sb, argv, cwd=str(self.tmp))
            else:
                cp = subprocess.run(argv, cwd=self.tmp, capture_output=True, text=True)
            ts.append(time.perf_counter() - t)
            if cp.returncode != 0:
                self.note(f"{' '.join(argv)} exited {cp.returncode}: {cp.stderr.strip()[-300:]}")
        return statistics.median(ts)

    def sync(self, cfg: Path, argv0: list[str] | None = None, extra_env: dict | None = None) -> Sample:
        before, _ = systemd_on_bus(self.sb.bus_address)
        env = {**self.env, **(extra_env or {})}
        if self.args.where == "inside":
            # as on a real host: PID 1 is the systemd sdqos talks to (nsenter -m -p -u -C), default bus
            cmd = sbx.nsenter_argv(self.sb, (argv0 or [self.sdqos]) + ["sync", "--config", str(cfg), "-o", "json"],
                                   cwd=str(self.tmp))
            env = sbx.inner_env(env)
        else:
            cmd = (argv0 or [self.sdqos]) + ["sync", "--config", str(cfg), "--bus-address", self.sb.bus_address,
                                             "-o", "json"]
        # Peak RSS: ru_maxrss of a child also counts the memory of the process it was forked from (the
        # kernel folds the pre-exec mm's high-water mark in at exec), and this process holds the
        # whole workload: so the sync is forked by GNU time (small), which reports its child's.
        rss_file = self.tmp / "sync.rss"
        rss_file.unlink(missing_ok=True)
        if TIME_BIN:
            cmd = [TIME_BIN, "-f", "%M", "-o", str(rss_file), *cmd]
        out, err = self.tmp / "sync.out", self.tmp / "sync.err"
        with open(out, "wb") as fo, open(err, "wb") as fe, Meter(self.sb.pid) as m:
            # cwd: not the checkout (python -m puts the cwd first on sys.path, ahead of the snapshot).
            # wait4 on nsenter also reports the sync it forked and reaped (RUSAGE_BOTH: maxrss, CPU)
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=self.tmp, env=env)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        after, _ = systemd_on_bus(self.sb.bus_address)
        try:
            report = json.loads(out.read_text())
        except ValueError:
            report = {}
        if p.returncode != 0 or not report:
            self.note(f"sync exited {p.returncode}: {err.read_text().strip()[-400:]}")
        renamed = before != after
        try:
            rss_kb = int(rss_file.read_text().split()[-1]) if TIME_BIN else float("nan")
        except (OSError, ValueError, IndexError):
            rss_kb = float("nan")
        s = m.sample(cpu=ru.ru_utime + ru.ru_stime, rss_mb=rss_kb / 1024, report=report,
                     sd_renamed=renamed)
        s.disconnects = max(int(report.get("disconnects", 0) or 0), 1 if renamed else 0)
        if renamed:
            self.note(f"systemd's bus name changed during a sync: {before} -> {after} (it was disconnected)")
        return s

    def given_plan(self, n: int, cfg: Path, pairs: list[tuple[Any, Any]], times: int) -> float | None:
        """Median wall of a one-change sync whose (Config, Plan) is unpickled instead of loaded and
        computed, minus the unpickling. Alternates the changed and the original plan, so each run
        updates exactly one unit; ends with the original values in place."""
        paths = []
        for k, (conf, plan) in enumerate(pairs):
            path = self.tmp / f"given-{n}-{k}.pickle"  # without the pods: the handed-over plan holds them
            path.write_bytes(pickle.dumps((dataclasses.replace(conf, pods=[], vms=[]), plan), pickle.HIGHEST_PROTOCOL))
            paths.append(path)
        took = self.tmp / "handover.txt"
        walls = []
        for i in range(times):
            took.unlink(missing_ok=True)
            s = self.sync(cfg, argv0=[sys.executable, str(HERE / "given_plan.py"), str(paths[i % 2])],
                          extra_env={"SDQOS_BENCH_HANDOVER": str(took)})
            self.check("one change, plan handed over", s, created=0, updated=1, removed=0)
            try:
                walls.append(s.wall - float(took.read_text()))
            except (OSError, ValueError):
                self.note("given_plan.py wrote no hand-over time")
        if times % 2:
            self.sync(cfg)  # the original values back (not measured)
        return statistics.median(walls) if walls else None

    def check(self, what: str, s: Sample, **expect: int) -> None:
        r = s.report
        for key, want in expect.items():
            got = len(r.get(key, []))
            if got != want:
                self.note(f"{what}: expected {want} {key}, report has {got}")
        if r.get("errors"):
            self.note(f"{what}: errors {r['errors'][:3]}")
        if r.get("warnings"):
            self.note(f"{what}: warnings {r['warnings'][:3]}")

    # -- one size --

    def run_size(self, n: int) -> dict:
        a = self.args
        R = a.repeat
        log(f"N={n}: generating workload")
        wl: Workload = generate(n, a.seed)
        cfg = self.tmp / f"config-{n}"
        wl.write(cfg)
        conf = load_config(cfg)
        plan = build_plan(conf.node, conf.pods, conf.vms, "v1" if self.sb.cgroup_mode != "unified" else "v2")
        if conf.errors or conf.warnings or plan.warnings:
            raise SystemExit(f"generated config for N={n} is not clean: {conf.errors[:3]} {conf.warnings[:3]} {plan.warnings[:3]}")
        items = [(u.name, create_properties(u)) for u in plan.units if u.create]
        n_units = len(items)
        # the one-change pod: exactly one unit must differ
        target = wl.one_change_pod()
        changed_path = cfg / "pods" / target.name
        variants = [dump(target.doc), dump(with_changed_limit(target.doc, 1))]
        changed_path.write_text(variants[1])
        conf2 = load_config(cfg)
        plan2 = build_plan(conf2.node, conf2.pods, conf2.vms, plan.cgroup)
        changed_path.write_text(variants[0])
        # units sync creates; container scopes (create=False) do not exist without processes
        diff_units = [u.name for u, v in zip(plan.units, plan2.units) if u.create and u.properties != v.properties]
        if len(diff_units) != 1:
            raise SystemExit(f"one-change edit changes {len(diff_units)} units: {diff_units[:5]}")
        removed_files = random.Random(f"{a.seed}/rm/{n}").sample(sorted(p.name for p in wl.pods), n // 10)
        row: dict[str, Any] = {"n": n, "units": n_units}
        samples: dict[str, list[Sample]] = {}

        samples["shell"] = []
        if n <= SHELL_MAX_N and not a.no_shell:
            log(f"N={n}: shell loop of busctl calls inside the sandbox")
            self.reset()
            script = self.tmp / f"shell-{n}.sh"
            script.write_text(shell_script(items))
            with Meter(self.sb.pid) as m:
                cp = sbx.run(self.sb, ["sh", str(script)], timeout=3600)
            if cp.returncode != 0:
                self.note(f"shell loop exited {cp.returncode}: {cp.stderr.strip()[-300:]}")
            samples["shell"].append(m.sample(cpu=float("nan")))
            active = self.count_active()
            if active != n_units:
                self.note(f"shell loop: {active} of {n_units} units active afterwards")

        # floor and cold alternate, one of each per repeat: the guest's speed drifts over minutes, and
        # cold / floor is the figure that matters
        log(f"N={n}: floor ({n_units} units, raw dbus-fast, sequential) and sync cold, alternating, x{R}")
        samples["floor"], samples["cold"], floor_sub, floor_priv = [], [], [], []
        items_file = self.tmp / f"items-{n}.pickle"
        items_file.write_bytes(pickle.dumps(items, pickle.HIGHEST_PROTOCOL))
        for _ in range(R):
            self.reset()  # the floor as every run before 2026-11-28 took it: subscribed (info only)
            floor_sub.append(asyncio.run(_floor(self.sb.bus_address, items, subscribe=True)))
            if a.where == "inside":  # the same loop on systemd's private socket, what sdqos uses as root (info)
                self.reset()
                cp = sbx.run(self.sb, [sys.executable, str(HERE / "floor.py"), str(items_file), PRIVATE_ADDRESS, "--direct"],
                             cwd=str(self.tmp), timeout=600)
                try:
                    floor_priv.append(float(cp.stdout.split()[-1]))
                except (IndexError, ValueError):
                    self.note(f"floor.py on the private socket: exit {cp.returncode}: {cp.stderr.strip()[-300:]}")
            self.reset()
            with Meter(self.sb.pid) as m:
                loop_s = asyncio.run(_floor(self.sb.bus_address, items))
            s = m.sample(cpu=float("nan"))
            s.wall = loop_s  # the creation loop only
            samples["floor"].append(s)
            self.reset()
            s = self.sync(cfg)
            self.check("cold", s, created=n_units, updated=0, removed=0)
            samples["cold"].append(s)
        active = self.count_active()
        if active != n_units:
            self.note(f"after cold sync: {active} of {n_units} units active")
        row["floor_subscribed_s"] = statistics.median(floor_sub)
        row["floor_private_s"] = statistics.median(floor_priv) if floor_priv else None

        # Sub-second syncs are noisier than the guest's drift is slow: 2R+1 of each. The recheck
        # floor (the yardstick of warm and one change: stat the files, list the units, read their
        # kernel values) alternates with warm, as floor with cold. From the host, sdqos has no
        # kernel view either (D-Bus only): no recheck floor there.
        recheck = a.where == "inside"
        log(f"N={n}: sync warm{' and recheck floor (bench/recheck_floor.py), alternating,' if recheck else ''} x{2 * R + 1}")
        samples["warm"], rechecks = [], []
        for _ in range(2 * R + 1):
            if recheck:
                rechecks.append(self.median_wall(
                    [sys.executable, str(HERE / "recheck_floor.py"), str(cfg), plan.cgroup], 1))
            s = self.sync(cfg)
            self.check("warm", s, created=0, updated=0, removed=0)
            samples["warm"].append(s)
        if rechecks:
            row["recheck_floor_s"] = statistics.median(rechecks)
            row["warm_recheck_pairs"] = [w.wall - r for r, w in zip(rechecks, samples["warm"])]

        # the same one change with config and plan handed over (bench/given_plan.py): what a perfect
        # incremental sync (parsing and planning for free) would still cost
        log(f"N={n}: one change with the plan handed over (bench/given_plan.py) x{2 * R + 1}")
        row["given_plan_s"] = self.given_plan(n, cfg, [(conf2, plan2), (conf, plan)], 2 * R + 1)

        # One change alternates with the recheck floor too, as warm does: its ratio is taken
        # against the floor of the same minutes, not of the minutes before.
        log(f"N={n}: sync one change{' and recheck floor, alternating,' if recheck else ''} x{2 * R + 1}")
        samples["one_change"], rechecks = [], []
        for i in range(2 * R + 1):
            if recheck:
                rechecks.append(self.median_wall(
                    [sys.executable, str(HERE / "recheck_floor.py"), str(cfg), plan.cgroup], 1))
            changed_path.write_text(variants[(i + 1) % 2])
            s = self.sync(cfg)
            self.check("one_change", s, created=0, updated=1, removed=0)
            samples["one_change"].append(s)
        if rechecks:
            row["one_change_recheck_s"] = statistics.median(rechecks)
        changed_path.write_text(variants[0])
        self.sync(cfg)  # back to the original limit (2R+1 is odd; not measured)

        if a.profile and n == a.profile_n:
            self.profiles[n] = self.profile(cfg, changed_path, variants)

        log(f"N={n}: sync remove 10% ({len(removed_files)} pods) x{R}")
        samples["remove10"] = []
        saved = {f: (cfg / "pods" / f).read_text() for f in removed_files}
        for i in range(R):
            if i:
                for f, text in saved.items():
                    (cfg / "pods" / f).write_text(text)
                self.sync(cfg)  # put them back (not measured)
            for f in removed_files:
                (cfg / "pods" / f).unlink()
            s = self.sync(cfg)
            self.check("remove10", s, removed=len(removed_files), created=0)
            samples["remove10"].append(s)

        owner, peak = systemd_on_bus(self.sb.bus_address)
        row["samples"] = samples
        row["systemd_peak_match_rules"] = peak
        row["systemd_on_bus"] = owner is not None
        if owner is None:
            self.note(f"N={n}: org.freedesktop.systemd1 is not on the bus at the end")
        self.reset()
        return row

    def count_active(self) -> int:
        out = sbx.run(self.sb, ["systemctl", "list-units", "--state=active", "--plain", "--no-legend", "--",
                                "kubepods*.slice"], timeout=120).stdout
        return sum(1 for ln in out.splitlines() if ln.strip())

    # -- profile --

    def profile(self, cfg: Path, changed_path: Path, variants: list[str]) -> dict:
        """Phase breakdown of warm and one-change syncs (sync_phases.py), plus cProfile's top list."""
        log(f"profile: phases of warm and one-change sync x{self.args.repeat}")
        res: dict[str, Any] = {}
        phases_file = self.tmp / "phases.json"
        argv0 = [sys.executable, str(HERE / "sync_phases.py")]
        for kind in ("cold", "warm", "one_change"):
            runs = []
            for i in range(self.args.repeat):
                if kind == "cold":
                    self.reset()
                if kind == "one_change":
                    changed_path.write_text(variants[(i + 1) % 2])
                s = self.sync(cfg, argv0=argv0, extra_env={"SDQOS_BENCH_PHASES": str(phases_file)})
                # the sync's own interval (not the bench's checks around it): spawn to reaped
                t_spawn, t_reaped = s.start, s.start + s.wall
                ph = json.loads(phases_file.read_text())
                phases = {"python start-up (interpreter, site, .pth)": ph["entry"] - t_spawn, **ph["phases"],
                          "interpreter exit": max(0.0, t_reaped - ph["end"])}
                runs.append({"wall": s.wall, "steal": s.steal, "cpu": s.cpu, "phases": phases,
                             "calls": s.report.get("dbusCalls"), "hwm": ph.get("hwm_mb", {}), "rss": s.rss_mb})
            if kind == "one_change" and self.args.repeat % 2:
                changed_path.write_text(variants[0])
                self.sync(cfg)
            res[kind] = runs
        # cProfile of the real console script, warm
        # (not `python -m cProfile`: the console script's main() leaves with os._exit, before
        # cProfile would write its file; this runs the same app, imports included)
        prof = self.tmp / "warm.prof"
        code = ("import cProfile, os\np = cProfile.Profile()\np.enable()\ntry:\n"
                "    from sdqos.cli.app import app\n    app(prog_name='sdqos')\nexcept SystemExit:\n    pass\n"
                "p.disable()\np.dump_stats(os.environ['SDQOS_BENCH_PROF'])\n")
        import io
        import pstats

        def tables(kind: str, path: Path, wall: float, cum_rows: int) -> None:
            """The profile's top functions by own time and sdqos' (and its stack's) by cumulative time."""
            for key, order, restrict in ((f"cprofile_{kind}", "tottime", (18,)),
                                         (f"cprofile_{kind}_cum", "cumulative",
                                          (r"sdqos|yaml|dbus_fast|dbus_next|typer", cum_rows))):
                buf = io.StringIO()
                pstats.Stats(str(path), stream=buf).sort_stats(order).print_stats(*restrict)
                res[key] = buf.getvalue()
            res[f"cprofile_{kind}_wall"] = wall

        s = self.sync(cfg, argv0=[sys.executable, "-c", code], extra_env={"SDQOS_BENCH_PROF": str(prof)})
        tables("warm", prof, s.wall, 30)
        # and of a one-change sync (the other variant of the changed file, then the first again)
        prof = self.tmp / "one_change.prof"
        changed_path.write_text(variants[1])
        s = self.sync(cfg, argv0=[sys.executable, "-c", code], extra_env={"SDQOS_BENCH_PROF": str(prof)})
        changed_path.write_text(variants[0])
        self.sync(cfg)
        tables("one_change", prof, s.wall, 40)
        return res


# --- summaries ----------------------------------------------------------------------------------


def med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else None


def summarize(row: dict) -> dict:
    S = row["samples"]
    out: dict[str, Any] = {"n": row["n"]}

    def wall(k: str) -> float | None:
        return med([s.wall for s in S.get(k, [])])

    def pick(k: str) -> Sample | None:  # the median run (for its report)
        xs = sorted(S.get(k, []), key=lambda s: s.wall)
        return xs[len(xs) // 2] if xs else None

    for k in ("floor", "shell", "cold", "warm", "one_change", "remove10"):
        v = wall(k)
        out[f"{k}_s"] = None if v is None else round(v, 4)
    syncs = [s for k in ("cold", "warm", "one_change", "remove10") for s in S[k]]
    rss = [s.rss_mb for s in syncs if s.rss_mb == s.rss_mb]
    out["peak_rss_mb"] = round(max(rss), 1) if rss else None
    out["dbus_calls_cold"] = pick("cold").report.get("dbusCalls")
    out["dbus_calls_warm"] = pick("warm").report.get("dbusCalls")
    out["disconnects"] = sum(s.disconnects for s in syncs)
    return {k: out[k] for k in KEYS}


def extras(row: dict) -> dict:
    S = row["samples"]
    syncs = [s for k in ("cold", "warm", "one_change", "remove10") for s in S[k]]
    alls = [s for k in S for s in S[k]]
    return {
        "units": row["units"],
        "recheck_floor": row.get("recheck_floor_s"),
        "floor_subscribed": row.get("floor_subscribed_s"),  # the floor with a Subscribe, as before 2026-11-28
        "floor_private": row.get("floor_private_s"),  # the floor on systemd's private socket (sdqos' way as root)
        "one_change_recheck": row.get("one_change_recheck_s"),  # the floor alternated with one change
        # warm minus the recheck floor run just before it: what sdqos adds, less exposed to drift
        "warm_recheck_pairs": row.get("warm_recheck_pairs"),
        "given_plan": row.get("given_plan_s"),
        # cold / floor of each repeat (they alternate): how much of the median ratio is drift
        "cold_floor_pairs": [c.wall / f.wall for f, c in zip(S["floor"], S["cold"])],
        "steal_max": max(s.steal for s in alls),
        "steal_med": med([s.steal for s in alls]),
        "cpu": {k: med([s.cpu for s in S[k]]) for k in ("cold", "warm", "one_change", "remove10")},
        "sd_cpu": {k: med([s.sd_cpu for s in S[k]]) for k in S if S[k]},
        "spread": {k: (min(s.wall for s in S[k]), max(s.wall for s in S[k])) for k in S if S[k]},
        "report_disc": sum(int(s.report.get("disconnects", 0) or 0) for s in syncs),
        "sd_renamed": sum(s.sd_renamed for s in syncs),
        "peak_match_rules": row["systemd_peak_match_rules"],
        "rss": {k: max((s.rss_mb for s in S[k]), default=float("nan")) for k in ("cold", "warm", "one_change", "remove10")},
    }


def fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def targets(rows: list[dict], ext: dict[int, dict] | None = None,
            startup: float | None = None) -> list[tuple[str, str, bool | str | None]]:
    """Each target: (name, value, met). ``startup``: the start-up floor, for what bounds cold at small N."""
    by_n = {r["n"]: r for r in rows}
    recheck = (ext or {}).get(1000, {}).get("recheck_floor")
    given = (ext or {}).get(1000, {}).get("given_plan")
    warm_pairs = (ext or {}).get(1000, {}).get("warm_recheck_pairs")

    def over(s: float, paired: bool = False) -> str:  # what sdqos adds to what any drift-repairing sync must do
        if not recheck:
            return ""
        each = f"; {statistics.median(warm_pairs):.3f} s by the median of alternating pairs" if paired and warm_pairs else ""
        return f"  (recheck floor {recheck:.3f} s: sdqos adds {s - recheck:.3f} s{each})"
    out: list[tuple[str, str, bool | str | None]] = []
    for r in rows:
        ratio = r["cold_s"] / r["floor_s"]
        pairs = (ext or {}).get(r["n"], {}).get("cold_floor_pairs")
        each = f"  (each repeat: {', '.join(f'{x:.2f}' for x in pairs)})" if pairs else ""
        out.append((f"cold <= 1.2 x floor  (N={r['n']})", f"{r['cold_s']:.3f} s / {r['floor_s']:.3f} s = {ratio:.2f} x{each}",
                    ratio <= TARGETS["cold_vs_floor"]))
        if startup and ratio > TARGETS["cold_vs_floor"]:  # what no sync on this stack can go below
            out.append(("  start-up floor alone", f"{startup:.3f} s = {startup / r['floor_s']:.2f} x floor"
                        f" (start-up, then creating at the floor's pace: {1 + startup / r['floor_s']:.2f} x)", "info"))
    if 1000 in by_n:
        r = by_n[1000]
        out.append(("warm no-op at 1000 <= 0.5 s", f"{r['warm_s']:.3f} s{over(r['warm_s'], paired=True)}",
                    r["warm_s"] <= TARGETS["warm_1000_s"]))
        out.append(("one change among 1000 <= 0.3 s", f"{r['one_change_s']:.3f} s{over(r['one_change_s'])}",
                    r["one_change_s"] <= TARGETS["one_change_1000_s"]))
        if given is not None:
            out.append(("  the same, config and plan handed over", f"{given:.3f} s  (config + plan cost "
                        f"{r['one_change_s'] - given:.3f} s; the rest of sdqos {given - recheck:.3f} s)"
                        if recheck else f"{given:.3f} s", "info"))
    else:
        out.append(("warm / one change at 1000", "N=1000 not run", None))
    if 5000 in by_n:
        r = by_n[5000]
        out.append(("5000 cold with 0 disconnects", f"{r['disconnects']} disconnects (all 5000 syncs)", r["disconnects"] == 0))
        rss = r["peak_rss_mb"]
        out.append(("peak RSS <= 80 MB at 5000", "not measured (no /usr/bin/time)" if rss is None else f"{rss:.1f} MB",
                    None if rss is None else rss <= TARGETS["rss_5000_mb"]))
    else:
        out.append(("5000: disconnects, RSS", "N=5000 not run", None))
    for r in rows:  # the warm sync's targets (issue 34), as ratios of yardsticks taken alongside
        e = (ext or {}).get(r["n"], {})
        if r["n"] not in (1000, 5000) or not e.get("recheck_floor"):
            continue
        n, floor, floor1 = r["n"], e["recheck_floor"], e.get("one_change_recheck") or e["recheck_floor"]
        out.append((f"warm <= 1.3 x recheck floor (N={n})", f"{r['warm_s']:.3f} s / {floor:.3f} s = "
                    f"{r['warm_s'] / floor:.2f} x", r["warm_s"] / floor <= TARGETS["warm_vs_recheck"]))
        out.append((f"one change <= 1.6 x recheck floor (N={n})", f"{r['one_change_s']:.3f} s / {floor1:.3f} s = "
                    f"{r['one_change_s'] / floor1:.2f} x (the floor alternated with it; against warm's: "
                    f"{r['one_change_s'] / floor:.2f} x)", r["one_change_s"] / floor1 <= TARGETS["one_change_vs_recheck"]))
        sub = e.get("floor_subscribed")
        out.append((f"cold <= 1.1 x raw D-Bus floor (N={n})", f"{r['cold_s'] / r['floor_s']:.2f} x" + (
                    f" (against the floor with a Subscribe, as runs before 2026-11-28 took it: {sub:.3f} s, "
                    f"{r['cold_s'] / sub:.2f} x)" if sub else ""),
                    r["cold_s"] / r["floor_s"] <= TARGETS["cold_vs_floor_warm_issue"]))
        priv = e.get("floor_private")
        if priv:  # sdqos as root talks to systemd there: how much of the margin is the transport
            out.append(("  the floor on systemd's private socket", f"{priv:.3f} s (= {priv / r['floor_s']:.2f} x the bus "
                        f"floor; sdqos connects there as root): cold {r['cold_s'] / priv:.2f} x it", "info"))
        if n == 1000 and r["peak_rss_mb"] is not None:
            out.append(("peak RSS <= 40 MB at 1000", f"{r['peak_rss_mb']:.1f} MB", r["peak_rss_mb"] <= TARGETS["rss_1000_mb"]))
        out.append((f"0 bus disconnects (N={n})", f"{r['disconnects']}", r["disconnects"] == 0))
    for r in rows:
        if r["shell_s"] is not None:
            sp = r["shell_s"] / r["cold_s"]
            out.append((f">= 10 x faster than shell (N={r['n']})", f"{r['shell_s']:.2f} s / {r['cold_s']:.3f} s = {sp:.1f} x",
                        sp >= TARGETS["shell_speedup"]))
            out.append(("  the floor against the shell", f"{r['shell_s'] / r['floor_s']:.1f} x (systemd's own pace,"
                        " one unit at a time, with no client overhead at all)", "info"))
    return out


def verdict(ok: bool | str | None) -> str:
    """A target's mark: met, MISS, n/a (not run), or info (a figure that explains the one above)."""
    return "n/a" if ok is None else "info" if ok == "info" else "met" if ok else "MISS"


def source_state() -> str:
    """git HEAD of the sdqos checkout plus a hash of the sdqos/*.py actually on disk (others may be
    editing the work tree: a change during the run is reported in the notes)."""
    import hashlib

    root = Path(os.environ.get("SDQOS_BENCH_SNAPSHOT_OF") or Path(sbx.__file__).resolve().parents[1])
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.name.encode() + f.read_bytes())
    head = subprocess.run(["git", "-C", str(root.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(root.parent), "status", "--porcelain", "--", "sdqos"], capture_output=True,
                           text=True).stdout.strip()
    return f"HEAD {head}{' + uncommitted sdqos changes' if dirty else ''}, sdqos/*.py sha256 {h.hexdigest()[:12]}"


def snapshot_hash() -> str:
    import hashlib

    h = hashlib.sha256()
    for f in sorted(Path(SNAPSHOT or Path(sbx.__file__).parents[2], "sdqos").rglob("*.py")):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def calibrate() -> float:
    """Seconds for a fixed pure-Python loop (10M additions): a yardstick to compare machines (and
    the same machine at another time) by; CPU-bound wall times of this run scale roughly with it."""
    t = time.perf_counter()
    s = 0
    for i in range(10_000_000):
        s += i
    return time.perf_counter() - t


def machine() -> dict:
    cpu = "?"
    for ln in Path("/proc/cpuinfo").read_text().splitlines():
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    mem = next((int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal:")), 0)
    try:
        sd = subprocess.run(["/lib/systemd/systemd", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        sd = "?"
    try:
        dbus = subprocess.run(["dbus-daemon", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        dbus = "?"
    virt = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True).stdout.strip() or "none"
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(mem / 2**20, 1), "kernel": platform.release(),
            "systemd": sd, "dbus": dbus, "python": platform.python_version(), "virt": virt,
            "loadavg_start": os.getloadavg(), "calib_start": calibrate(), "source": source_state()}


def print_table(rows: list[dict], ext: dict[int, dict], mach: dict, args: argparse.Namespace, notes: list[str],
                out: Any = None) -> None:
    p = functools.partial(print, file=out or sys.stdout)
    where = (f"inside the sandbox via nsenter (nsenter + exec of /bin/true alone: {mach.get('nsenter_s', 0) * 1000:.0f} ms, "
             f"included)" if args.where == "inside" else "on the host with --bus-address")
    p(f"\nsdqos sync benchmark — backend {args.backend}, median of {args.repeat} (warm, one change, their yardsticks: {2 * args.repeat + 1}; shell: 1 run), seed {args.seed}; "
      f"sync run {where}")
    p(f"machine: {mach['cpu']}, {mach['cores']} cores, {mach['ram_gib']} GiB, kernel {mach['kernel']}, "
      f"{mach['systemd']}, {mach['dbus']}, Python {mach['python']}, virt {mach['virt']}")
    p(f"load average at start {', '.join(f'{x:.2f}' for x in mach['loadavg_start'])}; at end "
      f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; speed: 10M-addition Python loop {mach['calib_start']:.2f} s "
      f"at start, {calibrate():.2f} s at end (lower = faster machine)")
    if "stack_floor_s" in mach:
        p(f"start-up floor (python -c 'import asyncio, json, typer, <D-Bus lib>', run like a sync): "
          f"{mach['stack_floor_s']:.3f} s, paid by every sync before it reads a file")
    p(f"sdqos source: {'snapshot taken at start of ' if SNAPSHOT else 'live tree, '}{mach['source']}"
      + (f" (work tree at the end: {source_state()})" if SNAPSHOT and source_state() != mach['source'] else ""))
    hdr = ["N", "units", "floor s", "(u/s)", "shell s", "cold s", "xfloor", "recheck s", "warm s", "1chg s", "given s", "rm10% s",
           "RSS MB", "calls c/w", "disc", "steal% med/max"]
    p("")
    p("  ".join(f"{h:>9}" for h in hdr))
    for r in rows:
        e = ext[r["n"]]
        cells = [r["n"], e["units"], fmt(r["floor_s"]), f"{e['units'] / r['floor_s']:.0f}", fmt(r["shell_s"], 2),
                 fmt(r["cold_s"]), f"{r['cold_s'] / r['floor_s']:.2f}", fmt(e["recheck_floor"]), fmt(r["warm_s"]), fmt(r["one_change_s"]),
                 fmt(e["given_plan"]), fmt(r["remove10_s"]), fmt(r["peak_rss_mb"], 1), f"{r['dbus_calls_cold']}/{r['dbus_calls_warm']}",
                 f"{r['disconnects']}", f"{e['steal_med']:.0f}/{e['steal_max']:.0f}"]
        p("  ".join(f"{str(c):>9}" for c in cells))
    p("\nCPU seconds of the sdqos process (median; steal-free cost) and of the sandbox's systemd:")
    for r in rows:
        e = ext[r["n"]]
        c, sd = e["cpu"], e["sd_cpu"]
        p(f"  N={r['n']:>5}: sdqos cold {fmt(c['cold'], 2)}  warm {fmt(c['warm'], 2)}  1chg {fmt(c['one_change'], 2)}"
          f"  rm10% {fmt(c['remove10'], 2)}   |  systemd: floor {fmt(sd.get('floor'), 2)}  shell {fmt(sd.get('shell'), 2)}"
          f"  cold {fmt(sd.get('cold'), 2)}  warm {fmt(sd.get('warm'), 2)}")
    p("Spread (min..max wall over the repeats):")
    for r in rows:
        e = ext[r["n"]]
        p(f"  N={r['n']:>5}: " + "  ".join(f"{k} {lo:.3f}..{hi:.3f}" for k, (lo, hi) in e["spread"].items()))
    p("Peak RSS by sync kind (MB): " + ";  ".join(
        f"N={r['n']}: " + " ".join(f"{k} {v:.0f}" for k, v in ext[r["n"]]["rss"].items()) for r in rows))
    p("Disconnects: from sdqos' reports / systemd's bus name changes; systemd PeakMatchRules on the bus:")
    for r in rows:
        e = ext[r["n"]]
        p(f"  N={r['n']:>5}: report {e['report_disc']}, systemd renamed {e['sd_renamed']}, "
          f"PeakMatchRules {e['peak_match_rules']} (since the sandbox booted)")
    p("\nTargets (same run):")
    for name, val, ok in targets(rows, ext, mach.get("stack_floor_s")):
        p(f"  [{verdict(ok):<4}] {name:<38} {val}")
    if notes:
        p("\nNotes:")
        for n in notes:
            p(f"  - {n}")


def print_profile(n: int, prof: dict, out: Any = None) -> None:
    p = functools.partial(print, file=out or sys.stdout)
    p(f"\nProfile at N={n} (bench/sync_phases.py: the real CLI in-process, each phase's functions timed; median)")
    for kind in ("cold", "warm", "one_change"):
        runs = prof[kind]
        names = list(runs[0]["phases"])
        wall = statistics.median(r["wall"] for r in runs)
        p(f"  {kind}: wall {wall:.3f} s (steal {statistics.median(r['steal'] for r in runs):.0f} %, "
          f"process CPU {statistics.median(r['cpu'] for r in runs):.3f} s, {runs[0]['calls']} D-Bus calls)")
        total = 0.0
        for nm in names:
            v = statistics.median(r["phases"].get(nm, 0.0) for r in runs)
            total += 0.0 if nm.startswith("  of which") else v
            h = runs[0]["hwm"].get(nm)
            p(f"    {nm:<48} {v:7.3f} s  {100 * v / wall:5.1f} %" + (f"   peak RSS after: {h:6.1f} MB" if h else ""))
        p(f"    {'(sum of phases)':<48} {total:7.3f} s   (peak RSS of the process {runs[0]['rss']:.1f} MB)")
    p(f"\n  cProfile of a warm `sdqos sync` (wall under the profiler {prof['cprofile_warm_wall']:.2f} s), by own time:")
    p("\n".join("    " + ln for ln in prof["cprofile_warm"].splitlines()[:45] if ln.strip()))
    p("\n  ... by cumulative time (sdqos, yaml, D-Bus, typer):")
    p("\n".join("    " + ln for ln in prof["cprofile_warm_cum"].splitlines()[:50] if ln.strip()))
    if "cprofile_one_change" in prof:
        p(f"\n  cProfile of a one-change `sdqos sync` (wall under the profiler {prof['cprofile_one_change_wall']:.2f} s), "
          "by own time:")
        p("\n".join("    " + ln for ln in prof["cprofile_one_change"].splitlines()[:45] if ln.strip()))
        p("\n  ... by cumulative time (sdqos, yaml, D-Bus, typer):")
        p("\n".join("    " + ln for ln in prof["cprofile_one_change_cum"].splitlines()[:60] if ln.strip()))


# --- main ------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,5000", help="comma-separated pod counts (default 100,1000,5000)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per N (only those) on stdout")
    ap.add_argument("--backend", default="dbus-fast", choices=["dbus-fast", "dbus-next"],
                    help="D-Bus library sdqos sync uses (SDQOS_DBUS_BACKEND); the floor is always raw dbus-fast")
    ap.add_argument("--keep", action="store_true", help="leave the sandbox and temp dir for debugging")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement, median reported (default 3)")
    ap.add_argument("--seed", type=int, default=20250101, help="workload generator seed")
    ap.add_argument("--no-shell", action="store_true", help="skip the shell loop")
    ap.add_argument("--profile", action="store_true", help="phase breakdown + cProfile of warm/one-change syncs")
    ap.add_argument("--profile-n", type=int, default=1000, help="N to profile at (default 1000)")
    ap.add_argument("--name", default=f"sdqbench{os.getpid()}", help="sandbox name")
    ap.add_argument("--where", default="inside", choices=["inside", "host"],
                    help="run sync inside the sandbox (nsenter; PID 1 is its systemd, as on a real host: "
                         "sdqos may use its kernel fast path) or on the host with --bus-address (D-Bus only)")
    ap.add_argument("--live-source", action="store_true",
                    help="run the installed sdqos as it is on disk (default: a snapshot taken at start)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    if args.repeat < 1 or any(n < 10 for n in sizes):
        ap.error("--repeat >= 1 and sizes >= 10")
    if args.profile and args.profile_n not in sizes:
        ap.error(f"--profile-n {args.profile_n} is not among --sizes")
    problems = sbx.missing_prerequisites()
    if problems:
        print(f"sync_bench: cannot boot a sandbox: {'; '.join(problems)}", file=sys.stderr)
        return 1

    def on_term(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    mach = machine()
    tmp = Path(tempfile.mkdtemp(prefix="sdqos-bench-"))
    sb = None
    rows, ext = [], {}
    try:
        log(f"booting sandbox {args.name}")
        sb = sbx.up(args.name)
        bench = Bench(args, sb, tmp)
        if args.where == "inside":
            mach["nsenter_s"] = bench.median_wall(["/bin/true"], 5)
        # What any Python tool on this stack pays before its first line of work: interpreter start-up
        # and importing asyncio, json, typer and the D-Bus library (run as the syncs are)
        lib = "dbus_fast.aio" if args.backend == "dbus-fast" else "dbus_next.aio"
        mach["stack_floor_s"] = bench.median_wall([sys.executable, "-c", f"import asyncio, json, typer, {lib}"], 7)
        for n in sizes:
            row = bench.run_size(n)
            s = summarize(row)
            rows.append(s)
            ext[n] = extras(row)
            if args.json:
                print(json.dumps({**s, "stack_floor_s": mach.get("stack_floor_s"),
                                  "recheck_floor_s": ext[n]["recheck_floor"],
                                  "given_plan_one_change_s": ext[n]["given_plan"]}), flush=True)
            else:
                e = ext[n]
                log(f"N={n}: {json.dumps(s)} steal med {e['steal_med']:.0f}%")
        if SNAPSHOT is None and source_state() != mach["source"]:
            bench.note(f"sdqos source changed during the run: {mach['source']} -> {source_state()}")
        if not args.json:
            print_table(rows, ext, mach, args, bench.notes)
            for n, prof in bench.profiles.items():
                print_profile(n, prof)
        else:
            for name, val, ok in targets(rows, ext, mach.get("stack_floor_s")):
                log(f"target {verdict(ok)}: {name.strip()}: {val}")
            for n, prof in bench.profiles.items():
                print_profile(n, prof, out=sys.stderr)
        return 1 if bench.notes else 0
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        if args.keep:
            log(f"--keep: sandbox {args.name} ({sb.bus_address if sb else 'not up'}), {tmp}"
                f"{' and ' + SNAPSHOT if SNAPSHOT else ''} left in place; `sdqos sandbox down {args.name}` when done")
        else:
            try:
                sbx.down(args.name)
            except Exception as e:  # noqa: BLE001
                log(f"sandbox down failed: {e}")
            shutil.rmtree(tmp, ignore_errors=True)  # (the source snapshot goes at exit, see _snapshot_source)


if __name__ == "__main__":
    sys.exit(main())
