"""``sdqos podman start|stop NS/NAME``: run a configured pod's containers with podman, the way
kubelet drives its runtime. The pod's slice (and tiers) first, with their values (made by a narrow
pass through the one writer, sync's diff and apply); then each init
container, in order, to completion; sidecars (``restartPolicy: Always`` init containers) started
and kept running before the init containers after them; then the app containers. Each container
gets kubelet's values and OOM score as podman flags (sdqos.plan.podman), under the static CPU
manager its CPUs (``--cpuset-cpus``), and lands in its own
``libpod-<id>.scope`` inside the pod slice, where ``sync`` recognises it by podman's labels.

Only sdqos's own containers are ever stopped or removed: those with ``sdqos.io/managed=true`` and
the pod's uid label (operators put the uid label on their own containers so sync tunes them;
that alone never makes a container sdqos's to remove).
"""

from __future__ import annotations

from sdqos.errors import HostError, InvalidInput, PodRunning, SdqosError
from sdqos.host import cgroupfs, podman
from sdqos.host import volumes as host_volumes
from sdqos.kube.naming import cgroup_path, podman_scope
from sdqos.kube.runspec import PodRunSpec
from sdqos.kube.security import non_root_error
from sdqos.plan import podman as flags
from sdqos.plan import engine
from sdqos.plan.creation import MINIMUM_GRACE_PERIOD_S
from sdqos.plan.engine import Plan, PodPlan
from sdqos.reconcile import launch


# podman's states in which a container's processes may run (podman ps's State)
RUNNING_STATES = frozenset({"running", "paused", "restarting", "stopping", "removing"})


def pod_containers(pp: PodPlan) -> list[podman.PodmanContainer]:
    """The podman containers sdqos started for this pod: its managed label and the pod's uid."""
    found = podman.containers(f"{flags.MANAGED_LABEL}=true", f"{flags.UID_LABEL}={pp.uid}")
    return [c for c in found if flags.owned_by(c.labels, pp.uid)]


def live_scopes(pp: PodPlan) -> dict[str, tuple[str, str]]:
    """The pod's running podman containers: container name → (its ``libpod-<id>.scope``, what
    runs it), for ``explain``. Nothing when podman is not installed, or when nothing runs in the
    pod's slice (the kernel says so): podman is not asked (a ``podman ps`` sets up its storage)."""
    if not podman.installed() or cgroupfs.populated(cgroup_path(pp.slice, "")) is False:
        return {}
    out = {}
    for c in pod_containers(pp):
        name = c.labels.get(flags.CONTAINER_LABEL)
        if c.state in RUNNING_STATES and name:
            out[name] = (podman_scope(c.id), f"podman container {c.name}")
    return out


def prepare(pp: PodPlan, spec: PodRunSpec, *, replace: bool = False) -> tuple[list[str], PodRunSpec]:
    """What must happen under the sync lock before the pod's slice and tiers are made (by a
    narrow pass that creates, ``Narrow(pod=..., create=True)``, through the one writer; a sync
    that planned without the pod would remove a slice made outside the lock): the checks, earlier
    containers removed, the pod's volumes made ready. Returns what was done and the run spec with
    the volumes' host paths."""
    if not any(s.image for s in spec.containers):
        raise InvalidInput(f"no container of pod {pp.key} has an image: nothing for podman to run")
    names = {c.name for c in pp.containers}
    missing = [s.name for s in spec.containers if s.name not in names]
    if missing:  # the manifest changed since it was planned
        raise InvalidInput(f"pod {pp.key} has no planned container {missing[0]!r}; run sync first")
    check_non_root(spec)
    existing = pod_containers(pp)
    running = [c for c in existing if c.state in RUNNING_STATES]
    if running and not replace:
        raise PodRunning(f"pod {pp.key} already has podman containers ({', '.join(c.name for c in running)}); "
                         "pass --replace to stop them first")
    done = []
    if existing:  # exited ones are leftovers of an earlier run: they go without --replace
        podman.remove([c.name for c in existing], grace_s=flags.grace_seconds(pp))
        done.append(f"removed {len(existing)} earlier container(s) of pod {pp.key}")
    root = host_volumes.volume_root()
    spec = host_volumes.prepare(spec, pp.uid, root)
    return done, spec


def run_containers(plan: Plan, pp: PodPlan, spec: PodRunSpec) -> list[str]:
    """Init containers in order, each to completion (no time limit, as kubelet), then sidecars and
    app containers, detached (``spec`` as :func:`prepare` returned it). If this is interrupted
    (Ctrl-C, SIGTERM) or a container fails, what it started is stopped and removed, and the pod's
    emptyDirs with it: a pod starts whole or not at all."""
    root = host_volumes.volume_root()
    started: list[str] = []
    done: list[str] = []
    try:
        pp, placement = cpu_placement(plan, pp)
        by_name = {c.name: c for c in pp.containers}
        for s in spec.containers:
            if not s.image:
                done.append(f"skipped {s.name}: no image (run it with `sdqos run {pp.key} {s.name} -- CMD`)")
                continue
            c = by_name[s.name]
            name = flags.container_name(pp, s.name)
            args = flags.run_args(pp, c, s, spec.restart_policy, plan.cgroup, volume_root=root)
            if s.kind == "init":
                args.insert(1, "--detach")
            if s.name in placement:
                args.insert(1, placement[s.name])
            _run(pp, name, args, started)
            if s.kind == "init":
                code = run_to_completion(name)
                last = podman.last_log_line(name) if code != 0 else ""
                podman.remove([name], grace_s=MINIMUM_GRACE_PERIOD_S)
                started.remove(name)
                if code != 0:
                    raise SdqosError(f"init container {s.name} of pod {pp.key} exited {code}"
                                     + (f": {last}" if last else "") + "; the pod was not started")
                done.append(f"ran init container {name} to completion")
            else:
                done.append(f"started {name} ({s.kind}) in {pp.slice}")
    except BaseException:
        if started:  # a pod starts whole or not at all; nothing is left running when sdqos gives up
            podman.remove(started, grace_s=flags.grace_seconds(pp))
        host_volumes.remove(pp.uid, root)
        raise
    return done


def cpu_placement(plan: Plan, pp: PodPlan) -> tuple[PodPlan, dict[str, str]]:
    """cpuManagerPolicy static: each container's CPUs as podman's ``--cpuset-cpus=LIST`` (one
    token, so never an option of its own), so that it starts on them: its exclusive CPUs as the
    state file holds them (``cpus.admit`` made them after ``plan`` was made), else the shared pool;
    computed from the state, never from manifest text. The pod is planned again with those
    assignments when ``plan`` had others, so that a container holding CPUs starts without the CFS
    quota (DisableCPUQuotaWithExclusiveCPUs) rather than having it removed by an update after.
    Under policy none: ``pp`` and no flags."""
    if plan.node.cpu_manager_policy != "static":
        return pp, {}
    from sdqos.host import cpustate  # (only under cpuManagerPolicy static: policy none loads no CPU manager)
    from sdqos.kube import cpuset
    from sdqos.reconcile import cpus

    state = cpustate.load(cpus.policy_for(plan.node))
    held = dict(cpus.assignments(state, pp.pod))
    if plan.basis is not None and held != {c.name: c.cpus for c in pp.containers if c.cpus}:
        pp = engine.plan_pod(pp.pod, plan.basis.context, exclusive=held)
    return pp, {c.name: f"--cpuset-cpus={cpuset.CPUSet(cpus.cpus_of(state, pp.uid, c.name))}" for c in pp.containers}


def _run(pp: PodPlan, name: str, args: list[str], started: list[str]) -> None:
    """``podman run``, its container counted as started before podman makes it: a Ctrl-C meanwhile
    lets podman finish (:func:`sdqos.host.podman.run`), and what it made is then removed with the
    rest. A refused run leaves it counted only if podman made it anyway (this pod's label)."""
    started.append(name)
    try:
        podman.check(args)
    except HostError:
        if name not in {c.name for c in pod_containers(pp)}:  # e.g. the name is another container's
            started.remove(name)
        raise


def check_non_root(spec: PodRunSpec) -> None:
    """kubelet's verifyRunAsNonRoot for containers without runAsUser: the image's user decides. Before
    anything starts, so a refused container leaves nothing of the pod running."""
    for s in spec.containers:
        if s.image and s.security.needs_image_user:
            problem = non_root_error(podman.image_user(s.image))
            if problem:
                raise InvalidInput(f"{problem} (image {s.image})", where=spec.where,
                                   field=f"{s.path}.securityContext.runAsNonRoot")


def run_to_completion(name: str) -> int:
    """Wait for a detached container to exit, without a time limit; its exit code. Its output
    stays in podman's log (``podman logs``), never in sdqos's memory."""
    out = podman.check(["wait", name], timeout=None).strip().splitlines()
    try:
        return int(out[-1])
    except (IndexError, ValueError):
        raise SdqosError(f"podman wait {name} gave no exit code") from None


def stop(pp: PodPlan) -> list[str]:
    """Stop and remove the pod's podman containers, giving them its terminationGracePeriodSeconds."""
    existing = pod_containers(pp)
    podman.remove([c.name for c in existing], grace_s=flags.grace_seconds(pp))
    host_volumes.remove(pp.uid, host_volumes.volume_root())  # its emptyDirs go with it
    return [f"removed {c.name}" for c in existing]
