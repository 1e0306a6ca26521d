"""The report carries sync's exit status (sdqos.errors.EXIT_CODES), so every caller exits alike."""

from __future__ import annotations

from sdqos.errors import EXIT_ERROR, EXIT_INVALID, EXIT_OK, EXIT_PENDING
from sdqos.reconcile.report import Report


def test_exit_code_follows_the_documented_order():
    assert Report().exit_code == EXIT_OK
    assert Report(dry_run=True).exit_code == EXIT_OK
    assert Report(dry_run=True, created=["a.slice"]).exit_code == EXIT_PENDING
    assert Report(dry_run=True, drift=[{"unit": "a.slice", "changes": {}}]).exit_code == EXIT_PENDING
    assert Report(created=["a.slice"]).exit_code == EXIT_OK  # applied: nothing pending
    assert Report(invalid=["pods/x.yaml: bad"]).exit_code == EXIT_INVALID
    assert Report(invalid=["pods/x.yaml: bad"], errors=["update a.slice: refused"]).exit_code == EXIT_ERROR
    assert Report(errors=["x"], aborted=True).exit_code == EXIT_INVALID
    assert Report(dry_run=True, errors=["x"], created=["a.slice"]).exit_code == EXIT_ERROR
