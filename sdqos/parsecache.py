"""A cache of validated config files, so a sync every 30 s does not re-parse a thousand unchanged
pod manifests (YAML parsing dominates a warm sync otherwise).

An entry is reused only for the same file identity — device, inode, size, mtime and ctime (which
only the kernel sets) — and the same sdqos version; the safety checks (ownership, mode, symlinks)
still run on every file every time. It is JSON, not pickle, in the root-only run directory, so a
tampered cache cannot run code; an unreadable or foreign cache is simply ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import __version__, rundir
from .errors import HostError, InvalidInput
from .model import Container, Pod, PodResources, Source, VirtualMachine
from .quantity import Quantity

CACHE_NAME = "parsed.json"
NANO = 10**9


def file_identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


# --- (de)serialising model objects ----------------------------------------------------------------


def _q(q: Quantity) -> list:
    f = q.as_fraction() * NANO  # quantities have nano precision: this is an integer
    return [int(f), q.format.value]


def _unq(v: list) -> Quantity:
    return Quantity(v[0], -9, v[1])


def _rl(res) -> dict:
    return {k: _q(v) for k, v in res.items()}


def _unrl(d: dict) -> dict:
    return {k: _unq(v) for k, v in d.items()}


def _container(c: Container) -> dict:
    return {"name": c.name, "requests": _rl(c.requests), "limits": _rl(c.limits), "init": c.init,
            "restartAlways": c.restart_always, "requestSet": sorted(c.request_set)}


def _uncontainer(d: dict) -> Container:
    return Container(d["name"], _unrl(d["requests"]), _unrl(d["limits"]), d["init"], d["restartAlways"],
                     frozenset(d["requestSet"]))


def pod_to_json(p: Pod) -> dict:
    return {
        "name": p.name, "namespace": p.namespace, "uid": p.uid, "uidGenerated": p.uid_generated,
        "containers": [_container(c) for c in p.containers],
        "initContainers": [_container(c) for c in p.init_containers],
        "overhead": _rl(p.overhead),
        "resources": None if p.resources is None else {"requests": _rl(p.resources.requests), "limits": _rl(p.resources.limits)},
        "priority": p.priority, "priorityClassName": p.priority_class_name,
        "annotations": dict(p.annotations), "source": [p.source.file, p.source.index] if p.source else None,
    }


def pod_from_json(d: dict) -> Pod:
    res = d["resources"]
    return Pod(
        name=d["name"], namespace=d["namespace"], uid=d["uid"],
        containers=tuple(_uncontainer(c) for c in d["containers"]),
        init_containers=tuple(_uncontainer(c) for c in d["initContainers"]),
        overhead=_unrl(d["overhead"]),
        resources=None if res is None else PodResources(_unrl(res["requests"]), _unrl(res["limits"])),
        priority=d["priority"], priority_class_name=d["priorityClassName"], annotations=d["annotations"],
        uid_generated=d["uidGenerated"], source=Source(*d["source"]) if d["source"] else None,
    )


def vm_to_json(v: VirtualMachine) -> dict:
    return {"name": v.name, "requests": _rl(v.requests), "limits": _rl(v.limits), "overhead": _rl(v.overhead),
            "overheadDefaulted": v.overhead_defaulted, "libvirtDomain": v.libvirt_domain, "scope": v.scope,
            "pidFile": v.pid_file, "source": [v.source.file, v.source.index] if v.source else None}


def vm_from_json(d: dict) -> VirtualMachine:
    return VirtualMachine(d["name"], _unrl(d["requests"]), _unrl(d["limits"]), _unrl(d["overhead"]),
                          d["overheadDefaulted"], d["libvirtDomain"], d["scope"], d["pidFile"],
                          Source(*d["source"]) if d["source"] else None)


def error_to_json(e: InvalidInput) -> list:
    return [e.message, e.where, e.field]


def error_from_json(v: list) -> InvalidInput:
    return InvalidInput(v[0], where=v[1], field=v[2])


# --- the cache file --------------------------------------------------------------------------------


class ParseCache:
    """Entries by config file (absolute path); loaded once, saved once if anything changed.
    Each entry stays a JSON string until it is asked for, and the caller drops it once it has
    built its objects: at 5000 pods, decoding the whole file up front cost ~15 MB of peak RSS."""

    def __init__(self, run_dir: Path | None, options: str):
        self.path = run_dir / CACHE_NAME if run_dir is not None else None
        self.tag = f"{__version__}/2/{options}"
        self.entries: dict[str, list] = {}  # path -> [identity, entry as JSON text]
        self.used: set[str] = set()
        self.dirty = False
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return  # not ours, or writable by others: do not trust it
            try:
                data = json.loads(fh.read())
            except ValueError:
                return
        if isinstance(data, dict) and data.get("tag") == self.tag and isinstance(data.get("files"), dict):
            self.entries = data["files"]

    def get(self, path: Path, identity: list[int]) -> dict | None:
        e = self.entries.get(str(path))
        if isinstance(e, list) and len(e) == 2 and e[0] == identity and isinstance(e[1], str):
            try:
                entry = json.loads(e[1])
            except ValueError:
                return None
            if isinstance(entry, dict):
                self.used.add(str(path))
                return entry
        return None

    def put(self, path: Path, identity: list[int], entry: dict) -> None:
        self.entries[str(path)] = [identity, json.dumps(entry, separators=(",", ":"))]
        self.used.add(str(path))
        self.dirty = True

    def save(self) -> None:
        """Write back (dropping files that are gone) when anything changed; best effort."""
        if self.path is None:
            return
        stale = set(self.entries) - self.used
        if not self.dirty and not stale:
            return
        for k in stale:
            del self.entries[k]
        try:
            rundir.ensure_dir(self.path.parent)
            tmp = self.path.with_name(f".{CACHE_NAME}.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w") as fh:  # dumps, not dump: only dumps uses the C encoder (5x faster)
                fh.write(json.dumps({"tag": self.tag, "files": self.entries}, separators=(",", ":")))
            os.replace(tmp, self.path)
        except (OSError, HostError):
            pass  # a cache that cannot be written is only slower


def usable_run_dir() -> Path | None:
    """The run dir when this process may keep a cache there (root-owned, ours), else None."""
    try:
        return rundir.ensure_dir(rundir.DEFAULT_RUN_DIR)
    except (OSError, HostError):
        return None


__all__ = ["ParseCache", "file_identity", "pod_to_json", "pod_from_json", "vm_to_json", "vm_from_json",
           "error_to_json", "error_from_json", "usable_run_dir"]
