"""systemd-machined as a runtime row: a machine registered there (a VM ``sdqos run --vm`` started,
an nspawn container, …) runs in ``machine-<name>.scope``; which machine a scope runs is machined's
record (``ListMachines``, :mod:`sdqos.host.machined`). Stopped through machined, so that its
record goes with it (``machinectl list`` no longer shows it): ``TerminateMachine`` for a hard
eviction (grace ≤ 1 s), ``KillMachine`` SIGTERM then ``TerminateMachine`` once the grace period is
over for a soft one; ``KillMachine`` SIGKILL for what outlives the grace period (machined's stop is
systemd's, which waits the scope's stop timeout, 90 s, before it kills). When machined cannot do
it, the scope is stopped instead and the line says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from sdqos.errors import SdqosError
from sdqos.kube.naming import marked, parse_machine_scope
from sdqos.reconcile.runtimes.base import LiveScope, ScopeRuntime, Workload, kill_scopes, stop_each, wait_gone

if TYPE_CHECKING:
    from sdqos.host.machined import Machine
    from sdqos.host.systemd import SystemdAPI
    from sdqos.reconcile.memo import Memo

Known = list["Machine"]


class Machined(ScopeRuntime):
    name = "machined"

    def __init__(self, state_dir: str | None = None):
        """``state_dir``: where machined keeps a file per machine (None: the host's)."""
        self.state_dir = state_dir

    def claims(self, scope: str) -> bool:
        return parse_machine_scope(scope) is not None

    def named_by(self, scope: str) -> str | None:
        return parse_machine_scope(scope)

    async def observe(self, sd: SystemdAPI, scopes: dict[str, LiveScope], machine: bool, memo: Memo | None,
                      warnings: list[str], errors: list[str]) -> Known:
        if not machine:
            return []
        return await self.machines(memo, lambda: _ask(sd, warnings))

    async def machines(self, memo: Memo | None, ask: Callable[[], Awaitable[Known]]) -> Known:
        """``ask``'s answer, reused (``memo``) while machined's state dir holds the same files (a file
        per machine), only where this process sees PID 1's /run; a failed or empty answer is not kept."""
        import os

        from sdqos.host import cgroupfs
        from sdqos.host.inputs import MACHINED_STATE
        from sdqos.host.machined import Machine
        from sdqos.reconcile.memo import identity

        state_dir = self.state_dir or MACHINED_STATE
        if memo is None or not os.path.isdir(state_dir) or not cgroupfs.available():
            return await ask()  # machined's state is not where this process looks
        key = identity(state_dir)
        got = memo.reuse(self.name, key)
        if got is not None:
            try:
                return [Machine(*m) for m in got["machines"]]
            except (KeyError, TypeError):
                pass
        out = await ask()
        if out:
            memo.keep(self.name, key, {"machines": [[m.name, m.cls, m.service] for m in out]})
        return out

    def workload(self, scope: LiveScope, known: Known | None) -> Workload | None:
        m = next((m for m in known or () if m.scope == scope.name), None)
        return _workload(m) if m is not None else None

    def describe(self, scope: LiveScope, known: Known | None) -> str | None:
        w = self.workload(scope, known)
        return w.what if w is not None and not marked(scope.description) else None  # (a VM sdqos started)

    def by_name(self, name: str, known: Known | None) -> Workload | None:
        m = next((m for m in known or () if m.name == name), None)
        return _workload(m) if m is not None else None


    async def stop(self, sd: SystemdAPI, groups: list[tuple[list[Workload], int]],
                   said: list[str] | None = None) -> list[Exception | None]:
        return await stop_each(groups, lambda w, grace: stop_machine(sd, w, grace), said)


async def stop_machine(sd: SystemdAPI, w: Workload, grace: int) -> str:
    """Stop one machine through machined within ``grace`` seconds (its scope as a scope when
    machined cannot: never leave the node short). Returns how, in words."""
    import time

    from sdqos.host import machined

    t0 = time.monotonic()
    scopes = list(w.scopes)
    calls: list[str] = []
    try:
        if grace > 1:
            await machined.kill_machine(sd, w.name, 15)
            calls.append("KillMachine SIGTERM")
            if await wait_gone(sd, scopes, grace):
                await machined.kill_machine(sd, w.name, 9)
                calls.append(f"SIGKILL after {grace}s")
            if await machined.terminate_machine(sd, w.name):  # False: it ended, machined dropped it
                calls.append("TerminateMachine")
        else:
            await machined.terminate_machine(sd, w.name)
            calls.append("TerminateMachine")
            if await wait_gone(sd, scopes, grace):
                await machined.kill_machine(sd, w.name, 9)
                calls.append(f"KillMachine SIGKILL after {grace}s")
    except SdqosError as exc:
        await kill_scopes(sd, scopes, 0 if calls else grace)
        return f"{w.what}: machined failed ({exc}); its scope was stopped instead"
    left = await wait_gone(sd, scopes, 1)
    if left:
        await kill_scopes(sd, left, 0)
        return f"{w.what}: {', '.join(calls)}, but its scope still had processes: stopped as a scope"
    return f"{w.what}: {', '.join(calls)} ({time.monotonic() - t0:.1f}s)"


def _workload(m: Machine) -> Workload:
    return Workload("machined", m.name, m.scope,
                    what=f"{'VM' if m.cls == 'vm' else m.cls} {m.name} (machined, registered by {m.service})")


async def _ask(sd: SystemdAPI, warnings: list[str]) -> Known:
    """The machines systemd-machined knows (none when it does not run)."""
    from sdqos.host import machined

    try:
        return await machined.list_machines(sd) or []
    except SdqosError as exc:
        warnings.append(f"cannot ask systemd-machined which machines run: {exc}")
        return []


ROW = Machined()
