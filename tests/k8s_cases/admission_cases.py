"""Resource-fit admission cases from the scheduler's noderesources Fit plugin, whose fitsRequest
kubelet's admission (pkg/kubelet/lifecycle/predicate.go) runs; kubelet reports only the first
shortage (OutOf<resource>).

Source: k/k pkg/scheduler/framework/plugins/noderesources/fit_test.go, TestEnoughRequests
(node allocatable makeAllocatableResources(10, 20, 32, ...): 10 millicores, 20 bytes, 32 pods)
and TestNotEnoughRequests (allocatable pods 1), index id 789199930.

Schema:
  CASES = [{"name", "allocatable": {cpu, memory, pods}, "pod": {"containers": [(cpu, memory)],
            "init": [(cpu, memory)]}, "used": (cpu, memory) of the one pod already on the node,
            "expected": None (fits) or (resource, requested, used, capacity) of the FIRST
            InsufficientResource upstream lists}]

Skipped (reason): the extended, kubernetes.io and hugepages cases (sdqos refuses those resources
in manifests: sdqos/kube/dispositions.py); ephemeral-storage cases (not enforced by sdqos);
the pod-level-resources and DRA cases (other plugin options).
"""

ALLOC = {"cpu": 10, "memory": 20, "pods": 32}
ONE_POD = {"cpu": 10, "memory": 20, "pods": 1}

CASES = [
    {"name": "no resources requested always fits", "allocatable": ALLOC,
     "pod": {"containers": [], "init": []}, "used": (10, 20), "expected": None},
    {"name": "too many resources fails", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": []}, "used": (10, 20), "expected": ("cpu", 1, 10, 10)},
    {"name": "too many resources fails due to init container cpu", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": [(3, 1)]}, "used": (8, 19), "expected": ("cpu", 3, 8, 10)},
    {"name": "too many resources fails due to highest init container cpu", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": [(3, 1), (2, 1)]}, "used": (8, 19), "expected": ("cpu", 3, 8, 10)},
    {"name": "too many resources fails due to init container memory", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": [(1, 3)]}, "used": (9, 19), "expected": ("memory", 3, 19, 20)},
    {"name": "too many resources fails due to highest init container memory", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": [(1, 3), (1, 2)]}, "used": (9, 19), "expected": ("memory", 3, 19, 20)},
    {"name": "init container fits because it's the max, not sum, of containers and init containers",
     "allocatable": ALLOC, "pod": {"containers": [(1, 1)], "init": [(1, 1)]}, "used": (9, 19), "expected": None},
    {"name": "multiple init containers fit because it's the max, not sum, of containers and init containers",
     "allocatable": ALLOC, "pod": {"containers": [(1, 1)], "init": [(1, 1), (1, 1)]}, "used": (9, 19),
     "expected": None},
    {"name": "both resources fit", "allocatable": ALLOC,
     "pod": {"containers": [(1, 1)], "init": []}, "used": (5, 5), "expected": None},
    {"name": "one resource memory fits", "allocatable": ALLOC,
     "pod": {"containers": [(2, 1)], "init": []}, "used": (9, 5), "expected": ("cpu", 2, 9, 10)},
    {"name": "one resource cpu fits", "allocatable": ALLOC,
     "pod": {"containers": [(1, 2)], "init": []}, "used": (5, 19), "expected": ("memory", 2, 19, 20)},
    {"name": "equal edge case", "allocatable": ALLOC,
     "pod": {"containers": [(5, 1)], "init": []}, "used": (5, 19), "expected": None},
    {"name": "equal edge case for init container", "allocatable": ALLOC,
     "pod": {"containers": [(4, 1)], "init": [(5, 1)]}, "used": (5, 19), "expected": None},
    # TestNotEnoughRequests: allocatable pods 1, one pod on the node
    {"name": "even without specified resources, predicate fails when there's no space for additional pod",
     "allocatable": ONE_POD, "pod": {"containers": [], "init": []}, "used": (10, 20), "expected": ("pods", 1, 1, 1)},
    {"name": "even if both resources fit, predicate fails when there's no space for additional pod",
     "allocatable": ONE_POD, "pod": {"containers": [(1, 1)], "init": []}, "used": (5, 5),
     "expected": ("pods", 1, 1, 1)},
    {"name": "even for equal edge case, predicate fails when there's no space for additional pod",
     "allocatable": ONE_POD, "pod": {"containers": [(5, 1)], "init": []}, "used": (5, 19),
     "expected": ("pods", 1, 1, 1)},
    {"name": "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     "allocatable": ONE_POD, "pod": {"containers": [(5, 1)], "init": [(5, 1)]}, "used": (5, 19),
     "expected": ("pods", 1, 1, 1)},
]
