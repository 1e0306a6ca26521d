"""The static CPU manager at the edges: its policy from node.yaml and the host's CPUs, its state
file (sdqos.host.cpustate), assignments made when a pod's container starts, released when a sync
finds the pod's units gone. VMs with ``spec.cpu.dedicatedCpuPlacement`` take theirs from the
same pool, keyed as KubeVirt's virt-launcher pod (the VM's uid, container ``compute``): at
``sdqos run --vm``, or at a sync that finds one running without them. Where the CPUs are held: on
cgroup v2 systemd holds them, as each container's and declared VM's scope's AllowedCPUs (a row of
plan/properties.py fed by ResourceConfig.cpuset: exclusive CPUs, else the shared pool; the state
file is an input of the plan, loading/incremental.py), written by the diff and apply like every
value; on cgroup v1 (systemd holds no cpuset there) they are set as the processes' affinity here.
The decisions are sdqos.kube.cpumanager's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from sdqos.host import cpustate, procfs, rundir
from sdqos.host.topology import read_numa_info, read_topology
from sdqos.kube import cpumanager as cm
from sdqos.kube import topologymanager as tm
from sdqos.kube import cpuset, naming
from sdqos.errors import InvalidInput
from sdqos.kube.model import CPU, NodeConfig, Pod, VirtualMachine
from sdqos.plan.engine import Plan
from sdqos.reconcile.scopes import LiveScope

SYS_ROOT = Path("/")


def static(node: NodeConfig) -> bool:
    return node.cpu_manager_policy == "static"


def policy_for(node: NodeConfig, root: Path = SYS_ROOT) -> cm.StaticPolicy:
    """NewStaticPolicy from node.yaml (reserved cpu: reservedSystemCPUs when set, which already
    replaced the cpu of both reservations) over the host's online CPUs."""
    kube = node.kube_reserved.get(CPU)
    system = node.system_reserved.get(CPU)
    reserved = cpuset.parse(node.reserved_system_cpus) if node.reserved_system_cpus else frozenset()
    num = cm.num_reserved_cpus(kube.milli_value() if kube is not None else 0,
                               system.milli_value() if system is not None else 0, reserved, "node.yaml")
    return cm.new_static_policy(read_topology(root), num, reserved, node.cpu_manager_policy_options, "node.yaml")


def manager_for(node: NodeConfig, root: Path = SYS_ROOT) -> tm.TopologyManager:
    """NewManager from node.yaml's topologyManagerPolicy / Scope / PolicyOptions over the host's
    NUMA nodes (TopologyPolicyOptionError as kubelet refuses to start)."""
    return tm.new_manager(node.topology_manager_policy, node.topology_manager_scope,
                          node.topology_manager_policy_options, read_numa_info(root), "node.yaml")


def admit(plan: Plan, key: str, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> cm.CPUManagerState | None:
    """A pod's container is about to start: the topology manager's admission and its pod's
    exclusive CPUs allocated (kept if held, aligned to the merged NUMA hint) and the state file
    written. None when the policy is none. TopologyAffinityError when the topology manager does
    not admit the pod, CPUsUnavailable when the CPUs cannot be had; nothing is written then."""
    if not static(plan.node):
        return None
    pp = plan.pod(key)
    assert pp is not None
    pod = pp.pod
    policy = policy_for(plan.node)
    state = cpustate.load(policy, run_dir)
    new = cm.admit_pod(policy, state, pod, key, manager_for(plan.node))
    if new != state:
        cpustate.save(new, run_dir)
    return new


def _vm(plan: Plan, name: str) -> VirtualMachine:
    vm = next((v.vm for v in plan.vms if v.vm.name == name), None)
    if vm is None:
        raise InvalidInput(f"no VM {name!r} in the config (vms/*.yaml)")
    pod = next((pp for pp in plan.pods if pp.uid == vm.uid), None)
    if pod is not None:  # one key in the state for two workloads: their CPUs would be one entry
        raise InvalidInput(f"VM {name}: uid {vm.uid} is also pod {pod.key}'s; the CPU manager keys both by uid",
                           where=str(vm.source) if vm.source else None, field="metadata.uid")
    return vm


def admit_vm(plan: Plan, name: str, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> frozenset[int] | None:
    """``sdqos run --vm NAME``, before anything is made: a VM with dedicatedCpuPlacement gets its
    exclusive CPUs from the pods' pool (kept if held) and the state file is written. Returns the
    CPUs its process runs on (exclusive, else the shared pool); None when the policy is none.
    CPUsUnavailable (one line: the VM, the CPUs free) when they cannot be had: nothing is moved."""
    if not static(plan.node):
        return None
    vm = _vm(plan, name)
    policy = policy_for(plan.node)
    state = cpustate.load(policy, run_dir)
    new = cm.admit_vm(policy, state, vm)
    if new != state:
        cpustate.save(new, run_dir)
    return cpus_of(new, vm.uid, cm.VM_CONTAINER)


def launch_cpus(plan: Plan, vm: str | None, pod_ref: str | None, container: str | None,
                run_dir: Path = rundir.DEFAULT_RUN_DIR) -> list[frozenset[int]]:
    """``sdqos run``, after kubelet's admission: the CPUs its process runs on (set as its affinity
    before exec, inherited by every thread) — a VM's (`admit_vm`) or a pod's container's (`admit`:
    its exclusive CPUs, else the shared pool); none when the policy is none."""
    if vm is not None:
        held = admit_vm(plan, vm, run_dir)
        return [held] if held is not None else []
    pp = plan.pod(pod_ref or "")
    assert pp is not None  # (run found it)
    state = admit(plan, pp.key, run_dir)
    return [cpus_of(state, pp.uid, container or "")] if state is not None else []


def cpus_of(state: cm.CPUManagerState, pod_uid: str, container: str) -> frozenset[int]:
    """A container's CPUs: its exclusive ones, else the shared pool."""
    return frozenset(state.get(pod_uid, container) or state.default_cpuset)


def assignments(state: cm.CPUManagerState | None, pod: Pod) -> Mapping[str, str]:
    """The plan's input for one pod: container → its exclusive CPUs as a CPU list."""
    if state is None:
        return {}
    return {name: str(cpus) for name, cpus in state.entries.get(pod.uid, {}).items()}


def release(plan: Plan, live_uids: Iterable[str], run_dir: Path = rundir.DEFAULT_RUN_DIR) -> cm.CPUManagerState | None:
    """A sync: the state restored and validated, the CPUs of every pod whose units are gone given
    back (written only when that changed anything)."""
    if not static(plan.node):
        return None
    state = cpustate.load(policy_for(plan.node), run_dir)
    new = cm.release_gone_pods(state, live_uids)
    if new != state:
        cpustate.save(new, run_dir)
    return new


def apply_affinity(state: cm.CPUManagerState,
                   containers: Iterable[tuple[str, str, str, str, str, list[int]]],
                   warnings: list[str], *, dry_run: bool = False) -> dict[str, dict]:
    """cgroup v1: each container scope's threads get its CPUs as their affinity (its exclusive
    CPUs, else the shared pool), only while a process is in that scope's cgroup. ``containers``:
    (scope, pod key, pod uid, container name, the scope's cgroup path, its PIDs). Returns, by
    scope, what changed: {"cpus": its CPU list, "threads": {the affinity they had: how many}};
    a refusal is a warning naming the container. ``dry_run``: nothing is set; what would change."""
    changed: dict[str, dict] = {}
    for scope, key, uid, name, cgroup, pids in containers:
        cpus = cpus_of(state, uid, name)
        refused = 0
        moved: list[frozenset[int]] = []
        for pid in pids:
            refused += procfs.set_affinity(pid, cpus, cgroup, moved=moved, dry_run=dry_run)[1]
        if moved:
            threads = Counter(str(cpuset.CPUSet(before)) for before in moved)
            changed[scope] = {"cpus": str(cpuset.CPUSet(cpus)), "threads": dict(sorted(threads.items()))}
        if refused:
            warnings.append(f"{key}/{name}: the kernel refused CPU affinity {cpuset.CPUSet(cpus)} for "
                            f"{refused} thread(s)")
    return changed


def _norm(uid: str) -> str:
    return uid.replace("-", "_")  # as unit names carry a uid


def live_uids(unit_names: Iterable[str]) -> set[str]:
    """The pods whose units exist (a pod slice or a container scope of sdqos's), as unit names
    spell their uid (dashes as underscores)."""
    out: set[str] = set()
    for name in unit_names:
        ps = naming.parse_pod_slice(name)
        if ps is not None:
            out.add(_norm(ps.uid))
            continue
        cs = naming.parse_container_scope(name)
        if cs is not None:
            out.add(_norm(cs[0]))
    return out


def sync_cpus(plan: Plan, unit_names: Iterable[str], bindings: Mapping, scopes: Mapping, warnings: list[str], *,
              full: bool, run_dir: Path = rundir.DEFAULT_RUN_DIR, dry_run: bool = False) -> dict[str, dict]:
    """A sync's part: the state restored (a full sync gives back the CPUs of pods whose units are
    gone, and writes the initial state when there is no file, as kubelet's checkpoint is written
    at its start: the next plan's shared pool), then on cgroup v1 every bound container scope's
    threads set to its CPUs (on v2 their scopes' AllowedCPUs hold them: the plan's, applied by the
    diff; the pool a release widens is the next sync's plan). Returns the threads it moved, by
    scope (:func:`apply_affinity`). ``dry_run``: the same, with nothing written or set."""
    if not static(plan.node):
        return {}
    policy = policy_for(plan.node)
    state = old = cpustate.load(policy, run_dir)
    running = running_vms(plan, bindings, scopes)
    if full:  # a VM's CPUs stay while its scope runs and it still asks for them
        present = live_uids(unit_names) | {_norm(vm.uid) for vm, _ in running.values() if vm.dedicated_cpu_placement}
        state = cm.release_gone_pods(state, [u for u in state.entries if _norm(u) in present])
    state = _admit_running_vms(policy, state, plan, running, warnings)
    if not dry_run and (state != old or (full and not cpustate.state_path(run_dir).exists())):
        cpustate.save(state, run_dir)
    if plan.cgroup != "v1":  # systemd holds them: the scopes' AllowedCPUs, from the plan
        return {}
    rows = []
    for name, b in bindings.items():
        key, container, scope = b.owner.pod_key, b.owner.container, scopes.get(name)
        pp = plan.pod(key) if key else None
        if pp is None or container is None or scope is None:
            continue
        rows.append((name, key, pp.uid, container, scope.cgroup, list(scope.pids)))
    for vm, scope in running.values():  # every declared VM: its exclusive CPUs, else the shared pool
        rows.append((scope.name, f"VM {vm.name}", vm.uid, cm.VM_CONTAINER, scope.cgroup, list(scope.pids)))
    return apply_affinity(state, rows, warnings, dry_run=dry_run)


def running_vms(plan: Plan, bindings: Mapping, scopes: Mapping) -> dict[str, tuple[VirtualMachine, LiveScope]]:
    """The declared VMs whose scope runs (bound by sync: sdqos's, libvirt's, machined's, a pid
    file's): name → (the VM, its live scope)."""
    vms = {v.vm.name: v.vm for v in plan.vms}
    out: dict[str, tuple[VirtualMachine, LiveScope]] = {}
    for name, b in bindings.items():
        vm, scope = vms.get(b.owner.vm_name or ""), scopes.get(name)
        if vm is not None and scope is not None:
            out[vm.name] = (vm, scope)
    return out


def _admit_running_vms(policy: cm.StaticPolicy, state: cm.CPUManagerState, plan: Plan, running: Mapping,
                       warnings: list[str]) -> cm.CPUManagerState:
    """A VM with dedicatedCpuPlacement found running without its CPUs (started by libvirt,
    machined, before static was set): they are taken now when free; else a warning naming it,
    and it runs on the shared pool (nothing running is moved to make room)."""
    for vm, _ in running.values():
        if not vm.dedicated_cpu_placement or state.get(vm.uid, cm.VM_CONTAINER) is not None:
            continue
        try:
            _vm(plan, vm.name)
            state = cm.admit_vm(policy, state, vm)
        except InvalidInput as exc:  # (CPUsUnavailable is one)
            warnings.append(f"{exc}; it runs on the shared pool until a sync finds them free")
    return state
