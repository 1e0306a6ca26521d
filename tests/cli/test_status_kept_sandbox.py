"""`sdqos status` after a sync that refused to change a running pod: the slice that still runs it is
shown `kept` with what it holds, the tiers that count it are not drift, and nothing the sync
deliberately did not do is shown missing or drifted (the same desired state sync applied)."""

from __future__ import annotations

import json

from ..reconcile.test_ownership_sandbox import burst_slice, cfg, guar_slice, kill, pod, procs, run_bg, scope, sync
from ..sbhelpers import sdqos_in, wait_for

__all__ = ["cfg"]  # the fixture, found by name

TIER = "kubepods-burstable.slice"


def status(sb, config) -> dict:
    r = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def rows(st: dict) -> dict:
    return {u["unit"]: u for u in st["units"]}


def test_after_a_refused_empty_config_the_running_pod_is_kept_and_its_tier_no_drift(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "a.yaml").write_text(pod("a"))
    assert sync(sb, cfg).returncode == 0
    p = run_bg(sb, cfg, "t/a", "sleep", "3001")
    try:
        wait_for(lambda: procs(sb, scope("a"), burst_slice("a")), what="the container's process")
        (cfg / "pods" / "a.yaml").unlink()
        r = sync(sb, cfg)
        assert r.returncode == 2 and "pass --allow-empty" in r.stderr, r.stderr
        rep = json.loads(r.stdout)
        assert burst_slice("a") in rep["kept"] and scope("a") in rep["kept"], rep
        st = status(sb, cfg)
        units = rows(st)
        a = units.get(burst_slice("a"))
        assert a is not None and "kept" in a["flags"] and "--allow-empty" in a["reasons"]["kept"], st["units"]
        assert units[scope("a")]["parent"] == burst_slice("a") and units[scope("a")]["running"]
        assert st["summary"]["drift"] == 0, [(u["unit"], u["drift"]) for u in st["units"] if u["drift"]]
        assert "drift" not in units[TIER]["flags"]
        text = sdqos_in(sb, "status", "--config", str(cfg), "--interval", "0").stdout
        assert "0 drifted" in text and burst_slice("a") in text, text
    finally:
        kill(p)


def test_after_a_refused_qos_class_change_the_kept_slice_holds_the_scope(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "flip.yaml").write_text(pod("flip"))
    assert sync(sb, cfg).returncode == 0
    p = run_bg(sb, cfg, "t/flip", "sleep", "3001")
    try:
        wait_for(lambda: procs(sb, scope("flip"), burst_slice("flip")), what="the container's process")
        (cfg / "pods" / "flip.yaml").write_text(pod("flip", guaranteed=True))
        r = sync(sb, cfg)
        assert r.returncode == 2 and "QoS class changed" in r.stderr, r.stderr
        st = status(sb, cfg)
        units = rows(st)
        old = units[burst_slice("flip")]
        assert "kept" in old["flags"] and "refused" in old["reasons"]["kept"], old
        sc = units[scope("flip")]
        assert sc["parent"] == burst_slice("flip") and sc["running"] and "drift" not in sc["flags"], sc
        assert sc["entitled"]["memoryLimit"] == 64 * 2**20 and sc["qos"] == "Burstable" and "kept" in sc["flags"]
        new = units.get(guar_slice("flip"))
        assert new is None or "missing" not in new["flags"], new
        assert st["summary"]["drift"] == 0, [(u["unit"], u["drift"]) for u in st["units"] if u["drift"]]
        assert not [u["unit"] for u in st["units"] if "missing" in u["flags"]], st["units"]
    finally:
        kill(p)
