"""The static CPU manager at the edges: its policy from node.yaml and the host's CPUs, its state
file (sdqos.host.cpustate), assignments made when a pod's container starts, released when a sync
finds the pod's units gone, and on cgroup v1 the CPUs set as the containers' processes' affinity
(systemd holds no cpuset there). The decisions are sdqos.kube.cpumanager's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from sdqos.host import cpustate, procfs, rundir
from sdqos.host.topology import read_numa_info, read_topology
from sdqos.kube import cpumanager as cm
from sdqos.kube import topologymanager as tm
from sdqos.kube import cpuset, naming
from sdqos.kube.model import CPU, NodeConfig, Pod
from sdqos.plan.engine import Plan

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
                   containers: Iterable[tuple[str, str, str, str, list[int]]], warnings: list[str]) -> int:
    """cgroup v1: each container scope's threads get its CPUs as their affinity (its exclusive
    CPUs, else the shared pool), only while a process is in that scope's cgroup. ``containers``:
    (pod key, pod uid, container name, the scope's cgroup path, its PIDs). Returns threads changed;
    a refusal is a warning naming the container."""
    changed = 0
    for key, uid, name, cgroup, pids in containers:
        cpus = cpus_of(state, uid, name)
        refused = 0
        for pid in pids:
            c, r = procfs.set_affinity(pid, cpus, cgroup)
            changed += c
            refused += r
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
              full: bool, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> int:
    """A sync's part: the state restored (a full sync gives back the CPUs of pods whose units are
    gone), then every bound container scope's threads set to its CPUs. Returns threads changed."""
    if not static(plan.node):
        return 0
    policy = policy_for(plan.node)
    state = cpustate.load(policy, run_dir)
    if full:
        present = live_uids(unit_names)
        new = cm.release_gone_pods(state, [u for u in state.entries if _norm(u) in present])
        if new != state:
            cpustate.save(new, run_dir)
            state = new
    rows = []
    for name, b in bindings.items():
        key, container, scope = b.owner.pod_key, b.owner.container, scopes.get(name)
        pp = plan.pod(key) if key else None
        if pp is None or container is None or scope is None:
            continue
        rows.append((key, pp.uid, container, scope.cgroup, list(scope.pids)))
    return apply_affinity(state, rows, warnings)
