"""`sdqos status` and `sdqos metrics` against the sandbox: the live tree, drift flagged before
the next sync, real usage, a Prometheus file that parses, Descriptions `systemctl status` shows."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

from sdqos import sandbox as sbx

from ..sbhelpers import cgroup_rel, copy_config, descendants, end_tree, sdqos_in, sync_json, wait_for
from ..reconcile.test_scopes_sandbox import APP_SCOPE, BURST_SLICE, kill_all, procs_of
from ..reconcile.test_scopes_sandbox import config as scopes_config

config = scopes_config  # the same two-pod config fixture (pytest finds fixtures by name)


def status_json(sb, config, *extra):
    r = sdqos_in(sb, "status", "--config", str(config), "-o", "json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_unit(st):
    return {u["unit"]: u for u in st["units"]}


def test_status_shows_every_pod_with_class_and_values(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    st = status_json(sb, cfg, "--interval", "0")
    units = by_unit(st)
    pods = {u["label"]: u for u in st["units"] if u["kind"] == "pod"}
    assert {k: u["qos"] for k, u in pods.items()} == {
        "pod shop/db (Guaranteed)": "Guaranteed", "pod shop/web (Burstable)": "Burstable",
        "pod shop/api (Burstable)": "Burstable", "pod kube-system/node-agent (Burstable)": "Burstable",
        "pod batch/report (BestEffort)": "BestEffort"}
    assert all(u["running"] and u["flags"] == [] for u in pods.values())
    assert units["kubepods.slice"]["entitled"] == {"cpuShares": 7168, "cpuQuotaPerSecUSec": None,
                                                   "tasksMax": 4193304, "memoryLimit": 14 * 2**30}
    db = pods["pod shop/db (Guaranteed)"]
    assert db["entitled"]["cpuQuotaPerSecUSec"] == 2_000_000 and db["entitled"]["memoryLimit"] == 4 * 2**30
    assert units["kubepods-burstable.slice"]["entitled"]["cpuShares"] == 1228
    assert st["summary"]["drift"] == 0 and st["summary"]["pods"] == 5
    text = sdqos_in(sb, "status", "--config", str(cfg), "--interval", "0").stdout
    assert text.splitlines()[0].split() == ["UNIT", "NAME", "CLASS", "CPU", "MEMORY", "USAGE", "OOM", "FLAGS"]
    assert "5 pods · 0 VMs · 8/16 units running · 0 drifted · 0 flagged" in text
    # Names, as fields in JSON and a column in text; piped text keeps whole unit names.
    assert {(u["namespace"], u["pod"], u["container"], u["vm"]) for u in st["units"] if u["kind"] == "container"} >= {
        ("shop", "web", "nginx", None), ("shop", "db", "postgres", None)}
    assert (db["namespace"], db["pod"], db["container"]) == ("shop", "db", None)
    assert units["kubepods.slice"]["pod"] is None and units["kubepods.slice"]["kind"] == "node"
    nginx = next(u for u in st["units"] if u["container"] == "nginx")
    row = next(ln for ln in text.splitlines() if nginx["unit"] in ln)
    assert row.split()[1] == "shop/web/nginx"
    # Filters keep the matching pods with the node and tier above them.
    web = status_json(sb, cfg, "--interval", "0", "--pod", "shop/web")
    assert {u["pod"] for u in web["units"]} == {None, "web"}
    assert [u["kind"] for u in web["units"] if u["pod"] is None] == ["node", "tier"]
    shop = status_json(sb, cfg, "--interval", "0", "--namespace", "shop")
    assert {u["pod"] for u in shop["units"] if u["pod"]} == {"db", "web", "api"}
    # ... and their summary is of what they show, beside the node's number of pods
    assert (shop["summary"]["pods"], shop["summary"]["units"], shop["summary"]["nodePods"]) == (3, len(shop["units"]), 5)
    batch = sdqos_in(sb, "status", "--config", str(cfg), "--interval", "0", "-n", "batch").stdout.splitlines()
    units = status_json(sb, cfg, "--interval", "0", "-n", "batch")["units"]
    running = sum(u["running"] for u in units)
    assert batch[batch.index("") + 1].startswith(f"1 of 5 pods · 0 of 0 VMs · {running}/{len(units)} units running"), batch


def test_drift_is_flagged_by_status_before_the_next_sync(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    sbx.run(sb, ["systemctl", "set-property", "--runtime", "kubepods-besteffort.slice", "CPUShares=500"], check=True)
    u = by_unit(status_json(sb, cfg, "--interval", "0"))["kubepods-besteffort.slice"]
    assert u["flags"] == ["drift"] and u["drift"] == {"CPUShares": [500, 2]}
    sync_json(sb, cfg)
    assert by_unit(status_json(sb, cfg, "--interval", "0"))["kubepods-besteffort.slice"]["flags"] == []


def test_usage_of_a_busy_process_shows_up(clean_sandbox, config):
    sb = clean_sandbox
    busy = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "t/burst", "app", "--",
                          sys.executable, "-c", "x = bytearray(20 * 2**20)\nwhile True: pass"])
    try:
        wait_for(lambda: procs_of(sb, cgroup_rel(APP_SCOPE, BURST_SLICE)), what="busy process")
        time.sleep(0.5)
        units = by_unit(status_json(sb, config, "--interval", "1"))
        scope = units[APP_SCOPE]
        assert scope["running"] and scope["oomScoreAdj"] == [993]
        assert 0.2 <= scope["usage"]["cpuCores"] <= 0.6  # its quota is 500m
        assert scope["usage"]["memoryBytes"] >= 20 * 2**20 and scope["usage"]["tasks"] >= 1
        assert units[BURST_SLICE]["usage"]["cpuCores"] >= 0.2  # counted in its pod too
        assert "near-cpu-limit" in scope["flags"] or scope["usage"]["cpuCores"] < 0.45
    finally:
        kill_all(busy)


def test_metrics_textfile_parses_and_holds_the_series(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    out = tmp_path / "sdqos.prom"
    r = sdqos_in(sb, "sync", "--config", str(cfg), "--metrics-textfile", str(out))
    assert r.returncode == 0, r.stderr
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    for name in ("sdqos_unit_info", "sdqos_unit_cpu_shares", "sdqos_unit_memory_limit_bytes", "sdqos_unit_drift",
                 "sdqos_unit_memory_usage_bytes", "sdqos_sync_duration_seconds", "sdqos_sync_changes",
                 "sdqos_sync_errors", "sdqos_sync_last_success_timestamp_seconds"):
        assert name in families, name
    shares = {s.labels["unit"]: s.value for s in families["sdqos_unit_cpu_shares"].samples}
    assert shares["kubepods.slice"] == 7168 and shares["kubepods-burstable.slice"] == 1228
    changes = {s.labels["change"]: s.value for s in families["sdqos_sync_changes"].samples}
    assert changes == {"created": 8, "updated": 0, "removed": 0, "drift": 0}
    info = [s.labels for s in families["sdqos_unit_info"].samples if s.labels.get("pod") == "shop/db"]
    assert {i["kind"] for i in info} == {"pod", "container"} and all(i["qos"] == "Guaranteed" for i in info)
    assert list(tmp_path.glob(".sdqos.prom.*")) == []  # no temp file left behind
    standalone = sdqos_in(sb, "metrics", "--config", str(cfg), "--interval", "0")
    fams = {f.name for f in text_string_to_metric_families(standalone.stdout)}
    assert "sdqos_unit_cpu_shares" in fams and "sdqos_sync_success" in fams


def test_every_unit_reads_well_in_systemctl_status(clean_sandbox, config):
    sb = clean_sandbox
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "t/burst", "app", "--", "sleep", "300"])
    try:
        wait_for(lambda: procs_of(sb, cgroup_rel(APP_SCOPE, BURST_SLICE)), what="app process")
        sync_json(sb, config)
        for unit, text in ((BURST_SLICE, "sdqos pod t/burst (Burstable)"), (APP_SCOPE, "sdqos container t/burst/app (Burstable)"),
                           ("kubepods-burstable.slice", "sdqos Burstable QoS tier"),
                           ("kubepods.slice", "sdqos node allocatable for pods (kubepods)")):
            out = sbx.run(sb, ["systemctl", "status", unit, "--no-pager"]).stdout
            assert out.splitlines()[0].endswith(f"{unit} - {text}"), out.splitlines()[0]
    finally:
        kill_all(p)


def _status_from_json(doc):
    """The Status that `status -o json` printed, as render_plain takes it."""
    from sdqos.cli.status import Row, Status

    rows = []
    for u in doc["units"]:
        u = dict(u)
        u["oom_score_adj"] = u.pop("oomScoreAdj")
        u["oom_killed"] = u.pop("oomKilled", None)
        rows.append(Row(**u))
    return Status(doc["cgroup"], rows, doc["warnings"], doc["intervalSeconds"], doc["summary"])


def test_at_80_columns_each_unit_is_one_line_and_drift_shows_live_to_planned(clean_sandbox, tmp_path):
    """The example's 16 units with real usage and a drifted tier: one line a unit at 80 columns
    (names for pods and containers, short values), and under the drifted unit its live → planned
    values; the same table piped keeps whole unit names."""
    from sdqos.cli.status import render_plain

    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    sbx.run(sb, ["systemctl", "set-property", "--runtime", "kubepods-burstable.slice", "CPUShares=100",
                 "MemoryLimit=20508827648"], check=True)
    doc = status_json(sb, cfg, "--interval", "0.2")
    status = _status_from_json(doc)
    assert len(status.rows) == 16
    lines = render_plain(status, 80).splitlines()
    table = lines[:lines.index("")]
    drift = [ln for ln in table if "↳" in ln]
    assert drift == ["   ↳ drift (live → planned): CPUShares 100 shares → 1228 shares, "
                     "MemoryLimit 19.1 GiB → 12 GiB"]
    rows = [ln for ln in table[1:] if "↳" not in ln]
    assert len(rows) == 16 and all(len(ln) <= 80 for ln in table[:1] + rows), [len(ln) for ln in rows]
    assert table[0].split()[0] == "UNIT/NAME"
    assert any(ln.split()[0] == "shop/web/nginx" for ln in rows)
    assert next(ln for ln in rows if ln.split()[0] == "kubepods-burstable.slice").split()[-1] == "drift"
    piped = render_plain(status).splitlines()
    assert piped[0].split()[:2] == ["UNIT", "NAME"] and len(piped[:piped.index("")]) == 18  # and the drift line


def test_status_of_a_pod_or_namespace_that_is_not_there_is_an_error(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    for args, line in ((["--pod", "shop/nosuch"], "no pod shop/nosuch"),
                       (["--pod", "shop/wbe"], "no pod shop/wbe; did you mean 'shop/web'?"),
                       (["-n", "nosuch"], "no pod in namespace nosuch"),
                       (["-n", "batch", "--pod", "web"], "no pod batch/web")):
        for out in ("text", "json"):
            r = sdqos_in(sb, "status", "--config", str(cfg), "--interval", "0", "-o", out, *args)
            assert (r.returncode, r.stdout, r.stderr) == (2, "", f"sdqos: error: {line}\n"), args


def test_watch_heads_each_screen_with_the_time_and_interval_and_ctrl_c_ends_it(clean_sandbox, tmp_path):
    import os
    import re
    import signal

    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    sync_json(sb, cfg)
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "status", "--config", str(cfg), "--interval", "0",
                       "--watch", "0.5", "-n", "batch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, start_new_session=True)
    try:
        time.sleep(3)
        # Ctrl-C reaches sdqos itself (nsenter forks it into the sandbox's PID namespace)
        inner = wait_for(lambda: descendants(p.pid)[:1], "sdqos in the sandbox", 60)[0]
        os.kill(inner, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:  # whatever happened: nothing of it outlives the test
        end_tree(p)
    heads = re.findall(r"^every 0\.5s: sdqos status · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+ · Ctrl-C stops$", out, re.M)
    assert len(heads) >= 2, out
    assert p.returncode == 0 and err == "", (p.returncode, err)
