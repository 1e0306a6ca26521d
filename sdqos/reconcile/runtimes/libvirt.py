"""libvirt as a runtime row. A QEMU domain runs in ``machine-qemu\\x2d<id>\\x2d<name>.scope``
(machine.slice, or a partition's sub-slice); which domain a scope runs is libvirt's record
(:mod:`sdqos.host.libvirt`: a domain whose PID is its QEMU, checked as that module checks it), so
a scope whatever machined made of the name is found by its PID. Stopped through libvirt, as
libvirt's own graceful/forced pair: ``virsh destroy`` at once for a hard eviction (grace ≤ 1 s),
``virsh shutdown`` (the guest's ACPI power button) then ``destroy`` once the grace period is over
for a soft one — so libvirt records the domain destroyed, not crashed under it, and machined's
record goes with it. When virsh cannot do it, the scope is stopped instead and the line says so.
Its values are its scope's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from sdqos.kube.naming import parse_libvirt_scope
from sdqos.reconcile.runtimes.base import LiveScope, ScopeRuntime, Workload, kill_scopes, stop_each, wait_gone

if TYPE_CHECKING:
    from sdqos.host.libvirt import Domain
    from sdqos.host.systemd import SystemdAPI
    from sdqos.reconcile.memo import Memo

Known = dict[str, "Domain"]  # running domains by name


class Libvirt(ScopeRuntime):
    name = "libvirt"

    def __init__(self, run_dir: Path | None = None, proc: Path = Path("/proc")):
        """``run_dir``: libvirt's state dir (None: :data:`sdqos.host.libvirt.RUN_DIR`)."""
        self.run_dir, self.proc = run_dir, proc

    def claims(self, scope: str) -> bool:
        return parse_libvirt_scope(scope) is not None

    def named_by(self, scope: str) -> str | None:
        parsed = parse_libvirt_scope(scope)
        return parsed[1] if parsed else None

    async def observe(self, sd: SystemdAPI, scopes: dict[str, LiveScope], machine: bool, memo: Memo | None,
                      warnings: list[str], errors: list[str]) -> Known:
        return self.domains(memo, warnings) if machine else {}

    def domains(self, memo: Memo | None, warnings: list[str]) -> Known:
        """libvirt's running domains, reused (``memo``) while its state dir holds the same files
        (name, inode, size, mtime, ctime: libvirtd rewrites a status file on every change, a chmod
        or chown moves the ctime) and each kept domain's PID is still its QEMU (checked again every
        time, as a fresh read checks it), with the warnings reading them gave."""
        from sdqos.host import libvirt
        from sdqos.reconcile.memo import identity

        run_dir = self.run_dir or libvirt.RUN_DIR
        if memo is None:
            return libvirt.running_domains(run_dir, warnings=warnings, proc=self.proc)
        key = identity(run_dir)
        got = memo.reuse(self.name, key)
        if got is not None:
            try:
                out = {d["name"]: libvirt.Domain(**d) for d in got["domains"]}
                written = {e[0]: e[3] / 1e9 for e in key if len(e) == 5}
                if all(f"{n}.xml" in written and libvirt.stale_reason(d, written[f"{n}.xml"], self.proc) is None
                       for n, d in out.items()):
                    warnings.extend(str(w) for w in got["warnings"])
                    return out
            except (KeyError, TypeError, ValueError):
                pass
        seen: list[str] = []
        out = libvirt.running_domains(run_dir, warnings=seen, proc=self.proc)
        warnings.extend(seen)
        memo.keep(self.name, key, {"domains": [dataclasses.asdict(d) for d in out.values()], "warnings": seen})
        return out

    def workload(self, scope: LiveScope, known: Known | None) -> Workload | None:
        dom = next((d for d in (known or {}).values() if d.pid in scope.pids), None)
        return _workload(dom, scope.name) if dom is not None else None

    def describe(self, scope: LiveScope, known: Known | None) -> str | None:
        w = self.workload(scope, known)
        return w.what if w is not None else None

    def by_name(self, name: str, known: Known | None) -> Workload | None:
        dom = (known or {}).get(name)
        return _workload(dom, "") if dom is not None else None

    async def stop(self, sd: SystemdAPI, groups: list[tuple[list[Workload], int]],
                   said: list[str] | None = None) -> list[Exception | None]:
        return await stop_each(groups, lambda w, grace: stop_domain(sd, w, grace), said)


async def stop_domain(sd: SystemdAPI, w: Workload, grace: int) -> str:
    """Stop one domain through libvirt (by its UUID: :func:`sdqos.host.libvirt.virsh_argv`), within
    ``grace`` seconds; its scope as a scope when virsh cannot (never leave the node short). Returns
    how, in words."""
    import asyncio
    import time

    from sdqos.errors import HostError
    from sdqos.host import libvirt

    t0 = time.monotonic()
    if w.ref is None:
        await kill_scopes(sd, list(w.scopes), grace)
        return f"{w.what}: libvirt's record has no UUID to stop it by; its scope was stopped instead"
    verbs: list[str] = []
    try:
        if grace > 1:  # the guest's own shutdown, for the grace period
            await asyncio.to_thread(libvirt.virsh, "shutdown", w.ref)
            verbs.append("virsh shutdown")
            if await wait_gone(sd, list(w.scopes), grace - (time.monotonic() - t0)):
                await asyncio.to_thread(libvirt.virsh, "destroy", w.ref)
                verbs.append(f"destroy after {grace}s")
        else:
            await asyncio.to_thread(libvirt.virsh, "destroy", w.ref)
            verbs.append("virsh destroy")
    except HostError as exc:
        if not await wait_gone(sd, list(w.scopes), 0):  # it ended meanwhile ("domain is not running")
            return f"{w.what}: {', '.join(verbs) or 'off'} ({time.monotonic() - t0:.1f}s)"
        await kill_scopes(sd, list(w.scopes), 0 if verbs else grace)
        return f"{w.what}: {exc}; its scope was stopped instead"
    left = await wait_gone(sd, list(w.scopes), 1)  # libvirt has let QEMU go; systemd sees the scope end
    if left:
        await kill_scopes(sd, left, 0)
        return f"{w.what}: {', '.join(verbs)}, but its scope still had processes: stopped as a scope"
    return f"{w.what}: {', '.join(verbs)} ({time.monotonic() - t0:.1f}s)"


def _workload(dom: Domain, scope: str) -> Workload:
    return Workload("libvirt", dom.name, scope, pid=dom.pid, guest=(dom.memory, dom.vcpus),
                    what=f"libvirt domain {dom.name}", ref=dom.uuid)


ROW = Libvirt()
