"""`sdqos sync` with a stopwatch on every phase — run by sync_bench.py --profile, or by hand:

    SDQOS_BENCH_PHASES=/tmp/p.json SDQOS_RUN_DIR=/tmp/rd \\
        python bench/sync_phases.py sync --config DIR --bus-address ADDR -o json

It runs the real CLI (`sdqos.cli.app`) in this process after wrapping the functions each phase
consists of, so the code path is the one an operator runs; nothing in sdqos is changed. It writes
{"entry": time.time() at our first line, "end": time.time() before exit, "phases": {name: s}} to
$SDQOS_BENCH_PHASES; the caller adds interpreter start-up (spawn → entry) and exit (end → reaped).
Wrappers cost ~1 µs per call; the per-file ones are called ~3 times per pod file.
"""

import time

ENTRY = time.time()

import functools  # noqa: E402
import gc  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

_pc = time.perf_counter
SUB = "  of which: "  # phases nested in another one: shown, not added to the totals
phases: dict[str, float] = {}
hwm: dict[str, float] = {}  # peak RSS (VmHWM, MiB) of the process when each phase last ended


def _hwm_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for ln in fh:
                if ln.startswith("VmHWM:"):
                    return int(ln.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


PER_ITEM: set[str] = set()  # phases timed once per pod, file or unit (besides "config: " and SUB ones)


def _add(name: str, dt: float) -> None:
    phases[name] = phases.get(name, 0.0) + dt
    # not for per-file or per-unit phases: reading /proc/self/status ~1000-3000 times would cost
    # 0.05-0.2 s, charged to the phase around them (it once inflated the live read by the per-unit
    # kernel reads, and "config: other" by the per-pod plan decoding)
    if not name.startswith(("config: ", SUB)) and name not in PER_ITEM:
        hwm[name] = _hwm_mb()


def wrap(obj, attr: str, name: str) -> None:
    fn = getattr(obj, attr, None)
    if fn is None:  # not in this version of sdqos
        return
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def awrapped(*a, **kw):
            t = _pc()
            try:
                return await fn(*a, **kw)
            finally:
                _add(name, _pc() - t)
        setattr(obj, attr, awrapped)
    else:
        @functools.wraps(fn)
        def wrapped(*a, **kw):
            t = _pc()
            try:
                return fn(*a, **kw)
            finally:
                _add(name, _pc() - t)
        setattr(obj, attr, wrapped)


def main() -> int:
    t = _pc()
    import sdqos.cli.app  # what `sdqos` imports before it parses its arguments (typer and its click)
    _add("imports: sdqos.cli (typer, click)", _pc() - t)
    t = _pc()
    # what `sync` imports lazily: loading, planning, reconciling, D-Bus (asyncio, the D-Bus lib)
    import sdqos.host.rundir
    import sdqos.host.systemd
    import sdqos.loading.configdir
    import sdqos.loading.incremental
    import sdqos.plan.engine
    import sdqos.reconcile.sync
    sdqos.host.systemd._lib(sdqos.host.systemd.backend_name())
    _add("imports: sync modules (asyncio, D-Bus lib)", _pc() - t)

    import sdqos.loading.configdir as C
    import sdqos.loading.incremental as P
    import sdqos.reconcile.live as L
    import sdqos.reconcile.sync as S
    from sdqos.host import cgroupfs, rundir
    from sdqos.host.systemd import Systemd
    from sdqos.plan import engine

    wrap(P, "load_plan", "config total")  # split below; "config: other" = the rest
    PER_ITEM.update(("engine: plan pods (new or changed files)", "engine: decode reused pod plans"))
    wrap(engine, "plan_pod", "engine: plan pods (new or changed files)")
    wrap(P.pc, "pod_plan_from_json", "engine: decode reused pod plans")
    wrap(engine, "assemble", "engine: assemble (tiers, units)")
    wrap(C, "_checked", "config: check files (resolve, stat, mode)")
    wrap(C, "_read_text", "config: read files")
    pc = C.pc  # sdqos.loading.cache
    wrap(pc.ParseCache, "_load", "config: parse cache load/lookup/save")
    wrap(pc.ParseCache, "get", "config: parse cache load/lookup/save")
    wrap(pc.ParseCache, "lookup", "config: parse cache load/lookup/save")
    wrap(pc.ParseCache, "put", "config: parse cache load/lookup/save")
    wrap(pc.ParseCache, "save", "config: parse cache load/lookup/save")
    wrap(pc, "pod_from_json", "config: parse cache decode pods")
    wrap(pc, "pod_to_json", "config: parse cache encode pods")

    class TimeYamlImport(importlib.abc.MetaPathFinder):
        """Times the import of sdqos.kube.yamlsafe (and PyYAML with it) wherever it happens, and
        only when it happens: a warm sync must not pay it (PyYAML is imported on parse-cache misses only)."""

        def find_spec(self, name, path=None, target=None):
            if name != "sdqos.kube.yamlsafe":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module):
                t = _pc()
                run(module)
                _add("config: import PyYAML (parse-cache misses only)", _pc() - t)
                wrap(module, "load_documents", "config: YAML parse")
            spec.loader.exec_module = exec_module
            return spec
    if "sdqos.kube.yamlsafe" not in sys.modules:
        sys.meta_path.insert(0, TimeYamlImport())
    wrap(C, "parse_pod_documents", "config: validate manifests")
    wrap(C, "parse_node_config", "config: validate manifests")
    wrap(C, "check_duplicates", "config: validate manifests")
    wrap(engine, "build_plan", "engine: build_plan")
    wrap(rundir.SyncLock, "__enter__", "lock")
    wrap(Systemd, "connect", "D-Bus: connect+subscribe")
    wrap(Systemd, "version", "D-Bus: Manager.Version")
    wrap(L, "read_live", "read live state (D-Bus and/or kernel)")
    wrap(L, "_read_named", "read live state (D-Bus and/or kernel)")
    # sub-phases of the read ("  of which" lines, not added to the sum)
    wrap(cgroupfs, "read", SUB + "kernel cgroupfs reads")
    wrap(Systemd, "read_units", SUB + "D-Bus ListUnitsByPatterns + property reads")
    wrap(L, "discover_scopes", "D-Bus read: scopes (GetUnitProcesses)")
    wrap(L, "bind_scopes", "diff")
    wrap(S, "desired", "diff")
    wrap(S, "compute_diff", "diff")
    wrap(rundir, "load_applied", "diff")
    wrap(S, "apply", "apply: D-Bus writes")
    wrap(rundir, "save_applied", "save applied.json")
    wrap(S, "apply_oom_scores", "apply: OOM scores (/proc)")
    wrap(S, "kernel_refusals", "apply: kernel read-back")
    wrap(L, "read_marks", "D-Bus read: marks (Transient)")
    wrap(L, "podman_containers", "podman ps")  # (before the runtime table)
    wrap(L, "_machines", "D-Bus read: machined ListMachines")
    try:  # the runtime table's rows (sdqos/reconcile/runtimes/)
        import sdqos.host.libvirt as HL
        from sdqos.reconcile.runtimes import machined as RM, podman as RP
        wrap(RP.ROW, "ask", "podman ps")
        wrap(HL, "running_domains", "libvirt status records")
        wrap(RM, "_ask", "D-Bus read: machined ListMachines")
    except ImportError:
        pass
    wrap(L, "_usage_of", "D-Bus read: machine.slice usage")
    wrap(L, "machine_names", "diff")
    wrap(L, "check_kernel", "kernel: check bound scopes")
    wrap(S, "check_kernel", "kernel: check bound scopes")
    wrap(L, "machine_charges", "diff")
    wrap(L, "managed_podman_scopes", "diff")  # (before the runtime table)
    import sdqos.cli.metrics as M
    wrap(M, "record_sync", "save sync record (last-sync.json)")
    wrap(M, "load_sync_record", "save sync record (last-sync.json)")
    wrap(M, "last_machines", "save sync record (last-sync.json)")

    # as the console script's main() runs it: its GC thresholds (older sdqos: the default ones)
    cli = sys.modules["sdqos.cli.app"]  # the module (the typer app is its ``app``; before 2026-11 the package's)
    app = getattr(cli, "app", cli)
    gc.set_threshold(*getattr(cli, "GC_THRESHOLD", getattr(sdqos.cli, "GC_THRESHOLD", gc.get_threshold())))
    t = _pc()
    try:
        rc = app(sys.argv[1:], standalone_mode=False, prog_name="sdqos")
    except SystemExit as e:
        rc = e.code
    total = _pc() - t
    cfg_total = phases.pop("config total", 0.0)
    inside = ("config: ", "engine: ")  # what load_plan holds
    cfg_parts = sum(v for k, v in phases.items() if k.startswith(inside))
    phases["config: other (listdir, stat, detect)"] = max(0.0, cfg_total - cfg_parts)
    if "config total" in hwm:  # peak RSS once the whole config is loaded
        hwm["config: other (listdir, stat, detect)"] = hwm.pop("config total")
    accounted = sum(v for k, v in phases.items() if not k.startswith(("imports", SUB)))
    phases["cli: typer parse, asyncio, report JSON"] = max(0.0, total - accounted)
    sys.stdout.flush()
    with open(os.environ["SDQOS_BENCH_PHASES"], "w") as fh:
        json.dump({"entry": ENTRY, "end": time.time(), "phases": phases, "hwm_mb": hwm, "rc": rc}, fh)
    return int(rc or 0)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # and it leaves as main() does, without tearing the interpreter down (a sys.exit here charged
    # ~45 ms of freeing objects to "interpreter exit" at 1000 pods, which no sync pays)
    os._exit(code)
