"""kubelet's eviction thresholds, signals and ranking (sdqos/kube/eviction.py).

Table cases are transcribed from kubelet 1.36's pkg/kubelet/eviction/helpers_test.go (the test
named in each docstring); cases marked "sdqos" are ours."""

from __future__ import annotations

import struct

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sdqos.kube import eviction as ev
from sdqos.kube.eviction import Candidate, Observation, Threshold, ThresholdValue
from sdqos.kube.manifests import ParseResult, parse_pod, parse_vm
from sdqos.kube.model import Source
from sdqos.kube.priority import PriorityClasses
from sdqos.kube.nodeconfig import EVICTION_SIGNALS, parse_node_config
from sdqos.kube.quantity import parse_quantity

Mi, Gi = 2**20, 2**30
S = 10**9


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def q(text: str) -> ThresholdValue:
    return ThresholdValue(quantity=parse_quantity(text).value())


def pct(x: float) -> ThresholdValue:
    return ThresholdValue(percentage=f32(x))


def parse(hard=None, soft=None, grace=None, reclaim=None, allocatable=()):
    raw = {"evictionHard": hard if hard is not None else {}, "evictionSoft": soft,
           "evictionSoftGracePeriod": grace, "evictionMinimumReclaim": reclaim}
    return ev.parse_eviction_config(raw, allocatable)


def same(a, b) -> bool:
    """thresholdsEqual: the same thresholds in any order."""
    return sorted(map(repr, a)) == sorted(map(repr, b))


def test_the_signals_are_kubelets():
    assert ev.SIGNALS == EVICTION_SIGNALS


PARSE_OK = {
    # TestParseThresholdConfig
    "no values": ({}, {}, {}, {}, (), []),
    "all memory eviction values": (
        {"memory.available": "150Mi"}, {"memory.available": "300Mi"}, {"memory.available": "30s"},
        {"memory.available": "0"}, ("pods",),
        [Threshold("allocatableMemory.available", q("150Mi"), 0, q("0")),
         Threshold("memory.available", q("150Mi"), 0, q("0")),
         Threshold("memory.available", q("300Mi"), 30 * S, q("0"))]),
    "all memory eviction values in percentages": (
        {"memory.available": "10%"}, {"memory.available": "30%"}, {"memory.available": "30s"},
        {"memory.available": "5%"}, (),
        [Threshold("memory.available", pct(0.1), 0, pct(0.05)),
         Threshold("memory.available", pct(0.3), 30 * S, pct(0.05))]),
    "disk eviction values": (
        {"imagefs.available": "150Mi", "nodefs.available": "100Mi"},
        {"imagefs.available": "300Mi", "nodefs.available": "200Mi"},
        {"imagefs.available": "30s", "nodefs.available": "30s"},
        {"imagefs.available": "2Gi", "nodefs.available": "1Gi"}, (),
        [Threshold("imagefs.available", q("150Mi"), 0, q("2Gi")),
         Threshold("nodefs.available", q("100Mi"), 0, q("1Gi")),
         Threshold("imagefs.available", q("300Mi"), 30 * S, q("2Gi")),
         Threshold("nodefs.available", q("200Mi"), 30 * S, q("1Gi"))]),
    "disk eviction values in percentages": (
        {"imagefs.available": "15%", "nodefs.available": "10.5%"},
        {"imagefs.available": "30%", "nodefs.available": "20.5%"},
        {"imagefs.available": "30s", "nodefs.available": "30s"},
        {"imagefs.available": "10%", "nodefs.available": "5%"}, (),
        [Threshold("imagefs.available", pct(0.15), 0, pct(0.1)),
         Threshold("nodefs.available", pct(0.105), 0, pct(0.05)),
         Threshold("imagefs.available", pct(0.3), 30 * S, pct(0.1)),
         Threshold("nodefs.available", pct(0.205), 30 * S, pct(0.05))]),
    "inode eviction values": (
        {"imagefs.inodesFree": "150Mi", "nodefs.inodesFree": "100Mi"},
        {"imagefs.inodesFree": "300Mi", "nodefs.inodesFree": "200Mi"},
        {"imagefs.inodesFree": "30s", "nodefs.inodesFree": "30s"},
        {"imagefs.inodesFree": "2Gi", "nodefs.inodesFree": "1Gi"}, (),
        [Threshold("imagefs.inodesFree", q("150Mi"), 0, q("2Gi")),
         Threshold("nodefs.inodesFree", q("100Mi"), 0, q("1Gi")),
         Threshold("imagefs.inodesFree", q("300Mi"), 30 * S, q("2Gi")),
         Threshold("nodefs.inodesFree", q("200Mi"), 30 * S, q("1Gi"))]),
    "disable via 0%": ({"memory.available": "0%"}, {"memory.available": "0%"}, {}, {}, (), []),
    "disable via 100%": ({"memory.available": "100%"}, {"memory.available": "100%"}, {}, {}, (), []),
    # sdqos: the PID signal
    "pid": ({"pid.available": "1k"}, {"pid.available": "5%"}, {"pid.available": "1m30s"}, {}, ("pods",),
            [Threshold("pid.available", q("1k"), 0), Threshold("pid.available", pct(0.05), 90 * S)]),
}


@pytest.mark.parametrize("name", PARSE_OK)
def test_parse_threshold_config(name):
    hard, soft, grace, reclaim, alloc, want = PARSE_OK[name]
    cfg, errors = parse(hard, soft, grace, reclaim, alloc)
    assert errors == [] and same(cfg.thresholds, want)


PARSE_ERR = {
    # TestParseThresholdConfig
    "invalid-signal": ({"mem.available": "150Mi"}, {}, {}, {}, "evictionHard.mem.available: unsupported eviction signal mem.available"),
    "hard-signal-negative": ({"memory.available": "-150Mi"}, {}, {}, {}, "must be positive: -150Mi"),
    "hard-signal-negative-percentage": ({"memory.available": "-15%"}, {}, {}, {}, "must be >= 0%: -15%"),
    "hard-signal-percentage-greater-than-100%": ({"memory.available": "150%"}, {}, {}, {}, "must be <= 100%: 150%"),
    "soft-signal-negative": ({}, {"memory.available": "-150Mi"}, {}, {}, "evictionSoft.memory.available: eviction threshold memory.available must be positive"),
    "valid-and-invalid-signal": ({"memory.available": "150Mi", "invalid.foo": "150Mi"}, {}, {}, {}, "unsupported eviction signal invalid.foo"),
    "soft-no-grace-period": ({}, {"memory.available": "150Mi"}, {}, {}, "grace period must be specified for the soft eviction threshold memory.available"),
    "soft-negative-grace-period": ({}, {"memory.available": "150Mi"}, {"memory.available": "-30s"}, {}, "invalid eviction grace period specified: -30s, must be a positive value"),
    "negative-reclaim": ({}, {}, {}, {"memory.available": "-300Mi"}, "negative eviction minimum reclaim specified for memory.available"),
    # TestParsePercentage, through a threshold
    "foo%": ({"memory.available": "foo%"}, {}, {}, {}, 'invalid percentage "foo%"'),
    # sdqos: more of parseMinimumReclaims / parseGracePeriods
    "reclaim-zero-percent": ({}, {}, {}, {"memory.available": "0%"}, "minimum reclaim memory.available must be positive: 0%"),
    "grace-not-a-duration": ({}, {"memory.available": "1Gi"}, {"memory.available": "30"}, {}, "evictionSoftGracePeriod.memory.available:"),
    "grace-bad-signal": ({}, {}, {"mem.available": "30s"}, {}, "evictionSoftGracePeriod.mem.available: unsupported eviction signal"),
    "not-a-string": ({"memory.available": 100}, {}, {}, {}, "evictionHard.memory.available: must be a quantity or a percentage"),
}


@pytest.mark.parametrize("name", PARSE_ERR)
def test_parse_threshold_config_errors(name):
    hard, soft, grace, reclaim, message = PARSE_ERR[name]
    _, errors = parse(hard, soft, grace, reclaim)
    assert len(errors) == 1 and message in errors[0].line(), [e.line() for e in errors]
    assert errors[0].line().startswith("node.yaml: ")


def test_every_bad_statement_is_its_own_error():
    _, errors = parse({"memory.available": "-1", "pid.available": "2%%%x"}, {"memory.available": "1Gi"},
                      {"pid.available": "-1s"}, {"nodefs.available": "-1"})
    fields = sorted(e.field for e in errors)
    assert fields == ["evictionHard.memory.available", "evictionHard.pid.available",
                      "evictionMinimumReclaim.nodefs.available", "evictionSoftGracePeriod.memory.available",
                      "evictionSoftGracePeriod.pid.available"]


@pytest.mark.parametrize("value, want", [("25.5%", 0.255), ("5%%", 0.05), ("1e1%", 0.1), ("inf%", None)])
def test_parse_percentage(value, want):
    """TestParsePercentage (25.5% → 0.255 in float32); kubelet's TrimRight takes every '%'."""
    if want is None:
        with pytest.raises(ValueError, match="<= 100%"):
            ev.parse_threshold_statement("memory.available", value)
    else:
        assert ev.parse_threshold_statement("memory.available", value) == pct(want)


ADD_ALLOCATABLE = {
    # TestAddAllocatableThresholds
    "non-memory-signal": ([Threshold("imagefs.available", q("150Mi"), 0, q("0"))],
                          [Threshold("imagefs.available", q("150Mi"), 0, q("0"))]),
    "memory-signal-with-grace": ([Threshold("memory.available", q("150Mi"), 10, q("0"))],
                                 [Threshold("memory.available", q("150Mi"), 10, q("0"))]),
    "memory-signal-without-grace": ([Threshold("memory.available", q("150Mi"), 0, q("0"))],
                                    [Threshold("allocatableMemory.available", q("150Mi"), 0, q("0")),
                                     Threshold("memory.available", q("150Mi"), 0, q("0"))]),
    "memory-signal-without-grace-two-thresholds": (
        [Threshold("memory.available", q("150Mi"), 0, q("0")), Threshold("memory.available", q("200Mi"), 0, q("1Gi"))],
        [Threshold("allocatableMemory.available", q("150Mi"), 0, q("0")),
         Threshold("memory.available", q("150Mi"), 0, q("0")),
         Threshold("allocatableMemory.available", q("200Mi"), 0, q("1Gi")),
         Threshold("memory.available", q("200Mi"), 0, q("1Gi"))]),
}


@pytest.mark.parametrize("name", ADD_ALLOCATABLE)
def test_add_allocatable_thresholds(name):
    given, want = ADD_ALLOCATABLE[name]
    assert same(ev.add_allocatable_thresholds(given), want)


# --- node.yaml ---------------------------------------------------------------------------------

DETECTED = {"cpu": parse_quantity("4"), "memory": parse_quantity("8Gi"), "pid": parse_quantity("4194304")}


def node(text: str):
    return parse_node_config(yaml.safe_load(text) if text else None, DETECTED)


def test_node_yaml_defaults_are_kubelets():
    cfg, errors = node("")
    assert errors == []
    e = ev.config_of(cfg)
    assert same(e.thresholds, [Threshold("memory.available", q("100Mi")),
                               Threshold("allocatableMemory.available", q("100Mi"))])
    assert e.max_pod_grace_period == 0 and e.pressure_transition_period_ns == 300 * S


def test_node_yaml_eviction_fields_kept():
    cfg, errors = node("""
evictionHard: {memory.available: 5%, pid.available: "500"}
evictionSoft: {memory.available: 1Gi}
evictionSoftGracePeriod: {memory.available: 1m}
evictionMinimumReclaim: {memory.available: 200Mi}
evictionMaxPodGracePeriod: 20
evictionPressureTransitionPeriod: 30s
enforceNodeAllocatable: [pods]
""")
    assert errors == []
    e = ev.config_of(cfg)
    assert same(e.thresholds, [
        Threshold("memory.available", pct(0.05), 0, q("200Mi")),
        Threshold("pid.available", q("500")),
        Threshold("memory.available", q("1Gi"), 60 * S, q("200Mi")),
        Threshold("allocatableMemory.available", pct(0.05), 0, q("200Mi")),
    ])
    assert e.max_pod_grace_period == 20 and e.pressure_transition_period_ns == 30 * S


def test_node_yaml_no_allocatable_threshold_without_pods_enforcement():
    cfg, errors = node("enforceNodeAllocatable: []\n")
    assert errors == [] and [t.signal for t in ev.config_of(cfg).thresholds] == ["memory.available"]


@pytest.mark.parametrize("text, line", [
    ("evictionSoft: {memory.available: 1Gi}\n",
     "node.yaml: evictionSoftGracePeriod.memory.available: grace period must be specified for the soft eviction threshold memory.available"),
    ("evictionMaxPodGracePeriod: 1.5\n", "node.yaml: evictionMaxPodGracePeriod: must be an integer (seconds), not 1.5"),
    ("evictionMaxPodGracePeriod: 3000000000\n", "node.yaml: evictionMaxPodGracePeriod: 3000000000 does not fit a 32-bit integer"),
    ("evictionPressureTransitionPeriod: 5\n", "node.yaml: evictionPressureTransitionPeriod: must be a duration such as 5m0s, not 5"),
    ("evictionPressureTransitionPeriod: 5x\n", "node.yaml: evictionPressureTransitionPeriod: '5x' is not a duration (e.g. 100ms, 1s)"),
    ("evictionSoft: [memory.available]\n", "node.yaml: evictionSoft: must be a mapping of eviction signal to value"),
    ("evictionHard: {memory.available: -1}\n",
     "node.yaml: evictionHard.memory.available: must be a quantity or a percentage (a string), not -1"),
])
def test_node_yaml_errors_one_line_each(text, line):
    _, errors = node(text)
    assert [e.line() for e in errors] == [line]


# --- thresholds met, conditions ------------------------------------------------------------------

HARD_1GI = Threshold("memory.available", q("1Gi"), 0, q("500Mi"))


@pytest.mark.parametrize("enforce, available, met", [
    # TestThresholdsMet
    (False, None, False),  # "empty": no observation, never met
    (False, "500Mi", True),
    (False, "2Gi", False),
    (True, "1.05Gi", True),
    (True, "2Gi", False),
])
def test_thresholds_met(enforce, available, met):
    obs = {} if available is None else {"memory.available": Observation(parse_quantity(available).value(), 0)}
    assert ev.thresholds_met([HARD_1GI], obs, enforce) == ([HARD_1GI] if met else [])


PCT = [Threshold("memory.available", pct(0.2), 0, pct(0.05)), Threshold("nodefs.available", pct(0.3))]


@pytest.mark.parametrize("enforce, mem, disk, want", [
    # TestPercentageThresholdsMet
    (False, "100Mi", "100Gi", PCT),
    (False, "300Mi", "400Gi", []),
    (False, "300Mi", "100Gi", [PCT[1]]),
    (False, "100Mi", "400Gi", [PCT[0]]),
    (True, "225Mi", None, [PCT[0]]),
    (True, "300Mi", None, []),
])
def test_percentage_thresholds_met(enforce, mem, disk, want):
    obs = {"memory.available": Observation(parse_quantity(mem).value(), 1000 * Mi)}
    if disk:
        obs["nodefs.available"] = Observation(parse_quantity(disk).value(), 1000 * Gi)
    assert ev.thresholds_met(PCT, obs, enforce) == want


def test_node_conditions():
    """TestNodeConditions, and each condition once."""
    assert ev.node_conditions([]) == []
    assert ev.node_conditions([Threshold("memory.available", q("1"))]) == ["MemoryPressure"]
    assert ev.node_conditions([Threshold("allocatableMemory.available", q("1")), Threshold("pid.available", q("1")),
                               Threshold("memory.available", q("1"))]) == ["MemoryPressure", "PIDPressure"]


@pytest.mark.parametrize("signals, want", [
    # TestSortByEvictionPriority + getReclaimableThreshold
    ([], None),
    (["nodefs.available", "pid.available", "memory.available"], "memory.available"),
    (["nodefs.available", "pid.available", "allocatableMemory.available"], "allocatableMemory.available"),
    (["nodefs.available", "pid.available"], "pid.available"),  # sdqos ranks nothing for disk
])
def test_threshold_to_reclaim(signals, want):
    t = ev.threshold_to_reclaim([Threshold(s, q("1")) for s in signals])
    assert (t.signal if t else None) == want


# --- ranking -------------------------------------------------------------------------------------

LOW, DEFAULT, HIGH = -1, 0, 1  # eviction_manager_test.go's lowPriority, defaultPriority, highPriority


def cand(name, priority=DEFAULT, request="0", usage=None, processes=None, **kw) -> Candidate:
    return Candidate(name, "pod", "", priority, parse_quantity(request).value(),
                     parse_quantity(usage).value() if usage is not None else None, processes, **kw)


def names(cands):
    return [c.name for c in cands]


def test_ordered_by_exceeds_request_memory():
    """TestOrderedByExceedsRequestMemory."""
    below = cand("below-requests", -1, "200Mi", "199Mi")
    exceeds = cand("exceeds-requests", 1, "100Mi", "101Mi")
    assert names(ev.ordered_by([below, exceeds], ev.cmp_exceed_memory_requests)) == ["exceeds-requests", "below-requests"]


def test_ordered_by_priority():
    """TestOrderedByPriority."""
    pods = [cand("high-priority", 12534), cand("medium-priority", 1), cand("low-priority", -134)]
    assert names(ev.ordered_by(pods, ev.cmp_priority)) == ["low-priority", "medium-priority", "high-priority"]


def test_ordered_by_memory():
    """TestOrderedByMemory: the largest usage relative to request first."""
    pods = [cand("best-effort-high", usage="500Mi"), cand("best-effort-low", usage="300Mi"),
            cand("burstable-high", request="100Mi", usage="800Mi"), cand("burstable-low", request="100Mi", usage="300Mi"),
            cand("guaranteed-high", request="1Gi", usage="800Mi"), cand("guaranteed-low", request="1Gi", usage="200Mi")]
    assert names(ev.ordered_by(pods, ev.cmp_memory)) == [
        "burstable-high", "best-effort-high", "best-effort-low", "burstable-low", "guaranteed-high", "guaranteed-low"]


PRIORITY_MEMORY = [  # TestOrderedByPriorityMemory, in kubelet's expected order
    cand("above-requests-low-priority-high-usage", LOW, "0", "500Mi"),
    cand("above-requests-low-priority-low-usage", LOW, "0", "50Mi"),
    cand("above-requests-high-priority-high-usage", HIGH, "100Mi", "600Mi"),
    cand("above-requests-high-priority-low-usage", HIGH, "100Mi", "150Mi"),
    cand("below-requests-low-priority-high-usage", LOW, "1Gi", "800Mi"),
    cand("below-requests-low-priority-low-usage", LOW, "1Gi", "200Mi"),
    cand("below-requests-high-priority-high-usage", HIGH, "1Gi", "800Mi"),
    cand("below-requests-high-priority-low-usage", HIGH, "1Gi", "200Mi"),
]


def test_rank_memory_pressure():
    """TestOrderedByPriorityMemory: given in reverse, ranked in kubelet's order."""
    assert names(ev.rank_memory_pressure(list(reversed(PRIORITY_MEMORY)))) == names(PRIORITY_MEMORY)


def test_rank_pid_pressure():
    """TestOrderedByPriorityProcess."""
    want = [cand("low-priority-high-usage", LOW, processes=20), cand("low-priority-low-usage", LOW, processes=6),
            cand("high-priority-high-usage", HIGH, processes=20), cand("high-priority-low-usage", HIGH, processes=5)]
    assert names(ev.rank_pid_pressure(list(reversed(want)))) == names(want)


def test_no_stats_first():
    """exceedMemoryRequests/memory/process: a pod without stats is evicted first."""
    a, b = cand("with", usage="1Gi", processes=3), cand("without")
    assert names(ev.rank_memory_pressure([a, b])) == ["without", "with"]
    assert names(ev.rank_pid_pressure([a, b])) == ["without", "with"]


def test_victim_skips_critical_and_protected_vms():
    """evictPod refuses a critical pod, and the loop goes on to the next one."""
    ranked = [cand("crit", critical=True), cand("vm", evictable=False), cand("next"), cand("last")]
    assert ev.victim(ranked).name == "next"
    assert ev.victim(ranked[:2]) is None


@pytest.mark.parametrize("grace, pod_grace, max_grace, want", [
    (0, 30, 10, 1),  # hard: immediateEvictionGracePeriodSeconds (TestMemoryPressure expects 1)
    (30 * S, 30, 10, 10),  # soft: capped by evictionMaxPodGracePeriod
    (30 * S, 5, 10, 5),  # soft: the pod's own terminationGracePeriodSeconds when shorter
    (30 * S, None, 10, 10),
])
def test_eviction_grace_period(grace, pod_grace, max_grace, want):
    t = Threshold("memory.available", q("1Gi"), grace)
    assert ev.eviction_grace_period(t, cand("p", termination_grace_period=pod_grace), max_grace) == want


# --- pods and VMs as candidates ------------------------------------------------------------------


def pod_of(text: str, classes=None):
    result = ParseResult()
    pod = parse_pod(yaml.safe_load(text), Source("pods/p.yaml"), result, classes=classes)
    assert pod is not None, [e.line() for e in result.errors]
    return pod


def pod_errors(text: str, classes=None) -> list[str]:
    result = ParseResult()
    assert parse_pod(yaml.safe_load(text), Source("pods/p.yaml"), result, classes=classes) is None
    return [str(e) for e in result.errors]


POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  %s
  overhead: {memory: 10Mi}
  containers:
  - name: a
    resources: {requests: {memory: 100Mi}, limits: {memory: 200Mi}}
  initContainers:
  - name: init
    resources: {requests: {memory: 150Mi}}
"""
CLASSES = PriorityClasses({"batch": -5, "high": 1_000_000_000})


@pytest.mark.parametrize("extra, classes, priority, critical", [
    ("", None, 0, False),  # corev1helpers.PodPriority: 0 when unset (no globalDefault class)
    ("priorityClassName: system-cluster-critical", None, 2_000_000_000, True),  # admission fills it in
    ("priorityClassName: system-node-critical\n  priority: 2000001000", None, 2_000_001_000, True),  # equal: fine
    ("priorityClassName: batch", CLASSES, -5, False),
    ("priorityClassName: high\n  priority: 1000000000", CLASSES, 1_000_000_000, False),
    ("", PriorityClasses({"batch": -5}, default="batch"), -5, False),  # the global default class
])
def test_pod_candidate(extra, classes, priority, critical):
    pod = pod_of(POD % extra, classes)
    c = ev.pod_candidate(pod, 300 * Mi, 4)
    # GetResourceRequestQuantity: max(Σ app 100Mi, init 150Mi) + overhead 10Mi
    assert (c.priority, c.critical, c.memory_request, c.qos_class) == (priority, critical, 160 * Mi, "Burstable")
    assert c.exceeds_memory_request and c.termination_grace_period == 30
    if classes is not None and classes.default and not extra:
        assert pod.priority_class_name == classes.default  # admission writes the default's name


BESTEFFORT = POD.replace("    resources: {requests: {memory: 100Mi}, limits: {memory: 200Mi}}\n", "").replace(
    "    resources: {requests: {memory: 150Mi}}\n", "").replace("  overhead: {memory: 10Mi}\n", "")


def test_a_manifest_claiming_a_static_source_is_an_api_pod():
    """kubelet writes config.source itself, from where it got the pod; sdqos's pods are the API
    server's ("api"), so a BestEffort manifest claiming "file" is not static, not critical: evictable."""
    pod = pod_of(BESTEFFORT.replace("namespace: default}", "namespace: default, annotations: "
                                    "{kubernetes.io/config.source: file}}") % "")
    c = ev.pod_candidate(pod, None, None)
    assert pod.annotations["kubernetes.io/config.source"] == "api"
    assert (c.qos_class, c.critical, c.why_not_evictable()) == ("BestEffort", False, None)


def test_a_manifest_claiming_to_be_a_mirror_pod_is_refused():
    """kubelet never runs an API pod with the mirror annotation (it mirrors a static pod)."""
    text = BESTEFFORT.replace("namespace: default}", "namespace: default, annotations: "
                              "{kubernetes.io/config.mirror: x}}") % ""
    assert pod_errors(text) == [
        "pods/p.yaml[0]: metadata.annotations.kubernetes.io/config.mirror: kubelet sets this on the mirror of a "
        "static pod it runs from its own files; a pod with it from the API server is such a mirror, which kubelet "
        "never runs (remove it)"]


@pytest.mark.parametrize("extra, classes, line", [
    # a bare priority: the class (none: 0) gives another
    ("priority: 2000000000", None,
     "spec.priority: the integer value of priority (2000000000) must not be provided in pod spec; priority admission "
     "controller computed 0 from the given PriorityClass name (none: no globalDefault class)"),
    ("priority: 5", PriorityClasses({"low": 1}, default="low"),
     "spec.priority: the integer value of priority (5) must not be provided in pod spec; priority admission "
     "controller computed 1 from the given PriorityClass name (low)"),
    ("priorityClassName: batch\n  priority: 2000000000", CLASSES,
     "spec.priority: the integer value of priority (2000000000) must not be provided in pod spec; priority admission "
     "controller computed -5 from the given PriorityClass name (batch)"),
    ("priorityClassName: my-class", None,
     "spec.priorityClassName: no PriorityClass with name my-class was found (declare it in priorityclasses.yaml; "
     "built in: system-node-critical, system-cluster-critical)"),
])
def test_a_pod_cannot_give_itself_a_priority_its_class_does_not(extra, classes, line):
    """The Priority admission plugin: spec.priority unset or the class's value; the class must exist."""
    assert pod_errors(BESTEFFORT % extra, classes) == [f"pods/p.yaml[0]: {line}"]


def vm_of(spec_extra: str):
    result = ParseResult()
    vm = parse_vm(yaml.safe_load(f"""
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: db}}
spec:
  resources: {{limits: {{cpu: "2", memory: 1Gi}}}}
  overhead: {{cpu: 100m, memory: 100Mi}}
  {spec_extra}
"""), Source("vms/db.yaml"), result)
    return vm, [e.line() for e in result.errors]


def test_vm_candidate_defaults_never():
    vm, errors = vm_of("")
    assert errors == [] and vm.eviction == "Never" and vm.priority == 0
    c = ev.vm_candidate(vm, 1200 * Mi, 3)
    assert (c.name, c.kind, c.qos_class, c.memory_request) == ("vm/db", "vm", "Guaranteed", Gi + 100 * Mi)
    assert c.exceeds_memory_request and c.why_not_evictable() == "VM with spec.eviction: Never"


def test_vm_candidate_allowed_ranks_among_pods():
    vm, errors = vm_of("eviction: Allowed\n  priority: -5")
    assert errors == []
    c = ev.vm_candidate(vm, 1200 * Mi, 3)
    assert c.evictable and c.priority == -5
    pods = [cand("be", usage="10Mi"), cand("guaranteed-under", request="1Gi", usage="500Mi")]
    # over its request and lower priority than the BestEffort pod: the VM goes first
    assert names(ev.rank_memory_pressure(pods + [c])) == ["vm/db", "be", "guaranteed-under"]


@pytest.mark.parametrize("extra, error", [
    ("eviction: Sometimes", 'vms/db.yaml[0]: spec.eviction: "Sometimes" must be one of Never, Allowed'),
    ("priority: high", "vms/db.yaml[0]: spec.priority: must be an integer, not a string"),
    ("priority: 3000000000", "vms/db.yaml[0]: spec.priority: 3000000000 is out of the int32 range"),
])
def test_vm_eviction_fields_validated(extra, error):
    vm, errors = vm_of(extra)
    assert vm is None and errors == [error]


# --- over time (synchronize's bookkeeping) -------------------------------------------------------

MIN = 60 * S
HARD = Threshold("memory.available", q("1Gi"))
SOFT = Threshold("memory.available", q("2Gi"), 1 * MIN)


def test_thresholds_first_observed_at():
    """TestThresholdsFirstObservedAt."""
    now, old = 100 * MIN, 99 * MIN
    assert ev.thresholds_first_observed_at([], {}, now) == {}
    assert ev.thresholds_first_observed_at([HARD], {}, now) == {HARD: now}
    assert ev.thresholds_first_observed_at([HARD], {HARD: old}, now) == {HARD: old}


@pytest.mark.parametrize("observed, want", [
    # TestThresholdsMetGracePeriod
    ({}, []),
    ({HARD: 100 * MIN}, [HARD]),
    ({SOFT: 100 * MIN}, []),
    ({SOFT: 98 * MIN}, [SOFT]),
])
def test_thresholds_met_grace_period(observed, want):
    assert ev.thresholds_met_grace_period(observed, 100 * MIN) == want


def test_node_conditions_last_observed_at():
    """TestNodeConditionsLastObservedAt."""
    now, old = 100 * MIN, 99 * MIN
    assert ev.node_conditions_last_observed_at(["MemoryPressure"], {}, now) == {"MemoryPressure": now}
    assert ev.node_conditions_last_observed_at(["MemoryPressure"], {"MemoryPressure": old}, now) == {"MemoryPressure": now}
    assert ev.node_conditions_last_observed_at([], {"MemoryPressure": old}, now) == {"MemoryPressure": old}


@pytest.mark.parametrize("period, want", [(2 * MIN, ["MemoryPressure"]), (30 * S, [])])
def test_node_conditions_observed_since(period, want):
    """TestNodeConditionsObservedSince: observed a minute ago."""
    assert ev.node_conditions_observed_since({"MemoryPressure": 99 * MIN}, period, 100 * MIN) == want


def _memory(available: str) -> dict:
    return {"memory.available": Observation(parse_quantity(available).value(), 8 * Gi)}


def test_memory_pressure_over_time():
    """TestMemoryPressure (eviction_manager_test.go): a hard 1Gi and a soft 2Gi (grace 2m) threshold,
    transition period 5m, evictionMaxPodGracePeriod 5; the low-priority BestEffort pod goes first,
    after the soft threshold's grace period with 5 s, at once (1 s) for the hard one, and the
    condition holds for the transition period after the last time it was seen."""
    pods = [cand("guaranteed-low-priority-high-usage", LOW, "1Gi", "900Mi"),
            cand("burstable-below-requests", DEFAULT, "100Mi", "50Mi"),
            cand("burstable-above-requests", DEFAULT, "100Mi", "400Mi"),
            cand("best-effort-high-priority-high-usage", HIGH, "0", "400Mi"),
            cand("best-effort-low-priority-low-usage", LOW, "0", "100Mi")]
    cfg = ev.EvictionConfig((Threshold("memory.available", q("1Gi")), Threshold("memory.available", q("2Gi"), 2 * MIN)),
                            max_pod_grace_period=5, pressure_transition_period_ns=5 * MIN)
    state, now = ev.ManagerState(), 0

    def step(minutes: int, available: str):
        nonlocal state, now
        now += minutes * MIN
        p = ev.synchronize(state, cfg, _memory(available), now)
        state = p.state
        t = ev.threshold_to_reclaim(p.act_on)
        victim = ev.victim(ev.rank_memory_pressure(pods)) if t else None
        grace = ev.eviction_grace_period(t, victim, cfg.max_pod_grace_period) if victim else None
        return p.conditions, victim.name if victim else None, grace

    assert step(0, "2Gi") == ([], None, None)
    assert step(1, "1500Mi") == (["MemoryPressure"], None, None)  # soft met, grace not over
    assert step(3, "1500Mi") == (["MemoryPressure"], "best-effort-low-priority-low-usage", 5)
    assert step(20, "3Gi") == ([], None, None)
    assert step(1, "500Mi") == (["MemoryPressure"], "best-effort-low-priority-low-usage", 1)
    assert step(1, "2Gi") == (["MemoryPressure"], None, None)  # transition period not over
    assert step(5, "2Gi") == ([], None, None)


def test_minimum_reclaim_keeps_a_threshold_until_enough_is_back():
    """A threshold that drove a pass stays met until available ≥ value + minimum reclaim."""
    cfg = ev.EvictionConfig((Threshold("memory.available", q("1Gi"), 0, q("500Mi")),), 0, 5 * MIN)
    p1 = ev.synchronize(ev.ManagerState(), cfg, _memory("900Mi"), 0)
    assert p1.act_on == list(cfg.thresholds)
    assert ev.synchronize(p1.state, cfg, _memory("1.2Gi"), S).act_on == list(cfg.thresholds)
    assert ev.synchronize(p1.state, cfg, _memory("1.6Gi"), S).act_on == []


def test_pid_pressure_over_time():
    """TestPIDPressure: hard 1200, soft 1500 (grace 2m) PIDs available of 2000; low-priority-high-usage goes."""
    pods = [cand("high-priority-high-usage", HIGH, processes=900), cand("default-priority-low-usage", DEFAULT, processes=100),
            cand("default-priority-medium-usage", DEFAULT, processes=400), cand("low-priority-high-usage", LOW, processes=600),
            cand("low-priority-low-usage", LOW, processes=50)]
    cfg = ev.EvictionConfig((Threshold("pid.available", q("1200")), Threshold("pid.available", q("1500"), 2 * MIN)),
                            max_pod_grace_period=5, pressure_transition_period_ns=5 * MIN)

    def obs(used: int) -> dict:
        return {"pid.available": Observation(2000 - used, 2000)}

    p = ev.synchronize(ev.ManagerState(), cfg, obs(300), 0)
    assert p.conditions == [] and p.act_on == []
    p = ev.synchronize(p.state, cfg, obs(700), MIN)
    assert p.conditions == ["PIDPressure"] and p.act_on == []
    p = ev.synchronize(p.state, cfg, obs(700), 4 * MIN)
    t = ev.threshold_to_reclaim(p.act_on)
    assert t.signal == "pid.available" and not t.hard
    assert ev.victim(ev.rank_pid_pressure(pods)).name == "low-priority-high-usage"


# --- properties ----------------------------------------------------------------------------------

CANDS = st.lists(st.builds(
    lambda i, prio, req, use, procs, crit: Candidate(f"p{i}", "pod", "", prio, req, use, procs, critical=crit),
    st.integers(0, 10**6), st.integers(-5, 5), st.integers(0, 4).map(lambda x: x * Mi),
    st.integers(0, 6).map(lambda x: x * Mi), st.integers(0, 5), st.booleans()), max_size=12)


@given(CANDS)
def test_memory_rank_is_kubelets_three_keys(cands):
    """With stats for all: the order of (exceeds request first, lower priority, more usage above
    request) — the three comparisons as one sort key, stable."""
    want = sorted(cands, key=lambda c: (not c.exceeds_memory_request, c.priority,
                                        -(c.memory_usage - c.memory_request)))
    assert ev.rank_memory_pressure(cands) == want


@given(CANDS)
def test_pid_rank_and_victim(cands):
    ranked = ev.rank_pid_pressure(cands)
    assert ranked == sorted(cands, key=lambda c: (c.priority, -c.processes))
    v = ev.victim(ranked)
    evictable = [c for c in ranked if not c.critical]
    assert v == (evictable[0] if evictable else None)


# One parser for evictionHard: node.yaml's allocatable (read on every load) and the eviction
# settings read the same statement the same way — kubelet parses it once (parseThresholdStatement).
@pytest.mark.parametrize("value", [
    "5%", "5%%", "25.5%", "1e1%", "0x1p-2%", "0%", "100%", "100Mi", "1Gi",  # taken
    "inf%", "150%", "-5%", "1e400%", "x%", "%", "-1Gi", "0", "abc", "0x1p-2",  # refused
])
def test_eviction_hard_read_the_same_by_both_call_sites(value):
    _, node_errors = node(f"evictionHard: {{memory.available: {value!r}}}\nenforceNodeAllocatable: [pods]\n")
    cfg, eviction_errors = ev.parse_eviction_config({"evictionHard": {"memory.available": value}}, ["pods"])
    assert [e.line() for e in node_errors] == [e.line() for e in eviction_errors]
    if not eviction_errors:
        hard = [t.value for t in cfg.thresholds if t.signal == "memory.available"]
        assert hard == ([] if value in ("0%", "100%") else [ev.parse_threshold_statement("memory.available", value)])


def test_double_percent_is_kubelets_percentage_in_node_yaml():
    """parsePercentage's TrimRight takes every '%': "5%%" is 5 % for allocatable too (it was refused)."""
    cfg, errors = node("evictionHard: {memory.available: 5%%}\n")
    assert errors == []
    assert ev.config_of(cfg).thresholds[0].value == pct(0.05)


def test_every_evictable_workload_is_tried_in_rank_order():
    """synchronize's `for i := range activePods`: evictPod refuses a critical pod and the next is
    tried; the caller moves on the same way when an eviction fails."""
    ranked = [cand("a", critical=True), cand("b"), Candidate("vm/v", "vm", "", 0, 0, evictable=False), cand("c")]
    assert [c.name for c in ev.evictable(ranked)] == ["b", "c"]
    assert ev.victim(ranked).name == "b"
    assert ev.victim([cand("a", critical=True)]) is None


def test_an_evicted_workload_stays_out_of_the_ranking_until_it_runs_again():
    """A pod whose eviction left a unit sdqos does not own running is not active: not ranked again
    (kubelet's evicted pod is terminal). A unit its eviction did not leave: it runs again."""
    cands = [cand("a"), cand("b"), cand("c")]
    evicted = {"a": ["foreign.service"], "b": []}
    running = {"a": {"foreign.service"}, "b": {"sdqos-pod-b.scope"}, "c": {"x.scope"}}
    assert ev.still_evicted(cands, evicted, running) == {"a"}
    assert ev.runs_again(["foreign.service"], {"foreign.service", "sdqos-pod-a.scope"})
    assert not ev.runs_again(["foreign.service"], set())
    assert ev.still_evicted(cands, evicted, {}) == {"a", "b"}
