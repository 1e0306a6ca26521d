"""``/run/sdqos``: the one store of what sdqos keeps between commands.

Every file sdqos keeps in the run dir is a row of :data:`RECORDS` (its name, schema version,
format, and the one module that writes it); no other module spells a run-dir file name
(``tests/host/test_store.py`` greps the package for each). The store has one identity of a file
(:func:`identity`, :func:`identify`), one trust check (:func:`trusted`: owned by us, not
writable by others; the run dir, the lock and every record), one trusted read
(:func:`read_private`: a plain file, not followed through a symlink), one atomic
write (:func:`write_atomic`: a temp file, fsync unless the row says it need not be durable,
rename), the sync lock, and the schemas of the records read by more than one layer (applied.json,
the last-sync record). :class:`Reads` is what the loader hands back: every input it read, by
identity, so the no-op proof (reconcile/noop.py) checks exactly those.

The record of what sync applied is how drift is told apart from a config change: a live value
that differs from what sdqos last set was changed behind its back. It lives on tmpfs, like the
transient units it describes, so both vanish together at reboot. Everything here is root-only;
a directory or file that is not ours (symlink, wrong owner, group/world-writable) is refused
rather than trusted.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import importlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sdqos.errors import HostError, LockTimeout

DEFAULT_RUN_DIR = Path(os.environ.get("SDQOS_RUN_DIR", "/run/sdqos"))


@dataclass(frozen=True)
class Record:
    """A file of the run dir: its name, the version of its schema (a change of what it holds
    bumps it: readers refuse another), its format, the module that writes it, whether a write is
    fsynced, and whether it is a record the no-op proof counts by identity (``input``)."""

    name: str
    schema: int
    format: str
    writer: str
    durable: bool = True
    input: bool = True

    def path(self, run_dir: Path | str = DEFAULT_RUN_DIR) -> Path:
        return Path(run_dir) / self.name


LOCK = Record("sync.lock", 1, "the holder's PID", "host/rundir.py (SyncLock)", input=False)
APPLIED = Record("applied.json", 1, "JSON {unit: {property: value}}", "reconcile/sync.py (save_applied)",
                 durable=False)  # transient units: no OS crash leaves them behind
LAST_SYNC = Record("last-sync.json", 1, "JSON (record_sync below)", "reconcile/syncpass.py (record_sync)", durable=False,
                   input=False)  # rewritten by every sync: the proof reads what it needs of it
CPU_STATE = Record("cpu_manager_state", 2, "kubelet's CPUManagerCheckpointV2", "host/cpustate.py")
PARSE_CACHE = Record("parsed.json", 11, "lines of JSON (loading/cache.py)", "loading/cache.py", durable=False)
# 11: a file's identity is one string; 10: containers' cpuset (AllowedCPUs, cgroup v2 static CPU manager); 9: VMs keep their uid and spec.cpu.dedicatedCpuPlacement; 8: scopes' ManagedOOMPreference (v2); 7: VMs keep spec.priority and spec.eviction; 6: containers' swap and OOM
# group (v2); 5: pods keep terminationGracePeriodSeconds (4: a plan fragment line after each entry)
OBSERVED = Record("observed.json", 1, "JSON {runtime: [key, answer]}", "reconcile/memo.py")
OOM_KILLS = Record("oom-kills.json", 1, "JSON", "reconcile/oomwatch.py (host/oomevents.py)")
EVICTED = Record("evicted.json", 1, "JSON {evicted, counts}", "reconcile/evict.py")
NOOP = Record("noop.json", 6, "JSON (reconcile/noop.py)", "reconcile/noop.py", input=False)
# 6: a file's identity is one string; 5: the inputs the loader read (Reads); 4: the node's and tiers' kernel files; 3: the memory-limit
# property names come from the stamp
RECORDS = (LOCK, APPLIED, LAST_SYNC, CPU_STATE, PARSE_CACHE, OBSERVED, OOM_KILLS, EVICTED, NOOP)
# Files earlier versions of sdqos kept here and no version reads any more: a per-boot cache of the
# code dataclasses generates, and the parse cache's delta. A sync removes them.
LEFTOVERS = ("dataclass-code.*.marshal", "parsed.delta.json")

LOCK_NAME = LOCK.name
APPLIED_NAME = APPLIED.name
CPU_MANAGER_STATE_NAME = CPU_STATE.name
LAST_SYNC_NAME = LAST_SYNC.name
APPLIED_BATCH = 256  # units encoded per string when applied.json is written
MAX_READ = 256 * 1024 * 1024  # no file sdqos writes here comes near this (applied.json at 5000 units: ~2 MB)
MAX_RECORD = 16 * 1024 * 1024  # the last-sync record, the CPU manager's state


def schemas() -> str:
    """Every record's name and schema version: what a stamp made from them depends on."""
    return ",".join(f"{r.name}:{r.schema}" for r in RECORDS)


def identity(st: os.stat_result) -> str:
    """A file's identity: device, inode, size, mtime, ctime (which only the kernel sets), mode and
    owner. Equal identities: the same bytes, as far as the kernel tells (to the ns). One string,
    not eight ints: the loader keeps one per config file (at 1000 pods a list of ints each was
    ~0.17 MB more of a sync's peak RSS)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_mode}:{st.st_uid}:{st.st_gid}"


def trust(path: str | Path) -> list[int]:
    """Who may write a directory (followed): its mode, owner, group, inode and device — what a
    check of its parents looks at, not its times (/tmp's move all the time); [errno] when it
    cannot be looked at."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return [exc.errno or 0]
    return [st.st_mode, st.st_uid, st.st_gid, st.st_ino, st.st_dev]


def identify(path: str | Path) -> str | list | None:
    """:func:`identity` of a path as it is named (not followed: lstat); for a symlink [its
    identity, its target, the identity of the file it leads to (or the errno)]; None when missing,
    [errno] when it cannot be looked at."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return [exc.errno]
    if not stat.S_ISLNK(st.st_mode):
        return identity(st)
    try:
        return [identity(st), os.readlink(path), identity(os.stat(path))]
    except OSError as exc:
        return [identity(st), exc.errno]


def trusted(st: os.stat_result) -> bool:
    """The one trust check of the run dir and what is in it: owned by us, not writable by group
    or others (then no one else can have changed it)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_private(path: Path, max_bytes: int = MAX_READ, *, ours: bool = False) -> bytes | None:
    """The bytes of a file sdqos keeps in the run dir, or None when it is not a plain file it may
    trust: a symlink is not followed, a FIFO or device is not read (opened non-blocking, so a FIFO
    planted there cannot hang a command), a file larger than ``max_bytes`` is not loaded, and with
    ``ours`` one not owned by us or writable by others is ignored. Missing → None."""
    got = read_private_stat(path, max_bytes, ours=ours)
    return got[0] if got is not None else None


def read_private_stat(path: Path, max_bytes: int = MAX_READ, *,
                      ours: bool = False) -> tuple[bytes, os.stat_result] | None:
    """:func:`read_private`, with the stat of the file the bytes came from (its identity)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        if ours and not trusted(st):
            return None
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return (data, st) if len(data) <= max_bytes else None  # grew while read: not ours to trust
    except OSError:
        return None
    finally:
        os.close(fd)


def load_json(path: Path, max_bytes: int = MAX_READ, *, ours: bool = True) -> dict:
    """A JSON object sdqos keeps in the run dir, read through :func:`read_private`; {} when it is
    missing, not a plain file of ours, too large, or not a JSON object (every such file is a
    record or a cache whose loss costs a question asked again, never a wrong answer)."""
    raw = read_private(path, max_bytes, ours=ours)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:  # (UnicodeDecodeError is one)
        return {}
    return data if isinstance(data, dict) else {}


def ensure_dir(run_dir: Path = DEFAULT_RUN_DIR) -> Path:
    """Create the run dir 0755 if missing; refuse one that another user could tamper with."""
    root = os.geteuid() == 0
    try:
        os.mkdir(run_dir, 0o755)
    except FileExistsError:
        pass
    except OSError as exc:
        hint = "; run sdqos as root" if not root and exc.errno in (errno.EACCES, errno.EPERM) else ""
        raise HostError(f"cannot create {run_dir}: {exc.strerror}{hint}") from None
    st = os.lstat(run_dir)
    if not stat.S_ISDIR(st.st_mode):
        raise HostError(f"{run_dir} is not a directory (symlink?); refusing to use it")
    if not root and st.st_uid == 0:
        raise HostError(f"{run_dir} belongs to root: run sdqos as root")
    if not trusted(st):
        raise HostError(f"{run_dir} is writable by others or not owned by us; refusing to use it")
    return run_dir


class SyncLock:
    """An exclusive flock on ``sync.lock``: two syncs never interleave. The holder's PID is in the
    file, so the second one can say who it waited for."""

    def __init__(self, run_dir: Path = DEFAULT_RUN_DIR, timeout: float = 60.0):
        self.path = LOCK.path(run_dir)
        self.timeout = timeout
        self.fd: int | None = None

    def __enter__(self) -> "SyncLock":
        ensure_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            why = "it is a symlink; refusing it" if exc.errno == errno.ELOOP else exc.strerror
            raise HostError(f"cannot open the lock file {self.path}: {why}") from None
        if not trusted(os.fstat(fd)):
            os.close(fd)
            raise HostError(f"the lock file {self.path} is not ours or is writable by others; refusing it")
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise HostError(f"cannot lock {self.path}: {exc.strerror}") from None
                if time.monotonic() >= deadline:
                    holder = _read_pid(fd)
                    os.close(fd)
                    who = f" (pid {holder})" if holder else ""
                    raise LockTimeout(
                        f"another sdqos sync holds {self.path}{who}; gave up after {self.timeout:g}s (--lock-timeout)"
                    ) from None
                time.sleep(0.05)
        try:  # who holds it, for the next sync's message; a full /run only costs that
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock
            self.fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
    except (OSError, ValueError):
        return None


def load_applied(run_dir: Path = DEFAULT_RUN_DIR) -> dict[str, dict[str, int]]:
    """What the last sync applied: {unit: {property: value}}. Missing or unreadable → {} (then
    differences are reported as updates, not drift)."""
    return load(APPLIED, run_dir)


def save_applied(applied: dict[str, dict[str, int]], run_dir: Path = DEFAULT_RUN_DIR) -> None:
    """Atomic replace (write a temp file 0600, rename). The text is what ``json.dumps(applied,
    sort_keys=True)`` gives, compact, encoded APPLIED_BATCH units at a time: as one string, 5000
    units held ~2 MB more at the sync's peak. Batches keep the C encoder (json.dump would use the
    pure-Python one, and one call per unit cost ~3 ms more at 1000 units)."""
    encode = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode
    units = sorted(applied)

    def pieces():
        yield "{"
        for i in range(0, len(units), APPLIED_BATCH):
            text = encode({u: applied[u] for u in units[i:i + APPLIED_BATCH]})
            yield f"{',' if i else ''}{text[1:-1]}"
        yield "}"
    # No fsync: what it records are transient units, which no OS crash leaves behind; the rename
    # alone keeps it the old file or the new one for every reader (~5–25 ms of I/O wait per
    # sync that changed something, where the run dir is on disk rather than tmpfs).
    write(APPLIED, pieces(), run_dir)


def write_atomic(path: Path, pieces, mode: int = 0o600, *, durable: bool = True) -> None:
    """Write ``pieces`` (strings) to a temp file next to ``path``, fsync, rename over it. Any
    failure (a full /run, a missing directory) removes the temp file and raises HostError with
    the path and the reason: the file is either the old one or the new one, never a part.
    ``durable=False`` skips the fsync, for a cache whose every entry is checked against what it
    was made from (a run dir on disk, not tmpfs, paid ~5–25 ms for the 1.5 MB parse cache at 1000 pods)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        raise HostError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w") as fh:
            for piece in ([pieces] if isinstance(pieces, str) else pieces):
                fh.write(piece)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise HostError(f"cannot write {path}: {exc.strerror or exc}") from None


def load(record: Record, run_dir: Path | str = DEFAULT_RUN_DIR, max_bytes: int = MAX_READ) -> dict:
    """A JSON record of the run dir (:func:`load_json`: {} when missing or not trusted)."""
    return load_json(record.path(run_dir), max_bytes)


def write(record: Record, pieces, run_dir: Path | str = DEFAULT_RUN_DIR) -> None:
    """A record written whole: the run dir made (or refused), a temp file 0600, fsync when the
    row is durable, rename (HostError naming the file on any failure)."""
    ensure_dir(Path(run_dir))
    write_atomic(record.path(run_dir), pieces, 0o600, durable=record.durable)


def remove_leftovers(run_dir: Path) -> None:
    """Unlink what :data:`LEFTOVERS` names in the run dir (never following a link, never opening
    a file); whatever cannot be removed stays (a stale file harms nothing)."""
    for pattern in LEFTOVERS:
        for path in Path(run_dir).glob(pattern):
            try:
                os.unlink(path)
            except OSError:
                pass


# --- the last-sync record: written by every sync, read by status, metrics, the loader, the proof ---


def budget_record(report) -> dict:
    """What a sync applied beyond the plan, for status and metrics (kept in the last-sync record):
    the pod slices it kept and counted, why it kept each unit, its adjustments (the limits it
    clamped to usage), as data: its desired state's fields (reconcile.desired.Desired)."""
    want = report.desired
    return {"kept": [dataclasses.asdict(k) for k in getattr(want, "kept", ())],
            "keptWhy": dict(report.kept_why),
            "adjustments": [a.as_json() for a in getattr(want, "adjustments", ())]}


def load_sync_record(run_dir: Path = DEFAULT_RUN_DIR) -> dict:
    """The last sync's record ({} when there is none or it does not read)."""
    return load(LAST_SYNC, run_dir, MAX_RECORD)


def last_sync_part(run_dir: Path | str, key: str) -> Any:
    """One field of the last-sync record (None without it): what the loader plans with (its
    ``machines``, ``kept``), recorded as an input by value, since every sync rewrites the file."""
    return load_sync_record(Path(run_dir)).get(key)


def record_sync(report, run_dir: Path = DEFAULT_RUN_DIR, warnings: list[str] | None = None) -> dict:
    """Remember the last sync (for `sdqos metrics`), keeping the last success time across runs, and
    its standing warnings (what `sync --quiet` compares with, to say each once)."""
    previous = load_sync_record(run_dir)
    now = time.time()
    ok = not report.errors and not report.aborted
    rec = {
        "timestamp": now,
        "durationSeconds": report.duration_s,
        "created": len(report.created),
        "updated": len(report.updated),
        "removed": len(report.removed),
        "drift": len(report.drift),
        "errors": len(report.errors),
        "invalid": len(report.invalid),
        "dbusCalls": report.dbus_calls,
        "success": ok,
        "lastSuccess": now if ok else previous.get("lastSuccess"),
        "warnings": list(warnings if warnings is not None else report.warnings),
        "machines": [dataclasses.asdict(m) for m in getattr(report.plan, "machines", ())],
        **budget_record(report),
    }
    write(LAST_SYNC, json.dumps(rec), run_dir)
    remove_leftovers(run_dir)
    return rec


# --- what a load read: the inputs of a plan, by identity ------------------------------------------


class Reads:
    """Every input a load read, in the order read, each as the loader saw it *before* reading it:
    a file by :func:`identity` (``file``), a directory by identity and names (``listing``), and a
    value a module-level function computed from the host (``call``: the function, its arguments,
    what it returned, and the paths it reads). :meth:`changed` asks each again — the same
    identities, the same functions — so a proof made from them covers exactly what the plan is a
    function of. A path recorded twice with two identities (changed while it was read) makes the
    whole unstable: nothing is proven from it."""

    def __init__(self) -> None:
        self.files: dict[str, str | list | None] = {}
        self.dirs: dict[str, list] = {}
        self.calls: list[list] = []  # [module:function, args, result, paths]
        self.stable = True

    def file(self, path: str | Path, *, known: str | None = None) -> None:
        """A file about to be read (or looked for); ``known``: :func:`identity` of a regular file's
        lstat, already made (the parse cache's: one string for both)."""
        self._put(self.files, str(path), known if known is not None else identify(path))

    def listing(self, path: str | Path, st: os.stat_result | None, names: list[str]) -> None:
        """A directory listed (``st``: its stat, followed, taken before the listing)."""
        self._put(self.dirs, str(path), [identity(st) if st is not None else None, sorted(names)])

    def call(self, fn: Callable[..., Any], *args: Any, paths: tuple[str, ...] = ()) -> Any:
        """``fn(*args)`` (a module-level function of plain arguments), recorded with its result
        (JSON data) and the paths it reads (files it opens, directories it lists)."""
        got = fn(*args)
        self.calls.append([f"{fn.__module__}:{fn.__qualname__}", [str(a) for a in args], _plain(got), list(paths)])
        return got

    def _put(self, table: dict, key: str, value: Any) -> None:
        if key in table and table[key] != value:
            self.stable = False
        table.setdefault(key, value)

    def paths(self) -> list[str]:
        """Every path read: the files, the directories, and what each call reads."""
        return [*self.files, *self.dirs, *(p for c in self.calls for p in c[3])]

    def as_json(self) -> dict:
        return {"files": self.files, "dirs": self.dirs, "calls": self.calls, "stable": self.stable}

    @classmethod
    def from_json(cls, data: dict) -> "Reads":
        r = cls()
        r.files, r.dirs, r.calls, r.stable = dict(data["files"]), dict(data["dirs"]), list(data["calls"]), data["stable"]
        return r

    def changed(self) -> str | None:
        """The first input that is not as it was read (its path), or None: every one is."""
        if not self.stable:
            return "(changed while it was read)"
        for path, was in self.files.items():
            if identify(path) != was:  # (lists of ints and strings: as JSON gives them back)
                return path
        for path, (was, names) in self.dirs.items():
            try:
                st = os.stat(path)  # (followed, as it was listed)
                now = [identity(st), sorted(os.listdir(path))]
            except OSError:
                return path
            if now != [was, names]:
                return path
        for ref, args, result, paths in self.calls:
            module, _, name = ref.partition(":")
            try:
                fn = getattr(importlib.import_module(module), name)
                if _plain(fn(*args)) != result:
                    return " ".join(paths) or ref
            except (ImportError, AttributeError, TypeError, ValueError, OSError):
                return " ".join(paths) or ref
        return None


def _plain(v: Any) -> Any:
    """``v`` as JSON gives it back (tuples as lists, sets sorted), so a recorded value compares
    equal to one computed again."""
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    return json.loads(json.dumps(v))
