"""Container scopes against the sandbox, with real processes: `sdqos run`, `sdqos adopt`, OOM
scores, scopes made by other tools, a real OOM kill, removal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import active_state, cgroup_rel, kernel, pids_below, sdqos_in, sync_json, wait_for

NODE = """\
capacity: {cpu: "2", memory: 4Gi, pids: "100000"}
"""
BURST = """\
apiVersion: v1
kind: Pod
metadata: {name: burst, namespace: t}
spec:
  containers:
  - name: app
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 500m, memory: 64Mi}
  - name: side
    resources:
      requests: {cpu: 50m, memory: 16Mi}
"""
GUAR = """\
apiVersion: v1
kind: Pod
metadata: {name: guar, namespace: t}
spec:
  containers:
  - name: db
    resources:
      limits: {cpu: 200m, memory: 64Mi}
"""
BURST_SLICE = f"kubepods-burstable-pod{stable_uid('t', 'burst').replace('-', '_')}.slice"
GUAR_SLICE = f"kubepods-pod{stable_uid('t', 'guar').replace('-', '_')}.slice"
APP_SCOPE = container_scope(stable_uid("t", "burst"), "app")
DB_SCOPE = container_scope(stable_uid("t", "guar"), "db")
# 1000 - 1000 × 32Mi / 4Gi = 993 (Burstable app); Guaranteed -997.
APP_OOM = 1000 - 1000 * 32 * 2**20 // (4 * 2**30)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    (d / "pods" / "burst.yaml").write_text(BURST)
    (d / "pods" / "guar.yaml").write_text(GUAR)
    return d


def run_bg(sb, config, *args, extra=()):
    """`sdqos run ARGS` inside the sandbox, in the background (it becomes the command)."""
    return sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), *extra, *args],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def procs_of(sb, rel: str) -> list[int]:
    """Host PIDs in a cgroup (and below), from the kernel's own list."""
    return pids_below(sb.cgroup_path("pids") / rel)


def oom(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


def can_lower_oom() -> bool:
    """Whether this host lets root lower oom_score_adj (CAP_SYS_RESOURCE); these VMs do not."""
    try:
        with open("/proc/self/oom_score_adj", "r+") as fh:
            old = fh.read().strip()
            fh.seek(0)
            fh.write("-1")
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write(old)
        return True
    except OSError:
        return False


def kill_all(*procs):
    for p in procs:
        if p and p.poll() is None:
            p.kill()
            p.wait()


def test_run_puts_process_in_pod_scope_with_values_and_oom(clean_sandbox, config):
    sb = clean_sandbox
    p = run_bg(sb, config, "t/burst", "app", "--", "/bin/sh", "-c", "sleep 300 & exec sleep 301")
    try:
        rel = cgroup_rel(APP_SCOPE, BURST_SLICE)
        pids = wait_for(lambda: len(procs_of(sb, rel)) == 2 and procs_of(sb, rel), what="both processes in the scope")
        for pid in pids:
            cg = Path(f"/proc/{pid}/cgroup").read_text()
            assert f"/kubepods.slice/kubepods-burstable.slice/{BURST_SLICE}/{APP_SCOPE}" in cg
            assert oom(pid) == APP_OOM  # the forked child inherited it
        assert kernel(sb, "cpu", rel, "cpu.shares") == 102
        assert kernel(sb, "cpu", rel, "cpu.cfs_quota_us") == 50_000
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == 64 * 2**20
        # The pod slice and its tiers were created on the way.
        assert active_state(sb, BURST_SLICE) == "active"
        assert kernel(sb, "memory", cgroup_rel(BURST_SLICE), "memory.limit_in_bytes") > 2**62  # `side` has no limit
        # A second instance is refused; --replace stops the first.
        second = sdqos_in(sb, "run", "--config", str(config), "t/burst", "app", "--", "true")
        assert second.returncode == 1
        assert f"pod t/burst container app already runs in {APP_SCOPE}; pass --replace to stop it first" in second.stderr
        p2 = run_bg(sb, config, "t/burst", "app", "--", "sleep", "302", extra=("--replace",))
        try:
            assert p.wait(timeout=20) == -signal.SIGKILL or p.returncode is not None
            wait_for(lambda: procs_of(sb, rel) and all(pid not in pids for pid in procs_of(sb, rel)), what="replacement")
        finally:
            kill_all(p2)
    finally:
        kill_all(p)


def test_run_passes_exit_status_and_argv_untouched(clean_sandbox, config):
    sb = clean_sandbox
    r = sdqos_in(sb, "run", "--config", str(config), "t/burst", "side", "--",
                 "/bin/sh", "-c", 'printf "%s|" "$@"; exit 7', "sh", "a b", "$HOME", "*", "--config")
    assert r.returncode == 7
    assert r.stdout == "a b|$HOME|*|--config|"


def test_run_takes_its_options_after_the_pod_and_container_as_every_command(clean_sandbox, config):
    """sdqos's options anywhere before --, the command's after it (`--config` after the
    positionals was once taken for part of the command: "/etc/sdqos does not exist")."""
    sb = clean_sandbox
    r = sdqos_in(sb, "run", "t/burst", "side", "--config", str(config), "--", "/bin/sh", "-c", 'printf "%s|" "$@"',
                 "sh", "--config", "x", "--")
    assert (r.returncode, r.stdout) == (0, "--config|x|--|"), r.stderr


def test_negative_oom_score_is_set_or_warned(clean_sandbox, config):
    sb = clean_sandbox
    p = run_bg(sb, config, "t/guar", "db", "--", "sleep", "300")
    try:
        rel = cgroup_rel(DB_SCOPE, GUAR_SLICE)
        (pid,) = wait_for(lambda: procs_of(sb, rel), what="db process")
        if can_lower_oom():
            assert oom(pid) == -997
        else:
            wait_for(lambda: p.stderr is not None, what="stderr")
            assert oom(pid) == 0  # kept, not crashed
            err = p.stderr.readline()
            assert "warning: pod t/guar container db: the kernel refused oom_score_adj -997" in err
            assert "CAP_SYS_RESOURCE" in err
            assert p.poll() is None  # the command runs anyway
    finally:
        kill_all(p)


def test_adopt_moves_a_process_started_outside(clean_sandbox, config):
    sb = clean_sandbox
    outside = sbx.popen(sb, ["/bin/sh", "-c", "sleep 300 & exec sleep 301"])
    try:
        # Its PIDs as seen inside the sandbox (sdqos adopt runs there, like systemd).
        time.sleep(0.3)
        inner = sbx.run(sb, ["pgrep", "-f", "sleep 30[01]"], check=True).stdout.split()
        r = sdqos_in(sb, "adopt", "--config", str(config), "t/burst", "app", *inner)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"created {APP_SCOPE} with 2 process(es) of pod t/burst container app"
        rel = cgroup_rel(APP_SCOPE, BURST_SLICE)
        pids = procs_of(sb, rel)
        assert len(pids) == 2 and all(oom(pid) == APP_OOM for pid in pids)
    finally:
        kill_all(outside)
        sbx.run(sb, ["pkill", "-f", "sleep 30[01]"])


def test_limit_change_reaches_the_scope_and_new_children_get_oom(clean_sandbox, config):
    sb = clean_sandbox
    p = run_bg(sb, config, "t/burst", "app", "--", "sleep", "300")
    try:
        rel = cgroup_rel(APP_SCOPE, BURST_SLICE)
        (pid,) = wait_for(lambda: procs_of(sb, rel), what="app process")
        sync_json(sb, config)
        path = config / "pods" / "burst.yaml"
        path.write_text(path.read_text().replace("limits: {cpu: 500m, memory: 64Mi}", "limits: {cpu: 300m, memory: 96Mi}"))
        # Someone resets the OOM score behind sdqos' back; sync puts it back.
        Path(f"/proc/{pid}/oom_score_adj").write_text("500")
        report = sync_json(sb, config)
        changes = {u["unit"]: u["changes"] for u in report["updated"]}
        assert changes[APP_SCOPE]["CPUQuotaPerSecUSec"] == [500_000, 300_000]
        assert changes[APP_SCOPE]["MemoryLimit"] == [64 * 2**20, 96 * 2**20]
        assert kernel(sb, "cpu", rel, "cpu.cfs_quota_us") == 30_000
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == 96 * 2**20
        assert oom(pid) == APP_OOM and report["oomAdjusted"] == 1
    finally:
        kill_all(p)


def test_memory_hog_is_oom_killed_by_its_limit_while_guaranteed_survives(clean_sandbox, config):
    sb = clean_sandbox
    keeper = run_bg(sb, config, "t/guar", "db", "--", "sleep", "300")
    hog_code = "import time\nx=[]\nwhile True:\n    x.append(bytearray(8*2**20))\n    time.sleep(0.001)\n"
    try:
        wait_for(lambda: procs_of(sb, cgroup_rel(DB_SCOPE, GUAR_SLICE)), what="guaranteed process")
        hog = run_bg(sb, config, "t/burst", "app", "--", sys.executable, "-c", hog_code)
        assert hog.wait(timeout=60) in (-signal.SIGKILL, 128 + signal.SIGKILL)
        assert keeper.poll() is None
        # The scope was collected (CollectMode=inactive-or-failed), the name is free again.
        wait_for(lambda: active_state(sb, APP_SCOPE) in ("inactive", ""), what="scope collected")
    finally:
        kill_all(keeper)


def test_foreign_scopes_matched_or_reported_never_stopped(clean_sandbox, config):
    sb = clean_sandbox
    sync_json(sb, config)
    # As podman/runc with --cgroup-parent would: a scope in the pod slice, named by container id.
    starter = sbx.popen(sb, ["systemd-run", "--scope", "--unit=libpod-0a1b2c.scope", f"--slice={BURST_SLICE}",
                             "--description=libcrun container app", "sleep", "300"])
    other = sbx.popen(sb, ["systemd-run", "--scope", "--unit=mystery-1.scope", f"--slice={BURST_SLICE}", "sleep", "300"])
    try:
        wait_for(lambda: active_state(sb, "libpod-0a1b2c.scope") == "active" and active_state(sb, "mystery-1.scope") == "active",
                 what="foreign scopes")
        report = sync_json(sb, config)
        changes = {u["unit"]: u["changes"] for u in report["updated"]}
        assert "libpod-0a1b2c.scope" in changes  # matched to container `app` by its Description
        rel = cgroup_rel("libpod-0a1b2c.scope", BURST_SLICE)
        assert kernel(sb, "cpu", rel, "cpu.cfs_quota_us") == 50_000
        assert all(oom(pid) == APP_OOM for pid in procs_of(sb, rel))
        assert "mystery-1.scope" in report["foreign"]
        assert active_state(sb, "mystery-1.scope") == "active"
        again = sync_json(sb, config)
        assert again["updated"] == [] and again["oomAdjusted"] == 0
    finally:
        kill_all(starter, other)


def test_removing_a_pod_leaves_no_scope_and_no_process(clean_sandbox, config):
    sb = clean_sandbox
    p = run_bg(sb, config, "t/burst", "app", "--", "/bin/sh", "-c", "sleep 300 & exec sleep 301")
    try:
        rel = cgroup_rel(APP_SCOPE, BURST_SLICE)
        pids = wait_for(lambda: len(procs_of(sb, rel)) == 2 and procs_of(sb, rel), what="processes")
        sync_json(sb, config)
        (config / "pods" / "burst.yaml").unlink()
        report = sync_json(sb, config)
        assert set(report["removed"]) >= {BURST_SLICE}
        assert active_state(sb, APP_SCOPE) in ("inactive", "")
        assert active_state(sb, BURST_SLICE) == "inactive"
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]
                                 for pid in pids), what="processes gone")
        assert not (sb.cgroup_path("cpu") / cgroup_rel(BURST_SLICE)).exists()
    finally:
        kill_all(p)


def test_a_scope_that_stops_matching_gets_its_values_reset(clean_sandbox, config):
    """A glob in sdqos.io/scopes tunes a runtime's scope; when it no longer matches (the annotation
    changed), what sdqos set there goes back to systemd's defaults, once."""
    sb = clean_sandbox
    pod = config / "pods" / "burst.yaml"
    pod.write_text(BURST.replace("metadata: {name: burst, namespace: t}",
                                 'metadata: {name: burst, namespace: t, annotations: {sdqos.io/scopes: "app=thing-*.scope"}}'))
    sync_json(sb, config)
    starter = sbx.popen(sb, ["systemd-run", "--scope", "--unit=thing-7.scope", f"--slice={BURST_SLICE}", "sleep", "300"])
    try:
        wait_for(lambda: active_state(sb, "thing-7.scope") == "active", what="the runtime's scope")
        report = sync_json(sb, config)
        assert "thing-7.scope" in {u["unit"] for u in report["updated"]}
        rel = cgroup_rel("thing-7.scope", BURST_SLICE)
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == 64 * 2**20
        pod.write_text(BURST)  # the annotation is gone: nothing names thing-7.scope any more
        report = sync_json(sb, config)
        assert any(w.startswith("thing-7.scope no longer matches a container: the values sdqos set on it were reset")
                   for w in report["warnings"]), report["warnings"]
        assert kernel(sb, "memory", rel, "memory.limit_in_bytes") > 2**40
        shown = sbx.run(sb, ["systemctl", "show", "thing-7.scope", "-p", "CPUQuotaPerSecUSec", "-p", "MemoryLimit"]).stdout
        assert shown.split() == ["CPUQuotaPerSecUSec=infinity", "MemoryLimit=infinity"]  # (no cpu cgroup needed any more)
        assert active_state(sb, "thing-7.scope") == "active"  # reset, never stopped
        again = sync_json(sb, config)
        assert again["updated"] == [] and not any("no longer matches" in w for w in again["warnings"])
    finally:
        kill_all(starter)


def test_a_limit_the_kernel_refuses_is_an_error_not_an_update(clean_sandbox, config):
    """Lowering a running container's memory limit below what it holds: on cgroup v1 the kernel
    refuses (EBUSY) and systemd keeps the value anyway. sync reads the cgroup back and says so."""
    sb = clean_sandbox
    hog = "b = b'x' * (40 << 20); import time; time.sleep(300)"  # 40 MiB it really touches
    p = run_bg(sb, config, "t/burst", "app", "--", sys.executable, "-c", hog)
    try:
        rel = cgroup_rel(APP_SCOPE, BURST_SLICE)
        def held() -> int:
            try:
                return kernel(sb, "memory", rel, "memory.usage_in_bytes")
            except OSError:
                return 0
        wait_for(lambda: held() > 40 << 20, what="40 MiB held")
        (config / "pods" / "burst.yaml").write_text(BURST.replace(
            "requests: {cpu: 100m, memory: 32Mi}\n      limits: {cpu: 500m, memory: 64Mi}",
            "requests: {cpu: 100m, memory: 16Mi}\n      limits: {cpu: 500m, memory: 16Mi}"))
        for attempt in range(2):  # and the next sync says it again, not an empty "drift … restored"
            r = sync_json(sb, config, expect=1)
            assert APP_SCOPE not in [u["unit"] for u in r["updated"]] and r["drift"] == []
            assert [e for e in r["errors"] if e.startswith(f"{APP_SCOPE}: the kernel refused the new value "
                                                           "(memory.limit_in_bytes wanted 16 MiB, holds 64 MiB)")], r
            assert kernel(sb, "memory", rel, "memory.limit_in_bytes") == 64 << 20
            assert p.poll() is None
    finally:
        kill_all(p)
