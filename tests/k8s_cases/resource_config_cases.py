"""ResourceConfigForPod and CPU conversion cases from kubelet's cm helpers tests.

Source: k/k pkg/kubelet/cm/helpers_linux_test.go, newest indexed version idx#55837552282
(ResourceConfigForPod(pod, enforceCPULimits, cpuPeriod, enforceMemoryQoS,
memoryReservationPolicy) 5-argument form, i.e. 1.36+; also carries DRA node-allocatable cases).

Schema:
  CASES = [{"source", "name", "pod", "enforce_cpu_limits", "quota_period_us",
            "enforce_memory_qos", "memory_reservation_policy", "gates",
            "expected": {"cpu_shares", "cpu_quota", "cpu_period", "memory"}, ["notes"]}]
    Raw kubelet ResourceConfig numbers (before any systemd rounding). None = field left nil
    by kubelet; cpu_quota -1 = "no limit" written when enforce_cpu_limits is false.
    Upstream asserts exactly these four fields (reflect.DeepEqual on each pointer); it also
    compares HugePageLimit, which is empty for every transcribed case.
  MEMORY_QOS_CASES = [{..., "expected_unified"}]  (TestResourceConfigForPodWithEnforceMemoryQoS,
    enforceMemoryQoS=true, TieredReservation; ONLY ResourceConfig.Unified is asserted there;
    None = Unified map not set).
  SHARES_CASES = [(milli_cpu, shares)]            TestMilliCPUToShares
  QUOTA_CASES  = [(milli_cpu, period_us, quota)]  TestMilliCPUToQuota
  SHARES_TO_MILLI_CASES = [(shares, milli_cpu)]   TestSharesToMilliCPU
  QUOTA_TO_MILLI_CASES  = [(quota, period_us, milli_cpu)]  TestQuotaToMilliCPU
  WEIGHT_CASES = [(shares, cpu_weight)]  kubelet's linear getCPUWeight, taken from the comments
    of TestCPUSharesEqualAfterV2RoundTrip ("50m -> shares=51 -> weight=2 -> shares=28",
    "100m -> shares=102 -> weight=4 -> shares=80"); upstream asserts them only indirectly:
  ROUNDTRIP_CASES = [(alloc_milli_cpu, readback_shares, equal)]
    CPUSharesEqualAfterV2RoundTrip(MilliCPUToShares(alloc_milli_cpu), readback_shares) == equal.

Tuned-period note: the tuned cases use quota_period_us=5000. Newest upstream expects
quota = MilliCPUToQuota(limit, 5000) (200m -> 1000, 100m -> 500 clamped to 1000) because
CustomCPUCFSQuotaPeriod is GA/on in 1.36. Older test versions (gate default off) expected the
100ms-period quota (20000 / 10000) with period 5000 in the main table; those were superseded.
The old separate TestResourceConfigForPodWithCustomCPUCFSQuotaPeriod (gate forced on) asserted
exactly the values now in TestResourceConfigForPod, so it is not duplicated here.

Skipped (reason):
  - 11 DRA cases: burstable-with-dra-direct-claims, burstable-with-dra-overhead-claims,
    burstable-with-dra-combined-mapping-and-overhead-claims,
    burstable-with-dra-feature-gate-disabled, burstable-with-dra-hugepages-only,
    burstable-with-dra-and-pod-level-resources, burstable-with-multiple-dra-claims,
    burstable-with-multiple-containers-referencing-overhead-claim,
    burstable-with-direct-claim-shared-by-two-containers, besteffort-with-dra-direct-claims,
    guaranteed-with-dra-direct-claims: need status.nodeAllocatableResourceClaimStatuses
    (DRANodeAllocatableResources).
  - TestHugePageLimits: hugepages only.
  - TestApplyPodLevelMemoryHigh: asserts only relations (nil / greater-than), no numbers.
  - TestCPURequestsFromConfig / TestCPULimitsFromConfig / TestMemoryLimitsFromConfig,
    TestNodeAllocatableRoot, TestGetCgroupProcs, TestGetPodCgroupNameSuffix,
    TestMilliCPUToSharesRoundTrip: outside this schema (readback/naming helpers).

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

# TestResourceConfigForPod (enforceMemoryQoS=false, NoneMemoryReservationPolicy).
CASES = [{'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'besteffort',
  'pod': {'metadata': {'name': 'besteffort'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 2, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-no-limits',
  'pod': {'metadata': {'name': 'burstable-no-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-limits',
  'pod': {'metadata': {'name': 'burstable-with-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 20000, 'cpu_period': 100000, 'memory': 209715200},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-limits-no-cpu-enforcement',
  'pod': {'metadata': {'name': 'burstable-with-limits-no-cpu-enforcement'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': -1, 'cpu_period': 100000, 'memory': 209715200},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-partial-limits',
  'pod': {'metadata': {'name': 'burstable-partial-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}},
                                  {'name': 'c1',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 204, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-limits-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-with-limits-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 1000, 'cpu_period': 5000, 'memory': 209715200},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-limits-no-cpu-enforcement-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-with-limits-no-cpu-enforcement-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': -1, 'cpu_period': 5000, 'memory': 209715200},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-partial-limits-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-partial-limits-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}},
                                  {'name': 'c1',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 204, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed',
  'pod': {'metadata': {'name': 'guaranteed'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 10000, 'cpu_period': 100000, 'memory': 104857600},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-no-cpu-enforcement',
  'pod': {'metadata': {'name': 'guaranteed-no-cpu-enforcement'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': -1, 'cpu_period': 100000, 'memory': 104857600},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-with-tuned-quota',
  'pod': {'metadata': {'name': 'guaranteed-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 1000, 'cpu_period': 5000, 'memory': 104857600},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-no-cpu-enforcement-with-tuned-quota',
  'pod': {'metadata': {'name': 'guaranteed-no-cpu-enforcement-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': -1, 'cpu_period': 5000, 'memory': 104857600},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-partial-limits-with-init-containers',
  'pod': {'metadata': {'name': 'burstable-partial-limits-with-init-containers'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'requests': {'cpu': '100m', 'memory': '100m'},
                                                     'limits': {'cpu': '100m', 'memory': '100Mi'}}},
                                      {'name': 'ic1',
                                       'resources': {'requests': {'cpu': '100m',
                                                                  'memory': '100m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100m'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}},
                                  {'name': 'c1',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100m'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': False, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 204, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ['upstream memory *request* is the quantity string "100m" (0.1 byte), transcribed '
            'verbatim',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'besteffort-with-pod-level-resources-enabled',
  'pod': {'metadata': {'name': 'besteffort-with-pod-level-resources-enabled'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}],
                   'resources': {'requests': {}, 'limits': {}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 2, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ['upstream sets spec.resources = &{Requests: {}, Limits: {}} (non-nil pointer, empty '
            'non-nil maps)',
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-pod-level-requests',
  'pod': {'metadata': {'name': 'burstable-with-pod-level-requests'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] upstream name 'Container with no resources' renamed 'c0' (not a valid "
            'DNS label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-pod-and-container-level-requests',
  'pod': {'metadata': {'name': 'burstable-with-pod-and-container-level-requests'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '10m', 'memory': '50Mi'}}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': None, 'cpu_period': None, 'memory': None},
  'notes': ["containers[0] upstream name 'Container with resources' renamed 'c0' (not a valid DNS "
            'label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-pod-level-resources',
  'pod': {'metadata': {'name': 'burstable-with-pod-level-resources'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 20000, 'cpu_period': 100000, 'memory': 209715200},
  'notes': ["containers[0] upstream name 'Container with no resources' renamed 'c0' (not a valid "
            'DNS label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-pod-and-container-level-resources',
  'pod': {'metadata': {'name': 'burstable-with-pod-and-container-level-resources'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '10m', 'memory': '50Mi'},
                                                 'limits': {'cpu': '50m', 'memory': '100Mi'}}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 20000, 'cpu_period': 100000, 'memory': 209715200},
  'notes': ["containers[0] upstream name 'Container with resources' renamed 'c0' (not a valid DNS "
            'label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'burstable-with-partial-pod-level-resources-limits',
  'pod': {'metadata': {'name': 'burstable-with-partial-pod-level-resources-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '200m', 'memory': '200Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}],
                   'resources': {'requests': {'cpu': '200m', 'memory': '300Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 204, 'cpu_quota': 20000, 'cpu_period': 100000, 'memory': 209715200},
  'notes': ["containers[0] upstream name 'Container with guaranteed resources' renamed 'c0' (not a "
            'valid DNS label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-with-pod-level-resources',
  'pod': {'metadata': {'name': 'guaranteed-with-pod-level-resources'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 10000, 'cpu_period': 100000, 'memory': 104857600},
  'notes': ["containers[0] upstream name 'Container with no resources' renamed 'c0' (not a valid "
            'DNS label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-with-pod-and-container-level-resources',
  'pod': {'metadata': {'name': 'guaranteed-with-pod-and-container-level-resources'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '10m', 'memory': '50Mi'},
                                                 'limits': {'cpu': '50m', 'memory': '100Mi'}}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 10000, 'cpu_period': 100000, 'memory': 104857600},
  'notes': ["containers[0] upstream name 'Container with resources' renamed 'c0' (not a valid DNS "
            'label)']},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod',
  'name': 'guaranteed-pod-level-resources-with-init-containers',
  'pod': {'metadata': {'name': 'guaranteed-pod-level-resources-with-init-containers'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'requests': {'cpu': '10m', 'memory': '50Mi'},
                                                     'limits': {'cpu': '50m', 'memory': '50Mi'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '10m', 'memory': '50Mi'},
                                                 'limits': {'cpu': '50m', 'memory': '50Mi'}}}],
                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': False,
  'memory_reservation_policy': 'None',
  'gates': {'PodLevelResources': True, 'DRANodeAllocatableResources': False},
  'expected': {'cpu_shares': 102, 'cpu_quota': 10000, 'cpu_period': 100000, 'memory': 104857600},
  'notes': ["initContainers[0] upstream name 'Container with resources' renamed 'ic0' (not a valid "
            'DNS label)',
            "containers[0] upstream name 'Container with resources' renamed 'c0' (not a valid DNS "
            'label)']}]

# TestResourceConfigForPodWithEnforceMemoryQoS (only Unified asserted).
MEMORY_QOS_CASES = [{'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'besteffort',
  'pod': {'metadata': {'name': 'besteffort'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': None,
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-no-limits',
  'pod': {'metadata': {'name': 'burstable-no-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-with-limits',
  'pod': {'metadata': {'name': 'burstable-with-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-with-limits-no-cpu-enforcement',
  'pod': {'metadata': {'name': 'burstable-with-limits-no-cpu-enforcement'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-partial-limits',
  'pod': {'metadata': {'name': 'burstable-partial-limits'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}},
                                  {'name': 'c1',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '209715200'},
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-with-limits-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-with-limits-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-with-limits-no-cpu-enforcement-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-with-limits-no-cpu-enforcement-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 5000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'burstable-partial-limits-with-tuned-quota',
  'pod': {'metadata': {'name': 'burstable-partial-limits-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '200m', 'memory': '200Mi'}}},
                                  {'name': 'c1',
                                   'resources': {'requests': {'cpu': '100m',
                                                              'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.low': '209715200'},
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'guaranteed',
  'pod': {'metadata': {'name': 'guaranteed'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.min': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'guaranteed-no-cpu-enforcement',
  'pod': {'metadata': {'name': 'guaranteed-no-cpu-enforcement'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 100000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.min': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'guaranteed-with-tuned-quota',
  'pod': {'metadata': {'name': 'guaranteed-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': True,
  'quota_period_us': 5000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.min': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg '
            'ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; '
            'commit not pinned):pkg/kubelet/cm/helpers_linux_test.go '
            'TestResourceConfigForPodWithEnforceMemoryQoS',
  'name': 'guaranteed-no-cpu-enforcement-with-tuned-quota',
  'pod': {'metadata': {'name': 'guaranteed-no-cpu-enforcement-with-tuned-quota'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '100m', 'memory': '100Mi'},
                                                 'limits': {'cpu': '100m', 'memory': '100Mi'}}}]}},
  'enforce_cpu_limits': False,
  'quota_period_us': 5000,
  'enforce_memory_qos': True,
  'memory_reservation_policy': 'TieredReservation',
  'expected_unified': {'memory.min': '104857600'},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]}]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestMilliCPUToShares
SHARES_CASES = [(0, 2),
 (1, 2),
 (2, 2),
 (3, 3),
 (100, 102),
 (500, 512),
 (1000, 1024),
 (255999, 262142),
 (256000, 262144),
 (256001, 262144),
 (1000000, 262144),
 (-1, 2),
 (-1000000, 2)]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestMilliCPUToQuota
QUOTA_CASES = [(0, 0, 0),
 (5, 100000, 1000),
 (9, 100000, 1000),
 (10, 100000, 1000),
 (200, 100000, 20000),
 (500, 100000, 50000),
 (1000, 100000, 100000),
 (1500, 100000, 150000)]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestSharesToMilliCPU
SHARES_TO_MILLI_CASES = [(0, 0), (1, 0), (2, 2), (3, 3), (102, 100), (512, 500), (1024, 1000), (262144, 256000), (-1, 0)]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestQuotaToMilliCPU
QUOTA_TO_MILLI_CASES = [(-1, 100000, 0),
 (0, 100000, 0),
 (1000, 100000, 10),
 (5000, 100000, 50),
 (50000, 100000, 500),
 (100000, 100000, 1000),
 (200000, 100000, 2000),
 (5000, 5000, 1000),
 (1, 100000, 0),
 (100, 100000, 1)]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestCPUSharesEqualAfterV2RoundTrip (values from test comments)
WEIGHT_CASES = [(51, 2), (102, 4)]

# kubernetes/kubernetes idx#55837552282 (newest indexed version: 5-arg ResourceConfigForPod with kubeletconfig.NoneMemoryReservationPolicy, DRA cases; commit not pinned):pkg/kubelet/cm/helpers_linux_test.go TestCPUSharesEqualAfterV2RoundTrip
ROUNDTRIP_CASES = [(50, 28, True), (50, 27, False), (100, 80, True), (100, 102, False), (50, 102, False)]
