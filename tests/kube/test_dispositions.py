"""Nothing silently dropped: every KubeletConfiguration field and every pod resource name has a
disposition in one table (sdqos/kube/dispositions.py), docs/configuration.md holds that table, and
node.yaml's fields are validated, refused or said not to apply as the table says."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdqos.errors import CPUSetError
from sdqos.kube import cpuset
from sdqos.kube import dispositions as disp
from sdqos.kube.kubelet_fields import KUBELET_CONFIG_FIELDS
import yaml

from sdqos.kube.manifests import ParseResult, parse_pod_documents
from sdqos.kube.model import CPU, MEMORY, PID
from sdqos.kube.nodeconfig import parse_node_config
from sdqos.kube.quantity import parse_quantity as q
from sdqos.plan.engine import build_plan
from sdqos.errors import InvalidInput

from ..k8s_cases import kubelet_config_cases as cases

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
DETECTED = {CPU: q("4"), MEMORY: q("8Gi"), PID: q("32768")}
ONLINE = frozenset(range(4))


def parse(raw, numa=1):
    cfg, errors = parse_node_config(raw, DETECTED, online_cpus=ONLINE, numa_nodes=numa)
    return cfg, errors


def test_every_kubelet_field_has_a_disposition():
    missing = sorted(KUBELET_CONFIG_FIELDS - set(disp.KUBELET_FIELDS))
    assert missing == [], f"KubeletConfiguration fields without a disposition: {missing}"
    assert sorted(set(disp.KUBELET_FIELDS) - KUBELET_CONFIG_FIELDS) == []
    kinds = {disp.HONOURED, disp.PARTLY, disp.REFUSED, disp.NOT_APPLICABLE}
    for field, row in disp.KUBELET_FIELDS.items():
        assert row.kind in kinds and row.note, field


def test_the_doc_holds_the_code_table():
    text = DOC.read_text()
    start, end = "<!-- dispositions: generated from sdqos/kube/dispositions.py -->", "<!-- /dispositions -->"
    assert start in text and end in text
    assert text.split(start, 1)[1].split(end, 1)[0].strip() == disp.markdown()


@pytest.mark.parametrize("field", sorted(f for f, r in disp.KUBELET_FIELDS.items() if r.kind == disp.NOT_APPLICABLE))
def test_a_not_applicable_field_is_said_once_when_set_and_not_at_its_default(field):
    row = disp.KUBELET_FIELDS[field]
    value = {"x": "y"} if row.default is disp._ANY else ("not-the-default" if not isinstance(row.default, bool)
                                                          else not row.default)
    cfg, errors = parse({field: value})
    assert errors == []
    said = [w for w in cfg.warnings if w.startswith(f"node.yaml: {field} is not applied: ")]
    assert said == [f"node.yaml: {field} is not applied: {row.note}"]
    if row.default is not disp._ANY:
        cfg, errors = parse({field: row.default})
        assert errors == [] and not [w for w in cfg.warnings if field in w]


def test_durations_at_their_default_in_another_spelling_are_not_said():
    cfg, errors = parse({"syncFrequency": "60s", "runtimeRequestTimeout": "2m"})
    assert errors == [] and cfg.warnings == ()


@pytest.mark.parametrize("field", sorted(f for f, r in disp.KUBELET_FIELDS.items() if r.kind == disp.REFUSED))
def test_a_refused_field_is_an_error_naming_it(field):
    row = disp.KUBELET_FIELDS[field]
    value = True if row.default is False else ({"a": "b"} if row.default == {} else ["a"])
    _, errors = parse({field: value})
    assert [e.field for e in errors] == [field]


@pytest.mark.parametrize("name,raw,field,text", cases.INVALID, ids=[c[0] for c in cases.INVALID])
def test_kubelet_refusals(name, raw, field, text):
    _, errors = parse(raw)
    assert any(e.field == field and text in e.message for e in errors), [str(e) for e in errors]
    assert all(str(e).startswith("node.yaml: ") for e in errors)


@pytest.mark.parametrize("name,raw", cases.VALID, ids=[c[0] for c in cases.VALID])
def test_kubelet_accepts(name, raw):
    _, errors = parse(raw)
    assert errors == []


@pytest.mark.parametrize("text,want", cases.CPUSET_POSITIVE)
def test_cpuset_parse(text, want):
    assert cpuset.parse(text) == want


@pytest.mark.parametrize("text", cases.CPUSET_NEGATIVE)
def test_cpuset_parse_errors(text):
    with pytest.raises(CPUSetError):
        cpuset.parse(text)


@pytest.mark.parametrize("cpus,text", cases.CPUSET_STRING)
def test_cpuset_string(cpus, text):
    assert str(cpuset.CPUSet(cpus)) == text


def test_reserved_system_cpus_replace_both_cpu_reservations_as_kubelet_does():
    cfg, errors = parse({"reservedSystemCPUs": "0", "kubeReserved": {"cpu": "2", "memory": "1Gi"},
                         "systemReserved": {"cpu": "500m"}})
    assert errors == []
    assert CPU not in cfg.kube_reserved and cfg.system_reserved[CPU] == q("1")
    assert cfg.kube_reserved[MEMORY] == q("1Gi") and cfg.reserved_system_cpus == "0"
    plan = build_plan(cfg, [], explain=True)
    assert plan.allocatable[CPU] == 3000
    assert plan.unit("kubepods.slice").properties["CPUShares"] == 3072
    assert plan.unit("kubepods.slice").why["cpu_shares"].endswith(
        'allocatable cpu = capacity 4 − systemReserved 1 (reservedSystemCPUs "0": 1 CPU, replacing the cpu of '
        "systemReserved and kubeReserved) = 3")


def test_static_cpu_policy_is_accepted_with_cpus_reserved_and_refused_on_cgroup_v2():
    cfg, errors = parse({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                         "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}})
    assert errors == [] and cfg.cpu_manager_policy == "static"
    assert cfg.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    warnings = build_plan(cfg, [], cgroup="v1").warnings
    assert any("CPU affinity" in w for w in warnings)
    with pytest.raises(InvalidInput, match="cpuManagerPolicy: static on cgroup v2: exclusive CPUs as AllowedCPUs"):
        build_plan(cfg, [], cgroup="v2")
    cfg, errors = parse({})
    assert cfg.cpu_manager_policy == "none" and not any("CPU affinity" in w for w in build_plan(cfg, []).warnings)


def test_static_cpu_policy_options_are_validated():
    supported = {"full-pcpus-only": "true", "strict-cpu-reservation": "false"}
    _, errors = parse({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": supported})
    assert [str(e) for e in errors] == []
    _, errors = parse({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"},
                       "cpuManagerPolicyOptions": {"align-by-socket": "true"}})
    assert [str(e) for e in errors] == [
        'node.yaml: cpuManagerPolicyOptions.align-by-socket: CPU Manager Policy option "align-by-socket" is not '
        "supported by sdqos (supported: full-pcpus-only, strict-cpu-reservation)"]
    _, errors = parse({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"}, "cpuManagerPolicyOptions": ["x"]})
    assert [e.field for e in errors] == ["cpuManagerPolicyOptions"]
    _, errors = parse({"cpuManagerPolicy": "static", "reservedSystemCPUs": "", "systemReserved": {"cpu": "0"}})
    assert [str(e) for e in errors] == [
        "node.yaml: cpuManagerPolicy: [cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
        "to be greater than zero (or reservedSystemCPUs)"]


def test_managers_on_one_numa_node_are_accepted_and_said_on_more_memory_static_refused():
    raw = {"topologyManagerPolicy": "single-numa-node", "memoryManagerPolicy": "Static",
           "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}]}
    cfg, errors = parse(raw)
    assert errors == []
    assert any(w.startswith("topologyManagerPolicy single-numa-node: this host has one NUMA node") for w in cfg.warnings)
    assert any(w.startswith("memoryManagerPolicy Static: this host has one NUMA node") for w in cfg.warnings)
    _, errors = parse(raw, numa=2)
    assert [e.field for e in errors] == ["memoryManagerPolicy"]
    assert "not built for a host with 2 NUMA nodes" in errors[0].message
    assert "reservedMemory per NUMA node" in errors[0].message and "AllowedMemoryNodes=" in errors[0].message


def test_topology_manager_on_two_numa_nodes_is_honoured_with_its_options_validated():
    raw = {"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod", "cpuManagerPolicy": "static",
           "reservedSystemCPUs": "0", "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"}}
    cfg, errors = parse(raw, numa=2)
    assert errors == []
    assert (cfg.topology_manager_policy, cfg.topology_manager_scope) == ("restricted", "pod")
    assert cfg.topology_manager_policy_options == {"prefer-closest-numa-nodes": "true"}
    assert any(w.startswith("topologyManagerPolicy restricted: only exclusive CPUs are aligned") for w in cfg.warnings)
    for options, line in [
            ({"foo": "1"}, 'topologyManagerPolicyOptions: unknown Topology Manager Policy option: "foo"'),
            ({"max-allowable-numa-nodes": "4"}, 'topologyManagerPolicyOptions.max-allowable-numa-nodes: the minimum '
             'value of "max-allowable-numa-nodes" should not be less than 8'),
            ({"prefer-closest-numa-nodes": "yes"}, 'topologyManagerPolicyOptions.prefer-closest-numa-nodes: bad value '
             'for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "yes": invalid syntax')]:
        _, errors = parse({**raw, "topologyManagerPolicyOptions": options}, numa=2)
        assert [str(e) for e in errors] == ["node.yaml: " + line]
    _, errors = parse(raw, numa=9)
    assert [str(e) for e in errors] == ["node.yaml: topologyManagerPolicy: unsupported on machines with more than 8 "
                                        "NUMA Nodes"]
    assert parse({**raw, "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "9"}}, numa=9)[1] == []
    cfg, errors = parse({"topologyManagerPolicy": "single-numa-node"}, numa=2)
    assert errors == [] and any("with cpuManagerPolicy none no pod has a hint" in w for w in cfg.warnings)


def test_cgroupfs_driver_is_refused():
    _, errors = parse({"cgroupDriver": "cgroupfs"})
    assert [e.field for e in errors] == ["cgroupDriver"]
    assert parse({"cgroupDriver": "systemd"})[1] == []


def _pod(resources: str):
    text = f"""apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
  - name: c
    resources: {resources}
"""
    result = ParseResult()
    parse_pod_documents([yaml.safe_load(text)], "pods/p.yaml", result)
    return result


@pytest.mark.parametrize("name", ["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi",
                                  "example.com/gpu", "nvidia.com/gpu"])
def test_every_pod_resource_name_has_a_disposition(name):
    key, row = disp.pod_resource(name)
    assert key in disp.POD_RESOURCES and row.kind in (disp.HONOURED, disp.PARTLY, disp.REFUSED)


@pytest.mark.parametrize("name,why", [("hugepages-2Mi", "systemd has no hugetlb setting"),
                                      ("example.com/gpu", "needs kubelet's device plugin")])
def test_hugepages_and_extended_resources_are_refused_naming_file_document_and_field(name, why):
    result = _pod(f'{{requests: {{cpu: 100m, memory: 64Mi, {name}: "2Mi"}}, limits: {{memory: 64Mi, {name}: "2Mi"}}}}')
    assert result.pods == []
    lines = [str(e) for e in result.errors]
    assert lines and all(line.startswith("pods/p.yaml[0]: spec.containers[0].resources.") for line in lines)
    assert all(f'"{name}" is refused: ' in line and why in line for line in lines)


def test_ephemeral_storage_is_accepted_and_said_not_enforced():
    result = _pod("{requests: {cpu: 100m, ephemeral-storage: 1Gi}}")
    assert result.errors == [] and len(result.pods) == 1
    cfg, _ = parse({})
    plan = build_plan(cfg, result.pods)
    assert [w for w in plan.warnings if "ephemeral-storage" in w] == [
        "ephemeral-storage is not enforced (kubelet enforces it by evicting on disk use, which sdqos does not watch): "
        "default/p"]
