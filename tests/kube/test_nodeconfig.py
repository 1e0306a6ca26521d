"""node.yaml (KubeletConfiguration): defaults, kubelet's validation rules, typo warnings."""

from __future__ import annotations

import pytest

from sdqos.kube.model import CPU, MEMORY, PID
from sdqos.kube.nodeconfig import parse_go_duration, parse_node_config, parse_percentage
from sdqos.kube.quantity import parse_quantity

DETECTED = {CPU: parse_quantity("4"), MEMORY: parse_quantity("8Gi"), PID: parse_quantity("32768")}


def parse(raw):
    cfg, errors = parse_node_config(raw, DETECTED)
    return cfg, [str(e) for e in errors]


def test_defaults_without_node_yaml():
    cfg, errors = parse(None)
    assert errors == []
    assert cfg.capacity == DETECTED
    assert cfg.enforce_node_allocatable == {"pods"}
    assert cfg.cpu_cfs_quota and cfg.cpu_cfs_quota_period_us == 100_000
    assert cfg.pod_pids_limit == -1 and cfg.memory_throttling_factor == 0.9
    assert cfg.gate("PodLevelResources") and not cfg.gate("MemoryQoS") and not cfg.gate("QOSReserved")


def test_real_kubelet_config_is_accepted_and_typos_warned():
    cfg, errors = parse({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {"anonymous": {"enabled": False}},
        "clusterDNS": ["10.96.0.10"],
        "cgroupDriver": "systemd",
        "kubeReserverd": {"cpu": "1"},
    })
    assert errors == []
    assert cfg.warnings == (
        'node.yaml: unknown field "kubeReserverd" (not a KubeletConfiguration field; did you mean "kubeReserved"?): ignored',
        "node.yaml: authentication is not applied: sdqos serves no kubelet API (no HTTP server, no port)",
        "node.yaml: clusterDNS is not applied: podman sets up the pods' network",
    )


def test_capacity_override_and_pids_alias():
    cfg, errors = parse({"capacity": {"cpu": "16", "pids": "4194304"}})
    assert errors == []
    assert cfg.capacity[CPU] == parse_quantity("16") and cfg.capacity[PID] == parse_quantity("4194304")
    assert cfg.capacity[MEMORY] == DETECTED[MEMORY]
    assert cfg.capacity_source == {CPU: "node.yaml", MEMORY: "detected", PID: "node.yaml"}


BAD = [
    ({"kubeReserved": {"memory": "9Gi"}}, 'node.yaml: kubeReserved/systemReserved.memory: Resource "memory" has a reservation of 9.1 GiB but capacity of 8 GiB. Expected capacity >= reservation (reservation includes evictionHard memory.available)'),
    ({"systemReserved": {"cpu": "-1"}}, 'node.yaml: systemReserved.cpu: "-1" must not be negative'),
    ({"kubeReserved": {"cpu": "12x"}}, 'node.yaml: kubeReserved.cpu: "12x" is not a quantity'),
    ({"qosReserved": {"memory": "150%"}}, 'node.yaml: qosReserved.memory: "150%": percentage must be between 0 and 100'),
    ({"qosReserved": {"memory": "abc"}}, 'node.yaml: qosReserved.memory: percentage expected, got "abc"'),
    ({"qosReserved": {"cpu": "50%"}}, 'node.yaml: qosReserved.cpu: cannot reserve "cpu" resource (only memory)'),
    ({"cpuCFSQuotaPeriod": "2s"}, 'node.yaml: cpuCFSQuotaPeriod: "2s" must be between 1ms and 1s, inclusive'),
    ({"cpuCFSQuotaPeriod": "500us"}, 'node.yaml: cpuCFSQuotaPeriod: "500us" must be between 1ms and 1s, inclusive'),
    ({"cpuCFSQuotaPeriod": "fast"}, "node.yaml: cpuCFSQuotaPeriod: 'fast' is not a duration (e.g. 100ms, 1s)"),
    ({"cpuCFSQuotaPeriod": "50ms", "featureGates": {"CustomCPUCFSQuotaPeriod": False}}, 'node.yaml: cpuCFSQuotaPeriod: "50ms" requires feature gate CustomCPUCFSQuotaPeriod'),
    ({"cgroupsPerQOS": False}, "node.yaml: cgroupsPerQOS: sdqos builds the QoS cgroup hierarchy; cgroupsPerQOS: false is not supported"),
    ({"enforceNodeAllocatable": ["pods", "none"]}, 'node.yaml: enforceNodeAllocatable: may not contain additional enforcements when "none" is specified'),
    ({"enforceNodeAllocatable": ["pods", "pods"]}, 'node.yaml: enforceNodeAllocatable: duplicated enforcement "pods"'),
    ({"enforceNodeAllocatable": ["system-reserved"]}, 'node.yaml: systemReservedCgroup: must be specified when "system-reserved" or "system-reserved-compressible" is in enforceNodeAllocatable'),
    ({"memoryThrottlingFactor": 1.5}, "node.yaml: memoryThrottlingFactor: 1.5 must be greater than 0 and less than or equal to 1.0"),
    ({"memoryReservationPolicy": "TieredReservation"}, 'node.yaml: memoryReservationPolicy: "TieredReservation" requires the MemoryQoS feature gate'),
    ({"featureGates": {"MemoryQoS": "yes"}}, "node.yaml: featureGates.MemoryQoS: must be true or false, not 'yes'"),
    ({"kind": "Pod"}, 'node.yaml: kind: must be "KubeletConfiguration", not "Pod"'),
    ({"cgroupRoot": "/a-b/c d"}, "node.yaml: cgroupRoot: '/a-b/c d' is not a usable cgroup root (component 'a-b')"),
    (["not", "a", "mapping"], "node.yaml: must be a mapping (a KubeletConfiguration)"),
]


@pytest.mark.parametrize("raw,line", BAD, ids=[b[1].split(":")[1].strip() + str(i) for i, b in enumerate(BAD)])
def test_invalid_node_yaml(raw, line):
    _, errors = parse(raw)
    assert errors == [line]


def test_qos_reserved_without_gate_is_ignored_with_warning():
    cfg, errors = parse({"qosReserved": {"memory": "50%"}})
    assert errors == []
    assert "qosReserved is ignored: kubelet applies it only with featureGates.QOSReserved: true" in cfg.warnings


@pytest.mark.parametrize("text,ns", [("100ms", 100_000_000), ("1s", 10**9), ("1m30s", 90 * 10**9), ("1.5ms", 1_500_000), ("500us", 500_000), ("0", 0)])
def test_go_durations(text, ns):
    assert parse_go_duration(text) == ns


def test_custom_period():
    cfg, errors = parse({"cpuCFSQuotaPeriod": "50ms"})
    assert errors == [] and cfg.cpu_cfs_quota_period_us == 50_000


def test_percentage():
    assert parse_percentage("0%") == 0 and parse_percentage("100%") == 100
    with pytest.raises(ValueError):
        parse_percentage("50")


# --- evictionHard as kubelet parses it (pkg/kubelet/eviction/helpers.go parseThresholdStatement) ---

@pytest.mark.parametrize("value, expected", [  # percentages: parsePercentage's float32(value) / 100
    ("100Mi", 100 * 2**20), ("1Gi", 2**30), ("10%", 0.10000000149011612), ("0%", None), ("100%", None),
    ("50.5%", 0.5049999952316284),
])
def test_eviction_threshold_accepted(value, expected):
    from sdqos.kube.thresholds import parse_threshold_statement

    t = parse_threshold_statement("memory.available", value)
    assert (None if t is None else t.quantity if t.quantity is not None else t.percentage) == expected


@pytest.mark.parametrize("signal, value, message", [
    ("memory.available", "inf%", "eviction percentage threshold memory.available must be <= 100%: inf%"),
    ("memory.available", "150%", "eviction percentage threshold memory.available must be <= 100%: 150%"),
    ("memory.available", "-5%", "eviction percentage threshold memory.available must be >= 0%: -5%"),
    ("memory.available", "1e400%", 'invalid percentage "1e400%": value out of range'),
    ("memory.available", "x%", 'invalid percentage "x%"'),
    ("memory.available", "-1Gi", "eviction threshold memory.available must be positive: -1Gi"),
    ("memory.available", "0", "eviction threshold memory.available must be positive: 0"),
    ("memory.available", "abc", '"abc" is not a quantity'),
    ("memory.avail", "1Gi", "unsupported eviction signal memory.avail"),
])
def test_eviction_threshold_refused(signal, value, message):
    from sdqos.kube.thresholds import parse_threshold_statement

    with pytest.raises(ValueError) as e:
        parse_threshold_statement(signal, value)
    assert message in str(e.value)


@pytest.mark.parametrize("eviction", ['{memory.available: "inf%"}', '{memory.available: "1e400"}',
                                      '{memory.available: "abc"}', '{memory.available: "-1Gi"}'])
def test_bad_eviction_is_one_error_naming_the_field(tmp_path, eviction):
    import subprocess
    import sys

    (tmp_path / "pods").mkdir()
    (tmp_path / "node.yaml").write_text('capacity: {cpu: "8", memory: 16Gi, pids: "100000"}\nevictionHard: ' + eviction + "\n")
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(tmp_path), "--insecure"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("sdqos: error: node.yaml: ")
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_a_reserved_cgroup_inside_sdqos_tree_is_refused(tmp_path):
    import subprocess
    import sys

    (tmp_path / "pods").mkdir()
    (tmp_path / "node.yaml").write_text('capacity: {cpu: "8", memory: 16Gi, pids: "100000"}\n'
                                        "enforceNodeAllocatable: [pods, system-reserved]\nsystemReserved: {cpu: 1}\n"
                                        "systemReservedCgroup: /kubepods.slice\n")
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(tmp_path), "--insecure"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "node.yaml: systemReservedCgroup: /kubepods.slice is inside the tree sdqos manages (kubepods.slice)" in r.stderr


@pytest.mark.parametrize("text, field, message", [
    ("podPidsLimit: 9223372036854775808\n", "podPidsLimit", "9223372036854775808 does not fit a 64-bit integer"),
    ("cgroupRoot: /" + "a" * 230 + "\n", "cgroupRoot", "makes pod slice names 296 characters long; systemd allows 255"),
])
def test_node_values_that_could_not_be_sent_are_refused(tmp_path, text, field, message):
    import subprocess
    import sys

    (tmp_path / "pods").mkdir()
    (tmp_path / "node.yaml").write_text('capacity: {cpu: "8", memory: 16Gi, pids: "100000"}\n' + text)
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(tmp_path), "--insecure"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"sdqos: error: node.yaml: {field}: {message}"


def test_eviction_percentage_of_capacity_is_kubelets_float32_figure():
    """kubelet: int64(float64(capacity) * float64(float32 percentage)): 10% of 8Gi is 858993472
    (float64 arithmetic would say 858993459); that much less allocatable for pods."""
    from sdqos.kube.nodeconfig import _eviction_memory
    from sdqos.kube.thresholds import parse_threshold_statement as parse_eviction_threshold

    assert _eviction_memory({"memory.available": parse_eviction_threshold("memory.available", "10%")}, 8 * 2**30) \
        == 858993472


@pytest.mark.parametrize("text, reserved", [
    ("", 100 * 2**20),  # absent: kubelet's default
    ("evictionHard: {}\n", 0),  # given: it replaces the default
    ("evictionHard: {nodefs.available: 10%}\n", 0),
    ("evictionHard: {memory.available: 1Gi}\n", 2**30),
])
def test_eviction_default_applies_only_when_the_field_is_absent(text, reserved):
    from sdqos.kube.nodeconfig import _eviction_hard, _eviction_memory

    import yaml
    raw = yaml.safe_load(text) if text else None
    errors: list = []
    ev = _eviction_hard((raw or {}).get("evictionHard") if raw is not None else None, errors)
    assert errors == [] and _eviction_memory(ev, 8 * 2**30) == reserved


@pytest.mark.parametrize("raw", [
    {},
    {"evictionHard": {"memory.available": "100Mi"}},
    {"evictionHard": {"memory.available": "5%", "nodefs.available": "10%"}, "enforceNodeAllocatable": ["pods"]},
    {"evictionHard": {"memory.available": "-1Gi"}},
    {"evictionHard": "100Mi"},
    {"evictionHard": None, "evictionSoft": None, "evictionMaxPodGracePeriod": None},
])
def test_no_eviction_fields_give_what_the_eviction_parser_gives(raw, monkeypatch):
    """Without evictionSoft & co. node.yaml is read without importing sdqos.kube.eviction; the
    config and the errors are exactly what the full check gives (forced here)."""
    import sdqos.kube.nodeconfig as nc

    assert nc._none_given(raw)
    quick = parse_node_config(raw, DETECTED)
    monkeypatch.setattr(nc, "_none_given", lambda raw: False)
    full = parse_node_config(raw, DETECTED)
    assert quick[0] == full[0]
    assert [str(e) for e in quick[1]] == [str(e) for e in full[1]]
