"""Plan vs. live state → the ordered list of changes a sync makes. Pure.

Rules (issue "sdqos sync"):

- create missing slices, parents first; a failed unit is reset and created again;
- update only owned properties that differ; a value that differs from what sdqos last applied
  was changed behind its back: that is *drift*, restored and reported old → new;
- remove pod slices sdqos created whose pod left the config — never when some input could not be
  read (the pod may be in the unreadable file), never a pod whose manifest is merely invalid, never
  every pod at once unless ``allow_empty``, never more of the pods that run processes than
  ``max_removals`` allows, and never a slice that holds units sdqos did not create (stopping it
  would stop them): that one is kept until it holds only sdqos's own;
- a pod whose QoS class (or explicit ``metadata.uid``) changed while its old slice runs processes
  keeps its old slice and values and is refused, as Kubernetes refuses such a change: it must be
  recreated (``recreate``); with no processes it simply moves;
- with invalid input anywhere, units whose values depend on all inputs (node, tiers, machine.slice)
  are left as they are (created if missing): nothing changes because of a typo;
- units in the tree that sdqos did not create are reported and never touched; a *planned* node,
  tier, pod or machine unit that another manager created (a transient unit whose Description is
  not sdqos's, e.g. kubelet's ``libcontainer container kubepods.slice``) makes its whole subtree
  off limits, unless ``adopt_existing``; a unit file or a slice systemd made implicitly is taken
  over (it carries no other manager's mark);
- order: removals, then growing limits top-down, creations top-down, shrinking limits bottom-up —
  so a parent's limit is never below what its children are about to get.
"""

from __future__ import annotations

from collections.abc import Mapping, Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from sdqos.errors import ScopeBusy
from sdqos.kube.model import BESTEFFORT, GUARANTEED
from sdqos.kube.naming import (
    MACHINE_SLICE,
    MARK,
    POD,
    Owner,
    PodSlice,
    node_slice,
    parent_slice,
    UNIT_NAME_MAX,
    in_tree,
    parse_container_scope,
    parse_pod_slice,
    slice_components,
)
from sdqos.plan.engine import KeptPod, Plan, PodPlan, UnitPlan
from sdqos.plan.properties import INFINITY, LIMITS, RESERVATIONS, RESETS, memory_limit  # (the property table)
from sdqos.reconcile import compare
from sdqos.reconcile.budget import cpu_millis
from sdqos.reconcile.compare import LiveUnit
from sdqos.reconcile.desired import Desired, of_plan
from sdqos.reconcile.scopes import LiveScope

LIMIT_PROPERTIES = LIMITS  # raised top-down, lowered bottom-up (each row of plan/properties.py says)
DEPENDS_ON_ALL_INPUTS = frozenset({"node", "tier", "machine"})
# Planned units sdqos creates or takes over by name; scopes (containers, VMs) it claims by binding.
OWNED_BY_NAME = frozenset({"node", "tier", "pod", "machine"})
SDQOS_DESCRIPTION = MARK  # the ownership mark (kube/naming.py), not who the unit is for
DEFAULT_MAX_REMOVALS = "50%"
# Recorded with a pod slice's applied values (never sent): its pod's requests, for kept_pods, and its
# pod's key (namespace/name): who a kept slice is for once its file is gone (a record written before
# the key was: None, the slice is known by its name only).
REQUEST_CPU, REQUEST_MEMORY, POD_KEY = "sdqos.cpuRequest", "sdqos.memoryRequest", "sdqos.pod"

PHASE_REMOVE, PHASE_GROW, PHASE_CREATE, PHASE_SHRINK = range(4)
# systemd's defaults for what sdqos sets on a scope it tunes: CPUShares/CPUWeight "unset", no quota,
# no limits, no protection (each row of plan/properties.py says).
RESET_VALUES = RESETS


# The apply order, declared here only: removals; growing limits, parents first; creations, parents
# first; shrinking limits, children first — so a parent's limit is never below what its children
# are about to get. compute_diff sorts its actions by it; apply carries them out phase by phase.
APPLY_ORDER = (PHASE_REMOVE, PHASE_GROW, PHASE_CREATE, PHASE_SHRINK)
BOTTOM_UP = frozenset({PHASE_SHRINK})


def apply_key(a: "Action", order: Mapping[str, int]) -> tuple[int, int]:
    """Where an action goes in the apply order (``order``: each unit's place in the tree, parents first)."""
    place = order.get(a.unit, 0)
    return APPLY_ORDER.index(a.phase), -place if a.phase in BOTTOM_UP else place


@dataclass(slots=True)
class Action:
    """One write to systemd (create, update, stop or reset one unit), in the phase it belongs to.
    A create with ``pids`` makes a scope around running processes (``run``, ``adopt``: a
    :class:`Launch`), with ``stop_timeout_us`` as its SIGTERM → SIGKILL time; with ``machine``, a VM
    registered with systemd-machined under that name (apply says how)."""

    kind: str  # create | update | stop | reset
    unit: str
    phase: int
    props: dict[str, int | str] = field(default_factory=dict)  # str: Description
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    drift: bool = False
    plan: UnitPlan | None = None
    reason: str = ""
    pids: tuple[int, ...] = ()
    stop_timeout_us: int | None = None
    machine: str | None = None


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
    kept_why: dict[str, str] = field(default_factory=dict)  # kept unit → why, in a few words
    frozen: dict[str, str] = field(default_factory=dict)  # kept old slice → the pod (key) refused to move
    invalid: list[str] = field(default_factory=list)  # edits refused as Kubernetes refuses them (exit 2)
    released: list[str] = field(default_factory=list)  # others' scopes sdqos tuned and no longer matches
    abort: bool = False  # refuse to write anything at all

    @property
    def writes(self) -> int:
        return len(self.actions)

    def keep(self, names, why: str) -> None:
        for n in names:
            if n not in self.kept_why:
                self.kept.append(n)
                self.kept_why[n] = why


def pod_slice_in(plan: Plan, name: str) -> PodSlice | None:
    """What ``name`` says when it is a pod slice of ``plan``'s tree (its cgroupRoot), else None."""
    ps = parse_pod_slice(name)
    return ps if ps is not None and node_slice(ps.root) == plan.root_slice else None


def _uid_of(name: str, plan: Plan) -> str | None:
    ps = pod_slice_in(plan, name)
    if ps is not None:
        return ps.uid
    cs = parse_container_scope(name)
    return cs[0] if cs is not None else None


def recorded_pod_key(applied: Mapping[str, Mapping[str, Any]], unit: str) -> str | None:
    """The pod a unit was last synced for, as sync recorded it (None: no record, or one older than the key)."""
    key = applied.get(unit, {}).get(POD_KEY)
    return key if isinstance(key, str) else None


def _is_grow(prop: str, old: int, new: int) -> bool:
    if prop not in LIMIT_PROPERTIES:
        return True
    return new >= old


def _depth(name: str) -> int:
    """How deep a unit sits, to stop children before their parents: a slice by its name's levels,
    a scope below every slice."""
    comps = slice_components(name)
    return len(comps) if comps is not None else UNIT_NAME_MAX


@dataclass(frozen=True, slots=True)
class RemovalLimit:
    """How many of the pods that run processes one sync may stop: a count or a percentage of them
    (at least one pod can always go). ``--max-removals N|P%``."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, text: str) -> "RemovalLimit":
        t = text.strip()
        try:
            if t.endswith("%"):
                pct = float(t[:-1])
                if not 0 <= pct <= 100:
                    raise ValueError
                return cls(percent=pct)
            n = int(t)
            if n < 0:
                raise ValueError
            return cls(count=n)
        except ValueError:
            raise ValueError(f"{text!r} is not a count or a percentage from 0% to 100%") from None

    def allowed(self, running: int) -> int:
        if self.count is not None:
            return self.count
        return max(1, int(running * (self.percent if self.percent is not None else 50) / 100))

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{self.percent:g}%"


def foreign_mark(lu: LiveUnit) -> str | None:
    """Whose unit this is when not sdqos's: the Description of a transient unit another manager
    created (kubelet's runc: ``libcontainer container <name>``). None: sdqos may manage it (its
    own, or a unit file or implicit slice, which carry no manager's mark)."""
    if lu.ours or not lu.transient:
        return None
    return lu.description or "no description"


class _Tree:
    """Parents of the live units (slices by name, scopes by where their processes are) and which
    units have processes below them, to ask what lies below a slice. Each question costs the depth
    of the tree, not its size: a sync of thousands of pods asks it for every unit."""

    def __init__(self, live: Mapping[str, LiveUnit], scopes: Mapping[str, LiveScope]):
        self.parent: dict[str, str] = {n: parent_slice(n) for n in live if n.endswith(".slice")}
        self.parent.update((n, sc.slice) for n, sc in scopes.items())
        for sc in scopes.values():  # a scope's slice may be one the patterns did not list
            s = sc.slice
            while s not in self.parent and s != "-.slice":
                self.parent[s] = parent_slice(s)
                s = self.parent[s]
        self.children: dict[str, list[str]] = {}
        for n, par in self.parent.items():
            self.children.setdefault(par, []).append(n)
        self.occupied: set[str] = set()  # units with processes in them or below them
        for n, sc in scopes.items():
            if sc.pids:
                self.occupied.add(n)
                self.occupied.update(self.ancestors(n))

    def ancestors(self, name: str):
        for _ in range(64):
            up = self.parent.get(name)
            name = up if up is not None else parent_slice(name) if name.endswith(".slice") else "-.slice"
            if name == "-.slice":
                return
            yield name

    def under(self, name: str, tops: set[str] | frozenset[str]) -> bool:
        """``name`` is one of ``tops`` or lies below one."""
        return bool(tops) and (name in tops or any(a in tops for a in self.ancestors(name)))

    def below(self, top: str) -> list[str]:
        out, todo = [], list(self.children.get(top, ()))
        while todo:
            n = todo.pop()
            out.append(n)
            todo.extend(self.children.get(n, ()))
        return sorted(out)


@dataclass(frozen=True, slots=True)
class DiffPolicy:
    """What a sync's options ask of its diff, in one record (the live state and the record of what
    was applied are the diff's other inputs):

    ``complete``: every input was valid (else the units whose values depend on all inputs are left
    as they are); ``removals_safe``: every config file could be read (else nothing is removed);
    ``invalid_keys``: the pods whose manifest is invalid (``uid:UID``, ``pod:NS/NAME``), whose
    units stay; ``allow_empty``: a config with no pods may remove every pod slice;
    ``adopt_existing``: planned units another manager made are taken over; ``recreate``: the pods
    (keys) whose QoS class or uid change may stop their running slice; ``max_removals``: how many
    of the pods that run processes one sync may stop (None: :data:`DEFAULT_MAX_REMOVALS`)."""

    complete: bool = True
    removals_safe: bool = True
    invalid_keys: AbstractSet[str] = frozenset()
    allow_empty: bool = False
    adopt_existing: bool = False
    recreate: AbstractSet[str] = frozenset()
    max_removals: RemovalLimit | None = None

    def __post_init__(self) -> None:  # (a caller's set, frozen: the record cannot change under the diff)
        object.__setattr__(self, "invalid_keys", frozenset(self.invalid_keys))
        object.__setattr__(self, "recreate", frozenset(self.recreate))

    @property
    def removal_limit(self) -> RemovalLimit:
        return self.max_removals or RemovalLimit.parse(DEFAULT_MAX_REMOVALS)


DEFAULT_POLICY = DiffPolicy()


@dataclass(slots=True)
class _Pass:
    """One diff being computed: its inputs, and what the steps of :func:`compute_diff` decided so
    far (each step reads and adds to it, in the order compute_diff calls them)."""

    want: Desired
    live: Mapping[str, LiveUnit]
    applied: Mapping[str, Mapping[str, Any]]
    policy: DiffPolicy
    scopes: Mapping[str, LiveScope] | None
    runtime_owned: Mapping[str, object]
    unsure: frozenset[str]
    tree: _Tree
    # pod uid → key from applied.json: asked only about units outside the plan (none in a sync
    # that removes nothing), so it is built on first use, not parsed from 1000 unit names each time
    keys: _LazyKeys
    d: Diff = field(default_factory=Diff)
    off_limits: set[str] = field(default_factory=set)  # planned units another manager owns
    claim: set[str] = field(default_factory=set)  # foreign units taken over with adopt_existing
    keep: set[str] = field(default_factory=set)  # stale units kept, …
    why: dict[str, str] = field(default_factory=dict)  # … and why (the top of each kept subtree)
    frozen_pods: set[str] = field(default_factory=set)  # pods (keys) refused to move: they keep their old slice
    moving: set[str] = field(default_factory=set)  # old slices stopped because their pod moved to a new one
    doomed: set[str] = field(default_factory=set)  # slices being stopped

    @property
    def plan(self) -> Plan:
        return self.want.plan

    @property
    def planned(self) -> Mapping[str, UnitPlan]:
        return self.want.by_name

    def is_pod(self, name: str) -> bool:
        return pod_slice_in(self.plan, name) is not None

    def off(self, name: str) -> bool:
        return self.tree.under(name, self.off_limits)

    def pod_key(self, uid: str | None) -> str | None:
        return self.keys.get(uid) if uid is not None else None


def compute_diff(
    desired: Desired | Plan,
    live: dict[str, LiveUnit],
    applied: dict[str, dict[str, int]] | None = None,
    policy: DiffPolicy = DEFAULT_POLICY,
    *,
    scopes: Mapping[str, LiveScope] | None = None,
    runtime_owned: Mapping[str, object] | None = None,
    unsure: frozenset[str] = frozenset(),
) -> Diff:
    """What a sync must do to bring ``live`` to ``desired`` (:func:`sdqos.reconcile.desired.desired`;
    a bare plan is its own desired state: nothing bound, nothing adjusted), as ``policy`` (the
    sync's options) allows. ``applied``: what sync last applied (drift is a value that differs from
    it); ``scopes``: the live scopes with processes; ``runtime_owned``: scopes of containers sdqos
    started through a runtime (``sdqos podman start``): a pod slice holding only those and sdqos's
    own units may go; its runtime containers are removed through the runtime first (the caller does
    that for every slice this stops). ``unsure``: scopes whose binding is not known this time."""
    want = desired if isinstance(desired, Desired) else of_plan(desired)
    applied = applied or {}
    x = _Pass(want, live, applied, policy, scopes, runtime_owned or {}, unsure, _Tree(live, scopes or {}),
              _LazyKeys(applied))
    x.d.warnings.extend(want.warnings)
    _foreign_planned(x)
    stale = _stale(x)
    _keep_holding_others(x, stale)
    _refuse_moves(x, stale)
    stale = _hold_back(x, _drop_kept(x, stale))
    if x.d.abort:
        return x.d
    _stop(x, stale)
    for u in want.units:
        _planned_unit(x, u)
    _release(x)
    _keep_runtime_scopes(x.d, x.tree, x.runtime_owned, x.planned)
    order = {name: i for i, name in enumerate(x.planned)}
    x.d.actions.sort(key=lambda a: apply_key(a, order))
    return x.d


def _foreign_planned(x: _Pass) -> None:
    """Planned units another manager owns: their subtree is off limits (or, with adopt_existing,
    they are taken over)."""
    d = x.d
    for u in x.want.units:
        lu = x.live.get(u.name)
        if u.kind not in OWNED_BY_NAME or lu is None or not (lu.exists or lu.failed):
            continue
        if x.off(u.name) or x.off(u.slice):
            continue
        mark = foreign_mark(lu)
        if mark is None:
            continue
        if x.policy.adopt_existing:
            x.claim.add(u.name)
            d.warnings.append(f"{u.name}: taken over from another manager ({mark!r}), as --adopt-existing asks")
            continue
        x.off_limits.add(u.name)
        d.foreign.append(u.name)
        hint = " is kubelet running?" if "libcontainer" in mark or u.kind in ("node", "tier") else ""
        d.errors.append(
            f"{u.name} belongs to another manager ({mark!r});{hint} nothing in it was changed. Give sdqos "
            f"its own tree with cgroupRoot in node.yaml, or pass --adopt-existing to take it over")


def _stale(x: _Pass) -> list[LiveUnit]:
    """Units that should not be there: sdqos's pod slices and container scopes the plan does not
    hold (those of invalid pods and of containers left out of a configured pod's spec kept);
    others' units in the tree are reported as foreign."""
    d, plan = x.d, x.plan
    stale: list[LiveUnit] = []
    for name, lu in x.live.items():
        if name in x.planned or not (lu.exists or lu.failed) or x.off(name):
            continue
        is_pod_slice = x.is_pod(name)
        is_container = parse_container_scope(name) is not None
        if not (is_pod_slice or is_container):
            if name != plan.root_slice and in_tree(name, plan.root_slice):
                d.foreign.append(name)  # a slice in sdqos's tree it did not make
            continue
        if not lu.ours:
            d.foreign.append(name)
            continue
        uid = _uid_of(name, plan)
        key = x.pod_key(uid)
        if f"uid:{uid}" in x.policy.invalid_keys or (key is not None and f"pod:{key}" in x.policy.invalid_keys):
            d.keep([name], "its pod's manifest is invalid")
            continue
        if is_container and uid is not None and any(p.uid == uid for p in plan.pods) \
                and x.tree.parent.get(name, plan.root_slice) in x.planned:
            # A scope of a configured pod whose container left the spec: reported, not stopped.
            d.keep([name], "container no longer in its pod's spec")
            d.warnings.append(f"{name}: container no longer in its pod's spec; left running")
            continue
        stale.append(lu)
    return stale


def _keep_holding_others(x: _Pass, stale: list[LiveUnit]) -> None:
    """A pod slice that holds units sdqos did not create is never stopped (that would stop them)."""
    for lu in stale:
        if not x.is_pod(lu.name):
            continue
        others = [n for n in x.tree.below(lu.name)
                  if not (n in x.live and x.live[n].ours) and n not in x.runtime_owned]
        if others:
            x.keep.add(lu.name)
            x.why[lu.name] = "holds units sdqos did not create"
            x.d.warnings.append(f"kept: pod slice {lu.name} holds units sdqos did not create "
                                f"({', '.join(others[:5])}{' …' if len(others) > 5 else ''}); not stopped")


def _refuse_moves(x: _Pass, stale: list[LiveUnit]) -> None:
    """A pod whose QoS class or uid changed: its old slice, while it runs processes, stays (unless
    the pod is to be recreated); with no processes it simply moves."""
    plan = x.plan
    for lu in stale:
        if not x.is_pod(lu.name) or lu.name in x.keep:
            continue
        uid = _uid_of(lu.name, plan)
        key = x.pod_key(uid)
        pp = next((p for p in plan.pods if p.uid == uid), None) or \
            next((p for p in plan.pods if key is not None and p.key == key), None)
        if pp is None:
            continue
        running = lu.name in x.tree.occupied
        if not running or pp.key in x.policy.recreate:
            x.moving.add(lu.name)
            continue
        x.keep.add(lu.name)
        x.frozen_pods.add(pp.key)
        x.d.frozen[lu.name] = pp.key
        x.why[lu.name] = f"QoS class or uid change of {pp.key} refused while it runs"
        x.d.invalid.append(_refused_move(pp, lu.name, plan))


def _drop_kept(x: _Pass, stale: list[LiveUnit]) -> list[LiveUnit]:
    """Processes in a slice's scopes go with it: what a kept slice holds is kept too. The rest."""
    for lu in stale:
        if x.tree.under(lu.name, x.keep):
            x.keep.add(lu.name)
    for lu in stale:
        if lu.name in x.keep:
            top = next((a for a in x.tree.ancestors(lu.name) if a in x.why), None)
            x.d.keep([lu.name], x.why.get(lu.name) or (f"in kept {top}: {x.why[top]}" if top else "kept"))
    return [lu for lu in stale if lu.name not in x.keep]


def _hold_back(x: _Pass, stale: list[LiveUnit]) -> list[LiveUnit]:
    """The stale units that may really go: none when some config file could not be read, none
    (and the diff aborted) when the config has no pods and ``allow_empty`` is not given, none when
    more running pods would stop than ``max_removals`` allows."""
    d, policy = x.d, x.policy
    stale_pods = [lu for lu in stale if x.is_pod(lu.name)]
    if stale and not policy.removals_safe:
        d.warnings.append(
            f"{len(stale_pods)} pod(s) not in the config kept running: some config files could not be read"
        )
        d.keep((lu.name for lu in stale), "some config files could not be read")
        return []
    if stale_pods and not x.plan.pods and not policy.allow_empty:
        d.errors.append(
            f"the config has no pods but {len(stale_pods)} pod slice(s) exist; refusing to remove them all"
            " (pass --allow-empty to really do that)"
        )
        # Nothing is removed: each slice stays as it is, counted in its tier (status shows it kept).
        d.keep((lu.name for lu in stale), "the config has no pods; not removed without --allow-empty")
        _keep_runtime_scopes(d, x.tree, x.runtime_owned, x.planned)
        d.abort = True
        return []
    limit = policy.removal_limit
    running_pods = {n for n, lu in x.live.items() if n in x.tree.occupied and lu.ours and x.is_pod(n)}
    leaving = [lu.name for lu in stale_pods if lu.name in running_pods and lu.name not in x.moving]
    allowed = limit.allowed(len(running_pods))
    if len(leaving) > allowed:
        d.errors.append(
            f"refusing to stop {len(leaving)} of the {len(running_pods)} pods that run processes "
            f"(at most {allowed} at once, --max-removals {limit}); if they really are to go, pass "
            f"--max-removals {len(leaving)} or --max-removals 100%")
        d.keep((lu.name for lu in stale), f"held back by --max-removals {limit}")
        return []
    return stale


def _stop(x: _Pass, stale: list[LiveUnit]) -> None:
    """Stop what goes, children before their parents."""
    x.doomed = {lu.name for lu in stale if lu.name.endswith(".slice")}
    for lu in sorted(stale, key=lambda u: (-_depth(u.name), u.name)):
        x.d.actions.append(Action("stop", lu.name, PHASE_REMOVE, reason=f"not in the config ({lu.description})"))


def _planned_unit(x: _Pass, u: UnitPlan) -> None:
    """The actions for one unit of the desired state: create it, reset a failed one, or update the
    values not in place (:func:`unit_changes`); its kernel drift restored."""
    d = x.d
    if u.owner is not None and u.owner.kind == POD and u.owner.name in x.frozen_pods:
        return  # its pod keeps its old slice (see _refuse_moves)
    if x.off(u.name) or x.off(u.slice):
        return
    lu = x.live.get(u.name)
    if lu is not None and x.tree.under(u.name, x.doomed):
        return  # lives in a slice being stopped: it goes with it (and is made again by run)
    if lu is None or not (lu.exists or lu.failed):
        if u.create:  # (scopes need a process: `sdqos run`/`adopt` makes them)
            d.actions.append(Action("create", u.name, PHASE_CREATE, props=dict(u.properties), plan=u))
        return
    if lu.failed:
        d.actions.append(Action("reset", u.name, PHASE_CREATE, plan=u, reason="unit had failed"))
        if u.create:
            d.actions.append(Action("create", u.name, PHASE_CREATE, props=dict(u.properties), plan=u))
        return
    changes = unit_changes(u, lu)
    if u.kind in DEPENDS_ON_ALL_INPUTS and not x.policy.complete:
        if changes:
            d.keep([u.name], "its values depend on input that is invalid")
            d.warnings.append(f"{u.name} left as it is: its values depend on input that is invalid")
        elif lu.kernel_drift:  # systemd keeps its values; the kernel gets them back (nothing new is set)
            _restore_kernel(d, u, lu)
        else:
            d.unchanged.append(u.name)
        return
    # A pod that moved to another namespace or name keeps its uid, so its unit: its
    # Description (who the unit is for, what status and `systemctl` show) follows it.
    retitled = u.name not in x.claim and lu.ours and bool(u.description) and lu.description != u.description
    if u.name in x.claim or retitled:
        d.actions.append(Action("update", u.name, PHASE_GROW, props={"Description": u.description}, plan=u,
                                reason="taken over (--adopt-existing)" if u.name in x.claim
                                else f"was {lu.description!r}"))
    if not changes and lu.kernel_drift:
        # systemd holds the right values but the kernel does not (a cgroupfs write behind
        # systemd's back): setting them again makes systemd write them again.
        _restore_kernel(d, u, lu)
    elif not changes:
        if u.name not in x.claim and not retitled:
            d.unchanged.append(u.name)
    else:
        _update(d, u, changes, x.applied.get(u.name, {}))


def _restore_kernel(d: Diff, u: UnitPlan, lu: LiveUnit) -> None:
    d.drift.append({"unit": u.name, "changes": {}, "kernel": lu.kernel_drift})
    d.actions.append(Action("update", u.name, PHASE_GROW, props=dict(u.properties), drift=True, plan=u,
                            reason="kernel values differ from systemd's"))


def _update(d: Diff, u: UnitPlan, changes: dict[str, tuple[int, int]], last: Mapping[str, Any]) -> None:
    """The updates of a unit's values not in place: growing ones top-down, shrinking limits
    bottom-up; a value that differs from what sync last applied (``last``) is drift."""
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


def _release(x: _Pass) -> None:
    """A scope another runtime made, tuned by sdqos while it matched a container (applied.json says
    what was set) but matched by nothing now: what sdqos set goes back to systemd's defaults."""
    d = x.d
    for name, last in sorted(x.applied.items()):
        lu = x.live.get(name)
        machine = name == MACHINE_SLICE
        if (name in x.planned or name in x.unsure or name in x.runtime_owned
                or not (name.endswith(".scope") or machine) or lu is None or lu.ours or not lu.exists):
            continue  # (containers sdqos started through a runtime go with their pod, through the runtime)
        if x.scopes is not None and name not in x.scopes and not machine:
            continue
        reset = {p: RESET_VALUES[p] for p in last if p in RESET_VALUES}
        changes = {p: (lu.props.get(p, INFINITY), v) for p, v in reset.items() if lu.props.get(p, INFINITY) != v}
        d.released.append(name)
        if changes:
            reason = "nothing declared or running there" if machine else "no longer matches a container"
            d.actions.append(Action("update", name, PHASE_GROW, props={p: v for p, (_, v) in changes.items()},
                                    changes=changes, reason=reason))
            d.warnings.append(f"{name}: {reason} any more: the values sdqos set on it were released to systemd's "
                              f"defaults ({', '.join(sorted(changes))})" if machine else
                              f"{name} no longer matches a container: the values sdqos set on it were reset "
                              f"({', '.join(sorted(changes))})")


def _keep_runtime_scopes(d: Diff, tree: _Tree, runtime_owned: Mapping[str, object],
                         planned: Mapping[str, UnitPlan]) -> None:
    """The scopes of containers sdqos started through a runtime (podman's) that stay, unplanned,
    in a kept pod slice (a refused QoS-class change, an empty config): kept with it, as its own."""
    for name in sorted(runtime_owned):
        if name in planned or name in d.kept_why:
            continue
        top = next((a for a in tree.ancestors(name) if a in d.kept_why), None)
        if top is not None:
            d.keep([name], f"in kept {top}: {d.kept_why[top]}")


@dataclass(frozen=True, slots=True)
class Launch:
    """Processes to put in a new scope, in a narrow pass (``sdqos run``, ``adopt``): the scope's
    unit as planned, the PIDs it is created around, its stop timeout (a pod's grace period), the
    machine name a VM is registered with (None: systemd alone), ``replace``: a running scope of
    that name is stopped first. ``label`` names it in errors ("pod ns/x container app")."""

    unit: UnitPlan
    pids: tuple[int, ...]
    label: str
    replace: bool = False
    stop_timeout_us: int | None = None
    machine: str | None = None


BUSY_STATES = frozenset({"active", "activating", "deactivating", "reloading"})


def launch_actions(launch: Launch, unit: UnitPlan, state: str | None) -> list[Action]:
    """The actions that make ``launch``'s scope (``unit``: its desired unit; ``state``: the scope's
    ActiveState now, None when not loaded): a create with PIDs — after a stop of the running
    scope with ``replace`` (ScopeBusy without), after a reset of a failed one."""
    out = []
    if state in BUSY_STATES:
        if not launch.replace:
            raise ScopeBusy(f"{launch.label} already runs in {unit.name}; pass --replace to stop it first")
        out.append(Action("stop", unit.name, PHASE_REMOVE, plan=unit, reason="--replace"))
    elif state == "failed":
        out.append(Action("reset", unit.name, PHASE_CREATE, plan=unit, reason="unit had failed"))
    out.append(Action("create", unit.name, PHASE_CREATE, props=dict(unit.properties), plan=unit,
                      pids=tuple(launch.pids), stop_timeout_us=launch.stop_timeout_us, machine=launch.machine,
                      reason=f"{launch.label}: {len(launch.pids)} process(es)"))
    return out


def narrowed(d: Diff, units: set[str] | frozenset[str], warnings: list[str],
             creatable: set[str] | frozenset[str] = frozenset(), launch: list[Action] | None = None) -> Diff:
    """The part of ``d`` a narrow pass carries out (``sdqos run``, ``adopt``, ``podman start``):
    the updates of ``units``, the creations (and resets) of ``creatable`` (the slices above a
    scope about to be made) and the ``launch`` actions (:func:`launch_actions`), which replace
    whatever ``d`` had for their unit — nothing else created, nothing stopped or released; their
    errors (those naming them) and ``warnings``. A new Diff: ``d`` stays as it was computed."""
    launch = launch or []
    mine = {a.unit for a in launch}
    units = set(units) | mine

    def names(text: str) -> bool:
        return any(u in text for u in units)

    def kept(a: Action) -> bool:
        if a.unit in mine:
            return False
        return (a.kind == "update" and a.unit in units) or (a.kind in ("create", "reset") and a.unit in creatable)

    actions = [a for a in d.actions if kept(a)] + launch
    actions.sort(key=lambda a: APPLY_ORDER.index(a.phase))  # (stable: the tree order within a phase stays)
    return Diff(actions=actions,
                unchanged=[u for u in d.unchanged if u in units and u not in mine],
                drift=[x for x in d.drift if x["unit"] in units and x["unit"] not in mine],
                warnings=list(warnings), errors=[e for e in d.errors if names(e)], foreign=list(d.foreign),
                kept=list(d.kept), kept_why=dict(d.kept_why), frozen=dict(d.frozen), abort=d.abort)


def _refused_move(pp: PodPlan, old_slice: str, plan: Plan) -> str:
    """The one line for a pod that would have to leave a slice its processes run in."""
    where = "pod"
    try:
        src = pp.pod.source
        if src is not None:
            where = f"{src.file}" + (f" (document {src.index + 1})" if src.index else "")
    except Exception:  # a manifest that no longer decodes: name the pod only
        pass
    old_uid = _uid_of(old_slice, plan)
    if old_uid is not None and old_uid != pp.uid:
        what = f"metadata.uid: changed from {old_uid} to {pp.uid}"
    else:
        old = pod_slice_in(plan, old_slice)
        what = (f"spec: the QoS class changed from {old.qos if old else '?'} to {pp.qos}"
                " (requests and limits)")
    return (f"{where}: {what} while pod {pp.key}'s containers run in {old_slice}; Kubernetes fixes a pod's "
            f"QoS class and uid for its life, so the running pod keeps its old slice and values. Recreate it: "
            f"delete its document, sync, add it back; or run `sdqos sync --recreate {pp.key}` (stops its "
            f"processes)")


def unit_changes(u: UnitPlan, lu: LiveUnit) -> dict[str, tuple[int, int]]:
    """Each of ``u``'s values systemd does not hold (``lu``) → (held, wanted): the one comparison
    (:func:`sdqos.reconcile.compare.changes`, which the warm no-op proof makes too)."""
    return compare.changes(u.kind, u.properties, lu.props)


def kept_pods(plan: Plan, diff: Diff, live: Mapping[str, LiveUnit],
              applied: Mapping[str, Mapping[str, int]]) -> tuple[KeptPod, ...]:
    """The pod slices ``diff`` keeps as they are, with the requests their pod was last synced with
    (what sync records in applied.json; a slice synced before that record: its own values read
    back), so they count in their tiers exactly as if their files were unchanged."""
    planned = {u.name for u in plan.units}
    out = []
    for name in diff.kept:
        lu = live.get(name)
        ps = pod_slice_in(plan, name)
        if ps is None or name in planned or lu is None or not lu.exists:
            continue
        cls = ps.qos
        last = applied.get(name, {})
        cpu, memory = last.get(REQUEST_CPU), last.get(REQUEST_MEMORY)
        props = {**lu.props, **{k: v for k, v in last.items() if k not in lu.props}}
        if cpu is None:
            cpu = 0 if cls == BESTEFFORT else cpu_millis(props, plan.cgroup)
        if memory is None:
            memory = _memory_back(props, cls)
        out.append(KeptPod(name, cls, int(cpu), int(memory), diff.kept_why.get(name, "kept"), diff.frozen.get(name)))
    return tuple(out)


def _memory_back(props: Mapping[str, int], cls: str) -> int:
    """A pod's memory request from its slice's values: a Guaranteed pod's limit is its request;
    MemoryQoS's reservation where it was set; else nothing known (0)."""
    if cls == GUARANTEED:
        v = memory_limit(props)
        if v not in (INFINITY, 0):
            return v
    for p in RESERVATIONS:
        if props.get(p):
            return props[p]
    return 0


def pod_requests_record(pp: PodPlan) -> dict[str, Any]:
    """What sync records for a pod slice besides its properties (applied.json): its requests, to
    count it in its tier while it is kept, and its pod's key, to know whose it is once its file is gone."""
    return {REQUEST_CPU: pp.requests["cpu"], REQUEST_MEMORY: pp.requests["memory"], POD_KEY: pp.key}


def recorded_owner(name: str, keys: Mapping[str, str]) -> Owner | None:
    """Who a unit sdqos made for a pod was for, when the plan no longer says (its file is gone or
    invalid): the pod's key from the record sync keeps (``keys``: :func:`recorded_keys`), the
    container from the scope's name. None: not a pod's unit, or no record of its pod."""
    ps = parse_pod_slice(name)
    cs = parse_container_scope(name) if ps is None else None
    uid = ps.uid if ps is not None else cs[0] if cs is not None else None
    key = keys.get(uid) if uid is not None else None
    if key is None:
        return None
    return Owner.pod(key, cs[1] if cs is not None else None)


class _LazyKeys:
    """:func:`recorded_keys`, computed when first asked."""

    __slots__ = ("_applied", "_keys")

    def __init__(self, applied: Mapping[str, Mapping[str, Any]]):
        self._applied = applied
        self._keys: dict[str, str] | None = None

    def get(self, uid: str) -> str | None:
        if self._keys is None:
            self._keys = recorded_keys(self._applied)
        return self._keys.get(uid)


def recorded_keys(applied: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Pod uid → its pod's key, from the record of each pod slice sync applied."""
    out = {}
    for unit, rec in applied.items():
        key = rec.get(POD_KEY)
        if isinstance(key, str) and (ps := parse_pod_slice(unit)) is not None:
            out[ps.uid] = key
    return out
