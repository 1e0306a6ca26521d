"""Plan vs. live state → the ordered list of changes a sync makes. Pure.

Rules (issue "sdqos sync"):

- create missing slices, parents first; a failed unit is reset and created again;
- update only owned properties that differ; a value that differs from what sdqos last applied
  was changed behind its back: that is *drift*, restored and reported old → new;
- remove pod slices sdqos created whose pod left the config — never when some input could not be
  read (the pod may be in the unreadable file), never a pod whose manifest is merely invalid, and
  never every pod at once unless ``allow_empty``;
- with invalid input anywhere, units whose values depend on all inputs (node, tiers, machine.slice)
  are left as they are (created if missing): nothing changes because of a typo;
- units in the tree that sdqos did not create are reported and never touched;
- order: removals, then growing limits top-down, creations top-down, shrinking limits bottom-up —
  so a parent's limit is never below what its children are about to get.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sdqos.plan.engine import Plan, UnitPlan
from sdqos.plan.properties import INFINITY, PERIOD_PROPERTY, planned_value

LIMIT_PROPERTIES = frozenset({"MemoryLimit", "MemoryMax", "MemoryHigh", "CPUQuotaPerSecUSec", "TasksMax"})
DEPENDS_ON_ALL_INPUTS = frozenset({"node", "tier", "machine"})
SDQOS_DESCRIPTION = "sdqos "

PHASE_REMOVE, PHASE_GROW, PHASE_CREATE, PHASE_SHRINK = range(4)


@dataclass(slots=True)
class LiveUnit:
    """A unit as systemd has it now (what the D-Bus read returns, reduced)."""

    name: str
    load_state: str = "loaded"
    active_state: str = "active"
    transient: bool = True
    description: str = ""
    props: dict[str, int] = field(default_factory=dict)
    memory_current: int | None = None
    cpu_usage_ns: int | None = None
    tasks_current: int | None = None
    control_group: str | None = None
    kernel_drift: dict[str, list] = field(default_factory=dict)  # cgroupfs file: [kernel, expected]

    @property
    def exists(self) -> bool:
        return self.load_state == "loaded" and self.active_state in ("active", "activating", "reloading")

    @property
    def failed(self) -> bool:
        return self.active_state == "failed"

    @property
    def ours(self) -> bool:
        return self.description.startswith(SDQOS_DESCRIPTION)


@dataclass(slots=True)
class Action:
    """One write to systemd (create, update, stop or reset one unit), in the phase it belongs to."""

    kind: str  # create | update | stop | reset
    unit: str
    phase: int
    props: dict[str, int] = field(default_factory=dict)
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    drift: bool = False
    plan: UnitPlan | None = None
    reason: str = ""


@dataclass(slots=True)
class Diff:
    """What a sync must do: the actions in order, and what it found and leaves alone."""

    actions: list[Action] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    drift: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # stale or frozen units deliberately left alone
    abort: bool = False  # refuse to write anything at all

    @property
    def writes(self) -> int:
        return len(self.actions)


def pod_slice_pattern(plan: Plan) -> re.Pattern:
    root = plan.root_slice[: -len(".slice")]
    return re.compile(rf"^{re.escape(root)}(?:-burstable|-besteffort)?-pod([A-Za-z0-9_]+)\.slice$")


CONTAINER_SCOPE = re.compile(r"^sdqos-pod([A-Za-z0-9_]+)-.+\.scope$")


def _uid_of(name: str, plan: Plan) -> str | None:
    m = pod_slice_pattern(plan).match(name) or CONTAINER_SCOPE.match(name)
    return m.group(1).replace("_", "-") if m else None


def _is_grow(prop: str, old: int, new: int) -> bool:
    if prop not in LIMIT_PROPERTIES:
        return True
    return new >= old


def _depth(name: str) -> int:
    return name.count("-") + (1 if name.endswith(".scope") else 0)


def compute_diff(
    plan: Plan,
    live: dict[str, LiveUnit],
    applied: dict[str, dict[str, int]] | None = None,
    *,
    complete: bool = True,
    removals_safe: bool = True,
    invalid_keys: set[str] | frozenset[str] = frozenset(),
    allow_empty: bool = False,
) -> Diff:
    applied = applied or {}
    d = Diff()
    planned = {u.name: u for u in plan.units}
    for w in plan.warnings:
        d.warnings.append(w)

    # --- units that should not be there (or are not ours) -------------------------------------
    pod_re = pod_slice_pattern(plan)
    stale: list[LiveUnit] = []
    for name, lu in live.items():
        if name in planned or not (lu.exists or lu.failed):
            continue
        is_pod_slice = bool(pod_re.match(name))
        is_container = bool(CONTAINER_SCOPE.match(name))
        if not (is_pod_slice or is_container):
            if name.startswith(plan.root_slice[: -len(".slice")]) and name not in (plan.root_slice,):
                d.foreign.append(name)
            continue
        if not lu.ours:
            d.foreign.append(name)
            continue
        uid = _uid_of(name, plan)
        key = _pod_key_from_description(lu.description)
        protected = f"uid:{uid}" in invalid_keys or (key is not None and f"pod:{key}" in invalid_keys)
        if protected:
            d.kept.append(name)
            continue
        if is_container and uid is not None and any(p.uid == uid for p in plan.pods):
            # A scope of a configured pod whose container left the spec: reported, not stopped.
            d.kept.append(name)
            d.warnings.append(f"{name}: container no longer in its pod's spec; left running")
            continue
        stale.append(lu)

    stale_pods = [lu for lu in stale if pod_re.match(lu.name)]
    if stale and not removals_safe:
        d.warnings.append(
            f"{len(stale_pods)} pod(s) not in the config kept running: some config files could not be read"
        )
        d.kept.extend(lu.name for lu in stale)
        stale = []
    elif stale_pods and not plan.pods and not allow_empty:
        d.errors.append(
            f"the config has no pods but {len(stale_pods)} pod slice(s) exist; refusing to remove them all"
            " (pass --allow-empty to really do that)"
        )
        d.abort = True
        return d
    for lu in sorted(stale, key=lambda u: (-_depth(u.name), u.name)):
        d.actions.append(Action("stop", lu.name, PHASE_REMOVE, reason=f"not in the config ({lu.description})"))

    # --- units of the plan ----------------------------------------------------------------------
    for u in plan.units:
        lu = live.get(u.name)
        if lu is None or not (lu.exists or lu.failed):
            if not u.create:
                continue  # scopes need a process: `sdqos run`/`adopt` makes them
            d.actions.append(Action("create", u.name, PHASE_CREATE, props=dict(u.properties), plan=u))
            continue
        if lu.failed:
            d.actions.append(Action("reset", u.name, PHASE_CREATE, plan=u, reason="unit had failed"))
            if u.create:
                d.actions.append(Action("create", u.name, PHASE_CREATE, props=dict(u.properties), plan=u))
            continue
        if u.kind in DEPENDS_ON_ALL_INPUTS and not complete:
            if unit_changes(u, lu):
                d.kept.append(u.name)
                d.warnings.append(f"{u.name} left as it is: its values depend on input that is invalid")
            else:
                d.unchanged.append(u.name)
            continue
        changes = unit_changes(u, lu)
        if not changes and lu.kernel_drift:
            # systemd holds the right values but the kernel does not (a cgroupfs write behind
            # systemd's back): setting them again makes systemd write them again.
            d.drift.append({"unit": u.name, "changes": {}, "kernel": lu.kernel_drift})
            d.actions.append(Action("update", u.name, PHASE_GROW, props=dict(u.properties), drift=True, plan=u,
                                    reason="kernel values differ from systemd's"))
            continue
        if not changes:
            d.unchanged.append(u.name)
            continue
        last = applied.get(u.name, {})
        drifted = {p: ch for p, ch in changes.items() if p in last and last[p] != ch[0]}
        if drifted:
            d.drift.append({"unit": u.name, "changes": {p: [o, n] for p, (o, n) in drifted.items()}})
        grow = {p: ch for p, ch in changes.items() if _is_grow(p, *ch)}
        shrink = {p: ch for p, ch in changes.items() if p not in grow}
        for phase, part in ((PHASE_GROW, grow), (PHASE_SHRINK, shrink)):
            if part:
                d.actions.append(
                    Action("update", u.name, phase, props={p: n for p, (_, n) in part.items()}, changes=part,
                           drift=any(p in drifted for p in part), plan=u)
                )

    order = {name: i for i, name in enumerate(planned)}
    d.actions.sort(
        key=lambda a: (
            a.phase,
            (-order.get(a.unit, 0)) if a.phase == PHASE_SHRINK else order.get(a.unit, 0),
        )
    )
    return d


def unit_changes(u: UnitPlan, lu: LiveUnit) -> dict[str, tuple[int, int]]:
    out = {}
    props = dict(u.properties)
    if PERIOD_PROPERTY in lu.props and PERIOD_PROPERTY not in props and u.kind != "reserved":
        props[PERIOD_PROPERTY] = planned_value(u.properties, PERIOD_PROPERTY)
    for name, want in props.items():
        have = lu.props.get(name)
        if have is None or have != want:
            out[name] = (INFINITY if have is None else have, want)
    return out


def _pod_key_from_description(description: str) -> str | None:
    m = re.match(r"^sdqos (?:pod|container) ([a-z0-9.-]+/[a-z0-9.-]+)", description)
    return m.group(1) if m else None


def clamp_to_usage(plan: Plan, live: dict[str, LiveUnit], warnings: list[str]) -> None:
    """kubelet's retrySetMemoryReserve: a tier memory limit below what the tier already uses
    would fail (or OOM); set it to the usage instead, and say so."""
    for u in plan.units:
        if u.kind != "tier":
            continue
        lu = live.get(u.name)
        for prop in ("MemoryLimit", "MemoryMax"):
            want = u.properties.get(prop)
            if want is None or want == INFINITY or lu is None or lu.memory_current is None:
                continue
            if lu.memory_current > want:
                warnings.append(
                    f"{u.name}: {prop} clamped to current usage {lu.memory_current} (qosReserved wanted {want})"
                )
                u.properties[prop] = lu.memory_current
