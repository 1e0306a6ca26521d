#!/usr/bin/env python3
"""How fast `sdqos pressure --evict` reacts to a crossed hard threshold, and what it costs idle.

    sudo .venv/bin/python bench/pressure.py [--tries 20] [--keep]

Boots a throw-away sandbox (sdqprs<pid>), syncs a config of two pods (a Guaranteed one that
sleeps, a BestEffort one that will hog) with `evictionHard: memory.available` set 120 MiB below
what is available once the sandbox has settled, and starts the watching loop with `--interval 300`
(so a reaction inside a try is the kernel waking it, not the interval). Each try starts the hog
(`sdqos run … python -c` allocating 300 MiB) and measures:

  crossed → stopped the sandbox's memory.available (read here every 10 ms, as sdqos computes it)
                    below the threshold → the hog's process gone: the reaction time
  start → gone      the hog's `sdqos run` started → its process gone (an upper bound: it
                    includes the interpreter start and the allocation)

and prints median and max of each, and how many hogs were evicted before they had allocated all
(never said "ready"). Then the loop's idle cost: CPU (utime + stime of its process
over 30 s, as a percentage of one CPU) and RSS, at `--interval 10` and `--interval 1`, with the
same config. Yardstick in the same run: `sdqos run` of a hog that allocates nothing → its "ready"
(the interpreter start-up part of "start → gone").
"""

from __future__ import annotations

import argparse
import json
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


_pending: dict[int, bytes] = {}


def line(p: subprocess.Popen, timeout: float = 60) -> tuple[str, float]:
    """The next line of ``p``'s output ("" at its end) and when it was read; read from the pipe
    itself, so lines that arrived together are not hidden in a buffer select(2) cannot see."""
    fd = p.stdout.fileno()
    deadline = time.monotonic() + timeout
    while b"\n" not in _pending.get(fd, b""):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise SystemExit(f"no output from {p.args[-4:]} within {timeout} s")
        chunk = os.read(fd, 65536)
        if not chunk:
            text, _pending[fd] = _pending.pop(fd, b""), b""
            return text.decode().strip(), time.monotonic()
        _pending[fd] = _pending.get(fd, b"") + chunk
    text, _, _pending[fd] = _pending[fd].partition(b"\n")
    return text.decode().strip(), time.monotonic()


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


def working_set(root: Path) -> int:
    """The sandbox's root memory cgroup's working set (cgroup v1), as sdqos/host/pressure.py reads it."""
    usage = int((root / "memory.usage_in_bytes").read_text())
    stat = dict(ln.split() for ln in (root / "memory.stat").read_text().splitlines())
    return max(0, usage - int(stat.get("total_inactive_file", 0)))


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


def print_trace(trace: Path, tries: list[tuple[float, float, float]]) -> None:
    """Each try's steps of the loop between the crossing and the hog gone, relative to the crossing."""
    steps = [(name, float(a), float(b)) for name, a, b in (ln.split() for ln in trace.read_text().splitlines())]
    for i, (crossed, begun, gone) in enumerate(tries, 1):
        mine = [f"{n} {a - crossed:+.3f}..{b - crossed:+.3f}" for n, a, b in steps if crossed - 1 <= b and a <= gone]
        print(f"  try {i:2}: begun {begun - crossed:+.3f} gone {gone - crossed:+.3f}: " + "; ".join(mine))


def main_v2(tries: int, suite: str = "trixie") -> int:
    """The same tries in the cgroup v2 guest of tests/v2 (qemu TCG, 1 vCPU, 2 GiB), against the
    installed sdqos-pressure.service; the guest times it all on its own clock (_pressure_guest.py)."""
    import shutil

    sys.path.insert(0, str(ROOT))
    from tests.v2 import guest as gst

    gst.BOOT_TIMEOUT = 900  # a shared, loaded host: TCG boots slowly

    share = Path(tempfile.mkdtemp(prefix="sdqos-prbench-v2-"))
    try:
        gst.sdqos_wheel(share)
        shutil.copy(ROOT / "bench" / "_pressure_guest.py", share)
        t0 = time.monotonic()
        g = gst.Guest.boot(suite, share=share)
        try:
            g.check("pip install -q --no-index --no-deps /share/sdqos-*.whl", timeout=300)
            booted = time.monotonic() - t0
            out = json.loads(g.check(f"python3 /share/_pressure_guest.py {tries}", timeout=3600).splitlines()[-1])
        finally:
            g.close()
    finally:
        shutil.rmtree(share, ignore_errors=True)
    seen = [t for t in out["tries"] if t["crossed"] is not None]
    begun = [t["begun"] - t["crossed"] for t in seen]
    gone = [t["gone"] - t["crossed"] for t in seen]
    started = [t["gone"] - t["start"] for t in out["tries"]]
    idle = out["idle"]
    print(f"sdqos-pressure.service (installed, --interval 10) in the {suite} guest, cgroup v2, 1 vCPU under TCG, "
          f"{tries} tries (seconds), host load average {os.getloadavg()[0]:.1f}, guest's {' '.join(out['loadavg'])}; "
          f"guest up and sdqos installed in {booted:.0f} s:")
    if seen:
        print(f"  crossed → begun   p50 {statistics.median(begun):.2f}  max {max(begun):.2f}  ({len(seen)} tries: "
              "memory.available below the threshold → the service sent the first stop, its record's begunMonotonic)")
        print(f"  crossed → gone    p50 {statistics.median(gone):.2f}  max {max(gone):.2f}  (→ the hog's process gone)")
    print(f"  start → gone      median {statistics.median(started):.2f}  max {max(started):.2f}")
    print(f"  per try (begun, gone): " + ", ".join(f"{b:.2f}/{g:.2f}" for b, g in zip(begun, gone)))
    print(f"  idle at --interval {idle['interval']}: {idle['cpu_percent']:.2f} % of the guest's CPU, "
          f"RSS {idle['rss'] / Mi:.1f} MiB, MemoryCurrent {idle['memory_current'] / Mi:.1f} MiB")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--trace", action="store_true", help="time the loop's steps (bench/_pressure_trace.py) and "
                                                         "print them for every try")
    ap.add_argument("--v2", action="store_true", help="run the tries in the cgroup v2 guest of tests/v2 (Debian 13, "
                                                      "qemu TCG: minutes) against the installed service")
    args = ap.parse_args()
    if args.v2:
        return main_v2(args.tries)
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
        capacity = 4 * 2**30
        used = capacity - available(sb, str(cfg))
        (cfg / "node.yaml").write_text(node + f"evictionHard: {{memory.available: {(capacity - used - 120 * Mi) // Mi}Mi}}\n")
        trace = tmp / "trace"
        runner = [str(ROOT / "bench" / "_pressure_trace.py")] if args.trace else ["-m", "sdqos"]
        loop = sbx.popen(sb, [sys.executable, *runner, "pressure", "--evict", "--interval", "300", "--config", str(cfg)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sbx.inner_env({**os.environ, "SDQOS_BENCH_TRACE": str(trace), "PYTHONPATH": str(ROOT)}))
        procs.append(loop)
        line(loop)
        line(loop)
        started, reaction, begun, ready, tries = [], [], [], 0, []
        threshold = capacity - 120 * Mi - used
        root = sb.cgroup_path("memory")
        for _ in range(args.tries):
            time.sleep(2)  # the last eviction's memory back, the notifier re-armed
            t0 = time.monotonic()
            h = hog(sb, str(cfg), 300)
            procs.append(h)
            crossed = gone = None
            while gone is None:  # the sandbox's memory.available as sdqos computes it, every 10 ms
                now = time.monotonic()
                if crossed is None and capacity - working_set(root) < threshold:
                    crossed = now
                if h.poll() is not None:
                    gone = now
                assert now - t0 < 120, "the hog was not evicted within 120 s"
                time.sleep(0.01)
            while not line(loop)[0].startswith("evicted pod b/be"):
                pass
            record = json.loads((sb.run_dir / "sdqos" / "evicted.json").read_text())["evicted"]["pod:b/be"]
            started.append(gone - t0)
            if crossed is not None:
                reaction.append(gone - crossed)
                begun.append(record["begunMonotonic"] - crossed)
                tries.append((crossed, record["begunMonotonic"], gone))
            if line(h)[0] == "ready":  # "" (end of output): evicted before its allocation was done
                ready += 1
            h.wait(timeout=30)
        stop(loop)
        procs.clear()
        (cfg / "node.yaml").write_text(node)
        idle = {iv: idle_cost(sb, str(cfg), iv) for iv in ("10", "1")}
        print(f"sdqos pressure --evict --interval 300, cgroup {sb.cgroup_mode}, {args.tries} tries (seconds), "
              f"load average {os.getloadavg()[0]:.1f} at the end:")
        if reaction:
            print(f"  crossed → begun   p50 {statistics.median(begun):.2f}  max {max(begun):.2f}"
                  f"  ({len(begun)} tries: memory.available below the threshold → sdqos sent the first stop,"
                  " its record's begunMonotonic)")
            print(f"  crossed → gone    p50 {statistics.median(reaction):.2f}  max {max(reaction):.2f}"
                  f"  (→ the hog's process gone)")
        if args.trace:
            print_trace(trace, tries)
        print(f"  start → gone      median {statistics.median(started):.2f}  max {max(started):.2f}")
        print(f"  {args.tries - ready} of {args.tries} hogs were evicted while still allocating their 300 MiB")
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
