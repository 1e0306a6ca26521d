"""Pod/VM manifest parsing: API defaulting, and every validation error with its exact line."""

from __future__ import annotations

import copy

import pytest

from sdqos.kube.manifests import ParseResult, check_duplicates, parse_pod_documents, parse_vm_documents, stable_uid
from sdqos.kube.model import CPU, MEMORY
from sdqos.kube.quantity import parse_quantity

from ..helpers import pod_from

BASE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "containers": [
            {"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}}
        ]
    },
}


def with_(path: str, value):
    """BASE with one field replaced (dotted path, [i] for list items); value DELETE removes it."""
    doc = copy.deepcopy(BASE)
    parts = path.replace("]", "").replace("[", ".").split(".")
    cur = doc
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    last = parts[-1]
    if value is DELETE:
        del cur[last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return doc


DELETE = object()
C0 = "spec.containers[0]"
LIM = f"{C0}.resources.limits"
REQ = f"{C0}.resources.requests"

ERRORS = [
    # (what, mutated document, expected error line)
    ("quantity 12x", with_(f"{LIM}.cpu", "12x"), f'pods/t.yaml[0]: {LIM}.cpu: "12x" is not a quantity'),
    ("negative", with_(f"{REQ}.memory", "-1"), f'pods/t.yaml[0]: {REQ}.memory: "-1" must be greater than or equal to 0'),
    ("empty quantity", with_(f"{LIM}.cpu", ""), f'pods/t.yaml[0]: {LIM}.cpu: "" is not a quantity (empty)'),
    ("1.1.1", with_(f"{LIM}.cpu", "1.1.1"), f'pods/t.yaml[0]: {LIM}.cpu: "1.1.1" is not a quantity'),
    ("0.1mi", with_(f"{LIM}.memory", "0.1mi"), f'pods/t.yaml[0]: {LIM}.memory: "0.1mi" is not a quantity (unknown suffix "mi")'),
    ("leading space", with_(f"{LIM}.cpu", " 1"), f'pods/t.yaml[0]: {LIM}.cpu: " 1" is not a quantity'),
    ("beyond int64", with_(f"{LIM}.memory", "9223372036854775808"), f'pods/t.yaml[0]: {LIM}.memory: "9223372036854775808" is too large (more than 2^63-1)'),
    ("1e400", with_(f"{LIM}.memory", "1e400"), f'pods/t.yaml[0]: {LIM}.memory: "1e400" is too large (more than 2^63-1)'),
    ("fractional bytes", with_(f"{LIM}.memory", "100m"), f'pods/t.yaml[0]: {LIM}.memory: "100m" is a fractional number of bytes (did you mean Mi?)'),
    ("request > limit", with_(f"{REQ}.cpu", "2"), f'pods/t.yaml[0]: {REQ}.cpu: "2" must be less than or equal to cpu limit of "500m"'),
    ("bool quantity", with_(f"{LIM}.cpu", True), f"pods/t.yaml[0]: {LIM}.cpu: true is not a quantity"),
    ("unknown resource", with_(f"{LIM}.cpus", "1"), f'pods/t.yaml[0]: {LIM}.cpus: "cpus" is not a resource name (cpu, memory, ephemeral-storage, hugepages-<size>, or a fully-qualified extended resource)'),
    ("typo in resources", with_(f"{C0}.resource", {}), f'pods/t.yaml[0]: {C0}.resource: unknown field (did you mean "resources"?)'),
    ("no name", with_("metadata.name", DELETE), "pods/t.yaml[0]: metadata.name: Required value"),
    ("name not DNS", with_("metadata.name", "Web_1"), 'pods/t.yaml[0]: metadata.name: "Web_1" is not a valid DNS-1123 subdomain (lowercase letters, digits and \'-\', \'.\', starting and ending with a letter or digit)'),
    ("namespace not DNS", with_("metadata.namespace", "a.b"), 'pods/t.yaml[0]: metadata.namespace: "a.b" is not a valid DNS-1123 label (lowercase letters, digits and \'-\', starting and ending with a letter or digit)'),
    ("escape attempt", with_("metadata.name", "../x"), 'pods/t.yaml[0]: metadata.name: "../x" is not a valid DNS-1123 subdomain (lowercase letters, digits and \'-\', \'.\', starting and ending with a letter or digit)'),
    ("container name", with_(f"{C0}.name", "Nginx"), f'pods/t.yaml[0]: {C0}.name: "Nginx" is not a valid DNS-1123 label (lowercase letters, digits and \'-\', starting and ending with a letter or digit)'),
    ("long name", with_("metadata.name", "a" * 300), 'pods/t.yaml[0]: metadata.name: "' + "a" * 57 + '..." must be no more than 253 characters'),
    ("unicode name", with_("metadata.name", "wéb"), 'pods/t.yaml[0]: metadata.name: "wéb" is not a valid DNS-1123 subdomain (lowercase letters, digits and \'-\', \'.\', starting and ending with a letter or digit)'),
    ("bad uid", with_("metadata.uid", "a/b"), "pods/t.yaml[0]: metadata.uid: \"a/b\" must be letters, digits and '-' (at most 128), like a UUID"),
    ("wrong kind", with_("kind", "Deployment"), 'pods/t.yaml[0]: kind: must be "Pod", not "Deployment" (sdqos reads Pods: write the Deployment\'s pod template as a Pod)'),
    ("a deployment", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                      "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a"}]}}}},
     'pods/t.yaml[0]: kind: must be "Pod", not "Deployment" (sdqos reads Pods: write the Deployment\'s pod template as a Pod)'),
    ("another kind", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": []}},
     'pods/t.yaml[0]: kind: must be "Pod", not "Service"'),
    ("wrong apiVersion", with_("apiVersion", "apps/v1"), 'pods/t.yaml[0]: apiVersion: must be "v1" for a Pod, not "apps/v1"'),
    ("no containers", with_("spec.containers", []), "pods/t.yaml[0]: spec.containers: Required value: a pod needs at least one container"),
    ("containers not a list", with_("spec.containers", {"name": "x"}), "pods/t.yaml[0]: spec.containers: must be a list, not a mapping"),
    ("not a mapping", ["a", "b"], "pods/t.yaml[0]: must be a mapping, not a list"),
    ("sidecar policy", with_("spec.initContainers", [{"name": "i", "restartPolicy": "OnFailure"}]), 'pods/t.yaml[0]: spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'),
    ("priority type", with_("spec.priority", "high"), "pods/t.yaml[0]: spec.priority: must be an integer, not a string"),
    ("pod-level unsupported", with_("spec.resources", {"limits": {"ephemeral-storage": "1Gi"}}), 'pods/t.yaml[0]: spec.resources.limits.ephemeral-storage: "ephemeral-storage" is not supported in pod-level resources (cpu, memory, hugepages-<size>)'),
]


@pytest.mark.parametrize("what,doc,line", ERRORS, ids=[e[0] for e in ERRORS])
def test_validation_error_lines(what, doc, line):
    result = ParseResult()
    parse_pod_documents([doc], "pods/t.yaml", result)
    assert [str(e) for e in result.errors] == [line]
    assert result.pods == []


def test_duplicate_container_names_across_init_and_app():
    doc = with_("spec.initContainers", [{"name": "nginx"}])
    result = ParseResult()
    parse_pod_documents([doc], "pods/t.yaml", result)
    assert [str(e) for e in result.errors] == [
        'pods/t.yaml[0]: spec.containers[0].name: Duplicate value: "nginx" (also spec.initContainers[0])'
    ]


def test_duplicates_across_files_invalidate_both_and_name_both_files():
    result = ParseResult()
    parse_pod_documents([BASE], "pods/a.yaml", result)
    parse_pod_documents([copy.deepcopy(BASE)], "pods/b.yaml", result)
    uid_dup = with_("metadata.name", "other")
    uid_dup["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    uid_dup2 = with_("metadata.name", "third")
    uid_dup2["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    parse_pod_documents([uid_dup, uid_dup2], "pods/c.yaml", result)
    check_duplicates(result)
    lines = [str(e) for e in result.errors]
    assert 'pods/a.yaml[0]: metadata.name: Duplicate namespace/name "shop/web" (defined in pods/a.yaml[0], pods/b.yaml[0])' in lines
    assert 'pods/b.yaml[0]: metadata.name: Duplicate namespace/name "shop/web" (defined in pods/a.yaml[0], pods/b.yaml[0])' in lines
    assert any("pods/c.yaml[1]: metadata.uid: Duplicate uid" in x for x in lines)
    assert result.pods == []
    assert {"pod:shop/web", "pod:shop/other", "pod:shop/third"} <= result.invalid_keys


def test_errors_carry_document_index_and_list_items():
    bad = with_(f"{LIM}.cpu", "12x")
    result = ParseResult()
    parse_pod_documents([BASE, {"apiVersion": "v1", "kind": "List", "items": [with_("metadata.name", "ok"), bad]}], "pods/web.yaml", result)
    assert [str(e) for e in result.errors] == [f'pods/web.yaml[1]: items[1].{LIM}.cpu: "12x" is not a quantity']
    assert [p.name for p in result.pods] == ["web", "ok"]
    assert "pod:shop/web" in result.invalid_keys  # the bad item is known by name: its units are left alone


def test_api_defaulting_limit_becomes_request():
    pod = pod_from({"metadata": {"name": "g"}, "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}})
    c = pod.containers[0]
    assert c.requests == {CPU: parse_quantity("1"), MEMORY: parse_quantity("1Gi")}
    assert c.request_set == frozenset()
    assert pod.namespace == "default"


def test_yaml_numbers_are_quantities():
    pod = pod_from({"metadata": {"name": "n"}, "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": 0.5, "memory": 1048576}}}]}})
    assert pod.containers[0].requests[CPU].milli_value() == 500
    assert pod.containers[0].requests[MEMORY].value() == 1048576


def test_stable_uid_is_deterministic_and_distinct():
    assert stable_uid("shop", "web") == stable_uid("shop", "web")
    assert stable_uid("shop", "web") != stable_uid("shop", "api")
    assert pod_from(BASE).uid == stable_uid("shop", "web")


def test_node_critical_priority_defaulted_from_class():
    pod = pod_from(with_("spec.priorityClassName", "system-node-critical"))
    assert pod.priority == 2_000_001_000


VM = {
    "apiVersion": "sdqos.io/v1alpha1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1"},
    "spec": {"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "2Gi"}}, "libvirt": {"domain": "vm1"}},
}


def test_vm_parses_with_default_overhead():
    result = ParseResult()
    parse_vm_documents([VM], "vms/vm1.yaml", result)
    assert not result.errors
    vm = result.vms[0]
    assert vm.overhead_defaulted
    # KubeVirt's terms for the QEMU process: 30 MiB + IO thread 8 MiB + video 32 MiB + 2 vCPUs × 8 MiB
    # (its cpu limit is 2) + page tables 2 GiB / 512 = 4 MiB
    assert vm.overhead[MEMORY].value() == (30 + 8 + 32 + 16 + 4) * 2**20
    assert vm.requests[MEMORY] == parse_quantity("2Gi")  # defaulted from the limit


@pytest.mark.parametrize("resources", [{"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, {}])
def test_vm_requires_memory_limit(resources):
    """Also `resources: {}`: a VM always has a RAM size; an 'unlimited VM' is a mistake."""
    doc = copy.deepcopy(VM)
    doc["spec"]["resources"] = resources
    result = ParseResult()
    parse_vm_documents([doc], "vms/vm1.yaml", result)
    assert [str(e) for e in result.errors] == ["vms/vm1.yaml[0]: spec.resources.limits.memory: Required value: the guest's RAM"]


@pytest.mark.parametrize("domain, ok", [
    ("db_replica.2", True),            # machined drops the '_', libvirt keeps it: sdqos finds it by libvirt's record
    ("web vm (prod)", True),           # libvirt takes spaces and brackets
    ("x" * 250, True),                 # longer than machined's 64: still libvirt's name
    ("é" * 125, True),                 # 250 bytes
    ("é" * 126, False),                # its status file name would not fit
    ("a/b", False),                    # libvirt: a name cannot contain '/'
    ("a\nb", False),
    ("   ", False),
    ("", False),
])
def test_libvirt_domain_names_follow_libvirts_rule(domain, ok):
    doc = copy.deepcopy(VM)
    doc["spec"]["libvirt"]["domain"] = domain
    result = ParseResult()
    parse_vm_documents([doc], "vms/vm1.yaml", result)
    if ok:
        assert not result.errors and result.vms[0].libvirt_domain == domain
    else:
        assert len(result.errors) == 1 and "spec.libvirt.domain" in str(result.errors[0]), result.errors


@pytest.mark.parametrize("resources, vcpus", [
    ({"limits": {"cpu": "2", "memory": "1Gi"}}, 2),
    ({"limits": {"cpu": "1500m", "memory": "1Gi"}}, 2),       # rounded up
    ({"requests": {"cpu": "3"}, "limits": {"memory": "1Gi"}}, 3),  # no limit: the request
    ({"limits": {"memory": "1Gi"}}, 1),
    ({"limits": {"cpu": "100000", "memory": "1Gi"}}, 4096),   # QEMU's maximum
])
def test_default_vm_overhead_counts_vcpus_as_kubevirt_does(resources, vcpus):
    doc = copy.deepcopy(VM)
    doc["spec"]["resources"] = resources
    result = ParseResult()
    parse_vm_documents([doc], "vms/vm1.yaml", result)
    assert not result.errors
    assert result.vms[0].overhead[MEMORY].value() == (70 + 8 * vcpus) * 2**20 + 2**30 // 512


def _vm(name: str, **spec) -> dict:
    doc = copy.deepcopy(VM)
    doc["metadata"]["name"] = name
    del doc["spec"]["libvirt"]
    doc["spec"].update(spec)
    return doc


@pytest.mark.parametrize("one, two, shown, fields", [
    # spec.scope twice; spec.scope naming the scope `sdqos run --vm` makes for another VM
    ({"scope": "machine-db.scope", "eviction": "Allowed"}, {"scope": "machine-db.scope"},
     'Duplicate VM scope "machine-db.scope"', ("spec.scope", "spec.scope")),
    ({"scope": "machine-b.scope", "eviction": "Allowed"}, {},
     'Duplicate VM scope "machine-b.scope"', ("spec.scope", "metadata.name")),
    ({"libvirt": {"domain": "db"}, "eviction": "Allowed"}, {"libvirt": {"domain": "db"}},
     'Duplicate libvirt domain "db"', ("spec.libvirt.domain", "spec.libvirt.domain")),
    ({"pidFile": "/run/db.pid", "eviction": "Allowed"}, {"pidFile": "/run/db.pid"},
     'Duplicate VM pid file "/run/db.pid"', ("spec.pidFile", "spec.pidFile")),
])
def test_two_vms_naming_one_scope_are_both_refused(one, two, shown, fields):
    """Two definitions of one workload: the `eviction: Allowed` one would be ranked and its eviction
    would stop the workload the other declares `Never`. Both are refused, as duplicate names are, in
    one line naming both documents and the field; the other VMs stay."""
    result = ParseResult()
    parse_vm_documents([_vm("a", **one), _vm("keep", scope="machine-keep.scope")], "vms/a.yaml", result)
    parse_vm_documents([_vm("b", **two)], "vms/b.yaml", result)
    assert not result.errors
    check_duplicates(result)
    assert [str(e) for e in result.errors] == [
        f"vms/a.yaml[0]: {fields[0]}: {shown} (defined in vms/a.yaml[0], vms/b.yaml[0])",
        f"vms/b.yaml[0]: {fields[1]}: {shown} (defined in vms/a.yaml[0], vms/b.yaml[0])",
    ]
    assert [v.name for v in result.vms] == ["keep"]
    assert {"vm:a", "vm:b"} <= result.invalid_keys


def test_a_duplicate_vm_name_is_one_error_per_vm():
    result = ParseResult()
    parse_vm_documents([_vm("a")], "vms/a.yaml", result)
    parse_vm_documents([_vm("a")], "vms/b.yaml", result)
    check_duplicates(result)  # one name, so one implicit scope: said once, as the name
    assert [str(e) for e in result.errors] == [
        f'vms/{f}.yaml[0]: metadata.name: Duplicate VM name "a" (defined in vms/a.yaml[0], vms/b.yaml[0])'
        for f in "ab"]
