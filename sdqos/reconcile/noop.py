"""A warm sync with nothing to do, proven without loading or building the plan.

The timer syncs every 30 s, and almost every time nothing changed. A full sync still loads the
cached plan (a fragment per pod file, the tree assembled), computes every unit's expected kernel
values and diffs them: work that only repeats the last sync's answer. Here the last sync that found
nothing to do leaves a *stamp* in the run dir (``noop.json``), and the next sync compares against it
what a sync must look at anyway — the unit listing, the kernel values of every unit the plan
trusts the kernel for, and the few units it always reads over D-Bus — plus the identity of
everything the plan is a function of. Only when all of it agrees is "nothing to do" reported;
anything else takes the full path, which removes the stamp first. It holds:

- *inputs*: exactly what the full sync's load read, as the loader recorded it before reading
  each (``Config.inputs``, :class:`sdqos.host.rundir.Reads`): every file by identity (mode,
  owner, inode, size, mtime, ctime; a symlink's target too), every directory listed by identity
  and names, and every value read through a function (the host facts node.yaml falls back on,
  the config dir's parents' owners and modes, the last-sync record's parts the plan uses) by
  calling that same function again. Nothing is listed here by hand: a new source the loader
  reads is in the proof. Besides them the sync's own *conditions* (:func:`conditions`): its
  options, the config dir's path, the environment that steers it, the cgroup version and the
  kernel's OOM-kill count (``/proc/vmstat``: any kill on the host, reported by the full path);
- the run dir's own records (the rows of the store's table it counts: applied, parse cache,
  observed, OOM kills, evictions, anything else), by identity, taken after the full sync wrote
  them; the last-sync record is rewritten by every sync and is checked by content (no
  machine.slice charge, no standing warning);
- the listing: every row of the one ``ListUnitsByPatterns`` over the plan's patterns (name, load,
  active and sub state, Description);
- the kernel: the files the full path checks for every unit (pods, the node, the tiers, reserved
  cgroups, machine.slice), as bytes (a digest of all of them, read in order as the recheck floor
  reads them). When the stamp is written they are read, parsed and compared with what the planned
  properties produce, and read again: a value that drifted in between is never stamped;
- the units the full path always reads over D-Bus (node, tiers, reserved, machine.slice, a unit
  whose values cannot be predicted): their planned properties, compared as the diff compares
  them, and their memory limits, which usage must not exceed (the qosReserved clamp);
- no process below the tree or in machine.slice (the kernel's ``populated``): containers, VMs and
  foreign scopes need the full path (binding, OOM scores, podman, libvirt), so it takes it.

A stamp is written only after a sync (not a dry run) that changed nothing and reported no drift,
warning, error, invalid input, kept or foreign unit, clamp or OOM kill, with no pending OOM
record and applied.json naming planned units only; and only if the observation above, taken
again right then, matches the plan. The fast path is never taken for --dry-run, --recreate,
--verbose or --metrics-textfile, nor where this process does not see systemd's cgroup tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from sdqos import __version__
from sdqos.errors import HostError
from sdqos.humanize import INFINITY
from sdqos.host import cgroupfs, rundir
from sdqos.host.rundir import Reads
from sdqos.reconcile.report import Report

if TYPE_CHECKING:  # the stamp is written from them; the fast path never imports them
    from sdqos.host.systemd import Systemd
    from sdqos.plan.engine import Plan

STAMP = rundir.NOOP.name
# A stamp holds for the sdqos that wrote it and the schemas of the records it was made from: the
# package version and every row of the store's table (the stamp's own row says what changed in it)
VERSION = hashlib.blake2b(f"{__version__}/{rundir.schemas()}".encode(), digest_size=8).hexdigest()
NOT_INPUTS = frozenset(r.name for r in rundir.RECORDS if not r.input)  # the lock, the stamp, the last-sync record
ENV_PREFIXES = ("SDQOS_", "CONTAINERS_")
NEED_KINDS = ("node", "tier", "reserved", "machine")  # read over D-Bus by every full sync (live.read_live)
MACHINE_SLICE = "machine.slice"


def _entries(path: str, out: list) -> list[str]:
    """Each entry of a directory as (name, lstat identity[, link target, stat identity]); the
    names of its subdirectories. A directory that cannot be read: its error."""
    subdirs = []
    try:
        with os.scandir(path) as it:
            rows = []
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError as exc:
                    rows.append((e.name, exc.errno))
                    continue
                row: tuple = (e.name, rundir.identity(st))
                if stat.S_ISLNK(st.st_mode):
                    try:
                        row += (os.readlink(e.path), rundir.identity(os.stat(e.path)))
                    except OSError as exc:
                        row += (exc.errno,)
                elif stat.S_ISDIR(st.st_mode):
                    subdirs.append(e.name)
                rows.append(row)
    except OSError as exc:
        out.append((path, exc.errno))
        return []
    rows.sort()
    out.append((path, rows))
    return subdirs


def oom_kills_total() -> int | None:
    """The kernel's count of OOM kills since boot (``oom_kill`` in /proc/vmstat)."""
    try:
        with open("/proc/vmstat", "rb") as fh:
            for line in fh.read().split(b"\n"):
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def conditions(config: Path, cgroup: str, options: Mapping[str, Any]) -> str:
    """A digest of what the sync itself is steered by, besides the inputs its load reads (those
    are the loader's ``Reads``): the stamp's version, the config dir's path, the cgroup version,
    the options, the environment, the kernel's OOM-kill count."""
    rows: list = [VERSION, os.path.abspath(config), cgroup, sorted(options.items()),
                  sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)), oom_kills_total()]
    return hashlib.blake2b(repr(rows).encode(), digest_size=20).hexdigest()


def inputs_unchanged(reads: Reads | None) -> bool:
    """Whether every input a load read is as it was read (a ``Reads`` from it, or from a stamp)."""
    return reads is not None and reads.changed() is None


def run_dir_identity(run_dir: Path) -> str:
    """The run dir's records (all but the lock, the stamp and the last-sync record), by identity."""
    rows: list = []
    _entries(str(run_dir), rows)
    if rows and isinstance(rows[0][1], list):
        rows = [(rows[0][0], [r for r in rows[0][1] if r[0] not in NOT_INPUTS])]
    return hashlib.blake2b(repr(rows).encode(), digest_size=20).hexdigest()


def _empty(cgroup: str) -> bool:
    """No process runs in the cgroup or below it, by the kernel (False where it cannot tell)."""
    return cgroupfs.populated(cgroup) is False


def _last_sync_quiet(run_dir: Path) -> bool:
    """The last-sync record counts nothing in machine.slice and holds no standing warning (a
    full sync plans with the first and prints against the second)."""
    rec = rundir.load_sync_record(run_dir)
    return bool(rec) and not rec.get("machines") and not rec.get("warnings")


def _rows(units: Mapping[str, Any]) -> dict[str, list]:
    return {n: [st.load_state, st.active_state, st.sub_state, str(st.props.get("Description", ""))]
            for n, st in units.items()}


def _raw(units: list, shapes: list, root: str = str(cgroupfs.ROOT)) -> str | None:
    """A digest of the bytes of every kernel file of ``units`` ([cgroup, shape]; a shape is a list
    of :func:`cgroupfs.expected`'s file names), read in order as the recheck floor reads them: one
    open and read each, nothing parsed; None when one cannot be read."""
    h = hashlib.blake2b(digest_size=20)
    split = [[f.split("/", 1) if "/" in f else ["", f] for f in files] for files in shapes]
    for rel, k in units:
        for controller, name in split[k]:  # the paths spelled here, not by cgroupfs.file_path: 5 per unit
            got = cgroupfs.file_bytes(f"{root}/{controller}/{rel}/{name}" if controller else f"{root}/{rel}/{name}")
            if got is None:
                return None
            h.update(got)
            h.update(b"\0")
    return h.hexdigest()


def _held(v) -> int:
    """An owned property as systemd reported it: an int, or AllowedCPUs' ``ay`` as its bitmask
    (properties.mask_of_dbus, without importing the plan's modules)."""
    return int.from_bytes(bytes(v), "little") if isinstance(v, (bytes, bytearray, list)) else int(v)


def _props_in_place(kind: str, planned: Mapping[str, int], st, owned: list[str], period: str,
                    memory: list[str]) -> bool:
    """Whether a unit read over D-Bus (``st``) holds ``planned`` with no memory limit to clamp to
    its usage: the full path's answer, from the one comparison it makes too
    (:func:`sdqos.reconcile.compare.settled`). ``owned``: plan.properties.owned(); ``period``,
    ``memory``: the table's PERIOD_PROPERTY and MEMORY_PROPERTIES, as the stamp recorded them: a
    stamp written under another property table proves nothing."""
    from sdqos.reconcile import compare

    if period != compare.PERIOD_PROPERTY or list(memory) != list(compare.CLAMPED_PROPERTIES):
        return False
    have = {k: _held(v) for k, v in st.props.items() if k in owned}
    current = st.props.get("MemoryCurrent")
    usage = int(current) if current is not None and int(current) < INFINITY else None  # (accounting off: None)
    return compare.settled(kind, planned, have, usage)


def _ifaces(owned: list[str]) -> dict[str, list[str]]:
    from sdqos.host.systemd import SCOPE, SLICE, UNIT

    return {SLICE: owned + ["MemoryCurrent"], SCOPE: list(owned), "org.freedesktop.systemd1.Service": list(owned),
            UNIT: ["Description"]}


def load(run_dir: Path, digest: str | None = None) -> dict | None:
    """The stamp, or None. With ``digest``: None unless the stamp was taken with these inputs,
    seen in its first bytes before the whole of it is decoded (``stamp`` writes ``inputs`` third,
    compact): a sync whose config changed skips decoding ~0.3 MB at 1000 pods, 1.5 MB at 5000."""
    raw = rundir.read_private(rundir.NOOP.path(run_dir), ours=True)
    if raw is not None and digest is not None and f'"inputs":{json.dumps(digest)}'.encode() not in raw[:512]:
        return None
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("version") == VERSION else None


def discard(run_dir: Path) -> None:
    """Before a full sync: whatever it finds, the old stamp no longer speaks for it."""
    try:
        os.unlink(rundir.NOOP.path(run_dir))
    except OSError:
        pass


async def check(sd: Systemd, run_dir: Path, digest: str, data: dict) -> Report | None:
    """The report of a sync with nothing to do, when the stamp (``data``, from :func:`load`)
    proves it; None: take the full path. ``digest``: :func:`conditions` now. The caller holds the
    sync lock."""
    t0 = time.monotonic()
    calls0 = sd.stats.calls
    if data.get("inputs") != digest or not cgroupfs.available():
        return None
    try:
        if not inputs_unchanged(Reads.from_json(data["reads"])):
            return None  # an input of the plan changed: the full path loads it
        if data["rundir"] != run_dir_identity(run_dir) or not _last_sync_quiet(run_dir):
            return None
        if not (_empty(data["root"]) and _empty(MACHINE_SLICE)):
            return None
        if (await sd.version())[1] != data["systemd"]:
            return None
        listed = await sd.read_units(data["patterns"], {"org.freedesktop.systemd1.Unit": ["Description"]})
        if _rows(listed) != data["units"]:
            return None
        kernel = data["kernel"]
        if _raw(kernel["units"], kernel["shapes"]) != kernel["digest"]:
            return None  # a value drifted (or a cgroup went): the full path says which, and restores it
        need = data["need"]
        if need:
            owned = data["owned"]
            units = await sd.read_units(list(need), _ifaces(owned))
            if set(units) != set(need) or _rows(units) != {n: data["units"][n] for n in need}:
                return None
            for name, (kind, planned) in need.items():
                if not _props_in_place(kind, planned, units[name], owned, data["period"], data["memory"]):
                    return None
        unchanged = list(data["unchanged"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    report = Report(unchanged=unchanged)
    report.dbus_calls = sd.stats.calls - calls0
    report.duration_s = time.monotonic() - t0
    return report


def nothing_done(report: Report) -> bool:
    """The report of a sync that found nothing to do and had nothing to say (its final report:
    config warnings and invalid input merged in); the first thing :func:`stampable` asks."""
    return not (report.changed or report.drift or report.warnings or report.errors or report.invalid
                or report.kept or report.foreign or report.aborted or report.oom_kills or report.oom_adjusted
                or report.dry_run)


def stampable(report: Report, plan: Plan, applied: Mapping[str, Any], run_dir: Path) -> bool:
    """Whether a full sync's outcome may be stamped (the caller passes its final report: config
    warnings and invalid input merged in)."""
    from sdqos.host import oomevents

    if not nothing_done(report):
        return False
    if plan.machines or plan.kept or getattr(report.desired, "adjustments", ()):  # (a clamp follows usage)
        return False
    names = {u.name for u in plan.units}
    if not set(applied) <= names:
        return False
    record = oomevents.load_record(run_dir)
    units = record.get("units") if isinstance(record, dict) else None
    if isinstance(units, dict) and any(isinstance(v, dict) and v.get("pending") for v in units.values()):
        return False
    return _last_sync_quiet(run_dir)


async def stamp(sd: Systemd, plan: Plan, report: Report, run_dir: Path, digest: str, reads: Reads | None) -> bool:
    """Observe the live state the way :func:`check` will, check it against ``plan``, and write
    the stamp; False (and none written) when anything does not match the plan. ``reads``: what
    the load that made ``plan`` read (``Config.inputs``); none, or one that changed while it was
    read: no stamp. The stamp is encoded once the observation's replies are dropped (at 1000
    pods they were ~1 MB of a warm sync's peak RSS, held while the ~0.3 MB text was built)."""
    data = await _observation(sd, plan, report, run_dir, digest, reads)
    if data is None:
        return False
    try:
        rundir.write(rundir.NOOP, [json.dumps(data, separators=(",", ":"))], run_dir)
    except HostError:
        return False
    return True


async def _observation(sd: Systemd, plan: Plan, report: Report, run_dir: Path, digest: str,
                       reads: Reads | None) -> dict | None:
    """The stamp's data: the live state observed as :func:`check` will observe it, when it
    matches ``plan``; None when anything does not."""
    from sdqos.kube.naming import marked
    from sdqos.plan.properties import MEMORY_PROPERTIES, PERIOD_PROPERTY, owned
    from sdqos.reconcile.live import KUBELET, live_patterns

    if reads is None or not reads.stable:
        return None
    if not cgroupfs.available() or not (_empty(cgroupfs.cgroup_of(plan.root_slice, "")) and _empty(MACHINE_SLICE)):
        return None
    planned = {u.name: u for u in plan.units}
    _, version = await sd.version()
    patterns = live_patterns(plan)
    listed = await sd.read_units(patterns, {"org.freedesktop.systemd1.Unit": ["Description"]})
    rows = _rows(listed)
    for name, (load_state, active, _sub, description) in rows.items():
        if name in planned:
            if active != "active" or not marked(description):
                return None
        elif name != KUBELET or active == "active":
            return None
    if any(u.create and u.name not in rows for u in plan.units):
        return None  # a unit to create (a container's scope is made when it starts: not listed, no process)
    page = os.sysconf("SC_PAGE_SIZE")
    units: list = []
    shapes: dict[tuple, int] = {}
    checked: list[tuple[str, dict]] = []
    need: dict[str, list] = {}
    for name in rows:
        u = planned.get(name)
        if u is None:
            continue  # kubelet.service, not active
        want = None
        if u.kind not in NEED_KINDS:
            want = cgroupfs.unit_expected(u.properties, plan.cgroup, page)
        if want is None:
            need[u.name] = [u.kind, dict(u.properties)]
            continue
        cg = cgroupfs.cgroup_of(u.name, u.slice)
        checked.append((cg, want))
        units.append([cg.strip("/"), shapes.setdefault(tuple(want), len(shapes))])
    props = list(owned(plan.cgroup))
    if need:
        got = await sd.read_units(list(need), _ifaces(props))
        if set(got) != set(need):
            return None
        for name, (kind, want_props) in need.items():
            st = got[name]
            if not _props_in_place(kind, want_props, st, props, PERIOD_PROPERTY, list(MEMORY_PROPERTIES)):
                return None
            # their kernel files too, as the full path checks them (live.check_kernel): a value
            # written into a tier's cgroup behind systemd's back is not in its D-Bus properties
            held = {k: _held(v) for k, v in st.props.items() if k in props}
            want = cgroupfs.held_expected(want_props, held, plan.cgroup, page)
            if want is not None and st.control_group:
                checked.append((st.control_group, want))
                units.append([st.control_group.strip("/"), shapes.setdefault(tuple(want), len(shapes))])
    shape_list = [list(files) for files in shapes]
    raw = _raw(units, shape_list)
    if raw is None or any(cgroupfs.holds(cg, want) != want for cg, want in checked) \
            or _raw(units, shape_list) != raw:
        return None  # a value changed while it was read: whatever it is now, it is not stamped
    kernel = {"shapes": shape_list, "units": units, "digest": raw}
    data = {"version": VERSION, "taken": time.time(), "inputs": digest, "root": cgroupfs.cgroup_of(plan.root_slice, ""),
            "systemd": version, "patterns": patterns, "units": rows, "kernel": kernel, "need": need,
            "owned": props, "period": PERIOD_PROPERTY, "memory": list(MEMORY_PROPERTIES),
            "unchanged": list(report.unchanged), "rundir": run_dir_identity(run_dir), "reads": reads.as_json()}
    return data
