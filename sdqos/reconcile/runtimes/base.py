"""What every runtime row is: the :class:`Runtime` interface, the :class:`Workload` record, and
stopping a scope through systemd (a VM of no runtime's, and what the VM rows fall back to when
their runtime cannot stop it).

A row knows one runtime's scopes by name, asks the runtime (through its host adapter, the only
module that talks to it) what runs there, and stops or updates what sdqos may. The callers never
branch on a runtime: they go through the table in :mod:`sdqos.reconcile.runtimes`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

from sdqos.errors import NoSuchUnit

if TYPE_CHECKING:
    from sdqos.host.systemd import SystemdAPI
    from sdqos.plan.engine import ContainerPlan
    from sdqos.reconcile.memo import Memo


@dataclass(slots=True)
class LiveScope:
    """A scope with processes, found below a slice of the tree (``sdqos.reconcile.scopes`` finds them;
    the rows read them)."""

    name: str
    slice: str  # the slice it sits in directly
    cgroup: str  # its ControlGroup path, e.g. /kubepods.slice/…/x.scope
    pids: list[int] = field(default_factory=list)
    description: str = ""


class Workload:
    """One thing a runtime runs, as the runtime records it (never guessed from a scope's name).

    A plain class, not a dataclass: every sync process makes the class, and a dataclass's generated
    methods cost more to make than the rest of this package's import."""

    __slots__ = ("runtime", "name", "scope", "helpers", "pod_uid", "container", "managed", "grace_s", "pid",
                 "guest", "what", "ref")

    def __init__(self, runtime: str, name: str, scope: str, helpers: tuple[str, ...] = (), *,
                 pod_uid: str | None = None, container: str | None = None, managed: bool = False,
                 grace_s: int | None = None, pid: int | None = None, guest: tuple[int, int] | None = None,
                 what: str = "", ref: str | None = None):
        self.runtime = runtime  # the row's name ("": a scope of no runtime, sdqos's own)
        self.name = name  # the runtime's own name for it: podman's container name, a domain, a machine
        self.scope = scope  # the scope it runs in
        self.helpers = helpers  # scopes of the runtime's that go with it (podman's conmon)
        self.pod_uid = pod_uid  # the pod the runtime says it belongs to …
        self.container = container  # … and the container there
        self.managed = managed  # sdqos started it through the runtime: sdqos's to stop and update
        self.grace_s = grace_s  # its pod's grace period, as the runtime keeps it
        self.pid = pid  # its main process (a VM's QEMU)
        self.guest = guest  # a VM's (RAM bytes, vCPUs): what it can hold at most
        self.what = what  # in words, for reports: "podman container web1", "libvirt domain db"
        self.ref = ref  # what the runtime is told to stop, when not the name (a libvirt domain's UUID)

    @property
    def scopes(self) -> tuple[str, ...]:
        return (self.scope, *self.helpers)

    def __repr__(self) -> str:
        return f"Workload({self.runtime!r}, {self.name!r}, {self.scope!r})"


class Runtime(Protocol):
    """One row of the runtime table."""

    name: str
    inner_cgroup: str | None  # where the runtime keeps a workload's limits below its scope (crun: container)
    misplaced: str | None  # advice for its workload found in machine.slice that is not a VM

    def claims(self, scope: str) -> bool:
        """Whether a scope of this name is one this runtime makes (a workload's or its own)."""

    def named_by(self, scope: str) -> str | None:
        """The workload name a scope's name gives (libvirt: the domain), without asking the runtime
        (the name itself is parsed in sdqos/kube/naming.py)."""

    async def observe(self, sd: SystemdAPI, scopes: dict[str, LiveScope], machine: bool, memo: Memo | None,
                      warnings: list[str], errors: list[str]) -> Any:
        """What the runtime says runs (asked only when one of its scopes may run; ``memo``: the last
        sync's answer, reused while unchanged); None when it could not be asked (then its scopes
        are neither tuned nor stopped)."""

    def workload(self, scope: LiveScope, known: Any) -> Workload | None:
        """The workload a live scope runs, by the runtime's record."""

    def describe(self, scope: LiveScope, known: Any) -> str | None:
        """What a scope of this runtime runs, in words (None: not this runtime's, or not known)."""

    def by_name(self, name: str, known: Any) -> Workload | None:
        """The running workload the runtime calls ``name`` (a VM's ``spec.libvirt.domain``)."""

    def helper(self, scope: str, known: Any) -> bool:
        """A scope the runtime keeps for itself (conmon, a podman pod's infra container): never a
        container's or a VM's, never foreign."""

    def pod_workloads(self, uids: set[str], seen: bool) -> dict[str, list[Workload]]:
        """sdqos's own workloads (running or exited) of the pods ``uids``, asking the runtime;
        ``seen``: some ran this sync (then a runtime that cannot be asked is an error)."""

    async def stop(self, sd: SystemdAPI, groups: list[tuple[list[Workload], int]],
                   said: list[str] | None = None) -> list[Exception | None]:
        """Stop and remove workloads, each group with its grace period (SIGTERM, SIGKILL after it),
        the groups side by side; one result per group (None: done). ``said`` gets a line per
        workload on how it was stopped, where that is worth a record (eviction's)."""

    def update(self, workload: Workload, container: ContainerPlan, cgroup: str) -> None:
        """Bring a running workload to a container's values where the scope's do not reach."""


async def scope_alive(sd: SystemdAPI, scope: str) -> bool:
    """Whether a scope still has a process (a scope whose processes all ended is gone)."""
    try:
        return bool(await sd.get_unit_processes(scope))
    except NoSuchUnit:
        return False


async def wait_gone(sd: SystemdAPI, scopes: list[str], seconds: float) -> list[str]:
    """Wait up to ``seconds`` for the scopes' processes to end; the scopes that still have some."""
    import asyncio  # loaded by whoever stops a scope; the table and the plan's readers need not load it

    deadline = time.monotonic() + seconds
    left = [s for s in scopes if await scope_alive(sd, s)]
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        left = [s for s in left if await scope_alive(sd, s)]
    return left


async def kill_scopes(sd: SystemdAPI, scopes: list[str], grace: int) -> None:
    """SIGTERM to every process of the scopes, SIGKILL to what is left after ``grace`` seconds
    (the runtime's stop with a timeout, as kubelet's killPodNow asks it), then StopUnit."""
    async def kill(s: str, signal: int) -> None:
        try:
            await sd.kill_unit(s, "all", signal)
        except NoSuchUnit:
            pass

    for s in scopes:
        await kill(s, 15)
    for s in await wait_gone(sd, scopes, grace):
        await kill(s, 9)
    errors = await sd.stop_units(scopes)
    for e in errors:
        if e is not None and not isinstance(e, NoSuchUnit):
            raise e


async def stop_each(groups: list[tuple[list[Workload], int]], one: Callable[[Workload, int], Awaitable[str]],
                    said: list[str] | None) -> list[Exception | None]:
    """A row's stop that goes through its runtime one workload at a time (libvirt, machined):
    ``one(workload, grace)`` stops it and says how; one result per group, as Runtime.stop gives."""
    out: list[Exception | None] = []
    for workloads, grace in groups:
        try:
            for w in workloads:
                line = await one(w, grace)
                if said is not None:
                    said.append(line)
            out.append(None)
        except Exception as exc:  # noqa: BLE001 - one result per group, as the caller reports it
            out.append(exc)
    return out


class ScopeRuntime:
    """What the VM rows share: they hold no pod's containers and take no container values; a
    workload stops as a scope (SIGTERM, SIGKILL after the grace period, StopUnit) unless the row
    stops it through its runtime (libvirt, machined do)."""

    name = ""
    inner_cgroup: str | None = None
    misplaced: str | None = None

    def helper(self, scope: str, known: Any) -> bool:
        return False

    def pod_workloads(self, uids: set[str], seen: bool) -> dict[str, list[Workload]]:
        return {}

    async def stop(self, sd: SystemdAPI, groups: list[tuple[list[Workload], int]],
                   said: list[str] | None = None) -> list[Exception | None]:
        out: list[Exception | None] = []
        for workloads, grace in groups:
            try:
                await kill_scopes(sd, [s for w in workloads for s in w.scopes], grace)
                out.append(None)
            except Exception as exc:  # noqa: BLE001 - one result per group, as the caller reports it
                out.append(exc)
        return out

    def update(self, workload: Workload, container: ContainerPlan, cgroup: str) -> None:
        return None  # a VM's values are its scope's: systemd holds them
