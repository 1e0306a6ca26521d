"""Shared pytest fixtures."""

from __future__ import annotations

import json
import os
import signal

import pytest
from hypothesis import HealthCheck, settings

from sdqos import sandbox as sbx

from . import hostguard
from . import vmtools as vm
from .sbhelpers import forget_cpu_state

# --- Hypothesis: deterministic in CI, exploring locally (docs/testing.md) ------------------------
#
# "ci" (CI=true): derandomized, so every run draws the same examples and a random draw never turns
# main red; no example database (nothing to commit or go stale); a failure prints its blob to
# reproduce it. "dev" (default): random draws each run, failures kept in .hypothesis/ and tried
# first next time. "fresh": random draws, no database (how the budget properties were measured:
# 200 fresh runs in a row). Failures found are kept as @example in the test. SDQOS_HYPOTHESIS_PROFILE
# picks one explicitly.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.register_profile("fresh", database=None, deadline=None)
settings.load_profile(os.environ.get("SDQOS_HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev"))

# --- the host is never touched ------------------------------------------------------------------
#
# The whole session is checked: /etc/systemd, /run/sdqos and sdqos's entries in /run/systemd on the
# host must be as they were when it started (tests/hostguard.py). A change fails the session.

_HOST_BEFORE: dict = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    _HOST_BEFORE.update(hostguard.snapshot())
    # A session started in the background by a non-interactive shell (`cmd &`, nohup) inherits
    # SIGINT ignored, and so would every process it starts: the Ctrl-C tests' SIGINT would be
    # lost on sdqos before it ran (Python keeps an ignored SIGINT ignored). Python's own handler
    # here makes the children start with the default again (a handler is reset by exec).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    changed = hostguard.changes(_HOST_BEFORE, hostguard.snapshot())
    if changed:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the test session changed the host:\n  " + "\n  ".join(changed[:50])
        if tr is not None:
            tr.write_line(text, red=True)
        else:
            print(text)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

# --- no podman on the host ----------------------------------------------------------------------
#
# A `podman ps` on the host sets up podman's storage there (/var/lib/containers, its locks): a test
# that is not inside a sandbox (or a v2 guest) gets a podman that only records that it was called
# and fails, and the test fails naming the call.


@pytest.fixture(autouse=True)
def _no_podman_on_the_host(request, tmp_path_factory, monkeypatch):
    inside = any(f in request.fixturenames for f in SANDBOX_FIXTURES) or "/tests/v2/" in str(request.path)
    if inside:
        yield
        return
    d = tmp_path_factory.mktemp("host-podman")
    calls = d / "calls"
    spy = d / "podman"
    spy.write_text(f'#!/bin/sh\necho "$*" >> {calls}\necho "podman is not run on the host by a test" >&2\nexit 125\n')
    spy.chmod(0o755)
    monkeypatch.setenv("SDQOS_PODMAN", str(spy))
    yield
    if calls.exists():
        pytest.fail(f"the test ran podman on the host: {calls.read_text().strip()}", pytrace=False)


# --- what a test starts ends with it ------------------------------------------------------------
#
# A process a test started and left running (a `status --watch` that missed its Ctrl-C, an
# `sdqos run` in the sandbox through nsenter) would stay pytest's child for the rest of the session,
# and every later test that counts its children would fail. Each child of pytest that appeared
# during a test (its function-scoped fixtures included; longer-lived fixtures start theirs before)
# is killed after it, with everything below it, and reaped.


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.update(int(c) for c in f.read().split())
        except OSError:
            pass  # (a thread that ended meanwhile)
    return out


@pytest.fixture(autouse=True)
def _end_what_the_test_started():
    before = _children(os.getpid())
    yield
    from .sbhelpers import descendants

    for pid in _children(os.getpid()) - before:
        for p in [*reversed(descendants(pid)), pid]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # its Popen reaped it meanwhile

# --- sandbox: a private systemd (sdqos.sandbox) ------------------------------------------------
#
# `sandbox` boots one sandbox per test session, `clean_sandbox` hands each test that instance with
# no kubepods*.slice / machine-*.scope units left from the previous test. Tests using either are
# marked `sandbox` automatically (`-m "not sandbox"` deselects them). Without root, unshare,
# nsenter, systemd or dbus-daemon they are skipped with the reason; set SDQOS_REQUIRE_SANDBOX=1
# (CI) to make that a failure instead. A sandbox that fails to boot is always an error.

SANDBOX_FIXTURES = ("sandbox", "clean_sandbox")
TEST_PREFIX = "sdqos-test-"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(f in getattr(item, "fixturenames", ()) for f in SANDBOX_FIXTURES):
            item.add_marker(pytest.mark.sandbox)


def sandbox_unavailable() -> str | None:
    """Why no sandbox can be booted here (None: it can). Skips, or fails under SDQOS_REQUIRE_SANDBOX=1."""
    problems = sbx.missing_prerequisites()
    if not problems:
        return None
    reason = "sandbox prerequisites missing: " + "; ".join(problems)
    if os.environ.get("SDQOS_REQUIRE_SANDBOX") == "1":
        pytest.fail(reason + " (SDQOS_REQUIRE_SANDBOX=1)", pytrace=False)
    return reason


def _remove_stale_test_sandboxes() -> None:
    """Sandboxes of earlier test runs that died without teardown (SIGKILL, crash)."""
    for st in sbx.list_sandboxes():
        if not st.name.startswith(TEST_PREFIX):
            continue
        owner = st.name[len(TEST_PREFIX):].split("-", 1)[0]
        if not st.running or not (owner.isdigit() and _alive(int(owner))):
            sbx.down(st.name)


def _alive(pid: int) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a killed pytest may linger as a zombie


def _raise_keyboard_interrupt(signum, frame):  # SIGTERM (CI timeout): tear down like Ctrl-C
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def sandbox_name() -> str:
    """Name of this session's sandbox; tests booting more use it as a prefix."""
    return f"{TEST_PREFIX}{os.getpid()}"


@pytest.fixture(scope="session")
def sandbox(sandbox_name: str):
    """One private systemd for the whole session (`sdqos.sandbox.Sandbox`), always torn down."""
    reason = sandbox_unavailable()
    if reason:
        pytest.skip(reason)
    _remove_stale_test_sandboxes()
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        sb = sbx.up(sandbox_name)
        yield sb
    finally:
        try:
            sbx.down(sandbox_name)
        finally:
            signal.signal(signal.SIGTERM, previous)


def forget_oom_kills(sb: sbx.Sandbox) -> None:
    """The kernel log is the host's, shared by every sandbox and every test: a fresh record that
    starts after its last record, so an earlier test's OOM kill is never reported again."""
    from sdqos.host import oomevents

    got = oomevents.read_log(None)
    seq = got[1] if got is not None else None
    sbx.run(sb, ["sh", "-c", 'mkdir -p /run/sdqos && umask 077 && printf %s "$1" > /run/sdqos/oom-kills.json', "sh",
                 json.dumps({"seq": seq, "units": {}})], check=True)


@pytest.fixture
def clean_sandbox(sandbox: sbx.Sandbox) -> sbx.Sandbox:
    """The session sandbox with no kubepods*.slice / machine-*.scope units and no failed units,
    machine.slice back to its unit file, and no record of earlier tests' syncs (applied values,
    what the last sync counted) nor CPUs the static CPU manager gave their pods in its /run/sdqos
    (where its unit files also live)."""
    sbx.reset_units(sandbox)
    # whatever an earlier test left running in machine.slice (a foreign scope of its own name) would
    # count in every later test's node budget
    sbx.run(sandbox, ["systemctl", "stop", "machine.slice"], timeout=60)
    sbx.run(sandbox, ["systemctl", "revert", "machine.slice"])
    sbx.run(sandbox, ["systemctl", "start", "machine.slice"])  # as the instance boots it
    sbx.run(sandbox, ["rm", "-f", "/run/sdqos/applied.json", "/run/sdqos/last-sync.json", "/run/sdqos/noop.json"])
    forget_cpu_state(sandbox)
    forget_oom_kills(sandbox)
    return sandbox


# --- VMs: qemu guests in the session sandbox, libvirtd and machined in a sandbox of their own ----
#
# Guests and domains come from tests/vmtools.py. Without qemu (or libvirt and machined) the tests
# skip with the reason; SDQOS_REQUIRE_VM=1 (CI) makes that a failure instead.


@pytest.fixture
def qemu_sandbox(clean_sandbox: sbx.Sandbox) -> sbx.Sandbox:
    """clean_sandbox, where qemu guests can run."""
    vm.need(vm.qemu_available())
    return clean_sandbox


@pytest.fixture(scope="module")
def vm_sandbox(sandbox: sbx.Sandbox, sandbox_name: str):
    """A second sandbox, booted with machined and libvirtd (sdqos.sandbox.up(libvirt=True)): one
    for each test module that uses it, always torn down."""
    vm.need(vm.libvirt_available())
    name = f"{sandbox_name}-vm"
    sb = sbx.up(name, libvirt=True)
    try:
        yield sb
    finally:
        sbx.down(name)


@pytest.fixture
def lv_sandbox(vm_sandbox: sbx.Sandbox):
    """vm_sandbox cleaned as clean_sandbox cleans the other: no kubepods*.slice / machine-*.scope
    units and no failed units, machine.slice back to its unit file, and no record of earlier
    tests' syncs (applied values, what the last sync counted) nor evictions; the test's own
    eviction record is removed after it."""
    sbx.reset_units(vm_sandbox)
    sbx.run(vm_sandbox, ["systemctl", "revert", "machine.slice"])
    sbx.run(vm_sandbox, ["rm", "-f", "/run/sdqos/evicted.json", "/run/sdqos/applied.json", "/run/sdqos/last-sync.json"])
    yield vm_sandbox
    sbx.run(vm_sandbox, ["rm", "-f", "/run/sdqos/evicted.json"])
