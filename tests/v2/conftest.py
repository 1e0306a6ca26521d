"""The v2 guests: one per Debian suite for the whole session, booted on first use and always shut
down. Tests using ``v2guest`` are marked ``v2``; without root, qemu or mmdebstrap they skip with the
reason, unless SDQOS_REQUIRE_V2=1 (CI), where that is a failure."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from . import beside
from . import guest as g
from .suites import SUITES

# Once, a sid guest died mid-test in CI (cause not found: every test passed on it before and since). A
# test that sees its guest die is run once more on a fresh guest; its assertion failures never are.
GUEST_GONE = r"guest is gone"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"v2session", "v2podman_session", "v2oomd_session", "v2cpu"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.v2)
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=[GUEST_GONE]))


def pytest_collection_finish(session):
    beside.collection_finish(session)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    return beside.runtest_protocol(item)


def pytest_runtest_logreport(report):
    beside.child_logreport(_config, report)


def pytest_configure(config):
    global _config
    _config = config


def pytest_sessionfinish(session):
    beside.sessionfinish()


_config = None


def _prepare(guest) -> None:
    guest.check("pip install -q --no-index --no-deps /share/sdqos-*.whl && cp -r /share/examples /root/examples",
                timeout=300)


@pytest.fixture(scope="session")
def sdqos_wheel_dir():
    """This checkout as a wheel plus its examples, shared read-only with the guests."""
    d = Path(tempfile.mkdtemp(prefix="sdqos-v2-share-"))
    g.sdqos_wheel(d)
    os.system(f"cp -r {g.REPO / 'examples'} {d}/examples")
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


def _require_prerequisites() -> None:
    problems = g.missing_prerequisites()
    if problems:
        reason = "v2 guest prerequisites missing: " + "; ".join(problems)
        if os.environ.get("SDQOS_REQUIRE_V2") == "1":
            pytest.fail(reason + " (SDQOS_REQUIRE_V2=1)", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session", params=SUITES)
def v2session(request, sdqos_wheel_dir):
    _require_prerequisites()
    if request.param == "sid":  # unstable's archive can be uninstallable for a day: that is not sdqos's fault
        try:
            g.image("sid")
        except Exception as exc:
            pytest.skip(f"Debian unstable's image could not be built today ({str(exc).splitlines()[0][:300]}); "
                        "bookworm and trixie still ran")
    guest = g.Guest.boot(request.param, share=sdqos_wheel_dir)
    try:
        _prepare(guest)
        yield guest
    finally:
        guest.close()


@pytest.fixture
def v2guest(v2session):
    """The session's guest of this suite, with what earlier tests left (processes run by sdqos,
    the kubepods tree, /run/sdqos) removed first; a fresh guest if the last one died."""
    if not v2session.alive():
        v2session.revive()
        _prepare(v2session)
    v2session.run("pkill -f '[s]leep 100000|[q]emu-system'; systemctl stop kubepods.slice machine.slice; systemctl reset-failed; "
                  "rm -rf /run/sdqos",
                  timeout=120)
    return v2session


# Real podman + crun on cgroup v2: one suite's image with the "podman" layer (guest.LAYERS), whose
# podman (4.3) and crun (1.8) are the ones the v1 sandbox tests run on this host.
PODMAN_SUITE = "bookworm"
PODMAN_STORE = "/tmp/podman"
PODMAN_ENV = {"CONTAINERS_CONF": f"{PODMAN_STORE}/containers.conf",
              "SDQOS_PODMAN": f"podman --root {PODMAN_STORE}/root --runroot /run/sdqos-test-podman --storage-driver vfs"}


def _prepare_podman(guest) -> None:
    """podman's storage in the guest's /tmp (vfs), no network, crun; a static busybox imported as
    localhost/bb (tests/reconcile/test_podman_sandbox.py's image)."""
    _prepare(guest)
    guest.check(f"S={PODMAN_STORE}; mkdir -p $S/img/bin && cp /bin/busybox $S/img/bin/ && "
                "for a in sh sleep echo cat; do ln -s busybox $S/img/bin/$a; done && "
                "printf '[containers]\\ndefault_sysctls = []\\nnetns = \"none\"\\n[engine]\\nruntime = \"crun\"\\n"
                "events_logger = \"none\"\\n' > $S/containers.conf && "
                "tar -C $S/img -cf $S/img.tar . && $SDQOS_PODMAN import $S/img.tar localhost/bb:latest",
                env=PODMAN_ENV, timeout=300)


@pytest.fixture(scope="session")
def v2podman_session(sdqos_wheel_dir):
    if PODMAN_SUITE not in SUITES:
        pytest.skip(f"the podman guest is {PODMAN_SUITE}'s, not in SDQOS_V2_SUITES")
    _require_prerequisites()
    # two vCPUs: the static CPU manager's shared pool narrows and widens around a pinned container
    # (test_v2_podman.py); bookworm's kernel is not the one that panicked with two (guest.boot)
    guest = g.Guest.boot(PODMAN_SUITE, share=sdqos_wheel_dir, layer="podman",
                         cpus=(os.environ.get("SDQOS_V2_CPU", "max"), "2"))
    try:
        _prepare_podman(guest)
        yield guest
    finally:
        guest.close()


@pytest.fixture
def v2podman(v2podman_session):
    """The podman guest with no container, no kubepods tree and no /run/sdqos left by earlier tests
    (a fresh guest if the last one died); run podman and sdqos there with ``env=PODMAN_ENV``."""
    if not v2podman_session.alive():
        v2podman_session.revive()
        _prepare_podman(v2podman_session)
    v2podman_session.run("$SDQOS_PODMAN rm --all --force --time 0; systemctl stop kubepods.slice; "
                         "systemctl reset-failed; rm -rf /run/sdqos", env=PODMAN_ENV, timeout=120)
    return v2podman_session


# systemd-oomd as Fedora and Ubuntu run it: trixie's systemd 257 with the "oomd" layer (guest.LAYERS).
OOMD_SUITE = "trixie"


@pytest.fixture(scope="session")
def v2oomd_session(sdqos_wheel_dir):
    if OOMD_SUITE not in SUITES:
        pytest.skip(f"the systemd-oomd guest is {OOMD_SUITE}'s, not in SDQOS_V2_SUITES")
    _require_prerequisites()
    guest = g.Guest.boot(OOMD_SUITE, share=sdqos_wheel_dir, layer="oomd")
    try:
        _prepare(guest)
        yield guest
    finally:
        guest.close()


@pytest.fixture
def v2oomd(v2oomd_session):
    """The systemd-oomd guest with no kubepods tree and no /run/sdqos left by earlier tests."""
    if not v2oomd_session.alive():
        v2oomd_session.revive()
        _prepare(v2oomd_session)
    v2oomd_session.run("systemctl stop kubepods.slice; systemctl reset-failed; rm -rf /run/sdqos", timeout=120)
    return v2oomd_session


# Four vCPUs in two cores of two threads (guest.TOPOLOGY), for the static CPU manager's whole cores
# (tests/v2/test_v2_cpu_static.py); one suite: the point is sdqos's logic, not a systemd version.
CPU_SUITE = "trixie"


@pytest.fixture(scope="module")
def v2cpu(sdqos_wheel_dir):
    """A guest of its own with guest.TOPOLOGY's four vCPUs (the shared guests keep one), for one
    test module; shut down after it."""
    suite = CPU_SUITE if CPU_SUITE in SUITES or not SUITES else SUITES[0]
    _require_prerequisites()
    guest = g.Guest.boot(suite, share=sdqos_wheel_dir, cpus=g.TOPOLOGY)
    try:
        _prepare(guest)
        yield guest
    finally:
        guest.close()
