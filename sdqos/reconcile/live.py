"""The live state: what systemd (and, where it is visible, the kernel) holds for the plan's units.

A handful of D-Bus calls per sync: one list call over sdqos's name patterns, a read of the units
whose kernel values do not already show them in sync, and the processes of the tree, whose cgroup
paths name the scopes they run in (bound to containers and VMs by :mod:`sdqos.reconcile.binding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sdqos.host import cgroupfs, facts
from sdqos.host.systemd import SCOPE, SLICE, UNIT, Systemd
from sdqos.kube.naming import MACHINE_SLICE
from sdqos.plan.engine import Plan
from sdqos.plan.properties import INFINITY, PERIOD_PROPERTY, owned
from sdqos.reconcile.binding import Binding, bind_scopes, discover_scopes, managed_podman_scopes, podman_containers
from sdqos.reconcile.diff import OWNED_BY_NAME, LiveUnit
from sdqos.reconcile.scopes import LiveScope

SERVICE_IFACE = "org.freedesktop.systemd1.Service"
KUBELET = "kubelet.service"  # listed with the tree (no call of its own): sync warns while it is active


def live_patterns(plan: Plan) -> list[str]:
    """Globs covering every unit sdqos may manage: the kubepods tree, container scopes, and the
    plan's other units (machine.slice, VM scopes, reserved cgroups) by name."""
    stem = plan.root_slice[: -len(".slice")]
    patterns = [f"{stem}.slice", f"{stem}-*.slice", "sdqos-pod*.scope", KUBELET]
    extra = [u.name for u in plan.units if not (u.name.startswith(stem) or u.name.startswith("sdqos-pod"))]
    return patterns + sorted(set(extra))


USAGE = ("MemoryCurrent", "CPUUsageNSec", "TasksCurrent")


def _live_unit(name: str, st, props: list[str]) -> LiveUnit:
    return LiveUnit(
        name=name,
        load_state=st.load_state,
        active_state=st.active_state,
        transient=bool(st.transient),
        description=str(st.props.get("Description", "")),
        props={k: int(v) for k, v in st.props.items() if k in props},
        memory_current=_counter(st.props.get("MemoryCurrent")),
        cpu_usage_ns=_counter(st.props.get("CPUUsageNSec")),
        tasks_current=_counter(st.props.get("TasksCurrent")),
        control_group=st.control_group,
    )


async def read_live(sd: Systemd, plan: Plan, *, usage: bool = False) -> dict[str, LiveUnit]:
    """Every unit sdqos may manage, with its owned properties (and usage counters for status).

    Fast path (no usage wanted, and this process sees systemd's cgroup tree): one list call, then
    a planned unit whose kernel values are exactly what its planned properties produce is taken as
    in sync without asking systemd, and a slice outside the plan is known from the list alone;
    only the others (and the node/tier units, whose usage the qosReserved clamp needs) get a D-Bus
    read. A unit whose kernel values differ although systemd's properties match (a cgroupfs write
    behind systemd's back) is marked for re-applying."""
    props = list(owned(plan.cgroup))
    extra = list(USAGE) if usage else ["MemoryCurrent"]  # MemoryCurrent: tier clamping
    ifaces = {SLICE: props + extra, SCOPE: props + (list(USAGE) if usage else []), SERVICE_IFACE: props,
              UNIT: ["Description"]}
    if usage or not cgroupfs.available():
        units = await sd.read_units(live_patterns(plan), ifaces)
        return {name: _live_unit(name, st, props) if name != KUBELET else _listed_unit(name, st)
                for name, st in units.items()}
    listed = await sd.read_units(live_patterns(plan), {UNIT: ["Description"]})
    planned = {u.name: u for u in plan.units}
    page = facts.page_size()
    live: dict[str, LiveUnit] = {}
    kernel_off: dict[str, dict] = {}
    need: list[str] = []
    for name, st in listed.items():
        u = planned.get(name)
        if u is None and (name.endswith(".slice") or name == KUBELET):
            # Not in the plan (a pod that left the config, or someone else's slice): the diff
            # stops it or reports it on its state and Description, both in the list. A slice is
            # never bound to a container or VM, so its properties are not needed (removing 100
            # of 1000 pods: 108 D-Bus calls instead of 208).
            live[name] = _listed_unit(name, st)
            continue
        if u is None or st.active_state != "active" or u.kind in ("node", "tier", "reserved"):
            need.append(name)
            continue
        check = dict(u.properties)
        check.setdefault(PERIOD_PROPERTY, INFINITY)
        want = cgroupfs.expected(check, plan.cgroup, page)
        have = cgroupfs.read(cgroupfs.cgroup_of(name, u.slice), want) if want is not None else None
        if have is not None and have == want:
            live[name] = _listed_unit(name, st, props=dict(u.properties))
        else:
            need.append(name)
            if have is not None and want is not None:
                kernel_off[name] = {f: [have[f], want[f]] for f in want if have[f] != want[f]}
    if need:
        units = await sd.read_units(need, ifaces)
        for name, st in units.items():
            live[name] = _live_unit(name, st, props)
            live[name].kernel_drift = kernel_off.get(name, {})
    return live


def _listed_unit(name: str, st, props: dict[str, int] | None = None) -> LiveUnit:
    """A unit as the list call describes it (state, Description), with ``props`` where the kernel
    showed them to be in place; no D-Bus read of its own."""
    return LiveUnit(name, st.load_state, st.active_state, description=str(st.props.get("Description", "")),
                    props=props if props is not None else {})


def _counter(value) -> int | None:
    if value is None or int(value) >= 2**64 - 1:
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
    podman_managed: dict[str, str] = field(default_factory=dict)  # scope → container, made by `sdqos podman start`
    unsure: frozenset[str] = frozenset()  # scopes whose owner could not be asked (podman failed): keep as they are


async def read_marks(sd: Systemd, plan: Plan, live: dict[str, LiveUnit]) -> None:
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


async def observe(sd: Systemd, plan: Plan, applied: dict, warnings: list[str], *, usage: bool = False) -> Observation:
    """Read the live state in a few calls and bind scopes (extends the plan with matched scopes)."""
    live = await read_live(sd, plan, usage=usage)
    await read_marks(sd, plan, live)
    # VMs that left the config are still looked at (and reported) while machine.slice was ours.
    scopes = await discover_scopes(sd, plan, live, machine=bool(plan.vms) or MACHINE_SLICE in applied)
    unknown = [name for name in scopes if name not in live]
    if unknown:  # scopes made by others: their Description and values, for matching and diffing
        live.update(await _read_named(sd, plan, unknown, usage=usage))
    for name, scope in scopes.items():
        if name in live:
            scope.description = live[name].description
    containers = podman_containers(scopes, warnings)
    unsure = frozenset(n for n in scopes if containers is None and n.startswith("libpod-"))
    containers = containers or {}
    bindings, unmatched = bind_scopes(plan, scopes, warnings, containers)
    return Observation(live, scopes, bindings, unmatched, managed_podman_scopes(scopes, containers), unsure)


async def _read_named(sd: Systemd, plan: Plan, names: list[str], *, usage: bool = False) -> dict[str, LiveUnit]:
    props = list(owned(plan.cgroup))
    units = await sd.read_units(names, {SCOPE: props + (list(USAGE) if usage else []), UNIT: ["Description"]})
    return {name: _live_unit(name, st, props) for name, st in units.items()}
