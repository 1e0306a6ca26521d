#!/usr/bin/env python3
"""Micro-measurements behind the fixes sync_bench.py's profile points at (nothing in sdqos is
changed; each alternative is a few lines here so its gain can be measured before it is built).

    python bench/micro.py config [--n 1000]   file reading / YAML / validation alternatives
    python bench/micro.py imports             what `sdqos sync` pays for imports, per package
    python bench/micro.py read [--n 1000]     live-state read strategies against a fresh sandbox
    python bench/micro.py rss [--n 5000]      peak RSS after each phase of cold, warm, one-change, remove-10% syncs
    python bench/micro.py peak [--n 1000] [--trace]   each sync's peak RSS; --trace: what is alive at its peak

Each prints the median of --repeat runs (default 5) with the process CPU time next to the wall.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def timed(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def show(name: str, r: tuple[float, float], base: float | None = None) -> None:
    rel = f"  ({r[0] / base:.2f} x)" if base else ""
    print(f"  {name:<62} {r[0]:7.3f} s wall  {r[1]:7.3f} s cpu{rel}", flush=True)


# --- config -------------------------------------------------------------------------------------


def cmd_config(args: argparse.Namespace) -> None:
    import yaml

    from sdqos.loading import configdir as C
    from sdqos.kube.manifests import ParseResult, parse_pod_documents
    from sdqos.kube.yamlsafe import load_documents
    from workload import generate

    tmp = Path(tempfile.mkdtemp(prefix="sdqos-micro-"))
    generate(args.n, args.seed).write(tmp)
    files = sorted((tmp / "pods").iterdir())
    texts = [f.read_text() for f in files]
    real = tmp.resolve()
    print(f"{args.n} pod files, {sum(map(len, texts)) / len(texts):.0f} bytes each on average")

    def read_sdqos():
        for f in files:
            if hasattr(C, "_checked"):  # newer sdqos: checks and reading split
                r, _ = C._checked(tmp, real, f, False)
                C._read_text(tmp, f, r)
            else:
                C._read_text(tmp, real, f, False)

    def read_openat():  # one dir fd, openat(O_NOFOLLOW) + fstat + read: what _read_text checks, fewer syscalls
        dfd = os.open(tmp / "pods", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for f in files:
                fd = os.open(f.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
                try:
                    st = os.fstat(fd)
                    assert st.st_mode & 0o022 == 0 and st.st_size < C.MAX_FILE_BYTES
                    os.read(fd, st.st_size + 1).decode()
                finally:
                    os.close(fd)
        finally:
            os.close(dfd)

    base = timed(read_sdqos, args.repeat)
    show("read: sdqos.loading.configdir._read_text per file", base)
    show("read: openat(dir fd, O_NOFOLLOW) + fstat + read", timed(read_openat, args.repeat), base[0])

    def y_sdqos():
        for t in texts:
            load_documents(t)

    def y_plain():
        for t in texts:
            list(yaml.load_all(t, Loader=yaml.CSafeLoader))

    def y_sdqos_nogc():
        gc.disable()
        try:
            y_sdqos()
        finally:
            gc.enable()

    cache = json.dumps([list(yaml.load_all(t, Loader=yaml.CSafeLoader)) for t in texts])

    def y_cache():  # a parse cache: one JSON file of every file's documents (keyed by content hash)
        import hashlib
        for t in texts:
            hashlib.sha256(t.encode()).digest()
        json.loads(cache)

    base = timed(y_sdqos, args.repeat)
    show("YAML: sdqos.kube.yamlsafe.load_documents (compose, _measure, construct)", base)
    show("YAML: same with gc disabled", timed(y_sdqos_nogc, args.repeat), base[0])
    show("YAML: yaml.load_all(CSafeLoader), no _measure walk", timed(y_plain, args.repeat), base[0])
    show("YAML: cache hit: sha256 of every file + json.loads of all docs", timed(y_cache, args.repeat), base[0])

    docs = [load_documents(t) for t in texts]

    def validate():
        r = ParseResult()
        for f, d in zip(files, docs):
            parse_pod_documents(d, f"pods/{f.name}", r)

    show("validate: parse_pod_documents (all files)", timed(validate, args.repeat))

    def whole():
        C.load_config(tmp)

    def whole_nogc():
        gc.disable()
        try:
            C.load_config(tmp)
        finally:
            gc.enable()

    base = timed(whole, args.repeat)
    show("load_config total", base)
    show("load_config total, gc disabled", timed(whole_nogc, args.repeat), base[0])
    import inspect

    if "cache_dir" in inspect.signature(C.load_config).parameters:
        cache = tmp / "run"
        cache.mkdir(mode=0o755)
        C.load_config(tmp, cache_dir=cache)  # fill it
        show("load_config with a warm parse cache (sdqos.loading.cache)",
             timed(lambda: C.load_config(tmp, cache_dir=cache), args.repeat), base[0])
    cfg = C.load_config(tmp)
    from sdqos.plan.engine import build_plan

    show("engine: build_plan", timed(lambda: build_plan(cfg.node, cfg.pods, cfg.vms, "v1"), args.repeat))
    import shutil

    shutil.rmtree(tmp)


# --- imports ------------------------------------------------------------------------------------


def cmd_imports(args: argparse.Namespace) -> None:
    py = sys.executable
    stmts = {
        "python -c pass": "pass",
        "python -S -c pass (no site: no venv .pth files)": None,
        "import yaml": "import yaml",
        "import dbus_fast.aio": "import dbus_fast.aio",
        "import dbus_next.aio": "import dbus_next.aio",
        "import tenacity": "import tenacity",
        "import asyncio": "import asyncio",
        "import click (typer's vendored copy: typer._click)": "import typer._click",
        "import pydantic (typer >= 0.2x builds TypeAdapters at parse time)": "import pydantic; pydantic.TypeAdapter(int)",
        "import typer": "import typer",
        "import sdqos.sandbox": "import sdqos.sandbox",
        "import sdqos.cli.app": "import sdqos.cli.app",
        "import sdqos.cli.app + sync modules": "import sdqos.cli.app, sdqos.loading.incremental, sdqos.plan.engine, sdqos.reconcile.sync, sdqos.host.systemd, dbus_fast.aio",
        "sdqos --version (typer start-up, no work)": "import sys; sys.argv=['sdqos','--version']; import sdqos.cli.app; sdqos.cli.app.main()",
        "sdqos sync --help": "import sys; sys.argv=['sdqos','sync','--help']; import sdqos.cli.app; sdqos.cli.app.main()",
    }
    for name, stmt in stmts.items():
        cmd = [py, "-S", "-c", "pass"] if stmt is None else [py, "-c", stmt]

        def run():
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        show(name, timed(run, args.repeat))


# --- read strategies ----------------------------------------------------------------------------


async def _reads(address: str, names: list[str], props: list[str], window: int, repeat: int) -> None:
    from dbus_fast import BusType, Message
    from dbus_fast.aio import MessageBus

    from sdqos.host.systemd import MANAGER, MANAGER_PATH, SLICE, SYSTEMD, unit_path

    bus = await MessageBus(bus_address=address, bus_type=BusType.SYSTEM).connect()

    async def pipelined(msgs: list[Message]) -> int:
        it = iter(msgs)
        size = [0]

        async def worker():
            for m in it:
                r = await bus.call(m)
                assert r.message_type.name == "METHOD_RETURN", (m.member, r.body)
                size[0] += len(r.body[0]) if m.member == "GetAll" else 1
        await asyncio.gather(*(worker() for _ in range(window)))
        return size[0]

    def getall():
        return [Message(destination=SYSTEMD, path=unit_path(n), interface="org.freedesktop.DBus.Properties",
                        member="GetAll", signature="s", body=[SLICE]) for n in names]

    def gets():
        return [Message(destination=SYSTEMD, path=unit_path(n), interface="org.freedesktop.DBus.Properties",
                        member="Get", signature="ss", body=[SLICE, p]) for n in names for p in props]

    lst = Message(destination=SYSTEMD, path=MANAGER_PATH, interface=MANAGER, member="ListUnitsByPatterns",
                  signature="asas", body=[[], ["kubepods*.slice"]])
    for label, make in (("ListUnitsByPatterns only", None), (f"GetAll({SLICE.rsplit('.', 1)[1]}) per unit", getall),
                        (f"Get x{len(props)} per unit ({', '.join(props)})", gets)):
        walls, cpus, count = [], [], 0
        for _ in range(repeat):
            c, t = time.process_time(), time.perf_counter()
            if make is None:
                await bus.call(lst)
            else:
                count = await pipelined(make())
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        extra = f"  [{count / len(names):.0f} properties per GetAll reply]" if make is getall else ""
        show(f"{label}, window {window}", (statistics.median(walls), statistics.median(cpus)))
        if extra:
            print(extra)
    bus.disconnect()


@contextlib.contextmanager
def _sandbox_with(wl):
    """A fresh sandbox and a temp dir holding `wl` as cfg/ plus an empty run/; both removed after."""
    from sdqos import sandbox as sbx

    name = f"sdqmicro{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="sdqos-micro-"))
    try:
        sb = sbx.up(name)
        wl.write(tmp / "cfg")
        (tmp / "run").mkdir()
        yield sb, tmp
    finally:
        sbx.down(name)
        shutil.rmtree(tmp, ignore_errors=True)


def cmd_read(args: argparse.Namespace) -> None:
    from sdqos.loading.configdir import load_config
    from sdqos.plan.engine import build_plan
    from sdqos.plan.properties import owned
    from workload import generate

    with _sandbox_with(generate(args.n, args.seed)) as (sb, tmp):
        env = dict(os.environ, SDQOS_RUN_DIR=str(tmp / "run"))
        sdqos = str(Path(sys.executable).parent / "sdqos")
        subprocess.run([sdqos, "sync", "--config", str(tmp / "cfg"), "--bus-address", sb.bus_address, "-o", "json"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        cfg = load_config(tmp / "cfg")
        plan = build_plan(cfg.node, cfg.pods, cfg.vms, "v1")
        names = [u.name for u in plan.units if u.create]
        print(f"{len(names)} slices in sandbox {sb.name}; client CPU is this process, the rest is systemd + dbus-daemon")
        props = list(owned("v1"))
        t0 = (Path("/proc") / str(sb.pid) / "stat").read_text()
        asyncio.run(_reads(sb.bus_address, names, props, 32, args.repeat))
        t1 = (Path("/proc") / str(sb.pid) / "stat").read_text()
        tick = os.sysconf("SC_CLK_TCK")
        f0, f1 = t0.rsplit(")", 1)[1].split(), t1.rsplit(")", 1)[1].split()
        print(f"  systemd CPU over all of the above: {(int(f1[11]) + int(f1[12]) - int(f0[11]) - int(f0[12])) / tick:.2f} s")


def cmd_rss(args: argparse.Namespace) -> None:
    import random

    from sdqos import sandbox as sbx
    from workload import dump, generate, with_changed_limit

    wl = generate(args.n, args.seed)
    with _sandbox_with(wl) as (sb, tmp):
        target = wl.one_change_pod()
        doomed = random.Random(f"{args.seed}/rm/{args.n}").sample(sorted(p.name for p in wl.pods), args.n // 10)
        for kind in ("cold", "warm", "one_change", "remove10"):
            if kind == "one_change":
                (tmp / "cfg" / "pods" / target.name).write_text(dump(with_changed_limit(target.doc, 1)))
            if kind == "remove10":
                for f in doomed:
                    (tmp / "cfg" / "pods" / f).unlink()
            out = tmp / "phases.json"
            env = sbx.inner_env(dict(os.environ, SDQOS_RUN_DIR=str(tmp / "run"), SDQOS_BENCH_PHASES=str(out)))
            t = time.perf_counter()
            argv = [sys.executable, str(HERE / "sync_phases.py"), "sync", "--config", str(tmp / "cfg"), "-o", "json"]
            if args.where == "inside":  # as sync_bench.py's default: PID 1 is the sandbox's systemd
                cmd = sbx.nsenter_argv(sb, argv, cwd=str(tmp))
            else:
                cmd = argv + ["--bus-address", sb.bus_address]
            p = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            ph = json.loads(out.read_text())
            # VmHWM read by the sync itself (ru_maxrss of our child would include our own memory)
            print(f"{kind} sync of {args.n} pods: wall {time.perf_counter() - t:.2f} s, "
                  f"peak RSS {max(ph['hwm_mb'].values()):.1f} MB")
            for k, v in ph["phases"].items():
                h = ph["hwm_mb"].get(k)
                print(f"  {k:<48} {v:7.3f} s" + (f"   peak RSS after {h:6.1f} MB" if h else ""))


def cmd_peak(args: argparse.Namespace) -> None:
    """Peak RSS (VmHWM) of a cold sync, the first warm one (a full sync that writes the no-op
    stamp), the next warm one (the stamp's proof) and a one-change sync, each the real CLI run
    inside the sandbox; with --trace, what is alive at each one's traced peak, by call stack."""
    from sdqos import sandbox as sbx
    from workload import dump, generate, with_changed_limit

    wl = generate(args.n, args.seed)
    with _sandbox_with(wl) as (sb, tmp):
        target = wl.one_change_pod()
        for kind in ("cold", "warm (full, stamps)", "warm (proof)", "one change"):
            if kind == "one change":
                (tmp / "cfg" / "pods" / target.name).write_text(dump(with_changed_limit(target.doc, 1)))
            out = tmp / "peak.txt"
            env = sbx.inner_env(dict(os.environ, SDQOS_RUN_DIR=str(tmp / "run"), SDQOS_PEAK_OUT=str(out),
                                     SDQOS_PEAK_TRACE="1" if args.trace else "0"))
            argv = [sys.executable, str(HERE / "peak_sync.py"), "sync", "--config", str(tmp / "cfg"), "-o", "json"]
            subprocess.run(sbx.nsenter_argv(sb, argv, cwd=str(tmp)), env=env, cwd=tmp, stdout=subprocess.DEVNULL)
            print(f"{kind} sync of {args.n} pods: {out.read_text()}", end="", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["config", "imports", "read", "rss", "peak"])
    ap.add_argument("--n", type=int, default=None, help="pods (default 1000; rss: 5000)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--where", default="inside", choices=["inside", "host"], help="rss: where sync runs")
    ap.add_argument("--trace", action="store_true", help="peak: what is alive at each sync's traced peak")
    args = ap.parse_args()
    if args.n is None:
        args.n = 5000 if args.what == "rss" else 1000
    {"config": cmd_config, "imports": cmd_imports, "read": cmd_read, "rss": cmd_rss, "peak": cmd_peak}[args.what](args)


if __name__ == "__main__":
    main()
