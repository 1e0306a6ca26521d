"""`sdqos sync` against a real systemd (the sandbox), checked where the kernel holds the values
(cpu.shares, cpu.cfs_quota_us, cpu.cfs_period_us, memory.limit_in_bytes, pids.max) and through
systemd's own view of the units."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from sdqos import sandbox as sbx

from ..sbhelpers import (
    active_state,
    all_units_state,
    cgroup_rel,
    copy_config,
    dbus_props,
    expected_kernel,
    kernel,
    kernel_values,
    plan_json,
    remove_sync_units,
    sdqos_in,
    show,
    sync_json,
    wait_for,
)

BACKENDS = ["dbus-fast", "dbus-next"]


def planned_slices(config):
    return {u["name"]: u for u in plan_json(config)["units"] if u["name"].endswith(".slice")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_sync_puts_kubelet_values_in_the_kernel(clean_sandbox, tmp_path, backend):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    report = sync_json(sb, config, env={"SDQOS_DBUS_BACKEND": backend})
    slices = planned_slices(config)
    assert sorted(report["created"]) == sorted(slices)
    assert report["errors"] == [] and report["disconnects"] == 0
    for name, u in slices.items():
        rel = cgroup_rel(name)
        assert kernel_values(sb, rel) == expected_kernel(u["properties"]), name
        iface_props = dbus_props(sb, name, "CPUShares", "CPUQuotaPerSecUSec", "MemoryLimit", "TasksMax")
        assert iface_props == {k: u["properties"][k] for k in iface_props}, name
        assert show(sb, name, "Description")["Description"] == u["description"]
    # Spot-check the numbers themselves (examples/: 7 CPU, 14 GiB allocatable).
    assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == 7168
    assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 14 * 2**30
    assert kernel(sb, "cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares") == 1228
    web = cgroup_rel("kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice")
    assert kernel(sb, "cpu", web, "cpu.cfs_quota_us") == 100_000 and kernel(sb, "cpu", web, "cpu.shares") == 512


def test_second_sync_is_a_no_op_and_reload_reexec_change_nothing(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    before = {n: kernel_values(sb, cgroup_rel(n)) for n in planned_slices(config)}
    second = sync_json(sb, config)
    assert (second["created"], second["updated"], second["removed"], second["drift"]) == ([], [], [], [])
    text = sdqos_in(sb, "sync", "--config", str(config))
    assert text.stdout.startswith("nothing to do: 8 units already match the plan")
    for cmd in ("daemon-reload", "daemon-reexec"):
        sbx.run(sb, ["systemctl", cmd], check=True)
        after = {n: kernel_values(sb, cgroup_rel(n)) for n in before}
        assert after == before, cmd
        again = sync_json(sb, config)
        assert (again["created"], again["updated"], again["drift"]) == ([], [], []), cmd


def test_sync_uses_few_dbus_calls(clean_sandbox, tmp_path):
    """Live state is read with one list call plus one read per unit, not one call per property."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    warm = sync_json(sb, config)
    assert warm["dbusCalls"] <= 1 + len(warm["unchanged"]) + 1


def test_removing_a_pod_removes_its_slice(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    db = "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"
    assert active_state(sb, db) == "active"
    (config / "pods" / "db.yaml").unlink()
    report = sync_json(sb, config)
    assert report["removed"] == [db]
    assert active_state(sb, db) == "inactive"
    assert not (sb.cgroup_path("cpu") / cgroup_rel(db)).exists()
    # The node's Guaranteed requests went away, so qosReserved gives Burstable more memory.
    assert {u["unit"] for u in report["updated"]} == {"kubepods-burstable.slice", "kubepods-besteffort.slice"}


def test_changing_limits_updates_in_place(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    db = "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"
    invocation = show(sb, db, "InvocationID")["InvocationID"]
    path = config / "pods" / "db.yaml"
    path.write_text(path.read_text().replace('limits: {cpu: "2", memory: 4Gi}', 'limits: {cpu: "3", memory: 6Gi}'))
    report = sync_json(sb, config)
    changes = {u["unit"]: u["changes"] for u in report["updated"]}
    assert changes[db] == {"CPUShares": [2048, 3072], "CPUQuotaPerSecUSec": [2_000_000, 3_000_000],
                           "MemoryLimit": [4 * 2**30, 6 * 2**30]}
    assert report["created"] == [] and report["removed"] == [] and report["drift"] == []
    assert show(sb, db, "InvocationID")["InvocationID"] == invocation  # same unit, not recreated
    assert kernel_values(sb, cgroup_rel(db)) == {
        "cpu.shares": 3072, "cpu.cfs_quota_us": 300_000, "cpu.cfs_period_us": 100_000,
        "memory.limit_in_bytes": 6 * 2**30, "pids.max": 4096,
    }


def test_a_pod_moved_to_another_namespace_keeps_its_unit_with_a_new_description(clean_sandbox, tmp_path):
    """Same uid, same slice: only its Description (who it is for) follows the pod."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    db = "kubepods-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55.slice"
    invocation = show(sb, db, "InvocationID")["InvocationID"]
    assert show(sb, db, "Description")["Description"] == "sdqos pod shop/db (Guaranteed)"
    path = config / "pods" / "db.yaml"
    text = path.read_text()
    assert "namespace: shop" in text
    path.write_text(text.replace("namespace: shop", "namespace: store"))
    report = sync_json(sb, config)
    assert [u["unit"] for u in report["updated"]] == [db]
    assert report["created"] == [] and report["removed"] == []
    assert show(sb, db, "Description")["Description"] == "sdqos pod store/db (Guaranteed)"
    assert show(sb, db, "InvocationID")["InvocationID"] == invocation  # not recreated
    assert sync_json(sb, config)["updated"] == []  # and then it matches


def test_drift_is_restored_and_reported(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    sbx.run(sb, ["systemctl", "set-property", "--runtime", "kubepods-burstable.slice", "CPUShares=100", "MemoryLimit=1G"], check=True)
    assert kernel(sb, "cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares") == 100
    report = sync_json(sb, config)
    assert report["drift"] == [{"unit": "kubepods-burstable.slice",
                                "changes": {"CPUShares": [100, 1228], "MemoryLimit": [2**30, 12 * 2**30]}}]
    assert kernel(sb, "cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares") == 1228
    assert kernel(sb, "memory", "kubepods.slice/kubepods-burstable.slice", "memory.limit_in_bytes") == 12 * 2**30
    text = sdqos_in(sb, "sync", "--config", str(config))
    assert "nothing to do" in text.stdout


def test_broken_pod_file_changes_nothing(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    before = all_units_state(sb)
    (config / "pods" / "more.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: api\n  namespace: shop\n")
    (config / "pods" / "web.yaml").unlink()  # a real removal, blocked while another file is unreadable
    r = sdqos_in(sb, "sync", "--config", str(config))
    assert r.returncode == 2
    assert "sdqos: error: pods/more.yaml: line" in r.stderr
    assert "pod(s) not in the config kept running: some config files could not be read" in r.stdout
    assert all_units_state(sb) == before


def test_empty_config_is_refused_without_allow_empty(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    for f in (config / "pods").iterdir():
        f.unlink()
    before = all_units_state(sb)
    r = sdqos_in(sb, "sync", "--config", str(config))
    assert r.returncode == 2
    assert "refusing to remove them all (pass --allow-empty to really do that)" in r.stderr
    assert all_units_state(sb) == before
    report = sync_json(sb, config, "--allow-empty")
    assert len(report["removed"]) == 5


def test_missing_config_dir_writes_nothing(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    before = all_units_state(sb)
    r = sdqos_in(sb, "sync", "--config", str(tmp_path / "gone"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert all_units_state(sb) == before


def test_dry_run_writes_nothing(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    report = sync_json(sb, config, "--dry-run", expect=4)  # 4: changes pending
    assert report["dryRun"] and len(report["created"]) == 8
    assert active_state(sb, "kubepods.slice") == "inactive"
    r = sdqos_in(sb, "diff", "--config", str(config))  # the same as text: each new unit with its values
    assert r.returncode == 4, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "8 would be created, 0 would be updated, 0 would be removed, 0 would be reset, 0 unchanged (dry run: nothing was changed)"
    web = next(i for i, ln in enumerate(lines) if ln.startswith("  create   kubepods-burstable-pod") and "(shop/web)" in ln)
    assert "MiB" in lines[web + 1] and "shares" in lines[web + 1]
    sync_json(sb, config)
    assert sync_json(sb, config, "--dry-run", expect=0)["created"] == []  # 0: nothing pending
    assert sdqos_in(sb, "diff", "--config", str(config)).returncode == 0


def test_install_units_stays_in_the_sandbox(clean_sandbox, tmp_path):
    """`sdqos install-units --now` with its default dir works inside the sandbox as README says, and
    the host's /etc/systemd, /run/systemd and /run/sdqos are as they were; so are they after a sync
    and after `plan` of another config as root on the host (read-only: the timer's cache is kept)."""
    from .. import hostguard

    sb = clean_sandbox
    config = copy_config(tmp_path)
    before = hostguard.snapshot()
    r = sdqos_in(sb, "install-units", "--config", str(config), "--now")
    try:
        assert r.returncode == 0, r.stderr
        assert "wrote /etc/systemd/system/sdqos-sync.timer" in r.stdout
        assert show(sb, "sdqos-sync.timer", "ActiveState", "UnitFileState") == {
            "ActiveState": "active", "UnitFileState": "enabled"}
        assert show(sb, "sdqos-sync.path", "ActiveState", "UnitFileState") == {
            "ActiveState": "active", "UnitFileState": "enabled"}
        assert sdqos_in(sb, "sync", "--config", str(config)).returncode == 0
        other = copy_config(tmp_path / "other")
        (other / "pods" / "web.yaml").unlink()
        p = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(other)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert hostguard.changes(before, hostguard.snapshot()) == []
    finally:
        remove_sync_units(sb, "/etc/systemd/system")


def test_timer_runs_sync_by_itself(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
    assert r.returncode == 0, r.stderr
    try:
        deadline = time.monotonic() + 30
        while active_state(sb, "kubepods.slice") != "active" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert active_state(sb, "kubepods.slice") == "active"
        assert show(sb, "sdqos-sync.timer", "ActiveState")["ActiveState"] == "active"
        # The service ran to completion with success.
        deadline = time.monotonic() + 30
        while show(sb, "sdqos-sync.service", "Result")["Result"] != "success" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert show(sb, "sdqos-sync.service", "Result", "ExecMainStatus") == {"Result": "success", "ExecMainStatus": "0"}
    finally:
        remove_sync_units(sb)


def test_path_unit_syncs_when_a_pod_file_changes(clean_sandbox, tmp_path):
    """With the timer stopped, only sdqos-sync.path can bring an edit into the kernel."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
    assert r.returncode == 0, r.stderr
    try:
        web = config / "pods" / "web.yaml"
        (slice_name,) = [n for n, u in planned_slices(config).items() if "sdqos pod shop/web " in u["description"]]
        rel = cgroup_rel(slice_name)
        before = planned_slices(config)[slice_name]["properties"]["MemoryLimit"]

        def limit() -> int | None:
            try:
                return kernel(sb, "memory", rel, "memory.limit_in_bytes")
            except OSError:
                return None
        wait_for(lambda: limit() == before and active_state(sb, "sdqos-sync.service") == "inactive",
                 "the timer's first sync to end", timeout=30)
        sbx.run(sb, ["systemctl", "stop", "sdqos-sync.timer"])
        assert show(sb, "sdqos-sync.path", "ActiveState")["ActiveState"] == "active"
        web.write_text(web.read_text().replace('limits: {cpu: "1", memory: 512Mi}', 'limits: {cpu: "1", memory: 600Mi}'))
        after = planned_slices(config)[slice_name]["properties"]["MemoryLimit"]
        assert after == before + 88 * 2**20  # the init container's limit decides
        try:
            wait_for(lambda: limit() == after, "the edit in the kernel", timeout=15)
        except AssertionError:
            st = sbx.run(sb, ["systemctl", "status", "--no-pager", "sdqos-sync.path", "sdqos-sync.service"])
            raise AssertionError(st.stdout) from None
    finally:
        remove_sync_units(sb)


def test_cgroupfs_write_behind_systemds_back_is_restored(clean_sandbox, tmp_path):
    """A value written straight into cgroupfs (systemd still holds the right one) is found by the
    kernel check and put back through systemd, reported as drift with the kernel's values."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    web = "kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"
    rel = cgroup_rel(web)
    (sb.cgroup_path("cpu") / rel / "cpu.shares").write_text("77")
    st = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
    row = next(u for u in json.loads(st.stdout)["units"] if u["unit"] == web)
    assert row["flags"] == ["drift"] and row["drift"] == {"cpu/cpu.shares": [77, 512]}, row
    report = sync_json(sb, config)
    assert report["drift"] == [{"unit": web, "changes": {}, "kernel": {"cpu/cpu.shares": [77, 512]}}]
    assert kernel(sb, "cpu", rel, "cpu.shares") == 512
    assert "nothing to do" in sdqos_in(sb, "sync", "--config", str(config)).stdout


def test_cgroupfs_writes_on_the_node_and_tiers_are_seen_and_restored(clean_sandbox, tmp_path):
    """kubepods.slice and the QoS tiers are read over D-Bus by every sync (their usage decides the
    qosReserved clamp), yet systemd's properties say nothing of a value written straight into
    their cgroups: the kernel files are read too. diff shows the drift, status flags it, a sync
    — even one that could prove "nothing to do" from the last no-op stamp — reports and restores
    it through systemd, and the next sync has nothing to do."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    assert "nothing to do" in sdqos_in(sb, "sync", "--config", str(config)).stdout  # (and stamps it)
    node, tier = "kubepods.slice", "kubepods.slice/kubepods-besteffort.slice"
    (sb.cgroup_path("cpu") / node / "cpu.shares").write_text("3")
    (sb.cgroup_path("memory") / node / "memory.limit_in_bytes").write_text(str(512 * 2**20))
    (sb.cgroup_path("cpu") / tier / "cpu.shares").write_text("5000")
    want = [{"unit": "kubepods.slice", "changes": {},
             "kernel": {"cpu/cpu.shares": [3, 7168], "memory/memory.limit_in_bytes": [512 * 2**20, 14 * 2**30]}},
            {"unit": "kubepods-besteffort.slice", "changes": {}, "kernel": {"cpu/cpu.shares": [5000, 2]}}]
    d = sdqos_in(sb, "diff", "--config", str(config), "-o", "json")
    assert d.returncode == 4, d.stdout + d.stderr
    assert sorted(json.loads(d.stdout)["drift"], key=lambda x: x["unit"]) == sorted(want, key=lambda x: x["unit"])
    st = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
    rows = {u["unit"]: u for u in json.loads(st.stdout)["units"]}
    assert "drift" in rows["kubepods.slice"]["flags"] and "drift" in rows["kubepods-besteffort.slice"]["flags"], st.stdout
    assert rows["kubepods.slice"]["drift"]["cpu/cpu.shares"] == [3, 7168]
    assert "drift" not in rows["kubepods-burstable.slice"]["flags"]
    report = sync_json(sb, config)
    assert sorted(report["drift"], key=lambda x: x["unit"]) == sorted(want, key=lambda x: x["unit"])
    assert kernel(sb, "cpu", node, "cpu.shares") == 7168
    assert kernel(sb, "memory", node, "memory.limit_in_bytes") == 14 * 2**30
    assert kernel(sb, "cpu", tier, "cpu.shares") == 2
    assert "nothing to do" in sdqos_in(sb, "sync", "--config", str(config)).stdout
    # The no-op proof covers the tiers' kernel files too: a write after the stamp is not missed.
    assert "nothing to do" in sdqos_in(sb, "sync", "--config", str(config)).stdout
    (sb.cgroup_path("cpu") / tier / "cpu.shares").write_text("5000")
    report = sync_json(sb, config)
    assert report["drift"] == [want[1]]
    assert kernel(sb, "cpu", tier, "cpu.shares") == 2


MANY_POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: many-{i}, namespace: load}}
spec:
  containers:
  - name: app
    resources:
{resources}
"""


def test_cold_sync_of_many_files_parsed_by_several_processes(clean_sandbox, tmp_path):
    """Enough pod files (and no parse cache for them) that sdqos.loading.fanout forks parsers on a machine
    with two CPUs or more: every pod slice gets exactly what a one-process load plans, and the
    next sync, from the cache, has nothing to do."""
    from sdqos.loading import fanout
    from sdqos.loading.configdir import load_config
    from sdqos.plan.engine import build_plan

    sb = clean_sandbox
    config = copy_config(tmp_path)
    shapes = [
        "      requests: {{cpu: {m}m, memory: {mi}Mi}}\n      limits: {{cpu: {m}m, memory: {mi}Mi}}",  # Guaranteed
        "      requests: {{cpu: {m}m, memory: {mi}Mi}}\n      limits: {{memory: {lim}Mi}}",  # Burstable
        "      {{}}",  # BestEffort
    ]
    for i in range(150):
        res = shapes[i % 3].format(m=10 + i, mi=16 + i, lim=32 + 2 * i)
        (config / "pods" / f"many-{i:03d}.yaml").write_text(MANY_POD.format(i=i, resources=res))
    n_files = len(list((config / "pods").iterdir()))
    assert fanout.workers_for(n_files, cpus=2) == 2

    cfg = load_config(config, workers=1)
    assert not cfg.errors
    slices = {u.name: u.properties for u in build_plan(cfg.node, cfg.pods, cfg.vms, "v1").units if u.name.endswith(".slice")}
    assert len(slices) == 3 + len(cfg.pods) >= 153

    report = sync_json(sb, config)
    assert sorted(report["created"]) == sorted(slices)
    assert report["errors"] == [] and report["invalid"] == []
    for name, props in slices.items():
        assert kernel_values(sb, cgroup_rel(name)) == expected_kernel(props), name
    again = sync_json(sb, config)
    assert (again["created"], again["updated"], again["removed"]) == ([], [], [])
    assert len(again["unchanged"]) == len(slices)


def test_removing_pods_reads_no_property_of_their_slices(clean_sandbox, tmp_path):
    """A pod slice that left the config is stopped on what the one list call says about it (its
    state and Description): its properties are not read. So the D-Bus calls of a sync that
    removes pods are a warm sync's plus one per write."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    warm = sync_json(sb, config)
    before = {n for n in planned_slices(config) if "-pod" in n}
    for f in ("db.yaml", "web.yaml"):
        (config / "pods" / f).unlink()
    report = sync_json(sb, config)
    gone = before - set(planned_slices(config))
    assert len(gone) >= 2 and sorted(report["removed"]) == sorted(gone)
    assert report["errors"] == []
    writes = len(report["removed"]) + len(report["updated"]) + len(report["created"])
    assert report["dbusCalls"] == warm["dbusCalls"] + writes
    for name in gone:
        assert active_state(sb, name) == "inactive"
    again = sync_json(sb, config)
    assert (again["created"], again["updated"], again["removed"]) == ([], [], [])


def test_node_change_replans_pods_whose_files_did_not_change(clean_sandbox, tmp_path):
    """The pods' plans are reused from the run dir while their files are unchanged: a node.yaml
    edit must still reach every pod (a new plan context)."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    assert sync_json(sb, config)["updated"] == []  # warm: every pod's plan reused
    node = config / "node.yaml"
    node.write_text(node.read_text().replace("podPidsLimit: 4096", "podPidsLimit: 2048"))
    report = sync_json(sb, config)
    pods = [n for n, u in planned_slices(config).items() if u["kind"] == "pod"]
    assert len(pods) >= 3
    assert sorted(u["unit"] for u in report["updated"] if "TasksMax" in u["changes"]) == sorted(pods)
    for name in pods:
        assert kernel_values(sb, cgroup_rel(name))["pids.max"] == 2048, name
    again = sync_json(sb, config)
    assert (again["created"], again["updated"], again["removed"], again["drift"]) == ([], [], [], [])


def test_quiet_sync_for_the_timer_says_each_thing_once(clean_sandbox, tmp_path):
    """`sync -q` (the shipped service): changes, a standing warning when it appears and when it
    clears, errors; nothing at all when nothing changed."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    first = sdqos_in(sb, "sync", "-q", "--config", str(config))
    assert first.returncode == 0 and first.stdout.startswith("8 created"), first.stdout
    assert sdqos_in(sb, "sync", "-q", "--config", str(config)).stdout == ""
    node = config / "node.yaml"
    node.write_text(node.read_text() + "kubeReserverd: {cpu: 1}\n")
    warned = sdqos_in(sb, "sync", "-q", "--config", str(config))
    typo = 'warning: node.yaml: unknown field "kubeReserverd" (not a KubeletConfiguration field; did you mean "kubeReserved"?): ignored'
    assert warned.returncode == 0 and typo in warned.stdout.splitlines()
    assert sdqos_in(sb, "sync", "-q", "--config", str(config)).stdout == ""  # said once
    assert typo in sdqos_in(sb, "sync", "--config", str(config)).stdout  # without -q: every time
    node.write_text(node.read_text().replace("kubeReserverd: {cpu: 1}\n", ""))
    cleared = sdqos_in(sb, "sync", "-q", "--config", str(config))
    assert cleared.stdout.strip() == "cleared: " + typo[len("warning: "):]


def test_quiet_sync_says_changed_when_a_standing_warnings_numbers_change(clean_sandbox, tmp_path):
    """Over-commit stays, its figures move: `changed:` with the new figures, no `cleared:` (which
    would read as if the over-commit went away)."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    node = config / "node.yaml"
    node.write_text(node.read_text().replace('cpu: "8"', 'cpu: "3"'))
    first = sdqos_in(sb, "sync", "-q", "--config", str(config))
    over = [ln for ln in first.stdout.splitlines() if "requests exceed node allocatable" in ln]
    assert len(over) == 1 and over[0].startswith("warning: "), first.stdout
    node.write_text(node.read_text().replace('cpu: "3"', 'cpu: "2"'))
    again = sdqos_in(sb, "sync", "-q", "--config", str(config))
    lines = [ln for ln in again.stdout.splitlines() if "requests exceed node allocatable" in ln]
    assert len(lines) == 1 and lines[0].startswith("changed: requests exceed node allocatable"), again.stdout
    assert lines[0] != over[0].replace("warning: ", "changed: ")  # the new figures
    assert "cleared:" not in again.stdout
    node.write_text(node.read_text().replace('cpu: "2"', 'cpu: "8"'))
    gone = sdqos_in(sb, "sync", "-q", "--config", str(config))
    assert [ln.split(":")[0] for ln in gone.stdout.splitlines() if "requests exceed" in ln] == ["cleared"]


def test_a_dry_run_never_says_restored(clean_sandbox, tmp_path):
    """diff shows drift live → planned and that sync would set it back; only a sync restores."""
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    sbx.run(sb, ["systemctl", "set-property", "--runtime", "kubepods-burstable.slice", "CPUShares=100"], check=True)
    r = sdqos_in(sb, "diff", "--config", str(config))
    assert r.returncode == 4
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("drift"))
    assert line.strip() == ("drift    kubepods-burstable.slice: CPUShares 100 shares → 1228 shares "
                            "(changed outside sdqos; sync would set it back)")
    assert "restored" not in r.stdout
    r = sdqos_in(sb, "sync", "--config", str(config))
    assert "(changed outside sdqos; restored)" in r.stdout


def test_the_headline_says_first_what_was_not_applied(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    web = config / "pods" / "web.yaml"
    web.write_text(web.read_text().replace("cpu: 250m", "cpu: 250x", 1))
    r = sdqos_in(sb, "sync", "--config", str(config))
    assert r.returncode == 2
    lines = r.stdout.splitlines()
    # the invalid pod's slice is kept, and still counted: its tier and the node keep their values (issue 30)
    assert lines[0] == "not applied: 1 invalid input (exit 2); 1 unit kept (see warnings) — details below", lines
    assert lines[1] == "no changes; 7 units match the plan"
    assert "pods/web.yaml" in r.stderr and "250x" in r.stderr


def test_install_units_in_a_dir_systemd_does_not_read_says_so(clean_sandbox, tmp_path):
    sb = clean_sandbox
    r = sdqos_in(sb, "install-units", "--dir", str(tmp_path / "units"), "--config", str(copy_config(tmp_path)), "--now")
    assert r.returncode == 1
    assert r.stderr.startswith(f"sdqos: error: {tmp_path / 'units'} is not on systemd's unit search path")
    assert "/etc/systemd/system" in r.stderr and "Traceback" not in r.stderr


def test_removed_units_are_named_by_the_pod_they_were_for(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    (config / "pods" / "web.yaml").unlink()
    r = sdqos_in(sb, "sync", "--config", str(config))
    assert r.returncode == 0, r.stderr
    removed = [ln for ln in r.stdout.splitlines() if ln.startswith("  removed  ")]
    assert len(removed) == 1 and removed[0].endswith(".slice (shop/web)"), r.stdout


def test_settle_with_json_prints_one_document(clean_sandbox, tmp_path):
    """sync --settle -o json syncs again while the config changes; stdout is still one JSON
    document (the last pass's report, the earlier passes inside it)."""
    import threading

    sb = clean_sandbox
    config = copy_config(tmp_path)
    path = config / "pods" / "web.yaml"
    text = path.read_text()
    done = threading.Event()

    def edit():  # a config that keeps changing while the sync runs: every pass sees a change
        i = 0
        while not done.is_set():
            i += 1
            path.write_text(text + f"# edit {i}\n")
            time.sleep(0.05)
    writer = threading.Thread(target=edit)
    writer.start()
    try:
        r = sdqos_in(sb, "sync", "--settle", "--config", str(config), "-o", "json")
    finally:
        done.set()
        writer.join()
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # one document: json.loads refuses "Extra data"
    # the edits land mid-read at times (a half-written file is refused that pass, its units come in a
    # later one): the 8 units are created once over the passes, whichever pass that is
    created = [u for p in [*doc["previousPasses"], doc] for u in p["created"]]
    assert len(created) == len(set(created)) == 8, created
    assert 1 <= len(doc["previousPasses"]) <= 4  # 5 passes at most
