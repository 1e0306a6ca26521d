"""An in-memory systemd manager for root-free tests of the reconciler.

It has the members of :class:`sdqos.host.systemd.SystemdAPI` and does to its units what systemd
does (each method says what it models, checked against the sandbox tests of host/systemd.py):
transient units with properties, their active state, failed units that keep their name until
reset, slices that load implicitly, StopUnit taking a slice's subtree with it. Faults are injected
per (method, unit). It never replaces the tests against the real systemd in the sandbox: those
prove what systemd does; this one lets the reconciler's order and partial failures be tested
without root, exhaustively.

``calls`` logs every call in order (method, unit, properties). ``exceeded`` logs every moment a
unit's own limit was above one of its ancestors' limits: on cgroup v1 the kernel refuses a CFS quota
above the parent's (EINVAL), and sdqos promises its order never briefly breaks the tree that way
(reconcile/diff.py: growing limits top-down, shrinking bottom-up).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sdqos.errors import (
    CallTimeout,
    InvalidProperty,
    JobFailed,
    NoSuchUnit,
    ServiceNotRunning,
    SystemdError,
    UnitExists,
)
from sdqos.host.systemd import MANAGER_PATH, PROPERTY_SIGNATURES, UNIT, Stats, UnitState, unit_path
from sdqos.plan.properties import to_dbus

if TYPE_CHECKING:
    from sdqos.host.systemd import SystemdAPI

INFINITY = 2**64 - 1
SD = "org.freedesktop.systemd1"
# What systemd answers for a cgroup property nobody set (systemctl show): "unset" or "no limit".
DEFAULTS: dict[str, int | bytes] = {
    **dict.fromkeys(("CPUShares", "StartupCPUShares", "CPUWeight", "StartupCPUWeight", "CPUQuotaPerSecUSec",
                     "CPUQuotaPeriodUSec", "MemoryLimit", "MemoryMax", "MemoryHigh", "MemorySwapMax", "TasksMax",
                     "IOWeight", "BlockIOWeight", "MemoryCurrent", "CPUUsageNSec", "TasksCurrent"), INFINITY),
    "MemoryLow": 0, "MemoryMin": 0,
    "AllowedCPUs": b"",  # ay, as systemd answers it: no byte, not set
}
LIMITS = ("MemoryLimit", "MemoryMax", "MemoryHigh", "CPUQuotaPerSecUSec", "TasksMax")


@dataclass
class FakeUnit:
    name: str
    props: dict[str, Any] = field(default_factory=dict)
    active_state: str = "active"
    transient: bool = True  # False: a unit file's, or a slice systemd loaded implicitly
    pids: list[int] = field(default_factory=list)

    @property
    def slice(self) -> str:
        """The parent: a scope's Slice=, a slice's by its name (systemd's rule: drop the last dash)."""
        if not self.name.endswith(".slice"):
            return str(self.props.get("Slice", "-.slice"))
        return parent_of_slice(self.name)


def parent_of_slice(name: str) -> str:
    stem = name[: -len(".slice")]
    return stem.rsplit("-", 1)[0] + ".slice" if "-" in stem.strip("-") else "-.slice"


class FakeSystemd:
    """``faults[(method, unit)] = error``: that call raises ``error``, as systemd's reply would (a
    list: one per call in turn, None for a call that goes through, then none).
    A JobFailed for StartTransientUnit leaves the unit created and failed (its start job failed); a
    CallTimeout leaves it activating or deactivating (systemd goes on with the job after the client
    stopped waiting); any other error changes nothing. ``methods``: StartTransientUnit, SetUnitProperties, StartUnit, StopUnit,
    ResetFailedUnit, KillUnit, AttachProcessesToUnit, GetUnitProcesses, Get, ListUnitsByPatterns."""

    def __init__(self) -> None:
        self.units: dict[str, FakeUnit] = {}
        self.faults: dict[tuple[str, str], SystemdError | list[SystemdError | None]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.exceeded: list[tuple[str, str, str, int, int]] = []  # (property, unit, ancestor, its, ancestor's)
        self.killed: list[tuple[str, int]] = []
        self.services: dict[tuple[str, str], Any] = {}  # (destination, member) -> reply body or a callable
        self.stats = Stats()

    # setting the scene ---------------------------------------------------------------------------

    def add(self, name: str, active_state: str = "active", *, transient: bool = True, pids: Sequence[int] = (),
            **props: Any) -> FakeUnit:
        """A unit as if it had been created (or, transient=False, loaded from a unit file)."""
        u = self.units[name] = FakeUnit(name, dict(props), active_state, transient, list(pids))
        return u

    def writes(self) -> list[tuple[str, str]]:
        """(method, unit) of every call that changes something, in order."""
        return [(m, n) for m, n, _ in self.calls
                if m in ("StartTransientUnit", "SetUnitProperties", "StartUnit", "StopUnit", "ResetFailedUnit")]

    # internals -------------------------------------------------------------------------------------

    def _call(self, method: str, unit: str, props: Mapping[str, Any] | None = None) -> SystemdError | None:
        """Log the call; raise its fault, or return it when it strikes later (a job's result)."""
        self.stats.calls += 1
        self.calls.append((method, unit, dict(props or {})))
        err = self.faults.get((method, unit))
        if isinstance(err, list):  # one per call, in order; then none
            err = err.pop(0) if err else None
        if err is None or (isinstance(err, (JobFailed, CallTimeout)) and method in ("StartTransientUnit", "StopUnit")):
            return err
        raise err

    def _check(self, unit: str, props: Mapping[str, Any]) -> None:
        """What the real client refuses before sending (sdqos.host.systemd._props)."""
        for name in props:
            if name not in PROPERTY_SIGNATURES:
                raise InvalidProperty(f"unknown property {name!r}", unit=unit)

    def _loaded(self, name: str, member: str) -> FakeUnit:
        u = self.units.get(name)
        if u is None:
            raise NoSuchUnit(f"{member}: Unit {name} not loaded.", f"{SD}.NoSuchUnit", name)
        return u

    def _implicit(self, name: str, active_state: str = "inactive") -> FakeUnit:
        """A slice name always loads (an empty, non-transient slice), as systemd does for any slice."""
        return self.units.get(name) or self.add(name, active_state, transient=False)

    def _start(self, u: FakeUnit) -> None:
        """A unit starts with its slices (a slice Requires= its parent): missing ones load implicitly."""
        u.active_state = "active"
        parent = u.slice
        while parent != "-.slice":
            p = self._implicit(parent)
            p.active_state = "active"
            parent = p.slice

    def ancestors(self, name: str) -> list[str]:
        out, parent = [], self.units[name].slice if name in self.units else parent_of_slice(name)
        while parent != "-.slice":
            out.append(parent)
            parent = self.units[parent].slice if parent in self.units else parent_of_slice(parent)
        return out

    def _below(self, name: str) -> list[str]:
        return [n for n in self.units if name in self.ancestors(n)]

    def _note_limits(self) -> None:
        """Record every unit whose limit is now above an ancestor's (see the module doc)."""
        for n, u in self.units.items():
            if u.active_state != "active":
                continue
            for prop in LIMITS:
                mine = u.props.get(prop, INFINITY)
                if mine == INFINITY:  # no limit of its own: its ancestors' hold
                    continue
                for a in self.ancestors(n):
                    theirs = self.units[a].props.get(prop, INFINITY) if a in self.units else INFINITY
                    if mine > theirs:
                        hit = (prop, n, a, mine, theirs)
                        if hit not in self.exceeded:
                            self.exceeded.append(hit)

    def _cgroup(self, name: str) -> str:
        return "/" + "/".join([*reversed(self.ancestors(name)), name])

    def _gc(self, names: Iterable[str]) -> None:
        """An inactive unit nothing references is unloaded: its name is free again."""
        for n in names:
            self.units.pop(n, None)

    # SystemdAPI ------------------------------------------------------------------------------------

    async def start_transient_unit(self, name: str, properties: Mapping[str, Any], mode: str = "fail",
                                   aux: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """UnitExists while the name is loaded (a failed unit too, until reset; a unit file's; an
        implicit slice's); else the unit is made, transient, and started with its slices."""
        self._check(name, properties)
        err = self._call("StartTransientUnit", name, properties)
        if name in self.units:
            raise UnitExists(f"StartTransientUnit: Unit {name} was already loaded or has a fragment file.",
                             f"{SD}.UnitExists", name)
        u = self.units[name] = FakeUnit(name, _held(properties))
        self._start(u)
        if isinstance(err, CallTimeout):  # the unit is made; its start job goes on past our wait
            u.active_state = "activating"
            raise err
        if err is not None:
            u.active_state = "failed"
            if properties.get("CollectMode") == "inactive-or-failed":
                self._gc([name])
            raise err
        self._note_limits()

    async def start_transient_units(self, items: Iterable[tuple[str, Mapping[str, Any]]], mode: str = "fail",
                                    window: int | None = None, on_done: Callable[[int], None] | None = None
                                    ) -> list[SystemdError | None]:
        """One result per item, in order (the real one pipelines them; systemd handles them in order)."""
        out = []
        for i, (n, p) in enumerate(items):
            out.append(await _result(self.start_transient_unit(n, p, mode)))
            if out[-1] is None and on_done is not None:
                on_done(i)
        return out

    async def set_unit_properties(self, name: str, properties: Mapping[str, Any], runtime: bool = True) -> None:
        """On a slice that is not loaded, systemd loads it implicitly (not transient, not started)
        and keeps the values; any other unit must be loaded (NoSuchUnit)."""
        self._check(name, properties)
        self._call("SetUnitProperties", name, properties)
        u = self._implicit(name) if name.endswith(".slice") else self._loaded(name, "SetUnitProperties")
        u.props.update(_held(properties))
        self._note_limits()

    async def set_units_properties(self, items: Iterable[tuple[str, Mapping[str, Any]]], runtime: bool = True,
                                   window: int | None = None) -> list[SystemdError | None]:
        return [await _result(self.set_unit_properties(n, p, runtime)) for n, p in items]

    async def start_unit(self, name: str, mode: str = "replace") -> None:
        self._call("StartUnit", name)
        u = self._implicit(name) if name.endswith(".slice") else self._loaded(name, "StartUnit")
        self._start(u)
        self._note_limits()

    async def stop_unit(self, name: str, mode: str = "replace") -> None:
        """Stops the unit and everything below it, which are then unloaded. A slice name that is not
        loaded loads and stops at once (no error); any other such name is NoSuchUnit."""
        err = self._call("StopUnit", name)
        if isinstance(err, JobFailed):
            raise err
        if name not in self.units and name.endswith(".slice"):
            return
        self._loaded(name, "StopUnit")
        gone = [*self._below(name), name]
        if isinstance(err, CallTimeout):  # processes that ignore SIGTERM: the job goes on
            for n in gone:
                self.units[n].active_state = "deactivating"
            raise err
        self._gc(gone)

    async def stop_units(self, names: Sequence[str], window: int | None = None) -> list[SystemdError | None]:
        return [await _result(self.stop_unit(n)) for n in names]

    async def reset_failed_unit(self, name: str) -> None:
        """A failed unit becomes inactive and, with nothing referencing it, is unloaded."""
        self._call("ResetFailedUnit", name)
        u = self._loaded(name, "ResetFailedUnit")
        if u.active_state == "failed":
            self._gc([name])

    async def kill_unit(self, name: str, who: str = "all", signal: int = 9) -> None:
        self._call("KillUnit", name)
        self._loaded(name, "KillUnit")
        self.killed.append((name, signal))

    async def attach_processes(self, name: str, pids: Sequence[int], subcgroup: str = "") -> None:
        self._call("AttachProcessesToUnit", name)
        self._loaded(name, "AttachProcessesToUnit").pids.extend(pids)

    async def get_unit_processes(self, name: str) -> list[tuple[str, int, str]]:
        """The processes of the unit and of every unit below it, with the cgroup each is in."""
        self._call("GetUnitProcesses", name)
        self._loaded(name, "GetUnitProcesses")
        return [(self._cgroup(n), pid, f"pid {pid}") for n in [name, *self._below(name)]
                for pid in self.units[n].pids]

    async def get_properties(self, unit: str, interface: str, names: Sequence[str] | None = None) -> dict[str, Any]:
        """A unit that is not loaded is loaded to answer: inactive (LoadState not-found, except slices)."""
        name = next((n for n in self.units if unit_path(n) == unit), unit) if unit.startswith(MANAGER_PATH) else unit
        self._call("Get", name)
        u = self.units.get(name)
        state = self._state(name, u)
        props = {**DEFAULTS, **(u.props if u else {}), **state}
        return {k: v for k, v in props.items() if names is None or k in names}

    async def read_units(self, patterns: Sequence[str],
                         interfaces_props: Mapping[str, Sequence[str]]) -> dict[str, UnitState]:
        """The loaded units matching the globs, with the asked properties of ``...Unit`` and of the
        unit's own type (``...Slice`` for a slice); a property nobody set has systemd's default."""
        self._call("ListUnitsByPatterns", ",".join(patterns))
        out: dict[str, UnitState] = {}
        for name in sorted(self.units):
            if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            u = self.units[name]
            state = self._state(name, u)
            kind = f"{SD}.{name.rsplit('.', 1)[-1].capitalize()}"
            st = UnitState(name, state["LoadState"], u.active_state, state["SubState"], unit_path(name),
                           transient=u.transient, control_group=state["ControlGroup"] or None)
            for iface, props in interfaces_props.items():
                if iface == UNIT:
                    st.props.update((p, state[p]) for p in props if p in state)
                elif iface == kind:  # ControlGroup comes along, as the real read_units has it
                    have = {**DEFAULTS, **u.props, "ControlGroup": state["ControlGroup"]}
                    st.props.update((p, have[p]) for p in [*props, "ControlGroup"] if p in have)
            out[name] = st
        return out

    def _state(self, name: str, u: FakeUnit | None) -> dict[str, Any]:
        if u is None:
            return {"LoadState": "loaded" if name.endswith(".slice") else "not-found", "ActiveState": "inactive",
                    "SubState": "dead", "Description": name, "Transient": False, "ControlGroup": ""}
        sub = {"active": "running" if not name.endswith(".slice") else "active", "failed": "failed"}
        return {"LoadState": "loaded", "ActiveState": u.active_state, "SubState": sub.get(u.active_state, "dead"),
                "Description": u.props.get("Description", name), "Transient": u.transient,
                "FragmentPath": f"/run/systemd/transient/{name}" if u.transient else "",
                "ControlGroup": self._cgroup(name) if u.active_state == "active" else ""}

    async def call_service(self, dest: str, path: str, iface: str, member: str, sig: str = "",
                           body: Sequence[Any] = (), *, repeatable: bool = False) -> list[Any]:
        """A service in ``services`` answers; any other is not on the bus (as machined when it does not run)."""
        self._call(f"{dest} {member}", "")
        answer = self.services.get((dest, member))
        if answer is None:
            raise ServiceNotRunning(f"{member}: The name {dest} was not provided by any .service files",
                                    "org.freedesktop.DBus.Error.ServiceUnknown")
        return answer(*body) if callable(answer) else list(answer)

    def variant_properties(self, properties: Mapping[str, Any], unit: str) -> list[list[Any]]:
        self._check(unit, properties)
        return [[k, v] for k, v in properties.items()]


def _held(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The values as systemd keeps and answers them: a byte array (AllowedCPUs) as the real client
    sends it (sdqos.host.systemd._props), so reading it back goes through sdqos's decoding."""
    return {k: bytes(to_dbus(k, v)) if PROPERTY_SIGNATURES.get(k) == "ay" else v for k, v in properties.items()}


async def _result(call: Any) -> SystemdError | None:
    try:
        await call
    except SystemdError as e:
        return e
    return None


if TYPE_CHECKING:
    def _conforms(fake: FakeSystemd) -> SystemdAPI:
        return fake  # mypy (tests/reconcile/test_apply_fake.py runs it on this file): the fake has every member
