"""``/proc``: the one place sdqos writes outside D-Bus — ``oom_score_adj``.

systemd refuses ``OOMScoreAdjust`` on scopes (through at least 256), so a container's OOM score
is written to ``/proc/PID/oom_score_adj`` for each of its processes; children inherit it at fork.
A PID is only written after checking that it really is in the expected cgroup, so a PID that was
reused, or that belongs to another PID namespace than systemd's, is never touched.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")

SET, SAME, GONE, DENIED, ELSEWHERE = "set", "same", "gone", "denied", "elsewhere"


@dataclass(frozen=True)
class OomResult:
    """What became of one process's oom_score_adj."""

    pid: int
    outcome: str  # set | same | gone | denied | elsewhere
    before: int | None = None


def systemd_cgroup_paths(pid: int, proc: Path = PROC) -> list[str] | None:
    """The process's paths in systemd's hierarchies (v1's name=systemd, v2's unified) from
    /proc/PID/cgroup, name=systemd first; None when the process is gone."""
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return None
        raise
    found: dict[str, str] = {}
    for line in text.splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if controllers == "name=systemd" or (controllers == "" and hid == "0"):
            found[controllers] = path
    return [found[k] for k in ("name=systemd", "") if k in found]


def in_cgroup(pid: int, cgroup: str, proc: Path = PROC) -> bool | None:
    """Whether /proc/PID/cgroup puts the process at or below ``cgroup`` (a systemd ControlGroup
    path such as ``/kubepods.slice/…/x.scope``) in the named systemd hierarchy or cgroup v2.
    None: the process is gone. Paths are compared by suffix, since a reader in another cgroup
    namespace sees them with a prefix."""
    paths = systemd_cgroup_paths(pid, proc)
    if paths is None:
        return None
    want = cgroup.rstrip("/")
    return any(p.rstrip("/").endswith(want) or f"{want}/" in p.rstrip("/") + "/" for p in paths)


def unit_of(pid: int, proc: Path = PROC) -> tuple[str, str] | None:
    """(innermost unit, its cgroup path) the process runs in, from /proc/PID/cgroup (v1's
    name=systemd line, or v2's); ("", path) when no unit (the root cgroup); None when it is gone."""
    paths = systemd_cgroup_paths(pid, proc)
    if paths is None:
        return None
    if not paths:
        return ("", "")
    parts = [p for p in paths[0].split("/") if p]
    for i in range(len(parts) - 1, -1, -1):  # a delegated sub-cgroup (…/x.scope/payload) belongs to x.scope
        if parts[i].endswith((".scope", ".service", ".socket", ".mount", ".swap")):
            return parts[i], "/" + "/".join(parts[: i + 1])
    return ("", paths[0])


def read_oom_score_adj(pid: int, proc: Path = PROC) -> int | None:
    try:
        return int((proc / str(pid) / "oom_score_adj").read_text().strip())
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def write_oom_score_adj(pid: int, value: int, cgroup: str | None = None, proc: Path = PROC) -> OomResult:
    """Set one process's oom_score_adj if it differs. ``cgroup``: only if the process is there."""
    if cgroup is not None:
        where = in_cgroup(pid, cgroup, proc)
        if where is None:
            return OomResult(pid, GONE)
        if not where:
            return OomResult(pid, ELSEWHERE)
    before = read_oom_score_adj(pid, proc)
    if before is None:
        return OomResult(pid, GONE)
    if before == value:
        return OomResult(pid, SAME, before)
    try:
        fd = os.open(proc / str(pid) / "oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        return OomResult(pid, GONE, before)
    except PermissionError:
        return OomResult(pid, DENIED, before)
    try:
        os.write(fd, f"{value}\n".encode())
    except PermissionError:
        return OomResult(pid, DENIED, before)  # lowering below 0 needs CAP_SYS_RESOURCE
    except OSError as exc:
        if exc.errno in (errno.ESRCH, errno.ENOENT):
            return OomResult(pid, GONE, before)
        if exc.errno == errno.EACCES:
            return OomResult(pid, DENIED, before)
        raise
    finally:
        os.close(fd)
    return OomResult(pid, SET, before)


def descendants(pids: list[int], proc: Path = PROC) -> list[int]:
    """The given PIDs and every process below them (by PPid), each once, parents first."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        found = _state_and_parent(entry)
        if found is not None:
            children.setdefault(found[1], []).append(int(entry.name))
    out, seen = [], set()
    queue = list(pids)
    while queue:
        pid = queue.pop(0)
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        queue.extend(sorted(children.get(pid, [])))
    return out


def zombies(pids: list[int], proc: Path = PROC) -> list[int]:
    """Those of ``pids`` that exited and are not reaped yet: a zombie holds its PID (it is in
    /proc/loadavg's task count, which pid.available reads) until its parent, or PID 1, waits for
    it. A PID that is gone, or that is a live process again (reused), is not one."""
    return [pid for pid in pids if (_state_and_parent(proc / str(pid)) or ("", 0))[0] == "Z"]


def orphan_zombies(proc: Path = PROC) -> list[int]:
    """Zombies whose parent is PID 1: processes whose parent died with them (a killed pod's), which
    PID 1 reaps — systemd one per turn of its event loop, so a fork bomb's hundreds take it a while
    and hold their PIDs until then."""
    return [int(e.name) for e in proc.iterdir() if e.name.isdigit() and _state_and_parent(e) == ("Z", 1)]


def _state_and_parent(entry: Path) -> tuple[str, int] | None:
    """A process's state letter and parent PID from ``/proc/PID/stat`` (after the command name,
    which may hold ") " itself); None when it is gone."""
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return None
    state, ppid = stat.rsplit(")", 1)[1].split()[:2]
    return state, int(ppid)


def pid_exists(pid: int, proc: Path = PROC) -> bool:
    return (proc / str(pid)).exists()


def set_affinity(pid: int, cpus: frozenset[int], cgroup: str, proc: Path = PROC,
                 moved: list[frozenset[int]] | None = None, *, dry_run: bool = False) -> tuple[int, int]:
    """Every thread of process ``pid`` (``/proc/PID/task``) gets CPU affinity ``cpus`` where it
    differs, only while the process is in ``cgroup``. Returns (threads changed, threads refused);
    a thread or process that exited meanwhile is skipped. ``moved``: each changed thread's
    affinity before (a thread the kernel left as it was, its cpuset narrower, is not changed).
    ``dry_run``: nothing is set; the threads whose affinity differs count as changed."""
    if not in_cgroup(pid, cgroup, proc):
        return 0, 0
    try:
        tids = [int(t) for t in os.listdir(proc / str(pid) / "task") if t.isdigit()]
    except OSError:
        return 0, 0
    changed = refused = 0
    for tid in tids:
        try:
            before = os.sched_getaffinity(tid)
            if before == cpus:
                continue
            if not dry_run:
                os.sched_setaffinity(tid, cpus)
                if os.sched_getaffinity(tid) == before:
                    continue
            changed += 1
            if moved is not None:
                moved.append(frozenset(before))
        except ProcessLookupError:
            continue
        except OSError:  # EPERM (another user's thread without CAP_SYS_NICE), EINVAL (no such CPU online)
            refused += 1
    return changed, refused


def thread_cpus(pid: int, proc: Path = PROC) -> dict[int, str]:
    """Each thread of process ``pid`` → its CPU affinity as the kernel shows it
    (``Cpus_allowed_list`` of ``/proc/PID/task/TID/status``, a CPU list such as ``0-1,4``). A
    process or thread that is gone, or a status without the field, is left out."""
    try:
        tids = [int(t) for t in os.listdir(proc / str(pid) / "task") if t.isdigit()]
    except OSError:
        return {}
    out: dict[int, str] = {}
    for tid in sorted(tids):
        try:
            text = (proc / str(pid) / "task" / str(tid) / "status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out[tid] = line.partition(":")[2].strip()
                break
    return out
