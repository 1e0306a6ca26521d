"""The warm no-op proof (sdqos.reconcile.noop) against a real systemd: a sync after a sync that
found nothing to do answers from the stamp, and everything a full sync would act on still takes
the full path — checked where the kernel and systemd hold the result.

Which path a sync took is read from the stamp: the full path removes it first and writes a new
one (taken anew) only when it found nothing to do; the proof leaves it as it is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

from sdqos import sandbox as sbx

from ..sbhelpers import cgroup_rel, copy_config, kernel, sdqos_in, sync_json, wait_for
from .test_podman_sandbox import inspect, podman, podman_env  # noqa: F401  (podman_env: the real podman's fixture)

STAMP = "/run/sdqos/noop.json"
WEB = "kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"
DB = "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"
NOTHING = ([], [], [], [], [])


def stamp_taken(sb) -> float | None:
    """When the stamp was written (None: there is none)."""
    r = sbx.run(sb, ["cat", STAMP])
    return json.loads(r.stdout)["taken"] if r.returncode == 0 else None


def changes(report: dict) -> tuple:
    return (report["created"], report["updated"], report["removed"], report["drift"], report["errors"])


def stamped(sb, config) -> tuple[dict, int]:
    """Synced, then synced again with nothing to do: the stamp is there."""
    sync_json(sb, config)
    second = sync_json(sb, config)
    assert changes(second) == NOTHING and second["warnings"] == []
    taken = stamp_taken(sb)
    assert taken is not None, "a sync that found nothing to do leaves a stamp"
    return second, taken


def test_a_warm_no_op_is_answered_from_the_stamp_as_the_full_sync_answers(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    full, taken = stamped(sb, config)
    record = json.loads(sbx.run(sb, ["cat", "/run/sdqos/last-sync.json"], check=True).stdout)
    fast = sync_json(sb, config)
    assert stamp_taken(sb) == taken  # the proof, not the full path
    assert {k: v for k, v in fast.items() if k not in ("durationSeconds", "dbusCalls")} == \
        {k: v for k, v in full.items() if k not in ("durationSeconds", "dbusCalls")}
    assert fast["dbusCalls"] <= full["dbusCalls"] + 1  # version, the listing, the node and tiers
    again = json.loads(sbx.run(sb, ["cat", "/run/sdqos/last-sync.json"], check=True).stdout)
    assert again["timestamp"] > record["timestamp"] and again["success"]
    assert {k: v for k, v in again.items() if k not in ("timestamp", "lastSuccess", "durationSeconds", "dbusCalls")} \
        == {k: v for k, v in record.items() if k not in ("timestamp", "lastSuccess", "durationSeconds", "dbusCalls")}
    text = sdqos_in(sb, "sync", "--config", str(config))
    assert text.returncode == 0
    assert re.fullmatch(r"nothing to do: 8 units already match the plan\n\(\d+\.\d\ds, \d D-Bus calls\)\n", text.stdout)
    quiet = sdqos_in(sb, "sync", "--config", str(config), "--quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert stamp_taken(sb) == taken
    # a dry run writes nothing, the stamp neither; --verbose (each unit named) takes the full path
    assert sdqos_in(sb, "sync", "--config", str(config), "--dry-run").returncode == 0
    assert stamp_taken(sb) == taken
    verbose = sdqos_in(sb, "sync", "--config", str(config), "--verbose")
    assert verbose.returncode == 0 and WEB in verbose.stdout
    assert stamp_taken(sb) is None


def test_a_kernel_value_written_behind_systemds_back_is_still_restored(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    stamped(sb, config)
    rel = cgroup_rel(WEB)
    (sb.cgroup_path("cpu") / rel / "cpu.shares").write_text("77")
    report = sync_json(sb, config)
    assert report["drift"] == [{"unit": WEB, "changes": {}, "kernel": {"cpu/cpu.shares": [77, 512]}}]
    assert kernel(sb, "cpu", rel, "cpu.shares") == 512
    assert stamp_taken(sb) is None  # the full path took it; it changed something, so no stamp
    sync_json(sb, config)
    assert stamp_taken(sb) is not None


def test_a_tier_property_changed_in_systemd_is_still_restored(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    stamped(sb, config)
    sbx.run(sb, ["systemctl", "set-property", "--runtime", "kubepods-burstable.slice", "CPUShares=100"], check=True)
    report = sync_json(sb, config)
    assert report["drift"] == [{"unit": "kubepods-burstable.slice", "changes": {"CPUShares": [100, 1228]}}]
    assert kernel(sb, "cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares") == 1228


def test_a_pod_file_edit_and_a_node_yaml_edit_take_the_full_path(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    stamped(sb, config)
    path = config / "pods" / "db.yaml"
    path.write_text(path.read_text().replace('limits: {cpu: "2", memory: 4Gi}', 'limits: {cpu: "3", memory: 6Gi}'))
    report = sync_json(sb, config)
    assert [u["unit"] for u in report["updated"]] == [DB] or DB in [u["unit"] for u in report["updated"]]
    assert kernel(sb, "memory", cgroup_rel(DB), "memory.limit_in_bytes") == 6 * 2**30
    stamped(sb, config)
    node = config / "node.yaml"
    before = kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes")
    text = node.read_text()
    assert "memory: 1Gi" in text, text  # systemReserved memory in examples/node.yaml
    node.write_text(text.replace("memory: 1Gi", "memory: 2Gi", 1))
    report = sync_json(sb, config)
    assert "kubepods.slice" in [u["unit"] for u in report["updated"]]
    assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == before - 2**30
    # the same bytes written again (a new mtime): the full path, which finds nothing, and stamps again
    taken = stamped(sb, config)[1]
    node.write_text(node.read_text())
    assert changes(sync_json(sb, config)) == NOTHING
    assert stamp_taken(sb) not in (None, taken)


def test_a_scope_appearing_in_machine_slice_or_in_a_pod_slice_takes_the_full_path(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    stamped(sb, config)
    procs = []
    try:
        args = ["systemd-run", "--scope", "--slice", "machine.slice", "--unit", "stranger", "sleep", "600"]
        procs.append(sbx.popen(sb, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        wait_for(lambda: sb.systemctl("is-active", "stranger.scope").stdout.strip() == "active", what="stranger")
        report = sync_json(sb, config)
        assert stamp_taken(sb) is None  # the full path, and nothing runs-free to stamp
        assert report["errors"] == []
        record = json.loads(sbx.run(sb, ["cat", "/run/sdqos/last-sync.json"], check=True).stdout)
        assert [m["unit"] for m in record["machines"]] == ["stranger.scope"]  # counted in the node budget
    finally:
        sb.systemctl("stop", "stranger.scope")
        for p in procs:
            p.kill()
            p.wait(10)
    stamped(sb, config)
    try:  # a process in a pod slice (what a podman container's scope is) needs binding and OOM scores
        args = ["systemd-run", "--scope", "--slice", WEB, "--unit", "visitor", "sleep", "600"]
        procs = [sbx.popen(sb, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)]
        wait_for(lambda: sb.systemctl("is-active", "visitor.scope").stdout.strip() == "active", what="visitor")
        report = sync_json(sb, config, expect=None)
        assert stamp_taken(sb) is None
        assert "visitor.scope" in report["foreign"] or report["warnings"] or report["errors"], report
    finally:
        sb.systemctl("stop", "visitor.scope")
        for p in procs:
            p.kill()
            p.wait(10)


def test_a_foreign_slice_a_stopped_pod_and_a_run_dir_record_take_the_full_path(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    stamped(sb, config)
    sbx.run(sb, ["systemctl", "stop", DB], check=True)  # as an eviction stops a pod's slice
    report = sync_json(sb, config)
    assert report["created"] == [DB] and sb.systemctl("is-active", DB).stdout.strip() == "active"
    taken = stamped(sb, config)[1]
    # any record in the run dir (an eviction's, say) is an input: the full path reads it
    sbx.run(sb, ["sh", "-c", "umask 077; echo '{\"evicted\": []}' > /run/sdqos/evicted.json"], check=True)
    assert changes(sync_json(sb, config)) == NOTHING
    assert stamp_taken(sb) not in (None, taken)
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"], check=True)
    stamped(sb, config)
    # a failed sync leaves no stamp: a pod file that is not valid YAML is an error every time
    (config / "pods" / "broken.yaml").write_text("kind: Pod\nmetadata: [\n")
    assert sync_json(sb, config, expect=2)["invalid"]
    assert stamp_taken(sb) is None
    assert sync_json(sb, config, expect=2)["invalid"]
    assert stamp_taken(sb) is None


def test_the_stamp_is_not_taken_over_by_another_config_or_options(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    _, taken = stamped(sb, config)
    assert changes(sync_json(sb, config, "--adopt-existing")) == NOTHING
    assert stamp_taken(sb) not in (None, taken)
    taken = stamp_taken(sb)
    r = sdqos_in(sb, "sync", "--config", str(config), "-o", "json", env={"SDQOS_PODMAN": "/nonexistent"})
    assert r.returncode == 0 and stamp_taken(sb) not in (None, taken)
    os.utime(config / "pods", ns=(time.time_ns(), time.time_ns()))  # a directory touched: an entry came or went
    taken = stamp_taken(sb)
    assert changes(sync_json(sb, config)) == NOTHING
    assert stamp_taken(sb) not in (None, taken)


def test_a_podman_container_started_after_a_stamp_is_found_and_tuned(podman_env):
    """Real podman: the stamp was taken with no container running; a container started since in a
    pod slice makes the slice populated, so the next sync takes the full path, asks podman and
    tunes the container's scope."""
    sb, env, config = podman_env
    sync_json(sb, config, env=env)
    assert changes(sync_json(sb, config, env=env)) == NOTHING
    assert stamp_taken(sb) is not None
    pod = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]
    cid = podman(sb, env, "run", "--detach", "--name=late", f"--cgroup-parent={pod['slice']}",
                 f"--label=io.kubernetes.pod.uid={pod['uid']}", "--label=io.kubernetes.container.name=nginx",
                 "localhost/bb", "/bin/sleep", "100000").strip()
    try:
        report = sync_json(sb, config, env=env)
        assert f"libpod-{cid}.scope" in {u["unit"] for u in report["updated"]}, json.dumps(report)
        assert stamp_taken(sb) is None
        nginx = next(c for c in pod["containers"] if c["name"] == "nginx")
        pid = inspect(sb, env, "late")["State"]["Pid"]
        assert int(sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"]).stdout) == nginx["oomScoreAdj"]
    finally:
        podman(sb, env, "rm", "--force", "--time", "0", "late")
