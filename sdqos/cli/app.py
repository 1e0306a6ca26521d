"""The ``sdqos`` command line. Each command is a thin shell around a pure core: load config →
engine → (D-Bus) → render. Errors become one readable line on stderr and a documented exit code
(sdqos.errors.EXIT_CODES).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, List, Optional

import typer
import typer.main
from typer.core import TyperGroup

from sdqos import __version__
from sdqos.errors import EXIT_CODES_LINE, EXIT_ERROR, EXIT_INVALID, InvalidInput, SdqosError

if TYPE_CHECKING:  # imported where used: each command loads only what it needs
    from sdqos.plan.engine import Plan
    from sdqos.reconcile.report import Report
    from sdqos.reconcile.syncpass import Options, Shell

SANDBOX_HELP = "A private throwaway systemd (PID 1 of its own namespaces) to try sdqos in."


class _Commands(TyperGroup):
    """sdqos's command group, with `sandbox` loaded only when it is named or listed: importing
    sdqos.sandbox costs every other command ~19 M instructions (2 % of a warm sync)."""

    # ctx: click's Context, which typer 0.28 vendors (typer._click) and older typer imports from click
    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), "sandbox"]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name != "sandbox":
            return super().get_command(ctx, cmd_name)
        from sdqos import sandbox

        group = typer.main.get_group(sandbox.app)
        group.name, group.help, group.short_help = "sandbox", SANDBOX_HELP, None
        return group

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A mistyped command: the one it most likely meant, as sdqos hints a mistyped field
        (typer's own hint lists every name within reach: `stauts` got 'status', 'install-units')."""
        self.suggest_commands = False
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # click's UsageError (vendored by typer 0.28, click's own before)
            if not isinstance(getattr(exc, "message", None), str) or not args:
                raise
            from sdqos.kube.manifests import closest

            hint = closest(args[0], self.list_commands(ctx))
            if hint is not None:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {hint!r}?"  # type: ignore[attr-defined]
            raise


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)

app = typer.Typer(
    cls=_Commands,
    context_settings=HELP_OPTIONS,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish (typer's own)
    pretty_exceptions_enable=False,  # main() turns an unexpected exception into one line
    rich_markup_mode=None,
    help="Kubelet's QoS model (node allocatable → QoS tiers → pods → containers, plus VMs in "
    "machine.slice) enforced as systemd units over D-Bus.\n\n"
    + EXIT_CODES_LINE,
)

CONFIG_HELP = "Config directory: node.yaml, pods/*.yaml, vms/*.yaml."
ConfigOpt = typer.Option(Path("/etc/sdqos"), "--config", "-c", envvar="SDQOS_CONFIG", help=CONFIG_HELP)
InsecureOpt = typer.Option(False, "--insecure", help="Accept config files writable by non-root users.")


class Output(str, Enum):
    text = "text"
    json = "json"


class CgroupMode(str, Enum):
    auto = "auto"
    v1 = "v1"
    v2 = "v2"


CgroupOpt = typer.Option(CgroupMode.auto, "--cgroup", help="cgroup version of the host (auto: detect).")
IntervalOpt = typer.Option(1.0, "--interval", help="Seconds over which CPU usage is measured.")


BUS_HINT = ("is systemd PID 1 here, with the system bus up? `sdqos sandbox up` gives a private one to try "
            "sdqos in (then `sdqos sandbox exec -- sdqos ...`)")


def err(line: str) -> None:
    typer.echo(f"sdqos: {line}", err=True)


def warn(line: str) -> None:
    """A warning on stderr, with the prefix every warning has (in reports too): ``warning:``."""
    typer.echo(f"warning: {line}", err=True)


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn sdqos errors into one line on stderr and their exit code."""
    try:
        yield
    except SdqosError as exc:
        from sdqos.errors import BusUnavailable

        hint = f"; {BUS_HINT}" if isinstance(exc, BusUnavailable) else ""
        for e in getattr(exc, "errors", None) or [exc]:
            err(f"error: {e}{hint}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except OSError as exc:  # a host fault no layer turned into a typed error: still one line
        where = f"{exc.filename}: " if exc.filename else ""
        err(f"error: {where}{exc.strerror or exc}")
        raise typer.Exit(EXIT_ERROR) from None


# --- shell completion of names (kubectl completes resource names the same way) -------------------


def _completion_config(ctx: typer.Context):
    """The config named on the command line so far (or SDQOS_CONFIG, or /etc/sdqos), read as
    status reads it; None when it cannot be read (completion then offers nothing)."""
    try:
        config = Path(ctx.params.get("config") or os.environ.get("SDQOS_CONFIG") or "/etc/sdqos")
        return load_planned(config, insecure=True, cgroup=CgroupMode.auto)[0]  # only names are listed
    except (Exception, SystemExit):
        return None


def complete_pods(ctx: typer.Context, incomplete: str) -> list[str]:
    cfg = _completion_config(ctx)
    keys = sorted(p.key for p in cfg.pods) if cfg is not None else []
    return [k for k in keys if k.startswith(incomplete)]


def complete_containers(ctx: typer.Context, incomplete: str) -> list[str]:
    """The containers of the pod given before (run/adopt POD CONTAINER)."""
    cfg = _completion_config(ctx)
    pod = ctx.params.get("pod") or ""
    names = [c.name for p in (cfg.pods if cfg is not None else []) if pod in (p.key, p.name)
             for c in (*p.init_containers, *p.containers)]
    return [n for n in dict.fromkeys(names) if n.startswith(incomplete)]


def complete_vms(ctx: typer.Context, incomplete: str) -> list[str]:
    cfg = _completion_config(ctx)
    return [n for n in sorted(v.name for v in (cfg.vms if cfg is not None else [])) if n.startswith(incomplete)]


def load_planned(config: Path, insecure: bool, cgroup: CgroupMode | str, *, writes: bool = False, machines=None,
                 explain: bool = False, what_if=(), as_synced: bool = False):
    """(config, plan) through the one loading path, ``sdqos.loading.load.load`` (every command
    uses it; this only spells the --cgroup option as it wants it)."""
    from sdqos.loading.load import load

    mode = cgroup.value if isinstance(cgroup, CgroupMode) else cgroup
    return load(config, mode, insecure=insecure, writes=writes, machines=machines, explain=explain, what_if=what_if,
                as_synced=as_synced)


def run_async(coro: Any) -> Any:
    """``asyncio.run(coro)`` that never loses a Ctrl-C (:func:`sdqos.host.systemd.run`)."""
    from sdqos.host.systemd import run

    return run(coro)


def print_errors(errors: list[InvalidInput]) -> None:
    for e in errors:
        err(f"error: {e}")


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        typer.echo(f"sdqos {__version__}")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:  # bare `sdqos`: help, as git and podman do
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


@app.command()
def plan(
    config: Path = ConfigOpt,
    cgroup: CgroupMode = typer.Option(CgroupMode.auto, "--cgroup", help="Which cgroup version to plan for."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text (a tree) or json (a stable contract)."),
    insecure: bool = InsecureOpt,
    full: bool = typer.Option(False, "--full", "-l", help="Do not fit lines to the terminal."),
) -> None:
    """Show the unit tree with kubelet's values for every tier, pod, container and VM. No D-Bus."""
    from sdqos.cli.render import plan_json, plan_text

    with cli_errors():
        cfg, p = load_planned(config, insecure, cgroup, as_synced=True)
        errors = [str(e) for e in cfg.errors]
        p.warnings[:0] = [w for w in cfg.warnings if w not in p.warnings]  # the config's own (files not read)
        if output == Output.json:
            typer.echo(json.dumps(plan_json(p, errors), indent=2))
        else:
            tty = sys.stdout.isatty()
            import shutil

            typer.echo(plan_text(p, color=tty, width=shutil.get_terminal_size().columns if tty and not full else None))
        print_errors(cfg.errors)
        if cfg.errors:
            raise typer.Exit(EXIT_INVALID)


@app.command()
def explain(
    pod: Optional[str] = typer.Argument(None, autocompletion=complete_pods,
                                        help="A pod manifest file (what-if: added to the config), or "
                                                   "namespace/name of a configured pod."),
    vm: Optional[str] = typer.Option(None, "--vm", autocompletion=complete_vms,
                                     help="Explain this declared VM instead of a pod."),
    config: Path = ConfigOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    output: Output = typer.Option(Output.text, "--output", "-o", help="text, or json (values and their reasons)."),
) -> None:
    """Every value of one pod (or VM) with the formula and inputs that produced it, and a pod's
    place in the eviction order. Plans as sync does: with what the last sync counted in machine.slice."""
    from sdqos.plan.explain import explain_pod

    with cli_errors():
        if vm is not None or pod is None:
            _explain_vm(config, insecure, vm, pod, cgroup, output)
            return
        what_if = []
        path = Path(pod)
        if path.exists() or path.is_symlink():
            from sdqos.loading.load import what_if_pods

            what_if = what_if_pods(path, insecure, Path(config))
        cfg, p = load_planned(config, insecure, cgroup, explain=True, what_if=what_if, as_synced=True)
        if what_if:
            wanted = [new.key for new in what_if]
            if not all(p.pod(k) is not None for k in wanted):  # the file's pods are invalid (duplicates, values)
                print_errors([e for e in cfg.errors if str(path) in str(e)] or cfg.errors)
                raise typer.Exit(EXIT_INVALID)
        else:
            key = pod if "/" in pod else None
            matches = [pp.key for pp in p.pods if pp.key == pod or (key is None and pp.pod.name == pod)]
            if not matches:
                raise InvalidInput(f"no such file, and no configured pod named {pod!r}")
            wanted = matches[:1]
        live = {} if what_if else _live_containers(p, wanted)
        ranks = _eviction_ranks(p, wanted, measure=not what_if)
        clamps = _last_clamps(p)
        if output == Output.json:
            from sdqos.plan.explain import explain_json, machines_json, tiers_json

            typer.echo(json.dumps({"pods": [{**explain_json(pp, live.get(pp.key)), "tiers": tiers_json(p, pp, clamps),
                                             "eviction": ranks.get(pp.key)}
                                            for pp in p.pods if pp.key in wanted],
                                   "machines": machines_json(p), "warnings": list(p.warnings)}, indent=2))
            return
        texts = [explain_pod(p, pp, live.get(pp.key), ranks.get(pp.key), clamps) for pp in p.pods if pp.key in wanted]
        typer.echo("\n\n".join(texts))
        for w in p.warnings:
            warn(f"{w}")


def _last_clamps(p) -> dict[tuple[str, str], tuple[int, str]]:
    """The last sync's clamps (its record's adjustments) whose unit still plans the value it was
    clamped from: (unit, property) → (the value set, why), for explain to show what systemd holds."""
    from sdqos.cli.status import recorded_adjustments
    from sdqos.loading.cache import usable_run_dir
    from sdqos.loading.load import last_sync_record

    run_dir = usable_run_dir(create=False)
    out = {}
    for a in recorded_adjustments(last_sync_record(run_dir) if run_dir is not None else {}):
        u = p.unit(a.unit)
        if u is not None and u.properties.get(a.prop) == a.wanted:
            out[(a.unit, a.prop)] = (a.set, a.reason)
    return out


def _eviction_ranks(p, keys: list[str], measure: bool) -> dict[str, dict]:
    """pod → its place in the eviction orders, with the usage read from the kernel (read only);
    a what-if pod (``measure`` False) or unreadable usage: no rank, and why."""
    from sdqos.reconcile import evict

    pods = vms = None
    why = "a what-if pod does not run"
    if measure:
        try:
            _, pods, vms = evict.measure(p)
        except (OSError, SdqosError) as exc:
            why = f"{exc}"
    return {k: evict.rank_of(p, k, pods, vms, why) for k in keys}


def _live_containers(p, keys: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """pod → container → (the scope it runs in, what runs it), for the podman containers sdqos
    started (a podman that cannot be asked: a warning, the planned scopes are shown)."""
    from sdqos.reconcile import podman_pods

    out = {}
    for pp in p.pods:
        if pp.key in keys:
            try:
                out[pp.key] = podman_pods.live_scopes(pp)
            except SdqosError as exc:
                warn(f"cannot ask podman whether pod {pp.key}'s containers run: {exc}")
    return out


def _explain_vm(config: Path, insecure: bool, vm: str | None, pod: str | None, cgroup, output) -> None:
    from sdqos.kube.manifests import closest
    from sdqos.plan.explain import explain_vm, explain_vm_json, machines_json

    if vm is None or pod is not None:
        raise InvalidInput("give a pod (NS/NAME or a manifest file), or --vm NAME")
    _, p = load_planned(config, insecure, cgroup, explain=True, as_synced=True)
    vp = next((v for v in p.vms if v.vm.name == vm), None)
    if vp is None:
        hint = closest(vm, [v.vm.name for v in p.vms])
        raise InvalidInput(f"no VM {vm!r} in the config (vms/*.yaml)" + (f"; did you mean {hint!r}?" if hint else ""))
    if output == Output.json:
        typer.echo(json.dumps({"vms": [explain_vm_json(p, vp, _last_clamps(p))], "machines": machines_json(p),
                               "warnings": list(p.warnings)}, indent=2))
        return
    typer.echo(explain_vm(p, vp, _last_clamps(p)))
    for w in p.warnings:
        warn(f"{w}")


BusOpt = typer.Option(None, "--bus-address", envvar="DBUS_SYSTEM_BUS_ADDRESS",
                      help="D-Bus address of the system bus. Default: as root, systemd's private socket "
                           "/run/systemd/private (as systemctl; machined over the system bus), else the system bus "
                           "socket.")


@app.command()
def sync(
    config: Path = ConfigOpt,
    dry_run: bool = typer.Option(False, "--dry-run", help="Plan and diff against systemd; change nothing."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text, or json (a stable contract)."),
    bus_address: Optional[str] = BusOpt,
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Allow a config with no pods to remove every pod slice."),
    lock_timeout: float = typer.Option(60.0, "--lock-timeout", help="Seconds to wait for another sync to finish."),
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list units that were already right."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="For timers: print only changes, warnings when they appear or clear, and errors."),
    metrics_textfile: Optional[Path] = typer.Option(None, "--metrics-textfile",
                                                    help="After the sync, write Prometheus metrics here (atomically)."),
    max_removals: str = typer.Option("50%", "--max-removals", metavar="N|P%",
                                     help="Stop at most this many (or this share) of the pods that run processes."),
    recreate: list[str] = typer.Option([], "--recreate", metavar="NS/NAME", autocompletion=complete_pods,
                                       help="Move this pod to its new QoS class or uid even though its processes "
                                            "run (they are stopped). Repeatable."),
    adopt_existing: bool = typer.Option(False, "--adopt-existing",
                                        help="Take over planned units another manager created (e.g. kubelet's)."),
    settle: bool = typer.Option(False, "--settle",
                                help="Sync again (up to 5 times) while the config dir or libvirt's or machined's "
                                     "state changed during the sync: for the path unit."),
) -> None:
    """Reconcile systemd's units with the plan: create, update, restore drift, remove what left.

    Exit 0 when everything is in place; 1 when systemd refused something, a planned unit belongs to
    another manager, podman could not be asked which containers run (its containers are then left
    as they are), or removals were held back (--max-removals); 2 when some input was invalid or an
    edit was refused as Kubernetes refuses it (everything else was still synced); 3 when another
    sync held the lock; with --dry-run, 4 when changes are pending (0: none)."""
    from sdqos.reconcile import syncpass

    options = syncpass.Options(
        config=config, cgroup=cgroup.value, insecure=insecure, bus=bus_address, lock_timeout=lock_timeout,
        dry_run=dry_run, settle=settle, allow_empty=allow_empty, max_removals=max_removals, recreate=tuple(recreate),
        adopt_existing=adopt_existing, verbose=verbose, quiet=quiet, metrics_textfile=metrics_textfile)
    settle = settle and not dry_run
    documents: list[dict] | None = [] if settle and output == Output.json else None
    code = 0

    def one() -> bool:
        nonlocal code
        try:
            _sync_pass(options, output, documents)
            code = 0
        except typer.Exit as done:
            code = done.exit_code
        return code != EXIT_INTERRUPTED  # (Ctrl-C ends it: no further pass)

    syncpass.settle(options, one)
    if documents:  # stdout stays one JSON document: the last pass's report, the earlier ones inside it
        last = documents[-1]
        if len(documents) > 1:
            last["previousPasses"] = documents[:-1]
        typer.echo(json.dumps(last, indent=2))
    if settle:  # no interpreter teardown: a change in that window would be merged into this run and lost
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        raise typer.Exit(code)


def _shell(options: "Options", output: Output | None = None) -> "Shell":
    """What a sync pass needs from the layers above reconcile: the loading path, the status rows and
    metrics (sdqos.cli.status, sdqos.cli.metrics), a progress bar for text output."""
    from sdqos.reconcile.syncpass import Shell

    def load(mode: str, **kw: Any):
        return load_planned(options.config, options.insecure, mode, **kw)

    async def collect(sd, plan: "Plan", report: "Report"):
        from sdqos.cli import status as st
        from sdqos.host import rundir

        return await st.collect(sd, plan, rundir.load_applied(options.run_dir), interval=0,
                                last=st.budget_record(report))

    def export(path: Path, observed, rec: dict) -> None:
        from sdqos.cli import metrics as m
        from sdqos.reconcile.evict import load_counts

        m.write_atomic(path, m.render(observed, rec, load_counts(options.run_dir)))

    return Shell(load, collect, export,
                 progress=_progress_bar if output == Output.text else lambda: None)


def _sync_pass(options: "Options", output: Output, documents: list[dict] | None = None) -> None:
    """One sync, as `sdqos sync` prints and exits it; with ``documents``, its JSON report is
    appended there instead of printed (--settle prints one document for all its passes)."""
    from sdqos.reconcile.syncpass import SyncPass

    with cli_errors():
        out = SyncPass(options, _shell(options, output)).sync()
        report = out.report
        if output == Output.json and documents is not None:
            documents.append(report.as_json())
        elif output == Output.json:
            typer.echo(json.dumps(report.as_json(), indent=2))
        elif out.proven:  # sync_text's lines for a sync with nothing to do (render imports the plan's model)
            if not options.quiet:
                typer.echo(f"nothing to do: {len(report.unchanged)} units already match the plan\n"
                           f"({report.duration_s:.2f}s, {report.dbus_calls} D-Bus calls)")
        else:
            from sdqos.cli.render import sync_text
            from sdqos.reconcile.oomwatch import lines

            text = sync_text(report, out.plan, verbose=options.verbose, quiet=options.quiet, warnings=out.shown)
            text += "".join(f"\nchanged: {w}" for w in out.changed) + "".join(f"\ncleared: {w}" for w in out.cleared)
            text += "".join(f"\n{ln}" for ln in lines(report.oom_kills))  # one journal line per OOM kill
            if text.strip():
                typer.echo(text.strip("\n"))
        print_errors(out.config_errors)
        for e in out.refused + report.errors:
            err(f"error: {e}")
        raise typer.Exit(out.exit_code)


def _pass(config: Path, insecure: bool, cgroup: "CgroupMode | str", bus_address: Optional[str], **options: Any):
    """A sync pass (sdqos.reconcile.syncpass) with these options, for run, adopt, podman, pressure."""
    from sdqos.reconcile.syncpass import Options, SyncPass

    o = Options(config=config, cgroup=cgroup.value if isinstance(cgroup, CgroupMode) else cgroup, insecure=insecure,
                bus=bus_address, **options)
    return SyncPass(o, _shell(o))


@app.command("diff")
def diff(
    config: Path = ConfigOpt,
    output: Output = typer.Option(Output.text, "--output", "-o", help="text, or json (sync's contract)."),
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list units that are already right."),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="As sync's --allow-empty."),
    max_removals: str = typer.Option("50%", "--max-removals", metavar="N|P%", help="As sync's --max-removals."),
) -> None:
    """What sync would change, with the values new units would get (sync --dry-run).

    Exit 0 when nothing is pending, 4 when changes are pending, 1 or 2 as sync."""
    from sdqos.reconcile.syncpass import Options

    _sync_pass(Options(config=config, cgroup=cgroup.value, insecure=insecure, bus=bus_address, lock_timeout=0.0,
                       dry_run=True, allow_empty=allow_empty, max_removals=max_removals, verbose=verbose), output)


def _collect_status(config: Path, insecure: bool, cgroup: "CgroupMode", bus_address, interval: float):
    from sdqos.cli import status as st
    from sdqos.host import rundir
    from sdqos.host.systemd import Systemd

    cfg, p = load_planned(config, insecure, cgroup)

    async def go():
        async with Systemd(bus_address) as sd:
            from sdqos.cli.metrics import load_sync_record

            return await st.collect(sd, p, rundir.load_applied(rundir.DEFAULT_RUN_DIR), interval=interval,
                                    last=load_sync_record(rundir.DEFAULT_RUN_DIR))

    result = run_async(go())
    result.warnings[:0] = [f"{e}" for e in cfg.errors]
    return result


@contextlib.contextmanager
def _stopped_by_ctrl_c(expected: bool) -> Iterator[None]:
    """--watch runs until Ctrl-C: then that is how it ends (exit 0, as watch(1)), not an error."""
    try:
        yield
    except KeyboardInterrupt:
        if not expected:
            raise
        typer.echo("")


@app.command()
def status(
    config: Path = ConfigOpt,
    output: Output = typer.Option(Output.text, "--output", "-o", help="text (a table; plain when piped) or json."),
    watch: Optional[float] = typer.Option(None, "--watch", help="Refresh every SECONDS until interrupted."),
    interval: float = IntervalOpt,
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Only pods of this namespace."),
    pod: Optional[str] = typer.Option(None, "--pod", metavar="NAME|NS/NAME", help="Only this pod.",
                                      autocompletion=complete_pods),
    full: bool = typer.Option(False, "--full", "-l", help="Do not shorten unit names to fit the terminal."),
) -> None:
    """The live QoS tree: class, entitled CPU and memory, usage, OOM scores, and what is off
    (drift, over-commit, clamped limits, foreign units, VMs not running, usage near a limit).

    On a terminal, long unit names are shortened in the middle to fit (as systemctl does; --full
    keeps them); piped and in JSON they are whole."""
    import time

    from sdqos.cli import status as st

    with cli_errors(), _stopped_by_ctrl_c(watch is not None):
        tty = sys.stdout.isatty() and output == Output.text
        while True:
            collected = _collect_status(config, insecure, cgroup, bus_address, interval)
            result = st.only(collected, namespace, pod)
            if (namespace is not None or pod is not None) and not any(r.pod for r in result.rows):
                raise InvalidInput(st.not_found(collected, namespace, pod))  # as kubectl's NotFound
            if output == Output.json:
                typer.echo(json.dumps(result.as_json(), indent=2))
            else:
                import shutil

                if tty and watch:
                    typer.echo("\x1b[H\x1b[2J", nl=False)  # clear, as watch(1) does
                if watch:  # when and how often, as watch(1) heads its screen
                    typer.echo(f"every {watch:g}s: sdqos status · {time.strftime('%Y-%m-%d %H:%M:%S %Z')} "
                               f"· Ctrl-C stops\n")
                width = shutil.get_terminal_size().columns if tty and not full else None
                typer.echo(st.render_plain(result, width, color=tty))
            if not watch:
                return
            time.sleep(max(0.0, watch - interval))
            if not tty:
                typer.echo("")


@app.command()
def metrics(
    config: Path = ConfigOpt,
    textfile: Optional[Path] = typer.Option(None, "--textfile", help="Write here atomically (node_exporter textfile collector) instead of stdout."),
    interval: float = IntervalOpt,
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
) -> None:
    """Prometheus metrics: per unit (entitlement, usage, drift, class) and of the last sync."""
    from sdqos.cli import metrics as m
    from sdqos.host import rundir

    with cli_errors():
        result = _collect_status(config, insecure, cgroup, bus_address, interval)
        from sdqos.reconcile.evict import load_counts

        text = m.render(result, m.load_sync_record(rundir.DEFAULT_RUN_DIR), load_counts(rundir.DEFAULT_RUN_DIR))
        if textfile:
            m.write_atomic(textfile, text)
        else:
            typer.echo(text, nl=False)


@app.command()
def pressure(
    config: Path = ConfigOpt,
    once: bool = typer.Option(False, "--once", help="Look once: signals, thresholds, conditions, eviction order."),
    do_evict: bool = typer.Option(False, "--evict", help="Evict as kubelet's eviction manager does, one workload "
                                                         "per pass, and record it (with --once: only for a crossed "
                                                         "hard threshold)."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="With --once: text or json."),
    interval: float = typer.Option(10.0, "--interval", help="Without --once: seconds between passes when nothing "
                                                            "wakes it earlier (memcg notifications on cgroup v1, PSI "
                                                            "memory stalls, a signal crossing seen by a look "
                                                            "every 0.5 s)."),
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
) -> None:
    """Node pressure as kubelet's eviction manager sees it: memory.available,
    allocatableMemory.available and pid.available against node.yaml's eviction thresholds, the
    MemoryPressure/PIDPressure conditions, and the order pods and VMs would be evicted in.

    --once: one look (with --evict: stop at most one workload for a crossed hard threshold).
    Without --once it keeps watching, one line per condition change and per eviction; with
    --evict it evicts as kubelet does (soft thresholds after their grace period, one workload
    per pass, then it waits for it to be gone). docs/eviction.md."""
    from sdqos.reconcile import evict

    with cli_errors():
        sp = _pass(config, insecure, cgroup, bus_address, evict=do_evict, interval=interval)
        if not once:
            if interval <= 0:
                raise InvalidInput(f"--interval must be positive, not {interval}")

            def say(line: str) -> None:
                typer.echo(line)
                sys.stdout.flush()

            say(f"watching node pressure every {interval:g}s" + (", evicting" if do_evict else ", not evicting"))
            sp.watch(say)
            return
        cfg, p = sp.load(as_synced=True)
        print_errors(cfg.errors)  # the valid rest is assessed (and evicted from), as sync syncs it
        a, record = sp.look(p, lambda line: err(line))
        if output == Output.json:
            typer.echo(json.dumps({**evict.as_json(a), "evicted": record}, indent=2))
        else:
            typer.echo(evict.render_text(a))
            if record:
                typer.echo(evict.eviction_line(record))
        if cfg.errors:
            raise typer.Exit(EXIT_INVALID)


@app.command()
def run(
    pod: Optional[str] = typer.Argument(None, help="namespace/name (or name) of the pod; omit with --vm.",
                                        autocompletion=complete_pods),
    container: Optional[str] = typer.Argument(None, help="Container name in that pod.",
                                              autocompletion=complete_containers),
    command: Optional[List[str]] = typer.Argument(None, help="The command and its arguments, after --."),
    vm: Optional[str] = typer.Option(None, "--vm", help="Run a hypervisor process as this declared VM instead.",
                                     autocompletion=complete_vms),
    config: Path = ConfigOpt,
    replace: bool = typer.Option(False, "--replace", help="Stop a running instance of the container first."),
    force: bool = typer.Option(False, "--force", help="With --vm: start it even if libvirt or machined run a VM of "
                                                      "that name."),
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    lock_timeout: float = typer.Option(60.0, "--lock-timeout", help="Seconds to wait for a running sync to finish."),
) -> None:
    """Run COMMAND in a container's scope (pod slice, QoS values, OOM score), like systemd-run --scope.

    sdqos run shop/web nginx -- nginx -g 'daemon off;'\n
    sdqos run --vm vm1 -- qemu-system-x86_64 ...

    sdqos's options go before --, everything after it is the command's. The command replaces
    sdqos (exec): its exit status and signals are its own."""
    from sdqos.reconcile.syncpass import WorkloadRef

    with cli_errors():
        command = list(command or [])
        if vm is not None:
            command = [x for x in (pod, container) if x is not None] + command
        elif pod is None or container is None:
            raise InvalidInput("give POD and CONTAINER (or --vm NAME) before -- COMMAND")
        if not command:
            raise InvalidInput("no command to run (put it after --)")
        ref = WorkloadRef(vm=vm) if vm is not None else WorkloadRef(pod, container)
        done = _pass(config, insecure, cgroup, bus_address, lock_timeout=lock_timeout, replace=replace,
                     force=force).run(ref, command)
        for w in done.warnings:
            warn(f"{w}")
        if done.cpus is not None:  # cgroup v1 holds no cpuset: the CPUs are the process's affinity, inherited at exec
            os.sched_setaffinity(0, done.cpus)
        if vm is None:  # a pod's container: its own /dev/shm, as kubelet's runtime gives a pod
            from sdqos.host.mountns import private_shm

            private_shm()
        sys.stdout.flush()
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            err(f"error: cannot run {command[0]!r}: {exc.strerror}")
            raise typer.Exit(127 if exc.errno == 2 else 126) from None


@app.command()
def adopt(
    pod: Optional[str] = typer.Argument(None, help="namespace/name (or name) of the pod; omit with --vm.",
                                        autocompletion=complete_pods),
    container: Optional[str] = typer.Argument(None, help="Container name in that pod.",
                                              autocompletion=complete_containers),
    pids: Optional[List[int]] = typer.Argument(None, help="PIDs to move (their children come along)."),
    vm: Optional[str] = typer.Option(None, "--vm", help="Adopt a running hypervisor as this declared VM.",
                                     autocompletion=complete_vms),
    children: bool = typer.Option(True, "--children/--no-children", help="Also move the processes' descendants."),
    force: bool = typer.Option(False, "--force", help="Take processes another manager owns (a service, podman, "
                                                      "libvirt...) or a VM libvirt runs; never PID 1's own."),
    config: Path = ConfigOpt,
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
) -> None:
    """Move running processes (started by anything) into a container's or VM's scope."""
    from sdqos.host import procfs
    from sdqos.reconcile.syncpass import WorkloadRef

    with cli_errors():
        if vm is not None:
            try:
                pids = [int(x) for x in (pod, container) if x is not None] + list(pids or [])
            except ValueError:
                raise InvalidInput("with --vm NAME, give only PIDs") from None
        elif pod is None or container is None:
            raise InvalidInput("give POD CONTAINER PID... (or --vm NAME PID...)")
        if not pids:
            raise InvalidInput("no PID to adopt")
        missing = [p for p in pids if not procfs.pid_exists(p)]
        if missing:
            raise InvalidInput(f"no such process: {', '.join(map(str, missing))}")
        ref = WorkloadRef(vm=vm) if vm is not None else WorkloadRef(pod, container)
        done = _pass(config, insecure, cgroup, bus_address, force=force).adopt(ref, list(pids), children)
        for w in done.warnings:
            warn(f"{w}")
        typer.echo(f"{done.how} {done.target.unit.name} with {len(done.pids)} process(es) of {done.target.label}")


podman_app = typer.Typer(
    help="Run a configured pod's containers with podman, with kubelet's values (as kubelet drives its runtime).",
    no_args_is_help=True, context_settings=HELP_OPTIONS, rich_markup_mode=None)
app.add_typer(podman_app, name="podman")


def _run_spec(config: Path, insecure: bool, pp):
    """The pod's run spec (images, commands, env) from the manifest document it came from."""
    from sdqos.host import lsm
    from sdqos.kube.runspec import run_spec
    from sdqos.loading.configdir import parse_documents, read_checked_file

    src = pp.pod.source
    path = config / src.file
    docs = parse_documents(read_checked_file(path, insecure), src.file)
    ns, name = pp.key.split("/", 1)
    raw = docs[src.index] if src.index < len(docs) else None
    candidates = raw.get("items", []) if isinstance(raw, dict) and raw.get("kind") in ("List", "PodList") else [raw]
    for doc in candidates:
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "default") == ns:
            return run_spec(doc, str(src), lsm.host_security())
    raise InvalidInput(f"pod {pp.key} is no longer in {src.file}; run sync", where=str(src))


@podman_app.command("start")
def podman_start(
    pod: str = typer.Argument(..., metavar="NS/NAME", help="A configured pod.", autocompletion=complete_pods),
    config: Path = ConfigOpt,
    replace: bool = typer.Option(False, "--replace", help="Stop and remove the pod's podman containers first."),
    bus_address: Optional[str] = BusOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
    lock_timeout: float = typer.Option(60.0, "--lock-timeout", help="Seconds to wait for a running sync to finish."),
) -> None:
    """Start the pod's containers (those with an image) with podman, in its slice, each with kubelet's
    values: init containers in order to completion, sidecars kept running, then the app containers.
    Named <namespace>_<pod>_<container>; podman's --restart follows the pod's restartPolicy."""
    import signal

    def interrupted(*_):  # systemd stopping us, or kill: the pod's containers are stopped as on Ctrl-C
        raise KeyboardInterrupt

    with cli_errors():
        signal.signal(signal.SIGTERM, interrupted)
        sp = _pass(config, insecure, cgroup, bus_address, lock_timeout=lock_timeout, replace=replace)
        report = sp.podman_start(pod, lambda pp: _run_spec(config, insecure, pp), typer.echo)
    for e in report.errors if report is not None else []:
        err(f"error: {e}")
    if report is not None and report.errors:  # (a narrow pass: invalid input elsewhere in the config is the next sync's)
        raise typer.Exit(report.exit_code)


@podman_app.command("stop")
def podman_stop(
    pod: str = typer.Argument(..., metavar="NS/NAME", help="A configured pod.", autocompletion=complete_pods),
    config: Path = ConfigOpt,
    cgroup: CgroupMode = CgroupOpt,
    insecure: bool = InsecureOpt,
) -> None:
    """Stop and remove the pod's podman containers (SIGTERM, then SIGKILL after its
    terminationGracePeriodSeconds)."""
    from sdqos.reconcile import launch, podman_pods

    with cli_errors():
        _, p = load_planned(config, insecure, cgroup)
        pp = launch.find_pod(p, pod)
        lines = podman_pods.stop(pp)
        for line in lines or [f"pod {pp.key} has no podman containers"]:
            typer.echo(line)


@app.command("man")
def man() -> None:
    """Print sdqos's man page (roff), generated from this help: sdqos man > /usr/local/share/man/man1/sdqos.1"""
    from sdqos.cli import manpage

    typer.echo(manpage.render(typer.main.get_group(app), __version__), nl=False)


@app.command("install-units")
def install_units(
    directory: Path = typer.Option(Path("/etc/systemd/system"), "--dir", help="Where to write the unit files."),
    config: Path = typer.Option(Path("/etc/sdqos"), "--config", "-c", help="Config directory the timer syncs."),
    binary: Optional[Path] = typer.Option(None, "--sdqos", help="Absolute path of sdqos (default: this one)."),
    now: bool = typer.Option(False, "--now", help="Also enable and start the timer, the path unit and the "
                                                  "pressure service and daemon-reload (over D-Bus), as "
                                                  "systemctl enable --now."),
    metrics_textfile: Optional[Path] = typer.Option(None, "--metrics-textfile", metavar="FILE",
                                                    help="Each sync of the service writes its metrics to FILE "
                                                         "(node_exporter's textfile collector)."),
    bus_address: Optional[str] = BusOpt,
) -> None:
    """Install sdqos-sync.service, sdqos-sync.timer (sync at boot and every 30 s) and sdqos-sync.path
    (sync within a second when the config changes or a VM starts), and sdqos-pressure.service (sdqos
    pressure --evict: kubelet's node-pressure eviction, always running). The services read podman's
    settings (SDQOS_PODMAN, CONTAINERS_CONF, CONTAINERS_STORAGE_CONF) from CONFIG/environment."""
    import os

    from sdqos.errors import HostError
    from sdqos.host import unitfiles

    with cli_errors():
        command = [str(binary)] if binary else unitfiles.default_command()
        try:
            textfile = os.path.abspath(metrics_textfile) if metrics_textfile is not None else None
            files = unitfiles.render(command, os.path.abspath(config), textfile)
        except ValueError as exc:
            raise InvalidInput(str(exc), where="--sdqos/--config/--metrics-textfile") from None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                tmp = directory / f".{name}.tmp"
                tmp.write_text(text)
                os.chmod(tmp, 0o644)
                os.replace(tmp, directory / name)
        except OSError as exc:
            raise HostError(f"cannot write unit files to {directory}: {exc.strerror or exc}") from None
        for name in files:
            typer.echo(f"wrote {directory / name}")
        envfile = os.path.join(os.path.abspath(config), unitfiles.ENVIRONMENT)
        shell = [v for v in unitfiles.PODMAN_SETTINGS if os.environ.get(v)]
        if shell and not os.path.exists(envfile):
            warn(f"{', '.join(shell)} set here but not for the service: put {'it' if len(shell) == 1 else 'them'} "
                 f"in {envfile} (VAR=value lines)")
        if not now:
            typer.echo("next: systemctl daemon-reload && systemctl enable --now sdqos-sync.timer sdqos-sync.path "
                       "sdqos-pressure.service")
            return

        async def activate() -> None:
            from sdqos.host.systemd import MANAGER, MANAGER_PATH, Systemd

            async with Systemd(bus_address) as sd:
                paths = (await sd.get_properties(MANAGER_PATH, MANAGER, ["UnitPath"]))["UnitPath"]
                if not any(os.path.realpath(directory) == os.path.realpath(d) for d in paths):
                    raise HostError(f"{directory} is not on systemd's unit search path, so systemd cannot start "
                                    f"{unitfiles.TIMER} from there; use --dir with one of: {', '.join(paths)}")
                await sd.reload()
                for unit in (unitfiles.TIMER, unitfiles.PATH, unitfiles.PRESSURE):
                    try:
                        await sd.enable_unit_files([unit])
                    except SdqosError as exc:  # e.g. no timers.target in a minimal system
                        warn(f"could not enable {unit}: {exc}")
                await sd.reload()  # as systemctl enable: no unit left "changed on disk" (NeedDaemonReload)
                for unit in (unitfiles.TIMER, unitfiles.PATH, unitfiles.PRESSURE):
                    await sd.start_unit(unit)

        run_async(activate())
        typer.echo(f"started {unitfiles.TIMER}, {unitfiles.PATH} and {unitfiles.PRESSURE}")


def _progress_bar():
    """A progress callback drawing a bar on a terminal for long runs (nothing when piped)."""
    if not sys.stderr.isatty():
        return None
    from rich.progress import Progress

    state = {}

    def cb(done: int, total: int) -> None:
        if total < 50:
            return
        if "bar" not in state:
            state["bar"] = Progress(transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task("sync", total=total)
        state["bar"].update(state["task"], completed=done)
        if done >= total:
            state["bar"].stop()

    return cb


GC_THRESHOLD = (20_000, 50, 100)  # a short-lived process building ~10 objects per pod: collect seldom


def for_args(args: list[str]) -> typer.Typer:
    """``app`` with only the command (or command group) that ``args`` start with: typer builds the
    options of every registered command before it parses a word, ~15 ms here, a twentieth of a
    sync with nothing to do. The whole ``app`` for anything else (help, --version, shell
    completion, a mistyped name, ``sandbox``), so what a user sees does not change."""
    if not args or args[0].startswith("-") or "_SDQOS_COMPLETE" in os.environ:  # (click's completion)
        return app
    one = copy.copy(app)
    for info in app.registered_commands:
        if info.callback is not None and (info.name or typer.main.get_command_name(info.callback.__name__)) == args[0]:
            one.registered_commands, one.registered_groups = [info], []
            return one
    for group in app.registered_groups:
        if group.name == args[0]:
            one.registered_commands, one.registered_groups = [], [group]
            return one
    return app


def main() -> None:
    """The console script. Exits without tearing the interpreter down: at thousands of pods,
    freeing every object one by one costs more than the work itself took on a warm sync."""
    import gc
    import logging
    import os

    gc.set_threshold(*GC_THRESHOLD)
    code: int | str | None  # SystemExit's: None, a number, or a message (exit 1)
    try:
        for_args(sys.argv[1:])(prog_name="sdqos")  # also as `python -m sdqos`: help, completion and man say sdqos
        code = 0
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # Ctrl-C outside a command's own handling (starting up, parsing)
        print("sdqos: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except Exception as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # a Ctrl-C while a module made a class: Python
            print("sdqos: interrupted", file=sys.stderr)  # 3.11 wraps it ("Error calling __set_name__")
            code = EXIT_INTERRUPTED
        else:  # a bug: one line, the traceback only when asked for
            if os.environ.get("SDQOS_DEBUG") == "1":
                import traceback

                traceback.print_exc()
            print(f"sdqos: internal error: {type(exc).__name__}: {exc} (SDQOS_DEBUG=1 shows where)", file=sys.stderr)
            code = EXIT_ERROR
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 1
    os._exit(code)
