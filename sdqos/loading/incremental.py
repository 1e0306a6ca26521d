"""The config directory → its plan, reusing the plan of every pod file that did not change.

A sync every 30 s would otherwise decode and plan a thousand unchanged pods each time (~0.1 s at
1000 pods, as much as the rest of sdqos' own work). A pod's plan is a function of the pod and of
an :class:`~sdqos.plan.engine.PodContext` alone, so the plans of one file's pods (its *fragment*) are
kept with the file's parse-cache entry and reused while both hold: the file has the same identity
(so the same entry) and the context is the same (node values, cgroup version, the memory figures a
pod's plan reads). A reused plan's pod is decoded only if something asks for ``PodPlan.pod``,
which a sync with nothing to repair never does. Files with errors or VMs never get a fragment;
everything node-wide (VMs, tiers, sums, units, duplicates) is computed afresh every time.

``load_plan(...)`` returns exactly what ``build_plan(load_config(...))`` would (tests check it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

from sdqos.host import rundir
from sdqos.host.rundir import Reads
from sdqos.host import facts
from sdqos.errors import HostError
from sdqos.kube.manifests import ParseResult, PodIdentity, check_duplicate_vms, duplicate_pods
from sdqos.kube.model import NodeConfig, Pod
from sdqos.kube.quantity import Quantity
from sdqos.loading import cache as pc
from sdqos.loading.configdir import DEFAULT_DIR, Config, Scan, ScannedFile, add_entry, scan_config
from sdqos.plan import engine

if TYPE_CHECKING:
    from sdqos.kube.cputopology import CPUTopology


def _canonical(v: object) -> object:
    if isinstance(v, Quantity):
        return [str(v), v.format.value]  # the canonical form is exact (no fractions import)
    if isinstance(v, (frozenset, set)):
        return sorted(v)
    if isinstance(v, Mapping):
        return sorted((k, _canonical(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return [_canonical(x) for x in v]
    return v


def cpu_assignments(run_dir: Path | None = None, reads: Reads | None = None) -> dict[str, dict[str, str]]:
    """The static CPU manager's assignments (pod uid → container → CPU list) from its state file
    in the run dir (host/cpustate.py, its one reader): an input of the plan, as the last sync's
    record is. Missing, untrusted or unreadable: none (the sync that restores and validates the
    file reports what is wrong). Called under cpuManagerPolicy static only."""
    from sdqos.host import cpustate  # (policy none loads no CPU manager)

    run_dir = Path(run_dir or rundir.DEFAULT_RUN_DIR)
    if reads is not None:
        reads.file(cpustate.state_path(run_dir))
    return cpustate.assignments(run_dir)


def shared_cpus(node: NodeConfig, run_dir: Path | None = None, reads: Reads | None = None) -> str:
    """cpuManagerPolicy static: the shared pool every container without exclusive CPUs gets as its
    cpuset (v2: its scope's AllowedCPUs; v1 and v2: a podman container's own cgroup) — the state
    file's defaultCpuSet (kubelet's default cpuset); with no file yet, kubelet's initial one: every online CPU (with strict-cpu-reservation
    but those of reservedSystemCPUs; reserved by kube/systemReserved's cpu, which ones is the
    policy's choice: none until the sync's CPU manager has written the file). "": none."""
    if node.cpu_manager_policy != "static":
        return ""
    from sdqos.host import cpustate  # (policy none loads no CPU manager)
    from sdqos.kube import cpumanager, cpuset
    from sdqos.kube.cpuset import CPUSet

    run_dir = Path(run_dir or rundir.DEFAULT_RUN_DIR)
    if reads is not None:
        reads.file(cpustate.state_path(run_dir))
    state = cpustate.decoded(run_dir)
    if state is not None:
        return str(state.default_cpuset)
    online = facts.online_cpus()
    if not online:
        return ""
    if cpumanager.parse_options(node.cpu_manager_policy_options).strict_cpu_reservation:
        if not node.reserved_system_cpus:
            return ""
        return str(CPUSet(online) - cpuset.parse(node.reserved_system_cpus))
    return str(CPUSet(online))


def context_key(ctx: engine.PodContext) -> str:
    """The context as canonical JSON text: equal for equal contexts, in any process (a set's or
    a dict's order does not enter it)."""
    node = {f.name: _canonical(getattr(ctx.node, f.name)) for f in dataclasses.fields(ctx.node)}
    return json.dumps([node, ctx.cgroup, ctx.capacity_memory, ctx.allocatable_memory, ctx.shared_cpus],
                      separators=(",", ":"))


class PlannedPods(Sequence[Pod]):
    """``Config.pods`` of a config loaded with its plan: each pod decoded on first access."""

    def __init__(self, plans: list[engine.PodPlan]):
        self._plans = plans

    def __len__(self) -> int:
        return len(self._plans)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [p.pod for p in self._plans[i]]
        return self._plans[i].pod

    def __iter__(self) -> Iterator[Pod]:
        return (p.pod for p in self._plans)


class _Manifest:
    """The ``index``-th pod of the scan's ``file``-th file, decoded from its entry when asked (a
    damaged entry: the file is parsed again). A plan holds this, not the pod: a sync seldom asks
    for a pod, and at 1000 pods the decoded pods were ~1.5 MB of a cold sync's peak RSS; a
    slotted object, not a closure: ~70 bytes a pod, not ~330. It names the file by its place in
    the scan, which lets go of the entries' texts once the cache file holds them."""

    __slots__ = ("scan", "file", "index")

    def __init__(self, scan: Scan, file: int, index: int) -> None:
        self.scan, self.file, self.index = scan, file, index

    def __call__(self) -> Pod:
        return self.scan.objects(self.scan.files[self.file])[0][self.index]


def _encode(plans: list[engine.PodPlan]) -> str:
    return json.dumps([pc.pod_plan_to_json(pp) for pp in plans], separators=(",", ":"))


def _reuse(fragment: str | None, scan: Scan, n: int,
           ctx: engine.PodContext) -> tuple[list[engine.PodPlan], list[PodIdentity]] | None:
    """A file's pod plans and identities from its fragment; None without one, or when it does
    not decode (then the file is planned again)."""
    if fragment is None:
        return None
    try:
        encoded = json.loads(fragment)
        return ([pc.pod_plan_from_json(v, ctx, _Manifest(scan, n, i)) for i, v in enumerate(encoded)],
                [pc.pod_identity(v) for v in encoded])
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def _vm_files(scan: Scan) -> tuple[ParseResult, list[str], ParseResult]:
    """The VM files' objects, the files that failed, and the VMs (duplicates checked)."""
    vm_files = ParseResult()
    vm_failed: list[str] = []
    for f in scan.files:
        if f.rel.startswith("vms/"):
            add_entry(vm_files, vm_failed, f.rel, scan.objects(f))
    vms = ParseResult(vms=vm_files.vms)
    check_duplicate_vms(vms)
    return vm_files, vm_failed, vms


def _topology() -> CPUTopology | None:
    """The host's CPU topology for explain's words on exclusive CPUs ("whole core 2"); None when
    /sys cannot tell (explain then names the CPUs only). Not an input of the no-op proof: an
    explained plan is never stamped."""
    from sdqos.host.topology import read_topology  # explain only: not on a sync's import path

    try:
        return read_topology()
    except HostError:
        return None


def _plan_pod(p: Pod, ctx: engine.PodContext, explain: bool, exclusive: Mapping[str, dict[str, str]],
              result: ParseResult) -> engine.PodPlan | None:
    """A pod's plan; None (its problems into ``result``, its keys invalid) when it cannot be sent."""
    pp = engine.plan_pod(p, ctx, explain=explain, exclusive=exclusive.get(p.uid))
    problems = engine.pod_problems(pp)
    if problems:  # invalid input like any other: its units are kept, its file gets no fragment
        result.errors += problems
        result.invalid_keys.update((f"pod:{p.key}", f"uid:{p.uid}"))
        return None
    return pp


def _plan_pod_files(scan: Scan, ctx: engine.PodContext, key: str, explain: bool,
                    exclusive: Mapping[str, dict[str, str]],
                    later: list[tuple[engine.PodPlan, _Manifest]]) -> tuple[ParseResult, list, list]:
    """Every pod file's plans (a fragment reused while ``key`` holds), the files' objects and the
    pods' identities, in file order. ``later``: each plan made here with the decoder its pod is
    to be left to once the cache is saved (a fragment is encoded from the pod itself)."""
    cache = scan.cache
    pod_files = ParseResult()
    plans: list[engine.PodPlan] = []
    idents: list[Pod | PodIdentity] = []
    for n, f in enumerate(scan.files):
        if f.rel.startswith("vms/"):
            continue
        reused = _reuse(cache.fragment(f.key, key), scan, n, ctx) if key else None
        if reused is not None:
            plans += reused[0]
            idents += reused[1]
            continue
        objs = scan.objects(f)
        pods, file_vms, errs, invalid, file_failed = objs
        add_entry(pod_files, scan.failed, f.rel, objs)
        fresh = []
        n_errors = len(pod_files.errors)
        for i, p in enumerate(pods):
            pp = _plan_pod(p, ctx, explain, exclusive, pod_files)
            if pp is not None:
                fresh.append(pp)
                idents.append(p)
                later.append((pp, _Manifest(scan, n, i)))
        plans += fresh
        if key and not (file_vms or errs or invalid or file_failed or len(pod_files.errors) > n_errors):
            cache.put_fragment(f.key, key, functools.partial(_encode, fresh))
    return pod_files, plans, idents


def load_plan(
    config_dir: Path | str = DEFAULT_DIR,
    cgroup: str = "v1",
    *,
    detected: Mapping[str, Quantity] | None = None,
    insecure: bool = False,
    cache_dir: Path | None = None,
    cache_write: bool = True,
    workers: int | None = None,
    machines: Sequence[engine.MachineCharge] = (),
    explain: bool = False,
    what_if: Sequence[Pod] = (),
    kept: Sequence[engine.KeptPod] = (),
    reads: Reads | None = None,
) -> tuple[Config, engine.Plan]:
    """``load_config`` and ``build_plan`` in one, with the same results and errors, reusing
    fragments from ``cache_dir`` (none without one: then it only does what the two do).
    ``explain``: plan with reasons (fragments are neither read nor written). ``what_if``: pods laid
    over the config's, replacing those with the same namespace/name (``explain FILE``). ``kept``:
    pod slices counted in their tiers besides the config's pods (what the last sync kept).
    ``reads``: where every input read is recorded (``Config.inputs`` holds them).
    Commands call this through :func:`sdqos.loading.load.load`."""
    scan = scan_config(config_dir, detected=detected, insecure=insecure, cache_dir=cache_dir,
                       cache_write=cache_write, workers=workers, reads=reads)
    cache = scan.cache
    # VMs first: they take their share of the node before any pod is planned. Their files' errors
    # and their duplicates are reported after the pods' files', as load_config orders them.
    vm_files, vm_failed, vms = _vm_files(scan)
    exclusive = cpu_assignments(reads=scan.reads) if scan.node.cpu_manager_policy == "static" else {}
    basis = engine.plan_basis(scan.node, vms.vms, cgroup, machines=machines, explain=explain, exclusive=exclusive,
                              shared_cpus=shared_cpus(scan.node, reads=scan.reads),
                              topology=_topology() if explain and exclusive else None)
    ctx = basis.context
    # (plans with exclusive CPUs are not cached: a fragment holds no assignment; a VM's are not a pod's)
    pods_hold = set(exclusive) - {v.uid for v in vms.vms}
    key = context_key(ctx) if cache.path is not None and not explain and not pods_hold else ""
    later: list[tuple[engine.PodPlan, _Manifest]] = []
    pod_files, plans, idents = _plan_pod_files(scan, ctx, key, explain, exclusive, later)
    on_disk = cache.save()
    cache.release()
    for made, manifest in later:  # the pods go (see _Manifest)
        made.manifest = manifest
    if on_disk:
        scan.drop_texts()  # and their texts, once the cache file holds them

    if what_if:
        replaced = {p.key for p in what_if}
        kept_ = [i for i, ident in enumerate(idents) if ident.key not in replaced]
        plans, idents = [plans[i] for i in kept_], [idents[i] for i in kept_]
        for p in what_if:
            pp = _plan_pod(p, ctx, explain, exclusive, pod_files)
            if pp is not None:
                plans.append(pp)
                idents.append(p)
    dup_errors, bad, dup_invalid = duplicate_pods(idents)
    if bad:
        plans = [pp for i, pp in enumerate(plans) if i not in bad]
    planned = {pp.slice for pp in plans}  # a kept slice whose pod is configured again is that pod
    plan = engine.assemble(basis, plans, explain=explain, kept=[k for k in kept if k.unit not in planned])
    scan.failed += vm_failed
    result = ParseResult(vms=vms.vms, errors=pod_files.errors + vm_files.errors + dup_errors + vms.errors,
                         invalid_keys=pod_files.invalid_keys | vm_files.invalid_keys | dup_invalid | vms.invalid_keys)
    cfg = scan.config(result)
    cfg.pods = PlannedPods(plan.pods)  # type: ignore[assignment]
    return cfg, plan
