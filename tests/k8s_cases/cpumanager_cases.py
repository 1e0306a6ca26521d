"""CPU manager cases (static policy) transcribed from kubelet's pkg/kubelet/cm/cpumanager tests.

Sources (kubernetes/kubernetes; the index ids are the stored file versions read, all of the
logger-era 1.34+ code that 1.36 ships; no tag could be pinned for them):
  - topologies: policy_test.go, idx#13787689226 (topoSingleSocketHT, topoDualSocketHT,
    topoTripleSocketHT, topoDualSocketNoHT, topoDualSocketMultiNumaPerSocketHT,
    fakeTopoMultiSocketDualSocketPerNumaHT) and idx#23158579498 (commit 02a24d55d0f6,
    topoQuadSocketFourWayHT; its socket comment is kept as QUAD_SOCKET_COMMENT for a cross-check).
  - cpu_assignment_test.go idx#66702572550: TestCPUAccumulatorFreeSockets, ...FreeNUMANodes,
    ...FreeSocketsAndNUMANodes, ...FreeCores, ...FreeCPUs, ...Take, TestTakeByTopologyNUMAPacked
    (commonTakeByTopologyTestCases + its own).
  - policy_static_test.go idx#60455917: TestStaticPolicyStart and ...StartWithResvList,
    TestStaticPolicyAdd (optionsInsensitive ×{no options, full-pcpus-only}, defaultOptions,
    smtalignOption) and ...AddWithResvList, TestTopologyAwareAllocateCPUs (its no-mask case),
    TestStaticPolicyReuseCPUs, TestStaticPolicyDoNotReuseCPUs, TestStaticPolicyRemove.
  - k8s.io/utils cpuset/cpuset_test.go @ cf1189d6abe3 (file last changed da7083c42f96).

Schema:
  TOPOLOGIES = {name: {"num_cpus", "num_sockets", "num_cores", "cpus": {cpu: (core, socket, numa)}}}
    (NumCPUs/NumSockets/NumCores as the literal states them; NumNUMANodes is not in the literals:
    computed.) topoDualSocketMultiNumaPerSocketHT and fakeTopoMultiSocketDualSocketPerNumaHT are
    written as comprehensions: their 80 literal lines follow cpu i → CoreID i%40 and
    Socket/NUMA (i%40)//20 and (i%40)//10 resp. (i%40)//10 and (i%40)//20 line by line.
  ACCUMULATOR_CASES = [{"source", "name", "function", "topo", "available", "expect"}]
    function: freeSockets (compared sorted, as upstream), freeNUMANodes, freeSocketsAndNUMANodes
    (expect = {"sockets", "numa"}), freeCores, freeCPUs (ordered lists).
  TAKE_CASES = [{"source", "name", "topo", "available", "take", "num_cpus", "satisfied", "failed"}]
  TAKE_BY_TOPOLOGY_CASES = [{"source", "name", "topo", "available", "num_cpus", "error", "result"}]
    CPU sets in k8s.io/utils/cpuset's list syntax. "error": upstream expErr ("" = none).
  POLICY_START_CASES = [{"source", "name", "topo", "num_reserved", "options", "assignments",
                         "default", "error" | "expect_default"}]
  POLICY_ADD_CASES = [{"source", "name", "topo", "num_reserved", "reserved", "options",
                       "assignments", "default", "pod", "container", "error", "alloc", "expect"}]
    pod: makePod(podUID, containerName, cpuRequest, cpuLimit) as a manifest: one container with
    requests/limits {cpu, memory "1G"}; "error": the error's text, or for SMTAlignmentError a dict
    of its fields; "alloc": expCPUAlloc; "expect": expCSet. "reserved": reservedCPUs (None = unset).
    The quad-socket cases build their sets from the topology: LARGE_ALL (every CPU), LARGE_SOCK0,
    LARGE_SOCK1 are tokens resolved by the test ({"all_minus": ...}, {"sock1_plus": ...}).
  REUSE_CASES / REMOVE_CASES: see their comments.
  CPUSET_* tables: cpuset_test.go.

Skipped (reason): cpu_assignment_test.go cases with PreferAlignByUncoreCacheOption or
DistributeCPUsAcrossCores (TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption), all of
TestTakeByTopologyNUMADistributed and the *ForResize tables: options sdqos refuses and in-place
resize of exclusive CPUs, which sdqos does not do. policy_static_test.go alignBySocketOption cases
(align-by-socket, refused), TestStaticPolicyAddWithUncoreAlignment (prefer-align-cpus-by-uncorecache,
refused). The four masked TestTopologyAwareAllocateCPUs cases are ALLOCATE_CPUS_MASKED_CASES and
topology_hints_test.go's returnTestCases TOPOLOGY_HINT_CASES (for GetTopologyHints and
GetPodTopologyHints alike, as upstream runs them); its WithPolicyOptions cases use align-by-socket
(refused) and are not transcribed.

Renames: upstream container names ("fakeContainer3", "fakeContainerBug113537_1", "initContainer-0")
are not DNS labels; `dns()` lowercases them and turns '_' into '-', in the pods and in the
assignments' keys alike, so every case keeps its meaning.
"""

# --- topologies (policy_test.go) ------------------------------------------------------------------

def _lit(num_cpus, num_sockets, num_cores, rows):
    return {"num_cpus": num_cpus, "num_sockets": num_sockets, "num_cores": num_cores, "cpus": dict(rows)}


TOPOLOGIES = {
    "topoSingleSocketHT": _lit(8, 1, 4, {
        0: (0, 0, 0), 1: (1, 0, 0), 2: (2, 0, 0), 3: (3, 0, 0),
        4: (0, 0, 0), 5: (1, 0, 0), 6: (2, 0, 0), 7: (3, 0, 0)}),
    "topoDualSocketHT": _lit(12, 2, 6, {
        0: (0, 0, 0), 1: (1, 1, 1), 2: (2, 0, 0), 3: (3, 1, 1), 4: (4, 0, 0), 5: (5, 1, 1),
        6: (0, 0, 0), 7: (1, 1, 1), 8: (2, 0, 0), 9: (3, 1, 1), 10: (4, 0, 0), 11: (5, 1, 1)}),
    # "fake topology for testing purposes only"
    "topoTripleSocketHT": _lit(18, 3, 9, {
        0: (0, 1, 1), 1: (0, 1, 1), 2: (1, 1, 1), 3: (1, 1, 1), 4: (2, 1, 1), 5: (2, 1, 1),
        6: (3, 0, 0), 7: (3, 0, 0), 8: (4, 0, 0), 9: (4, 0, 0), 10: (5, 0, 0), 11: (5, 0, 0),
        12: (6, 2, 2), 13: (6, 2, 2), 14: (7, 2, 2), 15: (7, 2, 2), 16: (8, 2, 2), 17: (8, 2, 2)}),
    "topoDualSocketNoHT": _lit(8, 2, 8, {
        0: (0, 0, 0), 1: (1, 0, 0), 2: (2, 0, 0), 3: (3, 0, 0),
        4: (4, 1, 1), 5: (5, 1, 1), 6: (6, 1, 1), 7: (7, 1, 1)}),
    # dual xeon gold 6230: NUMA node0 0-9,40-49; node1 10-19,50-59; node2 20-29,60-69; node3 30-39,70-79
    "topoDualSocketMultiNumaPerSocketHT": _lit(80, 2, 40, {
        i: (i % 40, (i % 40) // 20, (i % 40) // 10) for i in range(80)}),
    # "We flip NUMA cells and Sockets to exercise the code."
    "fakeTopoMultiSocketDualSocketPerNumaHT": _lit(80, 4, 40, {
        i: (i % 40, (i % 40) // 10, (i % 40) // 20) for i in range(80)}),
}

# topoQuadSocketFourWayHT: socket → [(CoreID, its 4 CPUs in the literal's order)]; NUMA = socket.
_QUAD = {
    0: [(0, (0, 169, 109, 229)), (1, (50, 170, 110, 230)), (64, (1, 25, 13, 38)), (65, (2, 26, 14, 39)),
        (72, (9, 33, 21, 46)), (73, (10, 34, 22, 47)), (8, (57, 177, 117, 237)), (9, (58, 178, 118, 238)),
        (24, (71, 191, 131, 251)), (25, (72, 192, 132, 252)), (32, (79, 199, 139, 259)),
        (33, (80, 200, 140, 260)), (40, (87, 207, 147, 267)), (41, (88, 208, 148, 268)),
        (48, (95, 215, 155, 275)), (49, (96, 216, 156, 276)), (56, (103, 223, 163, 283)),
        (57, (104, 224, 164, 284))],
    1: [(66, (3, 27, 15, 40)), (67, (4, 28, 16, 41)), (74, (11, 35, 23, 48)), (75, (12, 36, 24, 49)),
        (2, (51, 171, 111, 231)), (3, (52, 172, 112, 232)), (10, (59, 179, 119, 239)),
        (11, (60, 180, 120, 240)), (18, (65, 185, 125, 245)), (19, (66, 186, 126, 246)),
        (26, (73, 193, 133, 253)), (27, (74, 194, 134, 254)), (34, (81, 201, 141, 261)),
        (35, (82, 202, 142, 262)), (42, (89, 209, 149, 269)), (43, (90, 210, 150, 270)),
        (50, (97, 217, 157, 277)), (51, (98, 218, 158, 278))],
    2: [(68, (5, 29, 17, 42)), (69, (6, 30, 18, 43)), (4, (53, 173, 113, 233)), (5, (54, 174, 114, 234)),
        (12, (61, 181, 121, 241)), (13, (62, 182, 122, 242)), (20, (67, 187, 127, 247)),
        (21, (68, 188, 128, 248)), (28, (75, 195, 135, 255)), (29, (76, 196, 136, 256)),
        (36, (83, 203, 143, 263)), (37, (84, 204, 144, 264)), (44, (91, 211, 151, 271)),
        (45, (92, 212, 152, 272)), (52, (99, 219, 159, 279)), (53, (100, 220, 160, 280)),
        (60, (105, 225, 165, 285)), (61, (106, 226, 166, 286))],
    3: [(70, (7, 31, 19, 44)), (71, (8, 32, 20, 45)), (63, (37, 168, 108, 228)), (62, (107, 227, 167, 287)),
        (6, (55, 175, 115, 235)), (7, (56, 176, 116, 236)), (14, (63, 183, 123, 243)),
        (15, (64, 184, 124, 244)), (22, (69, 189, 129, 249)), (23, (70, 190, 130, 250)),
        (30, (77, 197, 137, 257)), (31, (78, 198, 138, 258)), (38, (85, 205, 145, 265)),
        (39, (86, 206, 146, 266)), (46, (93, 213, 153, 273)), (47, (94, 214, 154, 274)),
        (54, (101, 221, 161, 281)), (55, (102, 222, 162, 282))],
}
TOPOLOGIES["topoQuadSocketFourWayHT"] = _lit(288, 4, 72, {
    cpu: (core, socket, socket) for socket, cores in _QUAD.items() for core, cpus in cores for cpu in cpus})

# The literal's comment ("Topology from ... KNL.SNC4.H50.v1.11.png"), per socket.
QUAD_SOCKET_COMMENT = {
    0: "0-2,9-10,13-14,21-22,25-26,33-34,38-39,46-47,50,57-58,71-72,79-80,87-88,95-96,103-104,109-110,117-118,"
       "131-132,139-140,147-148,155-156,163-164,169-170,177-178,191-192,199-200,207-208,215-216,223-224,229-230,"
       "237-238,251-252,259-260,267-268,275-276,283-284",
    1: "3-4,11-12,15-16,23-24,27-28,35-36,40-41,48-49,51-52,59-60,65-66,73-74,81-82,89-90,97-98,111-112,119-120,"
       "125-126,133-134,141-142,149-150,157-158,171-172,179-180,185-186,193-194,201-202,209-210,217-218,231-232,"
       "239-240,245-246,253-254,261-262,269-270,277-278",
    2: "5-6,17-18,29-30,42-43,53-54,61-62,67-68,75-76,83-84,91-92,99-100,105-106,113-114,121-122,127-128,135-136,"
       "143-144,151-152,159-160,165-166,173-174,181-182,187-188,195-196,203-204,211-212,219-220,225-226,233-234,"
       "241-242,247-248,255-256,263-264,271-272,279-280,285-286",
    3: "7-8,19-20,31-32,37,44-45,55-56,63-64,69-70,77-78,85-86,93-94,101-102,107-108,115-116,123-124,129-130,"
       "137-138,145-146,153-154,161-162,167-168,175-176,183-184,189-190,197-198,205-206,213-214,221-222,227-228,"
       "235-236,243-244,249-250,257-258,265-266,273-274,281-282,287",
}

# --- cpu_assignment_test.go -----------------------------------------------------------------------

_CA = "kubernetes/kubernetes idx#66702572550:pkg/kubelet/cm/cpumanager/cpu_assignment_test.go"


def _acc(test, rows):
    return [{"source": f"{_CA} {test}", "name": f"{test}/{n}", "function": fn, "topo": t, "available": a,
             "expect": e} for fn, n, t, a, e in rows]


ACCUMULATOR_CASES = _acc("TestCPUAccumulatorFreeSockets", [
    ("freeSockets", "single socket HT, 1 socket free", "topoSingleSocketHT", "0-7", [0]),
    ("freeSockets", "single socket HT, 0 sockets free", "topoSingleSocketHT", "1-7", []),
    ("freeSockets", "dual socket HT, 2 sockets free", "topoDualSocketHT", "0-11", [0, 1]),
    ("freeSockets", "dual socket HT, 1 socket free", "topoDualSocketHT", "0-9,11", [1]),
    ("freeSockets", "dual socket HT, 0 sockets free", "topoDualSocketHT", "0,2-9,11", []),
    ("freeSockets", "dual socket, multi numa per socket, HT, 2 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", [0, 1]),
    ("freeSockets", "dual socket, multi numa per socket, HT, 1 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "1-79", [1]),
    ("freeSockets", "dual socket, multi numa per socket, HT, 0 sockets free",
     "topoDualSocketMultiNumaPerSocketHT", "1-78", []),
    ("freeSockets", "dual numa, multi socket per per socket, HT, 4 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-79", [0, 1, 2, 3]),
    ("freeSockets", "dual numa, multi socket per per socket, HT, 3 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-19,21-79", [0, 1, 3]),
    ("freeSockets", "dual numa, multi socket per per socket, HT, 2 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-59,61-78", [0, 1]),
    ("freeSockets", "dual numa, multi socket per per socket, HT, 1 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "1-19,21-38,41-60,61-78", [1]),
    ("freeSockets", "dual numa, multi socket per per socket, HT, 0 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-40,42-49,51-68,71-79", []),
]) + _acc("TestCPUAccumulatorFreeNUMANodes", [
    ("freeNUMANodes", "single socket HT, 1 NUMA node free", "topoSingleSocketHT", "0-7", [0]),
    ("freeNUMANodes", "single socket HT, 0 NUMA Node free", "topoSingleSocketHT", "1-7", []),
    ("freeNUMANodes", "dual socket HT, 2 NUMA Node free", "topoDualSocketHT", "0-11", [0, 1]),
    ("freeNUMANodes", "dual socket HT, 1 NUMA Node free", "topoDualSocketHT", "0-9,11", [1]),
    ("freeNUMANodes", "dual socket HT, 0 NUMA node free", "topoDualSocketHT", "0,2-9,11", []),
    ("freeNUMANodes", "dual socket, multi numa per socket, HT, 4 NUMA Node free",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", [0, 1, 2, 3]),
    ("freeNUMANodes", "dual socket, multi numa per socket, HT, 3 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-79", [1, 2, 3]),
    ("freeNUMANodes", "dual socket, multi numa per socket, HT, 2 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-79", [2, 3]),
    ("freeNUMANodes", "dual socket, multi numa per socket, HT, 1 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-59,61-79", [3]),
    ("freeNUMANodes", "dual socket, multi numa per socket, HT, 0 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-59,61-78", []),
    ("freeNUMANodes", "dual numa, multi socket per per socket, HT, 2 NUMA node free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-79", [0, 1]),
    ("freeNUMANodes", "dual numa, multi socket per per socket, HT, 1 NUMA node free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-9,11-79", [1]),
    ("freeNUMANodes", "dual numa, multi socket per per socket, HT, 0 sockets free",
     "fakeTopoMultiSocketDualSocketPerNumaHT", "0-9,11-59,61-79", []),
]) + _acc("TestCPUAccumulatorFreeSocketsAndNUMANodes", [
    ("freeSocketsAndNUMANodes", "dual socket, multi numa per socket, HT, 2 Socket/4 NUMA Node free",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", {"sockets": [0, 1], "numa": [0, 1, 2, 3]}),
    ("freeSocketsAndNUMANodes", "dual socket, multi numa per socket, HT, 1 Socket/3 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-79", {"sockets": [1], "numa": [1, 2, 3]}),
    ("freeSocketsAndNUMANodes", "dual socket, multi numa per socket, HT, 1 Socket/ 2 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-9,11-79", {"sockets": [1], "numa": [2, 3]}),
    ("freeSocketsAndNUMANodes", "dual socket, multi numa per socket, HT, 0 Socket/ 2 NUMA node free",
     "topoDualSocketMultiNumaPerSocketHT", "1-59,61-79", {"sockets": [], "numa": [1, 3]}),
]) + _acc("TestCPUAccumulatorFreeCores", [
    ("freeCores", "single socket HT, 4 cores free", "topoSingleSocketHT", "0-7", [0, 1, 2, 3]),
    ("freeCores", "single socket HT, 3 cores free", "topoSingleSocketHT", "0-2,4-6", [0, 1, 2]),
    ("freeCores", "single socket HT, 3 cores free (1 partially consumed)", "topoSingleSocketHT", "0-6", [0, 1, 2]),
    ("freeCores", "single socket HT, 0 cores free", "topoSingleSocketHT", "", []),
    ("freeCores", "single socket HT, 0 cores free (4 partially consumed)", "topoSingleSocketHT", "0-3", []),
    ("freeCores", "dual socket HT, 6 cores free", "topoDualSocketHT", "0-11", [0, 2, 4, 1, 3, 5]),
    ("freeCores", "dual socket HT, 5 cores free (1 consumed from socket 0)", "topoDualSocketHT",
     "1-5,7-11", [2, 4, 1, 3, 5]),
    ("freeCores", "dual socket HT, 4 cores free (1 consumed from each socket)", "topoDualSocketHT",
     "2-5,8-11", [2, 4, 3, 5]),
]) + _acc("TestCPUAccumulatorFreeCPUs", [
    ("freeCPUs", "single socket HT, 8 cpus free", "topoSingleSocketHT", "0-7", [0, 4, 1, 5, 2, 6, 3, 7]),
    ("freeCPUs", "single socket HT, 5 cpus free", "topoSingleSocketHT", "3-7", [4, 5, 6, 3, 7]),
    ("freeCPUs", "dual socket HT, 12 cpus free", "topoDualSocketHT", "0-11",
     [0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("freeCPUs", "dual socket HT, 11 cpus free", "topoDualSocketHT", "1-11", [6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("freeCPUs", "dual socket HT, 10 cpus free", "topoDualSocketHT", "1-5,7-11", [2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    ("freeCPUs", "triple socket HT, 12 cpus free", "topoTripleSocketHT", "0-3,6-13",
     [12, 13, 0, 1, 2, 3, 6, 7, 8, 9, 10, 11]),
])

TAKE_CASES = [
    {"source": f"{_CA} TestCPUAccumulatorTake", "name": n, "topo": "topoSingleSocketHT", "available": a,
     "take": tk, "num_cpus": num, "satisfied": sat, "failed": fail}
    for n, a, tk, num, sat, fail in [
        ("take 0 cpus from a single socket HT, require 1", "0-7", [""], 1, False, False),
        ("take 0 cpus from a single socket HT, require 1, none available", "", [""], 1, False, True),
        ("take 1 cpu from a single socket HT, require 1", "0-7", ["0"], 1, True, False),
        ("take 1 cpu from a single socket HT, require 2", "0-7", ["0"], 2, False, False),
        ("take 2 cpu from a single socket HT, require 4, expect failed", "0-2", ["0", "1"], 4, False, True),
        ("take all cpus one at a time from a single socket HT, require 8", "0-7",
         ["0", "1", "2", "3", "4", "5", "6", "7"], 8, True, False),
    ]
]

_COMMON = [
    ("take more cpus than are available from single socket with HT", "topoSingleSocketHT", "0,2,4,6", 5,
     "not enough cpus available to satisfy request: requested=5, available=4", ""),
    ("take zero cpus from single socket with HT", "topoSingleSocketHT", "0-7", 0, "", ""),
    ("take one cpu from single socket with HT", "topoSingleSocketHT", "0-7", 1, "", "0"),
    ("take one cpu from single socket with HT, some cpus are taken", "topoSingleSocketHT", "1,3,5-7", 1, "", "6"),
    ("take two cpus from single socket with HT", "topoSingleSocketHT", "0-7", 2, "", "0,4"),
    ("take all cpus from single socket with HT", "topoSingleSocketHT", "0-7", 8, "", "0-7"),
    ("take two cpus from single socket with HT, only one core totally free", "topoSingleSocketHT",
     "0-3,6", 2, "", "2,6"),
    ("take a socket of cpus from dual socket with HT", "topoDualSocketHT", "0-11", 6, "", "0,2,4,6,8,10"),
    ("take a socket of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 40, "", "0-19,40-59"),
    ("take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 20, "", "0-9,40-49"),
    ("take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, with 1 NUMA node already taken",
     "topoDualSocketMultiNumaPerSocketHT", "10-39,50-79", 20, "", "10-19,50-59"),
    ("take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     "topoDualSocketMultiNumaPerSocketHT", "0-79", 60, "", "0-29,40-69"),
    ("take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, a core taken",
     "topoDualSocketMultiNumaPerSocketHT", "1-39,41-79", 60, "", "10-39,50-79"),
]
_PACKED = [
    ("take one cpu from dual socket with HT - core from Socket 0", "topoDualSocketHT", "1-5,7-11", 1, "", "2"),
    ("allocate 4 full cores with 3 coming from the first NUMA node (filling it up) and 1 coming from the "
     "second NUMA node", "topoDualSocketHT", "0-11", 8, "", "0,6,2,8,4,10,1,7"),
    ("allocate 32 full cores with 30 coming from the first 3 NUMA nodes (filling them up) and 2 coming from "
     "the fourth NUMA node", "topoDualSocketMultiNumaPerSocketHT", "0-79", 64, "", "0-29,40-69,30,31,70,71"),
]
TAKE_BY_TOPOLOGY_CASES = [
    {"source": f"{_CA} TestTakeByTopologyNUMAPacked" + (" (commonTakeByTopologyTestCases)" if common else ""),
     "name": n, "topo": t, "available": a, "num_cpus": num, "error": err, "result": res}
    for common, rows in ((True, _COMMON), (False, _PACKED)) for n, t, a, num, err, res in rows
]

# --- policy_static_test.go ------------------------------------------------------------------------

_PS = "kubernetes/kubernetes idx#60455917:pkg/kubelet/cm/cpumanager/policy_static_test.go"


def dns(name):
    """Upstream's container names as DNS labels (sdqos's manifest parser requires them):
    lowercased, '_' → '-'. Applied alike to the pods and to the state's assignment keys."""
    return name.lower().replace("_", "-")


def make_pod(uid, container, cpu_request, cpu_limit):
    """policy_test helpers' makePod: one container, requests/limits cpu + memory "1G"."""
    return {"metadata": {"name": "pod", "uid": uid},
            "spec": {"containers": [{"name": dns(container), "resources": {
                "requests": {"cpu": cpu_request, "memory": "1G"},
                "limits": {"cpu": cpu_limit, "memory": "1G"}}}]}}


POLICY_START_CASES = [
    {"source": f"{_PS} TestStaticPolicyStart", "name": n, "topo": "topoDualSocketHT", "num_reserved": r,
     "options": o, "assignments": asg, "default": d, **res}
    for n, r, o, asg, d, res in [
        ("non-corrupted state", 0, {}, {"fakePod": {"0": "0"}}, "1-11", {"expect_default": "1-11"}),
        ("empty cpuset", 1, {}, {}, "", {"expect_default": "0-11"}),
        ("reserved cores 0 & 6 are not present in available cpuset", 2, {}, {}, "0-1",
         {"error": 'not all reserved cpus: "0,6" are present in defaultCpuSet: "0-1"'}),
        ("some of reserved cores are present in available cpuset (StrictCPUReservationOption)", 2,
         {"strict-cpu-reservation": "true"}, {}, "0-1",
         {"error": 'some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-1"'}),
        ("assigned core 2 is still present in available cpuset", 0, {}, {"fakePod": {"0": "0-2"}}, "2-11",
         {"error": 'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset "2-11"'}),
        ("assigned core 2 is still present in available cpuset (StrictCPUReservationOption)", 0,
         {"strict-cpu-reservation": "true"}, {"fakePod": {"0": "0-2"}}, "2-11",
         {"error": 'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset "2-11"'}),
        ("core 12 is not present in topology but is in state cpuset", 0, {},
         {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-12",
         {"error": 'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-12"'}),
        ("core 11 is present in topology but is not in state cpuset", 0, {},
         {"fakePod": {"0": "0-2", "1": "3-4"}}, "5-10",
         {"error": 'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-10"'}),
    ]
]


def _add(group, n, topo, r, asg, d, pod, err, alloc, exp, *, options=None, reserved=None):
    asg = {uid: {dns(c): s for c, s in conts.items()} for uid, conts in asg.items()}
    return {"source": f"{_PS} TestStaticPolicyAdd ({group})", "name": n, "topo": topo, "num_reserved": r,
            "reserved": reserved, "options": options or {}, "assignments": asg, "default": d, "pod": pod,
            "container": pod["spec"]["containers"][0]["name"], "error": err, "alloc": alloc, "expect": exp}


_P = "fakePod"
_OPTIONS_INSENSITIVE = [
    ("GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore", "topoSingleSocketHT", 1,
     {_P: {"fakeContainer100": "2-3,6-7"}}, "0-1,4-5", make_pod(_P, "fakeContainer3", "2000m", "2000m"),
     "", True, "1,5"),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocket", "topoDualSocketHT", 1,
     {_P: {"fakeContainer100": "2"}}, "0-1,3-11", make_pod(_P, "fakeContainer3", "6000m", "6000m"),
     "", True, "1,3,5,7,9,11"),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocThreeCores", "topoDualSocketHT", 1,
     {_P: {"fakeContainer100": "1,5"}}, "0,2-4,6-11", make_pod(_P, "fakeContainer3", "6000m", "6000m"),
     "", True, "2-4,8-10"),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocOneSocket", "topoDualSocketNoHT", 1,
     {_P: {"fakeContainer100": ""}}, "0-1,3-7", make_pod(_P, "fakeContainer1", "4000m", "4000m"),
     "", True, "4-7"),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocFourCores", "topoDualSocketNoHT", 1,
     {_P: {"fakeContainer100": "4-5"}}, "0-1,3,6-7", make_pod(_P, "fakeContainer1", "4000m", "4000m"),
     "", True, "1,3,6-7"),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocketOneCore", "topoDualSocketHT", 1,
     {_P: {"fakeContainer100": "2"}}, "0-1,3-11", make_pod(_P, "fakeContainer3", "8000m", "8000m"),
     "", True, "1,3-5,7,9-11"),
    ("NonGuPod, SingleSocketHT, NoAlloc", "topoSingleSocketHT", 1, {}, "0-7",
     make_pod(_P, "fakeContainer1", "1000m", "2000m"), "", False, ""),
    ("GuPodNonIntegerCore, SingleSocketHT, NoAlloc", "topoSingleSocketHT", 1, {}, "0-7",
     make_pod(_P, "fakeContainer4", "977m", "977m"), "", False, ""),
    # All the CPUs from Socket 0 are available. Some CPUs from each Socket have been already assigned.
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocSock0", "topoQuadSocketFourWayHT", 0,
     {_P: {"fakeContainer100": "3-7,11"}}, {"all_minus": "3-7,11"},
     make_pod(_P, "fakeContainer5", "72000m", "72000m"), "", True, {"socket": 0}),
    # Only 2 full cores from three Sockets and some partial cores are available.
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllFullCoresFromThreeSockets",
     "topoQuadSocketFourWayHT", 0,
     {_P: {"fakeContainer100": {"all_minus": "1,25,13,38,2,9,11,35,23,48,12,51,53,173,113,233,54,61"}}},
     "1,25,13,38,2,9,11,35,23,48,12,51,53,173,113,233,54,61",
     make_pod(_P, "fakeCcontainer5", "12000m", "12000m"), "", True, "1,25,13,38,11,35,23,48,53,173,113,233"),
    # All CPUs from Socket 1, 1 full core and some partial cores are available.
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocAllSock1+FullCore", "topoQuadSocketFourWayHT", 0,
     {_P: {"fakeContainer100": {"all_minus": {"socket": 1, "plus": "10,34,22,47,53,173,61,181,108,228,115,235"}}}},
     {"socket": 1, "plus": "10,34,22,47,53,173,61,181,108,228,115,235"},
     make_pod(_P, "fakeContainer5", "76000m", "76000m"), "", True, {"socket": 1, "plus": "10,34,22,47"}),
]
_DEFAULT_OPTIONS = [
    ("GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU", "topoSingleSocketHT", 1, {}, "0-7",
     make_pod(_P, "fakeContainer2", "1000m", "1000m"), "", True, "4"),
    # Only partial cores are available in the entire system.
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocCPUs", "topoQuadSocketFourWayHT", 0,
     {_P: {"fakeContainer100": {"all_minus": "10,11,53,37,55,67,52"}}}, "10,11,53,67,52",
     make_pod(_P, "fakeContainer5", "5000m", "5000m"), "", True, "10,11,53,67,52"),
    ("GuPodSingleCore, SingleSocketHT, ExpectError", "topoSingleSocketHT", 1, {}, "0-7",
     make_pod(_P, "fakeContainer2", "8000m", "8000m"),
     "not enough cpus available to satisfy request: requested=8, available=7", False, ""),
    ("GuPodMultipleCores, SingleSocketHT, ExpectSameAllocation", "topoSingleSocketHT", 1,
     {_P: {"fakeContainer3": "2-3,6-7"}}, "0-1,4-5", make_pod(_P, "fakeContainer3", "4000m", "4000m"),
     "", True, "2-3,6-7"),
    ("GuPodMultipleCores, DualSocketHT, NoAllocExpectError", "topoDualSocketHT", 1,
     {_P: {"fakeContainer100": "1-3"}}, "0,4-11", make_pod(_P, "fakeContainer5", "10000m", "10000m"),
     "not enough cpus available to satisfy request: requested=10, available=8", False, ""),
    ("GuPodMultipleCores, SingleSocketHT, NoAllocExpectError", "topoSingleSocketHT", 1,
     {_P: {"fakeContainer100": "1-6"}}, "0,7", make_pod(_P, "fakeContainer5", "2000m", "2000m"),
     "not enough cpus available to satisfy request: requested=2, available=1", False, ""),
    # Only 7 CPUs are available. Pod requests 76 cores.
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, NoAlloc", "topoQuadSocketFourWayHT", 0,
     {_P: {"fakeContainer100": {"all_minus": "10,11,53,37,55,67,52"}}}, "10,11,53,37,55,67,52",
     make_pod(_P, "fakeContainer5", "76000m", "76000m"),
     "not enough cpus available to satisfy request: requested=76, available=7", False, ""),
]
_FULL = {"full-pcpus-only": "true"}
_SMT = [
    ("GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU", "topoSingleSocketHT", 1, {}, "0-7",
     make_pod(_P, "fakeContainer2", "1000m", "1000m"), {"requested_cpus": 1, "cpus_per_core": 2}, False, "", None),
    # test SMT-level != 2 - which is the default on x86_64
    ("GuPodMultipleCores, topoQuadSocketFourWayHT, ExpectAllocOneCPUs", "topoQuadSocketFourWayHT", 8, {},
     {"all_minus": ""}, make_pod(_P, "fakeContainer15", "15000m", "15000m"),
     {"requested_cpus": 15, "cpus_per_core": 4}, False, "", None),
    ("GuPodManyCores, topoDualSocketHT, ExpectDoNotAllocPartialCPU", "topoDualSocketHT", 2, {},
     "0,2-5,7-11", make_pod(_P, "fakeContainerBug113537_1", "10000m", "10000m"),
     {"requested_cpus": 10, "cpus_per_core": 2, "available_physical_cpus": 8, "caused_by_physical_cpus": True},
     False, "", "1,6"),
    ("GuPodManyCores, topoDualSocketHT, AutoReserve, ExpectAllocAllCPUs", "topoDualSocketHT", 2, {},
     "1-5,7-11", make_pod(_P, "fakeContainerBug113537_2", "10000m", "10000m"), "", True, "1-5,7-11", None),
    ("GuPodManyCores, topoDualSocketHT, ExpectAllocAllCPUs", "topoDualSocketHT", 2, {},
     "1-5,7-11", make_pod(_P, "fakeContainerBug113537_2", "10000m", "10000m"), "", True, "1-5,7-11", "0,6"),
]

POLICY_ADD_CASES = (
    [_add("optionsInsensitive", f"options=map[] {n}", *row) for n, *row in _OPTIONS_INSENSITIVE]
    + [_add("optionsInsensitive", f"options=map[full-pcpus-only:true] {n}", *row, options=_FULL)
       for n, *row in _OPTIONS_INSENSITIVE]
    + [_add("defaultOptions", n, *row) for n, *row in _DEFAULT_OPTIONS]
    + [_add("smtalignOption", n, t, r, asg, d, pod, err, alloc, exp, options=_FULL, reserved=res)
       for n, t, r, asg, d, pod, err, alloc, exp, res in _SMT]
)


def make_multi_container_pod(init, app, restart_always=()):
    """makeMultiContainerPod(WithOptions): init containers "initContainer-<i>", app containers
    "appContainer-<i>", each requests/limits {cpu, memory "1G"}; restart_always: indexes of
    init containers with restartPolicy Always."""
    def c(name, cpu, sidecar):
        out = {"name": dns(name), "resources": {"requests": {"cpu": cpu[0], "memory": "1G"},
                                           "limits": {"cpu": cpu[1], "memory": "1G"}}}
        if sidecar:
            out["restartPolicy"] = "Always"
        return out
    return {"metadata": {"name": "pod", "uid": "podUID"},
            "spec": {"initContainers": [c(f"initContainer-{i}", x, i in restart_always) for i, x in enumerate(init)],
                     "containers": [c(f"appContainer-{i}", x, False) for i, x in enumerate(app)]}}


# allocate every container (init then app), check the default set, then remove `remove` and check again
REUSE_CASES = [
    {"source": f"{_PS} TestStaticPolicyReuseCPUs", "name": "SingleSocketHT, DeAllocOneInitContainer",
     "topo": "topoSingleSocketHT", "pod": make_multi_container_pod([("4000m", "4000m")], [("2000m", "2000m")]),
     "default": "0-7", "after_alloc": "2-3,6-7", "remove": dns("initContainer-0"), "after_remove": "1-3,5-7"},
    {"source": f"{_PS} TestStaticPolicyDoNotReuseCPUs",
     "name": "SingleSocketHT, Don't reuse CPUs of a restartable init container",
     "topo": "topoSingleSocketHT",
     "pod": make_multi_container_pod([("4000m", "4000m")], [("2000m", "2000m")], restart_always=(0,)),
     "default": "0-7", "after_alloc": "3,7", "remove": None, "after_remove": None},
]

REMOVE_CASES = [
    {"source": f"{_PS} TestStaticPolicyRemove", "name": n, "topo": "topoSingleSocketHT", "pod_uid": "fakePod",
     "container": c, "assignments": {"fakePod": asg}, "default": d, "expect": e}
    for n, c, asg, d, e in [
        ("SingleSocketHT, DeAllocOneContainer", "fakeContainer1", {"fakeContainer1": "1-3"}, "4-7", "1-7"),
        ("SingleSocketHT, DeAllocOneContainer, BeginEmpty", "fakeContainer1",
         {"fakeContainer1": "1-3", "fakeContainer2": "4-7"}, "", "1-3"),
        ("SingleSocketHT, DeAllocTwoContainer", "fakeContainer1",
         {"fakeContainer1": "1,3,5", "fakeContainer2": "2,4"}, "6-7", "1,3,5-7"),
        ("SingleSocketHT, NoDeAlloc", "fakeContainer2", {"fakeContainer1": "1,3,5"}, "2,4,6-7", "2,4,6-7"),
    ]
]

# --- k8s.io/utils cpuset_test.go ------------------------------------------------------------------

CPUSET_SOURCE = "kubernetes/utils@cf1189d6abe3:cpuset/cpuset_test.go"
CPUSET_SIZE = [((), 0), ((5,), 1), ((1, 2, 3, 4, 5), 5)]
CPUSET_IS_EMPTY = [((), True), ((5,), False), ((1, 2, 3, 4, 5), False)]
CPUSET_CONTAINS = [((), (), (1, 2, 3, 4, 5)), ((5,), (5,), (1, 2, 3, 4)), ((1, 2, 4, 5), (1, 2, 4, 5), (0, 3, 6))]
CPUSET_EQUAL = [((), ()), ((5,), (5,)), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5)), ((5, 4, 3, 2, 1), (1, 2, 3, 4, 5))]
CPUSET_NOT_EQUAL = [((), (5,)), ((5,), ()), ((), (1, 2, 3, 4, 5)), ((1, 2, 3, 4, 5), ()), ((5,), (1, 2, 3, 4, 5)),
                    ((1, 2, 3, 4, 5), (5,))]
CPUSET_SUBSET = [((), ()), ((5,), (5,)), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5)), ((), (5,)), ((), (1, 2, 3, 4, 5)),
                 ((5,), (1, 2, 3, 4, 5)), ((1, 2, 3), (1, 2, 3, 4, 5)), ((4, 5), (1, 2, 3, 4, 5)),
                 ((2, 3), (1, 2, 3, 4, 5))]
CPUSET_NOT_SUBSET = [((5,), ()), ((6,), (5,))]
CPUSET_UNION = [  # (s1, others, expected)
    ((5,), [], (5,)), ((), [()], ()), ((), [(5,)], (5,)), ((5,), [()], (5,)), ((5,), [(5,)], (5,)),
    ((), [(1, 2, 3, 4, 5)], (1, 2, 3, 4, 5)), ((1, 2, 3, 4, 5), [()], (1, 2, 3, 4, 5)),
    ((1, 2, 3, 4, 5), [(1, 2, 3, 4, 5)], (1, 2, 3, 4, 5)), ((5,), [(1, 2, 3, 4, 5)], (1, 2, 3, 4, 5)),
    ((1, 2, 3, 4, 5), [(5,)], (1, 2, 3, 4, 5)), ((1, 2), [(3, 4, 5)], (1, 2, 3, 4, 5)),
    ((1, 2, 3), [(3, 4, 5)], (1, 2, 3, 4, 5)), ((), [(1, 2, 3, 4, 5), (4, 5)], (1, 2, 3, 4, 5)),
    ((1, 2, 3, 4, 5), [(), (4,)], (1, 2, 3, 4, 5)), ((1, 2, 3, 4, 5), [(1, 2, 3, 4, 5), (1, 5)], (1, 2, 3, 4, 5)),
]
CPUSET_INTERSECTION = [
    ((), (), ()), ((), (5,), ()), ((5,), (), ()), ((5,), (5,), (5,)), ((), (1, 2, 3, 4, 5), ()),
    ((1, 2, 3, 4, 5), (), ()), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5), (1, 2, 3, 4, 5)), ((5,), (1, 2, 3, 4, 5), (5,)),
    ((1, 2, 3, 4, 5), (5,), (5,)), ((1, 2), (3, 4, 5), ()), ((1, 2, 3), (3, 4, 5), (3,)),
]
CPUSET_DIFFERENCE = [
    ((), (), ()), ((), (5,), ()), ((5,), (), (5,)), ((5,), (5,), ()), ((), (1, 2, 3, 4, 5), ()),
    ((1, 2, 3, 4, 5), (), (1, 2, 3, 4, 5)), ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5), ()), ((5,), (1, 2, 3, 4, 5), ()),
    ((1, 2, 3, 4, 5), (5,), (1, 2, 3, 4)), ((1, 2), (3, 4, 5), (1, 2)), ((1, 2, 3), (3, 4, 5), (1, 2)),
]
CPUSET_LIST = [((), []), ((5,), [5]), ((1, 2, 3, 4, 5), [1, 2, 3, 4, 5]), ((5, 4, 3, 2, 1), [1, 2, 3, 4, 5])]
CPUSET_STRING = [((), ""), ((5,), "5"), ((1, 2, 3, 4, 5), "1-5"), ((1, 2, 3, 5, 6, 8), "1-3,5-6,8")]
CPUSET_PARSE = [("", ()), ("5", (5,)), ("1,2,3,4,5", (1, 2, 3, 4, 5)), ("1-5", (1, 2, 3, 4, 5)),
                ("1-2,3-5", (1, 2, 3, 4, 5)), ("5,4,3,2,1", (1, 2, 3, 4, 5)), ("3-6,1-5", (1, 2, 3, 4, 5, 6)),
                ("3-3,5-5", (3, 5))]
CPUSET_PARSE_ERRORS = ["nonnumeric", "non-numeric", "no,numbers", "0-a", "a-0", "0,a", "a,0", "1-2,a,3-5",
                       "0,", "0,,", ",3", ",,3", "0,,3",
                       "-1", "1-", "1,2-,3", "1,-2,3", "-1--2", "--1", "1--",
                       "3-0", "0--3"]

# TestStaticPolicyStartWithResvList (reservedSystemCPUs given): "reserved" set; "new_error" is
# NewStaticPolicy's own error (expNewErr).
POLICY_START_CASES += [
    {"source": f"{_PS} TestStaticPolicyStartWithResvList", "name": n, "topo": "topoDualSocketHT",
     "num_reserved": r, "reserved": resv, "options": o, "assignments": {}, "default": d, **res}
    for n, r, resv, o, d, res in [
        ("empty cpuset", 2, "0-1", {}, "", {"expect_default": "0-11"}),
        ("empty cpuset with StrictCPUReservationOption enabled", 2, "0-1", {"strict-cpu-reservation": "true"}, "",
         {"expect_default": "2-11"}),
        ("reserved cores 0 & 1 are not present in available cpuset", 2, "0-1", {}, "2-5",
         {"error": 'not all reserved cpus: "0-1" are present in defaultCpuSet: "2-5"'}),
        ("reserved cores 0 & 1 are present in available cpuset with StrictCPUReservationOption enabled", 2, "0-1",
         {"strict-cpu-reservation": "true"}, "0-5",
         {"error": 'some of strictly reserved cpus: "0-1" are present in defaultCpuSet: "0-5"'}),
        ("inconsistency between numReservedCPUs and reserved", 1, "0-1", {}, "0-11",
         {"new_error": "[cpumanager] unable to reserve the required amount of CPUs (size of 0-1 did not equal 1)"}),
    ]
]

# TestStaticPolicyAddWithResvList
POLICY_ADD_CASES += [
    _add("withResvList", "GuPodSingleCore, SingleSocketHT, ExpectError", "topoSingleSocketHT", 1, {}, "0-7",
         make_pod(_P, "fakeContainer2", "8000m", "8000m"),
         "not enough cpus available to satisfy request: requested=8, available=7", False, "", reserved="0"),
    _add("withResvList", "GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU", "topoSingleSocketHT", 2, {}, "0-7",
         make_pod(_P, "fakeContainer2", "1000m", "1000m"), "", True, "4", reserved="0-1"),
    _add("withResvList", "GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore", "topoSingleSocketHT", 2,
         {_P: {"fakeContainer100": "2-3,6-7"}}, "0-1,4-5", make_pod(_P, "fakeContainer3", "2000m", "2000m"),
         "", True, "4-5", reserved="0-1"),
]

# TestTopologyAwareAllocateCPUs, the case without a NUMA mask (the others need a topology hint):
# Start on the state, then allocateCPUs(st, numRequested, nil, {}).
ALLOCATE_CPUS_CASES = [
    {"source": f"{_PS} TestTopologyAwareAllocateCPUs", "name": "Request 2 CPUs, No BitMask",
     "topo": "topoDualSocketHT", "default": "0-11", "num": 2, "expect": "0,6"},
]
# TestTopologyAwareAllocateCPUs' masked cases: allocateCPUs with the hint's NUMA affinity ("mask":
# the NUMA node ids set; upstream names them "Socket", topoDualSocketHT's sockets are its NUMA nodes).
ALLOCATE_CPUS_MASKED_CASES = [
    {"source": f"{_PS} TestTopologyAwareAllocateCPUs", "name": n, "topo": "topoDualSocketHT", "default": "0-11",
     "num": num, "mask": mask, "expect": exp}
    for n, num, mask, exp in [
        ("Request 2 CPUs, BitMask on Socket 0", 2, (0,), "0,6"),
        ("Request 2 CPUs, BitMask on Socket 1", 2, (1,), "1,7"),
        ("Request 8 CPUs, BitMask on Socket 0", 8, (0,), "0,6,2,8,4,10,1,7"),
        ("Request 8 CPUs, BitMask on Socket 1", 8, (1,), "1,7,3,9,5,11,0,6"),
    ]
]

# --- topology_hints_test.go (GetTopologyHints, GetPodTopologyHints, returnTestCases) ---------------
# kubernetes/kubernetes pkg/kubelet/cm/cpumanager/topology_hints_test.go (stored version 025a5a1507f4).
# returnMachineInfo: NUMA node 0 = socket 0, cores (0,6) (1,7) (2,8); node 1 = socket 1, cores (3,9)
# (4,10) (5,11) (topology.Discover: a core's id is its lowest thread). Hints: (NUMA ids, preferred),
# compared sorted by LessThan (preferred first, then narrower); expect None = no hints at all.
# Upstream names two cases "Regenerate Single-Node NUMA Hints if already allocated 1/2"; the second
# is called 2/2 here (test ids must differ).
_TH = "kubernetes/kubernetes pkg/kubelet/cm/cpumanager/topology_hints_test.go"
TOPOLOGIES["returnMachineInfo"] = _lit(12, 2, 6, {
    cpu: (min(cpu % 6, cpu), cpu % 6 // 3, cpu % 6 // 3) for cpu in range(12)})
_FIRST, _SECOND, _CROSS = (0,), (1,), (0, 1)
TOPOLOGY_HINT_CASES = [
    {"source": f"{_TH} returnTestCases", "name": n, "topo": "returnMachineInfo", "cpus": cpus,
     "default": d, "assignments": asg, "expect": exp}
    for n, cpus, d, asg, exp in [
        ("Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 2, "2-11", {},
         [(_FIRST, True), (_SECOND, True), (_CROSS, False)]),
        ("Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 5, "2-11", {},
         [(_SECOND, True), (_CROSS, False)]),
        ("Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 7, "2-11", {}, [(_CROSS, True)]),
        ("Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", 11, "2-11", {}, None),
        ("Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1", 2, "0,3", {}, [(_CROSS, False)]),
        ("Request more CPUs than available", 5, "0-3", {}, None),
        ("Regenerate Single-Node NUMA Hints if already allocated 1/2", 2, "", {"fakecontainer": "0,6"},
         [(_FIRST, True), (_CROSS, False)]),
        ("Regenerate Single-Node NUMA Hints if already allocated 2/2", 2, "", {"fakecontainer": "3,9"},
         [(_SECOND, True), (_CROSS, False)]),
        ("Regenerate Cross-NUMA Hints if already allocated", 11, "", {"fakecontainer": "0-10"}, [(_CROSS, True)]),
        ("Requested less than already allocated", 2, "", {"fakecontainer": "0,6,3,9"}, []),
        ("Requested more than already allocated", 11, "", {"fakecontainer": "0,6,3,9"}, []),
    ]
]
