"""kubelet's topology manager (sdqos/kube/topologymanager.py) against its own test tables
(tests/k8s_cases/topologymanager_cases.py), the CPU manager as its hint provider against
topology_hints_test.go and policy_static_test.go (tests/k8s_cases/cpumanager_cases.py), and the
admission sdqos runs (TopologyAffinityError, one line)."""

from __future__ import annotations

import pytest

from sdqos.errors import CPUsUnavailable, TopologyAffinityError, TopologyPolicyOptionError
from sdqos.kube import cpumanager as cm
from sdqos.kube import topologymanager as tm
from sdqos.kube.cpuset import CPUSet, parse
from sdqos.kube.cputopology import CPUInfo, make_topology
from sdqos.kube.topologymanager import BitMask, TopologyHint

from ..helpers import pod_from
from ..k8s_cases import cpumanager_cases as CK
from ..k8s_cases import topologymanager_cases as K
from .test_cpumanager import topo


def mask(bits) -> BitMask:
    return BitMask.of(*bits)


def hint(h, nodes=()) -> TopologyHint:
    bits, preferred = h
    if bits is None:
        return TopologyHint(None, preferred)
    return TopologyHint(mask(nodes if bits == K.DEFAULT else bits), preferred)


def providers(case_providers, nodes):
    out = []
    for p in case_providers:
        if p is None:
            out.append(None)
            continue
        out.append({r: None if hs is None else [hint(h, nodes) for h in hs] for r, hs in p.items()})
    return out


def numa_info(name: str) -> tm.NUMAInfo:
    d = K.NUMA_INFO[name]
    return tm.NUMAInfo(nodes=tuple(sorted(d)), distances=d)


# --- bitmask_test.go ------------------------------------------------------------------------------


def test_bitmask_tables():
    assert str(BitMask()) == "00"
    for bits, text in K.BITMASK_NEW:
        assert str(mask(bits)) == text
    for bits, text in K.BITMASK_ADD:
        m = BitMask()
        try:
            m = m.add(*bits)
        except ValueError as exc:
            assert str(exc) == "bit number must be in range 0-63"
        assert str(m) == text
    for bits, remove, text in K.BITMASK_REMOVE:
        m = mask(bits)
        try:
            m = m.remove(*remove)
        except ValueError:
            pass
        assert str(m) == text
    for masks, text in K.BITMASK_AND:
        ms = [mask(b) for b in masks]
        assert str(tm.and_masks(ms[0], *ms)) == text
    for masks, text in K.BITMASK_OR:
        ms = [mask(b) for b in masks]
        assert str(tm.or_masks(ms[0], *ms)) == text
    for bits in K.BITMASK_CLEAR:
        assert str(BitMask()) == "00" and mask(bits).and_(BitMask()).is_empty()
    for bits in K.BITMASK_FILL:
        assert str(mask(bits).or_(BitMask.filled())) == "1" * 64
    for bits, empty in K.BITMASK_IS_EMPTY:
        assert mask(bits).is_empty() == empty
    for bits, bit, is_set in K.BITMASK_IS_SET:
        assert mask(bits).is_set(bit) == is_set
    for bits, check, any_set in K.BITMASK_ANY_SET:
        assert mask(bits).any_set(check) == any_set
    for a, b, equal in K.BITMASK_IS_EQUAL:
        assert mask(a).is_equal(mask(b)) == equal
    for bits, count in K.BITMASK_COUNT:
        assert mask(bits).count() == count
    for bits, got in K.BITMASK_GET_BITS:
        assert mask(bits).bits() == got
    for a, b, narrower in K.BITMASK_NARROWER:
        assert mask(a).is_narrower_than(mask(b)) == narrower
    for n in K.BITMASK_ITERATE[:4]:  # 16 bits: 65535 masks, counted below without building them all
        assert len(tm.iterate_bitmasks(list(range(n)))) == (1 << n) - 1
    assert sum(1 for _ in tm.iterate_bitmasks(list(range(12)))) == (1 << 12) - 1


def test_iterate_bitmasks_order_is_upstreams():
    assert [m.bits() for m in tm.iterate_bitmasks([0, 1, 2])] == [[0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]]


# --- policy_test.go merges ------------------------------------------------------------------------


def _merge_cases():
    for test, info, closest, policy, lists in K.MERGE_RUNS:
        for lst in lists:
            for name, provs, expected in K.MERGE_CASES[lst]:
                yield pytest.param(info, closest, policy, provs, expected, id=f"{test}/{lst}/{name}")


@pytest.mark.parametrize("info,closest,policy,provs,expected", list(_merge_cases()))
def test_policy_merge(info, closest, policy, provs, expected):
    ni = numa_info(info)
    got, admit = tm.merge(policy, ni, tm.PolicyOptions(prefer_closest_numa=closest), providers(provs, ni.nodes))
    assert got == hint(expected, ni.nodes)
    assert admit == (True if policy == "best-effort" else got.preferred)


@pytest.mark.parametrize("policy", sorted(K.CAN_ADMIT))
def test_can_admit_pod_result(policy):
    for h, admitted in K.CAN_ADMIT[policy]:
        # a provider answering exactly this hint: the merge keeps it (nil affinity → the default mask,
        # which single-numa-node turns back into nil)
        ni = numa_info("commonNUMAInfoTwoNodes")
        _, admit = tm.merge(policy, ni, tm.PolicyOptions(), [{"r": [hint(h)]}])
        assert admit == admitted


def test_none_policy_admits_without_a_hint():
    assert tm.merge("none", numa_info("commonNUMAInfoTwoNodes"), tm.PolicyOptions(), [{"r": []}]) == \
        (TopologyHint(None, False), True)


@pytest.mark.parametrize("name,hints,expected", K.FILTER_SINGLE_NUMA, ids=[c[0] for c in K.FILTER_SINGLE_NUMA])
def test_filter_single_numa_hints(name, hints, expected):
    got = tm.filter_single_numa_hints([[hint(h) for h in hs] for hs in hints])
    assert got == [[hint(h) for h in hs] for hs in expected]


def test_max_of_min_affinity_counts():
    for hints, expected in K.MAX_OF_MIN:
        assert tm.max_of_min_affinity_counts([[hint(h) for h in hs] for hs in hints]) == expected


@pytest.mark.parametrize("case", K.COMPARE, ids=[c[0] for c in K.COMPARE])
def test_compare_hints_narrowest(case):
    _, best, current, candidate, expected = case
    merger = tm.HintMerger(tm.NUMAInfo(nodes=()), [], "best-effort")
    object.__setattr__(merger, "best_non_preferred_count", best)  # as upstream sets the field
    cur = None if current is None else hint(current)
    cand = hint(candidate)
    got = merger.compare(cur, cand)
    assert got is (cur if expected == "current" else cand)


def test_closest_takes_the_shortest_average_distance_then_the_lower_bits():
    ni = numa_info("commonNUMAInfoEightNodes")
    assert ni.closest(mask((0, 4)), mask((0, 2))) == mask((0, 2))
    assert ni.closest(mask((0, 1)), mask((2, 3))) == mask((0, 1))  # same average: lower bits
    assert ni.closest(mask((4,)), mask((0, 2))) == mask((4,))  # fewer nodes first


# --- options and NewManager (policy_options.go, topology_manager.go) ------------------------------


def test_policy_options_as_kubelet():
    assert tm.parse_policy_options({"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "12"}) == \
        tm.PolicyOptions(prefer_closest_numa=True, max_allowable_numa_nodes=12)
    assert tm.parse_policy_options(None) == tm.PolicyOptions(False, 8)
    for options, message in [
            ({"bogus": "1"}, 'unknown Topology Manager Policy option: "bogus"'),
            ({"prefer-closest-numa-nodes": "x"}, 'bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: '
             'parsing "x": invalid syntax'),
            ({"max-allowable-numa-nodes": "7"}, 'the minimum value of "max-allowable-numa-nodes" should not be less than 8'),
            ({"max-allowable-numa-nodes": "1.5"}, 'unable to convert policy option to integer "max-allowable-numa-nodes": '
             'strconv.Atoi: parsing "1.5": invalid syntax')]:
        with pytest.raises(TopologyPolicyOptionError) as err:
            tm.parse_policy_options(options, "node.yaml")
        assert err.value.message == message


def test_new_manager_refuses_more_numa_nodes_than_allowed_and_needs_distances_for_closest():
    nine = tm.NUMAInfo(nodes=tuple(range(9)))
    with pytest.raises(TopologyPolicyOptionError, match="unsupported on machines with more than 8 NUMA Nodes"):
        tm.new_manager("restricted", "container", None, nine)
    assert tm.new_manager("restricted", "pod", {"max-allowable-numa-nodes": "9"}, nine).scope == "pod"
    assert tm.new_manager("none", "whatever", {"bogus": "1"}, nine).policy == "none"  # none: nothing else read
    with pytest.raises(TopologyPolicyOptionError, match="distances"):
        tm.new_manager("best-effort", "container", {"prefer-closest-numa-nodes": "true"}, tm.NUMAInfo(nodes=(0, 1)))


# --- the CPU manager as hint provider (topology_hints_test.go, policy_static_test.go) ---------------


def _policy(t) -> cm.StaticPolicy:
    return cm.StaticPolicy(topology=t, reserved=CPUSet(), reserved_physical=CPUSet())


def _sorted(hints):
    """LessThan: preferred first, then narrower."""
    return sorted(hints, key=lambda h: (not h.preferred, h.affinity.count(), h.affinity.value))


@pytest.mark.parametrize("case", CK.TOPOLOGY_HINT_CASES, ids=[c["name"] for c in CK.TOPOLOGY_HINT_CASES])
@pytest.mark.parametrize("scope", ["container", "pod"])
def test_cpu_topology_hints(case, scope):
    t = topo(case["topo"])
    n = str(case["cpus"])
    pod = pod_from(CK.make_pod("fakePod", "fakeContainer", n, n), defaults=False)
    entries = {pod.uid: {c: parse(s) for c, s in case["assignments"].items()}} if case["assignments"] else {}
    state = cm.CPUManagerState("static", parse(case["default"]), entries)
    if scope == "container":
        got = cm.get_topology_hints(_policy(t), state, pod, pod.containers[0])
    else:
        got = cm.get_pod_topology_hints(_policy(t), state, pod)
    hints = (got or {}).get("cpu")
    if not case["expect"]:
        assert not hints  # upstream: no hints either way (nil or empty)
        if case["expect"] == []:
            assert hints == []  # already allocated with another count: no possible affinity
        return
    assert _sorted(hints) == _sorted([TopologyHint(mask(b), p) for b, p in case["expect"]])


def test_a_container_without_exclusive_cpus_has_no_preference():
    t = topo("returnMachineInfo")
    pod = pod_from(CK.make_pod("p", "c", "500m", "500m"), defaults=False)
    state = cm.CPUManagerState("static", t.details.cpus())
    assert cm.get_topology_hints(_policy(t), state, pod, pod.containers[0]) is None
    assert cm.get_pod_topology_hints(_policy(t), state, pod) is None


@pytest.mark.parametrize("case", CK.ALLOCATE_CPUS_MASKED_CASES, ids=[c["name"] for c in CK.ALLOCATE_CPUS_MASKED_CASES])
def test_allocate_cpus_with_a_numa_affinity(case):
    t = topo(case["topo"])
    policy = cm.new_static_policy(t, 0)
    state = cm.validate_state(policy, cm.CPUManagerState("static", parse(case["default"])))
    assert cm.allocate_cpus(policy, state, case["num"], mask(case["mask"])) == parse(case["expect"])
    pod = pod_from(CK.make_pod("p", "c", str(case["num"]), str(case["num"])), defaults=False)
    assert cm.allocate(policy, state, pod, pod.containers[0], None, mask(case["mask"])).cpus == parse(case["expect"])


# --- admission: the scopes with the CPU manager (scope_container.go, scope_pod.go) -----------------


def _two_nodes():
    """The qemu guest of tests/v2/test_v2_numa.py: node0 = CPUs 0-1, node1 = CPUs 2-3, one thread a core."""
    return make_topology({c: CPUInfo(numa_node=c // 2, socket=c // 2, core=c) for c in range(4)})


def _manager(policy, scope="container"):
    return tm.new_manager(policy, scope, None, tm.NUMAInfo(nodes=(0, 1)))


def _gu(name, *cpus, init=()):
    doc = {"metadata": {"name": name, "uid": name}, "spec": {
        "initContainers": [{"name": f"i{i}", "resources": {"requests": {"cpu": str(c), "memory": "1G"},
                                                           "limits": {"cpu": str(c), "memory": "1G"}}}
                           for i, c in enumerate(init)],
        "containers": [{"name": f"c{i}", "resources": {"requests": {"cpu": str(c), "memory": "1G"},
                                                       "limits": {"cpu": str(c), "memory": "1G"}}}
                       for i, c in enumerate(cpus)]}}
    return pod_from(doc, defaults=False)


def _start(t, reserved="0"):
    policy = cm.new_static_policy(t, 1, parse(reserved))
    return policy, cm.validate_state(policy, cm.CPUManagerState("static"))


def test_single_numa_node_places_a_pod_on_one_node_and_refuses_what_cannot_be_aligned():
    policy, state = _start(_two_nodes())
    mgr = _manager("single-numa-node")
    one = cm.admit_pod(policy, state, _gu("one", 1), "t/one", mgr)
    assert one.get("one", "c0") == CPUSet.of(1)  # hints 01 and 10 preferred: the narrowest, 01
    two = cm.admit_pod(policy, one, _gu("two", 2), "t/two", mgr)
    assert two.get("two", "c0") == CPUSet.of(2, 3)
    with pytest.raises(TopologyAffinityError) as err:
        cm.admit_pod(policy, state, _gu("big", 3), "t/big", mgr)
    assert str(err.value) == (
        "pod t/big: container c0: TopologyAffinityError: Resources cannot be allocated with Topology locality "
        '(topologyManagerPolicy single-numa-node, scope container: 3 exclusive CPUs needed; free CPUs by NUMA node: '
        'node0: "1", node1: "2-3")')
    assert isinstance(err.value, CPUsUnavailable) and "\n" not in str(err.value)
    # restricted: 11 is preferred (no single node holds 3 CPUs), so admitted across both nodes
    assert cm.admit_pod(policy, state, _gu("big", 3), "t/big", _manager("restricted")).get("big", "c0") == parse("1-3")
    assert cm.admit_pod(policy, state, _gu("big", 3), "t/big", _manager("best-effort")).get("big", "c0") == parse("1-3")


def test_restricted_refuses_a_pod_whose_hint_is_not_preferred():
    policy, state = _start(_two_nodes())
    held = cm.admit_pod(policy, state, _gu("a", 1), "t/a", _manager("none"))  # CPU 1
    held = cm.admit_pod(policy, held, _gu("b", 1), "t/b", _manager("none"))  # CPU 2
    held = cm.remove_container(held, "a", "c0")  # free: node0 {1}, node1 {3}
    # 2 CPUs: one node could hold them (01 and 10 would be preferred) but neither has them free: 11 only
    for policy_name in ("restricted", "single-numa-node"):
        with pytest.raises(TopologyAffinityError, match=f"topologyManagerPolicy {policy_name}"):
            cm.admit_pod(policy, held, _gu("c", 2), "t/c", _manager(policy_name))
    got = cm.admit_pod(policy, held, _gu("c", 2), "t/c", _manager("best-effort"))
    assert got.get("c", "c0") == CPUSet.of(1, 3)  # best-effort: admitted on the non-preferred 11


def test_container_scope_aligns_each_container_and_pod_scope_the_whole_pod():
    policy, state = _start(_two_nodes(), reserved="0")
    pod = _gu("p", 1, 1)
    by_container = cm.admit_pod(policy, state, pod, "t/p", _manager("single-numa-node", "container"))
    assert by_container.get("p", "c0") == CPUSet.of(1) and by_container.get("p", "c1") == CPUSet.of(2)
    by_pod = cm.admit_pod(policy, state, pod, "t/p", _manager("single-numa-node", "pod"))
    assert by_pod.get("p", "c0") | by_pod.get("p", "c1") == CPUSet.of(2, 3)  # the pod's 2 CPUs on node1
    with pytest.raises(TopologyAffinityError) as err:
        cm.admit_pod(policy, state, _gu("q", 2, 1), "t/q", _manager("single-numa-node", "pod"))
    assert str(err.value).startswith("pod t/q: containers c0, c1: TopologyAffinityError: ")
    assert "scope pod: 3 exclusive CPUs needed" in str(err.value)


def test_no_manager_is_the_none_policy():
    policy, state = _start(_two_nodes())
    assert cm.admit_pod(policy, state, _gu("big", 3), "t/big") == \
        cm.admit_pod(policy, state, _gu("big", 3), "t/big", _manager("none"))
