"""The static CPU manager (sdqos/kube/cpumanager.py) against kubelet's own test tables
(tests/k8s_cases/cpumanager_cases.py), plus properties of every allocation."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdqos.errors import CPUAllocationError, CPUManagerStateError, CPUPolicyOptionError, SMTAlignmentError
from sdqos.kube import cpumanager as cm
from sdqos.kube.cpuset import CPUSet, parse
from sdqos.kube.cputopology import CPUInfo, CPUTopology, make_topology

from ..helpers import pod_from
from ..k8s_cases import cpumanager_cases as K


def topo(name: str) -> CPUTopology:
    lit = K.TOPOLOGIES[name]
    details = {cpu: CPUInfo(numa_node=numa, socket=socket, core=core) for cpu, (core, socket, numa) in lit["cpus"].items()}
    t = make_topology(details, num_sockets=lit["num_sockets"], num_cores=lit["num_cores"])
    assert t.num_cpus == lit["num_cpus"]
    return t


def resolve(spec, t: CPUTopology) -> CPUSet:
    """A case's CPU set: list syntax, or the quad-socket tokens (see the cases' schema)."""
    if isinstance(spec, str):
        return parse(spec)
    if "all_minus" in spec:
        return t.details.cpus() - resolve(spec["all_minus"], t)
    return t.details.cpus_in_sockets(spec["socket"]) | parse(spec.get("plus", ""))


def state_of(case, t: CPUTopology) -> cm.CPUManagerState:
    entries = {pod: {c: resolve(s, t) for c, s in conts.items()} for pod, conts in case["assignments"].items()}
    return cm.CPUManagerState("static", resolve(case["default"], t), entries)


def _ids(cases):
    return [c["name"] for c in cases]


# --- topologies -----------------------------------------------------------------------------------


def test_the_quad_socket_literal_matches_its_socket_comment():
    t = topo("topoQuadSocketFourWayHT")
    assert t.details.cpus() == CPUSet(range(288))
    for socket, text in K.QUAD_SOCKET_COMMENT.items():
        assert t.details.cpus_in_sockets(socket) == parse(text), socket
    assert t.cpus_per_core() == 4 and t.num_numa_nodes == 4


# --- cpu_assignment_test.go -----------------------------------------------------------------------


@pytest.mark.parametrize("case", K.ACCUMULATOR_CASES, ids=_ids(K.ACCUMULATOR_CASES))
def test_accumulator(case):
    acc = cm._Accumulator(topo(case["topo"]), parse(case["available"]), 0)
    fn = case["function"]
    if fn == "freeSockets":
        assert sorted(acc.free_sockets()) == case["expect"]
    elif fn == "freeNUMANodes":
        assert acc.free_numa_nodes() == case["expect"]
    elif fn == "freeSocketsAndNUMANodes":
        assert acc.free_numa_nodes() == case["expect"]["numa"]
        assert acc.free_sockets() == case["expect"]["sockets"]
    elif fn == "freeCores":
        assert acc.free_cores() == case["expect"]
    else:
        assert acc.free_cpus() == case["expect"]


@pytest.mark.parametrize("case", K.TAKE_CASES, ids=_ids(K.TAKE_CASES))
def test_accumulator_take(case):
    acc = cm._Accumulator(topo(case["topo"]), parse(case["available"]), case["num_cpus"])
    taken = 0
    for text in case["take"]:
        acc.take(parse(text))
        taken += len(parse(text))
    assert acc.is_satisfied() == case["satisfied"]
    assert acc.is_failed() == case["failed"]
    for text in case["take"]:
        assert not parse(text) & acc.details.cpus()
        assert parse(text) <= acc.result
    assert acc.needed == case["num_cpus"] - taken


@pytest.mark.parametrize("case", K.TAKE_BY_TOPOLOGY_CASES, ids=_ids(K.TAKE_BY_TOPOLOGY_CASES))
def test_take_by_topology(case):
    t = topo(case["topo"])
    if case["error"]:
        with pytest.raises(CPUAllocationError) as e:
            cm.take_by_topology(t, parse(case["available"]), case["num_cpus"])
        assert str(e.value) == case["error"]
        return
    assert cm.take_by_topology(t, parse(case["available"]), case["num_cpus"]) == parse(case["result"])


# --- policy_static_test.go ------------------------------------------------------------------------


def test_reserved_cpus_are_one_whole_core_first():
    """NewStaticPolicy's own example: 8 CPUs with HT, 2 reserved → {0, 4}."""
    assert cm.new_static_policy(topo("topoSingleSocketHT"), 2).reserved == CPUSet.of(0, 4)


@pytest.mark.parametrize("case", K.POLICY_START_CASES, ids=_ids(K.POLICY_START_CASES))
def test_policy_start(case):
    t = topo(case["topo"])
    reserved = parse(case.get("reserved") or "")
    if "new_error" in case:
        with pytest.raises(CPUPolicyOptionError) as e:
            cm.new_static_policy(t, case["num_reserved"], reserved, case["options"])
        assert e.value.message == case["new_error"]
        return
    policy = cm.new_static_policy(t, case["num_reserved"], reserved, case["options"])
    state = state_of(case, t)
    if "error" in case:
        with pytest.raises(CPUManagerStateError) as e:
            cm.validate_state(policy, state)
        assert str(e.value) == case["error"]
        return
    assert cm.validate_state(policy, state).default_cpuset == parse(case["expect_default"])


@pytest.mark.parametrize("case", K.POLICY_ADD_CASES, ids=_ids(K.POLICY_ADD_CASES))
def test_policy_allocate(case):
    t = topo(case["topo"])
    reserved = parse(case["reserved"]) if case["reserved"] else CPUSet()
    policy = cm.new_static_policy(t, case["num_reserved"], reserved, case["options"])
    state = state_of(case, t)
    pod = pod_from(case["pod"], defaults=False)
    container = pod.containers[0]
    err = case["error"]
    if err:
        expected = SMTAlignmentError(**err) if isinstance(err, dict) else None
        with pytest.raises(CPUAllocationError) as e:
            cm.allocate(policy, state, pod, container)
        if expected is not None:
            assert e.value == expected and str(e.value) == str(expected)
        else:
            assert type(e.value) is CPUAllocationError and str(e.value) == err
        return
    result = cm.allocate(policy, state, pod, container)
    got = result.state.get(pod.uid, container.name)
    if case["alloc"]:
        assert got == resolve(case["expect"], t)
        assert result.cpus == got
        assert not got & result.state.default_cpuset
    else:
        assert got is None and result.cpus is None and result.state == state


@pytest.mark.parametrize("case", K.ALLOCATE_CPUS_CASES, ids=_ids(K.ALLOCATE_CPUS_CASES))
def test_allocate_cpus_without_a_hint(case):
    t = topo(case["topo"])
    policy = cm.new_static_policy(t, 0)
    state = cm.validate_state(policy, cm.CPUManagerState("static", parse(case["default"])))
    pod = pod_from(K.make_pod("p", "c", str(case["num"]), str(case["num"])), defaults=False)
    assert cm.allocate(policy, state, pod, pod.containers[0]).cpus == parse(case["expect"])


@pytest.mark.parametrize("case", K.REUSE_CASES, ids=_ids(K.REUSE_CASES))
def test_init_containers_cpus_reused(case):
    t = topo(case["topo"])
    policy = cm.new_static_policy(t, 0)
    pod = pod_from(case["pod"], defaults=False)
    state = cm.CPUManagerState("static", parse(case["default"]))
    result = cm.allocate_pod(policy, state, pod)
    assert result.state.default_cpuset == parse(case["after_alloc"])
    if case["remove"]:
        after = cm.remove_container(result.state, pod.uid, case["remove"])
        assert after.default_cpuset == parse(case["after_remove"])
        assert after.get(pod.uid, case["remove"]) is None


@pytest.mark.parametrize("case", K.REMOVE_CASES, ids=_ids(K.REMOVE_CASES))
def test_remove_container(case):
    t = topo(case["topo"])
    after = cm.remove_container(state_of(case, t), case["pod_uid"], case["container"])
    assert after.default_cpuset == parse(case["expect"])
    assert after.get(case["pod_uid"], case["container"]) is None


# --- options ----------------------------------------------------------------------------------------


def test_options_parsed_as_kubelet():
    assert cm.parse_options({"full-pcpus-only": "True", "strict-cpu-reservation": "0"}) == cm.StaticPolicyOptions(
        full_pcpus_only=True, strict_cpu_reservation=False)
    with pytest.raises(CPUPolicyOptionError, match='unknown CPU Manager Policy option: "nope"'):
        cm.parse_options({"nope": "true"})
    with pytest.raises(CPUPolicyOptionError, match='bad value for option "full-pcpus-only"'):
        cm.parse_options({"full-pcpus-only": "yes"})


@pytest.mark.parametrize("option", sorted(cm.KNOWN_OPTIONS - cm.SUPPORTED_OPTIONS))
def test_options_sdqos_does_not_implement_are_refused_by_name(option):
    with pytest.raises(CPUPolicyOptionError) as e:
        cm.parse_options({option: "true"}, where="node.yaml")
    assert option in str(e.value) and "not supported" in str(e.value) and e.value.where == "node.yaml"


def test_strict_cpu_reservation_keeps_reserved_cpus_out_of_the_shared_pool():
    t = topo("topoDualSocketHT")
    loose = cm.new_static_policy(t, 2)
    strict = cm.new_static_policy(t, 2, options={"strict-cpu-reservation": "true"})
    empty = cm.CPUManagerState("static")
    assert cm.validate_state(loose, empty).default_cpuset == parse("0-11")
    assert cm.validate_state(strict, empty).default_cpuset == parse("1-5,7-11")


def test_a_reservation_that_cannot_be_made_is_refused():
    with pytest.raises(CPUPolicyOptionError, match="unable to reserve the required amount of CPUs"):
        cm.new_static_policy(topo("topoSingleSocketHT"), 9)
    with pytest.raises(CPUPolicyOptionError, match="did not equal 2"):
        cm.new_static_policy(topo("topoSingleSocketHT"), 2, CPUSet.of(0))


def test_pod_has_exclusive_cpus():
    t = topo("topoSingleSocketHT")
    policy = cm.new_static_policy(t, 1)
    state = cm.validate_state(policy, cm.CPUManagerState("static"))
    gu = pod_from(K.make_pod("gu", "c", "2", "2"), defaults=False)
    frac = pod_from(K.make_pod("frac", "c", "1500m", "1500m"), defaults=False)
    state = cm.allocate(policy, state, gu, gu.containers[0]).state
    state = cm.allocate(policy, state, frac, frac.containers[0]).state
    assert cm.pod_has_exclusive_cpus(state, gu) and cm.container_has_exclusive_cpus(state, "gu", "c")
    assert not cm.pod_has_exclusive_cpus(state, frac)


def test_pod_guaranteed_cpus_counts_sidecars_with_the_app_containers():
    pod = pod_from(K.make_multi_container_pod([("2", "2"), ("3", "3")], [("1", "1")], restart_always=(0,)),
                   defaults=False)
    # init peak: sidecar 2 + init 3 = 5; long-running: app 1 + sidecar 2 = 3
    assert cm.pod_guaranteed_cpus(pod) == 5


# --- properties -------------------------------------------------------------------------------------


@st.composite
def topologies(draw):
    sockets = draw(st.integers(1, 3))
    numa_per_socket = draw(st.integers(1, 2))
    cores = draw(st.integers(1, 4))
    threads = draw(st.integers(1, 2))
    details = {}
    cpu = 0
    for s in range(sockets):
        for n in range(numa_per_socket):
            for _ in range(cores):
                first = cpu
                for _ in range(threads):
                    details[cpu] = CPUInfo(numa_node=s * numa_per_socket + n, socket=s, core=first)
                    cpu += 1
    # renumber CPUs so siblings are not adjacent (as on real hosts: 0 and N/2 share a core)
    order = draw(st.permutations(sorted(details)))
    return make_topology({order[i]: info for i, info in details.items()})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=topologies(), data=st.data())
def test_allocations_never_hand_out_a_cpu_twice_and_cover_all_cpus(t, data):
    options = data.draw(st.sampled_from([{}, {"full-pcpus-only": "true"}, {"strict-cpu-reservation": "true"}]))
    # kubelet's NewManager requires at least one reserved CPU for the static policy
    num_reserved = data.draw(st.integers(1, min(2, t.num_cpus)))
    policy = cm.new_static_policy(t, num_reserved, options=options)
    state = cm.validate_state(policy, cm.CPUManagerState("static"))
    all_cpus = t.details.cpus() - (policy.reserved if policy.options.strict_cpu_reservation else CPUSet())
    live: list[tuple[str, str]] = []
    for step in range(data.draw(st.integers(1, 8))):
        if live and data.draw(st.booleans()):
            uid, name = live.pop(data.draw(st.integers(0, len(live) - 1)))
            state = cm.remove_container(state, uid, name)
        else:
            n = data.draw(st.integers(1, t.num_cpus))
            pod = pod_from(K.make_pod(f"p{step}", "c", str(n), str(n)), defaults=False)
            try:
                result = cm.allocate(policy, state, pod, pod.containers[0])
            except CPUAllocationError:
                continue
            assert result.cpus is not None and len(result.cpus) == n
            assert not result.cpus & policy.reserved  # reserved CPUs are never given exclusively
            state = result.state
            live.append((pod.uid, "c"))
        assigned = [s for conts in state.entries.values() for s in conts.values()]
        assert sum(len(s) for s in assigned) == len(CPUSet().union(*assigned))  # no CPU twice
        assert not state.default_cpuset & state.assigned()
        assert state.default_cpuset | state.assigned() == all_cpus
        if state.default_cpuset:  # empty (strict reservation, all given out): kubelet's own check refuses it
            assert cm.validate_state(policy, state) == state


def test_num_reserved_cpus_as_kubelets_new_manager():
    assert cm.num_reserved_cpus(500, 600) == 2  # ceil(1.1)
    assert cm.num_reserved_cpus(1000, 0) == 1
    assert cm.num_reserved_cpus(1000, 3000, CPUSet.of(0, 4)) == 2  # reservedSystemCPUs replaces both
    with pytest.raises(CPUPolicyOptionError, match="requires systemreserved.cpu \\+ kubereserved.cpu"):
        cm.num_reserved_cpus(0, 0)


def test_an_empty_assignment_is_not_exclusive():
    """GetExclusiveCPUs(...).IsEmpty(): an entry holding no CPU does not drop the quota."""
    state = cm.CPUManagerState("static", parse("0-7"), {"p": {"c": CPUSet()}})
    pod = pod_from({**K.make_pod("p", "c", "1", "1")}, defaults=False)
    assert not cm.pod_has_exclusive_cpus(state, pod)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=topologies(), data=st.data())
def test_pods_with_init_containers_and_sidecars(t, data):
    """Whole pods (init containers, sidecars, app containers) allocated in kubelet's order and
    removed again: an init container's CPUs may pass to the containers after it (it has exited),
    but no two containers that run together share a CPU, no two pods share one, and pool ∪
    assignments stays every CPU; removing every container gives the pool back whole."""
    policy = cm.new_static_policy(t, 1)
    state = cm.validate_state(policy, cm.CPUManagerState("static"))
    full = state.default_cpuset
    cpu = st.integers(1, max(1, t.num_cpus // 2)).map(lambda n: (str(n), str(n)))
    pods = []
    for i in range(data.draw(st.integers(1, 3))):
        init = data.draw(st.lists(cpu, max_size=2))
        sidecars = tuple(j for j in range(len(init)) if data.draw(st.booleans()))
        apps = data.draw(st.lists(cpu, min_size=1, max_size=2))
        pod = pod_from(K.make_multi_container_pod(init, apps, restart_always=sidecars), defaults=False)
        pod = dataclasses.replace(pod, uid=f"pod{i}")
        try:
            state = cm.allocate_pod(policy, state, pod).state
        except CPUAllocationError:
            continue  # a container did not fit: this pod is left out, the state stays as it was
        pods.append(pod)
        running = [c for c in pod.init_containers if c.restart_always] + list(pod.containers)
        held = [state.get(pod.uid, c.name) or CPUSet() for c in running]
        assert sum(map(len, held)) == len(CPUSet().union(*held))
    per_pod = [CPUSet().union(*state.entries.get(p.uid, {}).values()) for p in pods]
    assert sum(map(len, per_pod)) == len(CPUSet().union(*per_pod))
    assert not state.default_cpuset & state.assigned()
    assert state.default_cpuset | state.assigned() == full
    for pod in pods:
        for c in pod.init_containers + pod.containers:
            state = cm.remove_container(state, pod.uid, c.name)
            # a removed init container's CPUs that an app container reuses stay out of the pool
            assert not state.default_cpuset & state.assigned()
    assert state.default_cpuset == full and not state.assigned()


# --- admission at start and release at removal --------------------------------------------------------


def test_admit_pod_allocates_and_a_pod_that_cannot_have_its_cpus_is_refused_in_one_line():
    t = make_topology({c: CPUInfo(numa_node=0, socket=0, core=c) for c in range(4)})
    policy = cm.new_static_policy(t, 1, [0])
    state = cm.validate_state(policy, cm.CPUManagerState("static"))
    a = pod_from(K.make_pod("uid-a", "app", "2", "2"), defaults=False)
    state = cm.admit_pod(policy, state, a, "default/a")
    assert state.get("uid-a", "app") == CPUSet({1, 2}) and str(state.default_cpuset) == "0,3"
    assert cm.admit_pod(policy, state, a, "default/a") == state  # a second container start moves nothing
    b = pod_from(K.make_pod("uid-b", "web", "2", "2"), defaults=False)
    with pytest.raises(cm.CPUsUnavailable) as err:
        cm.admit_pod(policy, state, b, "default/b")
    assert str(err.value).startswith('pod default/b: container web needs 2 exclusive CPUs (cpuManagerPolicy static), '
                                     'CPUs free: 1 ("3"): not enough cpus available to satisfy request')
    assert err.value.exit_code == 2
    shared = pod_from(K.make_pod("uid-c", "c", "500m", "500m"), defaults=False)
    assert cm.admit_pod(policy, state, shared, "default/c") == state  # a shared-pool pod takes nothing


def test_release_gone_pods_returns_only_their_cpus():
    t = make_topology({c: CPUInfo(numa_node=0, socket=0, core=c) for c in range(6)})
    policy = cm.new_static_policy(t, 1, [0])
    state = cm.validate_state(policy, cm.CPUManagerState("static"))
    for uid in ("uid-a", "uid-b"):
        state = cm.admit_pod(policy, state, pod_from(K.make_pod(uid, "app", "2", "2"), defaults=False), uid)
    kept = state.get("uid-b", "app")
    state = cm.release_gone_pods(state, ["uid-b"])
    assert state.get("uid-a", "app") is None and state.get("uid-b", "app") == kept
    assert state.default_cpuset == t.details.cpus() - kept
    assert cm.validate_state(policy, state) == state
