"""The one door to systemd: a small async client for ``org.freedesktop.systemd1`` over D-Bus.

Why it looks the way it does (measured on systemd 252 / dbus-daemon 1.14, see docs/performance.md):

- Low-level ``bus.call(Message(...))`` with explicit signatures: no introspection round trips,
  and the same lines work on dbus-fast (preferred: maintained, 3-8x less client CPU) and dbus-next.
- A job-creating call counts as *in flight until its JobRemoved arrives*, not until its reply.
  systemd tracks each queued job's requester with one D-Bus match rule and runs jobs only when no
  bus message is waiting, so a client that pipelines calls and collects jobs later makes systemd's
  match-rule count grow by one per unit until dbus-daemon's max_match_rules_per_connection (512)
  throws systemd off the bus. Counted our way, systemd holds at most `window` jobs for us (rules
  <= window + 2) whatever the number of units, and 16 in flight is as fast as (or faster than) a
  strictly sequential loop.
- ``AddRef=true`` pins one match rule per unit for the life of our connection: capped here.
- As root, with no bus address named, the calls go to systemd itself through its private socket
  (``/run/systemd/private``), as systemctl and systemd-run connect as root: no dbus-daemon between,
  and systemd takes the caller's credentials from the socket instead of asking dbus-daemon for them
  with a blocking call per job (~0.2 ms of its own time per unit). A cold sync of 1000 pods is
  ~20 % faster so (docs/performance.md). systemd sends every signal to a private connection
  unasked (JobRemoved among them: no match rules there); calls to other services (machined) take
  a second connection, to the system bus. Where the socket cannot be used — not root, another PID
  namespace (systemd refuses a peer it cannot see), no such socket — the system bus, as before.
- Retries only where a repeat is harmless: our connection or systemd went away, NoReply, full
  queues. A retried StartTransientUnit whose lost attempt had created the unit gets UnitExists.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sdqos.errors import (
    AccessDenied,
    BusDisconnected,
    BusUnavailable,
    CallTimeout,
    InvalidInput,
    InvalidProperty,
    JobFailed,
    NoSuchUnit,
    ServiceNotRunning,
    SystemdError,
    UnitExists,
)
from sdqos.plan.properties import SIGNATURES as RESOURCE_SIGNATURES
from sdqos.plan.properties import to_dbus

T = TypeVar("T")
log = logging.getLogger(__name__)

SYSTEMD = "org.freedesktop.systemd1"
MANAGER_PATH = "/org/freedesktop/systemd1"
MANAGER, UNIT, SLICE, SCOPE = (f"{SYSTEMD}.{i}" for i in ("Manager", "Unit", "Slice", "Scope"))
DBUS, DBUS_PATH = "org.freedesktop.DBus", "/org/freedesktop/DBus"
PROPERTIES = DBUS + ".Properties"
DEFAULT_ADDRESS = "unix:path=/run/dbus/system_bus_socket"
PRIVATE_ADDRESS = "unix:path=/run/systemd/private"  # systemd's own socket: root only, no dbus-daemon
JOB_REMOVED_RULE = f"type='signal',sender='{SYSTEMD}',path='{MANAGER_PATH}',interface='{MANAGER}',member='JobRemoved'"
OWNER_RULE = f"type='signal',sender='{DBUS}',interface='{DBUS}',member='NameOwnerChanged',arg0='{SYSTEMD}'"

DEFAULT_WINDOW = 16  # jobs in flight in bulk creation: systemd then holds <= 18 match rules for us
MAX_WINDOW = 64  # far below 512 match rules and dbus-daemon's max_replies_per_connection (128)
READ_WINDOW = 32  # calls in flight for reads and SetUnitProperties (no jobs: no match rules)
GETALL_FROM = 3  # from this many properties of one interface on, one GetAll is cheaper than Gets
MAX_ADDREF = 256  # AddRef=true units per connection: each pins a match rule in systemd
# How long systemd's private socket may take to authenticate and greet us before the bus is used
# instead: systemd answers it from its event loop at once; a peer there that accepts and never
# answers would otherwise cost every command the whole call timeout.
PRIVATE_HANDSHAKE_TIMEOUT = 2.0
CONNECT_GRACE = 10.0  # seconds the first connection may wait for a restarting bus or re-executing systemd

#: D-Bus signature of every property sdqos sends (callers pass plain Python values): the resource
#: properties' from their rows in plan/properties.py, then the unit's own.
PROPERTY_SIGNATURES: dict[str, str] = {
    **RESOURCE_SIGNATURES,
    "StartupCPUShares": "t", "StartupCPUWeight": "t", "AllowedCPUs": "ay", "AllowedMemoryNodes": "ay",
    "IOWeight": "t", "BlockIOWeight": "t",
    "Description": "s", "Slice": "s", "Wants": "as", "Requires": "as", "After": "as", "Before": "as",
    "PartOf": "as", "DefaultDependencies": "b", "Delegate": "b", "CollectMode": "s", "PIDs": "au",
    "AddRef": "b", "CPUAccounting": "b", "MemoryAccounting": "b", "TasksAccounting": "b",
    "BlockIOAccounting": "b", "IOAccounting": "b", "OOMScoreAdjust": "i",
    "KillMode": "s", "TimeoutStopUSec": "t", "RuntimeMaxUSec": "t",
    "ExecStart": "a(sasb)", "Type": "s", "RemainAfterExit": "b",  # transient services (tests, tools)
}

_E = "org.freedesktop.DBus.Error."
_ERRORS: dict[str, type[SystemdError]] = {
    f"{SYSTEMD}.UnitExists": UnitExists, f"{SYSTEMD}.NoSuchUnit": NoSuchUnit,
    **dict.fromkeys((_E + "PropertyReadOnly", _E + "InvalidArgs", _E + "UnknownProperty"), InvalidProperty),
    **dict.fromkeys((_E + "AccessDenied", _E + "InteractiveAuthorizationRequired"), AccessDenied),
    # LimitsExceeded: a full queue or too many pending replies
    **dict.fromkeys((_E + "NoReply", _E + "Disconnected", _E + "LimitsExceeded"), BusDisconnected),
    # the service called is not on the bus: systemd1 gone (a disconnect), machined not running
    **dict.fromkeys((_E + "ServiceUnknown", _E + "NameHasNoOwner"), ServiceNotRunning),
}
_STU = "ssa(sv)a(sa(sv))"
_CGROUP_KINDS = (".Slice", ".Scope", ".Service", ".Socket", ".Mount", ".Swap")
_STATE_WORDS: dict[str, str] = {}  # "loaded", "active", "running", ...: the few words units' states are
_LISTED = ("Id", "Description", "LoadState", "ActiveState", "SubState", "Following")  # in ListUnits rows
_TRANSIENT = "/run/systemd/transient/"
_MODULES = {"dbus-fast": "dbus_fast", "dbus-next": "dbus_next"}


def backend_name(choice: str | None = None) -> str:
    """The D-Bus library to use: `choice`, else $SDQOS_DBUS_BACKEND (dbus-next | dbus-fast | auto);
    auto prefers dbus-fast (maintained, faster) and falls back to dbus-next."""
    choice = (choice or os.environ.get("SDQOS_DBUS_BACKEND") or "auto").strip().lower()
    if choice not in ("auto", *_MODULES):
        raise InvalidInput(f"unknown D-Bus backend {choice!r} (use dbus-fast, dbus-next or auto)",
                           where="SDQOS_DBUS_BACKEND")
    for name in ["dbus-fast", "dbus-next"] if choice == "auto" else [choice]:
        try:
            importlib.import_module(_MODULES[name])
            return name
        except ImportError:
            continue
    raise InvalidInput(f"D-Bus backend {choice!r} is not installed", where="SDQOS_DBUS_BACKEND")


@functools.cache
def _lib(name: str) -> SimpleNamespace:
    """The few names we use; both libraries have them, under the same names (built once per
    library: the private-socket subclass is not made again for every client)."""
    m, aio = importlib.import_module(_MODULES[name]), importlib.import_module(_MODULES[name] + ".aio")
    return SimpleNamespace(MessageBus=aio.MessageBus, Message=m.Message, MessageType=m.MessageType,
                           MessageFlag=m.MessageFlag, BusType=m.BusType, Variant=m.Variant,
                           PrivateBus=_private_bus(aio.MessageBus))


_AUTH_LINE_MAX = 512


def _private_bus(base: type) -> type:
    """``base`` (either library's MessageBus) authenticating as sd-bus clients such as systemctl do:
    ``AUTH EXTERNAL`` and ``BEGIN`` in one write. Both libraries send ``BEGIN`` only once the
    ``OK`` is read, and systemd 252 then sometimes never leaves the authentication phase on its
    side (measured in the sandbox after a daemon-reload: every such connection waited out its
    timeout; pipelined, none did; the class of sd-bus server bug of systemd#17425). The ``OK``
    line is read byte by byte: systemd sends signals to a private connection as soon as it runs,
    right behind it. Private members of the libraries (``_loop``, ``_sock``), used only here:
    should either change, the private socket fails to connect and the bus is used."""

    class PrivateBus(base):  # type: ignore[misc, valid-type]
        async def _authenticate(self) -> None:
            hex_uid = str(os.geteuid()).encode().hex()
            await self._loop.sock_sendall(self._sock, f"\0AUTH EXTERNAL {hex_uid}\r\nBEGIN\r\n".encode())
            line = b""
            while not line.endswith(b"\r\n"):
                byte = await self._loop.sock_recv(self._sock, 1)
                if not byte or len(line) > _AUTH_LINE_MAX:
                    raise ConnectionResetError("systemd closed the private connection while authenticating")
                line += byte
            if not line.startswith(b"OK "):
                raise ConnectionRefusedError(f"systemd refused the authentication: {line[:80]!r}")

    return PrivateBus


@dataclass(frozen=True, slots=True)
class UnitInfo:
    """One row of ListUnitsByPatterns."""

    id: str
    description: str
    load_state: str
    active_state: str
    sub_state: str
    following: str
    path: str
    job_id: int
    job_type: str
    job_path: str


@dataclass(slots=True)
class UnitState:
    """A live unit as read_units saw it; `props` holds the requested properties by name."""

    name: str
    load_state: str
    active_state: str
    sub_state: str
    path: str
    transient: bool | None = None  # None: not read (ask for Unit FragmentPath or Transient)
    fragment_path: str | None = None
    control_group: str | None = None  # read along with any property of the unit's own type
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Stats:
    """D-Bus traffic of one connection, for the report and the benchmarks."""

    calls: int = 0
    retries: int = 0
    disconnects: int = 0  # our connection closed, or systemd left the bus
    reconnects: int = 0


class SystemdAPI(Protocol):
    """What reconcile, the CLI's status and the host adapters (machined) use of a systemd manager:
    the members they call, and nothing else. :class:`Systemd` is the real one (over D-Bus); the
    tests' in-memory fake (tests/fakesystemd.py) is another, so the reconciler is tested without
    root too. Code that only uses a connection takes this type; code that opens one makes a Systemd."""

    stats: Stats

    async def start_transient_unit(self, name: str, properties: Mapping[str, Any], mode: str = "fail",
                                   aux: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> None: ...

    async def start_transient_units(self, items: Iterable[tuple[str, Mapping[str, Any]]], mode: str = "fail",
                                    window: int | None = None, on_done: Callable[[int], None] | None = None
                                    ) -> list[SystemdError | None]: ...

    async def set_unit_properties(self, name: str, properties: Mapping[str, Any], runtime: bool = True) -> None: ...

    async def set_units_properties(self, items: Iterable[tuple[str, Mapping[str, Any]]], runtime: bool = True,
                                   window: int | None = None) -> list[SystemdError | None]: ...

    async def start_unit(self, name: str, mode: str = "replace") -> None: ...

    async def stop_unit(self, name: str, mode: str = "replace") -> None: ...

    async def stop_units(self, names: Sequence[str], window: int | None = None) -> list[SystemdError | None]: ...

    async def reset_failed_unit(self, name: str) -> None: ...

    async def kill_unit(self, name: str, who: str = "all", signal: int = 9) -> None: ...

    async def attach_processes(self, name: str, pids: Sequence[int], subcgroup: str = "") -> None: ...

    async def get_unit_processes(self, name: str) -> list[tuple[str, int, str]]: ...

    async def get_properties(self, unit: str, interface: str,
                             names: Sequence[str] | None = None) -> dict[str, Any]: ...

    async def read_units(self, patterns: Sequence[str],
                         interfaces_props: Mapping[str, Sequence[str]]) -> dict[str, UnitState]: ...

    async def call_service(self, dest: str, path: str, iface: str, member: str, sig: str = "",
                           body: Sequence[Any] = (), *, repeatable: bool = False) -> list[Any]: ...

    def variant_properties(self, properties: Mapping[str, Any], unit: str) -> list[list[Any]]: ...


def _lists(v: Any) -> Any:
    """Tuples -> lists, recursively: dbus-next takes only lists for arrays and structs."""
    return [_lists(x) for x in v] if isinstance(v, (list, tuple)) else v


def unit_path(name: str) -> str:
    """systemd's object path for a unit name (sd_bus_path_encode), without a round trip."""
    out = [c if c.isascii() and (c.isalpha() or (c.isdigit() and i)) else "".join(f"_{b:02x}" for b in c.encode())
           for i, c in enumerate(name)]
    return f"{MANAGER_PATH}/unit/{''.join(out) or '_'}"


def _quiet_disconnects(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """When the bus connection drops, dbus-fast fails the futures of calls nobody waits for any
    more; asyncio would print each as "Future exception was never retrieved". The disconnect itself
    is handled (and counted) by Systemd, so these are noise: drop them, report anything else."""
    exc = context.get("exception")
    if isinstance(exc, (ConnectionError, EOFError, OSError)) and "never retrieved" in context.get("message", ""):
        return
    loop.default_exception_handler(context)


def _disconnected(e: BaseException) -> bool:
    return isinstance(e, (BusDisconnected, BusUnavailable))


def run(coro: Awaitable[T]) -> T:
    """Run one coroutine to completion from synchronous (CLI) code: ``asyncio.run(coro)`` that
    never loses a Ctrl-C, the result handed back outside the task
    (asyncio.run (3.11) formats its main task's repr when it restores the SIGINT handler, result
    included: for a sync's report, the plan of every unit, ~0.15 s and ~10 MB at 1000 pods, twice).

    asyncio.run turns SIGINT into one cancellation of the task and raises KeyboardInterrupt only if
    the task ends cancelled; a cancellation that meets a result is swallowed (Python 3.11's
    ``wait_for`` returns the result instead: on a busy machine a reply and Ctrl-C often arrive in
    the same loop pass) and the command went on as if nothing happened. Here every SIGINT is
    recorded, the task is cancelled until it ends, and KeyboardInterrupt follows however it ended."""
    import signal

    box: list = []
    interrupted: list[bool] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def cancel() -> None:
            if not task.done():
                task.cancel()
                loop.call_later(INTERRUPT_RECANCEL_S, cancel)  # (swallowed: again, until it ends)

        def on_sigint(signum: int, frame: Any) -> None:
            # Python's handler, run in this thread at once: every SIGINT is counted (the loop's own
            # add_signal_handler only notes it in the loop's pipe, lost once the loop stops reading)
            interrupted.append(True)
            if task.done():
                raise KeyboardInterrupt
            loop.call_soon_threadsafe(cancel)
        previous = signal.signal(signal.SIGINT, on_sigint)  # (not in the main thread: ValueError, a bug)
        try:
            box.append(await coro)
        finally:
            signal.signal(signal.SIGINT, previous)  # asyncio.run's, which puts Python's default back
    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    if interrupted:
        raise KeyboardInterrupt
    return box[0]


INTERRUPT_RECANCEL_S = 1.0  # a cancellation swallowed: the next one this much later


class Systemd:
    """Async client for one systemd manager: ``async with Systemd(address) as sd: ...``

    address: D-Bus address (default $DBUS_SYSTEM_BUS_ADDRESS, else the system bus socket).
    private: True (default): systemd's private socket is tried first as root when no bus address is
    named (either way: a named bus is a sandbox's or a test's, the private socket this host's);
    an address: that socket, tried first whatever the bus; None or False: the bus only.
    ``direct`` says whether the connection went to systemd itself (module doc).
    call_timeout: seconds per call (per batch for pipelined reads); job_timeout: seconds to wait
    for a JobRemoved (30 s, as runc); stop_timeout: the same for a stop job, which lasts as long as
    the unit's processes take to exit (a pod's grace period, then SIGKILL); retry_deadline: seconds
    to keep retrying after a disconnect;
    window: jobs in flight in start_transient_units; read_window: calls in flight for reads.
    """

    def __init__(self, address: str | None = None, *, backend: str | None = None, call_timeout: float = 25.0,
                 job_timeout: float = 30.0, stop_timeout: float = 600.0, retry_deadline: float = 60.0,
                 window: int = DEFAULT_WINDOW, read_window: int = READ_WINDOW,
                 private: str | None | bool = True):
        if not (1 <= window <= MAX_WINDOW and 1 <= read_window <= MAX_WINDOW):
            raise ValueError(f"window and read_window must be 1..{MAX_WINDOW}")
        named = address or os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        self.address = named or DEFAULT_ADDRESS
        self._private: str | None = (PRIVATE_ADDRESS if not named and os.geteuid() == 0 else None) \
            if private is True else private or None
        self.direct = False  # connected to systemd itself (its private socket), not through the bus
        self._side: Any = None  # while direct: a bus connection for other services (machined)
        self.backend = backend_name(backend)
        self._d = _lib(self.backend)
        self.call_timeout, self.job_timeout, self.retry_deadline = call_timeout, job_timeout, retry_deadline
        self.stop_timeout = stop_timeout
        self.window, self.read_window = window, read_window
        self.stats = Stats()
        self._bus: Any = None
        self._watch: asyncio.Future | None = None
        self._closed = False
        self._up = asyncio.Event()  # org.freedesktop.systemd1 has an owner
        self._jobs: dict[str, asyncio.Future] = {}  # job path -> future(result)
        self._early: dict[str, str] = {}  # JobRemoved processed before the reply carrying its path
        self._expecting = 0  # job-returning calls whose reply is not handled yet
        self._addref = 0
        self._lock: asyncio.Lock | None = None
        self._epoch = 0  # bumped whenever the connection or systemd's presence on it changes

    # connection ---------------------------------------------------------------------------------

    async def connect(self) -> Systemd:
        """Connect and subscribe; BusUnavailable if there is no bus, or no systemd on it.
        A bus that is restarting (connection reset mid-handshake) or a systemd that is
        re-executing gets CONNECT_GRACE seconds; a missing socket fails at once."""
        async def attempt() -> None:
            if self._bus is not None and self._bus.connected:
                self._bus.disconnect()  # half set up by the attempt before: start over
            await self._open()
            await self._ready()

        def transient(e: BaseException) -> bool:
            return isinstance(e, BusDisconnected) or (isinstance(e, BusUnavailable) and e.transient)

        try:
            await self._with_retries(attempt, transient, min(CONNECT_GRACE, self.retry_deadline), max_wait=1.0)
        except (BusUnavailable, BusDisconnected) as e:
            self.close()
            if isinstance(e, BusDisconnected):
                raise BusUnavailable(f"{SYSTEMD} is not on the bus at {self.address}") from None
            raise
        return self

    def close(self) -> None:
        self._closed = True
        for bus in (self._bus, self._side):
            if bus is not None and bus.connected:
                bus.disconnect()
        self._fail_jobs("client closed")

    async def __aenter__(self) -> Systemd:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() is None:
            loop.set_exception_handler(_quiet_disconnects)
        bus = await self._open_private() if self._private is not None else None
        direct = bus is not None
        if bus is None:
            bus = await self._open_bus()
        self._fail_jobs("reconnecting")  # waiters of an earlier connection: their signal is lost
        self._epoch += 1
        bus.add_message_handler(self._on_message)
        self._watch = asyncio.ensure_future(bus.wait_for_disconnect())
        self._watch.add_done_callback(functools.partial(self._on_bus_lost, bus))
        self._bus, self._addref, self.direct = bus, 0, direct  # AddRef refs die with a connection
        if direct:  # the peer is systemd itself: no match rules, no owner to wait for
            self._up.set()
            return
        try:
            for rule in (JOB_REMOVED_RULE, OWNER_RULE):
                await self._call(DBUS_PATH, DBUS, "AddMatch", "s", [rule], dest=DBUS)
            await self._check_owner()
        except SystemdError:
            bus.disconnect()  # half set up: the next _ready() starts over
            raise

    async def _open_bus(self) -> Any:
        """A connection to the bus at ``address``; BusUnavailable (transient or not) otherwise."""
        d = self._d
        try:  # dbus-next opens the socket in the constructor, dbus-fast in connect()
            return await asyncio.wait_for(d.MessageBus(bus_address=self.address, bus_type=d.BusType.SYSTEM).connect(),
                                          self.call_timeout)
        except Exception as e:  # OSError, auth, bad address, timeout: all mean "no bus here"
            err = BusUnavailable(f"cannot connect to the bus at {self.address}: {str(e) or type(e).__name__}")
            err.transient = isinstance(e, (ConnectionResetError, ConnectionRefusedError, BrokenPipeError, EOFError))
            raise err from None

    async def _open_private(self) -> Any:
        """A connection to systemd's private socket, or None — and the bus from then on, for this
        client — when it cannot be had: no socket, not root, a peer systemd refuses (another PID
        namespace: it resets the connection), systemd re-executing. (Both D-Bus libraries greet
        every peer with the bus's Hello; systemd answers it with an error, which they take as the
        connection's name: nothing else depends on it.)"""
        d = self._d
        bus = None
        try:
            bus = d.PrivateBus(bus_address=self._private, bus_type=d.BusType.SYSTEM)
            return await asyncio.wait_for(bus.connect(), min(PRIVATE_HANDSHAKE_TIMEOUT, self.call_timeout))
        except Exception as e:  # noqa: BLE001 - any failure: the bus, as before this socket was tried
            why = f"no answer in {min(PRIVATE_HANDSHAKE_TIMEOUT, self.call_timeout):g}s" \
                if isinstance(e, asyncio.TimeoutError) else str(e) or type(e).__name__
            log.info("systemd's private socket (%s) not used: %s; the bus at %s instead", self._private,
                     why, self.address)
            if bus is not None:
                try:
                    bus.disconnect()  # (half open: its socket is closed, not left to the collector)
                except Exception:  # noqa: BLE001 - nothing to close
                    pass
            self._private = None
            return None

    async def _side_bus(self) -> Any:
        """While direct: the bus connection other services are called on (opened when first needed)."""
        if self._side is None or not self._side.connected:
            self._side = await self._open_bus()
        return self._side

    async def _check_owner(self) -> None:
        (has,) = await self._call(DBUS_PATH, DBUS, "NameHasOwner", "s", [SYSTEMD], dest=DBUS)
        self._up.set() if has else self._up.clear()

    def _healthy(self) -> bool:
        return self._bus is not None and self._bus.connected and self._up.is_set()

    async def _ready(self) -> None:
        """Before each attempt: reconnect if our connection closed, and wait (bounded) for systemd to
        be on the bus. No Subscribe: systemd sends a job's JobRemoved to the client that queued it
        anyway (as systemctl and systemd-run wait for theirs), and a subscriber makes it send
        UnitNew, JobNew and PropertiesChanged for every unit it touches — ~10 % more of systemd's
        CPU for each unit created, which is most of what a cold sync waits for."""
        if self._closed:
            raise SystemdError("the systemd client is closed")
        if self._healthy():
            return
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._bus is None or not self._bus.connected:
                await self._open()
                self.stats.reconnects += 1
                log.info("reconnected to %s", self.address)
            if not self._up.is_set():
                await self._check_owner()
            if not self._up.is_set():
                try:
                    await asyncio.wait_for(self._up.wait(), min(self.call_timeout, 5.0))
                except asyncio.TimeoutError:
                    raise BusDisconnected(f"{SYSTEMD} is not on the bus at {self.address}") from None

    def _on_message(self, msg: Any) -> None:
        if msg.message_type is not self._d.MessageType.SIGNAL:
            return None
        if msg.member == "JobRemoved" and msg.interface == MANAGER:
            _id, job, _unit, result = msg.body
            fut = self._jobs.pop(job, None)
            if fut is not None and not fut.done():
                fut.set_result(result)
            elif self._expecting:
                self._early[job] = result
        elif msg.member == "NameOwnerChanged" and msg.body[0] == SYSTEMD:
            log.info("%s owner: %r -> %r", SYSTEMD, msg.body[1], msg.body[2])
            self._epoch += 1
            if msg.body[2]:
                self._up.set()
            else:
                self._up.clear()
                self.stats.disconnects += 1
                self._fail_jobs(f"{SYSTEMD} left the bus")
        return None

    def _on_bus_lost(self, bus: Any, fut: asyncio.Future) -> None:
        fut.cancelled() or fut.exception()  # retrieve it: no "exception never retrieved"
        if bus is self._bus and not self._closed:
            self._epoch += 1
            log.info("connection to %s closed", self.address)
            self.stats.disconnects += 1
            self._fail_jobs(f"connection to {self.address} closed")

    def _fail_jobs(self, why: str) -> None:
        """Wake every job waiter: its JobRemoved can no longer arrive."""
        for job, fut in self._jobs.items():
            if not fut.done():
                fut.set_exception(BusDisconnected(f"{why} while waiting for {job}"))
        self._jobs.clear()

    # calls ----------------------------------------------------------------------------------------

    async def _call(self, path: str, iface: str, member: str, sig: str = "", body: Sequence[Any] = (),
                    dest: str = SYSTEMD, unit: str | None = None, timeout: bool = True) -> list[Any]:
        """One call; error replies become typed errors; no retry. timeout=False when the caller
        bounds a whole batch (a wait_for per call costs ~50% more client CPU on reads). A call to
        another service than systemd while direct goes over the bus (:meth:`_side_bus`)."""
        d, bus = self._d, self._bus
        if dest != SYSTEMD and self.direct:
            try:
                bus = await self._side_bus()
            except BusUnavailable as e:  # no bus: the service (machined) cannot be running either
                raise ServiceNotRunning(f"{member}: {dest} is not reachable: {e}", unit=unit) from None
        if bus is None or not bus.connected:
            raise BusDisconnected(f"{member}: not connected to {self.address}", unit=unit)
        msg = d.Message(destination=dest, path=path, interface=iface, member=member, signature=sig,
                        body=list(body), flags=d.MessageFlag.NO_AUTOSTART)
        self.stats.calls += 1
        epoch = self._epoch
        try:
            reply = await (asyncio.wait_for(bus.call(msg), self.call_timeout) if timeout else bus.call(msg))
        except asyncio.TimeoutError:
            raise self._timed_out(epoch, f"{member}: no reply within {self.call_timeout:g}s", unit) from None
        except Exception as e:
            if not bus.connected:
                raise BusDisconnected(f"{member}: connection lost ({type(e).__name__}: {e})", unit=unit) from None
            raise SystemdError(f"{member}: {type(e).__name__}: {e}", unit=unit) from e
        if reply.message_type is d.MessageType.ERROR:
            text = reply.body[0] if reply.body and isinstance(reply.body[0], str) else "(no message)"
            cls = _ERRORS.get(reply.error_name, SystemdError)
            if cls is ServiceNotRunning and dest == SYSTEMD:
                self._up.clear()
            raise cls(f"{member}: {text}", reply.error_name, unit)
        return reply.body

    def _timed_out(self, epoch: int, what: str, unit: str | None) -> SystemdError:
        """A timeout, or — when the connection or systemd changed since `epoch` (the call went
        out as the bus or systemd went away, and its reply was lost with it) — a disconnect,
        which callers may retry."""
        if epoch != self._epoch:
            return BusDisconnected(f"{what}, across a disconnect", unit=unit)
        return CallTimeout(what, unit=unit)

    async def _retrying(self, fn: Callable[..., Awaitable[T]], *args: Any, **kw: Any) -> T:
        """fn(*args) after _ready(), retried while the bus or systemd is away, for up to
        retry_deadline seconds. Only for repeatable operations."""
        async def attempt() -> T:
            await self._ready()
            return await fn(*args, **kw)
        return await self._with_retries(attempt, _disconnected, self.retry_deadline, max_wait=2.0)

    async def _with_retries(self, attempt: Callable[[], Awaitable[T]], retryable: Callable[[BaseException], bool],
                            deadline: float, *, max_wait: float) -> T:
        """attempt(); while it fails with a retryable error, again with exponential backoff +
        jitter until `deadline` seconds have passed. The first try runs without tenacity: most
        calls need no retry, and per call (thousands per sync) its set-up would cost more."""
        try:
            return await attempt()
        except Exception as e:
            if not retryable(e):
                raise
            self.stats.retries += 1
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential, wait_random

        def count(_: Any) -> None:
            self.stats.retries += 1
        async for a in AsyncRetrying(
                retry=retry_if_exception(retryable), reraise=True, before_sleep=count,
                wait=wait_exponential(multiplier=0.05, max=max_wait) + wait_random(0, 0.2),
                stop=stop_after_delay(deadline)):
            with a:
                result = await attempt()
        return result

    async def _job(self, unit: str, member: str, sig: str, body: Sequence[Any], timeout: float | None = None) -> None:
        """A job-returning call, then its JobRemoved (no retry here). The signal can be processed
        before our coroutine sees the reply carrying the job path: `_early` keeps it meanwhile."""
        self._expecting += 1
        fut, bus = None, self._bus
        try:
            (job,) = await self._call(MANAGER_PATH, MANAGER, member, sig, body, unit=unit)
            result = self._early.pop(job, None)
            if result is None:
                if bus is not self._bus or not bus.connected or not self._up.is_set():
                    raise BusDisconnected(f"{member}: lost the bus or systemd before job {job} ended", unit=unit)
                fut = self._jobs[job] = asyncio.get_running_loop().create_future()
        finally:
            self._expecting -= 1
            if not self._expecting:
                self._early.clear()  # nobody can claim these any more: other clients' jobs
        if fut is not None:  # a timer rather than wait_for: no extra task per unit
            wait = timeout or self.job_timeout

            def expire() -> None:
                if not fut.done():
                    fut.set_exception(CallTimeout(f"job {job} did not finish within {wait:g}s", unit=unit))
            timer = asyncio.get_running_loop().call_later(wait, expire)
            try:
                result = await fut
            finally:
                timer.cancel()
                self._jobs.pop(job, None)
        if result != "done":
            raise JobFailed(unit, str(result), job)

    def _props(self, properties: Mapping[str, Any], unit: str) -> list[list[Any]]:
        """Plain values -> a(sv), checked before anything is sent."""
        out = []
        for name, value in properties.items():
            sig = PROPERTY_SIGNATURES.get(name)
            if sig is None:
                raise InvalidProperty(f"unknown property {name!r} (not in sdqos.host.systemd.PROPERTY_SIGNATURES)", unit=unit)
            try:
                out.append([name, self._d.Variant(sig, bytes(to_dbus(name, value)) if sig == "ay" else _lists(value))])
            except Exception as e:
                raise InvalidProperty(f"{name}={value!r} is not a D-Bus '{sig}': {e}", unit=unit) from None
        return out

    def _checked(self, items: Iterable[tuple[str, Mapping[str, Any]]]
                 ) -> tuple[list[tuple[str, Mapping[str, Any]]], dict[int, SystemdError]]:
        """The items of a bulk call, every unit's properties checked before the first call goes out:
        (the items, {index: error} for those whose values cannot be sent). A unit with a bad value
        is never sent and gets its error as its result; it stops no other unit's call. Each unit's
        D-Bus values are built again as its call is sent, not kept from the check: held all at once
        they were ~1.4 KB per unit, +7 MB of peak RSS in a cold sync of 5000 pods."""
        todo = list(items)
        bad: dict[int, SystemdError] = {}
        for i, (n, p) in enumerate(todo):
            try:
                self._props(p, n)
            except InvalidProperty as e:
                bad[i] = e
        return todo, bad

    async def _bulk(self, items: Iterable[tuple[str, Mapping[str, Any]]], window: int,
                    once: Callable[[str, Any], Awaitable[Any]], retry: Callable[[str, Any], Awaitable[Any]],
                    on_done: Callable[[int], None] | None = None) -> list[SystemdError | None]:
        """_bounded over the items whose values can be sent; the others get their InvalidProperty.
        ``on_done(i)``: item i succeeded (called as it does, while later items are in flight)."""
        todo, bad = self._checked(items)
        good = [i for i in range(len(todo)) if i not in bad]
        done = None if on_done is None else (lambda j: on_done(good[j]))
        sent = await self._bounded([todo[i] for i in good], window, once, retry, done) if good else []
        results: list[SystemdError | None] = [bad.get(i) for i in range(len(todo))]
        for i, r in zip(good, sent):
            results[i] = r
        return results

    def _check_addref(self, n: int, unit: str | None = None) -> int:
        """n more AddRef=true units on this connection: refused past MAX_ADDREF."""
        if n and self._addref + n > MAX_ADDREF:
            raise InvalidProperty(f"over {MAX_ADDREF} AddRef=true units on one connection: each pins a D-Bus "
                                  "match rule in systemd, and at 512 dbus-daemon disconnects systemd", unit=unit)
        return n

    async def _bounded(self, items: list[tuple[str, Any]], window: int, once: Callable[[str, Any], Awaitable[Any]],
                       retry: Callable[[str, Any], Awaitable[Any]], on_done: Callable[[int], None] | None = None
                       ) -> list[SystemdError | None]:
        """once(*item) for every item, `window` at a time, sent in list order; items caught by a
        disconnect go through retry(*item) afterwards, one by one, in list order. on_done(i) as
        item i succeeds."""
        results: list[SystemdError | None] = [None] * len(items)
        again: list[int] = []
        gave_up: SystemdError | None = None
        sem = asyncio.Semaphore(max(1, min(window, MAX_WINDOW)))

        async def one(i: int) -> None:
            try:
                await once(*items[i])
            except (BusDisconnected, BusUnavailable):
                again.append(i)
            except SystemdError as e:
                results[i] = e
            else:
                if on_done is not None:
                    on_done(i)
            finally:
                sem.release()

        # Only the tasks in flight are kept (at 5000 units, keeping every finished task for one
        # final gather held ~5 MB); an unexpected exception in one is re-raised at the end.
        pending: set[asyncio.Future] = set()
        crashed: list[BaseException] = []

        def finished(t: asyncio.Future) -> None:
            pending.discard(t)
            exc = None if t.cancelled() else t.exception()
            if exc is not None:
                crashed.append(exc)

        for i in range(len(items)):
            await sem.acquire()  # here, not in the task, so that sends keep the list order
            if not self._healthy():
                try:  # don't burn through the items while systemd is away
                    await self._retrying(asyncio.sleep, 0)
                except SystemdError as e:
                    sem.release()
                    gave_up, results[i:] = e, [e] * (len(items) - i)
                    break
            t = asyncio.ensure_future(one(i))
            pending.add(t)
            t.add_done_callback(finished)
        if pending:
            await asyncio.gather(*pending)
        if crashed:
            raise crashed[0]
        for i in sorted(again):
            self.stats.retries += 1
            try:
                if gave_up:
                    raise gave_up
                await retry(*items[i])
            except SystemdError as e:
                results[i] = e
            else:
                if on_done is not None:
                    on_done(i)
        return results

    # manager API ----------------------------------------------------------------------------------

    async def start_transient_unit(self, name: str, properties: Mapping[str, Any], mode: str = "fail",
                                   aux: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Create and start a transient unit, wait for its job (JobFailed unless 'done'). Retried
        after a disconnect: if the lost attempt had created the unit, that gives UnitExists, which
        callers treat like any UnitExists (the unit is there: SetUnitProperties)."""
        props, aux_units = self._props(properties, name), [[n, self._props(p, n)] for n, p in aux]
        addref = self._check_addref(int(bool(properties.get("AddRef"))), name)
        await self._retrying(self._job, name, "StartTransientUnit", _STU, [name, mode, props, aux_units])
        self._addref += addref

    async def start_transient_units(self, items: Iterable[tuple[str, Mapping[str, Any]]], mode: str = "fail",
                                    window: int | None = None, on_done: Callable[[int], None] | None = None
                                    ) -> list[SystemdError | None]:
        """Create many units with at most `window` jobs in flight (module doc). One result per item,
        in order: None, or the error (UnitExists, JobFailed...). Calls go out in list order on one
        connection and systemd handles them in that order, so list parent slices before children.
        ``on_done(i)``: item i's job ended "done", called then, while later items are in flight
        (a cold sync reads each unit's cgroup back there, while systemd makes the next ones)."""
        todo = list(items)
        addref = [int(bool(p.get("AddRef"))) for _, p in todo]
        self._check_addref(sum(addref))
        results = await self._bulk(
            todo, window or self.window,
            lambda n, p: self._job(n, "StartTransientUnit", _STU, [n, mode, self._props(p, n), []]),
            lambda n, p: self._retrying(self._job, n, "StartTransientUnit", _STU, [n, mode, self._props(p, n), []]),
            on_done)
        self._addref += sum(a for a, r in zip(addref, results) if r is None)
        return results

    async def set_unit_properties(self, name: str, properties: Mapping[str, Any], runtime: bool = True) -> None:
        """Change properties of a unit live. Beware: a missing *slice* is not NoSuchUnit, systemd
        creates it implicitly (not transient) and keeps the properties as runtime drop-ins."""
        await self._retrying(self._call, MANAGER_PATH, MANAGER, "SetUnitProperties", "sba(sv)",
                             [name, runtime, self._props(properties, name)], unit=name)

    async def set_units_properties(self, items: Iterable[tuple[str, Mapping[str, Any]]], runtime: bool = True,
                                   window: int | None = None) -> list[SystemdError | None]:
        """SetUnitProperties for many units, pipelined (no jobs, so no match rules); results as
        start_transient_units."""
        call = (MANAGER_PATH, MANAGER, "SetUnitProperties", "sba(sv)")
        return await self._bulk(items, window or self.read_window,
                                lambda n, p: self._call(*call, [n, runtime, self._props(p, n)], unit=n),
                                lambda n, p: self._retrying(self._call, *call, [n, runtime, self._props(p, n)], unit=n))

    async def start_unit(self, name: str, mode: str = "replace") -> None:
        """Start a (loaded or loadable) unit and wait for the job (JobFailed unless 'done')."""
        await self._retrying(self._job, name, "StartUnit", "ss", [name, mode])

    async def stop_unit(self, name: str, mode: str = "replace") -> None:
        """Stop a unit and wait for the job. NoSuchUnit if not loaded (but any slice name loads)."""
        await self._retrying(self._job, name, "StopUnit", "ss", [name, mode], self.stop_timeout)

    async def stop_units(self, names: Sequence[str], window: int | None = None) -> list[SystemdError | None]:
        """Stop many units, at most `window` jobs in flight, each waited for; results as
        start_transient_units. Stops run side by side: N units whose processes ignore SIGTERM
        cost one stop timeout per window, not N."""
        todo = [(n, None) for n in names]
        return await self._bounded(todo, window or self.window,
                                   lambda n, _: self._job(n, "StopUnit", "ss", [n, "replace"], self.stop_timeout),
                                   lambda n, _: self._retrying(self._job, n, "StopUnit", "ss", [n, "replace"],
                                                               self.stop_timeout))

    async def kill_unit(self, name: str, who: str = "all", signal: int = 9) -> None:
        """KillUnit: send ``signal`` to the unit's processes (``who``: all, main, control); no job."""
        await self._retrying(self._call, MANAGER_PATH, MANAGER, "KillUnit", "ssi", [name, who, int(signal)], unit=name)

    async def attach_processes(self, name: str, pids: Sequence[int], subcgroup: str = "") -> None:
        """Move processes (PIDs in systemd's namespace) into a running unit with Delegate=yes."""
        await self._retrying(self._call, MANAGER_PATH, MANAGER, "AttachProcessesToUnit", "ssau",
                             [name, subcgroup, [int(p) for p in pids]], unit=name)

    async def reload(self) -> None:
        """daemon-reload; systemd replies once it is done. Transient units and their properties
        survive it (given a unit path with /run/systemd/transient, as sdqos.sandbox.units.UNIT_PATH has)."""
        await self._retrying(self._call, MANAGER_PATH, MANAGER, "Reload")

    async def enable_unit_files(self, files: Sequence[str], runtime: bool = False,
                                force: bool = False) -> list[tuple[str, str, str]]:
        """EnableUnitFiles: the (type, symlink, destination) changes made."""
        _, changes = await self._retrying(self._call, MANAGER_PATH, MANAGER, "EnableUnitFiles", "asbb",
                                          [list(files), runtime, force])
        return [tuple(c) for c in changes]  # type: ignore[misc]

    async def reset_failed_unit(self, name: str) -> None:
        await self._retrying(self._call, MANAGER_PATH, MANAGER, "ResetFailedUnit", "s", [name], unit=name)

    async def list_units_by_patterns(self, states: Sequence[str], patterns: Sequence[str]) -> list[UnitInfo]:
        """Loaded units matching shell-glob `patterns` and `states` (either empty: all)."""
        (rows,) = await self._retrying(self._call, MANAGER_PATH, MANAGER, "ListUnitsByPatterns", "asas",
                                       [list(states), list(patterns)])
        return [UnitInfo(*row) for row in rows]

    async def get_unit_processes(self, name: str) -> list[tuple[str, int, str]]:
        """(cgroup path, PID in systemd's PID namespace, command line) of each process of a unit."""
        (rows,) = await self._retrying(self._call, MANAGER_PATH, MANAGER, "GetUnitProcesses", "s", [name], unit=name)
        return [(c, int(p), cmd) for c, p, cmd in rows]

    async def version(self) -> tuple[int, str]:
        """(major, raw) from Manager.Version, e.g. (252, "252.38-1~deb12u1")."""
        raw = (await self.get_properties(MANAGER_PATH, MANAGER, ["Version"]))["Version"]
        m = re.match(r"\D*(\d+)", raw)
        return (int(m.group(1)) if m else 0), raw

    async def call_service(self, dest: str, path: str, iface: str, member: str, sig: str = "",
                           body: Sequence[Any] = (), *, repeatable: bool = False) -> list[Any]:
        """A call to another service on this bus (systemd-machined), with this connection's error
        mapping and timeout; retried across a lost bus only when ``repeatable`` (and then a service
        that is not there is waited for as systemd is: only for a service that must come back).
        Never starts the service (NO_AUTOSTART): one that is not running is a SystemdError
        (org.freedesktop.DBus.Error.ServiceUnknown)."""
        if repeatable:
            return await self._retrying(self._call, path, iface, member, sig, body, dest=dest)
        await self._ready()
        return await self._call(path, iface, member, sig, body, dest=dest)

    def variant_properties(self, properties: Mapping[str, Any], unit: str) -> list[list[Any]]:
        """Plain property values → a(sv), as StartTransientUnit takes them (for machined's CreateMachine)."""
        return self._props(properties, unit)

    async def get_unit(self, name: str) -> str:
        """Object path of a loaded unit (NoSuchUnit otherwise)."""
        return (await self._retrying(self._call, MANAGER_PATH, MANAGER, "GetUnit", "s", [name], unit=name))[0]

    async def load_unit(self, name: str) -> str:
        """Object path of a unit, loaded if needed (an unknown name gets load state not-found)."""
        return (await self._retrying(self._call, MANAGER_PATH, MANAGER, "LoadUnit", "s", [name], unit=name))[0]

    async def get_properties(self, unit: str, interface: str, names: Sequence[str] | None = None) -> dict[str, Any]:
        """Properties of `interface` of a unit (name or object path), all (names=None) or some.
        A name becomes its path without a round trip; systemd loads the unit if needed."""
        path = unit if unit.startswith("/") else unit_path(unit)
        return (await self._retrying(self._read, [(path, interface, names)], unit))[0]

    async def _read(self, reqs: Sequence[tuple[str, str, Sequence[str] | None]], unit: str | None = None) -> list[dict]:
        """(path, interface, names) requests through read_window pipelined calls, bounded as a whole
        by call_timeout: below GETALL_FROM names one Get each, else one GetAll, filtered."""
        calls: list[tuple[str, str, str, str, list[str]]] = []
        plan: list[tuple[int, list[str] | None]] = []
        for path, iface, names in reqs:
            plan.append((len(calls), None if names is None else list(names)))
            if names is None or len(names) >= GETALL_FROM:
                calls.append((path, PROPERTIES, "GetAll", "s", [iface]))
            else:
                calls.extend((path, PROPERTIES, "Get", "ss", [iface, n]) for n in names)
        out: list[Any] = [None] * len(calls)
        todo = iter(range(len(calls)))
        failed: list[Exception] = []

        async def worker() -> None:  # a few workers, not a task per call: half the client CPU
            for i in todo:
                if failed:
                    return
                try:
                    out[i] = (await self._call(*calls[i], unit=unit, timeout=False))[0]
                except Exception as e:
                    failed.append(e)
        epoch = self._epoch
        try:
            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(min(self.read_window, len(calls))))),
                                   self.call_timeout)
        except asyncio.TimeoutError:
            raise self._timed_out(epoch, f"reading {len(calls)} properties took over {self.call_timeout:g}s",
                                  unit) from None
        if failed:
            raise failed[0]
        result = []
        for i, names in plan:
            if calls[i][3] == "s":  # GetAll
                got = {k: v.value for k, v in out[i].items()}
                result.append(got if names is None else {n: got[n] for n in names if n in got})
            else:
                result.append({n: out[i + j].value for j, n in enumerate(names or ())})
        return result

    async def read_units(self, patterns: Sequence[str],
                         interfaces_props: Mapping[str, Sequence[str]]) -> dict[str, UnitState]:
        """Live state of the loaded units matching `patterns` (shell globs), e.g.
        ``read_units(["kubepods*"], {SLICE: ["CPUShares", "MemoryLimit"], UNIT: ["FragmentPath"]})``.

        One ListUnitsByPatterns, then, pipelined, per unit and applicable interface (``...Unit``, or
        the unit's own type: ``...Slice`` for *.slice) one GetAll, or a Get per name below
        GETALL_FROM names. Unit properties in the list rows (Description, states) cost no call.
        ControlGroup comes with the type interface; FragmentPath/Transient only when asked for
        under ``...Unit`` (a Get per unit; transient = FragmentPath under /run/systemd/transient/)."""
        return await self._retrying(self._read_units, list(patterns), interfaces_props)

    async def _read_units(self, patterns: list[str], interfaces_props: Mapping[str, Sequence[str]]) -> dict[str, UnitState]:
        (rows,) = await self._call(MANAGER_PATH, MANAGER, "ListUnitsByPatterns", "asas", [[], patterns])
        units, reqs, owners = {}, [], []
        word = _STATE_WORDS.setdefault  # (one string per state word, not three per unit: ~0.3 MB at 2000 units)
        for row in rows:
            u = units[row[0]] = UnitState(row[0], word(row[2], row[2]), word(row[3], row[3]), word(row[4], row[4]), row[6])
            kind = f"{SYSTEMD}.{u.name.rsplit('.', 1)[-1].capitalize()}"
            for iface, names in interfaces_props.items():
                if iface == UNIT:
                    listed = dict(zip(_LISTED, row))
                    u.props.update((n, listed[n]) for n in names if n in listed)
                    names = [n for n in names if n not in listed]
                elif iface == kind and kind.endswith(_CGROUP_KINDS):
                    names = list(dict.fromkeys([*names, "ControlGroup"]))
                else:
                    continue
                if names:
                    reqs.append((u.path, iface, names))
                    owners.append(u)
        del rows  # (each row's other fields go before the properties are read)
        for u, props in zip(owners, await self._read(reqs)):
            u.props.update(props)
        for u in units.values():
            u.fragment_path, u.control_group = u.props.get("FragmentPath"), u.props.get("ControlGroup")
            t = u.props.get("Transient", None if u.fragment_path is None else u.fragment_path.startswith(_TRANSIENT))
            u.transient = None if t is None else bool(t)
        return units


if TYPE_CHECKING:
    def _conforms(sd: Systemd) -> SystemdAPI:
        return sd  # mypy: the real client has every member of the protocol, with the same signatures
