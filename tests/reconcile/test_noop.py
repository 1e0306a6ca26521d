"""The warm no-op proof's parts that need no systemd (sdqos.reconcile.noop): what counts as an
input, which run dir records count, which sync outcomes may be stamped, and the comparison of the
units read over D-Bus. The proof itself against a real systemd: test_noop_sandbox.py."""

from __future__ import annotations

import dataclasses

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdqos.host import oomevents, rundir
from sdqos.loading.configdir import load_config
from sdqos.plan.engine import build_plan
from sdqos.plan.properties import INFINITY, MEMORY_PROPERTIES, PERIOD_PROPERTY
from sdqos.reconcile import noop
from sdqos.reconcile.report import Report

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
OPTIONS = {"insecure": False, "allowEmpty": False, "maxRemovals": "50%", "adoptExisting": False, "bus": None}


@pytest.fixture
def cfg(tmp_path) -> Path:
    d = tmp_path / "cfg"
    shutil.copytree(EXAMPLES, d, symlinks=True)
    for p in [d, *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return d


def later(path: Path) -> None:
    """A new mtime for sure (the clock may not move between two writes)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def inputs(cfg: Path):
    """What a load of ``cfg`` read (the stamp is made from exactly these)."""
    from sdqos.loading.incremental import load_plan

    return load_plan(cfg, "v1")[0].inputs


def test_the_inputs_are_the_same_while_nothing_changes(cfg):
    reads = inputs(cfg)
    assert reads.stable and reads.changed() is None
    assert noop.inputs_unchanged(rundir.Reads.from_json(json.loads(json.dumps(reads.as_json()))))  # as stamped
    assert noop.conditions(cfg, "v1", OPTIONS) == noop.conditions(cfg, "v1", dict(OPTIONS))


@pytest.mark.parametrize("change", [
    "pod edited", "pod touched", "pod chmod", "pod added", "pod removed", "non-yaml file added", "node.yaml edited",
    "node.yaml added", "priorityclasses added", "vms dir added", "pod replaced by a symlink", "symlink target edited",
])
def test_every_input_the_load_read_is_checked_again(cfg, change):
    db = cfg / "pods" / "db.yaml"
    target = cfg.parent / "elsewhere.yaml"
    if change == "symlink target edited":  # set up before the load
        shutil.copy(db, target)
        db.unlink()
        db.symlink_to(target)
    if change == "node.yaml added":
        (cfg / "node.yaml").rename(cfg.parent / "node.yaml")
    reads = inputs(cfg)
    assert reads.changed() is None
    if change == "pod edited":
        db.write_text(db.read_text().replace("4Gi", "6Gi"))
    elif change == "pod touched":
        later(db)
    elif change == "pod chmod":
        db.chmod(0o600)
    elif change == "pod added":
        shutil.copy(db, cfg / "pods" / "db2.yaml")
    elif change == "pod removed":
        db.unlink()
    elif change == "non-yaml file added":
        (cfg / "pods" / "README").write_text("x")
    elif change == "node.yaml edited":
        node = cfg / "node.yaml"
        node.write_text(node.read_text() + "\n")
    elif change == "node.yaml added":
        (cfg.parent / "node.yaml").rename(cfg / "node.yaml")
    elif change == "priorityclasses added":
        (cfg / "priorityclasses.yaml").write_text("")
    elif change == "vms dir added":
        (cfg / "vms").mkdir()
    elif change == "pod replaced by a symlink":
        shutil.copy(db, target)
        db.unlink()
        db.symlink_to(target)
    elif change == "symlink target edited":
        target.write_text(target.read_text().replace("4Gi", "6Gi"))
    assert reads.changed() is not None


def test_a_value_read_through_a_function_is_asked_again(tmp_path):
    """A source read through a function (the host facts, the last-sync record's parts the plan
    uses) is checked by calling that function again: here the last sync's machine.slice charges."""
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    rundir.write(rundir.LAST_SYNC, json.dumps({"machines": []}), run)
    reads = rundir.Reads()
    assert reads.call(rundir.last_sync_part, str(run), "machines", paths=(str(rundir.LAST_SYNC.path(run)),)) == []
    rundir.write(rundir.LAST_SYNC, json.dumps({"machines": [], "timestamp": 1}), run)
    assert reads.changed() is None  # rewritten, the part the plan uses the same
    rundir.write(rundir.LAST_SYNC, json.dumps({"machines": [{"unit": "x.scope"}]}), run)
    assert reads.changed() == str(rundir.LAST_SYNC.path(run))


def test_a_path_read_twice_with_two_identities_proves_nothing(tmp_path):
    f = tmp_path / "f"
    f.write_text("a")
    reads = rundir.Reads()
    reads.file(f)
    f.write_text("bb")
    reads.file(f)
    assert not reads.stable and reads.changed() is not None


@pytest.mark.parametrize("change", ["cgroup version", "option", "environment", "config dir"])
def test_the_syncs_own_conditions_change_the_digest(cfg, change, monkeypatch):
    before = noop.conditions(cfg, "v1", OPTIONS)
    mode, options, where = "v1", OPTIONS, cfg
    if change == "cgroup version":
        mode = "v2"
    elif change == "option":
        options = {**OPTIONS, "adoptExisting": True}
    elif change == "environment":
        monkeypatch.setenv("SDQOS_PODMAN", "/usr/local/bin/podman")
    elif change == "config dir":
        where = cfg.parent
    assert noop.conditions(where, mode, options) != before


def test_the_kernels_oom_kill_count_is_a_condition(cfg, monkeypatch):
    before = noop.conditions(cfg, "v1", OPTIONS)
    monkeypatch.setattr(noop, "oom_kills_total", lambda: -1)
    assert noop.conditions(cfg, "v1", OPTIONS) != before


def test_the_run_dirs_records_count_but_the_lock_the_stamp_and_the_last_sync_record_do_not(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "applied.json").write_text("{}")
    before = noop.run_dir_identity(run)
    for name in ("sync.lock", "noop.json", "last-sync.json"):
        (run / name).write_text("x")
    assert noop.run_dir_identity(run) == before
    (run / "evicted.json").write_text('{"evicted": []}')
    assert noop.run_dir_identity(run) != before
    (run / "evicted.json").unlink()
    assert noop.run_dir_identity(run) == before
    (run / "applied.json").write_text("{} ")
    assert noop.run_dir_identity(run) != before


@pytest.fixture
def planned(cfg):
    c = load_config(cfg)
    return build_plan(c.node, c.pods, c.vms, "v1")


def quiet_run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    (run / "last-sync.json").write_text(json.dumps({"machines": [], "warnings": []}))
    return run


def test_only_a_sync_with_nothing_to_do_and_nothing_to_say_is_stamped(planned, tmp_path):
    run = quiet_run_dir(tmp_path)
    names = [u.name for u in planned.units if u.create]
    assert noop.stampable(Report(unchanged=names), planned, {n: {} for n in names}, run)
    for field, value in [("created", ["x.slice"]), ("updated", [{"unit": "x"}]), ("removed", ["x"]),
                         ("reset", ["x"]), ("containers_removed", ["c"]), ("drift", [{"unit": "x"}]),
                         ("warnings", ["w"]), ("errors", ["e"]), ("invalid", ["i"]), ("kept", ["k"]),
                         ("foreign", ["f"]), ("aborted", True), ("oom_kills", ["k"]), ("oom_adjusted", 1),
                         ("dry_run", True)]:
        report = Report(unchanged=names)
        setattr(report, field, value)
        assert not noop.stampable(report, planned, {}, run), field
    # applied.json naming a unit the plan does not have (machine.slice to release, say)
    assert not noop.stampable(Report(unchanged=names), planned, {"machine.slice": {}}, run)


def test_a_clamp_a_machine_charge_or_a_kept_pod_is_never_stamped(planned, tmp_path):
    run = quiet_run_dir(tmp_path)
    for attr, value in [("machines", (SimpleNamespace(unit="x.scope"),)), ("kept", (SimpleNamespace(slice="x"),))]:
        plan = build_plan(planned.node, [pp.pod for pp in planned.pods], [], "v1")
        object.__setattr__(plan, attr, value)
        assert not noop.stampable(Report(), plan, {}, run), attr
    from sdqos.reconcile.desired import Adjustment, of_plan

    plan = build_plan(planned.node, [pp.pod for pp in planned.pods], [], "v1")
    clamp = Adjustment("kubepods-burstable.slice", "MemoryLimit", 1, 2, 2, "clamped")
    adjusted = dataclasses.replace(of_plan(plan), adjustments=(clamp,))
    assert noop.stampable(Report(desired=of_plan(plan)), plan, {}, run)
    assert not noop.stampable(Report(desired=adjusted), plan, {}, run), "a clamp"


def test_a_pending_oom_record_or_a_standing_warning_is_never_stamped(planned, tmp_path):
    run = quiet_run_dir(tmp_path)
    assert noop.stampable(Report(), planned, {}, run)
    oomevents.save_record({"seq": 1, "units": {"x.scope": {"pending": True}}}, run)
    assert not noop.stampable(Report(), planned, {}, run)
    (run / oomevents.RECORD_NAME).unlink()
    for record in ({"machines": [{"unit": "x.scope"}], "warnings": []}, {"machines": [], "warnings": ["w"]}):
        (run / "last-sync.json").write_text(json.dumps(record))
        assert not noop.stampable(Report(), planned, {}, run)
    (run / "last-sync.json").unlink()
    assert not noop.stampable(Report(), planned, {}, run)


def unit(props: dict, current=None) -> SimpleNamespace:
    return SimpleNamespace(props={**props, **({} if current is None else {"MemoryCurrent": current})})


OWNED = ["CPUShares", "CPUQuotaPerSecUSec", "MemoryLimit", "TasksMax", PERIOD_PROPERTY]
ARGS = (OWNED, PERIOD_PROPERTY, list(MEMORY_PROPERTIES))  # what the stamp carries from the property table


def test_units_read_over_dbus_compare_as_the_diff_compares_them():
    planned = {"CPUShares": 1228, "MemoryLimit": 12 << 30}
    assert noop._props_in_place("tier", planned, unit({**planned, PERIOD_PROPERTY: INFINITY}, 1 << 30), *ARGS)
    assert not noop._props_in_place("tier", planned, unit({**planned, "CPUShares": 100}), *ARGS)
    assert not noop._props_in_place("tier", planned, unit({"CPUShares": 1228}), *ARGS)  # not read: not in place
    # a period set although none is planned: the diff sets it back (not for reserved units)
    assert not noop._props_in_place("tier", planned, unit({**planned, PERIOD_PROPERTY: 50_000}), *ARGS)
    assert noop._props_in_place("reserved", planned, unit({**planned, PERIOD_PROPERTY: 50_000}), *ARGS)
    # usage above the planned memory limit: the full path clamps (qosReserved), so no proof
    assert not noop._props_in_place("tier", planned, unit(planned, (12 << 30) + 4096), *ARGS)
    assert noop._props_in_place("tier", planned, unit(planned, INFINITY), *ARGS)  # accounting off


def test_a_stamp_of_another_version_or_not_ours_is_not_read(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / noop.STAMP).write_text(json.dumps({"version": noop.VERSION + "0"}))
    (run / noop.STAMP).chmod(0o600)
    assert noop.load(run) is None
    (run / noop.STAMP).write_text(json.dumps({"version": noop.VERSION}))
    assert noop.load(run) == {"version": noop.VERSION}
    (run / noop.STAMP).chmod(0o666)
    assert noop.load(run) is None
    noop.discard(run)
    assert not (run / noop.STAMP).exists()
    noop.discard(run)  # none: nothing to do


def test_a_proof_is_not_even_tried_with_other_inputs(tmp_path):
    """check() refuses a stamp taken with other inputs before it reads anything."""
    import asyncio

    class NoBus:
        stats = SimpleNamespace(calls=0)

        def __getattr__(self, name):
            raise AssertionError(f"asked systemd: {name}")

    assert asyncio.run(noop.check(NoBus(), tmp_path, "now", {"version": noop.VERSION, "inputs": "then"})) is None



def test_the_owned_properties_include_the_period():
    """The stamp carries owned() and the period's name (the proof does not import the plan)."""
    from sdqos.plan.properties import owned

    assert PERIOD_PROPERTY in owned("v1") and PERIOD_PROPERTY in owned("v2")
