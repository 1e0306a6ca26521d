"""Issue 31's "Done when" on a real cgroup v2 kernel with MemoryQoS (memory.high/min/low in play):
explain, plan, status, metrics and sync agree on every value of every unit for one config with a
scope in machine.slice counted in the node budget, a tier clamped to its usage and a kept pod (its
file gone, its removal held back by --max-removals), and systemd holds those values. One suite
(trixie) keeps CI time down; the v1 twin is tests/reconcile/test_agreement_sandbox.py."""

from __future__ import annotations

import json
import time

import pytest

from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..agreement import compare
from .conftest import SUITES
from .test_v2_guest import cgroup_dir

MiB = 2**20
SUITE = "trixie"
NODE = """\
capacity: {cpu: "2", memory: 1Gi, pids: "100000"}
featureGates: {MemoryQoS: true, QOSReserved: true}
memoryReservationPolicy: TieredReservation
qosReserved: {memory: 100%}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
{resources}"""
PODS = {
    "e": POD.format(name="e", resources=""),
    "k": POD.format(name="k", resources="    resources:\n      requests: {cpu: 300m, memory: 64Mi}\n"
                                        "      limits: {cpu: 500m, memory: 128Mi}\n"),
    "g": POD.format(name="g", resources="    resources:\n      limits: {cpu: 200m, memory: 64Mi}\n"),
}
BURSTABLE = POD.format(name="b", resources="    resources:\n      requests: {cpu: 100m, memory: 500Mi}\n")
HOLD = "python3 -c \"import time; b = b'\\x01' * ({mib} << 20); time.sleep(100000)\""
CFG = "/root/agree"


def _wait(cond, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def _current(g, d: str) -> int:
    r = g.run(f"cat {d}/memory.current")
    return int(r.stdout) if r.rc == 0 and r.stdout.strip() else 0


def held(g, unit: str, props: list[str]) -> dict[str, int | str]:
    """The unit's values as systemd holds them (busctl: exact numbers)."""
    iface = "org.freedesktop.systemd1." + ("Scope" if unit.endswith(".scope") else "Slice")
    path = "/org/freedesktop/systemd1/unit/" + "".join(c if c.isalnum() else f"_{ord(c):02x}" for c in unit)
    out = g.check(f"busctl get-property org.freedesktop.systemd1 {path} {iface} {' '.join(props)}")
    values: dict[str, int | str] = {}
    for p, line in zip(props, out.splitlines()):
        sig, raw = line.split(" ", 1)
        values[p] = json.loads(raw) if sig == "s" else int(raw)
    return values


def sdqos(g, args: str, ok=(0,)) -> str:
    r = g.run(f"sdqos {args}")
    assert r.rc in ok, f"sdqos {args}: exit {r.rc}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.mark.parametrize("v2session", [SUITE], indirect=True)
def test_v2_explain_plan_status_metrics_and_sync_agree_on_every_value(v2guest):
    if SUITE not in SUITES:
        pytest.skip(f"{SUITE} is not in SDQOS_V2_SUITES")
    g = v2guest
    files = "".join(f"cat > {CFG}/pods/{n}.yaml <<'X'\n{text}X\n" for n, text in PODS.items())
    g.check(f"rm -rf {CFG} && mkdir -p {CFG}/pods && cat > {CFG}/node.yaml <<'X'\n{NODE}X\n{files}")
    sdqos(g, f"sync --config {CFG}")
    uid = {n: stable_uid("t", n).replace("-", "_") for n in "ekgb"}
    e_slice, k_slice, b_slice = (f"kubepods-besteffort-pod{uid['e']}.slice", f"kubepods-burstable-pod{uid['k']}.slice",
                                 f"kubepods-burstable-pod{uid['b']}.slice")
    e_scope, k_scope = (container_scope(stable_uid("t", n), "app") for n in "ek")
    e_dir, k_dir = f"{cgroup_dir(e_slice)}/{e_scope}", f"{cgroup_dir(k_slice)}/{k_scope}"
    try:
        g.check("(systemd-run --scope --slice machine.slice --unit guest -p MemoryMax=200M "
                f"{HOLD.format(mib=150)} >/dev/null 2>&1 &)")
        _wait(lambda: _current(g, "/sys/fs/cgroup/machine.slice/guest.scope") >= 150 * MiB, "the guest holds 150 MiB")
        g.check(f"(sdqos run --config {CFG} t/k app -- sleep 100000 >/dev/null 2>&1 &)")
        g.check(f"(sdqos run --config {CFG} t/e app -- {HOLD.format(mib=300)} >/dev/null 2>&1 &)")
        _wait(lambda: _current(g, e_dir) >= 300 * MiB, "e holds 300 MiB")
        _wait(lambda: g.run(f"grep -q . {k_dir}/cgroup.procs").rc == 0, "k runs")
        # b reserves 500 MiB: BestEffort gets 1 GiB − guest − 64 − 64 − 500 MiB < the 300 MiB e holds;
        # k leaves the config and its removal is held back: kept, counted in its tier
        g.check(f"cat > {CFG}/pods/b.yaml <<'X'\n{BURSTABLE}X\nrm {CFG}/pods/k.yaml")
        hold_back = "--max-removals 0"
        rep = json.loads(sdqos(g, f"sync --config {CFG} -o json {hold_back}", ok=(1,)))
        kept = set(rep["kept"])
        assert k_slice in kept, rep
        last = json.loads(g.check("cat /run/sdqos/last-sync.json"))
        assert [(a["unit"], a["property"]) for a in last["adjustments"]] == [("kubepods-besteffort.slice",
                                                                              "MemoryMax")], last
        ((guest_unit, counted),) = [(m["unit"], m["memory"]) for m in last["machines"]]
        assert guest_unit == "guest.scope" and 150 * MiB <= counted <= 200 * MiB, last

        plan = json.loads(sdqos(g, f"plan --config {CFG} -o json"))
        explains = [json.loads(sdqos(g, f"explain t/{n} --config {CFG} -o json")) for n in "ebg"]
        status = json.loads(sdqos(g, f"status --config {CFG} -o json --interval 0"))
        metrics = sdqos(g, f"metrics --config {CFG} --interval 0")
        dry = json.loads(sdqos(g, f"sync --dry-run --config {CFG} -o json {hold_back}", ok=(1,)))

        owned = {u["name"]: sorted(u["properties"]) for u in plan["units"]}
        for p in plan["pods"]:
            owned[p["slice"]] = sorted(p["properties"])
            owned.update({c["scope"]: sorted(c["properties"]) for c in p["containers"]})
        kept_units = {u: owned.get(u, owned[b_slice] if u.endswith(".slice") else owned[e_scope]) for u in kept}
        active = set(g.check("systemctl list-units --state=active --plain --no-legend 'kubepods*' 'sdqos-*' "
                             "machine.slice | awk '{print $1}'").split())
        truth = {u: held(g, u, props) for u, props in {**owned, **kept_units}.items() if u in active}
        assert k_slice in truth and e_scope in truth, sorted(truth)
        assert {"MemoryHigh", "MemoryMin", "MemoryLow"} <= set(truth[e_scope]) | set(truth["kubepods.slice"])

        problems = compare(truth=truth, plan=plan, explains=explains, status=status, metrics=metrics,
                           dry_run=dry, sync=rep, last_sync=last, kept=kept)
        assert problems == [], "commands disagree:\n" + "\n".join(problems)
        assert truth["kubepods.slice"]["MemoryMax"] == 1024 * MiB - counted
        clamp = last["adjustments"][0]
        assert clamp["wanted"] == 1024 * MiB - counted - 628 * MiB
        assert truth["kubepods-besteffort.slice"]["MemoryMax"] == clamp["set"] >= 300 * MiB
        assert truth["kubepods-burstable.slice"]["CPUWeight"] > 1  # k's and b's requests counted
    finally:
        g.run("systemctl stop guest.scope; pkill -f '[t]ime.sleep(100000)|[s]leep 100000'")
