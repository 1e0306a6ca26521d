"""sdqos.host.rundir's record of what the last sync applied (pure file I/O, no systemd)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from sdqos.host import rundir


@pytest.mark.parametrize("applied", [
    {},
    {"kubepods.slice": {"CPUShares": 2048, "MemoryLimit": 1 << 33}},
    {"b.slice": {"TasksMax": 2**64 - 1, "CPUShares": 2}, "a.slice": {}, "é-pod.scope": {"Z": -1, "A": 0}},
], ids=["empty", "one", "unsorted-unicode"])
def test_applied_is_written_as_json_dumps_writes_it(tmp_path, applied):
    rundir.save_applied(applied, tmp_path)
    path = tmp_path / rundir.APPLIED_NAME
    assert path.read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)
    assert rundir.load_applied(tmp_path) == applied
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == [rundir.APPLIED_NAME]  # the temp file was renamed, not left


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_applied_batches_join_into_one_document(tmp_path, monkeypatch, n):
    monkeypatch.setattr(rundir, "APPLIED_BATCH", 2)
    applied = {f"u{i}.slice": {"CPUShares": i} for i in range(n, 0, -1)}
    rundir.save_applied(applied, tmp_path)
    assert (tmp_path / rundir.APPLIED_NAME).read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)


def test_applied_of_many_units_round_trips(tmp_path):
    applied = {f"kubepods-pod{i:05d}.slice": {"CPUShares": i + 2, "CPUQuotaPerSecUSec": i * 1000}
               for i in range(5000, 0, -1)}
    rundir.save_applied(applied, tmp_path)
    assert rundir.load_applied(tmp_path) == applied
    assert (tmp_path / rundir.APPLIED_NAME).read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)


def test_unreadable_applied_is_empty(tmp_path):
    assert rundir.load_applied(tmp_path) == {}
    (tmp_path / rundir.APPLIED_NAME).write_text('{"a.slice": {"CPUShares": 2')
    assert rundir.load_applied(tmp_path) == {}
