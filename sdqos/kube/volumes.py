"""A pod's volumes and a container's volumeMounts, as ``sdqos podman start`` can serve them. Pure.

Served: ``hostPath`` (bind mount, with kubelet's type checks done at start by sdqos.host.volumes)
and ``emptyDir`` — on disk a directory per pod and volume under the volume root, shared by the
pod's containers as kubelet's is; ``medium: Memory`` a tmpfs (``sizeLimit``, else the pod's memory
limit), which podman can give one container only. Every other source (configMap, secret,
persistentVolumeClaim, projected, downwardAPI, …) needs the API server or a volume plugin and is
refused in one line naming the field — never dropped.

Paths end up in podman's ``--mount`` option, a comma-separated list of ``key=value``: a path with
``,`` or ``"`` (or a line break) could add mount options of its own, so it is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sdqos.errors import InvalidInput, QuantityError
from sdqos.kube.quantity import Quantity

DEFAULT_VOLUME_ROOT = "/var/lib/sdqos/pods"  # kubelet's /var/lib/kubelet/pods, for sdqos's emptyDirs
EMPTY_DIR = "kubernetes.io~empty-dir"
HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice")
PROPAGATION = {None: None, "None": None, "HostToContainer": "rslave", "Bidirectional": "rshared"}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
_SOURCES = ("hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
            "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI",
            "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk",
            "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image")
MOUNT_FIELDS = frozenset({"name", "mountPath", "readOnly", "subPath", "subPathExpr", "mountPropagation",
                          "recursiveReadOnly"})


@dataclass(frozen=True, slots=True)
class Volume:
    name: str
    kind: str  # hostPath | emptyDir
    path: str = ""  # hostPath: the host path
    host_type: str = ""  # hostPath: kubelet's HostPathType
    memory: bool = False  # emptyDir medium: Memory
    size_limit: int | None = None  # emptyDir sizeLimit, bytes
    field: str = ""  # spec.volumes[0], for errors found on the host


@dataclass(frozen=True, slots=True)
class Mount:
    """One volumeMount, with the host side it binds (or a tmpfs)."""

    volume: Volume
    destination: str
    read_only: bool = False
    sub_path: str = ""
    propagation: str | None = None  # podman bind-propagation (rslave, rshared), None: rprivate
    field: str = ""  # spec.containers[0].volumeMounts[1], for errors found on the host
    source: str | None = None  # the host path, resolved on the host at start (sdqos.host.volumes)


def empty_dir(root: str, uid: str, name: str) -> str:
    """Where an on-disk emptyDir of pod ``uid`` lives (kubelet: pods/<uid>/volumes/kubernetes.io~empty-dir/<name>)."""
    return f"{root.rstrip('/')}/{uid}/volumes/{EMPTY_DIR}/{name}"


def volume_base(v: Volume, root: str, uid: str) -> str:
    """The host directory (or file) a volume is: a hostPath's path, an on-disk emptyDir's directory."""
    return empty_dir(root, uid, v.name) if v.kind == "emptyDir" else (v.path.rstrip("/") or "/")


def source(m: Mount, root: str, uid: str) -> str | None:
    """The host path a mount binds (subPath included), or None for a tmpfs."""
    if m.source is not None:
        return m.source
    if m.volume.kind == "emptyDir":
        if m.volume.memory:
            return None
        base = empty_dir(root, uid, m.volume.name)
    else:
        base = m.volume.path.rstrip("/") or "/"
    return f"{base.rstrip('/')}/{m.sub_path}" if m.sub_path else base


class _Reader:
    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, message: str):
        raise InvalidInput(message, where=self.where, field=field)

    def path(self, value, field: str, *, absolute: bool) -> str:
        if not isinstance(value, str) or not value:
            self.fail(field, "Required value: a path")
        if not value.isprintable() or "," in value or '"' in value:
            self.fail(field, f"{value!r}: podman's --mount cannot carry ',', '\"' or control characters in a path")
        if absolute and not value.startswith("/"):
            self.fail(field, f"{value!r} must be an absolute path")
        if ".." in value.split("/"):
            self.fail(field, f"{value!r} must not contain '..'")
        return value


def pod_volumes(spec: dict, where: str) -> dict[str, Volume]:
    """The pod's volumes by name; a source sdqos cannot serve is refused."""
    r = _Reader(where)
    raw = spec.get("volumes")
    if raw is None:
        return {}
    if not isinstance(raw, list):
        r.fail("spec.volumes", "must be a list")
    out: dict[str, Volume] = {}
    for i, v in enumerate(raw):
        path = f"spec.volumes[{i}]"
        if not isinstance(v, dict):
            r.fail(path, "must be a mapping")
        name = v.get("name")
        if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
            r.fail(f"{path}.name", "must be a DNS-1123 label")
        if name in out:
            r.fail(f"{path}.name", f"Duplicate value: {name!r}")
        sources = [k for k in v if k != "name"]
        if len(sources) != 1:
            r.fail(path, "must have exactly one volume source" if not sources else
                   f"may not specify more than 1 volume type ({', '.join(map(str, sources))})")
        kind = sources[0]
        body = v[kind]
        if kind == "hostPath":
            if not isinstance(body, dict):
                r.fail(f"{path}.hostPath", "must be a mapping")
            host_type = body.get("type") or ""
            if host_type not in HOST_PATH_TYPES:
                r.fail(f"{path}.hostPath.type", f"{host_type!r} is not one of {', '.join(t for t in HOST_PATH_TYPES if t)}")
            unknown = set(body) - {"path", "type"}
            if unknown:
                r.fail(f"{path}.hostPath.{sorted(map(str, unknown))[0]}", "is not a hostPath field")
            out[name] = Volume(name, kind, path=r.path(body.get("path"), f"{path}.hostPath.path", absolute=True),
                               host_type=host_type, field=path)
        elif kind == "emptyDir":
            if body is not None and not isinstance(body, dict):
                r.fail(f"{path}.emptyDir", "must be a mapping")
            body = body or {}
            unknown = set(body) - {"medium", "sizeLimit"}
            if unknown:
                r.fail(f"{path}.emptyDir.{sorted(map(str, unknown))[0]}", "is not an emptyDir field")
            medium = body.get("medium") or ""
            if medium not in ("", "Memory"):
                r.fail(f"{path}.emptyDir.medium", f"{medium!r}: sdqos podman serves emptyDir on disk or in Memory")
            size = None
            if body.get("sizeLimit") is not None:
                try:
                    q = Quantity.parse(str(body["sizeLimit"]))
                except QuantityError as exc:
                    r.fail(f"{path}.emptyDir.sizeLimit", str(exc))
                if q.sign() < 0:
                    r.fail(f"{path}.emptyDir.sizeLimit", "must be greater than or equal to 0")
                size = q.value() or None
            out[name] = Volume(name, kind, memory=medium == "Memory", size_limit=size, field=path)
        elif kind in _SOURCES:
            r.fail(f"{path}.{kind}", f"{kind} volumes need the Kubernetes API or a volume plugin; sdqos podman "
                                     "serves hostPath and emptyDir only")
        else:
            r.fail(f"{path}.{kind}", "is not a volume source")
    return out


def container_mounts(c: dict, volumes: dict[str, Volume], where: str, path: str) -> tuple[Mount, ...]:
    """A container's volumeMounts, checked as the API server checks them (and as podman can carry them)."""
    r = _Reader(where)
    raw = c.get("volumeMounts")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        r.fail(f"{path}.volumeMounts", "must be a list")
    out = []
    seen: set[str] = set()
    for j, m in enumerate(raw):
        field = f"{path}.volumeMounts[{j}]"
        if not isinstance(m, dict):
            r.fail(field, "must be a mapping")
        for key in m:
            if key not in MOUNT_FIELDS:
                r.fail(f"{field}.{key}", "is not a volumeMount field")
        name = m.get("name")
        if name not in volumes:
            r.fail(f"{field}.name", f"Not found: {name!r} (no volume of that name in spec.volumes)")
        dest = r.path(m.get("mountPath"), f"{field}.mountPath", absolute=True)
        if dest in seen:
            r.fail(f"{field}.mountPath", f"{dest!r}: must be unique")
        seen.add(dest)
        read_only = m.get("readOnly", False)
        if not isinstance(read_only, bool):
            r.fail(f"{field}.readOnly", "must be true or false")
        sub = m.get("subPath") or ""
        if sub:
            sub = r.path(sub, f"{field}.subPath", absolute=False)
            if sub.startswith("/"):
                r.fail(f"{field}.subPath", f"{sub!r} must be a relative path")
        if m.get("subPathExpr"):
            r.fail(f"{field}.subPathExpr", "needs the downward API's environment expansion; give a subPath")
        prop = m.get("mountPropagation")
        if prop not in PROPAGATION:
            r.fail(f"{field}.mountPropagation", f"{prop!r} is not one of None, HostToContainer, Bidirectional")
        rro = m.get("recursiveReadOnly") or "Disabled"
        if rro not in ("Disabled", "IfPossible", "Enabled"):
            r.fail(f"{field}.recursiveReadOnly", f"{rro!r} is not one of Disabled, IfPossible, Enabled")
        if rro != "Disabled" and not read_only:
            r.fail(f"{field}.recursiveReadOnly", "may only be specified when readOnly is true")
        if rro == "Enabled":
            r.fail(f"{field}.recursiveReadOnly", "Enabled: podman 4 cannot make a mount recursively read-only")
        vol = volumes[name]
        if vol.memory and prop:
            r.fail(f"{field}.mountPropagation", "a Memory emptyDir is a tmpfs: no propagation")
        if vol.memory and sub:
            r.fail(f"{field}.subPath", "a Memory emptyDir is a tmpfs of its own: no subPath")
        out.append(Mount(vol, dest, read_only, sub, PROPAGATION[prop], field))
    return tuple(out)


def check_memory_volumes_not_shared(mounts_by_container: list[tuple[str, tuple[Mount, ...]]], where: str) -> None:
    """A Memory emptyDir is a tmpfs podman makes per mount: refused when mounted twice (kubelet's
    would be one tmpfs, shared; a copy per mount would silently not be)."""
    first: dict[str, str] = {}
    for _, mounts in mounts_by_container:
        for m in mounts:
            if m.volume.memory:
                if m.volume.name in first:
                    raise InvalidInput(f"Memory emptyDir {m.volume.name!r} is also mounted by {first[m.volume.name]}: "
                                       "podman cannot share one tmpfs between mounts; use a disk emptyDir",
                                       where=where, field=m.field)
                first[m.volume.name] = m.field
