"""kubelet's topology manager (pkg/kubelet/cm/topologymanager, 1.36), pure, with the CPU manager as
its only hint provider (sdqos has no device plugins, and memoryManagerPolicy None gives no hints:
kubelet's memory and device managers would each add the preferred "don't care" hint, which changes
no merge).

Upstream files, kubernetes/kubernetes:
- bitmask/bitmask.go: `BitMask` (a uint64 of NUMA node ids) and `iterate_bitmasks`;
- topology_manager.go: `TopologyHint`, NewManager's checks (`new_manager`: max-allowable-numa-nodes),
  TopologyAffinityError (its Type is the admission Reason, its Error the message);
- policy_options.go: `parse_policy_options` (prefer-closest-numa-nodes, max-allowable-numa-nodes,
  both GA: no feature gate);
- numa_info.go: `NUMAInfo` (Narrowest, Closest, DefaultAffinityMask, distances' averages);
- policy.go: filterProvidersHints, mergePermutation, maxOfMinAffinityCounts, HintMerger
  (compare / Merge), iterateAllProviderTopologyHints;
- policy_none.go, policy_best_effort.go, policy_restricted.go, policy_single_numa_node.go
  (filterSingleNumaHints): `merge`;
- scope.go (admitPolicyNone), scope_container.go, scope_pod.go: `admit`.

A hint provider is anything with `container_hints`, `pod_hints` and `allocate` (the CPU manager's
is in sdqos/kube/cpumanager.py): the scopes call them in kubelet's order, container by container
(init containers first), each container's hints computed after the one before it was allocated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sdqos.errors import TopologyPolicyOptionError

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
OPTIONS = (PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES)
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8

# topology_manager.go TopologyAffinityError: Type() is the pod's status Reason, Error() its Message
ERROR_TOPOLOGY_AFFINITY = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_ATOI = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi's syntax


# --- bitmask/bitmask.go --------------------------------------------------------------------------


def _check(bits: Iterable[int]) -> list[int]:
    out = list(bits)
    for b in out:
        if b < 0 or b >= 64:
            raise ValueError("bit number must be in range 0-63")
    return out


@dataclass(frozen=True)
class BitMask:
    """bitmask.bitMask: NUMA node ids as the bits of a uint64. Immutable: the operations return a
    new mask."""

    value: int = 0

    @classmethod
    def of(cls, *bits: int) -> BitMask:
        """NewBitMask; ValueError (upstream's message) for a bit outside 0-63."""
        v = 0
        for b in _check(bits):
            v |= 1 << b
        return cls(v)

    def add(self, *bits: int) -> BitMask:
        v = self.value
        for b in _check(bits):
            v |= 1 << b
        return BitMask(v)

    def remove(self, *bits: int) -> BitMask:
        v = self.value
        for b in _check(bits):
            v &= ~(1 << b)
        return BitMask(v)

    def and_(self, *masks: BitMask) -> BitMask:
        v = self.value
        for m in masks:
            v &= m.value
        return BitMask(v)

    def or_(self, *masks: BitMask) -> BitMask:
        v = self.value
        for m in masks:
            v |= m.value
        return BitMask(v)

    @staticmethod
    def filled() -> BitMask:
        return BitMask((1 << 64) - 1)

    def is_empty(self) -> bool:
        return self.value == 0

    def is_set(self, bit: int) -> bool:
        return 0 <= bit < 64 and bool(self.value & (1 << bit))

    def any_set(self, bits: Iterable[int]) -> bool:
        return any(self.is_set(b) for b in bits)

    def is_equal(self, other: BitMask) -> bool:
        return self.value == other.value

    def is_narrower_than(self, other: BitMask) -> bool:
        """Fewer bits set; with as many, the one with more lower-numbered bits set (IsLessThan)."""
        if self.count() == other.count():
            return self.is_less_than(other)
        return self.count() < other.count()

    def is_less_than(self, other: BitMask) -> bool:
        return self.value < other.value

    def is_greater_than(self, other: BitMask) -> bool:
        return self.value > other.value

    def count(self) -> int:
        return bin(self.value).count("1")

    def bits(self) -> list[int]:
        """GetBits: the bits set, ascending."""
        return [i for i in range(64) if self.value & (1 << i)]

    def __str__(self) -> str:
        """String: binary, zero-padded to an even width (Go's "%0Nb" with grouping 2)."""
        for shift in range(62, 0, -2):
            if self.value > (1 << shift):
                return format(self.value, f"0{shift + 2}b")
        return format(self.value, "02b")


def and_masks(first: BitMask, *masks: BitMask) -> BitMask:
    return first.and_(*masks)


def or_masks(first: BitMask, *masks: BitMask) -> BitMask:
    return first.or_(*masks)


def iterate_bitmasks(bits: Sequence[int]) -> list[BitMask]:
    """IterateBitMasks: every non-empty combination of `bits`, by size, then in upstream's
    recursion order (combinations in lexicographic order of the bit list)."""
    out: list[BitMask] = []

    def rec(rest: Sequence[int], accum: list[int], size: int) -> None:
        if len(accum) == size:
            out.append(BitMask.of(*accum))
            return
        for i in range(len(rest)):
            rec(rest[i + 1:], accum + [rest[i]], size)

    for size in range(1, len(bits) + 1):
        rec(list(bits), [], size)
    return out


# --- hints (topology_manager.go) -----------------------------------------------------------------


@dataclass(frozen=True)
class TopologyHint:
    """NUMANodeAffinity (None: any NUMA node, "don't care") and whether it is preferred."""

    affinity: BitMask | None = None
    preferred: bool = False

    def __str__(self) -> str:
        return f"{{{self.affinity if self.affinity is not None else '<nil>'} {str(self.preferred).lower()}}}"


# A provider's hints: resource name → its hints (None: no preference); None or {}: no preference at all.
ProviderHints = Mapping[str, "list[TopologyHint] | None"] | None


# --- options (policy_options.go) -----------------------------------------------------------------


@dataclass(frozen=True)
class PolicyOptions:
    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES


def parse_policy_options(options: Mapping[str, object] | None, where: str | None = None) -> PolicyOptions:
    """NewPolicyOptions: topologyManagerPolicyOptions with upstream's messages. Both options kubelet
    knows are honoured; any other name is refused as kubelet refuses it."""
    field_ = "topologyManagerPolicyOptions"
    prefer, max_nodes = False, DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    for name, raw in sorted((options or {}).items(), key=lambda kv: str(kv[0])):
        value = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if name not in OPTIONS:
            raise TopologyPolicyOptionError(f'unknown Topology Manager Policy option: "{name}"', where, field_)
        if name == PREFER_CLOSEST_NUMA_NODES:
            if value not in _TRUE and value not in _FALSE:
                raise TopologyPolicyOptionError(
                    f'bad value for option "{name}": strconv.ParseBool: parsing "{value}": invalid syntax',
                    where, f"{field_}.{name}")
            prefer = value in _TRUE
        else:
            if not _ATOI.fullmatch(value):
                raise TopologyPolicyOptionError(
                    f'unable to convert policy option to integer "{name}": strconv.Atoi: parsing "{value}": '
                    "invalid syntax", where, f"{field_}.{name}")
            n = int(value)
            if n < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise TopologyPolicyOptionError(
                    f'the minimum value of "{name}" should not be less than {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}',
                    where, f"{field_}.{name}")
            max_nodes = n
    return PolicyOptions(prefer_closest_numa=prefer, max_allowable_numa_nodes=max_nodes)


# --- numa_info.go ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NUMAInfo:
    """The node's NUMA nodes and, for prefer-closest-numa-nodes, each one's distance row
    (/sys/devices/system/node/nodeN/distance, indexed by node id)."""

    nodes: tuple[int, ...]
    distances: Mapping[int, Sequence[int]] = field(default_factory=dict)

    def default_affinity_mask(self) -> BitMask:
        return BitMask.of(*self.nodes)

    def narrowest(self, m1: BitMask, m2: BitMask) -> BitMask:
        return m1 if m1.is_narrower_than(m2) else m2

    def average_distance(self, mask: BitMask) -> float:
        """NUMADistances.CalculateAverageFor: the mean distance over every ordered pair of its nodes."""
        bits = mask.bits()
        if not bits:
            return 0.0
        total = sum(self.distances[a][b] for a in bits for b in bits)
        return total / (len(bits) * len(bits))

    def closest(self, m1: BitMask, m2: BitMask) -> BitMask:
        if m1.count() != m2.count():
            return self.narrowest(m1, m2)
        d1, d2 = self.average_distance(m1), self.average_distance(m2)
        if d1 == d2:
            return m1 if m1.is_less_than(m2) else m2
        return m1 if d1 < d2 else m2


# --- policy.go ------------------------------------------------------------------------------------


def filter_providers_hints(providers_hints: Iterable[ProviderHints]) -> list[list[TopologyHint]]:
    """filterProvidersHints: a provider without hints, or a resource with None, is one preferred
    "don't care" hint; a resource with an empty list (no possible affinity) one non-preferred."""
    out: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            out.append([TopologyHint(None, True)])
            continue
        for resource in sorted(hints):
            res = hints[resource]
            if res is None:
                out.append([TopologyHint(None, True)])
            elif len(res) == 0:
                out.append([TopologyHint(None, False)])
            else:
                out.append(list(res))
    return out


def merge_permutation(default_affinity: BitMask, permutation: Sequence[TopologyHint]) -> TopologyHint:
    """mergePermutation: the AND of the affinities; preferred only when every hint is and all the
    affinities given are equal."""
    preferred = True
    affinities: list[BitMask] = []
    for hint in permutation:
        if hint.affinity is not None:
            affinities.append(hint.affinity)
            if not hint.affinity.is_equal(affinities[0]):
                preferred = False
        if not hint.preferred:
            preferred = False
    return TopologyHint(default_affinity.and_(*affinities), preferred)


def _narrowest_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    best: TopologyHint | None = None
    for h in hints:
        if h.affinity is None:
            continue
        if best is None:
            best = h
        assert best.affinity is not None
        if h.affinity.is_narrower_than(best.affinity):
            best = h
    return best


def max_of_min_affinity_counts(filtered: Sequence[Sequence[TopologyHint]]) -> int:
    out = 0
    for hints in filtered:
        h = _narrowest_hint(hints)
        if h is not None and h.affinity is not None and h.affinity.count() > out:
            out = h.affinity.count()
    return out


def _permutations(all_hints: Sequence[Sequence[TopologyHint]]) -> Iterable[list[TopologyHint]]:
    """iterateAllProviderTopologyHints, in its order (the first provider's hints outermost)."""
    def rec(i: int, accum: list[TopologyHint]) -> Iterable[list[TopologyHint]]:
        if i == len(all_hints):
            yield accum
            return
        for h in all_hints[i]:
            yield from rec(i + 1, accum + [h])
    return rec(0, [])


@dataclass(frozen=True)
class HintMerger:
    """policy.go HintMerger."""

    numa_info: NUMAInfo
    hints: Sequence[Sequence[TopologyHint]]
    policy_name: str
    options: PolicyOptions = PolicyOptions()
    best_non_preferred_count: int = field(init=False, default=0)

    def __post_init__(self) -> None:  # NewHintMerger: BestNonPreferredAffinityCount
        object.__setattr__(self, "best_non_preferred_count", max_of_min_affinity_counts(self.hints))

    def _fitter(self, current: TopologyHint, candidate: TopologyHint) -> TopologyHint:
        """compareNumaAffinityMasks: the closest (prefer-closest-numa-nodes, not with
        single-numa-node) or the narrowest of the two; current on a tie."""
        assert current.affinity is not None and candidate.affinity is not None
        if candidate.affinity.is_equal(current.affinity):
            return current
        if self.policy_name != POLICY_SINGLE_NUMA_NODE and self.options.prefer_closest_numa:
            best = self.numa_info.closest(current.affinity, candidate.affinity)
        else:
            best = self.numa_info.narrowest(current.affinity, candidate.affinity)
        return current if best.is_equal(current.affinity) else candidate

    def compare(self, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
        """HintMerger.compare, its cases 1-3cc as upstream numbers them."""
        assert candidate.affinity is not None
        if candidate.affinity.count() == 0:
            return current
        if current is None:
            return candidate
        assert current.affinity is not None
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return self._fitter(current, candidate)
        best = self.best_non_preferred_count
        cur, cand = current.affinity.count(), candidate.affinity.count()
        if cur > best:  # 1
            return self._fitter(current, candidate)
        if cur == best:  # 2
            return current if cand != best else self._fitter(current, candidate)
        if cand > best:  # 3a
            return current
        if cand == best:  # 3b
            return candidate
        if cand > cur:  # 3ca
            return candidate
        if cand < cur:  # 3cb
            return current
        return self._fitter(current, candidate)  # 3cc

    def merge(self) -> TopologyHint:
        default = self.numa_info.default_affinity_mask()
        best: TopologyHint | None = None
        for permutation in _permutations(self.hints):
            best = self.compare(best, merge_permutation(default, permutation))
        return best if best is not None else TopologyHint(default, False)


def filter_single_numa_hints(all_hints: Sequence[Sequence[TopologyHint]]) -> list[list[TopologyHint]]:
    """filterSingleNumaHints: only preferred hints that are "don't care" or name one NUMA node."""
    return [[h for h in hints if h.preferred and (h.affinity is None or h.affinity.count() == 1)]
            for hints in all_hints]


def merge(policy_name: str, numa_info: NUMAInfo, options: PolicyOptions,
          providers_hints: Iterable[ProviderHints]) -> tuple[TopologyHint, bool]:
    """Policy.Merge: the best hint and whether the pod may be admitted with it. none: no hint,
    always admitted; best-effort: admitted whatever the hint; restricted: only a preferred hint;
    single-numa-node: only a preferred hint of one NUMA node (any NUMA node → no affinity)."""
    if policy_name == POLICY_NONE:
        return TopologyHint(None, False), True
    filtered = filter_providers_hints(providers_hints)
    if policy_name == POLICY_SINGLE_NUMA_NODE:
        filtered = filter_single_numa_hints(filtered)
    best = HintMerger(numa_info, filtered, policy_name, options).merge()
    if policy_name == POLICY_SINGLE_NUMA_NODE:
        assert best.affinity is not None
        if best.affinity.is_equal(numa_info.default_affinity_mask()):
            best = TopologyHint(None, best.preferred)
    if policy_name == POLICY_BEST_EFFORT:
        return best, True
    return best, best.preferred


# --- the manager and its scopes (topology_manager.go, scope*.go) ----------------------------------


@dataclass(frozen=True)
class TopologyManager:
    """What NewManager builds: the policy, the scope, the options and the NUMA nodes."""

    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    numa_info: NUMAInfo = NUMAInfo(nodes=(0,))
    options: PolicyOptions = PolicyOptions()


def new_manager(policy: str, scope: str, options: Mapping[str, object] | None, numa_info: NUMAInfo,
                where: str | None = None, *, distances: bool = True) -> TopologyManager:
    """NewManager: none needs nothing else (its scope is irrelevant); otherwise the options parsed,
    a host with more NUMA nodes than max-allowable-numa-nodes refused, prefer-closest-numa-nodes
    needing every node's distances (not checked with `distances=False`). Errors: TopologyPolicyOptionError with kubelet's messages."""
    if policy == POLICY_NONE:
        return TopologyManager(policy=POLICY_NONE, scope=SCOPE_CONTAINER, numa_info=numa_info)
    opts = parse_policy_options(options, where)
    if policy not in POLICIES:
        raise TopologyPolicyOptionError(f'unknown policy: "{policy}"', where, "topologyManagerPolicy")
    if scope not in SCOPES:
        raise TopologyPolicyOptionError(f'unknown scope: "{scope}"', where, "topologyManagerScope")
    if len(numa_info.nodes) > opts.max_allowable_numa_nodes:
        raise TopologyPolicyOptionError(
            f"unsupported on machines with more than {opts.max_allowable_numa_nodes} NUMA Nodes", where,
            "topologyManagerPolicy")
    if opts.prefer_closest_numa and distances:
        for node in numa_info.nodes:
            row = numa_info.distances.get(node)
            if not row or len(row) <= max(numa_info.nodes):
                raise TopologyPolicyOptionError(
                    f"cannot discover NUMA topology: error getting NUMA distances from sysfs: node{node}/distance "
                    "is missing or short", where, f"topologyManagerPolicyOptions.{PREFER_CLOSEST_NUMA_NODES}")
    return TopologyManager(policy=policy, scope=scope, numa_info=numa_info, options=opts)


class HintProvider(Protocol):
    """HintProvider (topology_manager.go), for one pod: its hints per container or for the whole
    pod, and the allocation made with the merged hint."""

    def container_hints(self, container: str) -> ProviderHints: ...

    def pod_hints(self) -> ProviderHints: ...

    def allocate(self, container: str, hint: TopologyHint) -> None: ...


@dataclass(frozen=True)
class Refusal:
    """Admission refused: kubelet's Reason and Message, and the containers it concerns (the one
    whose hint was not admitted; with the pod scope, every container of the pod)."""

    containers: tuple[str, ...]
    hint: TopologyHint
    reason: str = ERROR_TOPOLOGY_AFFINITY
    message: str = TOPOLOGY_AFFINITY_MESSAGE


def admit(manager: TopologyManager, containers: Sequence[str], provider: HintProvider,
          on_hint: Callable[[str, TopologyHint], None] | None = None) -> Refusal | None:
    """Scope.Admit for one pod whose containers (init containers first) are `containers`.
    none: each container allocated without an affinity (scope.go admitPolicyNone). container
    scope: container by container, its hints merged, refused when the policy does not admit the
    hint, else allocated with it. pod scope: the pod's hints merged once, refused or every
    container allocated with that hint. Errors the provider raises while allocating propagate.
    `on_hint` sees each container's hint (for explanations)."""
    if manager.policy == POLICY_NONE:
        for name in containers:
            provider.allocate(name, TopologyHint(None, False))
        return None

    def merge_(hints: ProviderHints) -> tuple[TopologyHint, bool]:
        return merge(manager.policy, manager.numa_info, manager.options, [hints])

    if manager.scope == SCOPE_POD:
        hint, ok = merge_(provider.pod_hints())
        if not ok:
            return Refusal(tuple(containers), hint)
        for name in containers:
            if on_hint:
                on_hint(name, hint)
            provider.allocate(name, hint)
        return None
    for name in containers:
        hint, ok = merge_(provider.container_hints(name))
        if not ok:
            return Refusal((name,), hint)
        if on_hint:
            on_hint(name, hint)
        provider.allocate(name, hint)
    return None
