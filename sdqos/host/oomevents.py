"""What the kernel says about OOM kills: each memcg's kill counter, the kernel log's kill records,
and the record of kills already reported (``/run/sdqos/oom-kills.json``).

The counter is the kernel's own: ``oom_kill`` in ``memory.events`` on cgroup v2 (hierarchical: a
kill anywhere below the unit counts), in ``memory.oom_control`` on v1 (kernels ≥ 4.13; counted in
the victim's memcg only, so the unit's subtree is summed). The counter says how many, never who or
when; the kernel log does (``/dev/kmsg``: ``oom-kill:…,task_memcg=…,task=…,pid=…`` then ``Killed
process PID (comm)``). Its memcg paths are from the hierarchy's root, not from a cgroup namespace's,
so a unit is matched by the path's end. Reads only; an unreadable log (no privilege) is no error:
the counter alone then tells, with the time it was first seen.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from sdqos.host import rundir

ROOT = Path("/sys/fs/cgroup")
KMSG = "/dev/kmsg"
RECORD_NAME = rundir.OOM_KILLS.name  # (the store's table)


@dataclass(frozen=True)
class Counter:
    """A memcg's OOM kill count, with the cgroup's identity: a scope made again under the same
    name is a new directory (a new inode) whose count starts at 0."""

    ino: int
    count: int


@dataclass(frozen=True)
class LogKill:
    """One ``Killed process`` record of the kernel log."""

    seq: int
    time: float  # Unix time (the log's boot-relative stamp, moved to the wall clock)
    pid: int
    comm: str
    task_memcg: str  # where the victim ran
    oom_memcg: str | None  # whose limit was hit (None: the node ran out)
    constraint: str  # CONSTRAINT_MEMCG (a cgroup's limit), CONSTRAINT_NONE (the node), ...
    event: int = 0  # the sequence number of its OOM's ``oom-kill:`` line: a group kill's processes share it


def _int_field(text: str, key: str) -> int | None:
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key:
            try:
                return int(v)
            except ValueError:
                return None
    return None


def read_counter(cgroup: str, mode: str, root: Path = ROOT) -> Counter | None:
    """The OOM kill count of a unit's cgroup; None when it does not exist (a scope that ended) or
    the kernel has no counter there."""
    rel = cgroup.strip("/")
    if mode == "v1":
        top = root / "memory" / rel
        try:
            ino = os.stat(top).st_ino
        except OSError:
            return None
        total, found = 0, False
        for dirpath, _subdirs, files in os.walk(top):  # v1 counts in the victim's memcg only
            if "memory.oom_control" not in files:
                continue
            try:
                n = _int_field(Path(dirpath, "memory.oom_control").read_text(), "oom_kill")
            except OSError:
                continue
            if n is not None:
                total, found = total + n, True
        return Counter(ino, total) if found else None
    d = root / rel
    try:
        ino = os.stat(d).st_ino
        n = _int_field((d / "memory.events").read_text(), "oom_kill")
    except OSError:
        return None
    return None if n is None else Counter(ino, n)


# The kernel's OOM lines, each matched whole against the format mm/oom_kill.c prints (Linux 4.19 to
# 6.18; Debian 12, 13 and sid), never searched for in a message: a kernel line that quotes user
# text (a segfault's "comm[pid]: segfault at ... in FILE[...]" names the file) is no OOM line, and
# neither is a record userspace wrote to /dev/kmsg (another facility than the kernel's).
_OOM = (r"oom-kill:constraint=(?P<constraint>CONSTRAINT_[A-Z_]+),nodemask=(?:\(null\)|[0-9,-]*)"
        r"(?:,cpuset=.*?,mems_allowed=[0-9,-]*)?"  # dump_oom_victim, cpuset_print_current_mems_allowed
        r"(?:,oom_memcg=(?P<oom>/.*?)|,global_oom),task_memcg=(?P<task>/.*?)"  # mem_cgroup_print_oom_context
        r",task=(?P<comm>.*),pid=(?P<pid>\d+),uid=\d+")
_GROUP = r"Tasks in (?P<group>/.*) are going to be killed due to memory\.oom\.group set"  # mem_cgroup_print_oom_group
_KILLED = (r"(?:Out of memory|Memory cgroup out of memory|Out of memory \(oom_kill_allocating_task\)): "
           r"Killed process (?P<pid>\d+) \((?P<comm>.*)\) total-vm:\d+kB, anon-rss:\d+kB, file-rss:\d+kB, "
           r"shmem-rss:\d+kB(?:, UID:\d+ pgtables:\d+kB oom_score_adj:-?\d+)?")  # __oom_kill_process
LOG_KERN = 0  # the facility of the kernel's own records (userspace's writes to /dev/kmsg: LOG_USER or another)


@functools.cache
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """The kernel log's OOM lines, compiled when the log is read (after a kill), not by every sync
    that imports this module (~9 M instructions)."""
    return re.compile(_OOM), re.compile(_GROUP), re.compile(_KILLED)


def oom_line(msg: str) -> tuple[str, dict] | None:
    """A kernel message → ``("oom", fields)`` for an OOM's ``oom-kill:`` line, ``("group",
    fields)`` for its ``memory.oom.group`` line, ``("killed", fields)`` for a ``Killed process``
    line; None for any other message (each is matched whole, by its exact format)."""
    for kind, pattern in zip(("oom", "group", "killed"), _patterns()):
        m = pattern.fullmatch(msg)
        if m:
            return kind, m.groupdict()
    return None


def parse_log(records, clock_offset: float) -> list[LogKill]:
    """``(seq, usec since boot, message)`` records of the kernel → the kills among them. A
    ``Killed process`` line takes its memcg from the ``oom-kill:`` line before it (same PID; the
    other processes of a group kill from the ``Tasks in CGROUP are going to be killed due to
    memory.oom.group set`` line). A kill line with neither is another OOM's whose ``oom-kill:``
    line the kernel's rate limit left out: it is not placed (a scope's own counter still counts it)."""
    out = []
    last: dict | None = None
    for seq, usec, msg in records:
        got = oom_line(msg)
        if got is None:
            continue
        kind, f = got
        if kind == "oom":
            last = dict(f, event=seq)
            continue
        if kind == "group":
            if last is not None:
                last["group"] = f["group"]
            continue
        if last is None:
            continue
        pid = int(f["pid"])
        if int(last["pid"]) == pid:
            task = last["task"]
        elif "group" in last:
            task = last["group"]
        else:
            continue  # another OOM's, whose oom-kill: line was rate-limited away: nothing places it
        out.append(LogKill(seq, clock_offset + usec / 1e6, pid, f["comm"], task, last["oom"] or None,
                           last["constraint"], last["event"]))
    return out


def select_records(raw, after_seq: int | None) -> tuple[list[tuple[int, int, str]], int | None]:
    """The kernel's OOM records of ``raw`` (``(seq, usec, message, facility)`` in log order) above
    ``after_seq``, as ``(seq, usec, message)``, and the last sequence number seen. Only the
    kernel's own records (facility LOG_KERN) count. A kill's ``Killed process`` line takes its
    memcg from the ``oom-kill:`` line (and a group's from the ``memory.oom.group`` line) before
    it, which an earlier read may have taken alone: the kernel prints that line, then counts and
    kills, then prints the ``Killed process`` line. So the newest OOM's context lines at or below
    ``after_seq`` come first, as context: they name no kill of their own, and a read split
    anywhere finds the kills one read of the whole log finds."""
    records: list[tuple[int, int, str]] = []
    context: list[tuple[int, int, str]] = []
    last = after_seq
    for seq, usec, msg, facility in raw:
        last = seq if last is None else max(last, seq)
        if facility != LOG_KERN:
            continue
        got = oom_line(msg)
        if got is None:
            continue
        if after_seq is not None and seq <= after_seq:
            if got[0] == "oom":
                context = [(seq, usec, msg)]
            elif got[0] == "group" and context:
                context.append((seq, usec, msg))
            continue
        records.append((seq, usec, msg))
    return context + records if records else [], last


def _kmsg_records(fd: int):
    """``(seq, usec, first line of the message, facility)`` of each record /dev/kmsg gives (one a
    read: ``PRI,SEQ,USEC,FLAGS[,...];MESSAGE``, PRI = facility * 8 + level)."""
    while True:
        try:
            raw = os.read(fd, 8192)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # overwritten while we read: go on with the next
                continue
            if exc.errno == errno.EAGAIN:
                return
            raise
        if not raw:
            return
        head, _, body = raw.decode("utf-8", "replace").partition(";")
        fields = head.split(",")
        try:
            pri, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            continue
        yield seq, usec, body.split("\n", 1)[0], pri >> 3


def read_log(after_seq: int | None, path: str = KMSG) -> tuple[list[LogKill], int | None] | None:
    """The kills the kernel log holds with a sequence number above ``after_seq``, and the last
    sequence number read; None when the log cannot be read (no privilege, no device)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        records, last = select_records(_kmsg_records(fd), after_seq)
    except OSError:
        return None
    finally:
        os.close(fd)
    return parse_log(records, time.time() - time.monotonic()), last


def kills_since_boot(path: str = "/proc/vmstat") -> int | None:
    """The kernel's count of all OOM kills (``oom_kill`` in /proc/vmstat, kernel ≥ 4.13): while it
    stands still there is nothing new in the log, and reading the whole log (~25 ms for 1200
    records) is skipped."""
    try:
        with open(path, "rb") as fh:
            return _int_field(fh.read().decode(), "oom_kill")
    except (OSError, UnicodeDecodeError):
        return None


def load_record(run_dir: Path = rundir.DEFAULT_RUN_DIR) -> dict:
    """The kills reported so far and the counters they were read from; {} when there is none (or
    it is not a plain file of ours: rundir.load_json)."""
    return rundir.load(rundir.OOM_KILLS, run_dir)


def save_record(record: dict, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> None:
    """Atomically, root-only, as the rest of /run/sdqos (HostError on failure)."""
    rundir.write(rundir.OOM_KILLS, json.dumps(record, sort_keys=True, separators=(",", ":")), run_dir)
