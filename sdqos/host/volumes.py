"""A pod's volumes made ready on the host before podman mounts them, as kubelet's volume manager
does: fresh emptyDir directories (mode 0777; with fsGroup owned by that group, setgid), hostPath
type checks (``Directory``, ``DirectoryOrCreate``, ``File``, ``FileOrCreate``, ``Socket``,
``CharDevice``, ``BlockDevice``), subPath directories created, and every source resolved to its
real path — a subPath that leads out of its volume through a symlink is refused. Removed again when
the pod stops.

emptyDirs live under ``SDQOS_VOLUME_DIR`` (default ``/var/lib/sdqos/pods``): ``<uid>/volumes/
kubernetes.io~empty-dir/<name>``, kubelet's layout.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat

from sdqos.errors import HostError, InvalidInput
from sdqos.kube import volumes
from sdqos.kube.runspec import PodRunSpec


def volume_root() -> str:
    root = os.environ.get("SDQOS_VOLUME_DIR") or volumes.DEFAULT_VOLUME_ROOT
    if not root.startswith("/") or not root.isprintable() or "," in root or '"' in root:
        raise InvalidInput(f"{root!r} must be an absolute path without ',' or '\"'", where="SDQOS_VOLUME_DIR")
    return root


_KINDS = {"Socket": (stat.S_ISSOCK, "a socket"), "CharDevice": (stat.S_ISCHR, "a character device"),
          "BlockDevice": (stat.S_ISBLK, "a block device"), "Directory": (stat.S_ISDIR, "a directory"),
          "File": (stat.S_ISREG, "a file")}


def _host_path(v: volumes.Volume, where: str) -> None:
    """kubelet's hostPath type checker (pkg/volume/hostpath): create what *OrCreate asks for,
    refuse a path that is not what the type says."""
    field = f"{v.field}.hostPath.type"
    try:
        if v.host_type == "DirectoryOrCreate" and not os.path.exists(v.path):
            os.makedirs(v.path, 0o755)
        elif v.host_type == "FileOrCreate" and not os.path.exists(v.path):
            os.makedirs(os.path.dirname(v.path) or "/", 0o755, exist_ok=True)
            os.close(os.open(v.path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
        kind = v.host_type.removesuffix("OrCreate")
        if kind in _KINDS:
            check, what = _KINDS[kind]
            try:
                st = os.stat(v.path)
            except FileNotFoundError:
                raise InvalidInput(f"hostPath type check failed: {v.path} does not exist", where=where, field=field) from None
            if not check(st.st_mode):
                raise InvalidInput(f"hostPath type check failed: {v.path} is not {what}", where=where, field=field)
    except OSError as exc:
        raise HostError(f"{v.path}: {exc.strerror}") from None


def _fresh_dir(path: str, fs_group: int | None) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.dirname(path), 0o750, exist_ok=True)
    os.mkdir(path)
    if fs_group is not None:
        os.chown(path, -1, fs_group)
    os.chmod(path, 0o2777 if fs_group is not None else 0o777)  # kubelet: 0777; fsGroup: group-owned, setgid


def prepare(spec: PodRunSpec, uid: str, root: str) -> PodRunSpec:
    """Make the pod's volumes ready; the run spec with each mount's real host path."""
    try:
        for v in spec.volumes:
            if v.kind == "emptyDir" and not v.memory:
                _fresh_dir(volumes.empty_dir(root, uid, v.name), spec.fs_group)
            elif v.kind == "hostPath":
                _host_path(v, spec.where)
        containers = []
        for s in spec.containers:
            mounts = []
            for m in s.mounts:
                if m.volume.memory:
                    mounts.append(m)
                    continue
                base = volumes.volume_base(m.volume, root, uid)
                target = volumes.source(m, root, uid)
                assert target is not None  # None only for a tmpfs (Memory emptyDir), passed on above
                real, real_base = os.path.realpath(target), os.path.realpath(base)
                if m.sub_path and not (real == real_base or real.startswith(real_base.rstrip("/") + "/")):
                    raise InvalidInput(f"subPath {m.sub_path!r} leads out of volume {m.volume.name!r} (to {real})",
                                       where=spec.where, field=f"{m.field}.subPath")
                if m.sub_path and not os.path.lexists(real):  # created only once known to stay inside
                    os.makedirs(real, 0o755 if m.volume.kind == "hostPath" else 0o777, exist_ok=True)
                if not real.isprintable() or "," in real or '"' in real:
                    raise InvalidInput(f"{real!r}: podman's --mount cannot carry ',', '\"' or control characters",
                                       where=spec.where, field=m.field)
                mounts.append(dataclasses.replace(m, source=real))
            containers.append(dataclasses.replace(s, mounts=tuple(mounts)))
        return dataclasses.replace(spec, containers=tuple(containers))
    except OSError as exc:
        raise HostError(f"preparing the volumes of pod {uid}: {exc.filename or ''}: {exc.strerror}") from None


def remove(uid: str, root: str) -> None:
    """The pod's emptyDirs go with the pod."""
    path = os.path.join(root, uid)
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)
