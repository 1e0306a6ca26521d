"""One owner for a sync's life: the sync pass.

A :class:`SyncPass` is handed one record of options (:class:`Options`: what the command line
asked) and what it needs from the layers above reconcile, which reconcile may not import
(:class:`Shell`: the one loading path, the status rows and metrics), as kubelet hands one
config to each of its managers. It sequences every pass that changes systemd's units:

- ``sdqos sync`` (:meth:`SyncPass.sync`): the bus probed on a host with no run dir yet, the sync
  lock, the no-op proof (:mod:`sdqos.reconcile.noop`: a warm sync with nothing to do ends there,
  recorded), the prefetch child checking the kernel (:mod:`sdqos.reconcile.prefetch`) while the
  plan loads, systemd's version checked against the cgroup version, the sync
  (:func:`sdqos.reconcile.sync.sync`), then, the lock released, the record (last-sync.json, the
  metrics textfile) and the stamp for the next sync's proof. ``--dry-run`` (``sdqos diff``) takes
  no lock, tries no proof, records and stamps nothing; ``--settle`` is :func:`settle`.
- the narrow passes (``run``, ``adopt``, ``podman start``): under the lock, the plan, kubelet's
  admission, the pod's exclusive CPUs (cpuManagerPolicy static) allocated *before* the plan the
  pass writes is made (a container holding CPUs has no CFS quota: its scope gets the right value
  at once), then a narrow sync (:class:`sdqos.reconcile.sync.Narrow`).
- ``sdqos pressure``: its plan (reloaded by the watching loop only when an input changed) and its
  evictions.

The CLI parses arguments, builds the options, and renders what a pass returns.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from sdqos.errors import EXIT_OK, HostError, InvalidInput, SdqosError
from sdqos.host import rundir

if TYPE_CHECKING:  # (the modules a pass uses are imported where it uses them: a proven no-op loads none)
    from sdqos.host.systemd import SystemdAPI
    from sdqos.plan.engine import MachineCharge, Plan, PodPlan
    from sdqos.reconcile.apply import Progress
    from sdqos.reconcile.diff import Launch
    from sdqos.reconcile.evict import Assessment
    from sdqos.reconcile.launch import Target
    from sdqos.reconcile.prefetch import KernelCheck
    from sdqos.reconcile.report import Report
    from sdqos.reconcile.sync import Narrow


@dataclass(frozen=True, slots=True)
class Options:
    """What a pass is asked to do: the command line's options, one record for every pass."""

    config: Path  # the config dir
    cgroup: str = "auto"  # "v1", "v2", or "auto": this host's
    insecure: bool = False  # accept config files others may write
    bus: str | None = None  # D-Bus address (None: systemd's private socket as root, else the system bus)
    run_dir: Path = rundir.DEFAULT_RUN_DIR
    lock_timeout: float = 60.0  # seconds to wait for the sync lock
    dry_run: bool = False  # plan and diff, change nothing (sync --dry-run, diff)
    settle: bool = False  # sync again while the inputs changed during the sync
    allow_empty: bool = False  # a config with no pods may remove every pod slice
    max_removals: str = "50%"  # N or P%, checked when the full path needs it
    recreate: tuple[str, ...] = ()  # pods moved to a new class or uid although they run
    adopt_existing: bool = False  # take over planned units another manager made
    verbose: bool = False  # every unit listed: the no-op proof does not answer
    quiet: bool = False  # a standing warning said when it appears and when it clears
    metrics_textfile: Path | None = None  # after the sync, its metrics written there
    replace: bool = False  # run, podman start: stop the running instance first
    force: bool = False  # run --vm, adopt: take what another manager runs
    evict: bool = False  # pressure: evict as kubelet's eviction manager does
    interval: float = 10.0  # pressure's loop: seconds between passes


@dataclass(frozen=True, slots=True)
class Shell:
    """What a pass needs from the layers above reconcile. ``load(mode, *, writes, machines,
    as_synced)``: sdqos.loading.load.load with the config dir and --insecure bound, (config, plan);
    ``collect(sd, plan, report)``: the status rows now, and ``export(path, rows, record)`` writes
    them as metrics (--metrics-textfile); ``progress()``: a progress callback for apply, or None."""

    load: Callable[..., tuple[Any, Plan]]
    collect: Callable[[SystemdAPI, Plan, Report], Awaitable[Any]]
    export: Callable[[Path, Any, dict], None]
    progress: Callable[[], Progress | None] = lambda: None


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """What ``run`` and ``adopt`` name: a pod's container (the pod as NS/NAME, or NAME when only
    one namespace has it), or a declared VM."""

    pod: str | None = None
    container: str | None = None
    vm: str | None = None


@dataclass(slots=True)
class Outcome:
    """What a sync did, for the CLI to render: the report and the plan it names (None when the
    no-op proof answered, ``proven``: nothing was loaded), the config's invalid input, the edits
    the diff refused, and the warnings to show (``quiet``: the new, changed and cleared ones)."""

    report: Report
    plan: Plan | None = None
    proven: bool = False
    config_errors: list = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.proven else self.report.exit_code


@dataclass(slots=True)
class Launched:
    """What ``run`` and ``adopt`` did: how the scope came to hold the processes ("created" or
    "attached"), the target, the processes, the warnings, and the CPUs they get as their affinity
    (cpuManagerPolicy static on cgroup v1; None: no policy, or cgroup v2, where the scope's
    AllowedCPUs hold them)."""

    how: str
    target: Target
    pids: list[int]
    warnings: list[str]
    cpus: frozenset[int] | None = None


def settle(options: Options, one: Callable[[], bool]) -> None:
    """``one`` pass, and with ``options.settle`` (not for a dry run) again, up to
    :data:`sdqos.host.inputs.MAX_PASSES` passes, while the config dir or libvirt's or machined's
    state changed during the pass: a change while a sync ran (the path unit's start request merged
    into the running sync) is synced by the next pass, not the next timer tick; so is a CPU
    manager state the pass changed (CPUs given back: the next pass plans the wider pool). Changes come in
    bursts (libvirt writes its files over a second while a VM starts): a short quiet period first.
    ``one`` returns False to end it (Ctrl-C: no further pass)."""
    from sdqos.host import inputs

    again = options.settle and not options.dry_run
    for _ in range(inputs.MAX_PASSES if again else 1):
        before = inputs.fingerprint(options.config, options.run_dir) if again else None
        if not one() or before is None or inputs.settled(options.config, before, run_dir=options.run_dir):
            break


def changed_warnings(new: list[str], gone: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(new, changed, cleared) for the timer's quiet report: a standing warning whose numbers
    changed (same words, other figures) is ``changed:``, not a new warning plus ``cleared:`` (which
    reads as if the problem went away)."""
    import re

    def shape(w: str) -> str:
        return re.sub(r"\d+(?:[.,]\d+)*", "#", w)
    gone_by_shape: dict[str, list[str]] = {}
    for w in gone:
        gone_by_shape.setdefault(shape(w), []).append(w)
    fresh, changed = [], []
    for w in new:
        twins = gone_by_shape.get(shape(w))
        if twins:
            twins.pop(0)
            changed.append(w)
        else:
            fresh.append(w)
    cleared = [w for ws in gone_by_shape.values() for w in ws]
    return fresh, changed, [w for w in gone if w in cleared]


def launch_target(plan: Plan, ref: WorkloadRef) -> Target:
    """`run`'s and `adopt`'s target: the VM's scope, or the pod container's."""
    from sdqos.reconcile import launch

    if ref.vm is not None:
        return launch.vm_target(plan, ref.vm)
    if ref.pod is None or ref.container is None:
        raise InvalidInput("give POD and CONTAINER (or --vm NAME)")
    return launch.container_target(plan, ref.pod, ref.container)


def not_made(report: Report, what: str, names: list[str]) -> None:
    """A unit a narrow pass had to make was not made: its errors (those naming ``names``), as one error."""
    lines = [e for e in report.errors if any(n in e for n in names)] or [f"{what} was not created"]
    exc = SdqosError(lines[0])
    exc.errors = [SdqosError(x) for x in lines]  # type: ignore[attr-defined]
    raise exc


def _run(coro: Awaitable[Any]) -> Any:
    """Every coroutine of a pass through :func:`sdqos.host.systemd.run`: a Ctrl-C is never lost."""
    from sdqos.host.systemd import run

    return run(coro)


def _connect(bus: str | None) -> Any:
    from sdqos.host.systemd import Systemd

    return Systemd(bus)


async def _probe_bus(bus: str | None) -> None:
    """Connect to systemd once (and close): BusUnavailable when it cannot be reached."""
    async with _connect(bus):
        pass


def _pin(done: Launched) -> None:
    """Adopted processes under cpuManagerPolicy static on cgroup v1: their container's CPUs (its
    exclusive ones, else the shared pool) as their affinity, as ``run`` sets its own; a refusal is
    a warning naming the container."""
    from sdqos.host import procfs
    from sdqos.kube import cpuset
    from sdqos.kube.naming import cgroup_path

    assert done.cpus is not None
    unit = done.target.unit
    refused = sum(procfs.set_affinity(pid, done.cpus, cgroup_path(unit.name, unit.slice))[1] for pid in done.pids)
    if refused:
        done.warnings.append(f"{done.target.label}: the kernel refused CPU affinity {cpuset.CPUSet(done.cpus)} for "
                             f"{refused} thread(s)")


class SyncPass:
    """One sync's life (the module's docstring): the options, the shell, and the steps in order."""

    def __init__(self, options: Options, shell: Shell) -> None:
        self.options, self.shell = options, shell
        self._mode: str | None = None

    @property
    def mode(self) -> str:
        """The cgroup version the pass plans for (``auto``: this host's, detected once)."""
        if self._mode is None:
            if self.options.cgroup == "auto":
                from sdqos.host.facts import detect_cgroup_mode

                self._mode = detect_cgroup_mode()
            else:
                self._mode = self.options.cgroup
        return self._mode

    def load(self, *, writes: bool = False, machines: tuple[MachineCharge, ...] | None = None,
             as_synced: bool = False) -> tuple[Any, Plan]:
        """(config, plan) through the one loading path."""
        return self.shell.load(self.mode, writes=writes, machines=machines, as_synced=as_synced)

    # --- sync, sync --dry-run, diff ------------------------------------------------------------

    def sync(self) -> Outcome:
        """One ``sdqos sync`` (or dry run): its steps in order (the module's docstring)."""
        o = self.options
        mode = self.mode
        if not os.path.lexists(o.run_dir):
            # A first sync on this host: no bus (no systemd as PID 1) must fail before the parse
            # cache and the lock make /run/sdqos; a failing command leaves nothing behind.
            _run(_probe_bus(o.bus))
        # The lock before the plan: a sync that planned before `sdqos podman start` added a pod's
        # slice (under this lock) would remove it as not planned.
        with contextlib.ExitStack() as held:
            digest = None
            if not o.dry_run:
                held.enter_context(rundir.SyncLock(o.run_dir, o.lock_timeout))
                digest, proven = self._proof()
                if proven is not None:
                    return proven
            from sdqos.reconcile.prefetch import prefetch

            checked = None if o.dry_run else prefetch(o.run_dir, mode)  # a child checks the kernel while we plan
            if checked is not None:
                held.callback(checked.close)
            report, cfg, plan, observed = self._full(checked)
        return self._finish(report, cfg, plan, observed, digest)

    def _full(self, checked: KernelCheck | None) -> tuple[Report, Any, Plan, Any]:
        """The plan, systemd's version, the sync (and with --metrics-textfile the status rows)."""
        from sdqos.reconcile import sync as reconcile  # (the plan's and the diff's modules: after the proof)
        from sdqos.reconcile.diff import DiffPolicy, RemovalLimit

        o = self.options
        try:  # (a stamp is only ever made with a valid one)
            limit = RemovalLimit.parse(o.max_removals)
        except ValueError as exc:
            raise InvalidInput(str(exc), where="--max-removals") from None
        cfg, p = self.load(writes=not o.dry_run)
        unknown = [k for k in o.recreate if p.pod(k) is None or "/" not in k]
        if unknown:
            raise InvalidInput(f"no pod {', '.join(unknown)} in the config (NS/NAME)", where="--recreate")
        settings = reconcile.Settings(DiffPolicy(
            complete=cfg.complete, removals_safe=cfg.removals_safe, invalid_keys=cfg.invalid_keys,
            allow_empty=o.allow_empty, adopt_existing=o.adopt_existing, recreate=frozenset(o.recreate),
            max_removals=limit), dry_run=o.dry_run, run_dir=o.run_dir)

        def replan(machines: tuple[MachineCharge, ...]) -> Plan:  # what runs in machine.slice changed: count it
            return self.load(writes=not o.dry_run, machines=machines)[1]

        async def go() -> tuple[Report, Any]:
            async with _connect(o.bus) as sd:
                major, raw = await sd.version()
                if major >= 258 and self.mode == "v1":
                    raise SdqosError(f"systemd {raw} has no cgroup v1 properties; this host is not on cgroup v1")
                report = await reconcile.sync(sd, p, settings, progress=self.shell.progress(), replan=replan,
                                              checked=checked)
            if o.metrics_textfile is None:
                return report, None
            async with _connect(o.bus) as sd:  # entitlements and usage as they are now
                synced = report.desired.plan if report.desired is not None else p  # (collect binds and adjusts)
                return report, await self.shell.collect(sd, synced, report)

        report, observed = _run(go())
        return report, cfg, p, observed

    def _finish(self, report: Report, cfg: Any, p: Plan, observed: Any, digest: str | None) -> Outcome:
        """The report completed with the config's own warnings and errors; then (not a dry run) the
        record, the metrics, and the stamp of a sync that found nothing to do."""
        plan: Plan = report.plan or p  # type: ignore[assignment]
        report.warnings[:0] = [w for w in cfg.warnings if w not in report.warnings]
        refused = list(report.invalid)  # edits the diff refused, as Kubernetes refuses them
        report.invalid[:] = [str(e) for e in cfg.errors] + refused
        out = Outcome(report, plan, config_errors=list(cfg.errors), refused=refused, shown=report.warnings)
        if not self.options.dry_run:
            self._record(out, observed)
            if digest is not None:
                self._stamp(report, plan, digest, cfg.inputs)
        return out

    def _record(self, out: Outcome, observed: Any) -> None:
        """last-sync.json (and --metrics-textfile), after the units changed: a failure here is
        reported with the rest, never instead of it. --quiet: the warnings against the last record's."""
        o, report = self.options, out.report
        standing = sorted(set(report.warnings))
        if o.quiet:  # the timer: a standing warning once when it appears, and once when it clears
            before = rundir.load_sync_record(o.run_dir).get("warnings") or []
            shown = [w for w in report.warnings if w not in before]
            cleared = [w for w in before if w not in standing]
            out.shown, out.changed, out.cleared = changed_warnings(shown, cleared)
        try:
            rec = rundir.record_sync(report, o.run_dir, warnings=standing)
            if o.metrics_textfile is not None:
                self.shell.export(o.metrics_textfile, observed, rec)
        except HostError as exc:
            report.errors.append(str(exc))

    def _proof(self) -> tuple[str | None, Outcome | None]:
        """A sync with nothing to do, proven by the last one's stamp (sdqos.reconcile.noop) without
        loading the plan: recorded, and its outcome returned. Otherwise the stamp is dropped and
        the digest of the inputs returned, for the full sync to stamp with (None: a sync whose
        options the proof does not cover, which neither uses nor stamps)."""
        from sdqos.reconcile import noop

        o = self.options
        if o.recreate or o.verbose or o.metrics_textfile is not None:
            noop.discard(o.run_dir)
            return None, None
        digest = noop.conditions(o.config, self.mode, {
            "insecure": o.insecure, "allowEmpty": o.allow_empty, "maxRemovals": o.max_removals,
            "adoptExisting": o.adopt_existing, "bus": o.bus})

        async def check(data: dict) -> Report | None:
            async with _connect(o.bus) as sd:
                return await noop.check(sd, o.run_dir, digest, data)
        try:
            data = noop.load(o.run_dir, digest)
            report = _run(check(data)) if data is not None and data.get("inputs") == digest else None
        except SdqosError:
            report = None  # the full path meets it again and says it properly
        if report is None:
            noop.discard(o.run_dir)
            return digest, None
        rundir.record_sync(report, o.run_dir, warnings=[])  # (a HostError: the command's error, as the full path's)
        return digest, Outcome(report, proven=True)

    def _stamp(self, report: Report, plan: Plan, digest: str, reads: Any) -> None:
        """After a full sync that found nothing to do: stamp it, for the next sync's proof."""
        from sdqos.reconcile import noop

        run_dir, bus = self.options.run_dir, self.options.bus
        if not noop.nothing_done(report):  # (a sync that changed something: not even applied.json is read again)
            return

        async def write() -> None:
            async with _connect(bus) as sd:
                await noop.stamp(sd, plan, report, run_dir, digest, reads)
        try:
            with rundir.SyncLock(run_dir, 0.0):  # taken again: another command that holds it now has changed something
                if noop.stampable(report, plan, rundir.load_applied(run_dir), run_dir):
                    _run(write())
        except SdqosError:
            noop.discard(run_dir)  # no stamp: the next sync takes the full path

    # --- narrow passes: run, adopt, podman start -----------------------------------------------

    async def _admit(self, sd: SystemdAPI, cfg: Any, p: Plan, ref: WorkloadRef) -> tuple[frozenset[int] | None, Any, Plan]:
        """``run``/``adopt``: kubelet's admission of a pod (maxPods, podsPerCore, requests beside
        the running pods), then cpuManagerPolicy static: the CPUs of the pod's container (or of a
        VM with dedicatedCpuPlacement) allocated (:func:`sdqos.reconcile.cpus.launch_cpus`) before
        the plan the narrow pass writes (:meth:`_allocated`). Returns the CPUs its processes run
        on (exclusive, else the shared pool; None: no policy), config and plan."""
        from sdqos.reconcile import cpus, launch

        key = None
        if ref.vm is None:
            key = launch.find_pod(p, ref.pod or "").key
            launch.check_admission(p, key, await launch.running_pods(sd, p))
        held, cfg, p = self._allocated(cfg, p, lambda: cpus.launch_cpus(p, ref.vm, key, ref.container,
                                                                         self.options.run_dir))
        return (held[0] if held else None), cfg, p

    def _allocated(self, cfg: Any, p: Plan, allocate: Callable[[], Any]) -> tuple[Any, Any, Plan]:
        """``allocate()`` (the static CPU manager's admission), and the plan made again when it
        changed the state file the plan read: a container (a VM) holding exclusive CPUs has no CFS
        quota (DisableCPUQuotaWithExclusiveCPUs), on cgroup v2 a scope's AllowedCPUs are its CPUs —
        so the units are created with their values at once, not set by the next sync."""
        from sdqos.host import cpustate
        from sdqos.reconcile import cpus

        if not cpus.static(p.node):
            return allocate(), cfg, p
        before = cpustate.read(self.options.run_dir)
        out = allocate()
        if cpustate.read(self.options.run_dir) != before:
            cfg, p = self.load(writes=True)
        return out, cfg, p

    async def _narrow(self, sd: SystemdAPI, cfg: Any, p: Plan, only: Narrow) -> Report:
        """One narrow pass (``only``) through sync's own desired state, diff and apply, planned
        again with what runs in machine.slice when that differs from what ``p`` counted; the
        caller holds the sync lock."""
        from sdqos.reconcile import sync as reconcile
        from sdqos.reconcile.diff import DiffPolicy

        policy = DiffPolicy(complete=cfg.complete, removals_safe=False, invalid_keys=cfg.invalid_keys)
        return await reconcile.sync(sd, p, reconcile.Settings(policy, run_dir=self.options.run_dir), only=only,
                                    replan=lambda machines: self.load(writes=True, machines=machines)[1])

    async def _launch(self, sd: SystemdAPI, cfg: Any, p: Plan, ref: WorkloadRef,
                      launch: Launch | None = None) -> list[str]:
        """`run`/`adopt`: its pod's units (a VM: its scope and the node budget it changes) through
        the sync's own desired state, diff and apply (clamps included, recorded as applied); with
        ``launch``, the scope is created there around the processes, after the missing slices above
        it. A scope that could not be made is an error (nothing runs in it); what else fails is a
        warning: the scope runs, and the next sync tries again."""
        from sdqos.reconcile import launch as launching
        from sdqos.reconcile.sync import Narrow

        key = launching.find_pod(p, ref.pod or "").key if ref.vm is None else None
        report = await self._narrow(sd, cfg, p, Narrow(pod=key, vm=ref.vm, launch=launch))
        if launch is not None and launch.unit.name not in report.created:
            not_made(report, launch.unit.name, [launch.unit.name, *report.failed_creates])
        return [f"{e} (the next sync tries again)" for e in report.errors]

    def run(self, ref: WorkloadRef, command: list[str]) -> Launched:
        """``sdqos run``: under the sync lock (released at exec: the lock file is close-on-exec, so
        a sync that planned without this pod or VM never removes what this run just made), the
        scope made around this process, then its OOM score. The caller execs the command."""
        from sdqos.reconcile import launch

        o = self.options
        with rundir.SyncLock(o.run_dir, o.lock_timeout):
            cfg, p = self.load(writes=True)
            target = launch_target(p, ref)
            if ref.vm is not None and not o.force:
                from sdqos.kube.qos import value

                vp = next(v for v in p.vms if v.vm.name == ref.vm)
                launch.check_guest_size(target, value(vp.vm.limits.get("memory")), command)

            async def prepare() -> Launched:
                async with _connect(o.bus) as sd:
                    if ref.vm is not None and not o.force:
                        owned = await launch.vm_owned_elsewhere(sd, target, ref.vm)
                        if owned is not None:
                            raise InvalidInput(f"VM {ref.vm} already runs in {owned}, which libvirt or machined "
                                               "manage; pass --force to start another")
                    held, cfg2, p2 = await self._admit(sd, cfg, p, ref)  # allocate, then plan
                    made = launch_target(p2, ref)
                    warnings = await self._launch(sd, cfg2, p2, ref, launch=made.launch([os.getpid()], replace=o.replace))
                    # cgroup v1 holds no cpuset: the CPUs are the process's affinity (on v2 its scope's AllowedCPUs)
                    return Launched("created", made, [os.getpid()], warnings, held if p2.cgroup == "v1" else None)

            done = _run(prepare())
        done.warnings += launch.set_oom(done.pids, done.target)
        return done

    def adopt(self, ref: WorkloadRef, pids: list[int], children: bool) -> Launched:
        """``sdqos adopt``: the processes (and with ``children`` their descendants) moved into the
        scope — attached to the running one, or a scope made around them — then their OOM score
        and, for a pod under cpuManagerPolicy static, its CPUs as their affinity (as ``run``)."""
        from sdqos.host import procfs
        from sdqos.reconcile import launch

        o = self.options
        cfg, p = self.load(writes=True)
        target = launch_target(p, ref)
        launch.check_adoptable(list(pids), target, o.force)  # a refused PID: its children are not listed too
        all_pids = procfs.descendants(pids) if children else list(pids)
        launch.check_adoptable(all_pids, target, o.force)

        async def move() -> Launched:
            async with _connect(o.bus) as sd:
                if ref.vm is not None and not o.force:
                    owned = await launch.vm_owned_elsewhere(sd, target, ref.vm)
                    if owned is not None:
                        raise InvalidInput(f"VM {ref.vm} runs in {owned}, which libvirt or machined manage; adopting "
                                           "it would break them (sdqos tunes that scope by itself: "
                                           "spec.libvirt.domain). Pass --force to take it anyway")
                # kubelet's admission and the pod's CPUs (a dedicated VM's), as for run (a running pod is admitted)
                held, cfg2, p2 = await self._admit(sd, cfg, p, ref)  # allocate, then plan
                made = launch_target(p2, ref)
                cpus = held if p2.cgroup == "v1" else None  # (v2: the scope's AllowedCPUs hold them)
                if await launch.attach(sd, made, all_pids):
                    return Launched("attached", made, all_pids, await self._launch(sd, cfg2, p2, ref), cpus)
                warnings = await self._launch(sd, cfg2, p2, ref, launch=made.launch(all_pids))
                return Launched("created", made, all_pids, warnings, cpus)

        with rundir.SyncLock(o.run_dir, o.lock_timeout):  # the narrow pass writes what it applied, as a sync does
            done = _run(move())
        done.warnings += launch.set_oom(all_pids, done.target)
        if done.cpus is not None:
            _pin(done)
        return done

    def podman_start(self, pod: str, run_spec: Callable[[PodPlan], Any], say: Callable[[str], None]) -> Report | None:
        """``sdqos podman start``: under the lock, the plan, admission and the pod's CPUs (then the
        plan again), its run spec (``run_spec``: the manifest read above reconcile), its slice and
        tiers by a narrow pass that creates without PIDs — not while containers run (an init
        container may take hours) — then the containers, then :meth:`record_pod`. ``say``: each line."""
        from sdqos.reconcile import cpus, launch, podman_pods
        from sdqos.reconcile.sync import Narrow

        o = self.options
        with rundir.SyncLock(o.run_dir, o.lock_timeout):
            cfg, p = self.load(writes=True)
            pp = launch.find_pod(p, pod)
            spec = run_spec(pp)

            async def go() -> tuple[list[str], Any, Plan]:
                async with _connect(o.bus) as sd:  # its slice and tiers, through the one writer
                    # kubelet's admission first: a refused pod has nothing of its own removed
                    launch.check_admission(p, pp.key, await launch.running_pods(sd, p))
                    # cpuManagerPolicy static: the pod's exclusive CPUs (--cpuset-cpus at podman run), then the plan
                    _, cfg2, p2 = self._allocated(cfg, p, lambda: cpus.admit(p, pp.key, o.run_dir))
                    done, prepared = podman_pods.prepare(p2.pod(pp.key) or pp, spec, replace=o.replace)
                    report = await self._narrow(sd, cfg2, p2, Narrow(pod=pp.key, create=True))
                if report.failed_creates:
                    not_made(report, pp.slice, report.failed_creates)
                return done + [f"created {name}" for name in report.created], prepared, p2

            lines, spec, p = _run(go())
            for line in lines:
                say(line)
        pp = p.pod(pp.key) or pp
        for line in podman_pods.run_containers(p, pp, spec):
            say(line)
        return self.record_pod(pp.key)

    def record_pod(self, key: str) -> Report | None:
        """Right after its containers started: the pod's units through the sync's own path (its
        slice, the slices above, its containers' scopes: updated, read back, recorded as applied),
        so `status` shows them ok and `diff` has nothing pending, without waiting for the next
        sync. None: the pod left the config meanwhile (the next sync removes it)."""
        from sdqos.reconcile.sync import Narrow

        o = self.options
        with rundir.SyncLock(o.run_dir, o.lock_timeout):
            cfg, p = self.load(writes=True)
            if p.pod(key) is None:
                return None

            async def go() -> Report:
                async with _connect(o.bus) as sd:
                    return await self._narrow(sd, cfg, p, Narrow(pod=key))

            return _run(go())

    # --- sdqos pressure ------------------------------------------------------------------------

    def look(self, p: Plan, say: Callable[[str], None]) -> tuple[Assessment, dict | None]:
        """``pressure --once``: the assessment, and with ``evict`` at most one workload stopped for
        a crossed hard threshold (``say``: why one could not be). Returns it and the eviction's record."""
        from sdqos.reconcile import evict

        o = self.options
        a, _ = evict.collect(p, record=evict.load_evicted(o.run_dir))
        if not (o.evict and a.victim is not None):
            return a, None

        async def go() -> dict | None:
            async with _connect(o.bus) as sd:
                return await evict.evict_first(sd, p, a, o.run_dir, say)

        return a, _run(go())

    def watch(self, say: Callable[[str], None]) -> None:
        """``pressure`` without --once: kubelet's eviction loop (sdqos.reconcile.evict.serve), its
        plan loaded again on a wake only when an input of the plan changed: whatever the last load
        read (its Reads: the config dir's files, host facts, the last sync's record) or the
        environment (noop.conditions)."""
        from sdqos.reconcile import evict, noop

        o = self.options
        last: list = [None, None, None]  # (conditions, plan, what its load read) of the last load

        def load() -> Plan:
            key = noop.conditions(o.config, self.mode, {"insecure": o.insecure})
            if key == last[0] and noop.inputs_unchanged(last[2]):
                return last[1]
            cfg, p = self.load(as_synced=True)
            for e in cfg.errors:  # the valid rest is watched, as sync syncs it
                say(f"invalid, skipped: {e}")
            last[:] = [key, p, cfg.inputs]
            return p

        evict.serve(load, o.evict, o.interval, o.run_dir, say, bus_address=o.bus)
