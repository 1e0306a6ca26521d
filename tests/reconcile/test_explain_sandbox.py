"""explain and plan agree with sync (issue 31 item 5) against the sandbox systemd (cgroup v1): a
scope sdqos did not make runs in machine.slice, sync counts it in the node budget, and the values
explain and plan print for the tiers are the ones systemd holds after that sync. explain also tells
a running pod's eviction rank from the kernel's usage, and says a stopped pod has none (issue 32)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import dbus_props, sdqos_in
from .test_budget_sandbox import HOLD, MiB, GiB, add_pod, burst_slice, foreign, hold, kill, node, run_pod, sync


def explain(sb, cfg: Path, pod: str, *extra: str):
    return sdqos_in(sb, "explain", pod, "--config", str(cfg), *extra)


def test_explain_and_plan_show_the_values_sync_set_with_machine_slice_counted(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = tmp_path / "cfg"
    (cfg / "pods").mkdir(parents=True)
    node(cfg, "2", "1Gi")
    add_pod(cfg, "a")
    add_pod(cfg, "b")
    assert sync(sb, cfg).returncode == 0
    procs = [foreign(sb, "guest", "MemoryLimit=400M", argv=(sys.executable, "-c", HOLD, str(200 * MiB)))]
    try:
        hold(sb, "guest", "guest.scope", "machine.slice", 200 * MiB)
        procs.append(run_pod(sb, cfg, "a", sys.executable, "-c", HOLD, str(64 * MiB)))
        hold(sb, "a", container_scope(stable_uid("t", "a"), "app"), burst_slice("a"), 64 * MiB)
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        held = dbus_props(sb, "kubepods.slice", "MemoryLimit")["MemoryLimit"]
        assert 1 * GiB - 400 * MiB <= held <= 1 * GiB - 200 * MiB  # the guest is counted

        r = explain(sb, cfg, "t/a", "-o", "json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert [m["unit"] for m in doc["machines"]] == ["guest.scope"]
        for unit, values in doc["pods"][0]["tiers"].items():
            live = dbus_props(sb, unit, *values)
            assert {p: v["value"] for p, v in values.items()} == live, unit
        assert doc["pods"][0]["tiers"]["kubepods.slice"]["MemoryLimit"]["value"] == held

        text = explain(sb, cfg, "t/a")
        assert text.returncode == 0, text.stderr
        assert "Counted in machine.slice besides declared VMs" in text.stdout
        assert "guest.scope (scope)" in text.stdout or "guest.scope (" in text.stdout

        plan = sdqos_in(sb, "plan", "--config", str(cfg), "-o", "json")
        assert plan.returncode == 0, plan.stderr
        units = {u["name"]: u["properties"] for u in json.loads(plan.stdout)["units"]}
        assert units["kubepods.slice"]["MemoryLimit"] == held

        # the eviction rank, from the kernel's usage (read only): a is the only running pod
        ev = doc["pods"][0]["eviction"]
        assert ev["usage"] >= 64 * MiB and ev["exceedsRequest"] is True  # requests 32 MiB
        assert [(o["signal"], o["rank"], o["of"]) for o in ev["orders"]] == [("memory.available", 1, 1),
                                                                             ("pid.available", 1, 1)]
        assert "uses more than it requested" in ev["orders"][0]["why"]
        assert "memory.available: 1 of 1" in text.stdout
        stopped = json.loads(explain(sb, cfg, "t/b", "-o", "json").stdout)["pods"][0]["eviction"]
        assert stopped["orders"] == [] and "not running" in stopped["why"]
    finally:
        kill(*procs)
