"""Topology manager cases transcribed from kubelet's pkg/kubelet/cm/topologymanager tests.

Sources (kubernetes/kubernetes; stored file versions read through the index):
  - bitmask/bitmask_test.go @ 05c351a9037b: every table (NewEmptyBitMask, NewBitMask, Add, Remove,
    And, Or, Clear, Fill, IsEmpty, IsSet, AnySet, IsEqual, Count, GetBits, IsNarrowerThan,
    IterateBitMasks).
  - policy_test.go @ 052ac4f7bc74: commonPolicyMergeTestCases, bestEffortPolicy.mergeTestCases,
    .mergeTestCasesNoPolicies, .mergeTestCasesClosestNUMA, singleNumaNodePolicy.mergeTestCases,
    TestMaxOfMinAffinityCounts, TestCompareHintsNarrowest, commonNUMAInfo{Two,Four,Eight}Nodes.
  - policy_best_effort_test.go @ 243ba086e7f4, policy_restricted_test.go @ 052ac4f7bc74,
    policy_single_numa_node_test.go (TestPolicySingleNumaNodeMerge: four nodes; stored versions
    @ 0ba07e888330 / 62832210 for TestPolicySingleNumaNodeFilterHints): which case lists run
    against which NUMA info and options (MERGE_RUNS).

Schema:
  A hint is (bits, preferred): bits a tuple of NUMA node ids, None for a nil NUMANodeAffinity,
  DEFAULT for NewTestBitMask(numaNodes...) (the run's nodes).
  A case's "providers" is one entry per mockHintProvider: None for mockHintProvider{} (nil map),
  else {resource: [hints] | None (nil slice) | [] (empty slice)}.
  MERGE_CASES: {list name: [(name, providers, expected hint)]}; MERGE_RUNS: (test, NUMA info name,
  prefer-closest, policy, [list names]).

Skipped (reason): TestAggregateHintScores, TestMergePermutationCarriesScore,
TestCompareWinnerUnchangedByScore, TestCompareNUMAAffinityMasks*Strategy*, TestCompareHintScores,
TestHintMergerWithAllocationStrategy: the stored policy_test.go carries a NUMA allocation-strategy
option (hint Scores) that is not part of kubelet 1.36's topologymanager options; sdqos refuses any
option but prefer-closest-numa-nodes and max-allowable-numa-nodes.
"""

DEFAULT = "default"

NUMA_INFO = {
    "commonNUMAInfoTwoNodes": {0: (10, 11), 1: (11, 10)},
    "commonNUMAInfoFourNodes": {0: (10, 11, 12, 12), 1: (11, 10, 12, 12), 2: (12, 12, 10, 11), 3: (12, 12, 11, 10)},
    "commonNUMAInfoEightNodes": {
        0: (10, 11, 12, 12, 30, 30, 30, 30), 1: (11, 10, 12, 12, 30, 30, 30, 30),
        2: (12, 12, 10, 11, 30, 30, 30, 30), 3: (12, 12, 11, 10, 30, 30, 30, 30),
        4: (30, 30, 30, 30, 10, 11, 12, 12), 5: (30, 30, 30, 30, 11, 10, 12, 12),
        6: (30, 30, 30, 30, 12, 12, 10, 11), 7: (30, 30, 30, 30, 12, 12, 13, 10)},
}

# --- bitmask_test.go ------------------------------------------------------------------------------
BITMASK_NEW = [((), "00"), ((0,), "01"), ((1,), "10"), ((0, 1), "11")]
BITMASK_ADD = [((0,), "01"), ((1,), "10"), ((0, 1), "11"), ((-1, 64), "00")]  # out of range: Add errs, mask kept
BITMASK_REMOVE = [((0,), (0,), "00"), ((0, 1), (1,), "01"), ((0, 1), (0, 1), "00"), ((0,), (-1, 64), "01")]
BITMASK_AND = [([(0, 1), (0, 1)], "11"), ([(0, 1), (1,)], "10"), ([(0,), (0, 1)], "01"),
               ([(0, 1), (0, 1), (1,)], "10"), ([(0,), (0,), (1,), (0, 1)], "00"),
               ([(0, 1, 2, 3), (1, 2, 3), (2, 3), (3,)], "1000")]
BITMASK_OR = [([(0,), ()], "01"), ([(1,), (1,)], "10"), ([(0,), (1,)], "11"), ([(0, 1), (0, 1)], "11"),
              ([(0,), (1,), (0, 1)], "11"), ([(3,), (2,), (1,), (0,)], "1111")]
BITMASK_CLEAR = [(0,), (1,), (0, 1)]
BITMASK_FILL = [(), (0,), (0, 1)]  # each filled: 64 ones
BITMASK_IS_EMPTY = [((), True), ((0,), False), ((0, 1), False)]
BITMASK_IS_SET = [((), 0, False), ((0,), 0, True), ((0, 1), 1, True), ((0, 1), 64, False)]
BITMASK_ANY_SET = [((), (0, 1), False), ((0,), (0, 1), True), ((0, 1), (0, 1), True), ((0, 1), (64, 65), False),
                   ((1, 2), (0, 3), False)]
BITMASK_IS_EQUAL = [((), (), True), ((), (0,), False), ((0,), (0,), True), ((0,), (1,), False), ((0, 1), (0, 1), True)]
BITMASK_COUNT = [((), 0), ((0,), 1), ((0, 1), 2)]
BITMASK_GET_BITS = [((), []), ((0,), [0]), ((0, 1), [0, 1])]
BITMASK_NARROWER = [((0,), (0, 1), True), ((0, 1), (0,), False), ((0,), (1,), True), ((1,), (0,), False)]
BITMASK_ITERATE = [1, 2, 4, 8, 16]  # number of bits: 2^n - 1 masks


def H(bits, preferred):
    return (bits, preferred)


# --- policy_test.go -------------------------------------------------------------------------------
_T, _F = True, False
COMMON = [
    ("Two providers, 1 hint each, same mask, both preferred 1/2",
     [{"resource1": [H((0,), _T)]}, {"resource2": [H((0,), _T)]}], H((0,), _T)),
    ("Two providers, 1 hint each, same mask, both preferred 2/2",
     [{"resource1": [H((1,), _T)]}, {"resource2": [H((1,), _T)]}], H((1,), _T)),
    ("Two providers, 1 no hints, 1 single hint preferred 1/2", [None, {"resource": [H((0,), _T)]}], H((0,), _T)),
    ("Two providers, 1 no hints, 1 single hint preferred 2/2", [None, {"resource": [H((1,), _T)]}], H((1,), _T)),
    ("Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
     [{"resource1": [H((0,), _T), H((1,), _T)]}, {"resource2": [H((0,), _T)]}], H((0,), _T)),
    ("Two providers, 1 with 2 hints, 1 with single hint matching 2/2",
     [{"resource1": [H((0,), _T), H((1,), _T)]}, {"resource2": [H((1,), _T)]}], H((1,), _T)),
    ("Two providers, both with 2 hints, matching narrower preferred hint from both",
     [{"resource1": [H((0,), _T), H((1,), _T)]}, {"resource2": [H((0,), _T), H((0, 1), _F)]}], H((0,), _T)),
    ("Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
     [{"resource1": [H((1,), _T), H((0, 1), _F)]}, {"resource2": [H((0,), _T), H((1,), _T), H((0, 1), _F)]}],
     H((1,), _T)),
    ("Multiple resources, same provider",
     [{"resource1": [H((1,), _T), H((0, 1), _F)], "resource2": [H((0,), _T), H((1,), _T), H((0, 1), _F)]}],
     H((1,), _T)),
]

_NON_PREFERRED_4 = [H((0, 1, 2, 3), _F), H((0, 1), _F)]
BEST_EFFORT = [
    ("Two providers, 2 hints each, same mask (some with different bits), same preferred",
     [{"resource1": [H((0, 1), _T), H((0, 2), _T)]}, {"resource2": [H((0, 1), _T), H((0, 2), _T)]}], H((0, 1), _T)),
    ("TopologyHint not set", [], H(DEFAULT, _T)),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], H(DEFAULT, _T)),
    ("HintProvider returns -nil map[string][]TopologyHint from provider", [{"resource": None}], H(DEFAULT, _T)),
    ("HintProvider returns empty non-nil map[string][]TopologyHint from provider", [{"resource": []}],
     H(DEFAULT, _F)),
    ("Single TopologyHint with Preferred as true and NUMANodeAffinity as nil", [{"resource": [H(None, _T)]}],
     H(DEFAULT, _T)),
    ("Single TopologyHint with Preferred as false and NUMANodeAffinity as nil", [{"resource": [H(None, _F)]}],
     H(DEFAULT, _F)),
    ("Two providers, 1 hint each, no common mask", [{"resource1": [H((0,), _T)]}, {"resource2": [H((1,), _T)]}],
     H(DEFAULT, _F)),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
     [{"resource1": [H((0,), _T)]}, {"resource2": [H((0,), _F)]}], H((0,), _F)),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
     [{"resource1": [H((1,), _T)]}, {"resource2": [H((1,), _F)]}], H((1,), _F)),
    ("Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
     [{"resource1": [H((0,), _T)]}, {"resource2": [H((0, 1), _T)]}], H((0,), _F)),
    ("Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
     [{"resource1": [H((0,), _T), H((1,), _T)]}, {"resource2": [H((0, 1), _F)]}], H((0,), _F)),
    ("Two providers, 1 hint each, 1 wider mask, both preferred 2/2",
     [{"resource1": [H((1,), _T)]}, {"resource2": [H((0, 1), _T)]}], H((1,), _F)),
    ("bestNonPreferredAffinityCount (1)", [{"resource1": _NON_PREFERRED_4}, {"resource2": [H((0, 1), _F)]}],
     H((0, 1), _F)),
    ("bestNonPreferredAffinityCount (2)", [{"resource1": _NON_PREFERRED_4}, {"resource2": [H((0, 3), _F)]}],
     H((0, 3), _F)),
    ("bestNonPreferredAffinityCount (3)", [{"resource1": _NON_PREFERRED_4}, {"resource2": [H((1, 2), _F)]}],
     H((1, 2), _F)),
    ("bestNonPreferredAffinityCount (4)", [{"resource1": _NON_PREFERRED_4}, {"resource2": [H((2, 3), _F)]}],
     H((2, 3), _F)),
]
_CASE5 = [{"resource1": _NON_PREFERRED_4}, {"resource2": [H((1, 2), _F), H((2, 3), _F)]}]
_CASE6 = [{"resource1": _NON_PREFERRED_4},
          {"resource2": [H((1, 2, 3), _F), H((1, 2), _F), H((1, 3), _F), H((2, 3), _F)]}]
BEST_EFFORT_NO_POLICIES = [
    ("bestNonPreferredAffinityCount (5)", _CASE5, H((1, 2), _F)),
    ("bestNonPreferredAffinityCount (6)", _CASE6, H((1, 2), _F)),
]
BEST_EFFORT_CLOSEST_NUMA = [
    ("Two providers, 2 hints each, same mask (some with different bits), same preferred",
     [{"resource1": [H((0, 4), _T), H((0, 2), _T)]}, {"resource2": [H((0, 4), _T), H((0, 2), _T)]}], H((0, 2), _T)),
    ("Two providers, 2 hints each, different mask",
     [{"resource1": [H((4,), _T), H((0, 2), _T)]}, {"resource2": [H((4,), _T), H((0, 2), _T)]}], H((4,), _T)),
    ("bestNonPreferredAffinityCount (5)", _CASE5, H((2, 3), _F)),
    ("bestNonPreferredAffinityCount (6)", _CASE6, H((2, 3), _F)),
]
SINGLE_NUMA_NODE = [
    ("TopologyHint not set", [], H(None, _T)),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], H(None, _T)),
    ("HintProvider returns -nil map[string][]TopologyHint from provider", [{"resource": None}], H(None, _T)),
    ("HintProvider returns empty non-nil map[string][]TopologyHint from provider", [{"resource": []}], H(None, _F)),
    ("Single TopologyHint with Preferred as true and NUMANodeAffinity as nil", [{"resource": [H(None, _T)]}],
     H(None, _T)),
    ("Single TopologyHint with Preferred as false and NUMANodeAffinity as nil", [{"resource": [H(None, _F)]}],
     H(None, _F)),
    ("Two providers, 1 hint each, no common mask", [{"resource1": [H((0,), _T)]}, {"resource2": [H((1,), _T)]}],
     H(None, _F)),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
     [{"resource1": [H((0,), _T)]}, {"resource2": [H((0,), _F)]}], H(None, _F)),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
     [{"resource1": [H((1,), _T)]}, {"resource2": [H((1,), _F)]}], H(None, _F)),
    ("Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
     [{"resource1": [H((0,), _T), H((1,), _T)]}, {"resource2": [H((0, 1), _F)]}], H(None, _F)),
    ("Single NUMA hint generation",
     [{"resource1": [H((0, 1), _T)], "resource2": [H((0,), _T), H((1,), _T), H((0, 1), _F)]}], H(None, _F)),
    ("One no-preference provider", [{"resource1": [H((0,), _T), H((1,), _T), H((0, 1), _F)]}, None], H((0,), _T)),
]

MERGE_CASES = {"commonPolicyMergeTestCases": COMMON, "bestEffortPolicy.mergeTestCases": BEST_EFFORT,
               "bestEffortPolicy.mergeTestCasesNoPolicies": BEST_EFFORT_NO_POLICIES,
               "bestEffortPolicy.mergeTestCasesClosestNUMA": BEST_EFFORT_CLOSEST_NUMA,
               "singleNumaNodePolicy.mergeTestCases": SINGLE_NUMA_NODE}
_BE = ["commonPolicyMergeTestCases", "bestEffortPolicy.mergeTestCases", "bestEffortPolicy.mergeTestCasesNoPolicies"]
_CLOSEST = ["commonPolicyMergeTestCases", "bestEffortPolicy.mergeTestCases", "bestEffortPolicy.mergeTestCasesClosestNUMA"]
MERGE_RUNS = [
    ("TestPolicyBestEffortMerge", "commonNUMAInfoFourNodes", False, "best-effort", _BE),
    ("TestPolicyBestEffortMergeClosestNUMA", "commonNUMAInfoEightNodes", True, "best-effort", _CLOSEST),
    ("TestPolicyRestrictedMerge", "commonNUMAInfoFourNodes", False, "restricted", _BE),
    ("TestPolicyRestrictedMergeClosestNUMA", "commonNUMAInfoEightNodes", True, "restricted", _CLOSEST),
    ("TestPolicySingleNumaNodeMerge", "commonNUMAInfoFourNodes", False, "single-numa-node",
     ["commonPolicyMergeTestCases", "singleNumaNodePolicy.mergeTestCases"]),
]

# canAdmitPodResult (policy_*_test.go): policy → [(hint, admitted)]
CAN_ADMIT = {
    "best-effort": [(H(None, _F), True), (H(None, _T), True)],
    "restricted": [(H(None, _F), False), (H(None, _T), True)],
    "single-numa-node": [(H(None, _F), False)],
}

# TestPolicySingleNumaNodeFilterHints: (name, all resources' hints, expected)
FILTER_SINGLE_NUMA = [
    ("filter empty resources", [], []),
    ("filter hints with nil socket mask 1/2", [[H(None, _F)], [H(None, _T)]], [[], [H(None, _T)]]),
    ("filter hints with nil socket mask 2/2", [[H((0,), _T), H(None, _F)], [H((1,), _T), H(None, _T)]],
     [[H((0,), _T)], [H((1,), _T), H(None, _T)]]),
    ("filter hints with empty resource socket mask", [[H((1,), _T), H((0,), _T), H(None, _F)], []],
     [[H((1,), _T), H((0,), _T)], []]),
    ("filter hints with wide sockemask",
     [[H((0,), _T), H((1,), _T), H((1, 2), _F), H((0, 1, 2), _F), H(None, _F)],
      [H((1, 2), _F), H((0, 1, 2), _F), H((0, 2), _F), H((3,), _F)],
      [H((1, 2), _F), H((0, 1, 2), _F), H((0, 2), _F)]],
     [[H((0,), _T), H((1,), _T)], [], []]),
]

# TestMaxOfMinAffinityCounts: (hints per resource, expected); () is NewTestBitMask() (empty, not nil)
MAX_OF_MIN = [
    ([], 0),
    ([[H((), _T)]], 0),
    ([[H((0,), _T)]], 1),
    ([[H((0, 1), _T)]], 2),
    ([[H((0, 1), _T), H((0, 1, 2), _T)]], 2),
    ([[H((0, 1), _T), H((0, 1, 2), _T)], [H((0, 1, 2), _T)]], 3),
    ([[H((0, 1), _T), H((0, 1, 2), _T)], [H((0, 1, 2), _T), H((0, 1, 2, 3), _T)]], 3),
]

# TestCompareHintsNarrowest: (description, bestNonPreferredAffinityCount, current, candidate, expected)
COMPARE = [
    ("candidate.NUMANodeAffinity.Count() == 0 (1)", -1, None, H((), _F), "current"),
    ("candidate.NUMANodeAffinity.Count() == 0 (2)", -1, H((), _T), H((), _F), "current"),
    ("current == nil (1)", -1, None, H((0,), _T), "candidate"),
    ("current == nil (2)", -1, None, H((0,), _F), "candidate"),
    ("!current.Preferred && candidate.Preferred", -1, H((0,), _F), H((0,), _T), "candidate"),
    ("current.Preferred && !candidate.Preferred", -1, H((0,), _T), H((0,), _F), "current"),
    ("current.Preferred && candidate.Preferred (1)", -1, H((0,), _T), H((0,), _T), "current"),
    ("current.Preferred && candidate.Preferred (2)", -1, H((0, 1), _T), H((0,), _T), "candidate"),
    ("current.Preferred && candidate.Preferred (3)", -1, H((0,), _T), H((0, 1), _T), "current"),
    ("!current.Preferred && !candidate.Preferred (1.1)", 1, H((0, 1), _F), H((0, 1), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (1.2)", 1, H((1, 2), _F), H((0, 1), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (1.3)", 1, H((0, 1), _F), H((1, 2), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (2.1)", 2, H((0, 1), _F), H((0,), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (2.2)", 2, H((0, 1), _F), H((0, 1), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (2.3)", 2, H((1, 2), _F), H((0, 1), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (2.4)", 2, H((0, 1), _F), H((1, 2), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (3a)", 2, H((0,), _F), H((0, 1, 2), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (3b)", 2, H((0,), _F), H((0, 1), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.1)", 3, H((0,), _F), H((0, 1), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.2)", 3, H((0,), _F), H((1, 2), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.3)", 4, H((0, 1), _F), H((1, 2, 3), _F), "candidate"),
    ("!current.Preferred && !candidate.Preferred (3cb)", 4, H((1, 2, 3), _F), H((0, 1), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.1)", 4, H((0, 1, 2), _F), H((0, 1, 2), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.2)", 4, H((0, 1, 2), _F), H((1, 2, 3), _F), "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.3)", 4, H((1, 2, 3), _F), H((0, 1, 2), _F), "candidate"),
]
