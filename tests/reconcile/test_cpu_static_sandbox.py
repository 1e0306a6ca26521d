"""cpuManagerPolicy static on cgroup v1, against the sandbox's systemd and the real kernel: `sdqos
run` of a Guaranteed 1-CPU pod gets CPU 1 (reservedSystemCPUs "0") as its process's affinity and
kubelet's state file in the run dir, and its scope and pod slice have no CFS quota as soon as run
has made them (the CPUs are allocated before the plan); `sdqos adopt` allocates them the same way;
another pod runs on the shared pool; a sync keeps the file and
restores a changed affinity and drops the CFS quota of the pinned container and its pod; a pod that cannot have its CPUs is refused in one line (exit 2);
removing the pod releases its CPU. The host has 2 CPUs: `capacity: {cpu: "4"}` lets the second
Guaranteed pod pass kubelet's allocatable check, so that the CPU manager is what refuses it."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from sdqos.kube import cpuset

from ..cpufixtures import needs_cpus_0_and_1, one_pid, pod_yaml
from ..sbhelpers import cgroup_rel, cpu_state, sdqos_in, static_config, sync_json, wait_for
from .test_scopes_sandbox import kill_all, procs_of, run_bg

pytestmark = needs_cpus_0_and_1


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = static_config(tmp_path / "cfg")
    (d / "pods" / "gu.yaml").write_text(pod_yaml("gu", "1", True))
    (d / "pods" / "gu2.yaml").write_text(pod_yaml("gu2", "1", True))
    (d / "pods" / "bu.yaml").write_text(pod_yaml("bu", "100m", False))
    return d


def _quota(sb, rel: str) -> tuple[int, int]:
    """cpu.cfs_quota_us of a container's scope and of its pod slice, from the kernel."""
    cpu = Path(sb.cgroup_path("cpu")) / rel
    return int((cpu / "cpu.cfs_quota_us").read_text()), int((cpu.parent / "cpu.cfs_quota_us").read_text())


def test_static_policy_pins_keeps_refuses_and_releases(clean_sandbox, config):
    sb = clean_sandbox
    gu_uid, bu_uid = stable_uid("st", "gu"), stable_uid("st", "bu")
    gu_rel = cgroup_rel(container_scope(gu_uid, "app"), f"kubepods-pod{gu_uid.replace('-', '_')}.slice")
    bu_rel = cgroup_rel(container_scope(bu_uid, "app"), f"kubepods-burstable-pod{bu_uid.replace('-', '_')}.slice")
    gu = run_bg(sb, config, "st/gu", "app", "--", "sleep", "300")
    bu = None
    try:
        gu_pid = one_pid(sb, gu_rel)
        assert os.sched_getaffinity(gu_pid) == {1}
        # DisableCPUQuotaWithExclusiveCPUs, at once: run allocated the CPUs before it planned the scope
        assert _quota(sb, gu_rel) == (-1, -1)
        st = cpu_state(sb)
        assert st["policyName"] == "static" and st["defaultCpuSet"] == "0" and st["entries"] == {gu_uid: {"app": "1"}}
        bu = run_bg(sb, config, "st/bu", "app", "--", "sleep", "300")
        assert os.sched_getaffinity(one_pid(sb, bu_rel)) == {0}  # the shared pool (the reserved CPU is in it)

        r = sbx.run(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "st/gu2", "app", "--", "true"],
                    timeout=120)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "pod st/gu2: container app needs 1 exclusive CPUs (cpuManagerPolicy " \
            "static), CPUs free: 0 (none): not enough cpus available to satisfy request" in r.stderr, r.stderr
        assert cpu_state(sb)["entries"] == {gu_uid: {"app": "1"}}

        os.sched_setaffinity(gu_pid, {0, 1})  # changed behind sdqos's back: the sync sets it again
        state_before = cpu_state(sb)
        dry = sync_json(sb, config, "--dry-run", expect=4)  # a dry run says so (exit 4: changes pending), sets nothing
        assert {u["unit"]: u.get("affinity") for u in dry["updated"]}.get(container_scope(gu_uid, "app")) == \
            {"cpus": "1", "threads": {"0-1": 1}}, dry
        assert os.sched_getaffinity(gu_pid) == {0, 1} and cpu_state(sb) == state_before
        report = sync_json(sb, config)
        assert any("CPU affinity" in w for w in report["warnings"]), report["warnings"]
        assert os.sched_getaffinity(gu_pid) == {1}
        # and says so: an update of the container's scope (the sync cannot tell who moved a thread)
        moved = {u["unit"]: u.get("affinity") for u in report["updated"]}
        assert moved.get(container_scope(gu_uid, "app")) == {"cpus": "1", "threads": {"0-1": 1}}, report
        m = sdqos_in(sb, "metrics", "--config", str(config), "--interval", "0")  # the last-sync record counts it
        changes = {s.labels["change"]: s.value for f in text_string_to_metric_families(m.stdout)
                   if f.name == "sdqos_sync_changes" for s in f.samples}
        assert changes["updated"] == len(report["updated"]) >= 1, changes
        again = sync_json(sb, config)
        assert again["updated"] == again["drift"] == again["errors"] == [], again
        assert cpu_state(sb)["entries"] == {gu_uid: {"app": "1"}}  # the state survives a sync
        r = sdqos_in(sb, "explain", "--config", str(config), "st/gu")  # where the CPUs lie, on this host's /sys
        siblings = Path("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list").read_text().strip()
        where = "whole core 1" if siblings == "1" else f"core {min(cpuset.parse(siblings))} (1 of {len(cpuset.parse(siblings))} threads)"
        assert r.returncode == 0 and f"exclusive: Guaranteed, 1 integer CPU, {where} (CPUs 1)" in r.stdout, r
        # DisableCPUQuotaWithExclusiveCPUs (on): no CFS quota on the container holding CPUs nor on its pod
        assert _quota(sb, gu_rel) == (-1, -1)

        os.kill(gu_pid, signal.SIGKILL)  # (gu is the sandbox's entering process; the container's is this one)
        kill_all(gu)
        (config / "pods" / "gu.yaml").unlink()
        wait_for(lambda: not procs_of(sb, gu_rel), what="gu's scope empty", timeout=60)
        sync_json(sb, config)
        st = cpu_state(sb)
        assert st.get("entries") in ({}, None) and st["defaultCpuSet"] == "0-1", st
    finally:
        kill_all(gu, bu)


def test_adopt_allocates_the_pods_cpus_and_its_scope_has_no_quota_at_once(clean_sandbox, config):
    """`sdqos adopt` of a Guaranteed pod's container: its exclusive CPU allocated as `run` does
    (state file), the adopted processes on it, and no CFS quota on the scope it made nor on the
    pod slice, before any sync."""
    sb = clean_sandbox
    gu_uid = stable_uid("st", "gu")
    gu_rel = cgroup_rel(container_scope(gu_uid, "app"), f"kubepods-pod{gu_uid.replace('-', '_')}.slice")
    outside = sbx.popen(sb, ["/bin/sh", "-c", "sleep 302 & exec sleep 303"])
    try:
        wait_for(lambda: len(sbx.run(sb, ["pgrep", "-f", "sleep 30[23]"]).stdout.split()) == 2, what="both sleeps")
        inner = sbx.run(sb, ["pgrep", "-f", "sleep 30[23]"]).stdout.split()
        r = sdqos_in(sb, "adopt", "--config", str(config), "st/gu", "app", *inner)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert r.stdout.strip().startswith(f"created {container_scope(gu_uid, 'app')} with 2 process(es)"), r.stdout
        assert cpu_state(sb)["entries"] == {gu_uid: {"app": "1"}}
        pids = procs_of(sb, gu_rel)
        assert len(pids) == 2 and all(os.sched_getaffinity(pid) == {1} for pid in pids), pids
        assert _quota(sb, gu_rel) == (-1, -1)
    finally:
        kill_all(outside)
        sbx.run(sb, ["pkill", "-f", "sleep 30[23]"])
