"""`sdqos status` and `sdqos metrics` under cpuManagerPolicy static on cgroup v1, against the
sandbox's systemd and the real kernel: each container's CPUs (exclusive or the shared pool), a
thread whose affinity was changed behind sdqos's back flagged as drift (text and JSON) until a sync
sets it again, the gauges of exclusive CPUs and the shared pool. Under policy none nothing of it
appears."""

from __future__ import annotations

import json
import os

from prometheus_client.parser import text_string_to_metric_families

from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..cpufixtures import needs_cpus_0_and_1, one_pid
from ..reconcile.test_cpu_static_sandbox import config  # noqa: F401 (fixture)
from ..reconcile.test_scopes_sandbox import kill_all, run_bg
from ..sbhelpers import cgroup_rel, sdqos_in, sync_json

pytestmark = needs_cpus_0_and_1


def _status(sb, config, *extra) -> tuple[dict, str]:
    r = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0")
    assert r.returncode == 0, r.stderr
    t = sdqos_in(sb, "status", "--config", str(config), "--interval", "0", *extra)
    assert t.returncode == 0, t.stderr
    return json.loads(r.stdout), t.stdout


def _samples(sb, config) -> dict:
    r = sdqos_in(sb, "metrics", "--config", str(config), "--interval", "0")
    assert r.returncode == 0, r.stderr
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(r.stdout) for s in fam.samples}


def test_status_and_metrics_show_cpus_and_affinity_drift(clean_sandbox, config):
    sb = clean_sandbox
    gu_uid, bu_uid = stable_uid("st", "gu"), stable_uid("st", "bu")
    gu_scope, bu_scope = container_scope(gu_uid, "app"), container_scope(bu_uid, "app")
    gu_rel = cgroup_rel(gu_scope, f"kubepods-pod{gu_uid.replace('-', '_')}.slice")
    bu_rel = cgroup_rel(bu_scope, f"kubepods-burstable-pod{bu_uid.replace('-', '_')}.slice")
    gu = run_bg(sb, config, "st/gu", "app", "--", "sleep", "300")
    bu = None
    try:
        gu_pid = one_pid(sb, gu_rel)
        bu = run_bg(sb, config, "st/bu", "app", "--", "sleep", "300")
        one_pid(sb, bu_rel)
        sync_json(sb, config)
        st, text = _status(sb, config)
        units = {u["unit"]: u for u in st["units"]}
        assert st["cpuManager"] == {"policy": "static", "sharedPool": "0", "exclusive": "1", "exclusiveCount": 1,
                                    "sharedPoolCount": 1}
        assert units[gu_scope]["cpus"] == {"cpus": "1", "count": 1, "exclusive": True, "affinityOff": {}}
        assert units[bu_scope]["cpus"] == {"cpus": "0", "count": 1, "exclusive": False, "affinityOff": {}}
        gu2 = next(u for u in st["units"] if u["kind"] == "container" and u["pod"] == "gu2")  # not running: its pool
        assert gu2["cpus"]["cpus"] == "0" and not gu2["cpus"]["exclusive"]
        assert all("cpus" not in u for u in st["units"] if u["kind"] not in ("container", "vm"))
        assert "drift" not in units[gu_scope]["flags"] and st["summary"]["drift"] == 0
        lines = text.splitlines()
        assert lines[0].split()[:5] == ["UNIT", "NAME", "CLASS", "CPU", "CPUS"], lines[0]
        assert "exclusive 1" in next(ln for ln in lines if "st/gu/app" in ln)
        assert "shared pool 0" in next(ln for ln in lines if "st/bu/app" in ln)

        m = _samples(sb, config)
        assert m[("sdqos_cpu_exclusive_cpus", ())] == 1 and m[("sdqos_cpu_shared_pool_cpus", ())] == 1
        assert m[("sdqos_container_exclusive_cpus",
                  (("container", "app"), ("pod", "st/gu"), ("unit", gu_scope)))] == 1
        assert not any(k[0] == "sdqos_container_exclusive_cpus" and ("pod", "st/bu") in k[1] for k in m)

        os.sched_setaffinity(gu_pid, {0, 1})  # behind sdqos's back: status sees it, before any sync
        st, text = _status(sb, config)
        row = next(u for u in st["units"] if u["unit"] == gu_scope)
        # (thread ids as the sandbox's PID namespace numbers them)
        assert "drift" in row["flags"] and list(row["cpus"]["affinityOff"].values()) == ["0-1"], row
        assert st["summary"]["drift"] == 1
        assert "drift (live → planned): CPU affinity 0-1 → 1 (1 thread)" in text, text
        assert _samples(sb, config)[("sdqos_unit_drift", (("unit", gu_scope),))] == 1
        sync_json(sb, config)  # the sync sets it again: no drift left
        assert os.sched_getaffinity(gu_pid) == {1}
        st, _ = _status(sb, config)
        assert next(u for u in st["units"] if u["unit"] == gu_scope)["cpus"]["affinityOff"] == {}
        assert st["summary"]["drift"] == 0
    finally:
        kill_all(gu, bu)


def test_policy_none_adds_nothing(clean_sandbox, config):
    sb = clean_sandbox
    node = config / "node.yaml"
    node.write_text(node.read_text().replace("cpuManagerPolicy: static", "cpuManagerPolicy: none"))
    sync_json(sb, config)
    st, text = _status(sb, config)
    assert "cpuManager" not in st and all("cpus" not in u for u in st["units"])
    assert "CPUS" not in text.splitlines()[0].split()
    r = sdqos_in(sb, "metrics", "--config", str(config), "--interval", "0")
    assert r.returncode == 0 and "sdqos_cpu_" not in r.stdout and "exclusive_cpus" not in r.stdout
