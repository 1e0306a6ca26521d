"""A full sync checks the kernel files of every unit it trusts the kernel for (~25 000 small reads
at 5000 pods: as long as loading and planning). Those are the units the last sync applied, which
applied.json names with their values. So a forked child (:func:`prefetch`) checks them while this
process loads the config and plans, on another CPU, as the live read would: each applied slice's
files against what the kernel prints for its applied values (:func:`sdqos.host.cgroupfs.holds`).
It hands back only the slices it could not confirm — usually none. The live read then trusts a
planned unit without reading it when the plan wants exactly what was applied and the child
confirmed it (:func:`confirmed`); it reads every other unit itself. So a unit's answer is what
reading it gave when the child read it, a moment before the listing: as if the sync had read it
then."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from sdqos.host import cgroupfs, children, facts, rundir
from sdqos.plan.properties import owned


# applied.json is ~250 bytes a pod: below ~100 pods their reads take a few milliseconds, no more
# than the fork and the copy-on-write faults it costs this process
MIN_BYTES = 24 * 1024
# How long the first live read waits for the child once the sync has planned (it had all that time
# already; its reads take ~0.1 s at 5000 pods): a child that does not end by then (stopped, stuck)
# is killed and reaped, and the live read reads every unit itself. The sync holds its lock meanwhile.
WAIT = 5.0


class KernelCheck:
    """The child :func:`prefetch` started to check the kernel: what it found is taken once, by the
    first live read; :meth:`close` stops and reaps it if nothing took it (the sync ended before)."""

    def __init__(self, child: children.Child, path: Path, identity: str):
        self._child: children.Child | None = child
        self._path, self._identity = path, identity

    def take(self) -> frozenset[str] | None:
        """The applied slices the child could not confirm in place, waiting for it (at most
        :data:`WAIT` seconds: then it is killed and reaped); None when it did not deliver, or applied.json is no longer the file it checked against (then, and on
        every later call, nothing is confirmed)."""
        child, self._child = self._child, None
        got = children.collect(child, WAIT) if child is not None else None
        if got is None or _identity(self._path) != self._identity:
            return None
        return frozenset(got[0].split(";")) if got[0] else frozenset()

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            children.kill(child)


def prefetch(run_dir: Path, mode: str) -> KernelCheck | None:
    """Start the child that checks the kernel files of the slices the last sync applied. None,
    nothing started: nothing (or little: :data:`MIN_BYTES`) applied yet, one CPU, other threads
    running, no view of systemd's cgroup tree, or no child could be made; the live read then reads
    every file itself."""
    if children.usable_cpus() < 2 or not children.may_fork() or not cgroupfs.available():
        return None
    path = rundir.APPLIED.path(run_dir)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size < MIN_BYTES:
        return None
    before = rundir.identity(st)
    raw = rundir.read_private(path)
    if raw is None or _identity(path) != before:
        return None  # (changed while read: no claim about what the sync will load)
    child = children.spawn(lambda items: [";".join(doubtful(items[0], mode))], [raw])  # (the child decodes it)
    return KernelCheck(child, path, before) if child is not None else None


def _identity(path: Path) -> str | None:
    """applied.json's identity (the store's): while it holds, the sync loads the bytes the child
    checked against (every write of it changes its ctime)."""
    try:
        return rundir.identity(os.stat(path))
    except OSError:
        return None


@lru_cache(maxsize=2)
def _owned(mode: str) -> frozenset[str]:
    return frozenset(owned(mode))


def _values(record: Mapping[str, Any], props: frozenset[str]) -> dict[str, Any]:
    """The properties of an applied record (it also holds a pod's requests and key)."""
    return {k: v for k, v in record.items() if k in props}


def doubtful(raw: bytes, mode: str, root: Path = cgroupfs.ROOT) -> list[str]:
    """In the child: the slices of applied.json (``raw``) whose kernel files do not hold what
    their applied values make the kernel hold — a file differs or is missing, or the values are
    ones the kernel cannot be checked for — as the live read compares them."""
    applied = json.loads(raw)
    props = _owned(mode)
    page = facts.page_size()
    wants: dict[tuple, dict | None] = {}
    out = []
    for name, record in applied.items():
        if not name.endswith(".slice") or not isinstance(record, dict):
            continue
        values = _values(record, props)
        key = tuple(values.items())
        if key not in wants:
            wants[key] = cgroupfs.unit_expected(values, mode, page)
        want = wants[key]
        if want is None or cgroupfs.holds(cgroupfs.cgroup_of(name, ""), want, root) != want:
            out.append(name)
    return out


def confirmed(name: str, planned: Mapping[str, int], applied: Mapping[str, Mapping[str, Any]],
              doubts: frozenset[str] | None, mode: str) -> bool:
    """Whether the live read may take unit ``name`` as holding its ``planned`` values without
    reading it: the child checked it (a slice the last sync applied, not among ``doubts``) and the
    plan wants exactly the values it was checked against."""
    if doubts is None or name in doubts or not name.endswith(".slice"):
        return False
    record = applied.get(name)
    return record is not None and _values(record, _owned(mode)) == planned
