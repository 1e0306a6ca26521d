"""The v2 guests: one per Debian suite for the whole session, booted on first use and always shut
down. Tests using ``v2guest`` are marked ``v2``; without root, qemu or mmdebstrap they skip with the
reason, unless SDQOS_REQUIRE_V2=1 (CI), where that is a failure."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from . import guest as g

# sid (Debian unstable, systemd 262 here) passed every test once, then its guest died mid-test in a CI
# run: opt-in until that is understood (SDQOS_V2_SUITES=bookworm,trixie,sid).
SUITES = [s.strip() for s in os.environ.get("SDQOS_V2_SUITES", "bookworm,trixie").split(",") if s.strip()]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "v2session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.v2)


@pytest.fixture(scope="session")
def sdqos_wheel_dir():
    """This checkout as a wheel plus its examples, shared read-only with the guests."""
    d = Path(tempfile.mkdtemp(prefix="sdqos-v2-share-"))
    g.sdqos_wheel(d)
    os.system(f"cp -r {g.REPO / 'examples'} {d}/examples")
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session", params=SUITES)
def v2session(request, sdqos_wheel_dir):
    problems = g.missing_prerequisites()
    if problems:
        reason = "v2 guest prerequisites missing: " + "; ".join(problems)
        if os.environ.get("SDQOS_REQUIRE_V2") == "1":
            pytest.fail(reason + " (SDQOS_REQUIRE_V2=1)", pytrace=False)
        pytest.skip(reason)
    guest = g.Guest.boot(request.param, share=sdqos_wheel_dir)
    try:
        guest.check("pip install -q --no-index --no-deps /share/sdqos-*.whl && cp -r /share/examples /root/examples",
                    timeout=300)
        yield guest
    finally:
        guest.close()


@pytest.fixture
def v2guest(v2session):
    """The session's guest of this suite, with what earlier tests left (processes run by sdqos,
    the kubepods tree, /run/sdqos) removed first."""
    v2session.run("pkill -f '[s]leep 100000|[q]emu-system'; systemctl stop kubepods.slice machine.slice; systemctl reset-failed; "
                  "rm -rf /run/sdqos",
                  timeout=120)
    return v2session
