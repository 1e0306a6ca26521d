"""``/run/sdqos``: the sync lock and the record of what the last sync applied.

The record is how drift is told apart from a config change: a live value that differs from what
sdqos last set was changed behind its back. It lives on tmpfs, like the transient units it
describes, so both vanish together at reboot. Everything here is root-only and written
atomically; a directory or file that is not ours (symlink, wrong owner, group/world-writable) is
refused rather than trusted.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from pathlib import Path

from sdqos.errors import HostError, LockTimeout

DEFAULT_RUN_DIR = Path(os.environ.get("SDQOS_RUN_DIR", "/run/sdqos"))
LOCK_NAME = "sync.lock"
APPLIED_NAME = "applied.json"
CPU_MANAGER_STATE_NAME = "cpu_manager_state"  # kubelet's name (host/cpustate.py writes it, loading/incremental.py reads it)
LAST_SYNC_NAME = "last-sync.json"  # the last sync's record (cli/metrics.py writes it, loading/load.py reads it)
APPLIED_BATCH = 256  # units encoded per string when applied.json is written
MAX_READ = 256 * 1024 * 1024  # no file sdqos writes here comes near this (applied.json at 5000 units: ~2 MB)


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
        if ours and (st.st_uid != os.geteuid() or st.st_mode & 0o022):
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
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise HostError(f"{run_dir} is writable by others or not owned by us; refusing to use it")
    return run_dir


class SyncLock:
    """An exclusive flock on ``sync.lock``: two syncs never interleave. The holder's PID is in the
    file, so the second one can say who it waited for."""

    def __init__(self, run_dir: Path = DEFAULT_RUN_DIR, timeout: float = 60.0):
        self.path = run_dir / LOCK_NAME
        self.timeout = timeout
        self.fd: int | None = None

    def __enter__(self) -> "SyncLock":
        ensure_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            why = "it is a symlink; refusing it" if exc.errno == errno.ELOOP else exc.strerror
            raise HostError(f"cannot open the lock file {self.path}: {why}") from None
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
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
    return load_json(run_dir / APPLIED_NAME)


def save_applied(applied: dict[str, dict[str, int]], run_dir: Path = DEFAULT_RUN_DIR) -> None:
    """Atomic replace (write a temp file 0600, rename). The text is what ``json.dumps(applied,
    sort_keys=True)`` gives, compact, encoded APPLIED_BATCH units at a time: as one string, 5000
    units held ~2 MB more at the sync's peak. Batches keep the C encoder (json.dump would use the
    pure-Python one, and one call per unit cost ~3 ms more at 1000 units)."""
    ensure_dir(run_dir)
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
    write_atomic(run_dir / APPLIED_NAME, pieces(), 0o600, durable=False)


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
