"""sdqos.host.cpustate: the static CPU manager's state file in a temp run dir (real files, nothing
of the host touched): kubelet's format, restored and validated against the policy, atomic writes,
and a file that is not ours refused rather than taken as "no state"."""

from __future__ import annotations

import json
import os

import pytest

from sdqos.errors import CPUManagerStateError, HostError
from sdqos.host import cpustate
from sdqos.kube import cpumanager as cm
from sdqos.kube.cpuset import CPUSet
from sdqos.kube.cputopology import CPUInfo, make_topology


def policy(n: int = 4, reserved: str = "0") -> cm.StaticPolicy:
    topo = make_topology({c: CPUInfo(numa_node=0, socket=0, core=c) for c in range(n)})
    return cm.new_static_policy(topo, 1, [int(reserved)])


def test_no_file_is_the_initial_state_every_cpu_shared(tmp_path):
    state = cpustate.load(policy(), tmp_path)
    assert state.policy_name == "static" and str(state.default_cpuset) == "0-3" and not state.entries
    assert not cpustate.state_path(tmp_path).exists()  # loading writes nothing


def test_saved_assignments_come_back_in_kubelets_format(tmp_path):
    p = policy()
    state = cpustate.load(p, tmp_path)
    state = cm.CPUManagerState("static", state.default_cpuset - CPUSet({2, 3}), {"uid-1": {"app": CPUSet({2, 3})}})
    cpustate.save(state, tmp_path)
    path = cpustate.state_path(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    doc = json.loads(path.read_text())
    assert doc["policyName"] == "static" and doc["defaultCpuSet"] == "0-1"
    assert doc["entries"] == {"uid-1": {"app": "2-3"}} and isinstance(doc["checksum"], int)
    again = cpustate.load(p, tmp_path)
    assert again.get("uid-1", "app") == CPUSet({2, 3}) and str(again.default_cpuset) == "0-1"
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_a_state_that_does_not_fit_the_cpus_is_refused_with_what_to_do(tmp_path):
    cpustate.save(cm.CPUManagerState("static", CPUSet({0, 1}), {"uid-1": {"app": CPUSet({2, 3})}}), tmp_path)
    with pytest.raises(CPUManagerStateError) as err:
        cpustate.load(policy(n=6), tmp_path)  # the host now has 6 CPUs: 4-5 are in neither
    assert "doesn't match with CPUs in state" in str(err.value)
    assert "please drain this node and delete the CPU manager checkpoint file" in str(err.value)


def test_a_tampered_checksum_is_refused(tmp_path):
    cpustate.save(cm.CPUManagerState("static", CPUSet({0, 1}), {"uid-1": {"app": CPUSet({2, 3})}}), tmp_path)
    path = cpustate.state_path(tmp_path)
    path.write_text(path.read_text().replace('"2-3"', '"3"').replace('"0-1"', '"0-2"'))
    with pytest.raises(CPUManagerStateError, match="checksum"):
        cpustate.load(policy(), tmp_path)


def test_a_symlink_in_its_place_is_refused_not_taken_as_no_state(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("{}")
    os.symlink(target, cpustate.state_path(tmp_path))
    with pytest.raises(HostError, match="not a plain file of ours"):
        cpustate.load(policy(), tmp_path)
