"""KubeletConfiguration validation cases sdqos must refuse (or accept) as kubelet does, and
k8s.io/utils/cpuset Parse cases.

Sources: k/k pkg/kubelet/apis/config/validation/validation_test.go (TestValidateKubeletConfiguration,
index id 9350235; validation.go id 4640499) for the fields sdqos reads; cpuset_test.go TestParse
(k8s.io/utils/cpuset, id 2349447428); cmd/kubelet/app/server.go getReservedCPUs for the online
CPUs check; cpumanager NewManager and policy_none.go for the policies.

Schema:
  INVALID = [(name, {field: value}, field named in the error, text the error holds)]
  VALID = [(name, {field: value})]
  CPUSET_POSITIVE = [(text, set)]; CPUSET_NEGATIVE = [text]

Skipped (reason): fields sdqos does not read (ports, image GC, iptables bits, shutdown grace
periods...): they are not applicable and only said in warnings (sdqos/kube/dispositions.py).
"""

INVALID = [
    ("specify ReservedSystemCPUs with SystemReservedCgroup",
     {"reservedSystemCPUs": "0-3", "systemReservedCgroup": "/system.slice"}, "reservedSystemCPUs",
     "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or "
     "kubeReservedCgroup (--kube-reserved-cgroup)"),
    ("specify ReservedSystemCPUs with KubeReservedCgroup",
     {"reservedSystemCPUs": "0-3", "kubeReservedCgroup": "/system.slice"}, "reservedSystemCPUs",
     "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup"),
    ("invalid ReservedSystemCPUs", {"reservedSystemCPUs": "-1"}, "reservedSystemCPUs",
     "unable to parse reservedSystemCPUs (--reserved-cpus) -1, error:"),
    ("reserved CPUs not online (getReservedCPUs)", {"reservedSystemCPUs": "0-5"}, "reservedSystemCPUs",
     "reserved-cpus: 0-5 is not a subset of online-cpus: 0-3"),
    ("invalid MaxPods", {"maxPods": -10}, "maxPods", "must not be a negative number"),
    ("invalid PodsPerCore", {"podsPerCore": -10}, "podsPerCore", "must not be a negative number"),
    ("invalid TopologyManagerPolicy", {"topologyManagerPolicy": "invalid-policy"}, "topologyManagerPolicy",
     'topologyManagerPolicy (--topology-manager-policy) "invalid-policy" must be one of'),
    ("invalid TopologyManagerScope", {"topologyManagerScope": "invalid-scope"}, "topologyManagerScope",
     'topologyManagerScope (--topology-manager-scope) "invalid-scope" must be one of: "container", or "pod"'),
    ("static CPU policy without any reserved CPU (cpu_manager.go)", {"cpuManagerPolicy": "static"},
     "cpuManagerPolicy", "the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"),
    ("unknown CPU manager policy", {"cpuManagerPolicy": "dynamic"}, "cpuManagerPolicy", 'unknown policy: "dynamic"'),
    ("static policy: an unknown option (policy_options.go)",
     {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"bogus": "true"}},
     "cpuManagerPolicyOptions", 'unknown CPU Manager Policy option: "bogus"'),
    ("static policy: an option value strconv.ParseBool refuses (policy_options.go)",
     {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"}, "cpuManagerPolicyOptions": {"full-pcpus-only": "yes"}},
     "cpuManagerPolicyOptions.full-pcpus-only", 'strconv.ParseBool: parsing "yes": invalid syntax'),
    ("options with the none policy (policy_none.go)", {"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}},
     "cpuManagerPolicyOptions", "None policy: received unsupported options="),
    ("unknown memory manager policy", {"memoryManagerPolicy": "static"}, "memoryManagerPolicy",
     'unknown policy: "static"'),
    ("Static memory policy: reservedMemory must equal the node allocatable reservation",
     {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]},
     "reservedMemory", 'is not equal to the value "104857600" determined by Node Allocatable feature'),
    ("reservedMemory on a NUMA node the host lacks",
     {"reservedMemory": [{"numaNode": 1, "limits": {"memory": "100Mi"}}]}, "reservedMemory[0].numaNode",
     "references a NUMA node 1 that does not exist on this machine"),
    ("reservedMemory with a duplicated NUMA node",
     {"reservedMemory": [{"numaNode": 0, "limits": {"memory": "50Mi"}}, {"numaNode": 0, "limits": {"memory": "50Mi"}}]},
     "reservedMemory[1].numaNode", "duplicated value for NUMA node 0"),
]

VALID = [
    ("default", {}),
    ("reservedSystemCPUs on online CPUs", {"reservedSystemCPUs": "0,2-3"}),
    ("maxPods 0 is allowed", {"maxPods": 0}),
    ("every topology policy on one NUMA node", {"topologyManagerPolicy": "single-numa-node",
                                                 "topologyManagerScope": "pod"}),
    ("Static memory policy, reservedMemory = evictionHard's 100Mi",
     {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}]}),
]

CPUSET_POSITIVE = [
    ("", frozenset()),
    ("5", frozenset({5})),
    ("1,2,3,4,5", frozenset({1, 2, 3, 4, 5})),
    ("1-5", frozenset({1, 2, 3, 4, 5})),
    ("1-2,3-5", frozenset({1, 2, 3, 4, 5})),
    ("5,4,3,2,1", frozenset({1, 2, 3, 4, 5})),
    ("3-6,1-5", frozenset({1, 2, 3, 4, 5, 6})),
    ("3-3,5-5", frozenset({3, 5})),
]
CPUSET_NEGATIVE = [
    "nonnumeric", "non-numeric", "no,numbers", "0-a", "a-0", "0,a", "a,0", "1-2,a,3-5",
    "0,", "0,,", ",3", ",,3", "0,,3",
    "-1", "1-", "1,2-,3", "1,-2,3", "-1--2", "--1", "1--",
    "3-0", "0--3",
]
CPUSET_STRING = [(frozenset(), ""), (frozenset({5}), "5"), (frozenset({1, 2, 3, 4, 5}), "1-5"),
                 (frozenset({1, 2, 3, 5, 6, 8}), "1-3,5-6,8")]
