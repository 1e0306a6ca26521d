"""The one comparison (sdqos.reconcile.compare): the full path (desired state with its clamps, then
the diff) and the warm no-op proof (noop._props_in_place) give the same answer for every row of the
property table — "nothing to do on this unit" — whatever systemd holds and the unit uses."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdqos.kube.model import MEMORY
from sdqos.plan.engine import build_plan
from sdqos.plan.properties import INFINITY, MEMORY_PROPERTIES, PERIOD_PROPERTY, PROPERTIES, owned
from sdqos.reconcile import compare, noop
from sdqos.reconcile.desired import desired
from sdqos.reconcile.diff import LiveUnit, compute_diff

from ..helpers import node
from .test_desired import Seen, pod, vm

MiB, GiB = 2**20, 2**30


def _plan(cgroup: str):
    """A node, its tiers (qosReserved memory limits), system.slice enforced (reserved), a VM
    (machine.slice): every kind of unit the proof reads over D-Bus (noop.NEED_KINDS)."""
    n = node(cpu="4", memory="8Gi", gates={"QOSReserved": True}, qos_reserved={MEMORY: 100},
             system_reserved={"cpu": "500m", "memory": "1Gi"}, system_reserved_cgroup="system.slice",
             enforce_node_allocatable=("pods", "system-reserved"))
    return build_plan(n, [pod("g", limits={"cpu": "1", "memory": "1Gi"})], [vm("db")], cgroup)


PLANS = {cg: _plan(cg) for cg in ("v1", "v2")}
ROWS = {cg: [p.name for p in PROPERTIES if p.name in owned(cg)] for cg in PLANS}
UNITS = {cg: [u.name for u in p.units if u.kind in noop.NEED_KINDS] for cg, p in PLANS.items()}


def full_path(plan, name: str, planned: dict, have: dict, usage: int | None) -> bool:
    """A sync's answer: the unit is unchanged by the diff and its desired state has no adjustment."""
    u = next(u for u in plan.units if u.name == name)
    u = dataclasses.replace(u, properties=planned)
    plan = dataclasses.replace(plan, units=[u if x.name == name else x for x in plan.units])
    live = {x.name: LiveUnit(x.name, description=x.description, props=dict(x.properties))
            for x in plan.units if x.create or x.kind in noop.NEED_KINDS}
    live[name] = LiveUnit(name, description=u.description, props=have, memory_current=usage)
    want = desired(plan, Seen(live))
    d = compute_diff(want, live, {})
    assert not d.errors and not d.foreign, (d.errors, d.foreign)
    return name in d.unchanged and not want.adjusted(name)


def proof(cgroup: str, kind: str, planned: dict, have: dict, usage: int | None) -> bool:
    """The warm no-op proof's answer for the same unit as systemd shows it over D-Bus."""
    st_ = SimpleNamespace(props={**have, "MemoryCurrent": INFINITY if usage is None else usage})
    return noop._props_in_place(kind, planned, st_, list(owned(cgroup)), PERIOD_PROPERTY, list(MEMORY_PROPERTIES))


def near(v: int) -> st.SearchStrategy[int]:
    """``v`` itself, a step either side (a rounding), or a page or a clamp step away."""
    if v == INFINITY:
        return st.just(INFINITY)
    return st.sampled_from([v, v + 1, max(0, v - 1), v + 4096, max(0, v - 4096), v + compare.VM_STEP])


values = st.one_of(st.just(INFINITY), st.just(0), st.integers(1, 1 << 40))


@settings(max_examples=400)
@given(cgroup=st.sampled_from(["v1", "v2"]), data=st.data())
def test_the_diff_and_the_noop_proof_agree_on_every_row_of_the_property_table(cgroup, data):
    plan = PLANS[cgroup]
    name = data.draw(st.sampled_from(UNITS[cgroup]), label="unit")
    u = next(u for u in plan.units if u.name == name)
    row = data.draw(st.sampled_from(ROWS[cgroup]), label="row")
    planned = dict(u.properties)
    if row == PERIOD_PROPERTY and data.draw(st.booleans(), label="period unplanned"):
        planned.pop(row, None)  # systemd's default: the diff wants it unset where systemd holds one
    else:
        planned[row] = data.draw(values, label="planned")
    want = planned.get(row, INFINITY)
    have = dict(planned)
    held = data.draw(st.one_of(st.none(), near(want), values), label="held")
    if held is None:
        have.pop(row, None)  # not read (or not shown): never in place
    else:
        have[row] = held
    limit = next((planned[p] for p in MEMORY_PROPERTIES if p in planned), INFINITY)
    usage = data.draw(st.one_of(st.none(), near(limit), st.integers(0, 1 << 40)), label="usage")
    assert full_path(plan, name, planned, have, usage) == proof(cgroup, u.kind, planned, have, usage)


def test_the_plans_hold_every_kind_the_proof_reads():
    for cg, plan in PLANS.items():
        assert {u.kind for u in plan.units if u.name in UNITS[cg]} == set(noop.NEED_KINDS)


def _kind(cgroup: str, kind: str):
    return next(u for u in PLANS[cgroup].units if u.kind == kind)


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
@pytest.mark.parametrize("kind,over", [("tier", 0), ("tier", 1), ("node", 1), ("machine", 1), ("reserved", 1)])
def test_usage_at_or_above_a_memory_limit(cgroup, kind, over):
    """At the limit nothing moves; above it the node, tiers and machine.slice are clamped (no
    proof); a reserved cgroup is never clamped, so its unit is in place for both."""
    u = _kind(cgroup, kind)
    limit = next(u.properties[p] for p in MEMORY_PROPERTIES if p in u.properties)
    planned = dict(u.properties)
    answer = full_path(PLANS[cgroup], u.name, planned, dict(planned), limit + over)
    assert answer == proof(cgroup, kind, planned, dict(planned), limit + over)
    assert answer == (over == 0 or kind == "reserved")


@pytest.mark.parametrize("kind", ["tier", "reserved"])
def test_a_period_held_but_not_planned(kind):
    """systemd holds a period the plan does not set: set back to unset, except on a reserved cgroup."""
    u = _kind("v1", kind)
    planned = {k: v for k, v in u.properties.items() if k != PERIOD_PROPERTY}
    have = {**planned, PERIOD_PROPERTY: 50_000}
    answer = full_path(PLANS["v1"], u.name, planned, have, None)
    assert answer == proof("v1", kind, planned, have, None) == (kind == "reserved")
