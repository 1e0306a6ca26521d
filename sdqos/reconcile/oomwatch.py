"""OOM kills of the plan's containers and VMs: read the kernel (``host/oomevents.py``), account
(``reconcile/oomkills.py``), and for ``sync`` remember what was reported, so each kill is told once.

``status`` asks the same question without writing: it shows what sync reported plus whatever the
kernel has counted since.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from sdqos import humanize as H
from sdqos.errors import HostError
from sdqos.host import cgroupfs, oomevents, rundir
from sdqos.kube.naming import MACHINE_SLICE, POD, ROOT_SLICE, VM, parent_slice
from sdqos.plan.engine import Plan
from sdqos.plan.properties import INFINITY, memory_limit
from sdqos.reconcile.oomkills import Kill, Result, Watched, account

COUNTED = ("container", "vm")  # the leaves: a kill below a pod or tier is its container's
PLACED = ("pod", "container", "vm")  # a log record below none of these (a tier, the node) is not a workload's


def watched(plan: Plan, kinds: tuple[str, ...] | None = None, names=None) -> list[Watched]:
    """The plan's units (of ``kinds``; of ``names``, a set of unit names, when given) with their
    cgroup paths, names and memory limits, and declared VMs whose scope ended (by their scope's
    name: a kill may be what ended it)."""
    out = []
    slices: dict[str, str] = {}
    qos = {(POD, pp.key): pp.qos for pp in plan.pods} | {(VM, v.vm.name): v.qos for v in plan.vms}
    for u in plan.units:
        if kinds is not None and u.kind not in kinds or names is not None and u.name not in names:
            continue
        o = u.owner
        name = "" if o is None else f"vm {o.name}" if o.kind == VM else f"{o.name}/{o.container}" if o.container else o.name
        mem = memory_limit(u.properties)
        cgroup = _slice_path(u.name, slices) if u.name.endswith(".slice") else f"{_slice_path(u.slice, slices)}/{u.name}"
        out.append(Watched(u.name, cgroup, u.kind, name, qos.get((o.kind, o.name)) if o is not None else None,
                           None if mem == INFINITY else mem))
    if kinds is None or "vm" in kinds:  # a declared VM whose scope ended (its qemu OOM-killed?)
        bound = {u.name for u in plan.units}
        for v in plan.vms:
            if v.scope and v.scope not in bound and (names is None or v.scope in names):
                mem = memory_limit(v.properties)
                out.append(Watched(v.scope, f"/{MACHINE_SLICE}/{v.scope}", "vm", f"vm {v.vm.name}", v.qos,
                                   None if mem == INFINITY else mem))
    return out


def _slice_path(name: str, memo: dict[str, str]) -> str:
    """cgroupfs.cgroup_of for a slice ("" for the root), each parent computed once: a sync asks
    for thousands of scopes in a few hundred slices."""
    path = memo.get(name)
    if path is None:
        path = "" if name == ROOT_SLICE else _slice_path(parent_slice(name), memo) + "/" + name
        memo[name] = path
    return path


def observe_kills(plan: Plan, record: dict, running: dict[str, str] | None = None, *, root: Path = cgroupfs.ROOT,
                  kmsg: str = oomevents.KMSG, vmstat: str = "/proc/vmstat") -> Result | None:
    """The kills since ``record``; None where this process does not see systemd's cgroup tree.
    ``running``: scope → cgroup of the scopes with processes (what sync and status observed): only
    their counters are read (a scope without processes is gone, and its kills are in the log)."""
    if root == cgroupfs.ROOT and not cgroupfs.available():
        return None
    seq = record.get("seq") if isinstance(record.get("seq"), int) else None
    everywhere = oomevents.kills_since_boot(vmstat)
    log: list[oomevents.LogKill] | None
    if seq is not None and everywhere is not None and everywhere == record.get("kernelTotal"):
        log, last = [], seq  # no OOM kill anywhere since the last read
    else:  # the log first: a kill between the two reads waits for the counter
        got = oomevents.read_log(seq, kmsg)
        log, last = got if got is not None else (None, seq)
    counted = watched(plan, COUNTED, None if running is None else running.keys())
    if running is None:
        counters = {w.unit: oomevents.read_counter(w.cgroup, plan.cgroup, root) for w in counted}
    else:
        counters = {w.unit: oomevents.read_counter(running[w.unit], plan.cgroup, root) for w in counted
                    if w.unit in running}
    kept = record.get("units")
    old: dict = kept if isinstance(kept, dict) else {}
    waiting = any(isinstance(v, dict) and v.get("pending") for v in old.values())
    # Every workload only to place log records — of those a record can name: a unit's cgroup path
    # ends with its name, and a record is placed in a unit whose path holds the record's, so only
    # a unit named by a component of a record's path can be one (on a host whose other workloads
    # were OOM-killed since boot, the first sync listed all its thousands of units' paths for
    # that: ~0.9 MB of its peak RSS at 1000 pods). The units counted or recorded are looked at too.
    named = None if waiting else _components(log or []) | set(counters) | set(old)
    units = watched(plan, PLACED, named) if log or waiting else counted
    result = account(record, units, counters, log, last, time.time())
    if log is not None and everywhere is not None:
        result.record["kernelTotal"] = logged_total(record, everywhere, len(log))
        result.record["kernelSeen"] = everywhere
    return result


def logged_total(record: Mapping, everywhere: int, logged: int) -> int:
    """The kernel's kill count the next sync compares with to skip reading the log. The kernel
    counts a kill before it prints its ``Killed process`` line, so a read between the two finds
    the count without the line; recording that count would skip the log until the next OOM
    anywhere. So the count is recorded only as far as the log accounted for it, and the next
    sync reads the log again — unless the count stood still since the last read, when the
    missing lines are not coming (a rate-limited OOM prints no oom-kill: line to place them by,
    or the log wrapped)."""
    before, seen = record.get("kernelTotal"), record.get("kernelSeen")
    if type(before) is int and before + logged < everywhere and seen != everywhere:
        return before + logged
    return everywhere


def _components(log: list[oomevents.LogKill]) -> set[str]:
    """Every name in the cgroup paths of kill records: the victim's and whose limit was hit."""
    out: set[str] = set()
    for r in log:
        out.update(r.task_memcg.split("/"))
        if r.oom_memcg:
            out.update(r.oom_memcg.split("/"))
    return out


def track(plan: Plan, running: dict[str, str], run_dir: Path = rundir.DEFAULT_RUN_DIR) -> tuple[list[Kill], str | None]:
    """For sync: the new kills, recorded as reported; an error line if the record cannot be kept."""
    record = oomevents.load_record(run_dir)
    result = observe_kills(plan, record, running)
    if result is None:
        return [], None
    if result.record != record:
        try:
            oomevents.save_record(result.record, run_dir)
        except HostError as exc:
            return result.kills, f"{exc}; these OOM kills may be reported again"
    return result.kills, None


def unnamed_text(n: int) -> str:
    """What status says of a unit's kills the kernel counted and its log never named."""
    return (f"{n} OOM kill{'s' if n != 1 else ''} the kernel log did not name (counted by the kernel; its "
            "report was dropped by the log's rate limit, or the log is not readable)")


def lines(kills: list[Kill]) -> list[str]:
    """One line per OOM kill, for the journal (sync's output under the shipped service): the
    processes one OOM killed together in a unit (memory.oom.group) are one line."""
    out: list[str] = []
    group: list[Kill] = []
    for k in kills + [None]:
        if group and (k is None or k.unit != group[0].unit or k.detail.get("event") is None
                      or k.detail.get("event") != group[0].detail.get("event")):
            out.append(line(group[0], group[1:]))
            group = []
        if k is not None:
            group.append(k)
    return out


def line(k: Kill, also: Sequence[Kill] = ()) -> str:
    d = k.detail
    who = f"{k.name} ({k.unit})" if k.name else k.unit
    proc = f"process {d['pid']} ({d['comm']})" if d.get("pid") is not None else "a process the kernel log did not name"
    if also:
        more = ", ".join(f"{a.detail.get('pid')} ({a.detail.get('comm')})" for a in also)
        proc += f" and {len(also)} more of its group: {more}"
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(d["time"]))
    how = "seen by the kernel log" if d.get("source") == "kernel log" else "counted by the kernel, first seen"
    limit = f"limit {H.size(d['limit'])} of {d['limitUnit']}" if d.get("limit") is not None else "no memory limit"
    cause = " (the node ran out)" if d.get("constraint") == "CONSTRAINT_NONE" else ""
    return f"oom-killed: {who}: the kernel killed {proc}{cause} at {when} ({how}); {limit}"
