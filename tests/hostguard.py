"""What the tests promise never to touch on the host, as a snapshot to compare.

The sandbox shares the host's file system but for its private /run and copy-on-write /etc; the CLI
keeps its state in /run/sdqos. A test (or a sandbox) that wrote the host's unit dirs or the timer's
run dir would change what the host's systemd and the host's own `sdqos sync` do. The snapshot holds
every entry under /etc/systemd and /run/sdqos, and the entries of /run/systemd whose name says sdqos
(the rest of /run/systemd is the host's systemd's own business and changes on a live host).
podman's default storage and cache (a `podman ps` run on the host creates them, and rewrites its
lock files: their modification times are compared too), and where the quickstart installs sdqos.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

WHOLE = ("/etc/systemd", "/run/sdqos", "/var/lib/containers", "/var/cache/containers", "/opt/sdqos",
         "/usr/local/bin/sdqos")
NAMED = ("/run/systemd",)
TIMED = ("/var/lib/containers", "/var/cache/containers")  # by size and mtime, not content: images are big


def _entry(p: str) -> tuple:
    st = os.lstat(p)
    if p.startswith(TIMED) and os.path.isfile(p) and not os.path.islink(p):
        return ("file", st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    if os.path.islink(p):
        return ("link", os.readlink(p))
    if os.path.isdir(p):
        return ("dir", st.st_mode, st.st_uid)
    try:
        digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    except OSError as exc:
        digest = f"unreadable: {exc.strerror}"
    return ("file", st.st_mode, st.st_uid, digest)


def snapshot() -> dict[str, tuple]:
    """Path → (kind, mode, owner, content hash or link target) of everything the tests must not touch."""
    out: dict[str, tuple] = {}
    for top in WHOLE + NAMED:
        if not os.path.lexists(top):
            continue
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                p = os.path.join(root, name)
                if top in NAMED and "sdqos" not in p[len(top):]:
                    continue
                try:
                    out[p] = _entry(p)
                except FileNotFoundError:
                    pass  # went away while we looked (a live host's /run/systemd)
        if top in WHOLE:
            out[top] = _entry(top)
    return out


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """Readable differences, one line each."""
    out = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    out += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    out += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return out
