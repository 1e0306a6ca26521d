"""status's CPU view without a host: the CPUS column and the affinity drift line in text, the
fields in JSON, the metrics gauges — and nothing of them, with nothing read, under policy none."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sdqos.cli import metrics
from sdqos.cli.status import Row, Status, mark_cpus, render_plain
from sdqos.plan.engine import build_plan
from tests.helpers import node


def _status(cpus: bool) -> Status:
    rows = [Row("kubepods.slice", "node", "-.slice", "node", None, True, {"cpuShares": 2048}),
            Row("sdqos-podu-app.scope", "container", "kubepods-podu.slice", "c", "Guaranteed", True,
                {"cpuShares": 1024}, flags=["drift"] if cpus else [], namespace="st", pod="gu", container="app"),
            Row("sdqos-podv-app.scope", "container", "kubepods-podv.slice", "c", "Burstable", True,
                {"cpuShares": 102}, namespace="st", pod="bu", container="app")]
    view = None
    if cpus:
        rows[1].cpus = {"cpus": "2-3", "count": 2, "exclusive": True, "affinityOff": {"41": "0-3", "42": "0-3"}}
        rows[2].cpus = {"cpus": "0-1", "count": 2, "exclusive": False, "affinityOff": {}}
        view = {"policy": "static", "sharedPool": "0-1", "exclusive": "2-3", "exclusiveCount": 2, "sharedPoolCount": 2}
    return Status("v1", rows, [], 0.0, {"pods": 2, "vms": 0, "running": 3, "units": 3, "drift": int(cpus),
                                        "flagged": int(cpus)}, cpu_manager=view)


@pytest.mark.parametrize("width", [None, 80, 50])
def test_cpus_column_and_affinity_drift_line(width):
    text = render_plain(_status(True), width)
    assert "drift (live → planned): CPU affinity 0-3 → 2-3 (2 threads)" in text
    if width != 50:  # (50 columns: one block a unit, the CPUs among its values)
        assert "CPUS" in text.splitlines()[0].split()
    assert ("exclusive 2-3" in text and "shared pool 0-1" in text) or width == 80 and "pool 0-1" in text


def test_json_and_metrics_only_under_static():
    on, off = _status(True).as_json(), _status(False).as_json()
    assert on["cpuManager"]["sharedPool"] == "0-1" and on["units"][1]["cpus"]["exclusive"] is True
    assert "cpuManager" not in off and all("cpus" not in u for u in off["units"])
    assert "CPUS" not in render_plain(_status(False)).splitlines()[0].split()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in
               text_string_to_metric_families(metrics.render(_status(True), {})) for s in fam.samples}
    assert samples[("sdqos_cpu_exclusive_cpus", ())] == 2 and samples[("sdqos_cpu_shared_pool_cpus", ())] == 2
    assert samples[("sdqos_container_exclusive_cpus",
                    (("container", "app"), ("pod", "st/gu"), ("unit", "sdqos-podu-app.scope")))] == 2
    assert len([k for k in samples if k[0] == "sdqos_container_exclusive_cpus"]) == 1
    assert "cpus" not in metrics.render(_status(False), {}).replace("cpu_", "")


def test_policy_none_reads_nothing(monkeypatch):
    from sdqos.host import cpustate

    def fail(*_a, **_k):
        raise AssertionError("the state file was read under policy none")

    monkeypatch.setattr(cpustate, "load", fail)
    plan = build_plan(node(), [], [], "v1")
    st = _status(False)
    assert mark_cpus(plan, st.rows, None, []) is None and all(r.cpus is None for r in st.rows)  # type: ignore[arg-type]
