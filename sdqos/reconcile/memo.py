"""What the last sync learned from the runtimes (podman, libvirt, machined), kept in the run dir
and reused while nothing says it changed: asking costs more than the rest of a warm sync (``podman
ps`` is ~0.1 s of a Go binary starting). Each runtime's row (sdqos/reconcile/runtimes/) decides
under which key its answer holds and checks what it takes back:

- podman's containers, while exactly the same ``libpod-*.scope`` units run and the same podman is
  asked (``SDQOS_PODMAN``, ``CONTAINERS_CONF``, ``CONTAINERS_STORAGE_CONF``);
- libvirt's running domains, while ``/run/libvirt/qemu`` holds the same files (:func:`identity`)
  and each kept domain's PID is still its QEMU, with the warnings reading them gave;
- machined's machines, while ``/run/systemd/machines`` does, and only where this process sees PID 1's /run.

A scope that appeared or left, a file touched, a cache that is missing, not ours or unreadable:
asked again. A dry run reads the cache and never writes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sdqos.errors import HostError
from sdqos.host import rundir

NAME = rundir.OBSERVED.name  # (the store's table)


def identity(path: str | Path) -> list:
    """The files of a directory as [name, inode, size, mtime, ctime] (through symlinks, as they are
    read); [] when it is not there."""
    out = []
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat()
                    out.append([e.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
                except OSError:
                    out.append([e.name])
    except OSError:
        return []
    return sorted(out)


class Memo:
    """The run dir's ``observed.json``, read once per sync; :meth:`save` writes what changed."""

    def __init__(self, run_dir: Path | None):
        self.path = run_dir / NAME if run_dir is not None else None
        self.data = self._load()
        self.dirty = False

    def _load(self) -> dict:
        # not a plain file written by a sync of ours (rundir.load_json): ask
        return {} if self.path is None else rundir.load_json(self.path)

    def reuse(self, name: str, key: Any) -> dict | None:
        """What ``name`` kept under exactly ``key`` (None: nothing, or kept under another key)."""
        got = self.data.get(name)
        return got if isinstance(got, dict) and got.get("key") == key else None

    def keep(self, name: str, key: Any, value: dict) -> None:
        """Remember ``value`` under ``key`` (written by :meth:`save`, only when it changed)."""
        entry = {"key": key, **value}
        if self.data.get(name) != entry:
            self.data[name] = entry
            self.dirty = True

    def save(self) -> None:
        """Write what changed (atomically); a cache that cannot be written is asked again next time."""
        if not self.dirty or self.path is None:
            return
        try:
            rundir.ensure_dir(self.path.parent)
            rundir.write_atomic(self.path, [json.dumps(self.data, separators=(",", ":"))], 0o600)
            self.dirty = False
        except HostError:
            pass
