"""The methods ``@dataclass`` writes, compiled once per boot instead of once per process.

On Python 3.11 the dataclasses module writes each generated method (``__init__``, ``__eq__``,
``__hash__``, ``__repr__``, a frozen class's ``__setattr__``…) as source text and compiles it, for
every class, in every process: 45 ms of a one-change sync at 1000 pods (47 classes), three
quarters of it in ``compile``. Python keeps a module's own code in ``.pyc`` files; this keeps the
code of those generated methods the same way, next to the parse cache in the run dir.

The code is the same: a method's text (its digest) is the key, and the text is compiled exactly as
dataclasses compiles it (``exec`` of a string: file ``<string>``, no inherited ``__future__`` flags). The cache
is read only from a run dir and file that this user owns and nobody else can write (it holds code
that runs), only for this interpreter's bytecode (magic number), and is written only by commands
that write the run dir anyway (a sync), atomically; any fault means compiling as before. It is
run state like the parse cache, not bytecode beside the sources: PYTHONDONTWRITEBYTECODE does not
turn it off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import marshal
import os
import stat
import struct
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from sdqos.host import rundir

NAME = f"dataclass-code.{sys.implementation.cache_tag}.marshal"
LIMIT = 4000  # entries; more means stale ones from older versions: start again with this process's
_KEY = 16  # a method's key: the BLAKE2b digest of its text (kept instead of ~450 bytes of text)
_LEN = struct.Struct("<I")
MAX_BYTES = 64 * 1024 * 1024  # LIMIT entries of a few KB each: far less

_cached: dict[bytes, CodeType] = {}  # read from the file and not used yet (used code is let go)
_known: set[bytes] = set()  # what the file holds
_fresh: dict[bytes, CodeType] = {}  # compiled here and not in the file: the next save writes it
_counts = {"cached": 0, "compiled": 0, "new": 0}


def _trusted(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _records(data: bytes) -> dict[bytes, CodeType]:
    """The file: the interpreter's magic number, then per method its key, the length of its code
    and the code as marshal writes it (each written and read on its own: no second copy of the
    whole cache in memory at the end of a sync, when sdqos is at its largest)."""
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):
        return {}
    out: dict[bytes, CodeType] = {}
    view, at = memoryview(data), len(magic)
    while at < len(data):
        key, (size,) = bytes(view[at:at + _KEY]), _LEN.unpack_from(view, at + _KEY)  # (short: struct.error)
        at += _KEY + _LEN.size
        code = marshal.loads(view[at:at + size])  # (short: EOFError)
        at += size
        if not isinstance(code, CodeType):
            return {}
        out[key] = code
    return out


def _load(path: Path) -> dict[bytes, CodeType]:
    """The cache, read by the run dir's one reader (not a symlink, FIFO or device, bounded, ours and
    writable by nobody else), from a directory of ours."""
    try:
        if not _trusted(os.stat(path.parent)):
            return {}
    except OSError:
        return {}
    data = rundir.read_private(path, MAX_BYTES, ours=True)
    if data is None:
        return {}
    try:
        return _records(data)
    except (EOFError, ValueError, TypeError, struct.error):
        return {}


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:
    """``exec`` as dataclasses calls it, with the compiled text looked up first."""
    if not isinstance(source, str):
        exec(source, globals, locals)
        return
    key = hashlib.blake2b(source.encode(), digest_size=_KEY).digest()
    code = _cached.pop(key, None)  # (once run, dataclasses keeps only the method it made)
    if code is not None:
        _counts["cached"] += 1
    else:
        code = compile(source, "<string>", "exec", dont_inherit=True)
        _counts["compiled"] += 1
        if key not in _known and key not in _fresh:
            _fresh[key] = code
            _counts["new"] += 1
    exec(code, globals, locals)


def install(run_dir: Path) -> None:
    """Compile dataclasses' methods through the cache of ``run_dir`` from now on (this process)."""
    _cached.update(_load(run_dir / NAME))
    _known.update(_cached)
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # (the module's own name; the builtin stays)


def save(run_dir: Path) -> None:
    """Add what this process compiled that the cache did not hold (a new sdqos, a command that had
    not run since boot), and let it go. The caller writes ``run_dir`` anyway; sync calls this
    once its modules are imported, before the plan and the live state fill the memory, and once
    at the end."""
    if not _fresh:
        return
    path = run_dir / NAME
    keep = _load(path)  # (what the file holds, also what this process used and let go)
    keep.update(_fresh)
    if len(keep) > LIMIT:  # stale entries of older versions: start again with this process's
        keep = dict(_fresh)
    tmp = path.with_name(f".{NAME}.{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(importlib.util.MAGIC_NUMBER)
            for key, code in keep.items():
                data = marshal.dumps(code)
                fh.write(key + _LEN.pack(len(data)))
                fh.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    _known.update(_fresh)
    _fresh.clear()


def stats() -> dict[str, int]:
    """How many methods this process took from the cache, how many it compiled, and how many of
    those the cache did not hold."""
    return dict(_counts)
