"""``sdqos run`` and ``sdqos adopt``: put processes into a container's (or VM's) scope.

``run`` works the way ``systemd-run --scope`` does: this process has a transient scope made
holding its own PID, sets its own ``oom_score_adj`` (inherited by everything it starts) and then
*becomes* the command with ``exec`` — so the command's exit status and signals are its own, and
argv reaches it untouched, no shell involved.

``adopt`` moves processes that are already running (started by anything) into the scope: a new
scope is created around them, or they are attached to the running one.

This module finds the target and checks it; it writes no unit value. The scope (and the pod
slice and tiers above it when missing) is made by the narrow pass through the one writer, the
diff and apply (:class:`Target.launch` → :class:`sdqos.reconcile.sync.Narrow`).
"""

from __future__ import annotations

import os
import re

from dataclasses import dataclass

from sdqos.errors import InvalidInput, NotAdmitted, ScopeBusy
from sdqos.humanize import size
from sdqos.host import cgroupfs, procfs
from sdqos.host.systemd import SCOPE, UNIT, SystemdAPI
from sdqos.kube import admission
from sdqos.kube.naming import (
    MACHINE_SLICE,
    Owner,
    description,
    machine_scope,
    marked,
    parse_container_scope,
    scope_maker,
)
from sdqos.plan.engine import Plan, PodPlan, UnitPlan
from sdqos.plan.creation import grace_period_us
from sdqos.reconcile import runtimes
from sdqos.reconcile.diff import Launch


@dataclass
class Target:
    """Where processes go: the scope unit, the slices above it, and the OOM score they get."""

    unit: UnitPlan
    ancestors: list[UnitPlan]  # top-down, only units sdqos may create
    oom_score_adj: int
    label: str
    stop_timeout_us: int | None = None  # SIGTERM → SIGKILL when the scope is stopped (a pod's grace period)
    machine: str | None = None  # a VM: registered with systemd-machined under this name when it runs

    def launch(self, pids: list[int], *, replace: bool = False) -> Launch:
        """What the narrow pass needs to create this scope around ``pids`` (apply makes it, after
        the slices above it; :class:`sdqos.reconcile.sync.Narrow`)."""
        return Launch(self.unit, tuple(pids), self.label, replace, self.stop_timeout_us, self.machine)


def find_pod(plan: Plan, pod_ref: str) -> PodPlan:
    """POD as the commands take it: namespace/name, or name when only one namespace has it."""
    matches = [p for p in plan.pods if p.key == pod_ref or ("/" not in pod_ref and p.name == pod_ref)]
    if not matches:
        raise InvalidInput(f"no pod {pod_ref!r} in the config")
    if len(matches) > 1:
        raise InvalidInput(f"pod name {pod_ref!r} is ambiguous: " + ", ".join(p.key for p in matches) + "; use namespace/name")
    return matches[0]


def container_target(plan: Plan, pod_ref: str, container: str) -> Target:
    """POD (namespace/name, or name when unique) and CONTAINER → its scope and ancestors."""
    pp = find_pod(plan, pod_ref)
    c = next((c for c in pp.containers if c.name == container), None)
    if c is None:
        names = ", ".join(x.name for x in pp.containers)
        raise InvalidInput(f"pod {pp.key} has no container {container!r} (it has: {names})")
    unit = plan.unit(c.scope)
    assert unit is not None
    return Target(unit, ancestors(plan, unit.slice), c.oom_score_adj, f"pod {pp.key} container {c.name}",
                  grace_period_us(pp.grace_period))


def vm_target(plan: Plan, name: str) -> Target:
    """A declared VM → ``machine-<escaped name>.scope`` in machine.slice (machined's naming)."""
    vp = next((v for v in plan.vms if v.vm.name == name), None)
    if vp is None:
        raise InvalidInput(f"no VM {name!r} in the config (vms/*.yaml)")
    if vp.vm.libvirt_domain:  # moving QEMU out of libvirt's scope makes machined drop it and virsh lose it
        raise InvalidInput(f"VM {name} is libvirt's (spec.libvirt.domain: {vp.vm.libvirt_domain}): libvirt starts it "
                           "and sdqos tunes it in libvirt's scope; run --vm and adopt --vm are for VMs no manager runs")
    scope = vp.scope or machine_scope(name)
    owner = Owner.vm(name)
    unit = plan.unit(scope) or UnitPlan(scope, MACHINE_SLICE, "vm", description("vm", owner, vp.qos), dict(vp.properties),
                                        vp.resources, owner=owner, create=False)
    return Target(unit, ancestors(plan, MACHINE_SLICE), vp.oom_score_adj, f"vm {name}",
                  machine=name if scope == machine_scope(name) else None)


def ancestors(plan: Plan, slice_name: str) -> list[UnitPlan]:
    """The slice and the slices above it in the plan, top-down."""
    chain = []
    u = plan.unit(slice_name)
    while u is not None:
        chain.append(u)
        u = plan.unit(u.slice)
    return list(reversed(chain))


async def running_pods(sd: SystemdAPI, plan: Plan) -> list[str]:
    """The configured pods that run (a live scope in their slice: sdqos run's, podman's), in the
    order they started (their first scope's start): the pods kubelet has admitted."""
    slices = {pp.slice: pp.key for pp in plan.pods}
    scopes = await sd.read_units(["*.scope"], {UNIT: ["ActiveEnterTimestampMonotonic"], SCOPE: ["Slice"]})
    started: dict[str, int] = {}
    for st in scopes.values():
        key = slices.get(str(st.props.get("Slice", "")))
        if key is None or st.active_state not in ("active", "activating", "reloading"):
            continue
        at = int(st.props.get("ActiveEnterTimestampMonotonic") or 0)
        started[key] = min(started.get(key, at), at)
    return sorted(started, key=lambda k: (started[k], k))


def check_admission(plan: Plan, key: str, running: list[str]) -> None:
    """kubelet's admission for a pod about to start (sdqos.kube.admission): refused with
    kubelet's reason when it does not fit beside the running pods. A running pod is admitted
    already (another of its containers may start); nothing running is ever stopped by this."""
    if key in running:
        return
    pp = plan.pod(key)
    assert pp is not None
    admitted = [p.requests for p in (plan.pod(k) for k in running) if p is not None]
    why = admission.fits(admission.node_allocatable(plan.node, plan.capacity), admitted, pp.requests)
    if why is not None:
        raise NotAdmitted(why.line(key))


async def _scope_state(sd: SystemdAPI, name: str) -> str | None:
    states = await sd.read_units([name], {UNIT: ["ActiveState"]})
    st = states.get(name)
    return st.active_state if st is not None else None


async def attach(sd: SystemdAPI, target: Target, pids: list[int]) -> bool:
    """``adopt`` into a running scope: move the processes into it (AttachProcessesToUnit). This
    moves processes and sets no unit value, so it stays here, outside apply (the one writer of
    unit values); the narrow pass after it brings the scope to its values. False when the scope
    does not run: then the narrow pass creates it around them (:meth:`Target.launch`)."""
    if await _scope_state(sd, target.unit.name) != "active":
        return False
    await sd.attach_processes(target.unit.name, pids)
    return True


_QEMU_SUFFIX = {"": 2**20, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50, "E": 2**60}


def qemu_guest_ram(argv: list[str]) -> int | None:
    """The guest RAM a ``qemu-system-*`` command line asks for (``-m 2G``, ``-m size=2048``, the last
    ``-m`` wins; QEMU's unit is MiB without a suffix); None when it is not QEMU or has no ``-m``."""
    if not argv or not os.path.basename(argv[0]).startswith("qemu-system-"):
        return None
    ram = None
    for i, arg in enumerate(argv[1:-1], start=1):
        if arg not in ("-m", "--m"):
            continue
        value = argv[i + 1]
        for part in value.split(","):
            key, eq, v = part.partition("=")
            if eq and key != "size":
                continue
            m = re.fullmatch(r"(\d+(?:\.\d+)?)([BKMGTPE]?)", (v if eq else key).strip().upper())
            if m:
                ram = int(float(m.group(1)) * _QEMU_SUFFIX[m.group(2)])
    return ram


def check_guest_size(target: Target, declared: int, argv: list[str]) -> None:
    """Refuse to start a QEMU guest larger than its VM's limits.memory: it would be OOM-killed."""
    ram = qemu_guest_ram(argv)
    if ram is not None and declared and ram > declared:
        raise InvalidInput(f"{target.label}: qemu -m asks for {size(ram)} of guest RAM but limits.memory is "
                           f"{size(declared)}: the guest would be OOM-killed when it uses its RAM; raise "
                           "limits.memory or lower -m (or pass --force)")


def set_oom(pids: list[int], target: Target) -> list[str]:
    """oom_score_adj for the given processes, each written only after checking that it runs in the
    target scope's cgroup; warnings for what the kernel refused and for PIDs found elsewhere."""
    warnings = []
    cgroup = cgroupfs.cgroup_of(target.unit.name, target.unit.slice)
    results = [procfs.write_oom_score_adj(pid, target.oom_score_adj, cgroup=cgroup) for pid in pids]
    denied = [r.pid for r in results if r.outcome == procfs.DENIED]
    elsewhere = [r.pid for r in results if r.outcome == procfs.ELSEWHERE]
    if denied:
        warnings.append(
            f"{target.label}: the kernel refused oom_score_adj {target.oom_score_adj} for PID "
            f"{', '.join(map(str, denied))} (lowering it needs CAP_SYS_RESOURCE)"
        )
    if elsewhere:
        warnings.append(f"{target.label}: PID {', '.join(map(str, elsewhere))} not in {target.unit.name} as this "
                        "process sees it; its OOM score was not written")
    return warnings


# Scopes other managers make, by name: (prefix, who). A process there is theirs; moving it breaks them.
def owner_of(pid: int, target: Target) -> tuple[str, bool] | None:
    """Whose the process is when not free to adopt: (its unit and who manages it, whether --force
    may override). None: it may be adopted (no unit, a session or ``systemd-run --scope`` scope, or
    the target scope itself)."""
    found = procfs.unit_of(pid)
    if found is None:
        return None  # gone: the move will say so
    unit, path = found
    if not unit or unit == target.unit.name:
        return None
    if unit == "init.scope":
        return "init.scope (the service manager's own)", False
    if unit.endswith(".service"):
        return f"{unit} (a service: systemd manages its processes)", True
    if unit.endswith(".scope"):
        if parse_container_scope(unit) is not None:
            return f"{unit} (another container's scope)", True
        rt = runtimes.row_of(unit)  # podman, libvirt, machined: the runtime table knows its scopes
        maker = rt.name if rt is not None else scope_maker(unit)  # (others by name: docker, containerd, CRI-O)
        if maker is not None:
            return f"{unit} ({maker})", True
        if "/machine.slice/" in f"{path}/":
            return f"{unit} (a machine in machine.slice)", True
    return None


def check_adoptable(pids: list[int], target: Target, force: bool) -> None:
    """Refuse to take another owner's process (InvalidInput, one line per owner: a PID and its
    children in init.scope are one refusal, not one per child), unless ``force``; init.scope's
    processes never."""
    owners: dict[tuple[str, bool], list[int]] = {}
    for pid in pids:
        owner = owner_of(pid, target)
        if owner is None:
            continue
        what, overridable = owner
        if overridable and force:
            continue
        owners.setdefault((what, overridable), []).append(pid)
    refusals = []
    for (what, overridable), found in owners.items():
        more = len(found) - 1
        where = f"PID {found[0]}" + (f" and {more} more process{'es' if more > 1 else ''} there" if more else "")
        refusals.append(InvalidInput(f"refusing to adopt {'them' if more else 'it'}: "
                                     f"{'they belong' if more else 'it belongs'} to {what}"
                                     + ("; pass --force to take it anyway" if overridable else ""), where=where))
    if refusals:
        err = InvalidInput(str(refusals[0]))
        err.errors = refusals  # type: ignore[attr-defined]
        raise err


async def vm_owned_elsewhere(sd: SystemdAPI, target: Target, name: str) -> str | None:
    """The scope of a running machine called ``name`` that a runtime manages (libvirt, machined; not
    sdqos): ``run --vm``/``adopt --vm`` must not start or take a second one beside it."""
    units = await sd.read_units(["machine-*.scope"], {UNIT: ["Description"]})
    for unit, st in units.items():
        if st.active_state not in ("active", "activating"):
            continue
        rt = runtimes.row_of(unit)
        if unit != target.unit.name and rt is not None and rt.named_by(unit) == name:
            return unit
        if unit == target.unit.name and not marked(str(st.props.get("Description", ""))):
            return unit
    return None


__all__ = ["Target", "ScopeBusy", "container_target", "vm_target", "attach", "set_oom"]
