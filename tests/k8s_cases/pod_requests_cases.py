"""PodRequests / PodLimits cases from component-helpers resource/helpers_test.go at 1.36.

Source: kubernetes/component-helpers@v0.36.3 (8c03f98ede66; file last changed 2f80a578).
The spec-path tables are unchanged on component-helpers main (1961876b) except for added
DRA / resize / NonMissingContainerRequests cases.

Schema:
  CASES = [{"source", "name", "function", "pod", "requests", "limits",
            "options": {"exclude_overhead", "skip_pod_level", "use_status_resources"},
            ["expected_filtered_out", "notes"]}]
    requests / limits: expected cpu/memory ResourceList (quantity strings as upstream wrote
    them); None = that side is not asserted by the upstream test; {} = asserted empty.
    Only cpu and memory are kept: where upstream also expected hugepages-*/storage, those keys
    are dropped from the expectation (listed in "expected_filtered_out"); pods are verbatim.
    function: which upstream functions were asserted. AggregateContainer* cases have no
    overhead and no spec.resources, so PodRequests/PodLimits(default options) give the same.
    use_status_resources is always False here (status-path cases are skipped); two cases
    keep a status block that must be ignored.

Skipped cases (reason):
  - TestPodResourceRequests / resized, infeasible: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequests / resized, infeasible & in-progress: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequests / resized, no resize status: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequests / resized: per-resource 3-way maximum: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequests / resized, restartable init container, infeasible: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequests / resized, restartable init container, no resize status: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceRequestsReuse / (single unnamed test): tests Go map re-use (opts.Reuse), not a value
  - TestPodResourceLimits / pod scaled up: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceLimits / pod scaled down: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceLimits / pod scaled up with restartable init containers: UseStatusResources=true (in-place resize / status path)
  - TestPodResourceLimits / pod scaled down with restartable init containers: UseStatusResources=true (in-place resize / status path)
  - TestAggregateContainerRequestsAndLimits / regularcontainers with empty requests, but status with non-empty requests: UseStatusResources=true (status path)
  - TestAggregateContainerRequestsAndLimits / always-restart init containers with empty requests, but status with non-empty requests: UseStatusResources=true (status path)
  - TestIsPodLevelResourcesSet / (all): boolean predicate on pod-level resources / resource names, no requests/limits asserted
  - TestIsPodLevelLimitsSet / (all): boolean predicate on pod-level resources / resource names, no requests/limits asserted
  - TestIsSupportedPodLevelResource / (all): boolean predicate on pod-level resources / resource names, no requests/limits asserted
  - TestPodResourceRequestsWithDRANodeAllocatableClaims / (all 8): DRA node-allocatable ResourceClaim status mappings

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
CASES = [{'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimits',
  'name': 'just-limit-no-overhead',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'just-limit-no-overhead'},
          'spec': {'initContainers': [{'name': 'init-foo', 'resources': {'limits': {'cpu': '9'}}}],
                   'containers': [{'name': 'foo', 'resources': {'limits': {'cpu': '9'}}}]}},
  'requests': {},
  'limits': {'cpu': '9'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimits',
  'name': 'just-overhead',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'just-overhead'},
          'spec': {'initContainers': [{'name': 'init-foo', 'resources': {}}],
                   'containers': [{'name': 'foo', 'resources': {}}],
                   'overhead': {'cpu': '5', 'memory': '5'}}},
  'requests': {'cpu': '5', 'memory': '5'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimits',
  'name': 'req-and-overhead',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'req-and-overhead'},
          'spec': {'initContainers': [{'name': 'init-foo',
                                       'resources': {'requests': {'cpu': '1', 'memory': '10'}}}],
                   'containers': [{'name': 'foo',
                                   'resources': {'requests': {'cpu': '1', 'memory': '10'}}}],
                   'overhead': {'cpu': '5', 'memory': '5'}}},
  'requests': {'cpu': '6', 'memory': '15'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimits',
  'name': 'all-req-lim-and-overhead',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'all-req-lim-and-overhead'},
          'spec': {'initContainers': [{'name': 'init-foo',
                                       'resources': {'requests': {'cpu': '1', 'memory': '10'},
                                                     'limits': {'cpu': '2', 'memory': '12'}}}],
                   'containers': [{'name': 'foo',
                                   'resources': {'requests': {'cpu': '1', 'memory': '10'},
                                                 'limits': {'cpu': '2', 'memory': '12'}}}],
                   'overhead': {'cpu': '5', 'memory': '5'}}},
  'requests': {'cpu': '6', 'memory': '15'},
  'limits': {'cpu': '7', 'memory': '17'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimits',
  'name': 'req-some-lim-and-overhead',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'req-some-lim-and-overhead'},
          'spec': {'initContainers': [{'name': 'init-foo',
                                       'resources': {'requests': {'cpu': '1', 'memory': '10'},
                                                     'limits': {'cpu': '2'}}}],
                   'containers': [{'name': 'foo',
                                   'resources': {'requests': {'cpu': '1', 'memory': '10'},
                                                 'limits': {'cpu': '2'}}}],
                   'overhead': {'cpu': '5', 'memory': '5'}}},
  'requests': {'cpu': '6', 'memory': '15'},
  'limits': {'cpu': '7'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimitsWithoutOverhead',
  'name': 'two container no overhead - should just be sum of containers',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'two-container-no-overhead-should-just-be-sum-of-containers'},
          'spec': {'containers': [{'name': 'foobar',
                                   'resources': {'requests': {'cpu': '1', 'memory': '5'},
                                                 'limits': {'cpu': '2', 'memory': '10'}}},
                                  {'name': 'foobar2',
                                   'resources': {'requests': {'cpu': '4', 'memory': '12'},
                                                 'limits': {'cpu': '8', 'memory': '24'}}}]}},
  'requests': {'cpu': '5', 'memory': '17'},
  'limits': {'cpu': '10', 'memory': '34'},
  'options': {'exclude_overhead': True, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimitsWithoutOverhead',
  'name': "two container with overhead - shouldn't consider overhead",
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'two-container-with-overhead-shouldn-t-consider-overhead'},
          'spec': {'containers': [{'name': 'foobar',
                                   'resources': {'requests': {'cpu': '1', 'memory': '5'},
                                                 'limits': {'cpu': '2', 'memory': '10'}}},
                                  {'name': 'foobar2',
                                   'resources': {'requests': {'cpu': '4', 'memory': '12'},
                                                 'limits': {'cpu': '8', 'memory': '24'}}}],
                   'overhead': {'cpu': '3', 'memory': '8'}}},
  'requests': {'cpu': '5', 'memory': '17'},
  'limits': {'cpu': '10', 'memory': '34'},
  'options': {'exclude_overhead': True, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodRequestsAndLimitsWithoutOverhead',
  'name': 'two container with overhead, massive init - should just be the largest init',
  'function': 'PodRequests/PodLimits',
  'pod': {'metadata': {'name': 'two-container-with-overhead-massive-init-should-just-be-the-largest-init'},
          'spec': {'initContainers': [{'name': 'small-init',
                                       'resources': {'requests': {'cpu': '1', 'memory': '5'},
                                                     'limits': {'cpu': '1', 'memory': '5'}}},
                                      {'name': 'big-init',
                                       'resources': {'requests': {'cpu': '40', 'memory': '120'},
                                                     'limits': {'cpu': '80', 'memory': '240'}}}],
                   'containers': [{'name': 'foobar',
                                   'resources': {'requests': {'cpu': '1', 'memory': '5'},
                                                 'limits': {'cpu': '2', 'memory': '10'}}},
                                  {'name': 'foobar2',
                                   'resources': {'requests': {'cpu': '4', 'memory': '12'},
                                                 'limits': {'cpu': '8', 'memory': '24'}}}],
                   'overhead': {'cpu': '3', 'memory': '8'}}},
  'requests': {'cpu': '40', 'memory': '120'},
  'limits': {'cpu': '80', 'memory': '240'},
  'options': {'exclude_overhead': True, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'nil options, larger init container',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'nil-options-larger-init-container'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'requests': {'cpu': '4'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '1'}}}]}},
  'requests': {'cpu': '4'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'nil options, larger containers',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'nil-options-larger-containers'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'requests': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'requests': {'cpu': '3'}}}]}},
  'requests': {'cpu': '5'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'pod overhead excluded',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-overhead-excluded'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'requests': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'requests': {'cpu': '3'}}}],
                   'overhead': {'cpu': '1'}}},
  'requests': {'cpu': '5'},
  'limits': None,
  'options': {'exclude_overhead': True, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'pod overhead included',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-overhead-included'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'requests': {'cpu': '2'},
                                                     'limits': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'requests': {'cpu': '3'}}}],
                   'overhead': {'cpu': '1', 'memory': '1Gi'}}},
  'requests': {'cpu': '6', 'memory': '1Gi'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': "resized, infeasible, but don't use status",
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'resized-infeasible-but-don-t-use-status'},
          'spec': {'containers': [{'name': 'container-1',
                                   'resources': {'requests': {'cpu': '4'}}}]},
          'status': {'containerStatuses': [{'name': 'container-1',
                                            'resources': {'requests': {'cpu': '2'}}}],
                     'conditions': [{'type': 'PodResizePending',
                                     'status': 'True',
                                     'reason': 'Infeasible'}]}},
  'requests': {'cpu': '4'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['UseStatusResources=false: status (resize Infeasible condition + containerStatuses) '
            'must be ignored']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': "resized, restartable init container, infeasible, but don't use status",
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'resized-restartable-init-container-infeasible-but-don-t-use-status'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '4'}}}],
                   'containers': []},
          'status': {'initContainerStatuses': [{'name': 'restartable-init-1',
                                                'resources': {'requests': {'cpu': '2'}}}],
                     'conditions': [{'type': 'PodResizePending',
                                     'status': 'True',
                                     'reason': 'Infeasible'}]}},
  'requests': {'cpu': '4'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['UseStatusResources=false: status must be ignored',
            'pod has no regular containers upstream']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'restartable init container',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'restartable-init-container'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '1'}}}],
                   'containers': [{'name': 'container-1',
                                   'resources': {'requests': {'cpu': '1'}}}]}},
  'requests': {'cpu': '2'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'multiple restartable init containers',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'multiple-restartable-init-containers'},
          'spec': {'initContainers': [{'name': 'init-1', 'resources': {'requests': {'cpu': '5'}}},
                                      {'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '1'}}},
                                      {'name': 'restartable-init-2',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '2'}}},
                                      {'name': 'restartable-init-3',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '3'}}}],
                   'containers': [{'name': 'container-1',
                                   'resources': {'requests': {'cpu': '1'}}}]}},
  'requests': {'cpu': '7'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'multiple restartable and regular init containers',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'multiple-restartable-and-regular-init-containers'},
          'spec': {'initContainers': [{'name': 'init-1', 'resources': {'requests': {'cpu': '5'}}},
                                      {'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '1'}}},
                                      {'name': 'restartable-init-2',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '2'}}},
                                      {'name': 'init-2', 'resources': {'requests': {'cpu': '5'}}},
                                      {'name': 'restartable-init-3',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '3'}}}],
                   'containers': [{'name': 'container-1',
                                   'resources': {'requests': {'cpu': '1'}}}]}},
  'requests': {'cpu': '8'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceRequests',
  'name': 'restartable-init, init and regular',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'restartable-init-init-and-regular'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '10'}}},
                                      {'name': 'init-1',
                                       'resources': {'requests': {'cpu': '200'}}}],
                   'containers': [{'name': 'container-1',
                                   'resources': {'requests': {'cpu': '100'}}}]}},
  'requests': {'cpu': '210'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'nil options, larger init container',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'nil-options-larger-init-container'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'limits': {'cpu': '4'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '1'}}}]}},
  'requests': None,
  'limits': {'cpu': '4'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'nil options, larger containers',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'nil-options-larger-containers'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'limits': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'limits': {'cpu': '3'}}}]}},
  'requests': None,
  'limits': {'cpu': '5'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'pod overhead excluded',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'pod-overhead-excluded'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'limits': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'limits': {'cpu': '3'}}}],
                   'overhead': {'cpu': '1'}}},
  'requests': None,
  'limits': {'cpu': '5'},
  'options': {'exclude_overhead': True, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'pod overhead included',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'pod-overhead-included'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'limits': {'cpu': '2'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '2'}}},
                                  {'name': 'c1', 'resources': {'limits': {'cpu': '3'}}}],
                   'overhead': {'cpu': '1', 'memory': '1Gi'}}},
  'requests': None,
  'limits': {'cpu': '6'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['overhead is only added to non-zero limits, so there is no memory limit (upstream '
            'comment)',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'no limited containers should result in no limits for the pod',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'no-limited-containers-should-result-in-no-limits-for-the-pod'},
          'spec': {'containers': [{'name': 'c0', 'resources': {}}]}},
  'requests': None,
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': "one limited and one unlimited container should result in the limited container's limits "
          'for the pod',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'one-limited-and-one-unlimited-container-should-result-in-the-limited-container-s-limits-for-the-pod'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'limits': {'cpu': '2', 'memory': '2Gi'}}},
                                  {'name': 'c1', 'resources': {}}]}},
  'requests': None,
  'limits': {'cpu': '2', 'memory': '2Gi'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'one limited and one unlimited init container should result in the limited init '
          "container's limits for the pod",
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'one-limited-and-one-unlimited-init-container-should-result-in-the-limited-init-container-s-limits-for-the-pod'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'limits': {'cpu': '2', 'memory': '2Gi'}}},
                                      {'name': 'ic1', 'resources': {}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'limits': {'cpu': '1', 'memory': '1Gi'}}}]}},
  'requests': None,
  'limits': {'cpu': '2', 'memory': '2Gi'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'restartable init container',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'restartable-init-container'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '1'}}}],
                   'containers': [{'name': 'container-1', 'resources': {'limits': {'cpu': '1'}}}]}},
  'requests': None,
  'limits': {'cpu': '2'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'multiple restartable init containers',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'multiple-restartable-init-containers'},
          'spec': {'initContainers': [{'name': 'init-1', 'resources': {'limits': {'cpu': '5'}}},
                                      {'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '1'}}},
                                      {'name': 'restartable-init-2',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '2'}}},
                                      {'name': 'restartable-init-3',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '3'}}}],
                   'containers': [{'name': 'container-1', 'resources': {'limits': {'cpu': '1'}}}]}},
  'requests': None,
  'limits': {'cpu': '7'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'multiple restartable and regular init containers',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'multiple-restartable-and-regular-init-containers'},
          'spec': {'initContainers': [{'name': 'init-1', 'resources': {'limits': {'cpu': '5'}}},
                                      {'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '1'}}},
                                      {'name': 'restartable-init-2',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '2'}}},
                                      {'name': 'init-2', 'resources': {'limits': {'cpu': '5'}}},
                                      {'name': 'restartable-init-3',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '3'}}}],
                   'containers': [{'name': 'container-1', 'resources': {'limits': {'cpu': '1'}}}]}},
  'requests': None,
  'limits': {'cpu': '8'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': 'restartable-init, init and regular',
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'restartable-init-init-and-regular'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '10'}}},
                                      {'name': 'init-1', 'resources': {'limits': {'cpu': '200'}}}],
                   'containers': [{'name': 'container-1',
                                   'resources': {'limits': {'cpu': '100'}}}]}},
  'requests': None,
  'limits': {'cpu': '210'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': "pod scaled down, don't use status",
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'pod-scaled-down-don-t-use-status'},
          'spec': {'containers': [{'name': 'container-1',
                                   'resources': {'limits': {'memory': '1Gi'}}}]},
          'status': {'containerStatuses': [{'name': 'container-1',
                                            'resources': {'limits': {'memory': '2Gi'}}}]}},
  'requests': None,
  'limits': {'memory': '1Gi'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['UseStatusResources=false: containerStatuses must be ignored']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodResourceLimits',
  'name': "pod scaled down with restartable init containers, don't use status",
  'function': 'PodLimits',
  'pod': {'metadata': {'name': 'pod-scaled-down-with-restartable-init-containers-don-t-use-status'},
          'spec': {'initContainers': [{'name': 'restartable-init-1',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'memory': '1Gi'}}}],
                   'containers': []},
          'status': {'initContainerStatuses': [{'name': 'restartable-init-1',
                                                'resources': {'limits': {'memory': '2Gi'}}}]}},
  'requests': None,
  'limits': {'memory': '1Gi'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['UseStatusResources=false: initContainerStatuses must be ignored',
            'pod has no regular containers upstream']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'nil',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'nil'}, 'spec': {'containers': [], 'resources': {}}},
  'requests': {},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['upstream podResources is the zero ResourceRequirements, passed by pointer -> '
            'spec.resources = {} (non-nil)']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod level memory resource with SkipPodLevelResources true',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-memory-resource-with-skippodlevelresources-true'},
          'spec': {'containers': [], 'resources': {'requests': {'memory': '2Mi'}}}},
  'requests': {},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': True, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod level memory resource with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-memory-resource-with-skippodlevelresources-false'},
          'spec': {'containers': [], 'resources': {'requests': {'memory': '2Mi'}}}},
  'requests': {'memory': '2Mi'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False}},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod level memory and container level cpu resources with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-memory-and-container-level-cpu-resources-with-skippodlevelresources-false'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '2m'}}}],
                   'resources': {'requests': {'memory': '2Mi'}}}},
  'requests': {'memory': '2Mi', 'cpu': '2m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod level unsupported resources set at both pod-level and container-level with '
          'SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-unsupported-resources-set-at-both-pod-level-and-container-level-with-skippodlevelresources-false'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'requests': {'storage': '3Mi'}}}],
                   'resources': {'requests': {'storage': '2Mi'}}}},
  'requests': {},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['storage'],
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "upstream expectation also contained non cpu/memory resources ['storage']; dropped "
            '(pod kept verbatim)']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod level unsupported resources set at pod-level with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-unsupported-resources-set-at-pod-level-with-skippodlevelresources-false'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'requests': {'memory': '3Mi'}}}],
                   'resources': {'requests': {'storage': '2Mi'}}}},
  'requests': {'memory': '3Mi'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'only container level resources set with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'only-container-level-resources-set-with-skippodlevelresources-false'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {}}},
  'requests': {'memory': '3Mi', 'cpu': '2m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['upstream podResources is the zero ResourceRequirements (field omitted in the table) '
            '-> spec.resources = {}',
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'both container-level and pod-level resources set with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'both-container-level-and-pod-level-resources-set-with-skippodlevelresources-false'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {'requests': {'memory': '6Mi', 'cpu': '8m'}}}},
  'requests': {'memory': '6Mi', 'cpu': '8m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'container-level resources and init container set with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'container-level-resources-and-init-container-set-with-skippodlevelresources-false-1'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'requests': {'memory': '5Mi', 'cpu': '4m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {}}},
  'requests': {'memory': '5Mi', 'cpu': '4m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['spec.resources = {} (zero ResourceRequirements by pointer)',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'container-level resources and init container set with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'container-level-resources-and-init-container-set-with-skippodlevelresources-false-2'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'resources': {'requests': {'memory': '5Mi', 'cpu': '4m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {}}},
  'requests': {'memory': '5Mi', 'cpu': '4m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': True, 'use_status_resources': False},
  'notes': ["upstream reuses the previous case's name verbatim but passes SkipPodLevelResources: "
            'true',
            'spec.resources = {} (zero ResourceRequirements by pointer)',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'container-level resources and sidecar container set with SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'container-level-resources-and-sidecar-container-set-with-skippodlevelresources-false'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'memory': '5Mi', 'cpu': '4m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {}}},
  'requests': {'memory': '8Mi', 'cpu': '6m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['spec.resources = {} (zero ResourceRequirements by pointer)',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'container-level resources, init and sidecar container set with SkipPodLevelResources '
          'false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'container-level-resources-init-and-sidecar-container-set-with-skippodlevelresources-false'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'memory': '5Mi', 'cpu': '4m'}}},
                                      {'name': 'ic1',
                                       'resources': {'requests': {'memory': '6Mi', 'cpu': '8m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {}}},
  'requests': {'memory': '11Mi', 'cpu': '12m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['spec.resources = {} (zero ResourceRequirements by pointer)',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, container-level resources, init and sidecar container set with '
          'SkipPodLevelResources false',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-container-level-resources-init-and-sidecar-container-set-with-skippodlevelresources-false'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'memory': '5Mi', 'cpu': '4m'}}},
                                      {'name': 'ic1',
                                       'resources': {'requests': {'memory': '6Mi', 'cpu': '8m'}}}],
                   'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '3Mi', 'cpu': '2m'}}}],
                   'resources': {'requests': {'memory': '15Mi', 'cpu': '18m'}}}},
  'requests': {'memory': '15Mi', 'cpu': '18m'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ["initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, hugepage request/limit single page size',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-hugepage-request-limit-single-page-size'},
          'spec': {'containers': [],
                   'resources': {'requests': {'memory': '10Mi', 'hugepages-2Mi': '2Mi'},
                                 'limits': {'hugepages-2Mi': '2Mi'}}}},
  'requests': {'memory': '10Mi'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['hugepages-2Mi'],
  'notes': ["upstream expectation also contained non cpu/memory resources ['hugepages-2Mi']; "
            'dropped (pod kept verbatim)']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, hugepage request/limit multiple page sizes',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-hugepage-request-limit-multiple-page-sizes'},
          'spec': {'containers': [],
                   'resources': {'requests': {'cpu': '1',
                                              'hugepages-2Mi': '2Mi',
                                              'hugepages-1Gi': '1Gi'},
                                 'limits': {'hugepages-2Mi': '2Mi', 'hugepages-1Gi': '1Gi'}}}},
  'requests': {'cpu': '1'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['hugepages-1Gi', 'hugepages-2Mi'],
  'notes': ["upstream expectation also contained non cpu/memory resources ['hugepages-1Gi', "
            "'hugepages-2Mi']; dropped (pod kept verbatim)"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, container-level resources, hugepage request/limit single page size',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-container-level-resources-hugepage-request-limit-single-page-size'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'hugepages-2Mi': '6Mi'},
                                                 'limits': {'hugepages-2Mi': '6Mi'}}}],
                   'resources': {'requests': {'cpu': '1', 'hugepages-2Mi': '10Mi'},
                                 'limits': {'hugepages-2Mi': '10Mi'}}}},
  'requests': {'cpu': '1'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['hugepages-2Mi'],
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "upstream expectation also contained non cpu/memory resources ['hugepages-2Mi']; "
            'dropped (pod kept verbatim)']},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, container-level resources, hugepage request/limit multiple page '
          'sizes',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-container-level-resources-hugepage-request-limit-multiple-page-sizes'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'cpu': '1', 'hugepages-1Gi': '2Gi'},
                                                 'limits': {'hugepages-1Gi': '2Gi'}}}],
                   'resources': {'requests': {'cpu': '1',
                                              'hugepages-2Mi': '10Mi',
                                              'hugepages-1Gi': '2Gi'},
                                 'limits': {'hugepages-2Mi': '10Mi', 'hugepages-1Gi': '2Gi'}}}},
  'requests': {'cpu': '1'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['hugepages-1Gi', 'hugepages-2Mi'],
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "upstream expectation also contained non cpu/memory resources ['hugepages-1Gi', "
            "'hugepages-2Mi']; dropped (pod kept verbatim)"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestPodLevelResourceRequests',
  'name': 'pod-level resources, container-level resources, hugepage request/limit multiple page '
          'sizes between pod-level and container-level',
  'function': 'PodRequests',
  'pod': {'metadata': {'name': 'pod-level-resources-container-level-resources-hugepage-request-limit-multiple-page-sizes-between-pod-level-and-container-level'},
          'spec': {'containers': [{'name': 'c0',
                                   'resources': {'requests': {'memory': '4Mi',
                                                              'hugepages-1Gi': '1Gi'},
                                                 'limits': {'hugepages-1Gi': '1Gi'}}}],
                   'resources': {'requests': {'cpu': '1', 'hugepages-2Mi': '10Mi'},
                                 'limits': {'hugepages-2Mi': '10Mi'}}}},
  'requests': {'cpu': '1', 'memory': '4Mi'},
  'limits': None,
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'expected_filtered_out': ['hugepages-1Gi', 'hugepages-2Mi'],
  'notes': ["containers[0] unnamed upstream; named 'c0'",
            "upstream expectation also contained non cpu/memory resources ['hugepages-1Gi', "
            "'hugepages-2Mi']; dropped (pod kept verbatim)"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'one container with limits',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'one-container-with-limits'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '9'}}}]}},
  'requests': {},
  'limits': {'cpu': '9'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'two containers with limits',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'two-containers-with-limits'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '9'}}},
                                  {'name': 'c1', 'resources': {'limits': {'cpu': '9'}}}]}},
  'requests': {},
  'limits': {'cpu': '18'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'one container with requests',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'one-container-with-requests'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '9'}}}]}},
  'requests': {'cpu': '9'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'two containers with requests',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'two-containers-with-requests'},
          'spec': {'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '9'}}},
                                  {'name': 'c1', 'resources': {'requests': {'cpu': '9'}}}]}},
  'requests': {'cpu': '18'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "containers[0] unnamed upstream; named 'c0'",
            "containers[1] unnamed upstream; named 'c1'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'regular and init containers with requests',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'regular-and-init-containers-with-requests'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'requests': {'cpu': '9'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '9'}}}]}},
  'requests': {'cpu': '9'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'regular, init and sidecar containers with requests',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'regular-init-and-sidecar-containers-with-requests'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'restartPolicy': 'Always',
                                       'resources': {'requests': {'cpu': '8'}}},
                                      {'name': 'ic1', 'resources': {'requests': {'cpu': '6'}}}],
                   'containers': [{'name': 'c0', 'resources': {'requests': {'cpu': '9'}}}]}},
  'requests': {'cpu': '17'},
  'limits': {},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'regular and init containers with limits',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'regular-and-init-containers-with-limits'},
          'spec': {'initContainers': [{'name': 'ic0', 'resources': {'limits': {'cpu': '9'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '9'}}}]}},
  'requests': {},
  'limits': {'cpu': '9'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "containers[0] unnamed upstream; named 'c0'"]},
 {'source': 'kubernetes/component-helpers@v0.36.3 (8c03f98ede662ab6b26d3fee7cfc21df44b24e0e, '
            'Kubernetes-commit 0f815fd0; file last changed 2f80a578):resource/helpers_test.go '
            'TestAggregateContainerRequestsAndLimits',
  'name': 'regular, init and sidecar containers with limits',
  'function': 'AggregateContainerRequests/AggregateContainerLimits',
  'pod': {'metadata': {'name': 'regular-init-and-sidecar-containers-with-limits'},
          'spec': {'initContainers': [{'name': 'ic0',
                                       'restartPolicy': 'Always',
                                       'resources': {'limits': {'cpu': '8'}}},
                                      {'name': 'ic1', 'resources': {'limits': {'cpu': '6'}}}],
                   'containers': [{'name': 'c0', 'resources': {'limits': {'cpu': '9'}}}]}},
  'requests': {},
  'limits': {'cpu': '17'},
  'options': {'exclude_overhead': False, 'skip_pod_level': False, 'use_status_resources': False},
  'notes': ['pod has no overhead and no spec.resources, so PodRequests/PodLimits with default '
            'options equal AggregateContainerRequests/AggregateContainerLimits',
            "initContainers[0] unnamed upstream; named 'ic0'",
            "initContainers[1] unnamed upstream; named 'ic1'",
            "containers[0] unnamed upstream; named 'c0'"]}]
