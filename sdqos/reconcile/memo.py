"""What the last sync learned from podman, libvirt and machined, kept in the run dir and reused
while nothing says it changed: asking costs more than the rest of a warm sync (``podman ps`` is
~0.1 s of a Go binary starting). Each answer is reused only under the key it was taken with:

- podman's containers, while exactly the same ``libpod-*.scope`` units run (a container's id is in
  its scope's name; its labels and infra flag never change) and the same podman is asked
  (``SDQOS_PODMAN``, ``CONTAINERS_CONF``, ``CONTAINERS_STORAGE_CONF``);
- libvirt's running domains, while ``/run/libvirt/qemu`` holds the same files (name, inode, size,
  mtime and ctime: libvirtd rewrites a domain's status file on every change, and a chmod or chown
  moves the ctime) and each kept domain's PID is still its QEMU (checked again every time, as a
  fresh read checks it: a guest gone while libvirtd was down leaves its record behind), with the
  warnings reading them gave;
- machined's machines, while ``/run/systemd/machines`` does (machined keeps a file per machine
  there), and only where this process sees PID 1's /run.

A scope that appeared or left, a file touched, a cache that is missing, not ours or unreadable:
asked again. A dry run reads the cache and never writes it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

from sdqos.errors import HostError
from sdqos.host import cgroupfs, rundir
from sdqos.host.inputs import MACHINED_STATE
from sdqos.kube.naming import parse_podman_conmon_scope, parse_podman_scope
from sdqos.reconcile.scopes import LiveScope

if TYPE_CHECKING:  # imported when something runs in machine.slice or a libpod scope, not on every sync
    from sdqos.host import libvirt
    from sdqos.host.podman import PodmanContainer

NAME = "observed.json"
PODMAN_ENV = ("SDQOS_PODMAN", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")


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

    def __init__(self, run_dir: Path | None, libvirt_dir: Path | None = None,
                 machined_dir: str = MACHINED_STATE, proc: Path = Path("/proc")):
        """``libvirt_dir``: libvirt's state dir (None: :data:`sdqos.host.libvirt.RUN_DIR`)."""
        self.path = run_dir / NAME if run_dir is not None else None
        self.libvirt_dir, self.machined_dir, self.proc = libvirt_dir, machined_dir, proc
        self.data = self._load()
        self.dirty = False

    def _load(self) -> dict:
        if self.path is None:
            return {}
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return {}
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return {}  # not written by a sync of ours: ask
            try:
                data = json.loads(fh.read())
            except ValueError:
                return {}
        return data if isinstance(data, dict) else {}

    def _put(self, key: str, value: dict) -> None:
        if self.data.get(key) != value:
            self.data[key] = value
            self.dirty = True

    def podman(self, scopes: dict[str, LiveScope],
               ask: Callable[[], dict[str, PodmanContainer] | None]) -> dict[str, PodmanContainer] | None:
        """podman's containers by id (``ask``: :func:`sdqos.reconcile.binding.podman_containers`)."""
        names = sorted(n for n in scopes if parse_podman_scope(n) or parse_podman_conmon_scope(n))
        if not any(parse_podman_scope(n) for n in names):
            return ask()  # no container scope: podman is not asked at all
        from sdqos.host.podman import PodmanContainer

        key = [[os.environ.get(v) for v in PODMAN_ENV], names]
        got = self.data.get("podman")
        if isinstance(got, dict) and got.get("key") == key:
            try:
                return {c["id"]: PodmanContainer(str(c["id"]), str(c["name"]), dict(c["labels"]), str(c["state"]),
                                                 bool(c["infra"])) for c in got["containers"]}
            except (KeyError, TypeError, ValueError):
                pass
        containers = ask()
        if containers is not None:  # None: podman failed (a warning says so); ask next time
            self._put("podman", {"key": key, "containers": [dataclasses.asdict(c) for c in containers.values()]})
        return containers

    def domains(self, warnings: list[str]) -> dict[str, libvirt.Domain]:
        """libvirt's running domains (:func:`sdqos.host.libvirt.running_domains`)."""
        from sdqos.host import libvirt

        libvirt_dir = self.libvirt_dir or libvirt.RUN_DIR
        key = identity(libvirt_dir)
        got = self.data.get("libvirt")
        if isinstance(got, dict) and got.get("key") == key:
            try:
                out = {d["name"]: libvirt.Domain(**d) for d in got["domains"]}
                written = {e[0]: e[3] / 1e9 for e in key if len(e) == 5}
                if all(f"{n}.xml" in written and libvirt.stale_reason(d, written[f"{n}.xml"], self.proc) is None
                       for n, d in out.items()):
                    warnings.extend(str(w) for w in got["warnings"])
                    return out
            except (KeyError, TypeError, ValueError):
                pass
        seen: list[str] = []
        out = libvirt.running_domains(libvirt_dir, warnings=seen, proc=self.proc)
        warnings.extend(seen)
        self._put("libvirt", {"key": key, "domains": [dataclasses.asdict(d) for d in out.values()], "warnings": seen})
        return out

    async def machines(self, ask: Callable[[], Awaitable[list]]) -> list:
        """machined's machines (``ask``: the ListMachines call); a failed or empty answer is not kept."""
        from sdqos.host.machined import Machine

        if not os.path.isdir(self.machined_dir) or not cgroupfs.available():
            return await ask()  # machined's state is not where this process looks
        key = identity(self.machined_dir)
        got = self.data.get("machined")
        if isinstance(got, dict) and got.get("key") == key:
            try:
                return [Machine(*m) for m in got["machines"]]
            except TypeError:
                pass
        out = await ask()
        if out:
            self._put("machined", {"key": key, "machines": [[m.name, m.cls, m.service] for m in out]})
        return out

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
