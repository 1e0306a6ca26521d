"""Files earlier versions kept in the run dir (the dataclass code cache, the parse cache's delta)
are removed by the next sync's record, without following links; everything else stays."""

from __future__ import annotations

import os


def test_a_sync_record_removes_the_leftovers_of_earlier_versions(tmp_path):
    from sdqos.cli import metrics as m
    from sdqos.reconcile.report import Report

    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    outside = tmp_path / "outside"
    outside.write_text("kept")
    (run / "dataclass-code.cpython-311.marshal").write_bytes(b"\xe3old code")
    os.mkfifo(run / "dataclass-code.cpython-312.marshal")  # removed without being opened
    (run / "dataclass-code.cpython-313.marshal").symlink_to(outside)  # the link goes, not its target
    (run / "parsed.delta.json").write_text("{}\n")
    (run / "parsed.json").write_text("{}\n")
    (run / "observed.json").write_text("{}\n")

    m.record_sync(Report(), run)

    assert sorted(os.listdir(run)) == ["last-sync.json", "observed.json", "parsed.json"]
    assert outside.read_text() == "kept"
    m.record_sync(Report(), run)  # nothing left to remove: no fault
    assert sorted(os.listdir(run)) == ["last-sync.json", "observed.json", "parsed.json"]
