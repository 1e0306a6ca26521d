"""What runs in machine.slice besides the declared VMs, and what it costs the node budget. Pure.

Declared VMs are counted by their reservation whether they run or not (the engine does that).
Everything else in machine.slice counts while it runs (an undeclared or removed VM, a podman or
nspawn container), by what it holds now: its usage rounded up, bounded by what it can hold at most
(its memory limit; a libvirt guest without one: its RAM + QEMU's overhead, sdqos's default in
KubeVirt's structure). An undeclared scope never takes more from the pods than it uses: a limit is
what it may take, not what it has (docs/vms.md, "What runs in machine.slice"). One without any
bound makes machine.slice unlimited while it runs. Its CPU weight counts as the millicores that
weight stands for (machine.slice's weight only: a weight reserves nothing). And whatever
machine.slice holds beyond all that (a VM above its limit because the kernel refused a lower one)
is counted too, so machine.slice is never planned below what its children hold.
"""

from __future__ import annotations

from typing import Mapping

from sdqos.kube import qos
from sdqos.kube.manifests import vm_memory_overhead
from sdqos.plan.engine import MachineCharge, Plan
from sdqos.plan.properties import INFINITY, WEIGHT, memory_limit, of_kind
from sdqos.reconcile.compare import LiveUnit
from sdqos.reconcile.scopes import LiveScope

USAGE_STEP = 8 << 20  # usage is counted in 8 MiB steps …
KEEP_BELOW = 4 * USAGE_STEP  # … and a count stays while usage is at most this much below it: the budget
# (and every pod's plan, whose context it is) moves when usage really moves, not every sync
V1_DEFAULT_SHARES = 1024
V2_DEFAULT_WEIGHT = 100


def round_up(n: int, step: int = USAGE_STEP) -> int:
    return -(-n // step) * step


def cpu_millis(props: Mapping[str, int], cgroup: str) -> int:
    """The millicores a scope's CPU weight stands for (kubelet's shares rule, inverted)."""
    if cgroup == "v1":  # the fewest millicores kubelet gives these shares
        shares = props.get(of_kind(WEIGHT, cgroup), INFINITY)
        shares = V1_DEFAULT_SHARES if shares in (INFINITY, 0) else shares
        return -(-shares * 1000 // qos.SHARES_PER_CPU)
    weight = props.get(of_kind(WEIGHT, cgroup), INFINITY)
    weight = V2_DEFAULT_WEIGHT if weight in (INFINITY, 0) else weight
    # the largest share count kubelet's getCPUWeight maps to this weight (39 → 1024 → 1000m), rounded
    # down to millicores: planned again, they give the same weight
    shares = qos.MIN_SHARES - 1 + -(-weight * (qos.MAX_SHARES - qos.MIN_SHARES) // 9999)
    return shares * 1000 // qos.SHARES_PER_CPU


def _limit(props: Mapping[str, int]) -> int | None:
    v = memory_limit(props)
    return None if v in (INFINITY, 0) else v


def machine_charges(
    plan: Plan,
    machine_scopes: Mapping[str, LiveScope],
    claimed: set[str],
    live: Mapping[str, LiveUnit],
    names: Mapping[str, str],
    guests: Mapping[str, tuple[int, int]],
    slice_usage: int | None,
) -> tuple[MachineCharge, ...]:
    """``machine_scopes``: scopes with processes anywhere below machine.slice; ``claimed``: those
    bound to declared VMs; ``names``: scope → what it is ("libvirt domain db"); ``guests``:
    scope → (RAM, vCPUs) of a libvirt guest; ``slice_usage``: machine.slice's memory.current."""
    out: list[MachineCharge] = []
    previous = {m.unit: m for m in plan.machines}
    for name in sorted(set(machine_scopes) - claimed):
        lu = live.get(name)
        props = lu.props if lu is not None else {}
        usage = lu.memory_current if lu is not None and lu.memory_current is not None else 0
        limit = _limit(props)
        if limit is None and name in guests:
            ram, vcpus = guests[name]  # a guest holds at most its RAM + the default overhead
            limit = ram + vm_memory_overhead(ram, vcpus)
        what = names.get(name, "scope")
        counted = round_up(usage)
        before = previous.get(name)
        if before is not None and counted <= before.memory < counted + KEEP_BELOW:
            counted = before.memory  # usage moved a little: the same count (no re-plan every sync)
        full = limit is not None and counted >= limit
        if limit is not None:
            counted = min(counted, max(limit, usage))
        # counted at its bound, machine.slice may be limited to the sum; below it, machine.slice is
        # left unlimited (the scope's own limit bounds it) rather than squeezing it to its usage
        out.append(MachineCharge(name, what, cpu_millis(props, plan.cgroup), counted, bounded=full, limit=limit))
    if slice_usage is not None and all(c.bounded for c in out):
        planned = sum(v.limits.get("memory", 0) for v in plan.vms) + sum(c.memory for c in out)
        if slice_usage > planned:
            out.append(MachineCharge("machine.slice", "usage beyond what is counted", 0,
                                     round_up(slice_usage - planned)))
    return tuple(out)
