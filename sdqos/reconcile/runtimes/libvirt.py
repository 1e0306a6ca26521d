"""libvirt as a runtime row. A QEMU domain runs in ``machine-qemu\\x2d<id>\\x2d<name>.scope``
(machine.slice, or a partition's sub-slice); which domain a scope runs is libvirt's record
(:mod:`sdqos.host.libvirt`: a domain whose PID is its QEMU, checked as that module checks it), so
a scope whatever machined made of the name is found by its PID. Stopped as a scope (SIGTERM,
SIGKILL after the grace period, StopUnit); its values are its scope's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from sdqos.kube.naming import parse_libvirt_scope
from sdqos.reconcile.runtimes.base import ScopeRuntime, Workload

if TYPE_CHECKING:
    from sdqos.host.libvirt import Domain
    from sdqos.host.systemd import SystemdAPI
    from sdqos.reconcile.memo import Memo
    from sdqos.reconcile.scopes import LiveScope

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


def _workload(dom: Domain, scope: str) -> Workload:
    return Workload("libvirt", dom.name, scope, pid=dom.pid, guest=(dom.memory, dom.vcpus),
                    what=f"libvirt domain {dom.name}")


ROW = Libvirt()
