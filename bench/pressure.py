#!/usr/bin/env python3
"""How fast `sdqos pressure --evict` reacts to a crossed hard threshold, and what it costs idle.

    sudo .venv/bin/python bench/pressure.py [--tries 20] [--keep]

Boots a throw-away sandbox (sdqprs<pid>), syncs a config of two pods (a Guaranteed one that
sleeps, a BestEffort one that will hog) with `evictionHard: memory.available` set 120 MiB below
what is available once the sandbox has settled, and starts the watching loop with `--interval 300`
(so a reaction inside a try is the kernel waking it, not the interval). Each try starts the hog
(`sdqos run … python -c` allocating 300 MiB) and measures, from the loop's output:

  start → evicted   the hog's `sdqos run` started → the loop's "evicted" line (an upper bound: it
                    includes the interpreter start and the allocation)
  ready → evicted   the hog printed "ready" (its 300 MiB allocated: the threshold was crossed
                    before that) → the "evicted" line; a hog evicted while still allocating
                    never says "ready" (counted, not timed)

and prints median and max of each. Then the loop's idle cost: CPU (utime + stime of its process
over 30 s, as a percentage of one CPU) and RSS, at `--interval 10` and `--interval 1`, with the
same config. Yardstick in the same run: `sdqos run` of a hog that allocates nothing → its "ready"
(the interpreter start-up part of "start → evicted").
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdqos import sandbox as sbx  # noqa: E402

Mi = 2**20
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: b}}
spec:
  containers:
  - name: app
    {res}
"""
HOLD = "import sys, time; b = b'\\x01' * (int(sys.argv[1]) << 20); print('ready', flush=True); time.sleep(600)"


def sdqos(sb, *args: str) -> subprocess.CompletedProcess:
    return sbx.run(sb, [sys.executable, "-m", "sdqos", *args], timeout=120)


def line(p: subprocess.Popen, timeout: float = 60) -> tuple[str, float]:
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    if not ready:
        raise SystemExit(f"no output from {p.args[-4:]} within {timeout} s")
    text = p.stdout.readline().strip()
    return text, time.monotonic()


def inner_pid(p: subprocess.Popen) -> int:
    """The process nsenter started (nsenter forks for the PID namespace)."""
    for _ in range(50):
        for task in Path(f"/proc/{p.pid}/task").glob("*"):
            kids = (task / "children").read_text().split()
            if kids:
                return int(kids[0])
        time.sleep(0.1)
    raise SystemExit("nsenter started nothing")


def stop(p: subprocess.Popen) -> None:
    try:
        os.kill(inner_pid(p), signal.SIGTERM)
    except (OSError, SystemExit):
        p.kill()
    p.wait(timeout=30)


def hog(sb, cfg: str, mib: int) -> subprocess.Popen:
    return sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", cfg, "b/be", "app", "--",
                          sys.executable, "-c", HOLD, str(mib)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def available(sb, cfg: str) -> int:
    import json

    last = None
    while True:
        r = sdqos(sb, "pressure", "--once", "--config", cfg, "-o", "json")
        now = json.loads(r.stdout)["signals"][0]["available"]
        if last is not None and abs(now - last) < 8 * Mi:
            return now
        last = now
        time.sleep(1)


def idle_cost(sb, cfg: str, interval: str, seconds: float = 30) -> tuple[float, int]:
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "pressure", "--interval", interval, "--config", cfg],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line(p)
        line(p)
        pid = inner_pid(p)
        tick = os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / tick

        c0, t0 = cpu(), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu(), time.monotonic()
        rss = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS"))
        return 100 * (c1 - c0) / (t1 - t0), rss * 1024
    finally:
        stop(p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    name = f"sdqprs{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="sdqos-prbench-"))
    cfg = tmp / "cfg"
    (cfg / "pods").mkdir(parents=True)
    node = 'capacity: {cpu: "2", memory: 4Gi, pids: "100000"}\n'
    (cfg / "node.yaml").write_text(node)
    (cfg / "pods" / "b.yaml").write_text(POD.format(name="be", res="") + "---\n"
                                         + POD.format(name="guar", res="resources: {limits: {cpu: 100m, memory: 64Mi}}"))
    sb = sbx.up(name)
    procs: list[subprocess.Popen] = []
    try:
        assert sdqos(sb, "sync", "--config", str(cfg), "-q").returncode == 0
        yard = []
        for _ in range(5):
            t0 = time.monotonic()
            h = hog(sb, str(cfg), 0)
            _, t1 = line(h)
            yard.append(t1 - t0)
            stop(h)
        (cfg / "node.yaml").write_text(node + f"evictionHard: {{memory.available: {(available(sb, str(cfg)) - 120 * Mi) // Mi}Mi}}\n")
        loop = sbx.popen(sb, [sys.executable, "-m", "sdqos", "pressure", "--evict", "--interval", "300", "--config", str(cfg)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(loop)
        line(loop)
        line(loop)
        started, ready = [], []
        for _ in range(args.tries):
            time.sleep(2)  # the last eviction's memory back, the notifier re-armed
            t0 = time.monotonic()
            h = hog(sb, str(cfg), 300)
            procs.append(h)
            while True:
                text, t_evicted = line(loop)
                if text.startswith("evicted pod b/be"):
                    break
            started.append(t_evicted - t0)
            text, t_ready = line(h)  # "" (end of output): evicted before its allocation was done
            if text == "ready":
                ready.append(t_evicted - t_ready)
            h.wait(timeout=30)
        stop(loop)
        procs.clear()
        (cfg / "node.yaml").write_text(node)
        idle = {iv: idle_cost(sb, str(cfg), iv) for iv in ("10", "1")}
        print(f"sdqos pressure --evict --interval 300, cgroup {sb.cgroup_mode}, {args.tries} tries (seconds):")
        print(f"  start → evicted   median {statistics.median(started):.2f}  max {max(started):.2f}")
        if ready:
            print(f"  ready → evicted   median {statistics.median(ready):.2f}  max {max(ready):.2f}"
                  f"  ({len(ready)} tries; the other {args.tries - len(ready)} were evicted while still allocating)")
        else:
            print("  ready → evicted   every hog was evicted while still allocating its 300 MiB")
        print(f"  yardstick: `sdqos run` of a hog allocating nothing → ready, median {statistics.median(yard):.2f}")
        for iv, (cpu, rss) in idle.items():
            print(f"  idle at --interval {iv}: {cpu:.2f} % of one CPU, RSS {rss / Mi:.1f} MiB")
        return 0
    finally:
        for p in procs:
            stop(p)
        if not args.keep:
            sbx.down(name)
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
