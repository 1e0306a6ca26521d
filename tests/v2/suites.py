"""Which Debian suites the v2 tests boot, and the tests that need only one of them."""

from __future__ import annotations

import os

import pytest

# Debian 12 (systemd 252), 13 (257) and unstable (the newest systemd Debian ships: 262 when this was
# written; the one where sdqos's systemd >= 258 choices are tested).
SUITES = [s.strip() for s in os.environ.get("SDQOS_V2_SUITES", "bookworm,trixie,sid").split(",") if s.strip()]


def one_suite(preferred: str):
    """For a test whose point is sdqos's own logic on cgroup v2, not a difference between systemd or
    kernel versions (those run on every suite): it runs on ``preferred`` only (or the first suite
    selected when that one is not), so the same slow proof is not made three times."""
    return pytest.mark.parametrize("v2session", [one_suite_name(preferred)], indirect=True)


def one_suite_name(preferred: str) -> str:
    """The suite `one_suite` chooses, for a test that boots a guest of its own."""
    return preferred if preferred in SUITES or not SUITES else SUITES[0]
