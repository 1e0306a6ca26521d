"""The one loading path (sdqos.loading.load): explain's plan is the plan every other command gets
(same values, with reasons), a what-if file's pods lay over the config's, and what the last sync
counted in machine.slice is counted again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdqos.errors import ConfigInvalid, InvalidInput
from sdqos.host import rundir
from sdqos.loading import load as ld
from sdqos.loading.configdir import load_config
from sdqos.loading.incremental import load_plan
from sdqos.plan.engine import MachineCharge, build_plan

from .test_incremental import CAPACITY, POD, config, write

GUEST = MachineCharge("guest.scope", "scope", 500, 4 * 2**30, True, 4 * 2**30)


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
def test_explain_plans_the_same_values_as_every_other_command(tmp_path, cgroup):
    cfg, run = config(tmp_path), tmp_path / "run"
    load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run, machines=(GUEST,))  # fragments exist
    _, plain = load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run, machines=(GUEST,))
    _, explained = load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run, machines=(GUEST,), explain=True)
    c = load_config(cfg, detected=CAPACITY)
    want = build_plan(c.node, c.pods, c.vms, cgroup, explain=True, machines=(GUEST,))
    assert [(u.name, u.properties) for u in explained.units] == [(u.name, u.properties) for u in plain.units]
    assert [(u.name, u.properties, u.why) for u in explained.units] == [(u.name, u.properties, u.why) for u in want.units]
    assert all(pp.why for pp in explained.pods)  # planned afresh, with reasons (fragments have none)


def test_a_what_if_pod_replaces_the_configured_one_and_is_checked_with_the_others(tmp_path):
    cfg = config(tmp_path)
    other = tmp_path / "what-if.yaml"
    write(other, POD.format(name="a", uid="", cpu="3", mem="128Mi") + "---\n"
          + POD.format(name="new", uid="", cpu="100m", mem="64Mi"))
    pods = ld.what_if_pods(other, insecure=False)
    c, p = load_plan(cfg, "v2", detected=CAPACITY, what_if=pods, explain=True)
    assert p.pod("t/a").requests["cpu"] == 3100 and p.pod("t/new") is not None
    assert [pp.key for pp in p.pods].count("t/a") == 1
    want = build_plan(c.node, [pp.pod for pp in p.pods], c.vms, "v2", explain=True)
    assert [(u.name, u.properties) for u in p.units] == [(u.name, u.properties) for u in want.units]
    # a what-if pod with another's uid: both are invalid, as two config files would be
    clash = tmp_path / "clash.yaml"
    write(clash, POD.format(name="x", uid=f", uid: {p.pod('t/b').uid}", cpu="1", mem="64Mi"))
    c, p = load_plan(cfg, "v2", detected=CAPACITY, what_if=ld.what_if_pods(clash, insecure=False))
    assert p.pod("t/x") is None and p.pod("t/b") is None
    assert any("uid" in str(e) for e in c.errors)


def test_a_bad_what_if_file_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    write(bad, "kind: Deployment\n")
    with pytest.raises(InvalidInput, match="is not a Pod manifest"):
        ld.what_if_pods(bad, insecure=False)
    write(bad, POD.format(name="a", uid="", cpu="12x", mem="64Mi"))
    with pytest.raises(ConfigInvalid) as exc:
        ld.what_if_pods(bad, insecure=False)
    assert all(str(bad) in str(e) for e in exc.value.errors)


def test_the_last_syncs_machine_slice_record_is_read_back(tmp_path):
    rundir.ensure_dir(tmp_path)
    assert ld.counted_machines(tmp_path) == ()
    rec = {"machines": [{"unit": "guest.scope", "what": "scope", "cpu": 500, "memory": 4 * 2**30, "bounded": True,
                         "limit": 4 * 2**30}]}
    (tmp_path / rundir.LAST_SYNC_NAME).write_text(json.dumps(rec))
    (tmp_path / rundir.LAST_SYNC_NAME).chmod(0o600)
    assert ld.counted_machines(tmp_path) == (GUEST,)
    (tmp_path / rundir.LAST_SYNC_NAME).write_text(json.dumps({"machines": [{"unit": "x"}]}))
    assert ld.counted_machines(tmp_path) == ()  # a record that does not read counts nothing


def test_cli_record_and_loading_agree_on_the_file(tmp_path):
    from sdqos.cli import metrics

    assert metrics.LAST_SYNC == rundir.LAST_SYNC_NAME
    assert Path(rundir.LAST_SYNC_NAME).name == "last-sync.json"


def test_the_last_syncs_kept_pods_are_counted_for_plan_and_explain(tmp_path):
    """A pod slice the last sync kept (held back, an invalid file) is counted in its tier by plan
    and explain (``as_synced``: the ``kept`` source) as sync counted it; a kept slice whose pod is
    configured again is that pod, not counted twice; a record that does not read counts nothing."""
    import dataclasses

    from sdqos.plan.engine import KeptPod

    cfg = config(tmp_path)
    rundir.ensure_dir(tmp_path / "run")
    assert ld.kept_pods(tmp_path / "run") == ()
    k = KeptPod("kubepods-burstable-podgone.slice", "Burstable", 300, 64 * 2**20, "held back by --max-removals 0")
    (tmp_path / "run" / rundir.LAST_SYNC_NAME).write_text(json.dumps({"kept": [dataclasses.asdict(k)]}))
    (tmp_path / "run" / rundir.LAST_SYNC_NAME).chmod(0o600)
    assert ld.kept_pods(tmp_path / "run") == (k,)
    _, plain = load_plan(cfg, "v1", detected=CAPACITY)
    _, counted = load_plan(cfg, "v1", detected=CAPACITY, kept=(k,), explain=True)
    tier = "kubepods-burstable.slice"
    before = next(u for u in plain.units if u.name == tier).properties["CPUShares"]
    after = next(u for u in counted.units if u.name == tier)
    assert after.properties["CPUShares"] == before + 300 * 1024 // 1000 and after.why
    again = KeptPod(plain.pods[0].slice, plain.pods[0].qos, 300, 64 * 2**20, "invalid")
    _, same = load_plan(cfg, "v1", detected=CAPACITY, kept=(again,))
    assert [(u.name, u.properties) for u in same.units] == [(u.name, u.properties) for u in plain.units]
    (tmp_path / "run" / rundir.LAST_SYNC_NAME).write_text(json.dumps({"kept": [{"unit": "x"}]}))
    assert ld.kept_pods(tmp_path / "run") == ()
