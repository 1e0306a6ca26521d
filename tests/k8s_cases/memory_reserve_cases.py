"""QoS-tier cgroup cases (qosReserved memory, tier CPU shares, MemoryQoS) from kubelet's
qos_container_manager tests.

Schema:
  CASES = [{"source", "name", "pods", "allocatable_memory", "reserve_pct",
            "expected": {"burstable", "besteffort", "burstable_cpu_shares", "besteffort_cpu_shares"}}]
    setMemoryReserve: burstable/besteffort = ResourceConfig.Memory (bytes) of the tier cgroups.
  CPU_CASES = [{"source", "name", "pods", "expected": {"burstable_cpu_shares",
               "besteffort_cpu_shares", "guaranteed_cpu_shares"}}]
    TestQOSCPUConfigUpdate (Start()+UpdateCgroups()); guaranteed None = not set.
  MEMORY_QOS_CASES = [{"source", "name", "pods", "memory_reservation_policy", "gates",
                       "initial", "expected": {"guaranteed_memory_min", "burstable_memory_low"}}]
    setMemoryQoS: root kubepods Unified["memory.min"] and burstable Unified["memory.low"]
    (strings); "initial" = values pre-seeded in the configs (None = absent).

Sources / caveats:
  - The only upstream table asserting setMemoryReserve values is idx#41878679148, an old
    (~2021) variant whose merge upstream could NOT be verified; every other indexed version
    (incl. k/k@05f67d834aba and the 1.36-era ones) has no qosReserved assertion. Its values
    follow setMemoryReserve in qos_container_manager_linux.go
    (burstable = alloc - sum(G req)*pct/100; besteffort = burstable - sum(B req)*pct/100).
  - CPU_CASES / MEMORY_QOS_CASES: idx#70542797247 (newest indexed: TieredReservation,
    memory.low on burstable). Its TestQOSCgroupsWithSystemPartition (NodeSystemPartition,
    KEP-5894, upstream merge unverified) is skipped. idx#51893493689 is an intermediate PR
    state (HardReservation, memory.min on burstable) and was not used for MEMORY_QOS_CASES.

Skipped (reason): "writes zero memory min for best effort pod with DRA", "writes memory min
including DRA allocations", "writes memory min with pod-level resources" (all need DRA
status.nodeAllocatableResourceClaimStatuses); TestQOSCgroupsWithSystemPartition (see above);
TestCPUIdleForBestEffortQoS* (idx#3537203293, unmerged-looking, asserts nothing numeric).

Conventions shared by all k8s_cases modules:
- POD is a v1 Pod manifest as a plain dict (YAML/JSON field names). It is transcribed
  faithfully WITHOUT API-server defaulting: a container with a limit and no request keeps
  no request; run these cases with defaulting switched off.
- Quantities are the exact strings upstream passed to resource.MustParse (for values built
  with strconv.FormatInt the decimal string is used, e.g. "1000000000").
- Upstream containers without a usable name got an invented DNS-label name: app containers
  "c<i>", init containers "ic<i>" (i = index in its list); names that are not DNS labels are
  replaced the same way and duplicates within a pod get a "-2" suffix. Every rename is listed
  in the case's "notes". Pod names are the upstream pod name when it has one, else a slug of
  the upstream case name. No namespace is added unless upstream sets one.
- Container "resources" is always present; empty request/limit lists inside it are omitted
  (as JSON/YAML serialization does). A pod-level spec.resources key is present iff upstream
  set a non-nil pointer; inside it, a request/limit list that upstream constructed explicitly
  but empty is kept as {} (e.g. {"requests": {}, "limits": {}}), an unset one is omitted.
- "gates": feature gates the upstream test sets explicitly (a test that sets a gate to
  false is transcribed as false even where the 1.36 default is true).
- "derived": keys whose value upstream does NOT assert for that version and that were computed
  by re-implementing the upstream algorithm (documented in the module docstring).
"""
CASES = [{'source': 'kubernetes/kubernetes idx#41878679148 (old ~2021 variant: runc libcontainer import, '
            'ResourceConfig.CpuShares, NewQOSContainerManager(subsystems, cgroupRoot, nodeConfig, '
            'cgroupManager); PROVENANCE NOT VERIFIED as merged upstream -- the other indexed '
            'versions, incl. k/k@05f67d834aba, have no setMemoryReserve '
            'assertion):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup',
  'name': 'TestQoSContainerCgroup (QOSReserved memory=100%, allocatable 1Gi)',
  'pods': [{'metadata': {'name': 'best-effort-pod', 'namespace': 'test', 'uid': '76543210'},
            'spec': {'containers': [{'name': 'foo', 'image': 'busybox', 'resources': {}}]}},
           {'metadata': {'name': 'guaranteed-pod', 'namespace': 'test', 'uid': '12345678'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '128Mi', 'cpu': '1'}}}]}},
           {'metadata': {'name': 'burstable-pod-1', 'namespace': 'test', 'uid': '87654321'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '256Mi', 'cpu': '2'}}}]}},
           {'metadata': {'name': 'burstable-pod-2', 'namespace': 'test', 'uid': '01234567'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '256Mi',
                                                                'cpu': '2'}}}]}}],
  'allocatable_memory': 1073741824,
  'allocatable': {'cpu': '5', 'memory': '1Gi'},
  'reserve_pct': 100,
  'expected': {'burstable': 939524096,
               'besteffort': 536870912,
               'burstable_cpu_shares': 3072,
               'besteffort_cpu_shares': 2},
  'notes': ['expected memory: burstable = allocatable - sum(Guaranteed memory requests)*100/100 = '
            '1Gi-128Mi; besteffort = burstable - sum(Burstable memory requests)*100/100 = '
            '896Mi-384Mi (upstream computes both from getQoSMemoryRequests() rather than literals)',
            'cpu shares asserted by the same test via setCPUCgroupConfig: burstable = '
            '(3000*SharesPerCPU)/MilliCPUToCPU, besteffort = MinShares',
            'same test also asserts the pre-1.36 MemoryQoS semantics (burstable memory.min = '
            '384Mi, root memory.min = 512Mi) -- not transcribed, superseded by MEMORY_QOS_CASES',
            'uids/namespace/image kept from upstream; irrelevant to the computation']}]
CPU_CASES = [{'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQOSCPUConfigUpdate '
            '(identical TestQOSCPUConfigUpdate table in idx#51893493689 and idx#3531728726)',
  'name': 'guaranteed-pods-only',
  'pods': [{'metadata': {'name': 'guaranteed-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1', 'memory': '128Mi'},
                                                   'limits': {'cpu': '1', 'memory': '128Mi'}}}]}}],
  'expected': {'burstable_cpu_shares': 2,
               'besteffort_cpu_shares': 2,
               'guaranteed_cpu_shares': None},
  'notes': ['upstream pods have random UIDs (uuid.NewUUID()); omitted here',
            'guaranteed_cpu_shares None: the Guaranteed (root kubepods) config passed to Update '
            'must not set CPUShares']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQOSCPUConfigUpdate '
            '(identical TestQOSCPUConfigUpdate table in idx#51893493689 and idx#3531728726)',
  'name': 'burstable-pods-only',
  'pods': [{'metadata': {'name': 'burstable-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1', 'memory': '128Mi'},
                                                   'limits': {'cpu': '2', 'memory': '256Mi'}}}]}}],
  'expected': {'burstable_cpu_shares': 1024,
               'besteffort_cpu_shares': 2,
               'guaranteed_cpu_shares': None},
  'notes': ['upstream pods have random UIDs (uuid.NewUUID()); omitted here',
            'guaranteed_cpu_shares None: the Guaranteed (root kubepods) config passed to Update '
            'must not set CPUShares']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQOSCPUConfigUpdate '
            '(identical TestQOSCPUConfigUpdate table in idx#51893493689 and idx#3531728726)',
  'name': 'besteffort-pods-only',
  'pods': [{'metadata': {'name': 'besteffort-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo', 'image': 'busybox', 'resources': {}}]}}],
  'expected': {'burstable_cpu_shares': 2,
               'besteffort_cpu_shares': 2,
               'guaranteed_cpu_shares': None},
  'notes': ['upstream pods have random UIDs (uuid.NewUUID()); omitted here',
            'guaranteed_cpu_shares None: the Guaranteed (root kubepods) config passed to Update '
            'must not set CPUShares']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQOSCPUConfigUpdate '
            '(identical TestQOSCPUConfigUpdate table in idx#51893493689 and idx#3531728726)',
  'name': 'guaranteed-and-burstable-pods',
  'pods': [{'metadata': {'name': 'guaranteed-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1', 'memory': '128Mi'},
                                                   'limits': {'cpu': '1', 'memory': '128Mi'}}}]}},
           {'metadata': {'name': 'burstable-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1', 'memory': '128Mi'},
                                                   'limits': {'cpu': '2', 'memory': '256Mi'}}}]}}],
  'expected': {'burstable_cpu_shares': 1024,
               'besteffort_cpu_shares': 2,
               'guaranteed_cpu_shares': None},
  'notes': ['upstream pods have random UIDs (uuid.NewUUID()); omitted here',
            'guaranteed_cpu_shares None: the Guaranteed (root kubepods) config passed to Update '
            'must not set CPUShares']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQOSCPUConfigUpdate '
            '(identical TestQOSCPUConfigUpdate table in idx#51893493689 and idx#3531728726)',
  'name': 'besteffort-and-burstable-pods',
  'pods': [{'metadata': {'name': 'besteffort-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo', 'image': 'busybox', 'resources': {}}]}},
           {'metadata': {'name': 'burstable-pod', 'namespace': 'test'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1', 'memory': '128Mi'},
                                                   'limits': {'cpu': '2', 'memory': '256Mi'}}}]}}],
  'expected': {'burstable_cpu_shares': 1024,
               'besteffort_cpu_shares': 2,
               'guaranteed_cpu_shares': None},
  'notes': ['upstream pods have random UIDs (uuid.NewUUID()); omitted here',
            'guaranteed_cpu_shares None: the Guaranteed (root kubepods) config passed to Update '
            'must not set CPUShares']}]
MEMORY_QOS_CASES = [{'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup',
  'name': 'writes aggregated memory min',
  'pods': [{'metadata': {'name': 'guaranteed-pod', 'namespace': 'test', 'uid': '12345678'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '128Mi', 'cpu': '1'}}}]}},
           {'metadata': {'name': 'burstable-pod-1', 'namespace': 'test', 'uid': '87654321'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '256Mi', 'cpu': '2'}}}]}},
           {'metadata': {'name': 'burstable-pod-2', 'namespace': 'test', 'uid': '01234567'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '256Mi',
                                                                'cpu': '2'}}}]}}],
  'memory_reservation_policy': 'TieredReservation',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'initial': {'guaranteed_memory_min': None, 'burstable_memory_low': None},
  'expected': {'guaranteed_memory_min': '536870912', 'burstable_memory_low': '402653184'},
  'notes': ["guaranteed = root kubepods cgroup Unified['memory.min'] = sum(G)+sum(B) requests; "
            "burstable = burstable cgroup Unified['memory.low'] = sum(B) requests (strings, "
            'bytes)']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup',
  'name': 'writes zero memory min for best effort pod',
  'pods': [{'metadata': {'name': 'besteffort-pod', 'namespace': 'test', 'uid': '99999999'},
            'spec': {'containers': [{'name': 'foo', 'image': 'busybox', 'resources': {}}]}}],
  'memory_reservation_policy': 'TieredReservation',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'initial': {'guaranteed_memory_min': None, 'burstable_memory_low': None},
  'expected': {'guaranteed_memory_min': '0', 'burstable_memory_low': '0'}},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup',
  'name': 'writes zero memory min for burstable pod without memory request',
  'pods': [{'metadata': {'name': 'burstable-pod-no-memory-request',
                         'namespace': 'test',
                         'uid': '88888888'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'cpu': '1'}}}]}}],
  'memory_reservation_policy': 'TieredReservation',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'initial': {'guaranteed_memory_min': None, 'burstable_memory_low': None},
  'expected': {'guaranteed_memory_min': '0', 'burstable_memory_low': '0'}},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup',
  'name': 'clears stale memory min when all pods removed',
  'pods': [],
  'memory_reservation_policy': 'TieredReservation',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'initial': {'guaranteed_memory_min': '1234', 'burstable_memory_low': '5678'},
  'expected': {'guaranteed_memory_min': '0', 'burstable_memory_low': '0'},
  'notes': ['initial values are pre-existing Unified entries the manager must overwrite']},
 {'source': 'kubernetes/kubernetes idx#70542797247 (newest indexed; also carries unmerged-looking '
            'NodeSystemPartition tests; commit not '
            'pinned):pkg/kubelet/cm/qos_container_manager_linux_test.go '
            'TestQoSContainerCgroupWithMemoryReservationPolicyNone',
  'name': 'TestQoSContainerCgroupWithMemoryReservationPolicyNone',
  'pods': [{'metadata': {'name': 'guaranteed-pod', 'namespace': 'test', 'uid': '12345678'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '128Mi', 'cpu': '1'}}}]}},
           {'metadata': {'name': 'burstable-pod-1', 'namespace': 'test', 'uid': '87654321'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '128Mi', 'cpu': '1'},
                                                   'limits': {'memory': '256Mi', 'cpu': '2'}}}]}},
           {'metadata': {'name': 'burstable-pod-2', 'namespace': 'test', 'uid': '01234567'},
            'spec': {'containers': [{'name': 'foo',
                                     'image': 'busybox',
                                     'resources': {'requests': {'memory': '256Mi',
                                                                'cpu': '2'}}}]}}],
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'initial': {'guaranteed_memory_min': None, 'burstable_memory_low': None},
  'expected': {'guaranteed_memory_min': '0', 'burstable_memory_low': '0'},
  'notes': ['policy None: both keys explicitly written as "0" regardless of pods']}]
