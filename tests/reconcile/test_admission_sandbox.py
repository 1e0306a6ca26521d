"""kubelet's admission in `sdqos run`, against the sandbox's systemd: with `maxPods: 1` a second pod
is refused with kubelet's reason (one line, exit 2) while the running pod is left alone, and
another container of the admitted pod still starts; a pod whose requests do not fit what the
running pod leaves is OutOfcpu."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import active_state, cgroup_rel, sdqos_in, sync_json, wait_for
from .test_scopes_sandbox import kill_all, procs_of, run_bg


def _pod(name: str, cpu: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: adm}}
spec:
  containers:
  - name: a
    resources: {{requests: {{cpu: "{cpu}", memory: 16Mi}}}}
  - name: b
    resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "100000"}\nmaxPods: 1\n')
    (d / "pods" / "one.yaml").write_text(_pod("one", "500m"))
    (d / "pods" / "two.yaml").write_text(_pod("two", "100m"))
    return d


def _burstable(name: str) -> tuple[str, str]:
    uid = stable_uid("adm", name)
    return f"kubepods-burstable-pod{uid.replace('-', '_')}.slice", uid


def _run(sb, config: Path, *args: str) -> subprocess.CompletedProcess:
    return sbx.run(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), *args], timeout=120)


def test_run_refuses_a_pod_over_max_pods_and_leaves_the_running_one(clean_sandbox, config):
    sb = clean_sandbox
    one_slice, one_uid = _burstable("one")
    one = run_bg(sb, config, "adm/one", "a", "--", "sleep", "300")
    other = None
    try:
        rel = cgroup_rel(container_scope(one_uid, "a"), one_slice)
        wait_for(lambda: len(procs_of(sb, rel)) == 1, what="pod one's process in its scope", timeout=60)
        r = _run(sb, config, "adm/two", "a", "--", "true")
        assert r.returncode == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "pod adm/two is not admitted: OutOfpods (1 of 1 pods admitted): Node didn't have enough resource: " \
               "pods, requested: 1, used: 1, capacity: 1" in lines[0]
        two_slice, two_uid = _burstable("two")
        assert active_state(sb, container_scope(two_uid, "a")) in ("", "inactive")
        # the running pod is left alone, and another container of it is admitted (the pod is)
        assert one.poll() is None and len(procs_of(sb, rel)) == 1
        # status flags the pod that would not be admitted, never the running one
        st = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
        pods = {u["pod"]: u for u in json.loads(st.stdout)["units"] if u["kind"] == "pod"}
        assert "not-admitted" in pods["two"]["flags"] and "not-admitted" not in pods["one"]["flags"]
        assert pods["two"]["reasons"]["not-admitted"].startswith("OutOfpods (1 of 1 pods admitted)")
        other = run_bg(sb, config, "adm/one", "b", "--", "sleep", "300")
        rel_b = cgroup_rel(container_scope(one_uid, "b"), one_slice)
        wait_for(lambda: len(procs_of(sb, rel_b)) == 1, what="pod one's second container", timeout=60)
    finally:
        kill_all(one, other)


def test_run_refuses_a_pod_whose_cpu_does_not_fit(clean_sandbox, config):
    sb = clean_sandbox
    (config / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "100000"}\n'
                                      'systemReserved: {cpu: 1400m}\n')
    (config / "pods" / "two.yaml").write_text(_pod("two", "400m"))
    one_slice, one_uid = _burstable("one")
    one = run_bg(sb, config, "adm/one", "a", "--", "sleep", "300")
    try:
        rel = cgroup_rel(container_scope(one_uid, "a"), one_slice)
        wait_for(lambda: len(procs_of(sb, rel)) == 1, what="pod one's process in its scope", timeout=60)
        r = _run(sb, config, "adm/two", "a", "--", "true")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "pod adm/two is not admitted: OutOfcpu (90m of 600m CPU left): Node " \
            "didn't have enough resource: cpu, requested: 410, used: 510, capacity: 600" in r.stderr, r.stderr
        assert one.poll() is None
    finally:
        kill_all(one)


def test_sync_says_what_plan_says_is_not_applied_or_not_admitted(clean_sandbox, config):
    """sync's warnings carry plan's lines: a not-applicable field set, a pod over maxPods."""
    sb = clean_sandbox
    (config / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "100000"}\nmaxPods: 1\n'
                                      "clusterDNS: [10.96.0.10]\n")
    report = sync_json(sb, config)
    assert "node.yaml: clusterDNS is not applied: podman sets up the pods' network" in report["warnings"]
    assert "pod adm/two would not be admitted: OutOfpods (1 of 1 pods admitted)" in report["warnings"]
