"""sdqos.host.systemd against the real thing: a private systemd (the `sandbox` fixture), never a mock.

Every test runs once per D-Bus backend (SDQOS_DBUS_BACKEND=dbus-fast / dbus-next)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid

import pytest

from sdqos import sandbox as sbx
from sdqos.errors import (
    BusUnavailable,
    CallTimeout,
    InvalidInput,
    InvalidProperty,
    JobFailed,
    NoSuchUnit,
    UnitExists,
)
from sdqos.host import systemd as sdm
from sdqos.host.systemd import SCOPE, SLICE, UNIT, Systemd

BACKENDS = ["dbus-fast", "dbus-next"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch) -> str:
    pytest.importorskip(request.param.replace("-", "_"))
    monkeypatch.setenv("SDQOS_DBUS_BACKEND", request.param)
    return request.param


@pytest.fixture
def sb(clean_sandbox, backend):
    """The session sandbox, cleaned, with the backend chosen through the environment, and with
    kubepods.slice created explicitly: these tests create kubepods-* children directly, and
    systemd cannot create a missing parent implicitly once an earlier `systemctl show` loaded
    that name as not-found."""
    sbx.run(clean_sandbox, ["busctl", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                           "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
                           "kubepods.slice", "fail", "0", "0"], check=True)
    return clean_sandbox


def run(sb, coro_fn, **kw):
    """Connect a Systemd to the sandbox's bus, run `coro_fn(sd)`, close; returns its result."""
    async def main():
        async with Systemd(sb.bus_address, **kw) as sd:
            assert sd.backend == os.environ["SDQOS_DBUS_BACKEND"]
            return await coro_fn(sd)
    return asyncio.run(main())


def uid() -> str:
    return uuid.uuid4().hex[:8]


def sleeper(sb) -> tuple[subprocess.Popen, int]:
    """A `sleep` inside the sandbox and its PID there (systemd resolves PIDs in its own namespace)."""
    p = sb_popen(sb, ["sh", "-c", "echo $$; exec sleep 1000"])
    return p, int(p.stdout.readline())


def sb_popen(sb, argv):
    return sbx.popen(sb, argv, stdout=subprocess.PIPE, text=True)


async def match_rules(sd: Systemd) -> tuple[str, int, int]:
    """(owner, MatchRules, PeakMatchRules) of systemd's bus connection, from dbus-daemon."""
    (owner,) = await sd._call(sdm.DBUS_PATH, sdm.DBUS, "GetNameOwner", "s", [sdm.SYSTEMD], dest=sdm.DBUS)
    (st,) = await sd._call(sdm.DBUS_PATH, sdm.DBUS + ".Debug.Stats", "GetConnectionStats", "s", [owner], dest=sdm.DBUS)
    return owner, st["MatchRules"].value, st["PeakMatchRules"].value


# --- no systemd needed -------------------------------------------------------------------------


def test_backend_selection(backend, monkeypatch):
    assert sdm.backend_name() == backend
    assert sdm.backend_name("dbus-next") == "dbus-next"
    monkeypatch.setenv("SDQOS_DBUS_BACKEND", "auto")
    assert sdm.backend_name() in BACKENDS
    monkeypatch.setenv("SDQOS_DBUS_BACKEND", "qt")
    with pytest.raises(InvalidInput, match="unknown D-Bus backend"):
        sdm.backend_name()


def test_unreachable_bus_names_the_address(backend, tmp_path):
    addr = f"unix:path={tmp_path}/nothing"

    async def main():
        await Systemd(addr).connect()
    with pytest.raises(BusUnavailable, match=str(tmp_path)):
        asyncio.run(main())


def test_address_from_environment(backend, monkeypatch):
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/x/y")
    assert Systemd().address == "unix:path=/x/y"
    assert Systemd("unix:path=/a").address == "unix:path=/a"
    monkeypatch.delenv("DBUS_SYSTEM_BUS_ADDRESS")
    assert Systemd().address == sdm.DEFAULT_ADDRESS


def test_unit_path_encoding():
    assert sdm.unit_path("-.slice") == "/org/freedesktop/systemd1/unit/_2d_2eslice"
    assert sdm.unit_path("kubepods-pod1_2.slice") == "/org/freedesktop/systemd1/unit/kubepods_2dpod1_5f2_2eslice"
    assert sdm.unit_path("1.slice").endswith("/_31_2eslice")


# --- against the sandbox -----------------------------------------------------------------------


def test_version(sb):
    major, raw = run(sb, lambda sd: sd.version())
    assert major >= 230 and raw.startswith(str(major))


def test_slice_lifecycle(sb):
    name = f"kubepods-t{uid()}.slice"
    cpu = sb.cgroup_path("cpu") / "kubepods.slice" / name

    async def main(sd: Systemd):
        await sd.start_transient_unit(name, {"CPUShares": 2048, "MemoryLimit": 1 << 30, "Description": "lifecycle",
                                             "TasksMax": 100, "CPUQuotaPerSecUSec": 500000})
        props = await sd.get_properties(name, SLICE, ["CPUShares", "MemoryLimit", "TasksMax", "ControlGroup"])
        assert props == {"CPUShares": 2048, "MemoryLimit": 1 << 30, "TasksMax": 100, "ControlGroup": f"/kubepods.slice/{name}"}
        if sb.cgroup_mode != "unified":
            assert (cpu / "cpu.shares").read_text().strip() == "2048"
        await sd.set_unit_properties(name, {"CPUShares": 512})
        after = await sd.get_properties(name, SLICE, ["CPUShares", "MemoryLimit"])
        assert after == {"CPUShares": 512, "MemoryLimit": 1 << 30}  # the others are kept
        if sb.cgroup_mode != "unified":
            assert (cpu / "cpu.shares").read_text().strip() == "512"
        everything = await sd.get_properties(name, UNIT)  # GetAll
        assert everything["Id"] == name and everything["Transient"] is True
        [info] = await sd.list_units_by_patterns([], [name])
        assert (info.id, info.description, info.load_state, info.active_state) == (name, "lifecycle", "loaded", "active")
        assert await sd.get_unit(name) == info.path == sdm.unit_path(name)
        assert await sd.load_unit(name) == info.path
        assert await sd.get_unit_processes(name) == []
        await sd.stop_unit(name)
        with pytest.raises(NoSuchUnit):
            await sd.get_unit(name)
        await sd.start_unit("machine.slice")  # a unit file's unit: already active, job done
        return sd.stats
    stats = run(sb, main)
    assert stats.calls > 10 and stats.disconnects == stats.retries == 0


def test_typed_errors(sb):
    name = f"kubepods-e{uid()}.slice"

    async def main(sd: Systemd):
        await sd.start_transient_unit(name, {"Description": "x"})
        with pytest.raises(UnitExists) as e:
            await sd.start_transient_unit(name, {})
        assert e.value.name == "org.freedesktop.systemd1.UnitExists" and e.value.unit == name
        with pytest.raises(NoSuchUnit):
            await sd.stop_unit(f"machine-missing{uid()}.scope")
        await sd.stop_unit(f"kubepods-missing{uid()}.slice")  # any slice name loads (implicitly): no error
        with pytest.raises(NoSuchUnit):
            await sd.get_unit(f"kubepods-missing{uid()}.slice")
        calls = sd.stats.calls
        with pytest.raises(InvalidProperty, match="unknown property 'CPUShare'"):
            await sd.set_unit_properties(name, {"CPUShare": 5})
        with pytest.raises(InvalidProperty, match="CPUShares='a lot'"):
            await sd.start_transient_unit(f"kubepods-x{uid()}.slice", {"CPUShares": "a lot"})
        assert sd.stats.calls == calls  # refused before anything was sent
        # In a bulk call, a unit whose values cannot be sent gets its error; the others go out.
        ok, bad, huge = (f"kubepods-{w}{uid()}.slice" for w in ("ok", "bad", "huge"))
        results = await sd.start_transient_units([(bad, {"Nope": 1}), (ok, {}), (huge, {"CPUQuotaPerSecUSec": 2**64})])
        assert results[1] is None
        assert isinstance(results[0], InvalidProperty) and "unknown property 'Nope'" in str(results[0])
        assert isinstance(results[2], InvalidProperty) and "CPUQuotaPerSecUSec" in str(results[2])
        assert sd.stats.calls == calls + 1  # only the good one was sent
        assert (await sd.get_properties(ok, UNIT, ["ActiveState"]))["ActiveState"] == "active"
        await sd.stop_unit(ok)
        calls = sd.stats.calls
        results = await sd.set_units_properties([(ok, {"CPUShares": 2**64}), (name, {"CPUShares": 512})])
        assert isinstance(results[0], InvalidProperty) and results[1] is None and sd.stats.calls == calls + 1
        with pytest.raises(InvalidProperty) as e:  # systemd's own refusals
            await sd.set_unit_properties(name, {"CPUShares": 1})
        assert e.value.name == "org.freedesktop.DBus.Error.InvalidArgs"
        with pytest.raises(InvalidProperty) as e:
            await sd.set_unit_properties(name, {"OOMScoreAdjust": 100})
        assert e.value.name == "org.freedesktop.DBus.Error.PropertyReadOnly"
    run(sb, main)


def test_scope_processes_and_oom_score_refused(sb):
    p, pid = sleeper(sb)
    scope = f"machine-t{uid()}.scope"
    try:
        async def main(sd: Systemd):
            with pytest.raises(InvalidProperty, match="OOMScoreAdjust"):
                await sd.start_transient_unit(scope, {"PIDs": [pid], "OOMScoreAdjust": -500, "Slice": "machine.slice"})
            await sd.start_transient_unit(scope, {"PIDs": [pid], "Slice": "machine.slice", "Delegate": True,
                                                  "CollectMode": "inactive-or-failed", "CPUShares": 300})
            procs = await sd.get_unit_processes(scope)
            assert [(pp, "sleep" in cmd) for _, pp, cmd in procs] == [(pid, True)]
            assert procs[0][0] == f"/machine.slice/{scope}"
            with pytest.raises(InvalidProperty):
                await sd.set_unit_properties(scope, {"OOMScoreAdjust": 10})
            units = await sd.read_units(["machine-*"], {SCOPE: ["CPUShares", "Delegate"]})
            assert units[scope].props["CPUShares"] == 300 and units[scope].control_group == f"/machine.slice/{scope}"
        run(sb, main)
    finally:
        p.kill()


ATTACH_INSIDE = """
import asyncio, subprocess, sys
from sdqos.host.systemd import Systemd
async def main():
    a, b = subprocess.Popen(["sleep", "100"]), subprocess.Popen(["sleep", "100"])
    async with Systemd() as sd:  # inside: the sandbox's own /run/dbus/system_bus_socket
        await sd.start_transient_unit(sys.argv[1], {"PIDs": [a.pid], "Delegate": True})
        await sd.attach_processes(sys.argv[1], [b.pid])
        print(sorted(p for _, p, _ in await sd.get_unit_processes(sys.argv[1])) == sorted([a.pid, b.pid]))
        await sd.stop_unit(sys.argv[1])
asyncio.run(main())
"""


def test_attach_processes(sb):
    """AttachProcessesToUnit checks the caller's PID, which systemd cannot see from another PID
    namespace (EPROTO): run it inside the sandbox, as sdqos runs on a real host."""
    cp = sb.run([sys.executable, "-c", ATTACH_INSIDE, f"machine-a{uid()}.scope"], cwd=os.getcwd())
    assert (cp.returncode, cp.stdout.strip()) == (0, "True"), cp.stderr[-2000:]


def test_reload_and_enable_unit_files(sb):
    scope_pid = sleeper(sb)
    scope = f"machine-r{uid()}.scope"
    try:
        async def main(sd: Systemd):
            await sd.start_transient_unit(scope, {"PIDs": [scope_pid[1]], "CPUShares": 700})
            await sd.reload()  # transient units and their properties survive it
            assert (await sd.get_properties(scope, SCOPE, ["CPUShares"]))["CPUShares"] == 700
            assert await sd.enable_unit_files(["machine.slice"]) == []  # nothing to enable: no [Install]
        run(sb, main)
    finally:
        scope_pid[0].kill()


def test_job_failed_and_reset_failed(sb):
    svc = f"sdqos-test-fail-{uid()}.service"

    async def main(sd: Systemd):
        with pytest.raises(JobFailed) as e:
            await sd.start_transient_unit(svc, {"ExecStart": [("/bin/false", ["/bin/false"], False)],
                                                "Type": "oneshot", "DefaultDependencies": False})
        assert (e.value.unit, e.value.result) == (svc, "failed") and e.value.job.startswith("/org/freedesktop/systemd1/job/")
        [info] = await sd.list_units_by_patterns(["failed"], [svc])
        assert info.active_state == "failed"
        await sd.reset_failed_unit(svc)
        assert await sd.list_units_by_patterns([], [svc]) == []
    run(sb, main)


def test_timeouts(sb):
    name = f"kubepods-to{uid()}.slice"
    svc = f"sdqos-test-slow-{uid()}.service"

    async def main(sd: Systemd):
        await sd.start_transient_unit(name, {})
        sd.call_timeout = 1e-9  # the reply cannot be back before the timer fires
        with pytest.raises(CallTimeout, match="no reply"):
            await sd.set_unit_properties(name, {"CPUShares": 100})
        sd.call_timeout, sd.job_timeout = 25.0, 0.3
        with pytest.raises(CallTimeout, match="did not finish within 0.3s"):  # a start job of ~5 s
            await sd.start_transient_unit(svc, {"ExecStart": [("/bin/sleep", ["sleep", "5"], False)],
                                                "Type": "oneshot", "DefaultDependencies": False})
        sd.job_timeout = 30.0
        assert sd._jobs == {}
        await sd.stop_unit(svc)  # the client still works
    run(sb, main)


def test_read_units(sb):
    pods = [f"kubepods-besteffort-pod{uid()}.slice" for _ in range(5)]

    async def main(sd: Systemd):
        for n in pods:  # parents are only referenced, so systemd makes them implicitly: not transient
            await sd.start_transient_unit(n, {"CPUShares": 2, "TasksMax": 50, "Description": n.upper()})
        t = time.perf_counter()
        units = await sd.read_units(["kubepods*"], {SLICE: ["CPUShares", "TasksMax", "MemoryLimit"],
                                                    UNIT: ["Description", "FragmentPath"]})
        assert time.perf_counter() - t < 5
        assert set(units) == {*pods, "kubepods.slice", "kubepods-besteffort.slice"}
        for n in pods:
            u = units[n]
            assert (u.load_state, u.active_state, u.sub_state, u.transient) == ("loaded", "active", "active", True)
            assert u.fragment_path == f"/run/systemd/transient/{n}"
            assert u.control_group == f"/kubepods.slice/kubepods-besteffort.slice/{n}"
            assert u.path == sdm.unit_path(n)
            assert u.props["CPUShares"] == 2 and u.props["TasksMax"] == 50 and u.props["Description"] == n.upper()
        parent = units["kubepods-besteffort.slice"]
        assert parent.transient is False and parent.fragment_path == ""
        # states only: one call, no properties read
        calls = sd.stats.calls
        bare = await sd.read_units(["kubepods-besteffort-*"], {})
        assert sd.stats.calls == calls + 1 and set(bare) == set(pods)
        assert bare[pods[0]].transient is None and bare[pods[0]].control_group is None
        # real Unit.Transient on request
        one = await sd.read_units([pods[0]], {UNIT: ["Transient"]})
        assert one[pods[0]].transient is True
    run(sb, main)


@pytest.mark.parametrize("how", ["restart", "kill"])
def test_survives_dbus_daemon_restart(sb, how):
    prefix = f"kubepods-r{uid()}"
    names = [f"{prefix}-{i}.slice" for i in range(300)]

    async def main(sd: Systemd):
        async def disrupt():
            await asyncio.sleep(0.3)
            if how == "restart":
                await asyncio.to_thread(sb.systemctl, "restart", "dbus.service")
            else:  # the socket stays with systemd; the next connection starts a new daemon
                await asyncio.to_thread(sb.systemctl, "kill", "--signal=SIGKILL", "dbus.service")
        d = asyncio.create_task(disrupt())
        results = await sd.start_transient_units([(n, {"CPUShares": 3}) for n in names])
        await d
        # caught in flight: the retry may find the unit made by the lost attempt (documented)
        assert [r for r in results if r is not None and not isinstance(r, UnitExists)] == []
        await sd.set_unit_properties(names[0], {"CPUShares": 4})  # and carry on
        units = await sd.read_units([f"{prefix}-*"], {SLICE: ["CPUShares"]})
        assert {n: units[n].active_state for n in names} == {n: "active" for n in names}
        return sd.stats
    stats = run(sb, main)
    assert stats.disconnects >= 1 and stats.reconnects >= 1


def test_bulk_creation_stays_far_from_match_rule_limit(sb):
    """600 units (beyond the ~530 where pipelining without waiting for jobs gets systemd thrown off
    the bus): no disconnect, systemd keeps its bus name, its match rules stay near the window."""
    tier = f"kubepods-b{uid()}"
    items = [(f"{tier}.slice", {"CPUShares": 1024})] + [(f"{tier}-pod{i}.slice", {"CPUShares": 2}) for i in range(600)]

    async def main(sd: Systemd):
        owner_before, _, _ = await match_rules(sd)
        results = await sd.start_transient_units(items)
        owner_after, now, peak = await match_rules(sd)
        assert results == [None] * len(items)
        assert owner_after == owner_before, "systemd was disconnected from the bus"
        assert peak <= sd.window + 10, (now, peak)
        assert len(await sd.list_units_by_patterns(["active"], [f"{tier}-pod*"])) == 600
        return sd.stats
    stats = run(sb, main)
    assert stats.disconnects == stats.retries == 0 and stats.calls >= len(items)


def test_addref_is_capped(sb):
    async def main(sd: Systemd):
        sd._addref = sdm.MAX_ADDREF
        calls = sd.stats.calls
        with pytest.raises(InvalidProperty, match="AddRef"):
            await sd.start_transient_unit(f"kubepods-a{uid()}.slice", {"AddRef": True})
        sd._addref = sdm.MAX_ADDREF - 1  # bulk: one more fits, two do not; refused before any call
        with pytest.raises(InvalidProperty, match="AddRef"):
            await sd.start_transient_units((f"kubepods-a{uid()}.slice", {"AddRef": True}) for _ in range(2))
        assert sd.stats.calls == calls
    run(sb, main)


def test_bulk_calls_finish_all_then_raise_an_unexpected_error(sb):
    """A bug in one call's handling must surface, but only after the calls already sent finished."""
    async def main(sd: Systemd):
        seen = []

        async def once(name, _):
            await asyncio.sleep(0.01)
            seen.append(name)
            if name == "b":
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            await sd._bounded([(n, None) for n in "abcdef"], 2, once, once)
        assert sorted(seen) == list("abcdef")
    run(sb, main)


def test_set_units_properties_bulk(sb):
    prefix = f"kubepods-s{uid()}"
    names = [f"{prefix}-{i}.slice" for i in range(40)]

    async def main(sd: Systemd):
        assert await sd.start_transient_units([(n, {}) for n in names]) == [None] * len(names)
        missing = f"machine-nothere{uid()}.scope"  # (a missing *slice* would be made implicitly)
        res = await sd.set_units_properties([(n, {"CPUShares": 100 + i}) for i, n in enumerate(names)]
                                            + [(missing, {"CPUShares": 5})])
        assert res[:-1] == [None] * len(names) and isinstance(res[-1], NoSuchUnit)
        units = await sd.read_units([f"{prefix}-*"], {SLICE: ["CPUShares"]})
        assert [units[n].props["CPUShares"] for n in names] == [100 + i for i in range(len(names))]
    run(sb, main)
