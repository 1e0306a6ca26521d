"""Issue 31's "Done when" on cgroup v1 (the sandbox systemd, real processes): explain, plan, status,
metrics and sync agree on every value of every unit for one config that has all three things the
plan alone does not know — a scope in machine.slice counted in the node budget, a tier clamped to
its usage, and a kept pod (running, its file became invalid) — and systemd holds those values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sdqos import sandbox as sbx
from sdqos.host.systemd import unit_path
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..agreement import compare
from ..sbhelpers import cgroup_rel, kernel, pids_below, sdqos_in, wait_for
from .test_budget_sandbox import foreign, kill

MiB = 2**20
HOLD = "import sys, time; b = b'\\x01' * int(sys.argv[1]); time.sleep(600)"  # touches every page
NODE = 'capacity: {cpu: "2", memory: 1Gi, pids: "100000"}\nfeatureGates: {QOSReserved: true}\nqosReserved: {memory: 100%}\n'
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
{resources}"""
BESTEFFORT = POD.format(name="e", resources="")
BURSTABLE = POD.format(name="b", resources="    resources:\n      requests: {cpu: 100m, memory: 500Mi}\n")
KEPT = POD.format(name="k", resources="    resources:\n      requests: {cpu: 300m, memory: 64Mi}\n"
                                      "      limits: {cpu: 500m, memory: 128Mi}\n")
GUARANTEED = POD.format(name="g", resources="    resources:\n      limits: {cpu: 200m, memory: 64Mi}\n")


def pod_slice(qos: str, name: str) -> str:
    return f"kubepods-{qos}-pod{stable_uid('t', name).replace('-', '_')}.slice" if qos else \
        f"kubepods-pod{stable_uid('t', name).replace('-', '_')}.slice"


def out(sb, *args: str, ok=(0,)) -> str:
    r = sdqos_in(sb, *args)
    assert r.returncode in ok, f"sdqos {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r.stdout


def run_pod(sb, cfg: Path, name: str, qos: str, *argv: str) -> subprocess.Popen:
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), f"t/{name}", "app", "--", *argv],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rel = cgroup_rel(container_scope(stable_uid("t", name), "app"), pod_slice(qos, name))
    wait_for(lambda: pids_below(sb.cgroup_path("pids") / rel), what=f"{name} runs")
    return p


def live_values(sb, unit: str, props: list[str]) -> dict[str, int | str]:
    """What systemd holds, exactly (busctl; systemctl show pretty-prints)."""
    iface = "org.freedesktop.systemd1." + unit.rsplit(".", 1)[1].capitalize()
    r = sbx.run(sb, ["busctl", "get-property", "org.freedesktop.systemd1", unit_path(unit), iface, *props], check=True)
    values: dict[str, int | str] = {}
    for p, line in zip(props, r.stdout.splitlines()):
        sig, raw = line.split(" ", 1)
        values[p] = json.loads(raw) if sig == "s" else int(raw)
    return values


def active(sb, unit: str) -> bool:
    return sb.systemctl("is-active", unit).stdout.strip() == "active"


def test_explain_plan_status_metrics_and_sync_agree_on_every_value(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = tmp_path / "cfg"
    (cfg / "pods").mkdir(parents=True)
    (cfg / "node.yaml").write_text(NODE)
    for name, text in (("e", BESTEFFORT), ("k", KEPT), ("g", GUARANTEED)):
        (cfg / "pods" / f"{name}.yaml").write_text(text)
    out(sb, "sync", "--config", str(cfg))
    guest = (sys.executable, "-c", HOLD, str(150 * MiB))
    procs = [foreign(sb, "guest", "MemoryLimit=200M", argv=guest)]  # counted by its usage (below its limit)
    try:
        wait_for(lambda: kernel(sb, "memory", "machine.slice/guest.scope", "memory.usage_in_bytes") >= 150 * MiB,
                 what="the guest holds", timeout=60)
        procs.append(run_pod(sb, cfg, "k", "burstable", "sleep", "600"))
        procs.append(run_pod(sb, cfg, "e", "besteffort", sys.executable, "-c", HOLD, str(300 * MiB)))
        e_rel = cgroup_rel(container_scope(stable_uid("t", "e"), "app"), pod_slice("besteffort", "e"))
        wait_for(lambda: kernel(sb, "memory", e_rel, "memory.usage_in_bytes") >= 300 * MiB, what="e holds", timeout=60)
        # b reserves 500 MiB (qosReserved 100 %): BestEffort gets 1 GiB − guest − 64 − 64 − 500 < 300 MiB held
        (cfg / "pods" / "b.yaml").write_text(BURSTABLE)
        (cfg / "pods" / "k.yaml").unlink()  # k leaves the config; its removal is held back: kept, counted
        hold_back = ("--max-removals", "0")
        rep = json.loads(out(sb, "sync", "--config", str(cfg), "-o", "json", *hold_back, ok=(1,)))
        kept = {u for u in rep["kept"]}
        assert pod_slice("burstable", "k") in kept, rep
        last = json.loads(sbx.run(sb, ["cat", "/run/sdqos/last-sync.json"], check=True).stdout)
        assert [(a["unit"], a["property"]) for a in last["adjustments"]] == [("kubepods-besteffort.slice",
                                                                              "MemoryLimit")], last
        ((guest_unit, counted),) = [(m["unit"], m["memory"]) for m in last["machines"]]
        assert guest_unit == "guest.scope" and 150 * MiB <= counted <= 200 * MiB, last

        plan = json.loads(out(sb, "plan", "--config", str(cfg), "-o", "json"))
        explains = [json.loads(out(sb, "explain", f"t/{n}", "--config", str(cfg), "-o", "json")) for n in "ebg"]
        status = json.loads(out(sb, "status", "--config", str(cfg), "-o", "json", "--interval", "0"))
        metrics = out(sb, "metrics", "--config", str(cfg), "--interval", "0")
        dry = json.loads(out(sb, "sync", "--dry-run", "--config", str(cfg), "-o", "json", *hold_back, ok=(1,)))

        # the truth: every unit sdqos holds values in (planned and running, bound, kept), from systemd
        owned = {u["name"]: sorted(u["properties"]) for u in plan["units"]}
        for p in plan["pods"]:
            owned[p["slice"]] = sorted(p["properties"])
            owned.update({c["scope"]: sorted(c["properties"]) for c in p["containers"]})
        tier_props = owned["kubepods-burstable.slice"]
        kept_units = {u: owned.get(u, tier_props if u.endswith(".slice") else owned[container_scope(
            stable_uid("t", "e"), "app")]) for u in kept}
        truth = {u: live_values(sb, u, props) for u, props in {**owned, **kept_units}.items() if active(sb, u)}
        assert pod_slice("burstable", "k") in truth and container_scope(stable_uid("t", "e"), "app") in truth

        problems = compare(truth=truth, plan=plan, explains=explains, status=status, metrics=metrics,
                           dry_run=dry, sync=rep, last_sync=last, kept=kept)
        assert problems == [], "commands disagree:\n" + "\n".join(problems)
        # and the three things are really there: machine.slice counted, the clamp set, the kept pod counted
        assert truth["kubepods.slice"]["MemoryLimit"] == 1024 * MiB - counted
        clamp = last["adjustments"][0]
        assert clamp["wanted"] == 1024 * MiB - counted - 628 * MiB
        assert truth["kubepods-besteffort.slice"]["MemoryLimit"] == clamp["set"] >= 300 * MiB
        assert truth["kubepods-burstable.slice"]["CPUShares"] == (300 + 100) * 1024 // 1000
        text = out(sb, "explain", "t/e", "--config", str(cfg))  # the text says it too: set, then wanted
        assert str(clamp["set"]) in text and str(clamp["wanted"]) in text
        assert "set by the last sync: MemoryLimit raised to its usage" in text, text
    finally:
        sb.systemctl("stop", *(container_scope(stable_uid("t", n), "app") for n in "ke"), "guest.scope")
        kill(*procs)
