"""Prometheus text format for node_exporter's textfile collector: per unit (entitlement, usage,
drift, class) and per sync (duration, changes, errors, last success). Written atomically, so the
collector never reads half a file."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from sdqos.host import rundir
# The last-sync record's schema lives with the store (host/rundir.py); its names here are the CLI's
from sdqos.host.rundir import LEFTOVERS, budget_record, load_sync_record, record_sync, remove_leftovers  # noqa: F401

if TYPE_CHECKING:  # a sync records its metrics without importing the status machinery
    from sdqos.cli.status import Status

LAST_SYNC = rundir.LAST_SYNC.name


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**kw: str | None) -> str:
    return "{" + ",".join(f'{k}="{_esc(str(v))}"' for k, v in kw.items() if v is not None) + "}"


def _number(value: float | int) -> str:
    """A sample value as the text format wants it, exactly: integers as they are, floats in full
    (the shortest text that reads back as the same float; ``%g`` kept six digits, which put a Unix
    timestamp an hour off), infinities and NaN as Prometheus spells them."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Out:
    """Samples grouped by metric family: the text format wants each family in one block."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[str, str, list[str]]] = {}

    def metric(self, name: str, kind: str, help_: str, labels: str, value: float) -> None:
        family = self.families.setdefault(name, (kind, help_, []))
        family[2].append(f"{name}{labels} {_number(value)}")

    @property
    def lines(self) -> list[str]:
        out = []
        for name, (kind, help_, samples) in self.families.items():
            out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", *samples]
        return out


def node_metrics(status: Status, out: _Out) -> None:
    """The node's eviction signals, thresholds and conditions (status's ``node``)."""
    node = status.node
    if node is None:
        return
    for c, on in node["conditions"].items():
        out.metric("sdqos_node_condition", "gauge", "1 if kubelet's node condition holds now (eviction thresholds).",
                   _labels(condition=c), int(on))
    for sig in node["signals"]:
        if sig["available"] is None:
            continue
        out.metric("sdqos_node_signal_available", "gauge", "An eviction signal's value now (bytes; processes for "
                   "pid.available).", _labels(signal=sig["signal"]), sig["available"])
        for t in sig["thresholds"]:
            out.metric("sdqos_node_eviction_threshold", "gauge", "Below this, node-pressure eviction acts (hard: at "
                       "once; soft: after its grace period).", _labels(signal=sig["signal"], hard=str(t["hard"]).lower()),
                       t["amount"])


def cpu_metrics(status: Status, out: _Out) -> None:
    """cpuManagerPolicy static only (status's ``cpuManager`` and its containers' ``cpus``): the
    exclusive CPUs held, in all and per container, and the shared pool's size."""
    cm = status.cpu_manager
    if cm is None:
        return
    out.metric("sdqos_cpu_exclusive_cpus", "gauge", "CPUs the static CPU manager gave containers exclusively.", "",
               cm["exclusiveCount"])
    out.metric("sdqos_cpu_shared_pool_cpus", "gauge", "CPUs in the static CPU manager's shared pool.", "",
               cm["sharedPoolCount"])
    for r in status.rows:
        if r.kind == "container" and r.cpus is not None and r.cpus["exclusive"]:
            out.metric("sdqos_container_exclusive_cpus", "gauge", "Exclusive CPUs a container holds (static CPU manager).",
                       _labels(unit=r.unit, pod=f"{r.namespace}/{r.pod}", container=r.container),
                       r.cpus["count"])


def unit_metrics(status: Status, out: _Out) -> None:
    for r in status.rows:
        pod = f"{r.namespace}/{r.pod}" if r.kind in ("pod", "container") and r.pod else None
        container = r.container if r.kind == "container" else None
        vm = r.vm if r.kind == "vm" else None
        lab = _labels(unit=r.unit)
        out.metric("sdqos_unit_info", "gauge", "A unit in the QoS tree (always 1).",
                   _labels(unit=r.unit, kind=r.kind, parent=r.parent, qos=r.qos, pod=pod, container=container, vm=vm), 1)
        out.metric("sdqos_unit_running", "gauge", "1 if the unit is active.", lab, int(r.running))
        e = r.entitled
        if (v := e.get("cpuShares")) is not None:
            out.metric("sdqos_unit_cpu_shares", "gauge", "Entitled CPU shares (cgroup v1).", lab, v)
        if (v := e.get("cpuWeight")) is not None:
            out.metric("sdqos_unit_cpu_weight", "gauge", "Entitled CPU weight (cgroup v2).", lab, v)
        if (v := e.get("cpuQuotaPerSecUSec")) is not None:
            out.metric("sdqos_unit_cpu_quota_cores", "gauge", "CPU quota in cores (absent: no quota).", lab,
                       v / 1e6)
        if (v := e.get("memoryLimit")) is not None:
            out.metric("sdqos_unit_memory_limit_bytes", "gauge", "Memory limit (absent: unlimited).", lab, v)
        if (v := e.get("tasksMax")) is not None:
            out.metric("sdqos_unit_tasks_max", "gauge", "Tasks limit (absent: unlimited).", lab, v)
        u = r.usage
        if (used := u.get("memoryBytes")) is not None:
            out.metric("sdqos_unit_memory_usage_bytes", "gauge", "Memory in use (MemoryCurrent).", lab, used)
        if (used := u.get("cpuCores")) is not None:
            out.metric("sdqos_unit_cpu_usage_cores", "gauge", "CPU used over the sampling interval, in cores.", lab,
                       float(used))
        if (used := u.get("tasks")) is not None:
            out.metric("sdqos_unit_tasks", "gauge", "Tasks in the unit (TasksCurrent).", lab, used)
        if r.oom_score_adj:
            out.metric("sdqos_unit_oom_score_adj", "gauge", "oom_score_adj of the unit's processes (lowest).", lab,
                       r.oom_score_adj[0])
        if r.kind in ("container", "vm") or r.oom_killed:
            out.metric("sdqos_oom_kills_total", "counter", "Processes the kernel OOM-killed in the unit since boot.",
                       _labels(unit=r.unit, kind=r.kind, qos=r.qos, pod=pod, container=container, vm=vm),
                       (r.oom_killed or {}).get("count", 0))
        out.metric("sdqos_unit_drift", "gauge", "1 if a live value differs from the plan.", lab, int("drift" in r.flags))
        out.metric("sdqos_unit_clamped", "gauge", "1 if the last sync raised a memory limit to the unit's usage "
                   "(the plan wanted less).", lab, int("clamped-to-usage" in r.flags))
        out.metric("sdqos_unit_flagged", "gauge", "1 if status flags the unit (see sdqos status).", lab, int(bool(r.flags)))


def sync_metrics(rec: dict, out: _Out) -> None:
    if not rec:
        return
    out.metric("sdqos_sync_last_run_timestamp_seconds", "gauge", "When the last sync ran.", "", float(rec["timestamp"]))
    out.metric("sdqos_sync_duration_seconds", "gauge", "How long the last sync took.", "", float(rec["durationSeconds"]))
    for what in ("created", "updated", "removed", "drift"):
        out.metric("sdqos_sync_changes", "gauge", "Units the last sync changed, by kind of change.", _labels(change=what), rec[what])
    out.metric("sdqos_sync_errors", "gauge", "Errors in the last sync.", "", rec["errors"])
    out.metric("sdqos_sync_invalid_inputs", "gauge", "Invalid inputs in the last sync.", "", rec["invalid"])
    out.metric("sdqos_sync_success", "gauge", "1 if the last sync had no errors.", "", int(rec["success"]))
    if rec.get("lastSuccess") is not None:
        out.metric("sdqos_sync_last_success_timestamp_seconds", "gauge", "When a sync last succeeded.", "",
                   float(rec["lastSuccess"]))


def render(status: Status | None, rec: dict, evictions: dict[str, dict[str, int]] | None = None) -> str:
    """``evictions``: node-pressure evictions since boot, workload key → signal → count
    (reconcile/evict.py's ``load_counts``)."""
    out = _Out()
    if status is not None:
        unit_metrics(status, out)
        node_metrics(status, out)
        cpu_metrics(status, out)
    sync_metrics(rec, out)
    eviction_metrics(evictions or {}, out)
    return "\n".join(out.lines) + "\n"


def eviction_metrics(counts: dict[str, dict[str, int]], out: _Out) -> None:
    for key, by_signal in sorted(counts.items()):
        kind, _, name = key.partition(":")
        pod, vm = (name, None) if kind == "pod" else (None, name)
        for signal, n in sorted(by_signal.items()):
            out.metric("sdqos_evictions_total", "counter", "Pods and VMs node-pressure eviction stopped, since boot.",
                       _labels(kind=kind, pod=pod, vm=vm, signal=signal), n)


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a temp file next to `path`, fsync, rename over it (HostError on any failure)."""
    rundir.write_atomic(path, text, mode)
