"""The runtimes sdqos meets in the tree, as rows of one table: podman, libvirt, systemd-machined.

Each row (:class:`~sdqos.reconcile.runtimes.base.Runtime`, one module per runtime) says which
scopes are the runtime's, which of them it keeps for itself (podman's conmon, a podman pod's
infra container), what runs in each by the runtime's own record (:class:`Workload`: identity and
ownership), how to stop a workload with a grace period and how to update its values. Its host
adapter (sdqos/host/podman.py, libvirt.py, machined.py) stays the only code that talks to the
runtime. Binding, sync's removal and update of containers, eviction, ``run --vm``'s check for a
machine another runtime runs and the memo of answers go through this table; none of them branches on a runtime. (Scope names are
made and parsed in sdqos/kube/naming.py; a row says which of them are its runtime's.) Adding one:
docs/architecture.md, "Adding a runtime".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sdqos.reconcile.runtimes import libvirt, machined, podman
from sdqos.reconcile.runtimes.base import LiveScope, Runtime, Workload, kill_scopes

if TYPE_CHECKING:
    from sdqos.host.systemd import SystemdAPI
    from sdqos.reconcile.memo import Memo

# In the order a scope's name is tried: libvirt's machine-qemu… before machined's machine-….
TABLE: tuple[Runtime, ...] = (libvirt.ROW, podman.ROW, machined.ROW)


def row(name: str) -> Runtime | None:
    return next((r for r in TABLE if r.name == name), None)


def row_of(scope: str) -> Runtime | None:
    """The runtime whose scope this name is, by the name alone."""
    return next((r for r in TABLE if r.claims(scope)), None)


class Seen:
    """What each runtime said in one observation: row name → its answer (None: it could not be
    asked). Empty: nothing asked (every scope is then nobody's)."""

    __slots__ = ("known",)

    def __init__(self, known: dict[str, Any] | None = None):
        self.known = known if known is not None else {}

    def unsure(self, scopes: dict[str, LiveScope]) -> frozenset[str]:
        """Scopes of a runtime that could not be asked: kept as they are, neither tuned nor stopped."""
        out = set()
        for r in TABLE:
            if r.name in self.known and self.known[r.name] is None:
                out |= {n for n in scopes if r.claims(n)}
        return frozenset(out)

    def workload(self, scope: LiveScope) -> Workload | None:
        """What a live scope runs, by the first runtime that records it."""
        for r in TABLE:
            w = r.workload(scope, self.known.get(r.name))
            if w is not None:
                return w
        return None

    def helper(self, scope: str) -> bool:
        """A runtime's own scope (conmon, an infra container): never a container's, never foreign."""
        return any(r.helper(scope, self.known.get(r.name)) for r in TABLE)

    def describe(self, scope: LiveScope) -> str | None:
        for r in TABLE:
            what = r.describe(scope, self.known.get(r.name))
            if what is not None:
                return what
        return None

    def by_name(self, runtime: str, name: str) -> Workload | None:
        r = row(runtime)
        return r.by_name(name, self.known.get(runtime)) if r is not None else None

    def managed(self, scopes: dict[str, LiveScope]) -> dict[str, Workload]:
        """Scopes (with their runtime's helpers: conmon) of workloads sdqos started through a runtime."""
        out = {}
        for name, sc in scopes.items():
            r = row_of(name)
            w = r.workload(sc, self.known.get(r.name)) if r is not None else None
            if w is not None and w.managed:
                out[name] = w
        return out


async def observe(sd: SystemdAPI, scopes: dict[str, LiveScope], machine: bool, memo: Memo | None,
                  warnings: list[str], errors: list[str]) -> Seen:
    """Ask each runtime what runs (only where one of its scopes may: ``machine``, something runs in
    machine.slice), through ``memo`` where it keeps the last answer."""
    return Seen({r.name: await r.observe(sd, scopes, machine, memo, warnings, errors) for r in TABLE})


async def stop(sd: SystemdAPI, workloads: list[Workload], grace: int, said: list[str] | None = None) -> None:
    """Stop workloads through the runtimes that run them, each with ``grace`` seconds between
    SIGTERM and SIGKILL; a workload of no runtime (a scope sdqos made) as a scope. ``said``: how,
    a line per workload where a row says it (the VM rows). The first failure is raised once all
    were tried."""
    failed: list[Exception] = []
    for r in TABLE:
        mine = [w for w in workloads if w.runtime == r.name]
        if mine:
            failed += [e for e in await r.stop(sd, [(mine, grace)], said) if e is not None]
    rest = [s for w in workloads if row(w.runtime) is None for s in w.scopes]
    if rest:
        await kill_scopes(sd, rest, grace)
    if failed:
        raise failed[0]


__all__ = ["TABLE", "Runtime", "Seen", "Workload", "kill_scopes", "observe", "row", "row_of", "stop"]
