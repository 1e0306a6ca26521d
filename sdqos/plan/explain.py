"""``sdqos explain``: every value of one pod with the formula and the inputs that produced it.

The numbers come from the engine itself (planning with ``explain=True`` records its reasoning as it
computes), through the loading path every command uses (``sdqos.loading.load``, with what the last
sync counted in machine.slice), so an explanation never disagrees with what ``plan`` and ``sync`` apply.
"""

from __future__ import annotations

from collections.abc import Mapping

from sdqos import humanize as H
from sdqos.kube import qos
from sdqos.kube.model import BESTEFFORT, BURSTABLE, CPU, GUARANTEED, MEMORY, Pod
from sdqos.plan.engine import Plan, PodPlan, VMPlan
from sdqos.plan.properties import (INFINITY, PERIOD_PROPERTY, QUOTA_PROPERTY, WEIGHT, WHY_KEYS, kernel_quota_us, of_kind,
                                   oom_policy, shown as show_value)

# Which engine reasoning explains which systemd property (each property's row says).
_WHY_KEY = WHY_KEYS
#: (unit, property) → (the value set, why): the last sync's clamps still in force (a limit raised to
#: its usage; ``reconcile.desired.Adjustment``), so explain shows the value systemd holds beside the
#: one the formula gives.
Clamps = Mapping[tuple[str, str], tuple[int, str]]


def qos_reason(pod: Pod, cls: str, pod_level: bool = True) -> str:
    """Why kubelet puts the pod in its class (qos.go's rules, in words)."""
    if pod_level and pod.resources is not None:
        src = "pod-level resources"
        if cls == GUARANTEED:
            return f"{src} set cpu and memory limits equal to the requests"
        if cls == BESTEFFORT:
            return f"{src} set no cpu or memory request or limit"
        return f"{src} have requests that differ from limits, or no cpu and memory limits"
    if cls == BESTEFFORT:
        return "no container sets a cpu or memory request or limit"
    if cls == GUARANTEED:
        return "every container has cpu and memory limits, and requests equal limits"
    for c in pod.all_containers():
        missing = [r for r in (CPU, MEMORY) if c.limits.get(r) is None or c.limits[r].sign() <= 0]
        if missing:
            return f"container {c.name} has no {' or '.join(missing)} limit"
        for r in (CPU, MEMORY):
            req, lim = c.requests.get(r), c.limits.get(r)
            if req is not None and lim is not None and req != lim:
                return f"container {c.name} requests {r} {req} but its limit is {lim}"
    return "summed requests differ from summed limits"


def _prop_line(name: str, value: int, why: dict[str, str], period: int, clamp: tuple[int, str] | None = None) -> str:
    if clamp is not None:  # the value set, then the formula's (wanted) value and why they differ
        wanted = _prop_line(name, value, why, period).split("\n", 1)
        head = f"    {name:<20} {clamp[0]:>20}  {show_value(name, clamp[0])}"
        return "\n".join([head, f"      set by the last sync: {clamp[1]}",
                          f"      {'wanted':<18} {wanted[0][25:].strip()}", *wanted[1:]])
    shown = show_value(name, value)
    raw = "infinity" if value == INFINITY else str(value)
    text = f"    {name:<20} {raw:>20}  {shown}"
    reason = why.get(_WHY_KEY.get(name, ""))
    if name == QUOTA_PROPERTY and value != INFINITY:
        reason = (reason or "") + (
            f"; sent as µs/s rounded up to a whole percent (kernel cfs_quota_us"
            f" {kernel_quota_us(value, period)} per {period}µs), as runc does"
        )
    if name == of_kind(WEIGHT, "v2"):
        reason = (reason or "") + "; converted to a v2 weight"
    if name == PERIOD_PROPERTY:
        reason = "cpuCFSQuotaPeriod from node.yaml"
    if reason:
        text += f"\n      = {reason}"
    return text


def machines_lines(plan: Plan) -> list[str]:
    """What the plan counted in machine.slice besides declared VMs (what the last sync found and
    counted there, so these values are the ones sync applied), or nothing."""
    if not plan.machines:
        return []
    lines = ["", "  Counted in machine.slice besides declared VMs (as the last sync found it; sync applies these values):"]
    for m in plan.machines:
        mem = H.size(m.memory) + ("" if m.bounded else " (unbounded: machine.slice gets no memory limit)")
        lines.append(f"    {m.unit} ({m.what}): cpu {H.cpu(m.cpu)}, memory {mem}")
    return lines


def machines_json(plan: Plan) -> list[dict]:
    return [{"unit": m.unit, "what": m.what, "cpu": H.cpu(m.cpu), "memory": m.memory, "bounded": m.bounded,
             "limit": m.limit} for m in plan.machines]


def eviction_lines(rank: dict) -> list[str]:
    """A pod's place in kubelet's eviction orders (``reconcile.evict.rank_of``), in words."""
    lines = ["", "  Eviction (kubelet's node-pressure order; docs/eviction.md)",
             f"    {rank['qosClass']}, priority {rank['priority']}, memory request {H.size(rank['memoryRequest'])}"]
    if rank.get("notEvictable"):
        lines.append(f"    never evicted: {rank['notEvictable']}")
    if rank.get("usage") is None:
        lines.append(f"    no rank: {rank['why']}")
        return lines
    lines.append(f"    usage {H.size(rank['usage'])} ({'over' if rank['exceedsRequest'] else 'within'} its request), "
                 f"{rank['processes']} processes")
    for order in rank["orders"]:
        lines.append(f"    {order['signal']}: {order['rank']} of {order['of']}")
        lines.append(f"      = {order['why']}")
    return lines


def explain_pod(plan: Plan, pp: PodPlan, live: dict[str, tuple[str, str]] | None = None,
                rank: dict | None = None, clamps: Clamps | None = None) -> str:
    """``live``: container name → (the scope it runs in now, what runs it), e.g. a podman
    container's ``libpod-<id>.scope``: named instead of the scope ``sdqos run`` would make.
    ``rank``: its place in the eviction orders (``reconcile.evict.rank_of``)."""
    pod = pp.pod
    period = plan.node.cpu_cfs_quota_period_us
    pod_level = plan.node.gate("PodLevelResources")
    lines = [
        f"Pod {pod.key}",
        f"  uid {pod.uid}" + (" (derived from namespace/name)" if pod.uid_generated else "")
        + (f", from {pod.source}" if pod.source else ""),
        f"  QoS class {pp.qos}: {qos_reason(pod, pp.qos, pod_level)}",
    ]
    if qos.is_node_critical(pod):
        lines.append("  node-critical (priorityClassName system-node-critical): OOM score -997")
    lines.append(
        f"  pod requests cpu {H.cpu(pp.requests[CPU])}, memory {H.size(pp.requests[MEMORY])};"
        f" limits cpu {H.cpu(pp.limits[CPU]) if pp.limits[CPU] else 'none'},"
        f" memory {H.size(pp.limits[MEMORY]) if pp.limits[MEMORY] else 'none'}"
        " (PodRequests/PodLimits: app containers + sidecars, init containers by max, + overhead)"
    )
    lines.append("")
    lines.append(f"  {pp.slice}  (pod slice, in {_parent(plan, pp.slice)})")
    for name, value in pp.properties.items():
        lines.append(_prop_line(name, value, pp.why, period))
    for c in pp.containers:
        lines.append("")
        running = (live or {}).get(c.name)
        lines.append(f"  {running[0]}  (container {c.name}, {c.kind}; runs now: {running[1]})" if running
                     else f"  {c.scope}  (container {c.name}, {c.kind})")
        for name, value in c.properties.items():
            lines.append(_prop_line(name, value, c.why, period))
        lines.append(f"    {'oom_score_adj':<20} {c.oom_score_adj:>20}")
        if c.why.get("oom_score_adj"):
            lines.append(f"      = {c.why['oom_score_adj']}")
        policy = oom_policy(c.resources)
        if policy is not None:
            lines.append(f"    {'OOMPolicy':<20} {policy:>20}  (when sdqos creates the scope)\n      = {c.why.get('oom_group', '')}")
        if c.resources.oomd_preference is not None:
            lines.append(f"    {'ManagedOOMPreference':<20} {c.resources.oomd_preference:>20}  (when sdqos creates the scope)"
                         f"\n      = {c.why.get('oomd_preference', '')}")
        if c.cpus:
            lines.append(f"    {'CPUs':<20} {c.cpus:>20}\n      = {c.why.get('cpus', '')}")
    lines.append("")
    lines.append("  Tiers this pod counts toward")
    lines += _unit_lines(plan, tier_names(plan, pp), period, clamps)
    lines += machines_lines(plan)
    if rank is not None:
        lines += eviction_lines(rank)
    return "\n".join(lines)


def tier_names(plan: Plan, pp: PodPlan) -> list[str]:
    """The tiers a pod counts toward: its class's tier (Burstable, BestEffort) and kubepods."""
    names = [plan.root_slice]
    if pp.qos in (BURSTABLE, BESTEFFORT):
        names.insert(0, _parent(plan, pp.slice))
    return names


def tiers_json(plan: Plan, pp: PodPlan, clamps: Clamps | None = None) -> dict:
    """The tiers a pod counts toward, with their values and reasons (as ``explain`` prints them)."""
    return {u.name: _values(u.properties, u.why, clamps, u.name)
            for u in (plan.unit(n) for n in tier_names(plan, pp)) if u is not None}


def _unit_lines(plan: Plan, names: list[str], period: int, clamps: Clamps | None = None) -> list[str]:
    """Each named unit of the plan with its values and their reasons."""
    lines = []
    for name in names:
        unit = plan.unit(name)
        if unit is None:
            continue
        lines.append(f"  {unit.name}  ({unit.kind})")
        for prop, value in unit.properties.items():
            lines.append(_prop_line(prop, value, unit.why, period, (clamps or {}).get((unit.name, prop))))
    return lines


def _parent(plan: Plan, unit_name: str) -> str:
    u = plan.unit(unit_name)
    return u.slice if u else "?"


def _values(props: dict[str, int], why: dict[str, str], clamps: Clamps | None = None, unit: str = "") -> dict:
    """Each property's value, as people read it, and the reason behind it; a clamped one: the value
    set, with the formula's as ``wanted`` and why they differ as ``adjusted``."""
    out = {}
    for name, value in props.items():
        out[name] = {"value": value, "shown": show_value(name, value), "why": why.get(_WHY_KEY.get(name, ""))}
        clamp = (clamps or {}).get((unit, name))
        if clamp is not None:
            out[name].update(value=clamp[0], shown=show_value(name, clamp[0]), wanted=value, adjusted=clamp[1])
    return out


def explain_json(pp: PodPlan, live: dict[str, tuple[str, str]] | None = None) -> dict:
    """One pod's values with their reasons, for programs: what ``explain`` prints, as data
    (``liveScope``: the scope a container runs in now, when it runs in another than ``scope``)."""
    values = _values
    pod = pp.pod
    return {
        "namespace": pod.namespace, "name": pod.name, "uid": pod.uid, "qos": pp.qos,
        "qosReason": qos_reason(pod, pp.qos),
        "requests": {"cpu": H.cpu(pp.requests[CPU]), "memory": pp.requests[MEMORY]},
        "limits": {"cpu": H.cpu(pp.limits[CPU]) if pp.limits[CPU] else None, "memory": pp.limits[MEMORY] or None},
        "slice": pp.slice, "properties": values(pp.properties, pp.why),
        "containers": [{"name": c.name, "kind": c.kind, "scope": c.scope, "oomScoreAdj": c.oom_score_adj,
                        "oomScoreAdjWhy": c.why.get("oom_score_adj"), "properties": values(c.properties, c.why),
                        "oomPolicy": oom_policy(c.resources), "oomPolicyWhy": c.why.get("oom_group"),
                        "managedOOMPreference": c.resources.oomd_preference,
                        "managedOOMPreferenceWhy": c.why.get("oomd_preference"),
                        **({"cpus": c.cpus, "cpusWhy": c.why.get("cpus")} if c.cpus else {}),
                        **({"liveScope": live[c.name][0]} if live and c.name in live else {})}
                       for c in pp.containers],
    }


def explain_vm(plan: Plan, vp: VMPlan, clamps: Clamps | None = None) -> str:
    """One VM's values (its scope, its OOM score) and the node budget it takes from the pods."""
    vm = vp.vm
    period = plan.node.cpu_cfs_quota_period_us
    where = (f"libvirt domain {vm.libvirt_domain} (found by libvirt's record)" if vm.libvirt_domain
             else f"the scope holding the PID in {vm.pid_file}" if vm.pid_file
             else f"{vp.scope}" + (" (spec.scope)" if vm.scope else " (sdqos run --vm / adopt --vm)"))
    lines = [
        f"VM {vm.name}" + (f", from {vm.source}" if vm.source else ""),
        f"  QoS class {vp.qos}: the pod rules with the VM as its only container",
        f"  requests cpu {H.cpu(vp.requests[CPU])}, memory {H.size(vp.requests[MEMORY])}; limits cpu "
        f"{H.cpu(vp.limits[CPU]) if vp.limits[CPU] else 'none'}, memory {H.size(vp.limits[MEMORY])} (with overhead)",
        f"  runs in {where}",
        "",
        f"  {vp.scope or 'its scope'}  (VM, in machine.slice)",
    ]
    for name, value in vp.properties.items():
        lines.append(_prop_line(name, value, vp.why, period))
    lines.append(f"    {'oom_score_adj':<20} {vp.oom_score_adj:>20}")
    if vp.why.get("oom_score_adj"):
        lines.append(f"      = {vp.why['oom_score_adj']}")
    if vm.dedicated_cpu_placement:  # spec.cpu.dedicatedCpuPlacement: its exclusive CPUs, or why none
        lines.append(f"    {'CPUs':<20} {vp.cpus or '-':>20}\n      = {vp.why.get('cpus', '')}")
    lines.append("")
    lines.append("  The node budget it takes from the pods")
    lines += _unit_lines(plan, ["machine.slice", plan.root_slice], period, clamps)
    lines += machines_lines(plan)
    return "\n".join(lines)


def explain_vm_json(plan: Plan, vp: VMPlan, clamps: Clamps | None = None) -> dict:
    """One VM's values with their reasons, and the budget units it shapes, as data."""
    values = _values
    return {
        "name": vp.vm.name, "qos": vp.qos, "scope": vp.scope, "libvirtDomain": vp.vm.libvirt_domain,
        "pidFile": vp.vm.pid_file, "requests": {"cpu": H.cpu(vp.requests[CPU]), "memory": vp.requests[MEMORY]},
        "limits": {"cpu": H.cpu(vp.limits[CPU]) if vp.limits[CPU] else None, "memory": vp.limits[MEMORY]},
        "oomScoreAdj": vp.oom_score_adj, "oomScoreAdjWhy": vp.why.get("oom_score_adj"),
        "properties": values(vp.properties, vp.why),
        **({"cpus": vp.cpus, "cpusWhy": vp.why.get("cpus")} if vp.vm.dedicated_cpu_placement else {}),
        "budget": {u.name: values(u.properties, u.why, clamps, u.name) for u in plan.units if u.kind in ("machine", "node")},
    }
