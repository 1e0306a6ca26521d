"""The one loading path: every command's (Config, Plan) comes from :func:`load`.

plan, explain, status, metrics, sync, diff, run, adopt, podman start/stop, pressure and shell
completion all call it, so they plan from the same inputs: the config dir (through the parse and
plan cache when this process may keep one), what the last sync counted in machine.slice besides
declared VMs (so ``explain`` shows the budget ``sync`` applied), and for ``explain FILE`` the pods of
a what-if file laid over the config's. Each input is a *source*; adding one is a function here that
returns pods (or VMs, or machine charges) and one argument of :func:`load`
(docs/architecture.md, "Adding a desired-state source").
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sdqos.errors import ConfigInvalid, InvalidInput
from sdqos.host import rundir
from sdqos.host.rundir import Reads
from sdqos.kube.model import Pod
from sdqos.loading.configdir import DEFAULT_DIR, Config
from sdqos.plan.engine import KeptPod, MachineCharge, Plan



last_sync_record = rundir.load_sync_record  # (the record's schema: the store's)


def _last_sync_part(run_dir: Path, key: str, reads: Reads | None) -> object:
    if reads is None:
        return rundir.last_sync_part(run_dir, key)
    return reads.call(rundir.last_sync_part, str(run_dir), key, paths=(str(rundir.LAST_SYNC.path(run_dir)),))


def counted_machines(run_dir: Path = rundir.DEFAULT_RUN_DIR, reads: Reads | None = None) -> tuple[MachineCharge, ...]:
    """Source: what the last sync counted in machine.slice besides declared VMs (the budget it
    applied; reconcile/sync.py's ``replan``); () when unknown."""
    out = []
    machines = _last_sync_part(run_dir, "machines", reads)
    for m in machines if isinstance(machines, list) else []:
        try:
            out.append(MachineCharge(str(m["unit"]), str(m["what"]), int(m["cpu"]), int(m["memory"]),
                                     bool(m.get("bounded", True)),
                                     None if m.get("limit") is None else int(m["limit"])))
        except (KeyError, TypeError, ValueError):
            return ()
    return tuple(sorted(out, key=lambda m: m.unit))


def kept_pods(run_dir: Path = rundir.DEFAULT_RUN_DIR, reads: Reads | None = None) -> tuple[KeptPod, ...]:
    """Source: the pod slices the last sync kept (a held-back removal, an invalid file, a refused
    move) and counted in their tiers, so ``plan`` and ``explain`` show the tier values sync set;
    () when unknown."""
    try:
        return tuple(KeptPod(**k) for k in _last_sync_part(run_dir, "kept", reads) or ())  # type: ignore[attr-defined]
    except TypeError:
        return ()


def what_if_pods(path: Path, insecure: bool, config_dir: Path | None = None) -> list[Pod]:
    """Source: the pods of a manifest file outside the config (``explain FILE``), checked as the
    config's files are (trust, YAML, every document a Pod or a List of Pods; priorities from the
    config dir's PriorityClasses). Raises
    InvalidInput/ConfigInvalid naming the file; nothing of a bad file is used."""
    from sdqos.kube.manifests import ParseResult, parse_pod_documents
    from sdqos.kube.yamlsafe import YamlError
    from sdqos.loading.configdir import parse_documents, priority_classes, read_checked_file

    text = read_checked_file(path, insecure)
    try:
        docs = parse_documents(text, str(path))
    except YamlError as exc:  # its position only: the problem may quote the file
        at = str(exc).split(": ", 1)[0] if str(exc).startswith("line ") else "somewhere"
        raise InvalidInput(f"is not valid YAML ({at})", where=str(path)) from None
    if not docs or not all(isinstance(d, dict) and d.get("kind") in ("Pod", "List", "PodList") for d in docs):
        raise InvalidInput("is not a Pod manifest (every document must be kind: Pod, or a List of Pods); "
                           "nothing of it is shown", where=str(path))
    result = ParseResult()
    classes = priority_classes(config_dir, insecure) if config_dir is not None else None
    parse_pod_documents(docs, str(path), result, classes=classes)
    if result.errors:
        raise ConfigInvalid(result.errors)
    return list(result.pods)


def load(
    config_dir: Path | str = DEFAULT_DIR,
    cgroup: str = "auto",
    *,
    insecure: bool = False,
    writes: bool = False,
    machines: Sequence[MachineCharge] | None = None,
    explain: bool = False,
    what_if: Sequence[Pod] = (),
    as_synced: bool = False,
) -> tuple[Config, Plan]:
    """(config, plan) for any command.

    ``cgroup``: "v1", "v2" or "auto" (this host's). ``writes``: only a command that changes the
    host (sync, run, adopt, podman start) updates the cache in /run/sdqos; the others leave it, and
    the host, as they are. ``machines``: what runs in machine.slice besides declared VMs (sync's
    replan passes what it observed); default: what the last sync counted (``plan.machines`` says
    which were counted). ``explain``: every value with its reason (no cached plan fragments: they
    carry no reasons). ``what_if``: pods laid over the config's (same namespace/name replaced).
    ``as_synced``: count the pods the last sync kept in their tiers, as that sync did (``plan``,
    ``explain``; sync finds its own, status and metrics take them from the record).

    Every input read is recorded in the config's ``inputs`` (:class:`sdqos.host.rundir.Reads`): a
    source read through a function records it with ``reads.call``, a file with ``reads.file``."""
    from sdqos.loading.cache import usable_run_dir
    from sdqos.loading.incremental import load_plan

    if cgroup == "auto":
        from sdqos.host.facts import detect_cgroup_mode

        cgroup = detect_cgroup_mode()
    run_dir = usable_run_dir(create=writes)
    reads = Reads()
    if machines is None:
        machines = counted_machines(run_dir, reads) if run_dir is not None else ()
    kept = kept_pods(run_dir, reads) if as_synced and run_dir is not None else ()
    return load_plan(config_dir, cgroup, insecure=insecure, cache_dir=run_dir, cache_write=writes,
                     machines=machines, explain=explain, what_if=what_if, kept=kept, reads=reads)
