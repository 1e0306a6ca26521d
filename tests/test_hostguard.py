"""The session's host check (tests/hostguard.py, run by tests/conftest.py) sees what podman run on
the host would leave: its storage and cache appearing, a lock file rewritten without a byte changed."""

from __future__ import annotations

import os

from . import hostguard


def test_the_host_check_covers_podmans_storage_and_the_install_paths():
    for path in ("/var/lib/containers", "/var/cache/containers", "/etc/systemd", "/run/sdqos", "/opt/sdqos",
                 "/usr/local/bin/sdqos"):
        assert path in hostguard.WHOLE


def test_a_lock_rewritten_with_the_same_bytes_is_a_change(tmp_path, monkeypatch):
    store = tmp_path / "containers"
    (store / "storage").mkdir(parents=True)
    lock = store / "storage" / "storage.lock"
    lock.write_text("")
    monkeypatch.setattr(hostguard, "WHOLE", (str(store), str(tmp_path / "cache")))
    monkeypatch.setattr(hostguard, "TIMED", (str(store), str(tmp_path / "cache")))
    before = hostguard.snapshot()
    os.utime(lock, ns=(1, 1))
    (tmp_path / "cache").mkdir()
    assert hostguard.changes(before, hostguard.snapshot()) == [f"created {tmp_path / 'cache'}", f"changed {lock}"]
