"""Issue 31's "Done when": explain, plan, status, metrics and sync agree on every value for the same
inputs. Shared by the v1 sandbox test (tests/reconcile/test_agreement_sandbox.py) and the v2 guest
test (tests/v2/test_v2_agreement.py): each gathers what every command says of every unit, and the
truth (systemd over D-Bus), and :func:`disagreements` names unit, property and commands that differ.

A value is compared as the command means it: ``plan`` shows the plan (the value kubelet's rules
give: for a clamped limit the *wanted* one); ``explain``, ``status``, ``metrics`` and systemd the
value set (a clamped limit at its usage), explain with the formula's value beside it as ``wanted``.
The last sync's record carries each clamp's wanted and set value, so both sides are checked
against it."""

from __future__ import annotations

import json
import re

INFINITY = 2**64 - 1
# status's entitled keys and metrics' gauges, by property (the ones they show)
STATUS_KEY = {"CPUShares": "cpuShares", "CPUWeight": "cpuWeight", "CPUQuotaPerSecUSec": "cpuQuotaPerSecUSec",
              "MemoryLimit": "memoryLimit", "MemoryMax": "memoryLimit", "TasksMax": "tasksMax"}
METRIC = {"CPUShares": "sdqos_unit_cpu_shares", "CPUWeight": "sdqos_unit_cpu_weight",
          "CPUQuotaPerSecUSec": "sdqos_unit_cpu_quota_cores", "MemoryLimit": "sdqos_unit_memory_limit_bytes",
          "MemoryMax": "sdqos_unit_memory_limit_bytes", "TasksMax": "sdqos_unit_tasks_max"}


def plan_values(doc: dict) -> dict[str, dict[str, int]]:
    """unit → property → value, from ``plan -o json``: every unit, every pod's containers."""
    out = {u["name"]: dict(u["properties"]) for u in doc["units"]}
    for p in doc.get("pods", []):
        out.setdefault(p["slice"], {}).update(p["properties"])
        for c in p["containers"]:
            out.setdefault(c["scope"], {}).update(c["properties"])
    return out


def explain_values(doc: dict) -> dict[str, dict[str, dict]]:
    """unit → property → {value, wanted?}, from ``explain NS/POD -o json``: the pod, its
    containers, its tiers (a clamped value: the one set, with the formula's as ``wanted``)."""
    out: dict[str, dict[str, dict]] = {}

    def pick(values: dict) -> dict[str, dict]:
        return {k: {f: v[f] for f in ("value", "wanted") if f in v} for k, v in values.items()}
    for p in doc["pods"]:
        out[p["slice"]] = pick(p["properties"])
        for c in p["containers"]:
            out[c["scope"]] = pick(c["properties"])
        for unit, values in p["tiers"].items():
            out[unit] = pick(values)
    return out


def status_values(doc: dict) -> dict[str, dict[str, int | None]]:
    """unit → status key → value (None: unlimited), from ``status -o json``."""
    return {r["unit"]: dict(r["entitled"]) for r in doc["units"]}


def metric_values(text: str) -> dict[str, dict[str, float]]:
    """unit → metric → value, the sdqos_unit_* gauges with only a unit label."""
    out: dict[str, dict[str, float]] = {}
    for ln in text.splitlines():
        m = re.match(r'^(sdqos_unit_\w+)\{unit="([^"]+)"\} (\S+)$', ln)
        if m:
            out.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
    return out


def from_status(value: int | None | str) -> int | str:
    return INFINITY if value is None else value


def from_metric(prop: str, value: float | None) -> int:
    if value is None:
        return INFINITY  # absent: unlimited
    return round(value * 1e6) if prop == "CPUQuotaPerSecUSec" else int(value)


class Agreement:
    """Per unit and property, what each source says: ``set`` (the value applied: systemd, status,
    metrics, the last sync's record) and ``wanted`` (the plan's: plan, explain, a clamp's wanted).
    Without a clamp the two are one value, so every source must say the same."""

    def __init__(self) -> None:
        self.said: dict[tuple[str, str], dict[str, object]] = {}
        self.problems: list[str] = []

    def say(self, unit: str, prop: str, source: str, value: object) -> None:
        self.said.setdefault((unit, prop), {})[source] = value

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def disagreements(self) -> list[str]:
        out = list(self.problems)
        for (unit, prop), by in sorted(self.said.items()):
            if len({json.dumps(v) for v in by.values()}) > 1:
                out.append(f"{unit} {prop}: " + ", ".join(f"{s} says {v}" for s, v in sorted(by.items())))
        return out


def compare(*, truth: dict[str, dict[str, int]], plan: dict, explains: list[dict], status: dict,
            metrics: str, dry_run: dict, sync: dict, last_sync: dict, kept: set[str]) -> list[str]:
    """Every owned property of every unit in ``truth`` (unit → property → what systemd holds)
    against what each command says; the disagreements, each naming unit, property and sources."""
    a = Agreement()
    clamps = {(c["unit"], c["property"]): c for c in last_sync.get("adjustments", [])}
    planned = plan_values(plan)
    explained: dict[str, dict[str, dict]] = {}
    for doc in explains:
        for unit, values in explain_values(doc).items():
            for prop, v in values.items():
                if prop in explained.get(unit, {}) and explained[unit][prop] != v:
                    a.problem(f"{unit} {prop}: explain of two pods says {explained[unit][prop]} and {v}")
            explained.setdefault(unit, {}).update(values)
    rows = {r["unit"]: r for r in status["units"]}
    me = metric_values(metrics)
    for (unit, prop) in clamps:
        if unit not in truth or prop not in truth[unit]:
            a.problem(f"{unit} {prop}: the last sync recorded a clamp of a property systemd does not show")
    for unit, props in truth.items():
        row = rows.get(unit)
        if row is None:
            a.problem(f"{unit}: status has no row for it")
        else:
            if unit in kept and "kept" not in row["flags"]:
                a.problem(f"{unit}: sync kept it, status flags {row['flags']}")
            if row.get("drift") or "drift" in row["flags"]:
                a.problem(f"{unit}: status shows drift {row['drift']} right after a sync")
        m = me.get(unit, {})
        if row is not None and m.get("sdqos_unit_drift", 0) != 0:
            a.problem(f"{unit}: metrics sdqos_unit_drift is {m.get('sdqos_unit_drift')} right after a sync")
        clamped_props = [p for (u, p) in clamps if u == unit]
        if row is not None:
            if clamped_props and "clamped-to-usage" not in row["flags"]:
                a.problem(f"{unit}: the last sync clamped {clamped_props}, status flags {row['flags']}")
            if not clamped_props and "clamped-to-usage" in row["flags"]:
                a.problem(f"{unit}: status flags clamped-to-usage, the last sync clamped nothing of it")
            if m.get("sdqos_unit_clamped", 0) != (1 if clamped_props else 0):
                a.problem(f"{unit}: metrics sdqos_unit_clamped is {m.get('sdqos_unit_clamped')}, "
                          f"the last sync clamped {clamped_props}")
        for prop, value in props.items():
            clamp = clamps.get((unit, prop))
            a.say(unit, prop, "systemd", value)
            wanted = prop
            if clamp is not None:
                a.say(unit, prop, "last-sync.json set", clamp["set"])
                wanted = prop + " (wanted)"
                a.say(unit, wanted, "last-sync.json wanted", clamp["wanted"])
                reason = (row or {}).get("reasons", {}).get("clamped-to-usage", "")
                if "the plan wanted" not in reason:
                    a.problem(f"{unit}: status's clamp reason {reason!r} names no wanted value")
            if unit not in kept:  # a kept pod's file is invalid: plan and explain do not show its slice
                if unit not in planned or prop not in planned[unit]:
                    a.problem(f"{unit} {prop}: plan -o json does not show it")
                else:
                    a.say(unit, wanted, "plan", planned[unit][prop])
                if unit in explained:
                    ex = explained[unit].get(prop, {})
                    a.say(unit, prop, "explain", ex.get("value", "absent"))
                    if clamp is not None:
                        a.say(unit, wanted, "explain", ex.get("wanted", "absent"))
                    elif "wanted" in ex:
                        a.problem(f"{unit} {prop}: explain shows a wanted value {ex['wanted']}, the last sync "
                                  "recorded no clamp of it")
            if prop in STATUS_KEY and row is not None:
                a.say(unit, prop, "status", from_status(row["entitled"].get(STATUS_KEY[prop], "absent")))
                if row is not None and prop in METRIC:
                    a.say(unit, prop, "metrics", from_metric(prop, m.get(METRIC[prop])))
    # the dry run right after: nothing to do but follow a clamped limit's usage (kubelet's
    # retrySetMemoryReserve: the limit is the usage, which moves by a page now and then)
    for key in ("created", "updated", "removed", "reset", "drift"):
        for item in dry_run.get(key) or []:
            changes = item.get("changes", {}) if isinstance(item, dict) else {}
            follows = key == "updated" and changes and all(
                (item["unit"], p) in clamps and new >= clamps[(item["unit"], p)]["wanted"]
                for p, (_old, new) in changes.items())
            if not follows:
                a.problem(f"sync --dry-run would still do {key} {item} right after sync (sync and its dry run disagree)")
    if dry_run.get("errors") != sync.get("errors"):
        a.problem(f"sync --dry-run errors {dry_run.get('errors')}, sync's {sync.get('errors')}")
    if sorted(dry_run.get("kept", [])) != sorted(sync.get("kept", [])):
        a.problem(f"sync kept {sorted(sync.get('kept', []))}, sync --dry-run keeps {sorted(dry_run.get('kept', []))}")
    return a.disagreements()
