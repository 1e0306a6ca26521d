"""What a sync reuses of podman's, libvirt's and machined's answers (sdqos.reconcile.memo): only
under the key it was taken with. Real files in a temp dir, as libvirtd writes them; the podman
and machined cases that need the real services are in test_podman_sandbox.py and
test_vms_sandbox.py."""

from __future__ import annotations

import json
import os

from sdqos.host.podman import PodmanContainer
from sdqos.reconcile.memo import NAME, Memo
from sdqos.reconcile.scopes import LiveScope

from ..host.test_libvirt import STATUS

CID = "a" * 64


def test_libvirt_domains_are_read_again_when_a_status_file_appears_changes_or_leaves(tmp_path):
    run, qemu = tmp_path / "run", tmp_path / "qemu"
    run.mkdir(), qemu.mkdir()
    assert Memo(run, qemu).domains([]) == {}
    m = Memo(run, qemu)
    (qemu / "db_replica.2.xml").write_text(STATUS)  # a VM started
    assert m.domains([])["db_replica.2"].pid == 4242
    m.save()
    again = Memo(run, qemu)  # the next sync: same files, the same answer from observed.json
    assert again.domains([]) == m.domains([]) and not again.dirty
    (qemu / "db_replica.2.xml").write_text(STATUS.replace("4242", "4343"))  # restarted: a new PID
    assert again.domains([])["db_replica.2"].pid == 4343
    os.unlink(qemu / "db_replica.2.xml")  # stopped
    assert again.domains([]) == {}


def test_a_file_made_writable_by_others_is_distrusted_at_once_and_its_warning_kept(tmp_path):
    run, qemu = tmp_path / "run", tmp_path / "qemu"
    run.mkdir(), qemu.mkdir()
    (qemu / "db.xml").write_text(STATUS)
    m = Memo(run, qemu)
    assert list(m.domains([])) == ["db_replica.2"]
    m.save()
    os.chmod(qemu / "db.xml", 0o666)  # same content and mtime; the ctime moved
    warnings: list[str] = []
    m = Memo(run, qemu)
    assert m.domains(warnings) == {} and warnings == [f"{qemu}/db.xml is not libvirt's (owner or mode): ignored"]
    m.save()
    warnings = []
    assert Memo(run, qemu).domains(warnings) == {}  # reused: with its warning, said every sync
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
    assert m.podman(scopes, ask([CID]))[CID].name == "ca"
    m.save()
    m = Memo(tmp_path)
    assert m.podman(scopes, ask([CID])) == {CID: PodmanContainer(CID, "ca", {"l": "v"}, "running")}
    assert len(asked) == 1  # the same scopes: podman not asked
    other = "b" * 64
    assert set(m.podman({**scopes, **_scopes(f"libpod-{other}.scope")}, ask([CID, other]))) == {CID, other}
    assert len(asked) == 2  # a container started: asked
    monkeypatch.setenv("SDQOS_PODMAN", "podman --root /elsewhere")
    m.podman({**scopes, **_scopes(f"libpod-{other}.scope")}, ask([CID, other]))
    assert len(asked) == 3  # another podman (its storage): asked
    assert m.podman(_scopes("sdqos-pod-x.scope"), lambda: {}) == {}  # no container scope: nothing kept or asked
    assert len(asked) == 3


def test_a_cache_that_is_not_ours_or_not_json_is_ignored(tmp_path):
    (tmp_path / NAME).write_text(json.dumps({"podman": {"key": "x"}}))
    os.chmod(tmp_path / NAME, 0o666)
    assert Memo(tmp_path).data == {}
    os.chmod(tmp_path / NAME, 0o600)
    (tmp_path / NAME).write_text("{not json")
    assert Memo(tmp_path).data == {}
