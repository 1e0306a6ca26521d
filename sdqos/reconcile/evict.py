"""Node pressure now: the signals against their thresholds, kubelet's node conditions, and the
order workloads would be evicted in (one look, as one pass of kubelet's eviction manager's
synchronize; no history, so soft thresholds' grace periods and the pressure transition period
are shown, not waited for).

``assess`` is pure (plan + observations + per-workload stats → :class:`Assessment`); ``collect``
reads the stats from the kernel through sdqos/host/pressure.py; ``evict`` stops one workload and
``serve`` is the watching loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from sdqos import humanize as H
from sdqos.kube import eviction as ev
from sdqos.kube.model import MEMORY
from sdqos.plan.engine import Plan

if TYPE_CHECKING:
    from sdqos.host.systemd import SystemdAPI
    from sdqos.plan.engine import KeptPod


@dataclass(frozen=True, slots=True)
class Usage:
    """A running workload's working set (bytes) and process count."""

    memory: int
    processes: int
    units: frozenset[str] = frozenset()  # the units with processes in its cgroup (kernel's view)


@dataclass(slots=True)
class Assessment:
    observations: dict[str, ev.Observation]
    thresholds: tuple[ev.Threshold, ...]
    met: list[ev.Threshold]  # crossed now, grace periods not considered
    conditions: list[str]  # node conditions of the crossed thresholds
    reclaim: ev.Threshold | None  # what kubelet would reclaim for (a crossed hard threshold first)
    ranked: list[ev.Candidate]  # in eviction order for reclaim's signal (memory's when nothing is crossed)
    ranking_signal: str
    victim: ev.Candidate | None  # the one workload a hard threshold evicts now
    grace_period: int | None  # seconds it would get
    not_observed: list[str] = field(default_factory=list)  # signals with thresholds sdqos never observes


def moves_refused(plan: Plan) -> dict[str, "KeptPod"]:
    """Pods (namespace/name) whose move sync refused (a QoS-class or uid change): the pod still
    runs in the kept slice, with the class and requests it was synced with (last-sync.json)."""
    return {k.replaces: k for k in plan.kept if k.replaces}


def running_slice(plan: Plan, pp) -> str:
    """The slice a pod runs in: its planned one, or the one sync kept it in (a refused move)."""
    k = moves_refused(plan).get(pp.key)
    return k.unit if k is not None else pp.slice


def candidates(plan: Plan, pods: Mapping[str, Usage], vms: Mapping[str, Usage]) -> list[ev.Candidate]:
    """The running workloads (those with stats: kubelet's active pods) as eviction candidates; a
    pod kept in its old slice with the class and memory request it runs with there."""
    import dataclasses

    pod_level = plan.node.gate("PodLevelResources")
    refused = moves_refused(plan)
    out = []
    for pp in plan.pods:
        u = pods.get(pp.key)
        if u is not None:
            c = ev.pod_candidate(pp.pod, u.memory, u.processes, pod_level=pod_level)
            k = refused.get(pp.key)
            out.append(c if k is None else dataclasses.replace(c, qos_class=k.qos, memory_request=k.memory))
    for vp in plan.vms:
        u = vms.get(vp.vm.name)
        if u is not None:
            out.append(ev.vm_candidate(vp.vm, u.memory, u.processes))
    return out


def standing(plan: Plan, cands: list[ev.Candidate], pods: Mapping[str, Usage], vms: Mapping[str, Usage],
             record: Mapping[str, dict]) -> set[str]:
    """The candidates whose eviction stands (kube/eviction.py still_evicted): in the record (a pod
    with its manifest unchanged) and running no unit its eviction did not leave running."""
    evicted = {k: r.get("leftRunning") or [] for k, r in still_evicted(plan, record).items()}
    evicted.update({f"vm/{k[3:]}": r.get("leftRunning") or [] for k, r in record.items() if k.startswith("vm:")})
    running = {**{k: u.units for k, u in pods.items()}, **{f"vm/{k}": u.units for k, u in vms.items()}}
    return ev.still_evicted(cands, evicted, running)


def assess(plan: Plan, observations: Mapping[str, ev.Observation], pods: Mapping[str, Usage],
           vms: Mapping[str, Usage], passed: ev.Pass | None = None,
           record: Mapping[str, dict] | None = None) -> Assessment:
    """synchronize, one pass: thresholdsMet → nodeConditions → byEvictionPriority /
    getReclaimableThreshold → rank → the first workload evictPod accepts.

    Without ``passed`` (one look, no history) only a hard threshold picks a victim: a soft one
    needs its grace period observed first. With ``passed`` (kube/eviction.py:synchronize, over
    time) the thresholds whose grace period is over pick it, and its conditions are reported."""
    cfg = ev.config_of(plan.node)
    met = ev.thresholds_met(cfg.thresholds, observations)
    if passed is None:
        reclaim = ev.threshold_to_reclaim([t for t in met if t.hard]) or ev.threshold_to_reclaim(met)
        conditions = ev.node_conditions(met)
        acting = reclaim is not None and reclaim.hard
    else:
        reclaim = ev.threshold_to_reclaim(passed.act_on)
        conditions = passed.conditions
        acting = reclaim is not None
    signal = reclaim.signal if reclaim else ev.MEMORY_AVAILABLE
    cands = candidates(plan, pods, vms)
    gone = standing(plan, cands, pods, vms, record or {})
    ranked = ev.RANK_FUNCS[signal]([c for c in cands if c.name not in gone])
    victim = ev.victim(ranked) if acting else None
    grace = ev.eviction_grace_period(reclaim, victim, cfg.max_pod_grace_period) if victim and reclaim else None
    not_observed = sorted({t.signal for t in cfg.thresholds if t.signal not in observations})
    return Assessment(dict(observations), cfg.thresholds, met, conditions, reclaim, ranked, signal,
                      victim, grace, not_observed)


def rank_of(plan: Plan, key: str, pods: Mapping[str, Usage] | None, vms: Mapping[str, Usage] | None,
            unmeasured: str = "") -> dict:
    """One pod's place in kubelet's eviction orders (memory: rankMemoryPressure, PIDs:
    rankPIDPressure) among the running pods and VMs, and why — for ``explain``. ``pods``/``vms``
    None: usage could not be read (``unmeasured`` says why), so there is no rank."""
    pp = plan.pod(key)
    assert pp is not None
    pod_level = plan.node.gate("PodLevelResources")
    me = ev.pod_candidate(pp.pod, None, None, pod_level=pod_level)
    out: dict = {"qosClass": me.qos_class, "priority": me.priority, "memoryRequest": me.memory_request,
                 "notEvictable": me.why_not_evictable(), "usage": None, "processes": None,
                 "exceedsRequest": None, "orders": [], "why": None}
    if pods is None or vms is None:
        out["why"] = f"the rank needs usage, which could not be read ({unmeasured})"
        return out
    if key not in pods:
        out["why"] = ("not running: kubelet ranks only active pods (the rank needs usage; "
                      "it is ranked once its containers run)")
        return out
    u = pods[key]
    out.update(usage=u.memory, processes=u.processes, exceedsRequest=u.memory > me.memory_request)
    cands = candidates(plan, pods, vms)
    for signal in (ev.MEMORY_AVAILABLE, ev.PID_AVAILABLE):
        ranked = ev.RANK_FUNCS[signal](cands)
        i = next(n for n, c in enumerate(ranked) if c.name == key)
        c = ranked[i]
        ahead = ranked[:i]
        if signal == ev.PID_AVAILABLE:
            why = f"priority {c.priority}, then {c.processes} processes (rankPIDPressure: lower priority, then more processes)"
        else:
            over = "uses more than it requested" if c.exceeds_memory_request else "uses no more than it requested"
            why = (f"{over}, priority {c.priority}, usage above request {H.size(max(0, c.memory_usage - c.memory_request))}"  # type: ignore[operator]
                   " (rankMemoryPressure: over request first, then lower priority, then more above request)")
        if ahead:
            why += "; before it: " + ", ".join(a.name for a in ahead[:5]) + (f" and {len(ahead) - 5} more" if len(ahead) > 5 else "")
        out["orders"].append({"signal": signal, "rank": i + 1, "of": len(ranked), "why": why})
    return out


def collect(plan: Plan, root: Path | None = None, proc: Path | None = None, passed_from: ev.ManagerState | None = None,
            now: int | None = None, record: Mapping[str, dict] | None = None) -> tuple[Assessment, ev.ManagerState | None]:
    """Read the signals and every running pod's and VM's usage from the kernel, then assess —
    once (``passed_from`` None), or as the next pass after ``passed_from`` at ``now`` (ns);
    returns the assessment and the state to carry on. ``record``: the eviction record (workloads
    whose eviction stands are not ranked)."""
    observations, pods, vms = measure(plan, root, proc)
    if passed_from is None:
        return assess(plan, observations, pods, vms, record=record), None
    p = ev.synchronize(passed_from, ev.config_of(plan.node), observations, now if now is not None else 0)
    return assess(plan, observations, pods, vms, p, record), p.state


def measure(plan: Plan, root: Path | None = None, proc: Path | None = None):
    """(signals, running pods' usage by namespace/name, running VMs' usage by name)."""
    from sdqos.host import pressure as hp
    from sdqos.host.cgroupfs import cgroup_of

    root = root or hp.ROOT
    proc = proc or hp.PROC
    mode = plan.cgroup
    allocatable = plan.allocatable[MEMORY] if "pods" in plan.node.enforce_node_allocatable else None
    observations = hp.observe(plan.node, mode, allocatable, root, proc)

    def usage(cgroup: str) -> Usage | None:
        m = hp.memory_stat(cgroup, mode, root)
        if m is None:
            return None
        return Usage(m.working_set, hp.processes(cgroup, mode, root), frozenset(hp.running_units(cgroup, mode, root)))

    pods = {}
    for pp in plan.pods:
        u = usage(cgroup_of(running_slice(plan, pp), ""))
        if u is not None and u.processes:
            pods[pp.key] = u
    vms = {}
    for name, cgroup in vm_cgroups(plan, proc).items():
        u = usage(cgroup)
        if u is not None and u.processes:
            vms[name] = u
    return observations, pods, vms


def vm_cgroups(plan: Plan, proc: Path | None = None, libvirt_dir: Path | None = None) -> dict[str, str]:
    """Each declared VM's scope in machine.slice, as a cgroup path, found the way sync finds it
    (reconcile/binding.py): by name (spec.scope, or the one ``sdqos run --vm`` makes), else from
    its QEMU's PID — libvirt's record of the domain (PID checked to be that domain's QEMU), or
    its pid file (trusted as systemd trusts a PIDFile=) — read from /proc/PID/cgroup. A VM that is
    not running, or runs outside machine.slice, has none (it is not ranked: sync warns about it)."""
    from sdqos.host import procfs
    from sdqos.kube.naming import MACHINE_SLICE

    proc = proc or Path("/proc")
    out: dict[str, str] = {}
    domains = None
    for vp in plan.vms:
        if vp.scope:
            out[vp.vm.name] = f"/{MACHINE_SLICE}/{vp.scope}"
            continue
        pid = None
        if vp.vm.pid_file:
            from sdqos.reconcile.binding import read_pid_file

            pid = read_pid_file(vp.vm.pid_file, vm=vp.vm.name, proc=proc)
        elif vp.vm.libvirt_domain:
            if domains is None:
                from sdqos.host import libvirt

                domains = libvirt.running_domains(libvirt_dir or libvirt.RUN_DIR, proc=proc)
            dom = domains.get(vp.vm.libvirt_domain)
            pid = dom.pid if dom is not None else None
        paths = procfs.systemd_cgroup_paths(pid, proc) if pid is not None else None
        scope = _scope_of(paths[-1]) if paths else None
        if scope is not None and scope.startswith(f"/{MACHINE_SLICE}/"):
            out[vp.vm.name] = scope
    shared = {c for c in out.values() if list(out.values()).count(c) > 1}  # one scope, two VMs: which
    return {n: c for n, c in out.items() if c not in shared}  # one runs is unknown, so neither is ranked


def _scope_of(path: str) -> str | None:
    """A process's cgroup path cut after its scope: libvirt's QEMU runs below it
    (``…/machine-qemu\\x2d1\\x2dvm.scope/libvirt/emulator``)."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part.endswith(".scope"):
            return "/".join(parts[: i + 1])
    return None


def as_json(a: Assessment) -> dict:
    """`sdqos pressure -o json`: a stable contract (bytes and counts as integers)."""

    def tv(v: ev.ThresholdValue | None):
        if v is None:
            return None
        return {"quantity": v.quantity} if v.quantity is not None else {"percentage": v.percentage}

    signals = []
    for signal in ev.OBSERVED_SIGNALS:
        obs = a.observations.get(signal)
        signals.append({
            "signal": signal,
            "available": obs.available if obs else None,
            "capacity": obs.capacity if obs else None,
            "thresholds": [{
                "value": tv(t.value), "amount": t.value.amount(obs.capacity) if obs else None, "hard": t.hard,
                "gracePeriodSeconds": t.grace_period_ns / 1e9, "minimumReclaim": tv(t.min_reclaim), "met": t in a.met,
            } for t in a.thresholds if t.signal == signal],
        })
    return {
        "signals": signals,
        "notObserved": a.not_observed,
        "conditions": {c: c in a.conditions for c in ("MemoryPressure", "PIDPressure")},
        "reclaim": {"signal": a.reclaim.signal, "hard": a.reclaim.hard} if a.reclaim else None,
        "rankingSignal": a.ranking_signal,
        "ranking": [{
            "rank": i + 1, "name": c.name, "kind": c.kind, "qosClass": c.qos_class, "priority": c.priority,
            "memoryRequest": c.memory_request, "memoryUsage": c.memory_usage, "processes": c.processes,
            "exceedsRequest": c.exceeds_memory_request, "notEvictable": c.why_not_evictable(),
        } for i, c in enumerate(a.ranked)],
        "victim": a.victim.name if a.victim else None,
        "gracePeriodSeconds": a.grace_period,
    }


def render_text(a: Assessment) -> str:
    from sdqos import humanize as H

    def amount(signal: str, n: int | None) -> str:
        if n is None:
            return "-"
        return str(n) if signal == ev.PID_AVAILABLE else H.size(n)

    lines = [f"{'SIGNAL':<29} {'AVAILABLE':>11} {'CAPACITY':>11}  THRESHOLDS"]
    for signal in ev.OBSERVED_SIGNALS:
        obs = a.observations.get(signal)
        ts = []
        for t in a.thresholds:
            if t.signal != signal:
                continue
            kind = "hard" if t.hard else f"soft, grace {t.grace_period_ns / 1e9:g}s"
            value = amount(signal, t.value.amount(obs.capacity)) if obs else str(t.value)
            if t.value.quantity is None:
                value += f" ({t.value})"
            ts.append(f"< {value} ({kind}){' MET' if t in a.met else ''}")
        avail = amount(signal, obs.available) if obs else "not observed"
        cap = amount(signal, obs.capacity) if obs else ""
        lines.append(f"{signal:<29} {avail:>11} {cap:>11}  {'; '.join(ts) or '-'}")
    if a.not_observed:
        lines.append(f"not observed (no container runtime disks to reclaim): {', '.join(a.not_observed)}")
    conds = " ".join(f"{c}={'True' if c in a.conditions else 'False'}" for c in ("MemoryPressure", "PIDPressure"))
    lines += ["", f"conditions: {conds}"]
    if a.reclaim:
        lines.append(f"reclaim: {a.reclaim.signal} ({'hard' if a.reclaim.hard else 'soft: after its grace period'})")
    lines += ["", f"eviction order ({a.ranking_signal}):"]
    if not a.ranked:
        lines.append("  (no running pods or VMs)")
    for i, c in enumerate(a.ranked):
        usage = (f"{c.processes} processes" if a.ranking_signal == ev.PID_AVAILABLE
                 else f"usage {H.size(c.memory_usage)} of request {H.size(c.memory_request)}"
                 + (" (over)" if c.exceeds_memory_request else ""))
        why = c.why_not_evictable()
        mark = " <- next" if a.victim is c else ""
        lines.append(f"  {i + 1:>2}. {c.name}  {c.qos_class}, priority {c.priority}, {usage}"
                     + (f"  [skipped: {why}]" if why else "") + mark)
    return "\n".join(lines)


# --- the action: one workload, through the runtime that runs it ----------------------------------



def fingerprint(pp) -> str:
    """What the pod's manifest says, as a short hash: an evicted pod stays evicted until this
    changes (its file was edited in a way that matters) or it runs again."""
    import hashlib

    return hashlib.sha256(repr(pp.pod).encode()).hexdigest()[:16]


def _load(run_dir: Path) -> dict:
    from sdqos.host import rundir

    return rundir.load(rundir.EVICTED, run_dir)


def load_evicted(run_dir: Path, data: dict | None = None) -> dict[str, dict]:
    """The eviction record (workload key → what was evicted, why, when); {} when there is none or
    it cannot be read (it only ever adds a flag to status). ``data``: the file, already read."""
    records = (_load(run_dir) if data is None else data).get("evicted")
    return records if isinstance(records, dict) else {}


def load_counts(run_dir: Path, data: dict | None = None) -> dict[str, dict[str, int]]:
    """Evictions since boot (the run dir is a tmpfs), workload key → signal → how many: kept when
    a workload's record goes (it ran again), for the metrics' counter. ``data``: the file, already read."""
    counts = (_load(run_dir) if data is None else data).get("counts")
    if not isinstance(counts, dict):
        return {}
    return {k: {s: n for s, n in v.items() if isinstance(n, int)} for k, v in counts.items() if isinstance(v, dict)}


def _save(run_dir: Path, records: Mapping[str, dict], counts: Mapping[str, Mapping[str, int]]) -> None:
    import json

    from sdqos.host import rundir

    rundir.write(rundir.EVICTED, json.dumps({"evicted": records, "counts": counts}, indent=1), run_dir)


def forget_running(run_dir: Path, a: Assessment) -> list[str]:
    """Drop the records of workloads that run again (an operator started them): an eviction
    stands only until then. Returns the keys dropped; writes only when there are some."""


    data = _load(run_dir)
    record = load_evicted(run_dir, data)
    running = {f"{c.kind}:{c.name.removeprefix('vm/')}" for c in a.ranked}
    gone = [k for k in record if k in running]
    if gone:
        _save(run_dir, {k: v for k, v in record.items() if k not in gone}, load_counts(run_dir, data))
    return gone


def still_evicted(plan: Plan, record: Mapping[str, dict]) -> dict[str, dict]:
    """Pods (by namespace/name) whose eviction still stands: the pod is planned and its manifest
    is the one that was evicted. (Whether it runs again is for the caller to see.)"""
    out = {}
    for pp in plan.pods:
        r = record.get(f"pod:{pp.key}")
        if r and r.get("fingerprint") == fingerprint(pp):
            out[pp.key] = r
    return out


async def _units_in(sd: SystemdAPI, unit: str) -> set[str]:
    """The units (scopes, services) whose processes run below ``unit``'s cgroup, by systemd's own
    list of the processes there."""
    units = set()
    for cgroup, _pid, _cmd in await sd.get_unit_processes(unit):
        parts = [p for p in cgroup.split("/") if p]
        try:
            i = parts.index(unit) if unit.endswith(".slice") else -1
        except ValueError:
            continue
        for p in parts[i + 1:] if i >= 0 else parts[-1:]:
            if p.endswith((".scope", ".service")):
                units.add(p)
                break
    return units


async def evict_first(sd: SystemdAPI, plan: Plan, a: Assessment, run_dir: Path, say) -> dict | None:
    """synchronize's eviction loop: the assessment's evictable workloads in their order, each tried
    until one is evicted (at most one per pass); one that cannot be (:class:`EvictionFailed`, its
    runtime not answering: an SdqosError) is said and the next is tried. Returns the record, or
    None when nothing was evicted."""
    from sdqos.errors import SdqosError

    if a.victim is None:
        return None
    for c in ev.evictable(a.ranked):
        try:
            return await evict(sd, plan, a, run_dir, c)
        except SdqosError as exc:
            say(f"could not evict {c.kind} {c.name.removeprefix('vm/')}: {exc}; the next in the ranking is tried")
    return None


async def evict(sd: SystemdAPI, plan: Plan, a: Assessment, run_dir: Path,
                victim: ev.Candidate | None = None) -> dict | None:
    """Stop ``victim`` (default: the assessment's), once, and record it, every workload through the
    runtime that runs it (sdqos/reconcile/runtimes/) with the grace period: a pod's containers sdqos
    started with podman by ``podman rm -f -t GRACE``, every scope sdqos made for the pod and a VM's
    scope with SIGTERM, SIGKILL after the grace period, and a StopUnit. Units in the pod's slice
    that sdqos did not make are left running and named in the record. Returns the record, or None
    when there is no victim; EvictionFailed when nothing of it is sdqos's to stop. A stop that
    fails still counts (kubelet's evictPod logs a failed kill and returns true): its record says
    why, and names what still runs."""
    import time

    from sdqos.errors import EvictionFailed, SdqosError
    from sdqos.reconcile import runtimes

    v, t = victim or a.victim, a.reclaim
    if v is None or t is None:
        return None
    grace = ev.eviction_grace_period(t, v, ev.config_of(plan.node).max_pod_grace_period)
    if v.kind == "pod":
        key, cgroup, workloads, stopped, left, extra = await _pod_workloads(sd, plan, v.name)
    else:
        key, cgroup, workloads, stopped, left, extra = await _vm_workloads(sd, plan, v.name)
    if not workloads:
        raise EvictionFailed(f"nothing in {cgroup or 'its cgroup'} is sdqos's to stop"
                             + (f" (running: {', '.join(left)})" if left else " (nothing runs there)"))
    how: list[str] = []
    begun, begun_mono = time.time(), time.monotonic()  # the first stop is sent now (the bench's "begun")
    try:
        await runtimes.stop(sd, workloads, grace, how)
    except SdqosError as exc:
        extra["error"] = str(exc)
        left = sorted(set(left) | _running_units(cgroup, plan.cgroup))
    obs = a.observations[t.signal]
    record = {
        "kind": v.kind, "name": v.name, "signal": t.signal, "available": obs.available, "capacity": obs.capacity,
        "threshold": t.value.amount(obs.capacity), "hard": t.hard, "gracePeriodSeconds": grace,
        "time": time.time(), "begun": begun, "begunMonotonic": begun_mono, "stopped": stopped, "leftRunning": left,
        **({"how": how} if how else {}), **extra,
    }
    try:  # the stop is done: a record that cannot be written must not make it "not evicted"
        _add_record(run_dir, key, record, t.signal)
    except SdqosError as exc:
        record["notRecorded"] = str(exc)
    return record


def _add_record(run_dir: Path, key: str, record: dict, signal: str) -> None:
    data = _load(run_dir)  # one read of the file for both its parts
    all_records = load_evicted(run_dir, data)
    all_records[key] = record
    counts = load_counts(run_dir, data)
    counts.setdefault(key, {})[signal] = counts.get(key, {}).get(signal, 0) + 1
    _save(run_dir, all_records, counts)


def _running_units(cgroup: str | None, mode: str) -> set[str]:
    """What still runs in ``cgroup`` by the kernel; nothing when it cannot be read."""
    from sdqos.errors import SignalReadError
    from sdqos.host import pressure as hp

    try:
        return hp.running_units(cgroup, mode) if cgroup else set()
    except SignalReadError:
        return set()


async def _pod_workloads(sd: SystemdAPI, plan: Plan, name: str):
    """(record key, cgroup, workloads to stop, units stopped, units left running, record extras)
    for a pod, in the slice it runs in (its planned one, or the one sync kept it in): the scopes
    sdqos made for its containers there and what sdqos started for it through a runtime."""
    from sdqos.host.cgroupfs import cgroup_of
    from sdqos.kube.naming import container_scope, parse_pod_slice
    from sdqos.reconcile import runtimes
    from sdqos.reconcile.runtimes import Workload

    pp = plan.pod(name)
    assert pp is not None
    where = running_slice(plan, pp)
    ps = parse_pod_slice(where)
    uid = ps.uid if ps is not None else pp.uid
    ours = {container_scope(uid, c.name) for c in pp.pod.containers} | {c.scope for c in pp.containers}
    running = await _units_in(sd, where)
    workloads = [Workload("", pp.key, s) for s in sorted(running & ours)]  # sdqos's own scopes
    for rt in runtimes.TABLE:  # what sdqos started for the pod through a runtime, when one runs there
        if any(rt.claims(u) for u in running):
            workloads += rt.pod_workloads({uid}, True).get(uid, [])
    stopped = sorted(running & {s for w in workloads for s in w.scopes})
    left = sorted(running - set(stopped))
    return f"pod:{pp.key}", cgroup_of(where, ""), workloads, stopped, left, {"fingerprint": fingerprint(pp)}


async def _vm_workloads(sd: SystemdAPI, plan: Plan, name: str):
    """As :func:`_pod_workloads`, for a VM: its scope, through the runtime that runs it."""
    vp = next(p for p in plan.vms if f"vm/{p.vm.name}" == name)
    found = vm_cgroups(plan).get(vp.vm.name)  # its scope, also when libvirt or a pid file finds it
    stopped = [found.rsplit("/", 1)[-1]] if found else []
    workloads = [await _vm_workload(sd, vp, found)] if found else []
    return f"vm:{vp.vm.name}", found, workloads, stopped, [], {}


async def _vm_workload(sd: SystemdAPI, vp, cgroup: str):
    """What runs a VM's scope, by the runtimes' own records (libvirt's status XML: the domain whose
    QEMU is in the scope; machined's ListMachines: the machine of that scope), so that it is stopped
    through that runtime. A VM found by its pid file, and a scope no runtime records (one sdqos
    made without machined), stop as a scope."""
    from sdqos.errors import SdqosError
    from sdqos.reconcile import runtimes
    from sdqos.reconcile.runtimes import Workload
    from sdqos.reconcile.scopes import LiveScope

    parts = cgroup.split("/")
    scope = parts[-1]
    own = Workload("", vp.vm.name, scope, what=f"VM {vp.vm.name}'s scope")
    if vp.vm.pid_file:
        return own
    try:
        pids = [int(pid) for _cg, pid, _cmd in await sd.get_unit_processes(scope)]
    except SdqosError:
        return own
    live = LiveScope(scope, parts[-2] if len(parts) > 2 else "", cgroup, pids)
    try:  # machined answers on the bus only: without it, the scope is stopped as a scope
        seen = await runtimes.observe(sd, {scope: live}, True, None, [], [])
    except SdqosError:
        return own
    return seen.workload(live) or own


def eviction_line(r: dict) -> str:
    """One line for the journal (stdout of the service) and the terminal."""
    from sdqos import humanize as H

    def amount(n: int) -> str:
        return str(n) if r["signal"] == ev.PID_AVAILABLE else H.size(n)

    left = f"; left running (not sdqos's): {', '.join(r['leftRunning'])}" if r.get("leftRunning") else ""
    how = f" ({'; '.join(r['how'])})" if r.get("how") else ""
    left += f"; the stop failed: {r['error']}" if r.get("error") else ""
    left += f"; not recorded: {r['notRecorded']}" if r.get("notRecorded") else ""
    return (f"evicted {r['kind']} {r['name']}: {r['signal']} {amount(r['available'])} < {amount(r['threshold'])} "
            f"({'hard' if r['hard'] else 'soft'}), grace {r['gracePeriodSeconds']}s, stopped "
            f"{', '.join(r['stopped']) or 'nothing'}{how}{left}")


# --- the long-running loop (kubelet's eviction manager Start + synchronize) ----------------------

POD_CLEANUP_TIMEOUT_S = 30  # eviction_manager.go podCleanupTimeout
# Between passes the signals alone are read this often (a few small cgroup and /proc files, no
# config, no ranking): a threshold crossed with no memcg notification (cgroup v2, PIDs) and no
# memory stall yet (PSI) starts a pass within this, not at the next --interval.
CHECK_S = 0.5
POD_CLEANUP_POLL_S = 1.0  # podCleanupPollFreq


def _notifier_targets(plan: Plan, a: Assessment, root: Path) -> dict[tuple[str, int], int]:
    """Where to ask the kernel to wake us (cgroup v1): for every memory threshold, the usage of the
    cgroup behind its signal at which the signal reaches it (kube/eviction.py:memcg_threshold),
    the root for memory.available and kubepods.slice for allocatableMemory.available."""
    from sdqos.host import pressure as hp
    from sdqos.kube.naming import MACHINE_SLICE

    out: dict[tuple[str, int], int] = {}
    node = hp.memory_stat("/", plan.cgroup, root)
    for t in a.thresholds:
        obs = a.observations.get(t.signal)
        if obs is None:
            continue
        amount = t.value.amount(obs.capacity)
        if t.signal == ev.MEMORY_AVAILABLE and node is not None:
            out[("/", amount)] = ev.memcg_threshold(obs.capacity, amount, node.inactive_file)
        elif t.signal == ev.ALLOCATABLE_MEMORY_AVAILABLE:
            from sdqos.host.pressure import kubepods_cgroup

            pods = hp.memory_stat(kubepods_cgroup(plan.node), plan.cgroup, root)
            vms = hp.memory_stat("/" + MACHINE_SLICE, plan.cgroup, root)
            if pods is not None:
                out[(kubepods_cgroup(plan.node), amount)] = ev.memcg_threshold(
                    obs.capacity, amount, pods.inactive_file, vms.working_set if vms else 0)
    return out


def serve(load_plan, evict_on: bool, interval_s: float, run_dir: Path, say, *, bus_address: str | None = None,
          root: Path | None = None, proc: Path | None = None, passes: int | None = None) -> None:
    """Watch the node: a pass (measure → synchronize → rank), at most one eviction per pass, then
    wait for the evicted workload's processes to be gone (waitForPodsCleanup) and look again at
    once; else sleep until the interval is over or the kernel wakes it: on cgroup v1 when a memory
    threshold was crossed (memcg notifications on memory.usage_in_bytes, as kubelet's
    kernelMemcgNotification), on any kernel with PSI when tasks stall on memory (a PSI trigger
    on /proc/pressure/memory: the node is short now, whatever the cgroup version), and when a
    look at the signals alone every CHECK_S finds a threshold newly crossed. ``say`` gets
    one line per node condition change and per eviction, and a failure once while it stands.
    ``load_plan`` is called every pass (the config may change); ``passes`` bounds the loop (tests).
    Nothing a pass meets ends the loop (docs/eviction.md, "When something fails")."""
    w = _Watch(load_plan, evict_on, run_dir, say, bus_address, root, proc)
    n = 0
    try:
        while passes is None or n < passes:
            n += 1
            try:
                if w.one_pass():
                    continue  # evicted: look again at once
            except Exception as exc:  # noqa: BLE001 - one pass's failure, said; the next pass is tried
                w.note(f"pass failed, trying again: {str(exc) or type(exc).__name__}")
            w.end_pass()
            if passes is None or n < passes:
                w.sleep(interval_s)
    finally:
        w.close()


class _Watch:
    """The watching loop's state between passes: the last good plan and assessment, kubelet's
    manager state, the kernel's wake-ups, the failures said (each once while it stands)."""

    def __init__(self, load_plan, evict_on: bool, run_dir: Path, say, bus_address: str | None,
                 root: Path | None, proc: Path | None):
        from sdqos.host import pressure as hp

        self.load_plan, self.evict_on, self.run_dir, self.say = load_plan, evict_on, run_dir, say
        self.bus_address, self.root, self.proc = bus_address, root or hp.ROOT, proc
        self.state: ev.ManagerState | None = ev.ManagerState()
        self.notifiers: dict[tuple[str, int], hp.MemcgNotifier] = {}
        self.psi: list[hp.PsiTrigger] = []  # the node's memory stalls (PSI), armed once
        self.psi_tried = False
        self.conditions: list[str] | None = None  # the first pass says what it finds
        self.plan: Plan | None = None
        self.last: Assessment | None = None
        self.noted: set[str] = set()  # failures said in the last pass
        self.noting: set[str] = set()  # ... and in this one
        if evict_on:
            _preload()

    def note(self, line: str) -> None:
        """Say a failure once while it stands (it is said again after a pass without it)."""
        if line not in self.noted and line not in self.noting:
            self.say(line)
        self.noting.add(line)

    def end_pass(self) -> None:
        self.noted, self.noting = self.noting, set()

    def one_pass(self) -> bool:
        """Load, measure, rank; evict at most one workload. True when one was evicted."""
        import time

        try:
            self.plan = self.load_plan()
        except Exception as exc:  # noqa: BLE001 - a bad edit: keep watching with the last good plan
            self.note(f"config not reloaded, keeping the last good one: {exc}" if self.plan is not None
                      else f"no plan to watch with yet: {exc}")
        if self.plan is None:
            return False
        plan = self.plan
        a, self.state = collect(plan, self.root, self.proc, self.state, time.monotonic_ns(),
                                load_evicted(self.run_dir) if self.evict_on else None)
        self.last = a
        self._say_conditions(a)
        if a.victim is not None and self.evict_on and self._evict(plan, a):
            self.end_pass()
            return True
        if self.evict_on:  # after the eviction, not before: it is not urgent
            for evicted in forget_running(self.run_dir, a):
                self.say(f"{evicted.replace(':', ' ', 1)} runs again: no longer evicted")
        self._arm(plan, a)
        return False

    def _say_conditions(self, a: Assessment) -> None:
        if a.conditions == self.conditions:
            return
        detail = ""
        if a.met:
            t = a.met[0]
            o = a.observations[t.signal]
            shown = str if t.signal == ev.PID_AVAILABLE else H.size
            detail = f" ({t.signal} {shown(o.available)} < {shown(t.value.amount(o.capacity))})"
        self.say("node conditions: " + (", ".join(a.conditions) or "none") + detail)
        self.conditions = a.conditions

    def _evict(self, plan: Plan, a: Assessment) -> bool:
        """One eviction, over a connection of its own (systemd's private socket as root: no
        dbus-daemon between), then waitForPodsCleanup. False when nothing could be evicted. Its
        event loop too lives only for the eviction: between evictions the loop holds no socket."""
        from sdqos.errors import SdqosError
        from sdqos.host.systemd import run

        assert a.victim is not None
        # for PIDs, one cgroup.procs read before the stop: the processes whose reaping cleanup waits for
        pids = a.reclaim is not None and a.reclaim.signal == ev.PID_AVAILABLE
        first = _victim_cgroup(plan, a.victim)
        had = _pids(first, plan.cgroup, self.root) if pids else None
        try:
            record = run(_evict_connected(self.bus_address, plan, a, self.run_dir, self.note))  # (Ctrl-C kept)
        except SdqosError as exc:
            self.note(f"cannot evict: {exc}")
            return False
        if record is None:
            return False
        self.say(eviction_line(record))
        victim = next(c for c in a.ranked if c.name == record["name"])
        cgroup = _victim_cgroup(plan, victim)
        wait_cleanup(cgroup, plan.cgroup, self.root, had if cgroup == first else ([] if pids else None), self.proc)
        return True

    def _arm(self, plan: Plan, a: Assessment) -> None:
        """The kernel's wake-ups: memcg notifications for this pass's thresholds (v1), PSI once."""
        from sdqos.host import pressure as hp

        if plan.cgroup == "v1":
            want = _notifier_targets(plan, a, self.root)
            for key in [k for k in self.notifiers if k not in want or self.notifiers[k].threshold != want[k]]:
                self.notifiers.pop(key).close()
            for key, usage in want.items():
                if key not in self.notifiers:
                    try:
                        self.notifiers[key] = hp.MemcgNotifier(key[0], usage, self.root)
                    except hp.SignalReadError as exc:
                        self.say(f"polling only: {exc}")
        if not self.psi_tried:
            self.psi_tried = True
            try:
                self.psi.append(hp.PsiTrigger((self.proc or hp.PROC) / "pressure" / "memory"))
            except hp.SignalReadError as exc:
                if plan.cgroup != "v1":  # v1 has the memcg notifications; v2 polls without PSI
                    self.say(f"polling only: {exc}")

    def sleep(self, interval_s: float) -> None:
        """Until the interval is over, the kernel wakes us, or a threshold is newly crossed."""
        import time

        from sdqos.errors import SdqosError
        from sdqos.host import pressure as hp

        deadline = time.monotonic() + interval_s
        while (left := deadline - time.monotonic()) > 0:
            if hp.wait([*self.notifiers.values(), *self.psi], min(left, CHECK_S)):
                return
            try:
                if self.plan is not None and self.last is not None and _newly_met(self.plan, self.last, self.root, self.proc):
                    return
            except SdqosError:
                pass  # the signals unreadable for a moment: the pass says so when it lasts

    def close(self) -> None:
        for x in self.notifiers.values():
            x.close()
        for trigger in self.psi:
            trigger.close()


async def _evict_connected(bus_address: str | None, plan: Plan, a: Assessment, run_dir: Path, say) -> dict | None:
    """evict_first over a connection opened for it and closed after: as root (no bus address
    named) systemd's private socket, as systemctl uses it — the eviction does not depend on
    dbus-daemon running, and no connection is kept that could go stale between evictions."""
    from sdqos.host.systemd import Systemd

    async with Systemd(bus_address) as sd:
        return await evict_first(sd, plan, a, run_dir, say)


def _preload() -> None:
    """Load the eviction's code (the D-Bus library, podman's module) at start: on a node short of
    memory, reading code from disk takes the seconds the first eviction has not got (measured in
    the v2 guest: a minute from the pass that chose the victim to its scope stopped)."""
    import sdqos.host.podman  # noqa: F401
    import sdqos.host.systemd  # noqa: F401
    import sdqos.reconcile.podman_pods  # noqa: F401
    import sdqos.reconcile.runtimes  # noqa: F401
    from sdqos.host.systemd import Systemd

    Systemd()  # the D-Bus library itself, and the private-socket class made from it (no connection)


def _newly_met(plan: Plan, a: Assessment, root: Path, proc: Path | None) -> bool:
    """Whether a threshold the last pass did not find crossed is crossed now (the signals only)."""
    from sdqos.host import pressure as hp

    allocatable = plan.allocatable[MEMORY] if "pods" in plan.node.enforce_node_allocatable else None
    now = ev.thresholds_met(a.thresholds, hp.observe(plan.node, plan.cgroup, allocatable, root, proc or hp.PROC))
    return any(t not in a.met for t in now)


def _victim_cgroup(plan: Plan, victim: ev.Candidate) -> str | None:
    """The cgroup of the workload the eviction stops: the pod's slice, or the VM's scope."""
    from sdqos.host.cgroupfs import cgroup_of

    if victim.kind == "pod":
        pp = plan.pod(victim.name)
        return cgroup_of(pp.slice, "") if pp else None
    return vm_cgroups(plan).get(victim.name.removeprefix("vm/"))


def _pids(cgroup: str | None, mode: str, root: Path) -> list[int]:
    """The victim's PIDs before it is stopped; none when they cannot be read (cleanup then waits
    for its cgroup alone)."""
    from sdqos.errors import SignalReadError
    from sdqos.host import pressure as hp

    try:
        return hp.process_ids(cgroup, mode, root) if cgroup else []
    except SignalReadError:
        return []


def wait_cleanup(cgroup: str | None, mode: str, root: Path, had: list[int] | None,
                 proc: Path | None = None) -> None:
    """waitForPodsCleanup: until the evicted workload's ``cgroup`` has no process left and, after
    an eviction for PIDs (``had`` given), its processes are reaped, at most 30 s. A killed process
    leaves its cgroup at once but holds its PID (not its memory) as a zombie until it is reaped:
    those it ``had`` (read before the stop), and the orphans PID 1 has still to reap (children
    forked after that read, whose parent died with them — a fork bomb's hundreds, which systemd
    reaps one per turn of its event loop). Looking again
    before that found pid.available still short and evicted the next pod for PIDs already being
    given back (seen in the v2 guest: a Guaranteed pod evicted a second after the bomb's pod)."""
    import time

    from sdqos.host import pressure as hp
    from sdqos.host import procfs

    proc = proc or procfs.PROC
    deadline = time.monotonic() + POD_CLEANUP_TIMEOUT_S
    while time.monotonic() < deadline and (
            (cgroup and hp.processes(cgroup, mode, root))
            or had is not None and (procfs.zombies(had, proc) or procfs.orphan_zombies(proc))):
        time.sleep(POD_CLEANUP_POLL_S)
