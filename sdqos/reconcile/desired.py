"""The desired state: what systemd should hold, from the plan and what was observed. Pure.

The plan says what kubelet's rules give; the live tree adds what only a running host knows: the
scopes that run a container or VM (bound by :mod:`sdqos.reconcile.binding`), the pod slices sync
keeps (counted in their tiers), and the limits that cannot go below what is already used (clamped
to usage, as kubelet's ``retrySetMemoryReserve``). :func:`desired` puts these together into one
value that the diff, the dry run, ``status`` and ``metrics`` all read; the plan itself is never
edited (units that differ from it are new objects), so what was planned and what is wanted can
always be told apart — each difference is an :class:`Adjustment` with its reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from sdqos import humanize as H
from sdqos.plan.engine import KeptPod, Plan, UnitPlan, recount
from sdqos.reconcile.compare import CLAMPED_KINDS, CLAMPED_PROPERTIES, LiveUnit, clamped

CLAMPED = "clamped-to-usage"
# what wanted the limit that usage is above, by unit kind (the warning says it)
_WANTED_BY = {"tier": "qosReserved", "vm": "the VM's limits.memory + overhead", "machine": "the VMs' sum",
              "node": "what machine.slice leaves of the node"}
_NOTE = {"vm": "; it goes down when the guest frees memory", "node": "; its pods are never squeezed below what they use"}


@dataclass(frozen=True, slots=True)
class Adjustment:
    """One value the desired state holds that differs from the plan: ``wanted`` is the plan's,
    ``set`` what is applied instead, ``usage`` what made it so, ``why`` in words."""

    unit: str
    prop: str  # the property
    wanted: int
    set: int
    usage: int
    why: str
    kind: str = CLAMPED

    @property
    def warning(self) -> str:
        """The sync's warning line for it."""
        return f"{self.unit}: {self.why}"

    @property
    def reason(self) -> str:
        """What ``status`` says beside the flag."""
        return f"{self.prop} raised to its usage {H.size(self.set)} (the plan wanted {H.size(self.wanted)})"

    def as_json(self) -> dict:
        return {"unit": self.unit, "property": self.prop, "wanted": self.wanted, "set": self.set,
                "usage": self.usage, "why": self.why, "kind": self.kind}

    @classmethod
    def from_json(cls, d: object) -> "Adjustment | None":
        """One recorded adjustment, or None when it is not one (an older or damaged record)."""
        if not isinstance(d, dict):
            return None
        try:
            return cls(str(d["unit"]), str(d["property"]), int(d["wanted"]), int(d["set"]), int(d["usage"]),
                       str(d["why"]), str(d.get("kind", CLAMPED)))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Desired:
    """What systemd should hold: ``units`` in the plan's order (parents first), then the scopes
    bound to containers and VMs (``bound``), each with its adjustments in; ``plan`` is the plan the
    values come from (with ``kept`` pods counted in their tiers), never edited."""

    plan: Plan
    units: tuple[UnitPlan, ...]
    bound: tuple[UnitPlan, ...] = ()
    adjustments: tuple[Adjustment, ...] = ()
    kept: tuple[KeptPod, ...] = ()
    over_committed: bool = False
    by_name: Mapping[str, UnitPlan] = field(default_factory=dict, repr=False, compare=False)

    def unit(self, name: str) -> UnitPlan | None:
        return self.by_name.get(name)

    def adjusted(self, name: str) -> tuple[Adjustment, ...]:
        return tuple(a for a in self.adjustments if a.unit == name)

    @property
    def warnings(self) -> list[str]:
        """The plan's warnings and one line per adjustment."""
        return list(self.plan.warnings) + [a.warning for a in self.adjustments]

    def as_plan(self) -> Plan:
        """These units as a (new) Plan, for readers that take one (the OOM watch, the renderers)."""
        return dataclasses.replace(self.plan, units=list(self.units))

    @property
    def cgroup(self) -> str:
        return self.plan.cgroup

    @property
    def root_slice(self) -> str:
        return self.plan.root_slice


class Observed(Protocol):
    """What :func:`desired` needs of an observation (:class:`sdqos.reconcile.live.Observation`)."""

    @property
    def live(self) -> Mapping[str, LiveUnit]: ...

    @property
    def bound(self) -> Sequence[UnitPlan]: ...


def of_plan(plan: Plan) -> Desired:
    """The plan as it is, nothing observed (no scope bound, nothing clamped)."""
    return _make(plan, (), ())


def desired(plan: Plan, observed: Observed | None = None, *, kept: Iterable[KeptPod] | None = None,
            recorded: Iterable[Adjustment] | None = None) -> Desired:
    """The desired state. From ``observed``: the units of the scopes that run a planned container
    or VM (``bound``, what :func:`sdqos.reconcile.binding.bind_scopes` found) and each unit's
    memory in use (``live``), for the clamps. ``kept``: the pod slices the diff keeps, counted in
    their tiers (the node, tier and machine.slice values again, in a new Plan); a pod whose move
    to a new slice was refused keeps its old one, so its new units are left out until it moves.
    ``recorded``: instead of clamping to the usage now, the clamps the last sync applied
    (``status`` shows what was set, not what would be set now) — each only while the plan still
    wants what it was clamped from."""
    kept = tuple(sorted(kept, key=lambda k: k.unit)) if kept is not None else plan.kept
    if kept != plan.kept and plan.basis is not None:
        plan = recount(plan, kept)
    waiting = {k.replaces for k in plan.kept if k.replaces}
    units = [u for u in plan.units if not _waits(u, waiting)]
    held = len(units)
    if observed is not None and observed.bound:
        planned = {u.name for u in plan.units}
        units += [u for u in observed.bound if u.name not in planned and not _waits(u, waiting)]
    if recorded is not None:
        adjustments = _still_wanted(units, recorded)
    else:
        adjustments = clamps(units, observed.live if observed is not None else {})
    return _make(plan, tuple(units[held:]), adjustments, units)


def _waits(u: UnitPlan, waiting: set[str]) -> bool:
    """A unit of a pod whose move to a new slice was refused (a kept pod ``replaces`` it): its
    processes stay in the kept slice with their old values, so its new units are not wanted yet."""
    return u.owner is not None and u.owner.pod_key in waiting


def _make(plan: Plan, bound: tuple[UnitPlan, ...], adjustments: tuple[Adjustment, ...],
          units: list[UnitPlan] | None = None) -> Desired:
    units = list(plan.units) if units is None else units
    changed: dict[str, dict[str, int]] = {}
    for a in adjustments:
        changed.setdefault(a.unit, {})[a.prop] = a.set
    out = tuple(dataclasses.replace(u, properties={**u.properties, **changed[u.name]}) if u.name in changed else u
                for u in units) if changed else tuple(units)
    return Desired(plan, out, bound, adjustments, plan.kept, plan.over_committed, {u.name: u for u in out})


def clamps(units: Iterable[UnitPlan], live: Mapping[str, LiveUnit]) -> tuple[Adjustment, ...]:
    """kubelet's retrySetMemoryReserve: a tier memory limit below what the tier already uses would
    fail (or OOM); it is set to the usage instead. The same for kubepods.slice (what machine.slice
    leaves it may be less than its pods use: pods are never squeezed below it), a VM's scope and
    machine.slice: a guest's RAM is not reclaimable, so a lower limit is refused by the kernel on
    cgroup v1 and OOM-kills the guest on v2. ``live``: the units as read (their memory in use).
    The rule itself (which units, which step) is :func:`sdqos.reconcile.compare.clamped`."""
    out = []
    for u in units:
        lu = live.get(u.name) if u.kind in CLAMPED_KINDS else None
        used = lu.memory_current if lu is not None else None
        if used is None:
            continue
        for prop in CLAMPED_PROPERTIES:
            want = u.properties.get(prop)
            to = clamped(u.kind, prop, want, used) if want is not None else None
            if want is None or to is None:
                continue
            exact = u.kind == "tier"
            shown = (lambda n: str(n)) if exact else H.size
            why = (f"{prop} clamped to current usage {shown(used)} ({_WANTED_BY[u.kind]} wanted {shown(want)})"
                   + _NOTE.get(u.kind, ""))
            out.append(Adjustment(u.name, prop, want, to, used, why))
    return tuple(out)


def _still_wanted(units: Iterable[UnitPlan], recorded: Iterable[Adjustment]) -> tuple[Adjustment, ...]:
    """The recorded clamps whose unit still plans the value it was clamped from."""
    planned = {u.name: u for u in units}
    out = []
    for a in recorded:
        u = planned.get(a.unit)
        if u is not None and u.properties.get(a.prop) == a.wanted != a.set:
            out.append(a)
    return tuple(out)
