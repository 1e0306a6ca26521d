"""Which OOM kills are new: the record of kills already reported, the kernel's counters now and the
kernel log's new kill records → the new kills, each once, and the record to keep. Pure.

Two sources, one count. A unit whose cgroup exists has a counter (``oom_kill``): its rise is the
number of new kills, and the log's records for that unit give them a PID, a command and a time
(oldest first). A record the counter has not caught up with yet waits one sync; a kill the counter
shows and the log does not is reported with the time it was first seen, and a log record that
arrives later fills in that kill instead of counting again. A unit whose cgroup is gone (a scope
whose last process was the victim ends with it) has no counter: its log records are its kills. A
cgroup made again under the same name is a new inode, its counter counted from 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict


class Watched(NamedTuple):
    """A planned unit kills are attributed to: its cgroup path, and who it is for. (A tuple: a
    sync makes one per container, thousands.)"""

    unit: str
    cgroup: str
    kind: str  # container | vm | pod | tier | node ...
    name: str = ""  # shop/web/nginx, vm db1
    qos: str | None = None
    limit: int | None = None  # its memory limit in bytes (None: unlimited)


@dataclass(frozen=True)
class Kill:
    """A new OOM kill, as sync prints it and status shows it."""

    unit: str
    name: str
    kind: str
    qos: str | None
    detail: dict  # time, pid, comm, constraint, limit, limitUnit, source


class _UnitRecord(TypedDict):
    """What the record keeps per unit between syncs."""

    ino: int | None  # the cgroup's inode its counter was read from
    count: int  # the counter's value then
    undetailed: int  # kills reported from the counter alone, waiting for their log record
    unnamed: int  # kills reported from the counter alone that no log record ever named (all time)
    pending: list[dict[str, Any]]  # log records the counter has not caught up with yet
    total: int
    last: dict[str, Any] | None
    name: str
    kind: str
    qos: str | None


@dataclass
class Result:
    record: dict
    kills: list[Kill] = field(default_factory=list)


def attribute(memcg: str, units: list[Watched]) -> Watched | None:
    """The deepest unit whose cgroup holds ``memcg`` (a path from the hierarchy's root, which may
    have a cgroup namespace's path in front)."""
    best = None
    probe = memcg.rstrip("/") + "/"
    for w in units:
        c = w.cgroup.rstrip("/")  # starts with "/": a match starts at a path boundary
        if c and f"{c}/" in probe and (best is None or len(c) > len(best.cgroup.rstrip("/"))):
            best = w
    return best


def _detail(log, units: list[Watched], w: Watched) -> dict:
    limit_unit = attribute(log.oom_memcg, units) if log.oom_memcg else None
    src = limit_unit or w
    return {"time": log.time, "pid": log.pid, "comm": log.comm, "constraint": log.constraint,
            "limit": src.limit, "limitUnit": src.unit, "source": "kernel log", "seq": log.seq, "event": log.event}


def _counted(now: float, w: Watched) -> dict:
    return {"time": now, "pid": None, "comm": None, "constraint": None, "limit": w.limit, "limitUnit": w.unit,
            "source": "counter"}


def account(record: dict, units: list[Watched], counters: dict, log: list | None, log_seq: int | None,
            now: float) -> Result:
    """``counters``: unit → Counter (ino, count) for the units whose counter was read (None: its
    cgroup is gone); ``log``: the kernel log's kill records after ``record['seq']`` (None: the log
    was unreadable), ``log_seq`` the last sequence number read."""
    kept = record.get("units")
    old_units: dict[str, Any] = kept if isinstance(kept, dict) else {}
    new_units: dict[str, Any] = {}
    out = Result({"seq": log_seq if log is not None else record.get("seq"), "units": new_units})
    by_unit = {w.unit: w for w in units}
    fresh: dict[str, list] = {}
    for rec in sorted(log or [], key=lambda r: r.seq):
        w = attribute(rec.task_memcg, units)
        if w is not None:
            fresh.setdefault(w.unit, []).append(rec)
    for unit in sorted(set(counters) | set(fresh) | set(old_units)):
        w = by_unit.get(unit)
        was = old_units.get(unit)
        old: dict[str, Any] = was if isinstance(was, dict) else {}
        if w is None:  # not planned now, or not asked about: kept as it is
            new_units[unit] = old
            continue
        st: _UnitRecord = {"ino": old.get("ino"), "count": int(old.get("count") or 0), "undetailed": int(old.get("undetailed") or 0),
              "unnamed": int(old.get("unnamed") or 0), "pending": [dict(p, carried=True) for p in old.get("pending") or []],
              "total": int(old.get("total") or 0), "last": old.get("last"),
              "name": w.name, "kind": w.kind, "qos": w.qos}
        details = [_detail(r, units, w) for r in fresh.get(unit, [])]
        # A kill already reported from the counter alone: its log record, printed late, fills it
        # in, once. Only records beyond what the counter's rise now claims can be such late lines
        # (the oldest of them): a kill whose line the kernel's rate limit dropped is never named,
        # and the next kill's line is that kill's, not the earlier one's.
        c = counters.get(unit)
        rise = 0 if c is None else c.count if c.ino != st["ino"] else max(0, c.count - st["count"])
        late = min(st["undetailed"], len(details), max(0, len(st["pending"]) + len(details) - rise))
        for d in details[:late]:
            st["last"] = d
        details = details[late:]
        st["undetailed"] -= late
        st["unnamed"] = max(0, st["unnamed"] - late)
        st["pending"] += [dict(d, carried=False) for d in details]
        reported: list[dict] = []
        if unit in counters:
            if c is not None:
                st["ino"], st["count"] = c.ino, c.count
                claim, st["pending"] = st["pending"][:rise], st["pending"][rise:]
                reported += claim
                extra = rise - len(claim)
                reported += [_counted(now, w)] * extra
                st["undetailed"] += extra
                st["unnamed"] += extra
            else:
                st["ino"], st["count"], st["undetailed"] = None, 0, 0
        if unit not in counters or counters[unit] is None:
            reported += st["pending"]  # no counter to wait for: the log's records are the kills
            st["pending"] = []
        else:  # waited one sync and the counter never rose: a kill in an earlier cgroup of that name
            reported += [p for p in st["pending"] if p.get("carried")]
            st["pending"] = [p for p in st["pending"] if not p.get("carried")]
        reported = [{k: v for k, v in d.items() if k != "carried"} for d in reported]
        reported.sort(key=lambda d: d["time"])
        st["pending"] = [{k: v for k, v in p.items() if k != "carried"} for p in st["pending"]]
        if reported:
            st["total"] += len(reported)
            st["last"] = reported[-1]
            out.kills += [Kill(unit, w.name, w.kind, w.qos, d) for d in reported]
        if st["total"] or st["pending"] or st["count"]:  # a counter at 0 needs no baseline: kept small
            new_units[unit] = st
    return out
