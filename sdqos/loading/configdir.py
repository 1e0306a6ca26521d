"""Reading the config directory: ``node.yaml``, ``priorityclasses.yaml``, ``pods/*.yaml|yml``, ``vms/*.yaml|yml``.

This is the filesystem edge. It refuses what an attacker or an accident could slip in — files
writable by non-root users (like sshd's StrictModes, unless ``--insecure``), symlinks leading out of
the directory, anything that is not a regular file, oversized files, non-UTF-8 text — and reports
each problem with the file it concerns. A file that cannot be read makes its pods *unknown*, never
*deleted*: :attr:`Config.removals_safe` tells the reconciler whether it may remove anything.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Mapping, NamedTuple, Sequence

from sdqos.errors import ConfigDirError, ConfigInvalid, InvalidInput
from sdqos.host import facts, rundir
from sdqos.host.rundir import Reads
from sdqos.kube.manifests import ParseResult, check_duplicates, parse_pod_documents, parse_vm_documents
from sdqos.kube.model import NodeConfig, Pod, VirtualMachine
from sdqos.kube.nodeconfig import parse_node_config
from sdqos.kube.priority import FILE as PRIORITY_CLASSES_FILE
from sdqos.kube.priority import NO_CLASSES, PriorityClasses
from sdqos.kube.quantity import Quantity
from sdqos.loading import cache as pc
from sdqos.loading import fanout

DEFAULT_DIR = Path("/etc/sdqos")
MAX_FILE_BYTES = 8 * 2**20
MAX_ERRORS_PER_FILE = 20  # kept and printed; the rest are counted
SUFFIXES = (".yaml", ".yml", ".json")  # kubectl reads both: JSON is one document (a Pod or a List)


@dataclass
class Config:
    """The whole config directory, validated; per-file problems are in ``errors``."""

    dir: Path
    node: NodeConfig
    pods: list[Pod] = field(default_factory=list)
    vms: list[VirtualMachine] = field(default_factory=list)
    errors: list[InvalidInput] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    invalid_keys: set[str] = field(default_factory=set)
    failed_files: list[str] = field(default_factory=list)  # whole files whose content is unknown
    vms_declared: bool = False  # vms/ holds at least one file
    inputs: Reads = field(default_factory=Reads)  # everything the load read, by identity (the no-op proof's)

    @property
    def removals_safe(self) -> bool:
        """Removing a pod is safe only when every file was read: otherwise a pod missing from the
        parsed set may just be in a file we could not read."""
        return not self.failed_files

    @property
    def complete(self) -> bool:
        return not self.errors


def _where(config_dir: Path, path: Path) -> str:
    try:
        return str(path.relative_to(config_dir))
    except ValueError:
        return str(path)


def _fail(config_dir: Path, path: Path, message: str) -> InvalidInput:
    return InvalidInput(message, where=_where(config_dir, path))


def _check_mode(st: os.stat_result, what: str, insecure: bool) -> str | None:
    """sshd-StrictModes-like: owned by root (or us), not writable by group or others."""
    if insecure:
        return None
    if st.st_uid not in (0, os.geteuid()):
        return f"{what} is owned by uid {st.st_uid}, not root; fix the owner or pass --insecure"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); run chmod go-w, or pass --insecure"
    return None


def unsafe_parent(real: Path, reads: Reads | None = None) -> str | None:
    """sshd's StrictModes for the path above a config dir or file (OpenSSH misc.c safe_path): every
    directory up to / owned by root or us and not writable by group or others — someone who can
    rename a parent can swap the whole config. One deviation, as in the permission checks of
    systemd's tmpfiles: a root-owned sticky directory (/tmp, 1777) is accepted, since there no one
    may rename or remove what they do not own."""
    for parent in real.parents:
        if reads is not None:  # who may write it (not its times: /tmp's move all the time)
            reads.call(rundir.trust, str(parent), paths=(str(parent),))
        try:
            st = os.stat(parent)
        except OSError as exc:
            return f"cannot check {parent}: {exc.strerror or exc}"
        if st.st_uid not in (0, os.geteuid()):
            return f"parent {parent} is owned by uid {st.st_uid}, not root; fix its owner or pass --insecure"
        sticky_root = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_root:
            return (f"parent {parent} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
                    "run chmod go-w on it, or pass --insecure")
    return None


def read_checked_file(path: Path, insecure: bool) -> str:
    """A file named on the command line (``explain FILE``), read under the rules config files
    follow: a regular file, at most MAX_FILE_BYTES, owned by root (or us), not writable by group or
    others, below trusted directories; InvalidInput naming the file otherwise."""
    where = str(path)
    try:
        real = path.resolve(strict=True)
        st = os.stat(real)
    except OSError as exc:
        raise InvalidInput(f"cannot be read: {exc.strerror or exc}", where=where) from None
    _checked_stat(where, st, insecure)
    problem = None if insecure else unsafe_parent(real)
    if problem:
        raise InvalidInput(problem, where=where)
    return _read_text(real.parent, real, real)


def _checked(config_dir: Path, real_dir: Path, path: Path, insecure: bool) -> tuple[Path, os.stat_result]:
    """The real path and stat of a config file that passed every safety check, or InvalidInput."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError:
        raise _fail(config_dir, path, "symlink loop") from None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise _fail(config_dir, path, "symlink loop") from None
        raise _fail(config_dir, path, f"cannot resolve: {exc.strerror or exc}") from None
    if real != real_dir and real_dir not in real.parents:
        raise _fail(config_dir, path, f"is a symlink to {real}, outside the config directory; refused")
    try:
        st = os.stat(real)
    except OSError as exc:
        raise _fail(config_dir, path, f"cannot stat: {exc.strerror or exc}") from None
    return real, _checked_stat(_where(config_dir, path), st, insecure)


def _checked_plain(sub_dir: str, real_sub: str | None, name: str, rel: str,
                   insecure: bool) -> tuple[str, os.stat_result | None]:
    """The fast path of :func:`_checked` for a file in an already resolved directory (``real_sub``,
    inside the config directory): a regular file (not a symlink) costs one lstat. (real path, stat)
    if it passed every check; (_, None) when the full check must decide; InvalidInput otherwise."""
    if real_sub is None:
        return "", None
    try:
        lst = os.lstat(f"{sub_dir}/{name}")
    except OSError:
        return "", None  # the full check words the error
    if not stat.S_ISREG(lst.st_mode):
        return "", None
    return f"{real_sub}/{name}", _checked_stat(rel, lst, insecure)


def _checked_stat(where: str, st: os.stat_result, insecure: bool) -> os.stat_result:
    """``st`` if it is a regular file sdqos may trust and read, else InvalidInput about ``where``."""
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput("is not a regular file", where=where)
    problem = _check_mode(st, "file", insecure)
    if problem:
        raise InvalidInput(problem, where=where)
    if st.st_size > MAX_FILE_BYTES:
        raise InvalidInput(f"is {st.st_size / 2**20:.1f} MiB, over the {MAX_FILE_BYTES // 2**20} MiB limit", where=where)
    return st


def _read_upto(fh: BinaryIO, size: int, limit: int) -> bytes:
    """At most ``limit`` bytes of an unbuffered file whose size was ``size``: one read of what
    fstat said (+1, to see it grew), not one of ``limit`` — ``read(8 MiB)`` allocates 8 MiB for
    every 1 KiB pod file, which was the largest transient of a sync's memory."""
    chunks = []
    want = min(size + 1, limit)
    while limit > 0:
        chunk = fh.read(want)
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
        want = min(1 << 16, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_text(config_dir: Path, path: Path, real: Path) -> str:
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(config_dir, path, f"cannot be read: {exc.strerror or exc}") from None
    try:  # what was checked may have been swapped meanwhile (a directory, a FIFO) or vanish
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise _fail(config_dir, path, "is not a regular file (it changed while being read)")
        with os.fdopen(fd, "rb", buffering=0) as fh:
            data = _read_upto(fh, st.st_size, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _fail(config_dir, path, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise _fail(config_dir, path, f"is over the {MAX_FILE_BYTES // 2**20} MiB limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(config_dir, path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def _parse_file(config_dir: Path, path: Path, real: Path, sub: str, rel: str, apply_defaults: bool,
                classes: PriorityClasses = NO_CLASSES) -> dict:
    """One pods/ or vms/ file → a cache entry: its objects, errors, and whether its content is
    unknown (unreadable, not YAML, or a document whose identity could not be read)."""
    from sdqos.kube.yamlsafe import YamlError  # only on a cache miss: importing PyYAML is ~25 ms

    part = ParseResult()
    try:
        docs = parse_documents(_read_text(config_dir, path, real), rel)
    except InvalidInput as exc:
        return {"pods": [], "vms": [], "errors": [pc.error_to_json(exc)], "invalid": [], "failed": True}
    except YamlError as exc:
        err = InvalidInput(str(exc), where=rel)
        return {"pods": [], "vms": [], "errors": [pc.error_to_json(err)], "invalid": [], "failed": True}
    if sub == "pods":
        parse_pod_documents(docs, rel, part, apply_defaults=apply_defaults, classes=classes)
    else:
        parse_vm_documents(docs, rel, part)
    if len(part.errors) > MAX_ERRORS_PER_FILE:
        more = len(part.errors) - MAX_ERRORS_PER_FILE
        part.errors[MAX_ERRORS_PER_FILE:] = [InvalidInput(f"… and {more} more errors in this file", where=rel)]
    failed = part.unknown_identities > 0
    return {
        "pods": [pc.pod_to_json(p) for p in part.pods],
        "vms": [pc.vm_to_json(v) for v in part.vms],
        "errors": [pc.error_to_json(e) for e in part.errors],
        "invalid": sorted(part.invalid_keys),
        "failed": failed,
    }


def parse_documents(text: str, name: str) -> list:
    """A manifest file's documents: JSON for ``*.json`` (as kubectl reads it), else a YAML stream."""
    from sdqos.kube.yamlsafe import load_documents

    return _json_documents(text) if name.endswith(".json") else load_documents(text)


def _json_documents(text: str) -> list:
    """A .json file's one document (kubectl's JSON manifests: a Pod, or a List of them)."""
    from sdqos.kube.yamlsafe import YamlError

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise YamlError(f"line {exc.lineno} column {exc.colno}: {exc.msg} (not valid JSON)") from None
    except (RecursionError, ValueError) as exc:
        raise YamlError(f"not valid JSON: {exc}" if isinstance(exc, ValueError) else "JSON nested too deeply") from None
    return [] if doc is None else [doc]


# A file the parse cache could not answer for: (path, real path, sub dir, rel, cache key, identity).
_Miss = tuple[Path, Path, str, str, str, str]


def _parse_files(config_dir: Path, misses: list[_Miss], apply_defaults: bool, workers: int | None,
                 classes: PriorityClasses = NO_CLASSES) -> list[str]:
    """Parse the files the cache could not answer for: their cache entries as JSON text. Many files
    (a just-booted host: the cache lives in /run) are spread over the CPUs (sdqos.loading.fanout)."""
    from sdqos.kube import yamlsafe  # noqa: F401 - imported once here, not once per forked child

    def parse(chunk: Sequence[_Miss]) -> list[str]:
        out = []
        for path, real, sub, rel, _, _ in chunk:
            entry = _parse_file(config_dir, path, real, sub, rel, apply_defaults, classes)
            entry["rel"] = rel
            out.append(json.dumps(entry, separators=(",", ":")))
        return out

    n = fanout.workers_for(len(misses)) if workers is None else workers
    return fanout.map_chunks(parse, misses, n)


_FileObjects = tuple[list[Pod], list[VirtualMachine], list[InvalidInput], list[str], bool]


def _entry_objects(text: str) -> _FileObjects:
    """A cache entry's model objects: pods, VMs, errors, invalid keys, and whether the file failed."""
    entry = json.loads(text)
    return ([pc.pod_from_json(p) for p in entry["pods"]], [pc.vm_from_json(v) for v in entry["vms"]],
            [pc.error_from_json(e) for e in entry["errors"]], entry["invalid"], bool(entry["failed"]))


def _entry_of(text: str, rel: str) -> bool:
    """Whether a cached entry's text is a pods/vms entry of the file at ``rel`` (a cheap look: the
    key is the absolute path, so only a moved config dir could make it another file's)."""
    return text.startswith('{"pods":') and text.endswith(f',"rel":{json.dumps(rel)}}}')


def _node_documents(config_dir: Path, path: Path, real: Path, st: os.stat_result, cache: pc.ParseCache) -> list:
    """node.yaml's YAML documents, from the parse cache while the file is unchanged. Only the
    documents are kept (node values are validated again every time, against this host's capacity),
    and only when JSON gives them back exactly (no integer keys, no NaN)."""
    key, identity = path.absolute(), pc.file_identity(st)
    entry = cache.get(key, identity)
    if entry is not None and entry.get("rel") == "node.yaml" and isinstance(entry.get("docs"), list):
        return entry["docs"]
    from sdqos.kube.yamlsafe import YamlError, load_documents

    try:
        docs = load_documents(_read_text(config_dir, path, real))
    except YamlError as exc:
        raise InvalidInput(str(exc), where="node.yaml") from None
    try:
        exact = json.loads(json.dumps(docs)) == docs
    except (TypeError, ValueError):
        exact = False
    if exact:
        cache.put(key, identity, {"rel": "node.yaml", "docs": docs})
    return docs


def _priority_classes(config_dir: Path, real_dir: Path, insecure: bool, reads: Reads | None = None) -> PriorityClasses:
    """``priorityclasses.yaml``: the PriorityClasses pods may name (sdqos.kube.priority), read under
    the rules of every config file; none without the file. Every pod's priority depends on it, so
    a file with any problem is ConfigInvalid, as node.yaml is: nothing is synced on priorities
    that may be wrong."""
    path = config_dir / PRIORITY_CLASSES_FILE
    if reads is not None:
        reads.file(path)
    if not path.exists() and not path.is_symlink():
        return NO_CLASSES
    from sdqos.kube.manifests import parse_priority_class_documents
    from sdqos.kube.yamlsafe import YamlError

    try:
        real, _ = _checked(config_dir, real_dir, path, insecure)
        docs = parse_documents(_read_text(config_dir, path, real), PRIORITY_CLASSES_FILE)
    except InvalidInput as exc:
        raise ConfigInvalid([exc]) from None
    except YamlError as exc:
        raise ConfigInvalid([InvalidInput(str(exc), where=PRIORITY_CLASSES_FILE)]) from None
    result = ParseResult()
    classes = parse_priority_class_documents(docs, PRIORITY_CLASSES_FILE, result)
    if result.errors:
        raise ConfigInvalid(result.errors)
    return classes


def priority_classes(config_dir: Path, insecure: bool) -> PriorityClasses:
    """The config dir's PriorityClasses (see _priority_classes); ConfigDirError for a dir that
    cannot be resolved."""
    try:
        real_dir = config_dir.resolve(strict=True)
    except OSError as exc:
        raise ConfigDirError(f"config directory {config_dir}: {exc.strerror or exc}") from None
    return _priority_classes(config_dir, real_dir, insecure)


def _list_dir(config_dir: Path, sub: str, insecure: bool, errors: list[InvalidInput], failed: list[str],
              skipped: list[str] | None = None, reads: Reads | None = None) -> list[str]:
    """The names of the config files in ``sub``, sorted; [] (and an error) when it is unusable."""
    d = config_dir / sub
    if not d.exists() and not d.is_symlink():
        if reads is not None:
            reads.file(d)  # (missing: its appearance is a change)
        return []
    try:
        st = os.stat(d)
    except OSError as exc:
        errors.append(_fail(config_dir, d, f"cannot stat: {exc.strerror or exc}"))
        failed.append(sub)
        return []
    if not stat.S_ISDIR(st.st_mode):
        errors.append(_fail(config_dir, d, "is not a directory"))
        failed.append(sub)
        return []
    problem = _check_mode(st, "directory", insecure)
    if problem:
        errors.append(_fail(config_dir, d, problem))
        failed.append(sub)
        return []
    try:
        names = sorted(os.listdir(d))
    except OSError as exc:
        errors.append(_fail(config_dir, d, f"cannot be listed: {exc.strerror or exc}"))
        failed.append(sub)
        return []
    if reads is not None:
        reads.listing(d, st, names)
    if skipped is not None:  # not hidden, not an editor's backup, and still not read: say so
        skipped += [f"{sub}/{n}" for n in names if not n.endswith(SUFFIXES) and not n.startswith(".") and not n.endswith("~")]
    return [n for n in names if n.endswith(SUFFIXES) and not n.startswith(".")]


class ScannedFile(NamedTuple):
    """A pods/ or vms/ file that passed the checks, with its cache entry (JSON text)."""

    rel: str  # relative to the config dir: pods/a.yaml
    key: str  # its cache key: the absolute path
    text: str
    real: str
    identity: str


@dataclass
class Scan:
    """A config directory read as far as the files: node values, and each pods/ or vms/ file's
    cache entry as JSON text (parsed now when the cache had none), in order. What both
    :func:`load_config` and sdqos.loading.incremental decode, each its own way."""

    dir: Path
    node: NodeConfig
    cache: pc.ParseCache
    files: list[ScannedFile]
    errors: list[InvalidInput]  # files that could not be used at all
    failed: list[str]
    apply_defaults: bool
    warnings: list[str] = field(default_factory=list)
    classes: PriorityClasses = NO_CLASSES
    reads: Reads = field(default_factory=Reads)

    def objects(self, f: ScannedFile) -> _FileObjects:
        """The file's objects from its entry (read back from the cache file when the scan let go
        of its text: :meth:`drop_texts`); a cached entry that does not decode (damaged, or from a
        foreign writer) or is gone is thrown away and the file parsed again."""
        try:
            return _entry_objects(f.text or self._entry_on_disk(f))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            miss = (self.dir / f.rel, Path(f.real), f.rel.partition("/")[0], f.rel, f.key, f.identity)
            text = _parse_files(self.dir, [miss], self.apply_defaults, 1, self.classes)[0]
            self.cache.put_text(f.key, f.identity, text)
            return _entry_objects(text)

    def drop_texts(self) -> None:
        """Let go of every file's entry text once the cache file holds them all (its
        :meth:`ParseCache.save` said so): a pod is decoded from its entry only when something asks
        for it, which a sync seldom does, and at 1000 pods the texts were ~0.8 MB of its peak RSS."""
        self.files = [f._replace(text="") for f in self.files]

    def _entry_on_disk(self, f: ScannedFile) -> str:
        self.cache.reread()
        text = self.cache.lookup(f.key, f.identity)
        return text if text is not None and _entry_of(text, f.rel) else ""

    def config(self, result: ParseResult) -> Config:
        """The Config, from what the files' entries held (``result``, duplicates checked)."""
        return Config(
            dir=self.dir,
            node=self.node,
            pods=result.pods,
            vms=result.vms,
            errors=self.errors + result.errors,
            warnings=list(self.node.warnings) + self.warnings + result.warnings,
            invalid_keys=result.invalid_keys,
            failed_files=self.failed,
            vms_declared=bool(_list_dir(self.dir, "vms", True, [], [], reads=self.reads)),
            inputs=self.reads,
        )


def add_entry(result: ParseResult, failed: list[str], rel: str, objs: _FileObjects) -> None:
    """One file's objects into ``result``; a file whose content is unknown into ``failed``."""
    pods, vms, errs, invalid, file_failed = objs
    result.pods.extend(pods)
    result.vms.extend(vms)
    result.errors.extend(errs)
    result.invalid_keys.update(invalid)
    if file_failed:
        failed.append(rel)


def load_config(
    config_dir: Path | str = DEFAULT_DIR,
    *,
    detected: Mapping[str, Quantity] | None = None,
    insecure: bool = False,
    apply_defaults: bool = True,
    cache_dir: Path | None = None,
    cache_write: bool = True,
    workers: int | None = None,
) -> Config:
    """Read and validate the whole config directory. Raises ConfigDirError when the directory is
    unusable and ConfigInvalid when node.yaml is; per-file problems are collected in the result.
    ``cache_dir``: keep validated files there (sdqos.loading.cache) and reuse them while unchanged;
    with ``cache_write`` False only reuse them.
    ``workers``: processes parsing the files the cache lacks (default: by CPUs and file count)."""
    scan = scan_config(config_dir, detected=detected, insecure=insecure, apply_defaults=apply_defaults,
                       cache_dir=cache_dir, cache_write=cache_write, workers=workers)
    result = ParseResult()
    for f in scan.files:
        add_entry(result, scan.failed, f.rel, scan.objects(f))
    scan.cache.save()
    check_duplicates(result)
    return scan.config(result)


def _config_dir(config_dir: Path, insecure: bool, reads: Reads) -> Path:
    """The config dir's real path, once it passed the checks (ConfigDirError otherwise)."""
    reads.file(config_dir)
    try:
        st = os.stat(config_dir)
    except FileNotFoundError:
        raise ConfigDirError(f"config directory {config_dir} does not exist") from None
    except OSError as exc:
        raise ConfigDirError(f"config directory {config_dir}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigDirError(f"{config_dir} is not a directory")
    problem = _check_mode(st, "config directory", insecure)
    if problem:
        raise ConfigDirError(f"{config_dir}: {problem}")
    real_dir = config_dir.resolve()
    problem = None if insecure else unsafe_parent(real_dir, reads)
    if problem:
        raise ConfigDirError(f"config directory {config_dir}: {problem}")
    return real_dir


def _node(config_dir: Path, real_dir: Path, insecure: bool, cache: pc.ParseCache,
          detected: Mapping[str, Quantity] | None, reads: Reads) -> NodeConfig:
    """node.yaml validated against this host's facts (ConfigInvalid otherwise)."""
    node_path = config_dir / "node.yaml"
    node_raw = None
    reads.file(node_path)
    if node_path.exists() or node_path.is_symlink():
        try:
            real, st = _checked(config_dir, real_dir, node_path, insecure)
            docs = _node_documents(config_dir, node_path, real, st, cache)
        except InvalidInput as exc:
            raise ConfigInvalid([exc]) from None
        if len(docs) > 1:
            raise ConfigInvalid([InvalidInput("must hold exactly one document", where="node.yaml")])
        node_raw = docs[0] if docs else None
    if detected is None:  # (each fact through reads.call: the no-op proof asks the same function again)
        detected = facts.detect_capacity(counts=reads.call(facts.capacity_counts, "/proc",
                                                           paths=("/proc/meminfo", "/proc/sys/kernel/pid_max")))
    devices = str(facts.SYS_DEVICES)
    node, node_errors = parse_node_config(
        node_raw, detected, page_size=reads.call(facts.page_size),
        online_cpus=facts.online_cpus(text=reads.call(facts.online_cpu_list, devices, paths=(f"{devices}/cpu/online",))),
        numa_nodes=reads.call(facts.numa_nodes, devices, paths=(f"{devices}/node",)),
    )
    if node_errors:
        raise ConfigInvalid(node_errors)
    return node


def _scan_files(config_dir: Path, real_dir: Path, insecure: bool, cache: pc.ParseCache, reads: Reads,
                found: Scan) -> list[_Miss]:
    """Every pods/ and vms/ file checked, into ``found`` with its cache entry ("" when the cache
    has none); the files to parse."""
    misses: list[_Miss] = []
    for sub in ("pods", "vms"):
        skipped: list[str] = []
        names = _list_dir(config_dir, sub, insecure, found.errors, found.failed, skipped, reads)
        found.warnings += [f"{rel} is not read: only *.yaml, *.yml and *.json files in {sub}/ are" for rel in skipped]
        sub_dir = config_dir / sub
        real_parent = sub_dir.resolve() if names else None
        if real_parent is not None and real_parent != real_dir and real_dir not in real_parent.parents:
            real_parent = None  # a symlinked pods/ pointing outside: every file takes the checked path
        # Paths as strings: a cache hit on a plain file costs one lstat and no Path object (the two
        # Path operations per file it had were ~7 µs a file).
        sub_str, abs_sub = str(sub_dir), str(sub_dir.absolute())
        real_sub = str(real_parent) if real_parent is not None else None
        for name in names:
            rel = f"{sub}/{name}"
            key = f"{abs_sub}/{name}"  # = str(path.absolute())
            file_real: str | Path  # a str on the fast path: no Path object per plain file
            try:
                file_real, file_st = _checked_plain(sub_str, real_sub, name, rel, insecure)
                if file_st is None:  # a symlink, or something to word an error about: resolve it
                    reads.file(sub_dir / name)
                    file_real, file_st = _checked(config_dir, real_dir, sub_dir / name, insecure)
                    identity = pc.file_identity(file_st)
                else:  # one key and one identity string, shared by the inputs and the parse cache
                    identity = pc.file_identity(file_st)
                    reads.file(key, known=identity)
            except InvalidInput as exc:
                reads.file(sub_dir / name)
                found.errors.append(exc)
                found.failed.append(rel)
                continue
            if file_st.st_size == 0:
                # An editor or a deploy tool rewriting the file (truncate, then write): what it will
                # hold is unknown, so it counts as unreadable — nothing is removed for it.
                found.warnings.append(f"{rel} is empty (being rewritten?); nothing in the config is removed until it "
                                      "has content")
                found.failed.append(rel)
                continue
            text = cache.lookup(key, identity)
            if text is None or not _entry_of(text, rel):
                misses.append((sub_dir / name, Path(file_real), sub, rel, key, identity))
                text = ""
            found.files.append(ScannedFile(rel, key, text, str(file_real), identity))
    return misses


def scan_config(
    config_dir: Path | str = DEFAULT_DIR,
    *,
    detected: Mapping[str, Quantity] | None = None,
    insecure: bool = False,
    apply_defaults: bool = True,
    cache_dir: Path | None = None,
    cache_write: bool = True,
    workers: int | None = None,
    reads: Reads | None = None,
) -> Scan:
    """node.yaml validated, every other file checked and its entry found or made (see load_config).
    ``reads``: where every input read is recorded (the Scan's, new without one)."""
    config_dir = Path(config_dir)
    reads = Reads() if reads is None else reads
    real_dir = _config_dir(config_dir, insecure, reads)
    classes = _priority_classes(config_dir, real_dir, insecure, reads)
    # Pods are parsed under the classes (their priority): other classes, other entries.
    cache = pc.ParseCache(cache_dir, f"defaults={apply_defaults}" + (f";classes={classes.tag()}" if classes.tag() else ""),
                          writable=cache_write)
    node = _node(config_dir, real_dir, insecure, cache, detected, reads)
    found = Scan(config_dir, node, cache, [], [], [], apply_defaults, [], classes, reads)
    misses = _scan_files(config_dir, real_dir, insecure, cache, reads, found)
    if misses:
        fresh: dict[str, str] = {}
        for (_, _, _, rel, key, identity), text in zip(misses, _parse_files(config_dir, misses, apply_defaults, workers,
                                                                             classes)):
            cache.put_text(key, identity, text)
            fresh[rel] = text
        found.files = [f._replace(text=fresh[f.rel]) if not f.text else f for f in found.files]
    return found
