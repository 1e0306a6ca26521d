"""The live state: what systemd (and, where it is visible, the kernel) holds for the plan's units.

A handful of D-Bus calls per sync: one list call over sdqos's name patterns, a read of the units
whose kernel values do not already show them in sync, and the processes of the tree, whose cgroup
paths name the scopes they run in (bound to containers and VMs by :mod:`sdqos.reconcile.binding`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AbstractSet, Any, Mapping

from sdqos import humanize as H
from sdqos.errors import SdqosError
from sdqos.host import cgroupfs, facts
from sdqos.host.systemd import SCOPE, SLICE, UNIT, SystemdAPI
from sdqos.kube.naming import (
    CONTAINER_SCOPE_GLOB,
    MACHINE_SLICE,
    in_tree,
    parse_container_scope,
    tree_globs,
)
from sdqos.plan.engine import MachineCharge, Plan, UnitPlan
from sdqos.plan.podman import MAX_CFS_QUOTA_US
from sdqos.plan.properties import INFINITY, PERIOD_PROPERTY, cpu_list, from_dbus, owned
from sdqos.reconcile.binding import (
    Binding,
    bind_scopes,
    discover_scopes,
    machine_names,
    machine_scopes,
)
from sdqos.reconcile.budget import machine_charges
from sdqos.reconcile import runtimes
from sdqos.reconcile.diff import OWNED_BY_NAME, LiveUnit
from sdqos.reconcile.prefetch import KernelCheck, confirmed
from sdqos.reconcile.runtimes import Workload
from sdqos.reconcile.scopes import LiveScope
from sdqos.plan.properties import BY_NAME, MEMORY_PROPERTIES, QUOTA_PROPERTY  # (the property table)

if TYPE_CHECKING:
    from sdqos.reconcile.desired import Desired
    from sdqos.reconcile.memo import Memo

SERVICE_IFACE = "org.freedesktop.systemd1.Service"
KUBELET = "kubelet.service"  # listed with the tree (no call of its own): sync warns while it is active


def live_patterns(plan: Plan) -> list[str]:
    """Globs covering every unit sdqos may manage: the kubepods tree, container scopes, and the
    plan's other units (machine.slice, VM scopes, reserved cgroups) by name."""
    patterns = [*tree_globs(plan.root_slice), CONTAINER_SCOPE_GLOB, KUBELET]
    scope = re.compile(fnmatch.translate(CONTAINER_SCOPE_GLOB)).match  # (by the glob: no unescaping per scope)
    extra = [u.name for u in plan.units if not (scope(u.name) or in_tree(u.name, plan.root_slice))]
    return patterns + sorted(set(extra))


USAGE = ("MemoryCurrent", "CPUUsageNSec", "TasksCurrent")


def _live_unit(name: str, st, props: list[str]) -> LiveUnit:
    return LiveUnit(
        name=name,
        load_state=st.load_state,
        active_state=st.active_state,
        transient=bool(st.transient),
        description=str(st.props.get("Description", "")),
        props={k: from_dbus(k, v) for k, v in st.props.items() if k in props},
        memory_current=_counter(st.props.get("MemoryCurrent")),
        cpu_usage_ns=_counter(st.props.get("CPUUsageNSec")),
        tasks_current=_counter(st.props.get("TasksCurrent")),
        control_group=st.control_group,
    )


async def read_live(sd: SystemdAPI, plan: Plan, *, usage: bool = False, checked: KernelCheck | None = None,
                    applied: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, LiveUnit]:
    """Every unit sdqos may manage, with its owned properties (and usage counters for status).

    Fast path (no usage wanted, and this process sees systemd's cgroup tree): one list call, then
    a planned unit whose kernel values are exactly what its planned properties produce is taken as
    in sync without asking systemd, and a slice outside the plan is known from the list alone;
    only the others (and the node/tier units, whose usage the qosReserved clamp needs) get a D-Bus
    read. A unit whose kernel values differ although systemd's properties match (a cgroupfs write
    behind systemd's back) is marked for re-applying. ``checked``: the child that checked those
    kernel files while this sync planned, against the values the last sync ``applied``
    (:mod:`sdqos.reconcile.prefetch`): a unit it confirmed whose planned values are those is not
    read again."""
    props = list(owned(plan.cgroup))
    extra = list(USAGE) if usage else ["MemoryCurrent"]  # MemoryCurrent: tier clamping
    ifaces = {SLICE: props + extra, SCOPE: props + (list(USAGE) if usage else []), SERVICE_IFACE: props,
              UNIT: ["Description"]}
    if usage or not cgroupfs.available():
        units = await sd.read_units(live_patterns(plan), ifaces)
        return {name: _live_unit(name, st, props) if name != KUBELET else _listed_unit(name, st)
                for name, st in units.items()}
    listed = await sd.read_units(live_patterns(plan), {UNIT: ["Description"]})
    doubts = checked.take() if checked is not None else None
    done = applied if applied is not None and doubts is not None else {}
    planned = {u.name: u for u in plan.units}
    page = facts.page_size()
    live: dict[str, LiveUnit] = {}
    kernel_off: dict[str, dict] = {}
    compared: set[str] = set()  # read over D-Bus although their kernel files were compared (they differ)
    need: list[str] = []
    wants: dict[tuple, dict | None] = {}  # the kernel files of equal properties, computed once (pods share them)
    for name, st in listed.items():
        u = planned.get(name)
        if u is None and (name.endswith(".slice") or name == KUBELET):
            # Not in the plan (a pod that left the config, or someone else's slice): the diff
            # stops it or reports it on its state and Description, both in the list. A slice is
            # never bound to a container or VM, so its properties are not needed (removing 100
            # of 1000 pods: 108 D-Bus calls instead of 208).
            live[name] = _listed_unit(name, st)
            continue
        if u is None or st.active_state != "active" or u.kind in ("node", "tier", "reserved", "machine"):
            need.append(name)
            continue
        key = tuple(u.properties.items())
        if key in wants:
            want = wants[key]
        else:
            want = wants[key] = cgroupfs.unit_expected(u.properties, plan.cgroup, page)
        if want is None:
            have = None
        elif done and confirmed(name, u.properties, done, doubts, plan.cgroup):
            have = want  # (the child found it holding these values a moment ago)
        else:
            have = cgroupfs.holds(cgroupfs.cgroup_of(name, u.slice), want)
        if have is not None and have == want:
            live[name] = lu = _listed_unit(name, st, props=dict(u.properties))
            lu.kernel_read = True
        else:
            need.append(name)
            if want is not None:
                compared.add(name)
            if have is not None and want is not None:
                kernel_off[name] = cgroupfs.differing(want, have)
    if need:
        units = await sd.read_units(need, ifaces)
        for name, st in units.items():
            live[name] = _live_unit(name, st, props)
            live[name].kernel_drift = kernel_off.get(name, {})
            live[name].kernel_read = name in compared
    return live


def _listed_unit(name: str, st, props: dict[str, int] | None = None) -> LiveUnit:
    """A unit as the list call describes it (state, Description), with ``props`` where the kernel
    showed them to be in place; no D-Bus read of its own."""
    return LiveUnit(name, st.load_state, st.active_state, description=str(st.props.get("Description", "")),
                    props=props if props is not None else {})


def _counter(value) -> int | None:
    if value is None or int(value) >= INFINITY:
        return None  # accounting off or not known
    return int(value)


@dataclass(slots=True)
class Observation:
    """What systemd holds for the plan: units, the scopes with processes, and which container or
    VM each scope belongs to."""

    live: dict[str, LiveUnit]
    scopes: dict[str, LiveScope]
    bindings: dict[str, Binding]
    unmatched: list[str]
    runtime_managed: dict[str, Workload] = field(default_factory=dict)  # scope → what sdqos started through a runtime
    unsure: frozenset[str] = frozenset()  # scopes whose runtime could not be asked (podman failed): keep as they are
    machines: tuple[MachineCharge, ...] = ()  # what runs in machine.slice besides declared VMs, and its cost
    errors: list[str] = field(default_factory=list)  # what could not be asked (podman): sync fails with them
    bound: tuple[UnitPlan, ...] = ()  # units of the scopes bound to planned containers and VMs (not in the plan)


async def read_marks(sd: SystemdAPI, plan: Plan, live: dict[str, LiveUnit]) -> None:
    """Whether each planned node, tier, pod or machine unit whose Description is not sdqos's is a
    transient unit (another manager's: kubelet's runc, say) or a unit file or implicit slice (which
    sdqos may take over). One read, for those units only: usually none."""
    names = [u.name for u in plan.units if u.kind in OWNED_BY_NAME and u.name in live
             and not live[u.name].ours and (live[u.name].exists or live[u.name].failed)]
    if not names:
        return
    units = await sd.read_units(names, {UNIT: ["Transient"]})
    for name, st in units.items():
        if name in live:
            live[name].transient = bool(st.transient)


async def observe(sd: SystemdAPI, plan: Plan, applied: dict, warnings: list[str], *, usage: bool = False,
                  memo: "Memo | None" = None, checked: KernelCheck | None = None) -> Observation:
    """Read the live state in a few calls and bind scopes (``bound``: their units; the plan is not
    edited). The bound scopes' kernel files are checked by :func:`check_kernel` once the desired
    state is known (a clamped value is what the kernel should hold). ``memo``: podman's, libvirt's and machined's answers of the last sync, reused while unchanged."""
    live = await read_live(sd, plan, usage=usage, checked=checked, applied=applied)
    await read_marks(sd, plan, live)
    scopes = await discover_scopes(sd, plan, live, machine=True)  # whatever runs there counts (budget.py)
    unknown = [name for name in scopes if name not in live]
    if unknown:  # scopes made by others: their Description and values, for matching and diffing
        live.update(await _read_named(sd, plan, unknown, usage=usage))
    if MACHINE_SLICE in applied and plan.unit(MACHINE_SLICE) is None:  # to release what sdqos set there
        units = await sd.read_units([MACHINE_SLICE], {SLICE: list(owned(plan.cgroup)), UNIT: ["Description"]})
        live.update({n: _live_unit(n, st, list(owned(plan.cgroup))) for n, st in units.items()})
    for name, scope in scopes.items():
        if name in live:
            scope.description = live[name].description
    errors: list[str] = []
    machine = machine_scopes(scopes)
    seen = await runtimes.observe(sd, scopes, bool(machine), memo, warnings, errors)
    names = machine_names(machine, seen) if machine else {}
    bindings, unmatched, bound = bind_scopes(plan, scopes, warnings, seen, names)
    charges: tuple[MachineCharge, ...] = ()
    if machine:
        known = live.get(MACHINE_SLICE)  # read with its usage when planned (read_live)
        slice_usage = known.memory_current if known is not None and known.memory_current is not None \
            else await _usage_of(sd, MACHINE_SLICE)
        claimed = {n for n in machine if n in bindings}
        guests: dict[str, tuple[int, int]] = {}  # scope -> a VM's (memory, vcpus), as its runtime records it
        for n, sc in machine.items():
            w = seen.workload(sc)
            if w is not None and w.guest is not None:
                guests[n] = w.guest
        charges = machine_charges(plan, machine, claimed, live, names, guests, slice_usage)
    return Observation(live, scopes, bindings, unmatched, seen.managed(scopes), seen.unsure(scopes), charges,
                       errors, tuple(bound))


def check_kernel(plan: "Desired", live: dict[str, LiveUnit], scopes: dict[str, LiveScope]) -> bool:
    """The kernel has the last word on every unit sdqos sets values on: each one read over D-Bus
    whose kernel files :func:`read_live` did not already compare — the node, the tiers, reserved
    cgroups and machine.slice (always read over D-Bus: their usage decides the clamps), scopes
    matched at sync time (VMs, runtimes' containers), and every unit when usage is read
    (``status``) — has its cgroup files checked against what its desired values (clamps in) make
    the kernel hold, so a value written behind systemd's back is seen (kernel_drift) and restored.
    Run once, on the final desired state. True when it found such a unit."""
    if not cgroupfs.available():
        return False
    page = facts.page_size()
    found = False
    for u in plan.units:
        lu = live.get(u.name)
        if lu is None or lu.kernel_read or lu.kernel_drift or not lu.exists or not lu.props:
            continue  # (not read over D-Bus, or already compared by read_live)
        sc = scopes.get(u.name)
        cg = sc.cgroup if sc is not None else lu.control_group
        if not cg:
            continue  # (a scope without processes, a unit systemd made no cgroup for)
        want = cgroupfs.held_expected(u.properties, lu.props, plan.cgroup, page)
        have = cgroupfs.holds(cg, want) if want else None
        lu.kernel_read = want is not None
        if want is not None and have is not None and have != want:
            lu.kernel_drift = cgroupfs.differing(want, have)
            found = True
    return found


async def _usage_of(sd: SystemdAPI, unit: str) -> int | None:
    """A slice's MemoryCurrent (None when systemd does not know it)."""
    try:
        props = await sd.get_properties(unit, SLICE, ["MemoryCurrent"])
    except SdqosError:
        return None
    return _counter(props.get("MemoryCurrent"))


async def _read_named(sd: SystemdAPI, plan: Plan, names: list[str], *, usage: bool = False) -> dict[str, LiveUnit]:
    props = list(owned(plan.cgroup))
    units = await sd.read_units(names, {SCOPE: props + (list(USAGE) if usage else ["MemoryCurrent"]),
                                        UNIT: ["Description"]})
    return {name: _live_unit(name, st, props) for name, st in units.items()}


# What `podman update` is asked to set in a container's own cgroup (plan/podman.py update_args):
# the CPU weight on v1 (on v2 crun's formula is not kubelet's: systemd sets the scope's), the quota
# (the period with it), the memory limit; its CPUs (cpuManagerPolicy static): on v2 the scope's
# AllowedCPUs, on v1 (no such property) the plan's CPU list in the cpuset hierarchy's cpuset.cpus.
CONTAINER_PROPERTIES = {"v1": ("CPUShares", QUOTA_PROPERTY, PERIOD_PROPERTY, *MEMORY_PROPERTIES),
                        "v2": (QUOTA_PROPERTY, PERIOD_PROPERTY, *MEMORY_PROPERTIES, "AllowedCPUs")}
_V1_CPUS_FILE = f"cpuset/{cgroupfs.CPU_LIST}"
_PERIOD_FILE = "cpu/cpu.cfs_period_us"  # v1: with no quota podman is not asked for a period
_QUOTA_FILE, _MAX_FILE = "cpu/cpu.cfs_quota_us", "cpu.max"


def _as_planned(want: Mapping[str, object], have: dict[str, object]) -> dict[str, object]:
    """A container's own cgroup holding the kernel's largest quota holds no quota: what ``podman
    update`` can write to lift one (plan/podman.py MAX_CFS_QUOTA_US)."""
    if want.get(_QUOTA_FILE) == -1 and have.get(_QUOTA_FILE) == MAX_CFS_QUOTA_US:
        return {**have, _QUOTA_FILE: -1}
    cpu_max, held = want.get(_MAX_FILE), have.get(_MAX_FILE)
    if isinstance(cpu_max, tuple) and cpu_max[0] == "max" and isinstance(held, tuple) and held[0] == MAX_CFS_QUOTA_US:
        return {**have, _MAX_FILE: cpu_max}
    return have


def container_expected(props: Mapping[str, int], mode: str, page: int,
                       cpus: str | None = None) -> dict[str, object] | None:
    """The files of a container's own cgroup ``podman update`` sets, and what they should hold, for
    a container whose scope has ``props`` (and, on v1, whose plan holds the CPU list ``cpus``)."""
    v = "v1" if mode == "v1" else "v2"
    check = {k: val for k, val in props.items() if k in CONTAINER_PROPERTIES[v]}
    if QUOTA_PROPERTY in check:
        check.setdefault(PERIOD_PROPERTY, INFINITY)
    else:
        check.pop(PERIOD_PROPERTY, None)
    want = cgroupfs.expected(check, mode, page)
    if want and check.get(QUOTA_PROPERTY, INFINITY) == INFINITY:
        want.pop(_PERIOD_FILE, None)
    if v == "v1" and cpus and want is not None:
        want[_V1_CPUS_FILE] = cpu_list(cpus)
    return want


def container_kernel_off(plan: "Desired", runtime: dict[str, Workload], scopes: dict[str, LiveScope],
                         against: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, dict]:
    """The kernel has the last word inside a container too: crun keeps a container's limits in its
    own cgroup below the scope (``libpod-<id>.scope/container``), where the scope's values do not
    reach. For each container sdqos started through a runtime that keeps such a cgroup (its row's
    ``inner_cgroup``; ``runtime``: their scopes), every value the runtime is asked to set there
    (:func:`container_expected`) against what that cgroup holds; only where that cgroup exists.
    ``against``: other values to hold it against, by scope (what the last sync applied, to tell
    drift from a plan that changed); a scope it has none for is left out. On v1 a container's CPUs
    are no property systemd holds: they are the plan's (ResourceConfig.cpuset), held against the
    plan only (a pool that changed is an update, never drift)."""
    if not cgroupfs.available():
        return {}
    page = facts.page_size()
    planned = {u.name: u.properties for u in plan.units} if against is None else against
    out: dict[str, dict] = {}
    for name in sorted(runtime):
        props, sc, rt = planned.get(name), scopes.get(name), runtimes.row(runtime[name].runtime)
        if props is None or sc is None or rt is None or rt.inner_cgroup is None:
            continue
        u = plan.by_name.get(name) if against is None else None
        want = container_expected(props, plan.cgroup, page, u.resources.cpuset if u is not None else None)
        have = cgroupfs.read(f"{sc.cgroup}/{rt.inner_cgroup}", want) if want else None
        if have is None and want and _V1_CPUS_FILE in want:  # no cpuset hierarchy there: the rest is still checked
            want = {k: v for k, v in want.items() if k != _V1_CPUS_FILE}
            have = cgroupfs.read(f"{sc.cgroup}/{rt.inner_cgroup}", want) if want else None
        if want and have is not None and (have := _as_planned(want, have)) != want:
            out[name] = cgroupfs.differing(want, have)
    return out


def _what_it_keeps(file: str, held: object, wanted: object) -> str:
    """"its memory limit 64 MiB (wanted unlimited)", "cpu.cfs_quota_us 50000 (wanted -1)"."""
    what = "its memory limit" if file in CONTAINER_FILES else f"its {file.rsplit('/', 1)[-1]}"
    return f"{what} {H.kernel_value(file, held)} (wanted {H.kernel_value(file, wanted)})"


# The memory limit's file on each cgroup version (its rows in plan/properties.py).
CONTAINER_FILES = tuple(f for name in MEMORY_PROPERTIES for k in BY_NAME[name].kernel.values() if k for f in k.files)


def container_refusals(plan: "Desired", runtime: dict[str, Workload], bindings: dict[str, Binding],
                       scopes: dict[str, LiveScope], report) -> set[str]:
    """Read back after ``podman update``: each podman container whose own cgroup does not hold
    every value it was asked to set (CPU shares, quota and period, memory limit) is an error (every
    sync, until it does), and its scope is not reported as updated or restored — never
    "→ unlimited" while the container keeps a limit."""
    off = container_kernel_off(plan, runtime, scopes)
    for name, files in off.items():
        b = bindings.get(name)
        who = f" ({b.pod}/{b.container})" if b is not None and b.pod else ""
        pod = b.pod if b is not None and b.pod else "NS/NAME"
        kept = ", ".join(_what_it_keeps(f, have, want) for f, (have, want) in files.items())
        report.errors.append(
            f"{name}{who}: container {runtime[name].name} keeps {kept}: podman update did not reach it; "
            f"`sdqos podman start --replace {pod}` recreates it with the new values")
    report.updated[:] = [u for u in report.updated if u["unit"] not in off]
    report.drift[:] = [d for d in report.drift if d["unit"] not in off]
    return set(off)


def _kernel_target(planned: Mapping[str, UnitPlan], name: str, scopes: dict[str, LiveScope], cgroup: str,
                   page: int) -> tuple[str, dict] | None:
    """(cgroup, {file: value}) a unit's kernel files should hold, or None when it has none to read."""
    u = planned.get(name)
    if u is None:
        return None
    want = cgroupfs.unit_expected(u.properties, cgroup, page)
    if not want:
        return None
    return (scopes[name].cgroup if name in scopes else cgroupfs.cgroup_of(name, u.slice)), want


class ReadBack:
    """The read-back of created units, done as each one's job ends — during the creation, while
    systemd makes the next ones and this process would only wait — instead of all of them after:
    a cold sync of 1000 pods read ~1000 cgroups (~0.05 s) after its last job. A unit seen holding
    its values here (``held``) is not read again by :func:`kernel_refusals`; one that is not yet,
    or not at all, is read there as any other, with its settle time."""

    def __init__(self, plan: "Desired", scopes: dict[str, LiveScope]):
        self.planned, self.scopes, self.cgroup = plan.by_name, scopes, plan.cgroup
        self.page = facts.page_size()
        self.held: set[str] = set()

    @classmethod
    def of(cls, plan: "Desired", scopes: dict[str, LiveScope]) -> ReadBack | None:
        """None where the kernel's files cannot be read from here (D-Bus only)."""
        return cls(plan, scopes) if cgroupfs.available() else None

    def __call__(self, name: str) -> None:
        target = _kernel_target(self.planned, name, self.scopes, self.cgroup, self.page)
        if target is not None and cgroupfs.holds(*target) == target[1]:
            self.held.add(name)


async def kernel_refusals(plan: "Desired", done: set[str], scopes: dict[str, LiveScope], report,
                          settle_s: float = 1.0, held: AbstractSet[str] = frozenset()) -> set[str]:
    """The kernel has the last word: after systemd took new values, each unit's cgroup files are
    read back. systemd keeps a value the kernel refused (v1's EBUSY for a memory limit below usage)
    and says so only in its log; here such a unit is an error naming the wanted and the held value,
    not an update (and not recorded as applied, so the next sync tries again). ``held``: units
    already read back holding their values (:class:`ReadBack`)."""
    if not done or not cgroupfs.available():
        return set()
    page = facts.page_size()
    planned = plan.by_name
    todo: dict[str, tuple[str, dict]] = {}
    for name in done:
        if name in held:
            continue
        target = _kernel_target(planned, name, scopes, plan.cgroup, page)
        if target is not None:
            todo[name] = target
    off: dict[str, dict] = {}
    deadline = asyncio.get_running_loop().time() + settle_s
    while True:  # systemd realizes cgroup values from its event loop, just after the call returns
        off = {}
        for name, (cg, want) in todo.items():
            have = cgroupfs.holds(cg, want)
            if have is not None and have != want:
                off[name] = cgroupfs.differing(want, have)
        if not off or asyncio.get_running_loop().time() >= deadline:
            break
        todo = {n: todo[n] for n in off}
        await asyncio.sleep(0.05)
    for name, files in sorted(off.items()):
        what = ", ".join(f"{f.split('/')[-1]} wanted {H.kernel_value(f, w)}, holds {H.kernel_value(f, h)}" for f, (h, w) in files.items())
        report.errors.append(f"{name}: the kernel refused the new value ({what}); systemd holds it, the cgroup "
                             "does not (systemd's log says why: journalctl _PID=1)")
    report.updated[:] = [u for u in report.updated if u["unit"] not in off]
    report.created[:] = [u for u in report.created if u not in off]
    report.drift[:] = [d for d in report.drift if d["unit"] not in off]
    return set(off)
