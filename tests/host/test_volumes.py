"""A pod's volumes made ready on the host (sdqos.host.volumes), in a temp dir: kubelet's hostPath
type checks, fresh emptyDirs with kubelet's modes, subPaths that never leave their volume."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from sdqos.errors import InvalidInput
from sdqos.host import volumes as hv
from sdqos.kube.runspec import run_spec

WHERE = "pods/t.yaml[0]"
UID = "0f0e0d0c-0000-4000-8000-000000000001"


def spec(volumes, mounts, **pod_sc):
    d = {"metadata": {"name": "web"}, "spec": {"volumes": volumes, "containers": [
        {"name": "app", "image": "localhost/bb", "volumeMounts": mounts}]}}
    if pod_sc:
        d["spec"]["securityContext"] = pod_sc
    return run_spec(d, WHERE)


def test_host_path_types_as_kubelet_checks_them(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    ok = [("dir", "Directory"), ("file", "File"), ("sock", "Socket"), ("new/dir", "DirectoryOrCreate"),
          ("made/file", "FileOrCreate"), ("anything", "")]
    s = spec([{"name": f"v{i}", "hostPath": {"path": str(tmp_path / p), "type": t}} for i, (p, t) in enumerate(ok)], [])
    hv.prepare(s, UID, str(tmp_path / "root"))
    assert (tmp_path / "new" / "dir").is_dir() and stat.S_IMODE((tmp_path / "new" / "dir").stat().st_mode) == 0o755
    made = tmp_path / "made" / "file"
    assert made.is_file() and made.read_text() == "" and stat.S_IMODE(made.stat().st_mode) == 0o644
    assert not (tmp_path / "anything").exists()  # "": no check, nothing made
    for path, kind, what in (("file", "Directory", "is not a directory"), ("dir", "File", "is not a file"),
                             ("file", "Socket", "is not a socket"), ("file", "CharDevice", "is not a character device"),
                             ("dir", "BlockDevice", "is not a block device"), ("missing", "Directory", "does not exist")):
        s = spec([{"name": "v", "hostPath": {"path": str(tmp_path / path), "type": kind}}], [])
        with pytest.raises(InvalidInput) as exc:
            hv.prepare(s, UID, str(tmp_path / "root"))
        assert str(exc.value) == f"{WHERE}: spec.volumes[0].hostPath.type: hostPath type check failed: {tmp_path / path} {what}"
    sock.close()


def test_empty_dirs_are_fresh_and_go_with_the_pod(tmp_path):
    root = str(tmp_path / "root")
    s = spec([{"name": "scratch", "emptyDir": {}}], [{"name": "scratch", "mountPath": "/s", "subPath": "a/b"}])
    ready = hv.prepare(s, UID, root)
    base = tmp_path / "root" / UID / "volumes" / "kubernetes.io~empty-dir" / "scratch"
    assert stat.S_IMODE(base.stat().st_mode) == 0o777 and (base / "a" / "b").is_dir()
    assert ready.containers[0].mounts[0].source == str(base / "a" / "b")
    (base / "old").write_text("from the last run")
    hv.prepare(s, UID, root)
    assert not (base / "old").exists()  # a new pod start gets an empty dir
    hv.remove(UID, root)
    assert not (tmp_path / "root" / UID).exists()


def test_fs_group_owns_empty_dirs_setgid(tmp_path):
    s = spec([{"name": "e", "emptyDir": {}}], [], fsGroup=4242)
    hv.prepare(s, UID, str(tmp_path))
    st = (tmp_path / UID / "volumes" / "kubernetes.io~empty-dir" / "e").stat()
    assert st.st_gid == 4242 and stat.S_IMODE(st.st_mode) == 0o2777


def test_a_sub_path_never_leaves_its_volume(tmp_path):
    vol = tmp_path / "vol"
    vol.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, vol / "link")
    s = spec([{"name": "v", "hostPath": {"path": str(vol)}}], [{"name": "v", "mountPath": "/v", "subPath": "link/new"}])
    with pytest.raises(InvalidInput) as exc:
        hv.prepare(s, UID, str(tmp_path / "root"))
    assert str(exc.value) == (f"{WHERE}: spec.containers[0].volumeMounts[0].subPath: subPath 'link/new' leads out of "
                              f"volume 'v' (to {outside / 'new'})")
    assert not (outside / "new").exists()  # nothing made outside
    os.symlink("inside", vol / "ok")
    (vol / "inside").mkdir()
    s = spec([{"name": "v", "hostPath": {"path": str(vol)}}], [{"name": "v", "mountPath": "/v", "subPath": "ok/x"}])
    assert hv.prepare(s, UID, str(tmp_path / "root")).containers[0].mounts[0].source == str(vol / "inside" / "x")


def test_a_host_path_resolving_to_a_comma_is_refused(tmp_path):
    odd = tmp_path / "a,ro"
    odd.mkdir()
    os.symlink(odd, tmp_path / "plain")
    s = spec([{"name": "v", "hostPath": {"path": str(tmp_path / "plain")}}], [{"name": "v", "mountPath": "/v"}])
    with pytest.raises(InvalidInput) as exc:
        hv.prepare(s, UID, str(tmp_path / "root"))
    assert str(exc.value).startswith(f"{WHERE}: spec.containers[0].volumeMounts[0]: '{odd}': podman's --mount cannot carry")


def test_the_volume_root_must_be_absolute(monkeypatch):
    monkeypatch.setenv("SDQOS_VOLUME_DIR", "rel/dir")
    with pytest.raises(InvalidInput) as exc:
        hv.volume_root()
    assert str(exc.value).startswith("SDQOS_VOLUME_DIR: 'rel/dir' must be an absolute path")
