"""Which live scope runs which container or VM, and the OOM scores of their processes.

The matching rules are pure (:mod:`sdqos.reconcile.scopes`); this module feeds them the processes
systemd lists and writes ``/proc/PID/oom_score_adj``, the one value systemd cannot set on a scope.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sdqos.errors import NoSuchUnit, SdqosError
from sdqos.host import cgroupfs, procfs
from sdqos.host.systemd import SystemdAPI
from sdqos.kube.naming import (
    MACHINE_SLICE,
    Owner,
    description,
    in_machine_tree,
    marked,
    owning_slice,
    parse_machine_scope,
)
from sdqos.plan.properties import PIDS, of_kind
from sdqos.plan.engine import Plan, UnitPlan
from sdqos.reconcile.compare import LiveUnit
from sdqos.reconcile.runtimes import Seen, row_of
from sdqos.reconcile.scopes import (
    LiveScope,
    annotation_hits,
    match_container,
    pods_by_slice,
    scopes_from_processes,
    vm_scope_for,
)


async def discover_scopes(sd: SystemdAPI, plan: Plan, live: dict[str, LiveUnit], *, machine: bool) -> dict[str, LiveScope]:
    """Every scope with processes below kubepods.slice (and machine.slice when ``machine``),
    from one GetUnitProcesses each: the cgroup path of each process names its scope."""
    rows: list[tuple[str, int, str]] = []
    if plan.root_slice in live and live[plan.root_slice].exists and _may_hold_processes(plan.root_slice):
        rows.extend(await sd.get_unit_processes(plan.root_slice))
    if machine and _may_hold_processes(MACHINE_SLICE):
        try:
            rows.extend(await sd.get_unit_processes(MACHINE_SLICE))
        except NoSuchUnit:
            pass
    return scopes_from_processes(rows)


def _may_hold_processes(slice_name: str) -> bool:
    """False when the kernel shows no process anywhere below the slice: GetUnitProcesses, which
    makes systemd walk every cgroup below it (~25 ms at 1000 pod slices), would list none."""
    return not cgroupfs.available() or cgroupfs.populated(cgroupfs.cgroup_of(slice_name, "")) is not False


@dataclass(slots=True)
class Binding:
    """A live scope and what it runs: whose OOM score its processes get."""

    owner: Owner  # a pod's container, or a VM
    oom_score_adj: int

    @property
    def pod(self) -> str | None:
        """ns/name, for a container."""
        return self.owner.pod_key

    @property
    def container(self) -> str | None:
        return self.owner.container


def bind_scopes(plan: Plan, scopes: dict[str, LiveScope], warnings: list[str], seen: Seen | None = None,
                names: dict[str, str] | None = None) -> tuple[dict[str, Binding], list[str], list[UnitPlan]]:
    """Match live scopes to containers and VMs (rules in sdqos.scopes). A matched scope that is
    not sdqos's own name gets a unit with the container's (VM's) values, so the diff tunes it like
    any other (``seen``: what the runtimes said runs; the plan is not edited: the units are returned, :mod:`sdqos.reconcile.desired` adds
    them). Returns the bindings, the unmatched scopes (a runtime's own scopes, podman's conmon, are
    neither) and those units."""
    seen = seen or Seen()
    bindings: dict[str, Binding] = {}
    unmatched: list[str] = []
    bound: list[UnitPlan] = []
    _bind_containers(plan, scopes, warnings, seen, bindings, unmatched, bound)
    machine = machine_scopes(scopes)
    claimed, left_alone = _bind_vms(plan, machine, warnings, seen, bindings, bound)
    for name in sorted(set(machine) - claimed - left_alone):
        if seen.helper(name):
            continue
        what = (names or {}).get(name)
        rt = row_of(name)
        if rt is not None and rt.misplaced:
            warnings.append(f"{name} in machine.slice is {what}, not a VM: left running, untouched, counted in the "
                            f"node budget ({rt.misplaced})")
        else:
            what = f" ({what})" if what else ""
            warnings.append(f"{name}{what} in machine.slice is not a VM in the config: left running, untouched, "
                            "counted in the node budget")
    return bindings, unmatched, bound


def _bind_containers(plan: Plan, scopes: dict[str, LiveScope], warnings: list[str], seen: Seen,
                     bindings: dict[str, Binding], unmatched: list[str], bound: list[UnitPlan]) -> None:
    """The scopes in pod slices: each one a container's (its own name, an ``sdqos.io/scopes``
    glob, what the runtime says runs in it) or unmatched; a glob that decides several scopes, or
    none, is warned about."""
    by_slice = pods_by_slice(plan)
    planned = {u.name: u for u in plan.units}
    by_glob: dict[tuple[str, str, str], list[str]] = {}  # (pod, container, glob) → scopes it decided
    seen_glob: dict[tuple[str, str, str], list[str]] = {}  # … → scopes it matched at all
    for name, scope in sorted(scopes.items()):
        pp = by_slice.get(owning_slice(scope.slice))
        if pp is None or seen.helper(name):
            continue
        own = {c.scope: c for c in pp.containers}
        hits = annotation_hits(name, pp) if name not in own else []
        for c_name, glob in hits:
            seen_glob.setdefault((pp.key, c_name, glob), []).append(name)
        if name in own:
            c = own[name]
        else:
            cname = match_container(scope, pp, seen.workload(scope))
            if cname is None:
                unmatched.append(name)
                continue
            if hits and hits[0][0] == cname:
                by_glob.setdefault((pp.key, *hits[0]), []).append(name)
            c = next(x for x in pp.containers if x.name == cname)
            base = planned[c.scope]
            pids = of_kind(PIDS, plan.cgroup)
            props = {k: v for k, v in c.properties.items() if k != pids}  # the runtime's pids limit stays
            bound.append(UnitPlan(name, scope.slice, "container", base.description, props, base.resources,
                                  owner=base.owner, create=False, why=base.why))
        bindings[name] = Binding(Owner.pod(pp.key, c.name), c.oom_score_adj)
    for (pod, container, glob), scope_names in sorted(by_glob.items()):
        if len(scope_names) > 1:
            warnings.append(f"pod {pod}: sdqos.io/scopes {container}={glob} matches {len(scope_names)} scopes "
                            f"({', '.join(scope_names)}); each gets {container}'s values: make the glob specific")
    for key, scope_names in sorted(seen_glob.items()):
        if key not in by_glob:
            warnings.append(f"pod {key[0]}: sdqos.io/scopes {key[1]}={key[2]} is shadowed by a more specific entry "
                            f"for every scope it matches ({', '.join(scope_names)})")


def _bind_vms(plan: Plan, machine: dict[str, LiveScope], warnings: list[str], seen: Seen,
              bindings: dict[str, Binding], bound: list[UnitPlan]) -> tuple[set[str], set[str]]:
    """Each declared VM's scope in machine.slice (its spec.scope, libvirt domain or pid file), or
    a warning why there is none or it is not claimed. Returns the scopes claimed and those left
    alone (someone else's ``machine-NAME.scope``)."""
    planned = {u.name for u in plan.units}
    claimed: set[str] = set()
    left_alone: set[str] = set()
    vm_of_scope = {vp.scope: vp.vm.name for vp in plan.vms if vp.scope}  # named in advance: planned
    for vp in plan.vms:
        dom = seen.by_name("libvirt", vp.vm.libvirt_domain) if vp.vm.libvirt_domain else None
        if vp.vm.pid_file:
            pid = read_pid_file(vp.vm.pid_file, warnings, vm=vp.vm.name)
        else:
            pid = dom.pid if dom is not None else None
        found = vm_scope_for(vp, machine, pid)
        if found is not None and dom is not None and dom.guest is not None:
            warnings.extend(guest_size_warnings(vp, dom.guest[0], dom.what))
        if found is None:
            elsewhere = procfs.systemd_cgroup_paths(pid) if pid is not None else None
            if elsewhere:
                warnings.append(f"VM {vp.vm.name} runs (PID {pid}) in {elsewhere[0]}, outside machine.slice: not "
                                "tuned and not counted there (start it in machine.slice, e.g. with sdqos run --vm)")
                continue
            where = f": no {vp.vm.scope} with processes in machine.slice" if vp.vm.scope else ""
            warnings.append(f"VM {vp.vm.name} is declared but not running{where}")
            continue
        located = vp.vm.scope or vp.vm.libvirt_domain or vp.vm.pid_file
        if not located and not marked(machine[found].description):
            # machine-<name>.scope made by someone else (machined for a container, say): never
            # claim it by name alone.
            warnings.append(f"VM {vp.vm.name}: {found} exists but was not started by sdqos; left alone"
                            " (set spec.scope to claim it)")
            left_alone.add(found)
            continue
        other = vm_of_scope.setdefault(found, vp.vm.name)
        if other != vp.vm.name:  # two definitions, one workload: never tune (or stop) one as the other
            warnings.append(f"VM {vp.vm.name} is found in {found}, which is VM {other}'s: not tuned, counted or "
                            f"stopped as {vp.vm.name} (one scope runs one VM)")
            continue
        claimed.add(found)
        if found not in planned:
            owner = Owner.vm(vp.vm.name)
            bound.append(UnitPlan(found, machine[found].slice, "vm", description("vm", owner, vp.qos),
                                  dict(vp.properties), vp.resources, owner=owner, create=False, why=vp.why))
        bindings[found] = Binding(Owner.vm(vp.vm.name), vp.oom_score_adj)
    return claimed, left_alone


def guest_size_warnings(vp, ram: int, what: str) -> list[str]:
    """A guest with more RAM than its VM's limits.memory is OOM-killed once it uses that RAM."""
    from sdqos.humanize import size
    from sdqos.kube.qos import value

    declared = value(vp.vm.limits.get("memory"))
    if ram and declared and ram > declared:
        return [f"VM {vp.vm.name}: {what} has {size(ram)} of RAM but limits.memory is {size(declared)}: the guest "
                f"is OOM-killed when it uses its RAM; set limits.memory to at least {size(ram)}"]
    return []


def machine_scopes(scopes: dict[str, LiveScope]) -> dict[str, LiveScope]:
    """The scopes running anywhere below machine.slice (libvirt partitions are sub-slices)."""
    return {n: s for n, s in scopes.items() if in_machine_tree(owning_slice(s.slice))}


def machine_names(machine: dict[str, LiveScope], seen: Seen | None = None) -> dict[str, str]:
    """What each scope in machine.slice is, in words: what a runtime records there (a libvirt
    domain by its QEMU's PID, a podman container, a machine machined knows, with its class and who
    registered it), else what the scope's name says."""
    seen = seen or Seen()
    out = {}
    for name, scope in machine.items():
        what = seen.describe(scope)
        if what is not None:
            out[name] = what
        elif (mname := parse_machine_scope(name)) is not None:
            out[name] = f"VM {mname}, started by sdqos" if marked(scope.description) else f"machine {mname}"
    return out


def apply_oom_scores(bindings: dict[str, Binding], scopes: dict[str, LiveScope], warnings: list[str]) -> int:
    """Write each bound scope's processes' oom_score_adj where it differs. A process that exited
    meanwhile is fine; a refused negative value (no CAP_SYS_RESOURCE) is a warning; a PID that is
    not in the scope's cgroup as we see it (another PID namespace than systemd's) is never written."""
    adjusted, elsewhere, seen = 0, 0, 0
    for name, b in bindings.items():
        scope = scopes.get(name)
        if scope is None:
            continue
        denied = []
        for pid in scope.pids:
            r = procfs.write_oom_score_adj(pid, b.oom_score_adj, cgroup=scope.cgroup)
            seen += 1
            if r.outcome == procfs.SET:
                adjusted += 1
            elif r.outcome == procfs.DENIED:
                denied.append(pid)
            elif r.outcome == procfs.ELSEWHERE:
                elsewhere += 1
        if denied:
            warnings.append(
                f"{b.owner}: the kernel refused oom_score_adj {b.oom_score_adj} for PID "
                f"{', '.join(map(str, denied))} (lowering it needs CAP_SYS_RESOURCE)"
            )
    if seen and elsewhere == seen:
        warnings.append("OOM scores not written: this sdqos does not share systemd's PID namespace")
    return adjusted


def read_pid_file(path: str | None, warnings: list[str] | None = None, *, vm: str | None = None,
                  proc: Path = procfs.PROC) -> int | None:
    """The PID in VM ``vm``'s pid file, trusted as systemd trusts a PIDFile=: a regular file (not
    through a symlink) owned by root (or us) and not writable by group or others (anyone who can
    write it could point sdqos at any process); and checked as libvirt's record is
    (host/libvirt.py): a pid file outlives its process when that is killed, and its PID may then be
    another machine's. So the PID counts only while its process started before the file was last
    written, and is not a QEMU running another guest (``-name``). Else None, with a warning saying
    why (the process's scope is then neither tuned, counted nor stopped as the VM)."""
    from sdqos.host.libvirt import process_stale_reason

    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # not there (the VM is not running) or a symlink
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        why = ("is not a regular file" if not stat.S_ISREG(st.st_mode)
               else f"is owned by uid {st.st_uid}, not root" if st.st_uid not in (0, os.geteuid())
               else f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
               if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) else None)
        if why:
            if warnings is not None:
                warnings.append(f"pid file {path} {why}: not trusted, ignored")
            return None
        try:
            pid = int(fh.read(64).split()[0])
        except (OSError, ValueError, IndexError):
            return None
    if pid <= 0:
        return None
    stale = process_stale_reason(pid, vm, st.st_mtime, proc, qemu=False)
    if stale is not None:
        if warnings is not None and stale != "no such process":  # a VM not running: sync says so
            warnings.append(f"pid file {path} names PID {pid} for VM {vm}, but {stale} (the VM gone, its PID "
                            "reused?): ignored, and that process's scope is not tuned, counted or stopped as the VM")
        return None
    return pid
