"""A cheap fingerprint of what makes a sync necessary: the config dir's files, libvirt's record of
running domains and machined's of registered machines. ``sync --settle`` (the path unit's) compares
it before and after a sync and syncs again when it moved: systemd merges a path unit's start
request into the sync already running, so a change made during a sync would otherwise wait for
the next timer tick."""

from __future__ import annotations

import os
from pathlib import Path

from sdqos.host import rundir

LIBVIRT_STATE = "/run/libvirt/qemu"  # a status file per running domain (sdqos.host.libvirt)
MACHINED_STATE = "/run/systemd/machines"  # a file per registered machine
MAX_PASSES = 5
QUIET_S = 0.25  # how long the inputs must stay still after a sync before it ends


def _dir(path: str) -> tuple:
    try:
        with os.scandir(path) as it:
            out: list[tuple[str, int, int, int] | tuple[str, None]] = []
            for e in it:
                try:
                    st = e.stat()  # through a symlink: the file it names is what is read
                    out.append((e.name, st.st_ino, st.st_mtime_ns, st.st_size))
                except OSError:
                    out.append((e.name, None))
            return tuple(sorted(out, key=lambda x: x[0]))
    except OSError:
        return ()


def _file(path: Path) -> tuple:
    try:
        st = path.stat()
        return (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        return ()


def fingerprint(config_dir: Path | str, run_dir: Path | str | None = None) -> tuple:
    """Names, inodes, mtimes and sizes of the config dir's files (node.yaml, pods/, vms/) and of the
    VM managers' state dirs, and with ``run_dir`` the CPU manager's state file (a sync that gives a
    leaving pod's CPUs back widens the shared pool: the next pass plans it, the scopes' AllowedCPUs
    on cgroup v2). Equal fingerprints: nothing a sync reads has changed (to the ns)."""
    base = str(config_dir)
    dirs = tuple(_dir(p) for p in (base, os.path.join(base, "pods"), os.path.join(base, "vms"),
                                   LIBVIRT_STATE, MACHINED_STATE))
    return dirs if run_dir is None else (*dirs, _file(rundir.CPU_STATE.path(Path(run_dir))))


def settled(config_dir: Path | str, before: tuple, quiet_s: float = QUIET_S,
            run_dir: Path | str | None = None) -> bool:
    """Whether nothing changed since ``before`` was taken, and nothing changes for ``quiet_s`` more."""
    import time

    if fingerprint(config_dir, run_dir) != before:
        return False
    time.sleep(quiet_s)
    return fingerprint(config_dir, run_dir) == before
