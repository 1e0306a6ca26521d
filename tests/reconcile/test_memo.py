"""What a sync reuses of podman's, libvirt's and machined's answers (sdqos.reconcile.memo, under
the keys their runtime rows in sdqos/reconcile/runtimes/ choose): only under the key it was taken with. Real files in a temp dir, as libvirtd writes them; the podman
and machined cases that need the real services are in test_podman_sandbox.py and
test_vms_sandbox.py."""

from __future__ import annotations

import json
import os

from sdqos.host.podman import PodmanContainer
from sdqos.reconcile.memo import NAME, Memo
from sdqos.reconcile.runtimes.libvirt import Libvirt
from sdqos.reconcile.runtimes.podman import ROW as PODMAN
from sdqos.reconcile.scopes import LiveScope

from ..host.test_libvirt import STATUS, fake_proc

CID = "a" * 64


class _Memo(Memo):
    """The memo with libvirt's row looking in the temp dir: ``domains`` as a sync asks it."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path / "run")
        self.row = Libvirt(tmp_path / "qemu", proc=tmp_path / "proc")

    def domains(self, warnings: list[str]):
        return self.row.domains(self, warnings)


def _memo(tmp_path) -> _Memo:
    return _Memo(tmp_path)


def _status(qemu, name: str, pid: int) -> None:
    (qemu / f"{name}.xml").write_text(STATUS.replace("db_replica.2", name).replace("4242", str(pid)))
    os.utime(qemu / f"{name}.xml", (1200, 1200))  # written after the (fake) QEMU started


def test_libvirt_domains_are_read_again_when_a_status_file_appears_changes_or_leaves(tmp_path):
    (tmp_path / "run").mkdir(), (tmp_path / "qemu").mkdir()
    fake_proc(tmp_path, {4242: "db", 4343: "db"})
    assert _memo(tmp_path).domains([]) == {}
    m = _memo(tmp_path)
    _status(tmp_path / "qemu", "db", 4242)  # a VM started
    assert m.domains([])["db"].pid == 4242
    m.save()
    again = _memo(tmp_path)  # the next sync: same files, the same answer from observed.json
    assert again.domains([]) == m.domains([]) and not again.dirty
    _status(tmp_path / "qemu", "db", 4343)  # restarted: a new PID
    assert again.domains([])["db"].pid == 4343
    os.unlink(tmp_path / "qemu" / "db.xml")  # stopped
    assert again.domains([]) == {}


def test_a_kept_domain_whose_qemu_is_gone_is_not_reused(tmp_path):
    """libvirtd down while the guest ended: its record stays as it was, its PID is checked again."""
    (tmp_path / "run").mkdir(), (tmp_path / "qemu").mkdir()
    fake_proc(tmp_path, {4242: "db"})
    _status(tmp_path / "qemu", "db", 4242)
    m = _memo(tmp_path)
    assert list(m.domains([])) == ["db"]
    m.save()
    fake_proc(tmp_path, {4242: None})  # the PID now runs something else
    warnings: list[str] = []
    assert _memo(tmp_path).domains(warnings) == {}
    assert warnings and "that process is not its QEMU" in warnings[0]


def test_a_file_made_writable_by_others_is_distrusted_at_once_and_its_warning_kept(tmp_path):
    (tmp_path / "run").mkdir(), (tmp_path / "qemu").mkdir()
    qemu = tmp_path / "qemu"
    fake_proc(tmp_path, {4242: "db"})
    _status(qemu, "db", 4242)
    m = _memo(tmp_path)
    assert list(m.domains([])) == ["db"]
    m.save()
    os.chmod(qemu / "db.xml", 0o666)  # same content and mtime; the ctime moved
    warnings: list[str] = []
    m = _memo(tmp_path)
    assert m.domains(warnings) == {} and warnings == [f"{qemu}/db.xml is not libvirt's (owner or mode): ignored"]
    m.save()
    warnings = []
    assert _memo(tmp_path).domains(warnings) == {}  # reused: with its warning, said every sync
    assert warnings == [f"{qemu}/db.xml is not libvirt's (owner or mode): ignored"]


def _scopes(*names: str) -> dict[str, LiveScope]:
    return {n: LiveScope(n, "kubepods-podx.slice", f"/kubepods.slice/kubepods-podx.slice/{n}", [1]) for n in names}


def test_podman_is_asked_again_only_when_the_libpod_scopes_change(tmp_path, monkeypatch):
    asked = []

    def ask(ids):
        def go():
            asked.append(ids)
            return {i: PodmanContainer(i, f"c{i[0]}", {"l": "v"}, "running") for i in ids}
        return go
    scopes = _scopes(f"libpod-{CID}.scope", f"libpod-conmon-{CID}.scope")
    m = Memo(tmp_path)
    assert PODMAN.containers(scopes, m, ask([CID]))[CID].name == "ca"
    m.save()
    m = Memo(tmp_path)
    assert PODMAN.containers(scopes, m, ask([CID])) == {CID: PodmanContainer(CID, "ca", {"l": "v"}, "running")}
    assert len(asked) == 1  # the same scopes: podman not asked
    other = "b" * 64
    assert set(PODMAN.containers({**scopes, **_scopes(f"libpod-{other}.scope")}, m, ask([CID, other]))) == {CID, other}
    assert len(asked) == 2  # a container started: asked
    monkeypatch.setenv("SDQOS_PODMAN", "podman --root /elsewhere")
    PODMAN.containers({**scopes, **_scopes(f"libpod-{other}.scope")}, m, ask([CID, other]))
    assert len(asked) == 3  # another podman (its storage): asked
    assert PODMAN.containers(_scopes("sdqos-pod-x.scope"), m, lambda: {}) == {}  # no container scope: nothing kept or asked
    assert len(asked) == 3


def test_a_cache_that_is_not_ours_or_not_json_is_ignored(tmp_path):
    (tmp_path / NAME).write_text(json.dumps({"podman": {"key": "x"}}))
    os.chmod(tmp_path / NAME, 0o666)
    assert Memo(tmp_path).data == {}
    os.chmod(tmp_path / NAME, 0o600)
    (tmp_path / NAME).write_text("{not json")
    assert Memo(tmp_path).data == {}
