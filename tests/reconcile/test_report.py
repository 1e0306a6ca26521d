"""The report carries sync's exit status (sdqos.errors.EXIT_CODES), so every caller exits alike."""

from __future__ import annotations

from sdqos.errors import EXIT_ERROR, EXIT_INVALID, EXIT_OK, EXIT_PENDING
from sdqos.reconcile.report import Report


def test_exit_code_follows_the_documented_order():
    assert Report().exit_code == EXIT_OK
    assert Report(dry_run=True).exit_code == EXIT_OK
    assert Report(dry_run=True, created=["a.slice"]).exit_code == EXIT_PENDING
    assert Report(dry_run=True, drift=[{"unit": "a.slice", "changes": {}}]).exit_code == EXIT_PENDING
    assert Report(created=["a.slice"]).exit_code == EXIT_OK  # applied: nothing pending
    assert Report(invalid=["pods/x.yaml: bad"]).exit_code == EXIT_INVALID
    assert Report(invalid=["pods/x.yaml: bad"], errors=["update a.slice: refused"]).exit_code == EXIT_ERROR
    assert Report(errors=["x"], aborted=True).exit_code == EXIT_INVALID
    assert Report(dry_run=True, errors=["x"], created=["a.slice"]).exit_code == EXIT_ERROR


def test_what_a_sync_changed_beside_a_units_properties_is_one_update_of_it():
    """A container's own cgroup (podman update) and its threads' CPUs (cgroup v1, static) are
    reported as an update of the container's scope, once, in the text and the JSON: a sync that
    did them is never "nothing to do" nor stamped as such."""
    from sdqos.cli.render import sync_text
    from sdqos.reconcile.noop import nothing_done

    r = Report(updated=[{"unit": "b.scope", "changes": {"CPUWeight": [100, 200]}}])
    r.note_update("a.scope", "container", {"cpuset/cpuset.cpus": ["0-1", "0"]})
    r.note_update("b.scope", "affinity", {"cpus": "1", "threads": {"0": 1, "0-1": 2}})
    assert r.as_json()["updated"] == [
        {"unit": "b.scope", "changes": {"CPUWeight": [100, 200]}, "affinity": {"cpus": "1", "threads": {"0": 1, "0-1": 2}}},
        {"unit": "a.scope", "changes": {}, "container": {"cpuset/cpuset.cpus": ["0-1", "0"]}}]
    assert r.changed and not nothing_done(r)
    text = sync_text(r).splitlines()
    assert text[0].startswith("0 created, 2 updated,"), text
    assert "  updated  b.scope: CPUWeight weight 100 → weight 200, CPU affinity 0 → 1 (1 thread), CPU affinity 0-1 → 1 (2 threads)" in text
    assert "  updated  a.scope: container cpuset.cpus 0-1 → 0" in text
    alone = Report()
    alone.note_update("a.scope", "affinity", {"cpus": "1", "threads": {"0-1": 1}})
    assert not nothing_done(alone) and "nothing to do" not in sync_text(alone)
    drift = Report(drift=[{"unit": "a.scope", "changes": {"MemoryLimit": [1, 2]},
                           "container": {"cpu/cpu.shares": [77, 512]}}])
    assert "a.scope: MemoryLimit 1 B → 2 B, container cpu.shares 77 → 512 (changed outside sdqos; restored)" \
        in sync_text(drift), sync_text(drift)
