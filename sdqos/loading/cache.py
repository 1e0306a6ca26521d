"""A cache of validated config files, so a sync every 30 s does not re-parse a thousand unchanged
pod manifests (YAML parsing dominates a warm sync otherwise).

An entry is reused only for the same file identity — device, inode, size, mtime and ctime (which
only the kernel sets) — and the same sdqos version; the safety checks (ownership, mode, symlinks)
still run on every file every time. It is JSON, not pickle, in the root-only run directory, so a
tampered cache cannot run code; an unreadable or foreign cache is simply ignored.

Next to a pod file's entry the cache keeps the file's *plan fragment*: its pods' plans
(sdqos.loading.incremental), valid for one plan context (node values, cgroup version, the pods' memory
budget) that the file's header names. A new context voids every fragment at once.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, Iterator

from sdqos import __version__
from sdqos.errors import HostError, InvalidInput
from sdqos.host import rundir
from sdqos.kube.manifests import PodIdentity
from sdqos.kube.model import CPU, MEMORY, Container, Pod, PodResources, Source, VirtualMachine
from sdqos.kube.quantity import Quantity
from sdqos.plan.engine import ContainerPlan, PodContext, PodPlan
from sdqos.plan.properties import ResourceConfig, shared

CACHE_NAME = rundir.PARSE_CACHE.name
FORMAT = rundir.PARSE_CACHE.schema  # (the store's table says what each version added)
NANO = 10**9


file_identity = rundir.identity  # (the store's one identity of a file)


# --- (de)serialising model objects ----------------------------------------------------------------


def _q(q: Quantity) -> list:
    f = q.as_fraction() * NANO  # quantities have nano precision: this is an integer
    return [int(f), q.format.value]


_QUANTITIES: dict[tuple, Quantity] = {}  # decoded quantities, shared: they are immutable, and pods repeat them


def _unq(v: list) -> Quantity:
    key = (v[0], v[1])
    q = _QUANTITIES.get(key)
    if q is None:
        q = _QUANTITIES[key] = Quantity(v[0], -9, v[1])
    return q


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
        "terminationGracePeriodSeconds": p.termination_grace_period,
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
        termination_grace_period=d["terminationGracePeriodSeconds"],
    )


def vm_to_json(v: VirtualMachine) -> dict:
    return {"name": v.name, "requests": _rl(v.requests), "limits": _rl(v.limits), "overhead": _rl(v.overhead),
            "overheadDefaulted": v.overhead_defaulted, "libvirtDomain": v.libvirt_domain, "scope": v.scope,
            "pidFile": v.pid_file, "source": [v.source.file, v.source.index] if v.source else None,
            "priority": v.priority, "eviction": v.eviction, "uid": v.uid, "dedicated": v.dedicated_cpu_placement}


def vm_from_json(d: dict) -> VirtualMachine:
    return VirtualMachine(d["name"], _unrl(d["requests"]), _unrl(d["limits"]), _unrl(d["overhead"]),
                          d["overheadDefaulted"], d["libvirtDomain"], d["scope"], d["pidFile"],
                          Source(*d["source"]) if d["source"] else None, d["priority"], d["eviction"], d["uid"],
                          d["dedicated"])


def error_to_json(e: InvalidInput) -> list:
    return [e.message, e.where, e.field]


def error_from_json(v: list) -> InvalidInput:
    return InvalidInput(v[0], where=v[1], field=v[2])


_RESOURCE_CONFIGS: dict[tuple, ResourceConfig] = {}  # decoded, shared: immutable, and pods repeat them


def _rc(rc: ResourceConfig) -> list:
    return [rc.cpu_shares, rc.cpu_quota, rc.cpu_period, rc.memory, rc.pids, rc.memory_min, rc.memory_low, rc.memory_high,
            rc.swap, rc.oom_group, rc.oomd_preference, rc.cpuset]


def _unrc(v: list) -> ResourceConfig:
    key = tuple(v)
    rc = _RESOURCE_CONFIGS.get(key)
    if rc is None:
        rc = _RESOURCE_CONFIGS[key] = ResourceConfig(*key)
    return rc


def pod_plan_to_json(pp: PodPlan) -> list:
    """A pod's plan, compact: without its explanations (never cached), without the pod itself but
    with what the duplicate check reads of it, and without the properties, which follow from the
    resources (sdqos.loading.incremental)."""
    pod = pp.pod
    return [pp.key, pp.uid, pod.uid_generated, [pod.source.file, pod.source.index] if pod.source else None,
            pp.qos, pp.slice, [pp.requests[CPU], pp.requests[MEMORY]], [pp.limits[CPU], pp.limits[MEMORY]],
            _rc(pp.resources), [[c.name, c.kind, c.scope, c.oom_score_adj, _rc(c.resources)] for c in pp.containers],
            pp.grace_period, list(pp.unenforced)]


def _unit(v: list, cgroup: str, period: int, container: bool) -> tuple[ResourceConfig, dict[str, int]]:
    """Encoded resources → (ResourceConfig, its properties): the properties follow from the
    resources in a plan context, so they are not stored; pods with the same resources share the
    pair (:func:`sdqos.plan.properties.shared`)."""
    return shared(_unrc(v), cgroup, period, container=container)


def pod_plan_from_json(v: list, ctx: PodContext, manifest: Callable[[], Pod]) -> PodPlan:
    """The PodPlan that ``pod_plan_to_json`` encoded, for a pod planned in ``ctx``."""
    key, uid, _, _, cls, slice_name, req, lim, rc, containers, grace = v[:11]
    unenforced = tuple(v[11]) if len(v) > 11 else ()
    cgroup, period = ctx.cgroup, ctx.node.cpu_cfs_quota_period_us
    cplans = []
    for name, kind, scope, adj, crc in containers:  # (the words pods repeat, interned: ~0.3 MB at 1000 pods)
        cres, cprops = _unit(crc, cgroup, period, True)
        cplans.append(ContainerPlan(sys.intern(name), sys.intern(kind), scope, adj, cres, cprops))
    cls = sys.intern(cls)
    res, props = _unit(rc, cgroup, period, False)
    return PodPlan(key, uid, cls, slice_name, {CPU: req[0], MEMORY: req[1]}, {CPU: lim[0], MEMORY: lim[1]}, res,
                   props, cplans, {}, manifest, grace, unenforced)


def pod_identity(v: list) -> PodIdentity:
    """What the duplicate check reads of a pod, from its encoded plan."""
    return PodIdentity(v[0], v[1], v[2], Source(*v[3]) if v[3] else None)


# --- the cache file --------------------------------------------------------------------------------


def encode_file(tag: str, entries: dict[str, list], context: str | None = None) -> Iterator[str]:
    """The cache file, piece by piece: a header line (tag, format, the plan context), one line
    with every key ([path, identity] pairs, in order), then for each entry, in the same order, its
    JSON text on a line and its plan fragment's on the next ("" for none; a function is called
    for it). JSON text never holds a raw newline, so lines split it exactly. Written as a stream:
    at 5000 pods, one big string (entries escaped inside a JSON document) added ~13 MB to a
    sync's peak RSS."""
    yield json.dumps({"tag": tag, "format": FORMAT, "context": context}) + "\n"
    yield json.dumps([[k, e[0]] for k, e in entries.items()], separators=(",", ":")) + "\n"
    for e in entries.values():
        yield e[1]
        yield "\n"
        fragment = e[2] if len(e) > 2 else ""
        yield fragment() if callable(fragment) else fragment
        yield "\n"


def decode_file(text: str) -> tuple[str, dict[str, list], str | None] | None:
    """(tag, entries, plan context) from a cache file's text, or None if it is not one, or is
    cut short. An entry is [identity, JSON text, plan fragment text or ""]."""
    return decode_lines(text.split("\n"))


def decode_lines(lines: list[str]) -> tuple[str, dict[str, list], str | None] | None:
    """:func:`decode_file` of the file's text split at its newlines."""
    if len(lines) < 3 or lines[-1] != "":
        return None
    try:
        head, keys = json.loads(lines[0]), json.loads(lines[1])
    except ValueError:
        return None
    texts = lines[2:-1]
    if not (isinstance(head, dict) and head.get("format") == FORMAT and isinstance(head.get("tag"), str)
            and isinstance(head.get("context"), (str, type(None)))
            and isinstance(keys, list) and 2 * len(keys) == len(texts)):
        return None
    entries: dict[str, list] = {}
    for i, k in enumerate(keys):
        if not (isinstance(k, list) and len(k) == 2 and isinstance(k[0], str) and isinstance(k[1], str)):
            return None
        entries[k[0]] = [k[1], texts[2 * i], texts[2 * i + 1]]
    return head["tag"], entries, head["context"]


class ParseCache:
    """Entries by config file (absolute path); loaded once, saved once if anything changed.
    Each entry stays a JSON string until it is asked for, and the caller drops it once it has
    built its objects: at 5000 pods, decoding the whole file up front cost ~15 MB of peak RSS.
    A save writes the whole file; every entry is used only while its file has the identity it was
    stored with."""

    def __init__(self, run_dir: Path | None, options: str, *, writable: bool = True):
        self.path = run_dir / CACHE_NAME if run_dir is not None else None
        self.writable = writable  # read-only commands reuse the cache but never rewrite the timer's
        self.tag = f"{__version__}/{FORMAT}/{options}"
        self.entries: dict[str, list] = {}  # path -> [identity, entry as JSON text, plan fragment or ""]
        self.context: str | None = None  # the plan context the fragments were computed in
        self.used: set[str] = set()
        self.dirty = False
        if self.path is not None:
            self._load(self.path)

    def _load(self, path: Path) -> None:
        lines = _lines(path)
        decoded = decode_lines(lines) if lines is not None else None
        if decoded is None or decoded[0] != self.tag:
            return
        _, self.entries, self.context = decoded

    def lookup(self, path: Path | str, identity: str) -> str | None:
        """The entry's JSON text while the file has this identity, undecoded; else None."""
        e = self.entries.get(str(path))
        if e is not None and e[0] == identity:
            self.used.add(str(path))
            return e[1]
        return None

    def get(self, path: Path | str, identity: str) -> dict | None:
        text = self.lookup(path, identity)
        if text is not None:
            try:
                entry = json.loads(text)
            except ValueError:
                return None
            if isinstance(entry, dict):
                return entry
        return None

    def put(self, path: Path | str, identity: str, entry: dict) -> None:
        self.put_text(path, identity, json.dumps(entry, separators=(",", ":")))

    def put_text(self, path: Path | str, identity: str, text: str) -> None:
        """Store an entry already encoded as compact JSON (as a parsing child hands it over); the
        plan fragment of the file's earlier content is dropped."""
        key = str(path)
        self.entries[key] = [identity, text, ""]
        self.used.add(key)
        self.dirty = True

    def fragment(self, path: Path | str, context: str) -> str | None:
        """The plan fragment stored with an entry (looked up first), if computed in ``context``."""
        e = self.entries.get(str(path))
        if e is None or context != self.context or not e[2] or not isinstance(e[2], str):
            return None
        return e[2]

    def put_fragment(self, path: Path | str, context: str, text: str | Callable[[], str]) -> None:
        """Keep a plan fragment with the file's entry; a new context voids every other fragment.
        ``text`` may be a function that encodes it: called only as the cache is written, so a
        sync that plans every pod (5000 on a just-booted host) never holds all fragments' text
        at once (2.6 MB at 5000 pods)."""
        if context != self.context:
            for e in self.entries.values():
                e[2] = ""
            self.context = context
        self.entries[str(path)][2] = text
        self.dirty = True

    def release(self) -> None:
        """Forget every entry once saved: the texts still in use are held by their users (at
        5000 pods the plan fragments alone are 2.6 MB a sync would otherwise carry to its end)."""
        self.entries = {}
        self.used = set()
        self.dirty = False

    def save(self) -> bool:
        """Write back (dropping files that are gone) when anything changed; best effort. Whether
        the file now holds every entry this load used (then :meth:`reread` finds them again)."""
        if self.path is None or not self.writable:
            return False
        stale = set(self.entries) - self.used
        if not self.dirty and not stale:
            return bool(self.entries)  # (the file it was loaded from)
        for k in stale:
            del self.entries[k]
        try:
            # write removes its temp file when /run is full mid-write. No fsync (the row says so):
            # every entry is used only while its file has the identity it was stored with, and a
            # torn file does not decode (decode_file), so a crash costs a parse, never a wrong plan
            rundir.write(rundir.PARSE_CACHE, encode_file(self.tag, self.entries, self.context), self.path.parent)
        except (OSError, HostError):
            return False  # a cache that cannot be written is only slower
        return True

    def reread(self) -> None:
        """After :meth:`release`: load the file again, for an entry asked for later (a pod's
        manifest, decoded on demand); its entries are used only while their files keep the
        identities they were stored with, as on a first load."""
        if self.path is not None and not self.entries:
            self._load(self.path)


def _lines(path: Path) -> list[str] | None:
    """The cache file's lines; None when it is missing, not trusted (not ours, or writable by
    others) or not ASCII. Each form goes before the next is made (bytes, text, lines): at 1000
    pods one form is ~1 MB, and holding all three was 1 MB more of a sync's peak RSS."""
    raw = rundir.read_private(path, ours=True)
    if raw is None:
        return None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    del raw
    return text.split("\n")


def usable_run_dir(create: bool = True) -> Path | None:
    """The run dir when this process may keep a cache there (root-owned, ours), else None. Without
    ``create`` a missing run dir is not made (read-only commands leave the host as they found it)."""
    if not create and not os.path.lexists(rundir.DEFAULT_RUN_DIR):
        return None
    try:
        return rundir.ensure_dir(rundir.DEFAULT_RUN_DIR)
    except (OSError, HostError):
        return None


__all__ = ["ParseCache", "encode_file", "decode_file", "file_identity", "pod_to_json", "pod_from_json", "vm_to_json", "vm_from_json",
           "error_to_json", "error_from_json", "pod_plan_to_json", "pod_plan_from_json", "pod_identity", "usable_run_dir"]
