"""`sdqos plan` and `sdqos explain` through the real command line (the installed console script)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def sdqos(*args, check=False):
    return subprocess.run([sys.executable, "-m", "sdqos", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def config(tmp_path):
    d = tmp_path / "cfg"
    shutil.copytree(EXAMPLES, d)
    return d


def test_plan_json_contract(config):
    r = sdqos("plan", "--config", str(config), "--cgroup", "v1", "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["cgroup"] == "v1"
    assert data["node"]["capacity"] == {"cpu": "8", "memory": "16Gi", "pid": "4194304"}
    assert data["node"]["allocatable"] == {"cpu": "7", "memory": "14Gi", "pid": "4193304"}
    units = {u["name"]: u for u in data["units"]}
    created = units["kubepods.slice"].pop("create")  # what systemd gets when sync creates it
    assert created == {**units["kubepods.slice"]["properties"], "Description": units["kubepods.slice"]["description"],
                       "DefaultDependencies": False, "CPUAccounting": True, "MemoryAccounting": True,
                       "TasksAccounting": True}
    assert units["kubepods.slice"] == {
        "name": "kubepods.slice",
        "slice": "-.slice",
        "kind": "node",
        "description": "sdqos node allocatable for pods (kubepods)",
        "properties": {"CPUShares": 7168, "CPUQuotaPerSecUSec": 2**64 - 1, "MemoryLimit": 14 * 2**30, "TasksMax": 4193304},
    }
    assert units["kubepods-burstable.slice"]["properties"]["CPUShares"] == 1228
    pods = {f"{p['namespace']}/{p['name']}": p for p in data["pods"]}
    assert set(pods) == {"shop/web", "shop/db", "shop/api", "batch/report", "kube-system/node-agent"}
    assert {k: p["qos"] for k, p in pods.items()} == {
        "shop/web": "Burstable", "shop/db": "Guaranteed", "shop/api": "Burstable",
        "batch/report": "BestEffort", "kube-system/node-agent": "Burstable",
    }
    db = pods["shop/db"]
    assert db["slice"] == "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"
    assert db["containers"][0]["oomScoreAdj"] == -997
    assert db["containers"][0]["properties"]["MemoryLimit"] == 4 * 2**30
    web = pods["shop/web"]
    assert [c["name"] for c in web["containers"]] == ["migrate", "log-shipper", "nginx"]
    assert units[web["slice"]]["properties"]["CPUQuotaPerSecUSec"] == 1_000_000
    assert data["warnings"] == [] and data["errors"] == []


def test_plan_v2_uses_v2_properties(config):
    data = json.loads(sdqos("plan", "--config", str(config), "--cgroup", "v2", "-o", "json", check=True).stdout)
    props = {u["name"]: u["properties"] for u in data["units"]}["kubepods.slice"]
    assert set(props) == {"CPUWeight", "CPUQuotaPerSecUSec", "MemoryMax", "MemoryMin", "MemoryLow", "MemoryHigh", "TasksMax"}
    assert props["CPUWeight"] == 1 + (7168 - 2) * 9999 // 262142


def test_plan_text_tree(config):
    r = sdqos("plan", "--config", str(config), "--cgroup", "v1")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "node allocatable 7 CPU, 14 GiB, 4193304 pids" in lines
    assert "-.slice" in lines
    assert any(line.startswith("└─kubepods.slice  node allocatable for pods  [7168 shares · no quota · 14 GiB") for line in lines)
    assert any("shop/db (Guaranteed)  [2048 shares · 200% CPU · 4 GiB · 4096 tasks]" in line for line in lines)
    assert any("nginx · oom_score_adj 993" in line for line in lines)


def test_explain_shows_formulas(config):
    r = sdqos("explain", "--config", str(config), "--cgroup", "v1", "shop/web")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "QoS class Burstable" in out
    assert "= 500m × 1024 / 1000m (pod CPU request: max(nginx 250m + log-shipper 50m (sidecar) = 300m; init migrate 500m))" in out
    assert "= 1200m × 1024 / 1000m (Σ Burstable requests: shop/api 600m, kube-system/node-agent 100m, shop/web 500m)" in out
    assert "oom_score_adj                         993" in out


def test_explain_what_if_file(config, tmp_path):
    new = tmp_path / "new.yaml"
    new.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: extra, namespace: shop}\n"
        "spec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 300m}}\n"
    )
    r = sdqos("explain", "--config", str(config), "--cgroup", "v1", str(new))
    assert r.returncode == 0, r.stderr
    assert "Pod shop/extra" in r.stdout
    assert "1500m × 1024 / 1000m (Σ Burstable requests:" in r.stdout  # the tier includes the what-if pod


def test_invalid_pod_file_exit_2_and_line(config):
    (config / "pods" / "bad.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: c\n"
        "    resources: {limits: {cpu: 12x}}\n"
    )
    r = sdqos("plan", "--config", str(config), "--cgroup", "v1", "-o", "json")
    assert r.returncode == 2
    assert 'sdqos: error: pods/bad.yaml[0]: spec.containers[0].resources.limits.cpu: "12x" is not a quantity' in r.stderr
    data = json.loads(r.stdout)
    assert len(data["pods"]) == 5  # the other pods are still planned
    assert data["errors"] == ['pods/bad.yaml[0]: spec.containers[0].resources.limits.cpu: "12x" is not a quantity']


def test_missing_config_dir_is_invalid_input(tmp_path):
    r = sdqos("plan", "--config", str(tmp_path / "nope"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"sdqos: error: config directory {tmp_path / 'nope'} does not exist"


def test_broken_node_yaml_exit_2(config):
    (config / "node.yaml").write_text("qosReserved: {memory: 150%}\nfeatureGates: {QOSReserved: true}\n")
    r = sdqos("plan", "--config", str(config))
    assert r.returncode == 2
    assert r.stderr.strip() == 'sdqos: error: node.yaml: qosReserved.memory: "150%": percentage must be between 0 and 100'


def test_help_lists_commands():
    r = sdqos("--help")
    assert r.returncode == 0
    for cmd in ("plan", "explain"):
        assert cmd in r.stdout
    assert "Exit codes: 0 ok; 1 error" in r.stdout and "4 diff / sync --dry-run" in " ".join(r.stdout.split())


def test_sandbox_command_is_loaded_only_when_named(config):
    """`sandbox` is listed and works, but a plan (as any other command) does not import it."""
    code = (
        "import sys; from sdqos.cli.app import app\n"
        f"app(['plan', '--config', {str(config)!r}], standalone_mode=False)\n"
        "print('sdqos.sandbox' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False"

    top = sdqos("--help").stdout
    assert "sandbox        A private throwaway systemd" in top
    sub = sdqos("sandbox", "--help")
    assert sub.returncode == 0
    assert sub.stdout.startswith("Usage: ") and " sandbox [OPTIONS] COMMAND [ARGS]..." in sub.stdout.splitlines()[0]
    for cmd in ("up", "exec", "status", "list", "down"):
        assert f"\n  {cmd} " in sub.stdout
    assert "╭" not in sub.stdout  # plain help, as every other command's
    bad = sdqos("sandbox", "status", "no/such")
    assert bad.returncode != 0 and "sdqos sandbox:" in bad.stderr


def test_explain_json_has_each_value_with_its_reason(config):
    r = sdqos("explain", "shop/web", "--config", str(config), "--cgroup", "v1", "-o", "json")
    assert r.returncode == 0, r.stderr
    (pod,) = json.loads(r.stdout)["pods"]
    assert (pod["namespace"], pod["name"], pod["qos"]) == ("shop", "web", "Burstable")
    shares = pod["properties"]["CPUShares"]
    assert shares["value"] == 512 and shares["shown"] == "512 shares"
    assert shares["why"].startswith("500m × 1024 / 1000m (pod CPU request:")
    nginx = next(c for c in pod["containers"] if c["name"] == "nginx")
    planned = json.loads(sdqos("plan", "--config", str(config), "--cgroup", "v1", "-o", "json").stdout)
    web = next(p for p in planned["pods"] if p["name"] == "web")
    assert nginx["oomScoreAdj"] == next(c["oomScoreAdj"] for c in web["containers"] if c["name"] == "nginx")
    assert nginx["oomScoreAdjWhy"].startswith("1000 − 1000 × 128 MiB / 16 GiB")
    assert set(nginx["properties"]) == {"CPUShares", "CPUQuotaPerSecUSec", "MemoryLimit", "TasksMax"}


VM_DOC = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: web-vm}
spec:
  resources:
    requests: {cpu: "1"}
    limits: {cpu: "2", memory: 2Gi}
  libvirt: {domain: web-vm}
"""


def test_explain_vm_shows_its_values_formulas_and_the_budget_it_takes(config):
    (config / "vms").mkdir()
    (config / "vms" / "web.yaml").write_text(VM_DOC)
    r = sdqos("explain", "--config", str(config), "--cgroup", "v1", "--vm", "web-vm")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "VM web-vm, from vms/web.yaml[0]" in out and "QoS class Burstable" in out
    assert "= 1100m × 1024 / 1000m (cpu request 1 + overhead 100m, sdqos's default: 100m; QEMU 30 MiB" in out
    assert "= (2 limit + 100m overhead) × 100000µs / 1000m = 210000µs per 100000µs" in out
    # 30 + 8 + 32 MiB + 2 vCPUs × 8 MiB + 2 GiB / 512
    assert "= limits.memory 2 GiB (guest RAM) + overhead 90 MiB" in out
    # 1000 − 1000 × (2 GiB + 90 MiB) / 16 GiB = 870
    assert "oom_score_adj                         870" in out
    assert "= node allocatable 14 GiB − VMs 2.1 GiB" in out
    js = json.loads(sdqos("explain", "--config", str(config), "--cgroup", "v1", "--vm", "web-vm", "-o", "json").stdout)
    (vm,) = js["vms"]
    assert vm["oomScoreAdj"] == 870 and vm["properties"]["MemoryLimit"]["value"] == 2 * 2**30 + 90 * 2**20
    assert vm["budget"]["machine.slice"]["MemoryLimit"]["value"] == 2 * 2**30 + 90 * 2**20
    bad = sdqos("explain", "--config", str(config), "--vm", "nope")
    assert bad.returncode == 2 and bad.stderr.strip() == "sdqos: error: no VM 'nope' in the config (vms/*.yaml)"


def test_vm_host_example_gives_docs_worked_example(tmp_path):
    """examples/vm-host is docs/vms.md's worked example: machine.slice gets what the two VMs reserve,
    kubepods.slice the rest of allocatable."""
    d = tmp_path / "vm-host"
    shutil.copytree(EXAMPLES / "vm-host", d)
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(d), "--cgroup", "v1", "-o", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    units = {u["name"]: u["properties"] for u in plan["units"]}
    assert units["machine.slice"]["CPUShares"] == 2252
    assert units["kubepods.slice"]["CPUShares"] == 4915
    assert plan["node"]["vms"] == {"cpu": "2200m", "memory": "3290Mi"}  # 2 GiB + 90 MiB + 1 GiB + 128 MiB
    assert units["kubepods.slice"]["MemoryLimit"] == 14 * 2**30 - (3 * 2**30 + 218 * 2**20)
    assert sorted(v["name"] for v in plan["vms"]) == ["ci-runner", "web-vm"] and plan["warnings"] == []


def test_plan_shows_reserved_cpus_formula_and_pods_not_admitted(tmp_path):
    """reservedSystemCPUs on a 4-CPU node: allocatable 3 CPUs, the formula in the header; maxPods 1:
    the pods after the first flagged with kubelet's reason, in text and JSON; a not-applicable
    field said once; a hugepages request refused naming file, document and field."""
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text('capacity: {cpu: "4", memory: 8Gi}\nreservedSystemCPUs: "0"\nmaxPods: 1\n'
                                 "clusterDNS: [10.96.0.10]\n")
    for name in ("a", "b"):
        (d / "pods" / f"{name}.yaml").write_text(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n"
            "    resources: {requests: {cpu: '1', memory: 1Gi}}\n")
    r = sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure")
    assert r.returncode == 0, r.stderr
    assert "node allocatable 3 CPU," in r.stdout
    assert '  cpu: capacity 4 − systemReserved 1 (reservedSystemCPUs "0": 1 CPU, replacing the cpu of systemReserved ' \
           "and kubeReserved) = 3" in r.stdout
    assert "warning: pod default/b would not be admitted: OutOfpods (1 of 1 pods admitted)" in r.stdout
    assert r.stdout.count("clusterDNS is not applied") == 1
    data = json.loads(sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure", "-o", "json").stdout)
    assert data["node"]["allocatable"]["cpu"] == "3" and data["node"]["reservedSystemCPUs"] == "0"
    assert data["notAdmitted"] == {"default/b": {"reason": "OutOfpods", "message": "Node didn't have enough resource: "
                                                 "pods, requested: 1, used: 1, capacity: 1"}}
    (d / "pods" / "b.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n  - name: c\n"
        "    resources: {limits: {memory: 1Gi, hugepages-2Mi: 4Mi}}\n")
    r = sdqos("plan", "--config", str(d), "--cgroup", "v1", "--insecure")
    assert r.returncode == 2
    assert "pods/b.yaml[0]: spec.containers[0].resources.limits.hugepages-2Mi: \"hugepages-2Mi\" is refused: systemd " \
           "has no hugetlb setting" in r.stdout + r.stderr
