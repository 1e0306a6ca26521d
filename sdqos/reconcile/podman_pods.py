"""``sdqos podman start|stop NS/NAME``: run a configured pod's containers with podman, the way
kubelet drives its runtime. The pod's slice (and tiers) first, with their values; then each init
container, in order, to completion; sidecars (``restartPolicy: Always`` init containers) started
and kept running before the init containers after them; then the app containers. Each container
gets kubelet's values and OOM score as podman flags (sdqos.plan.podman) and lands in its own
``libpod-<id>.scope`` inside the pod slice, where ``sync`` recognises it by podman's labels.
"""

from __future__ import annotations

from sdqos.errors import InvalidInput, SdqosError
from sdqos.host import podman
from sdqos.host import volumes as host_volumes
from sdqos.host.systemd import Systemd
from sdqos.kube.runspec import PodRunSpec
from sdqos.kube.security import non_root_error
from sdqos.plan import podman as flags
from sdqos.plan.engine import Plan, PodPlan
from sdqos.reconcile import launch


class PodRunning(SdqosError):
    """The pod's containers already run (use --replace)."""


def pod_containers(pp: PodPlan) -> list[podman.PodmanContainer]:
    """The podman containers sdqos started for this pod (by its uid label)."""
    return podman.containers(f"{flags.UID_LABEL}={pp.uid}")


async def start(sd: Systemd, plan: Plan, pp: PodPlan, spec: PodRunSpec, *, replace: bool = False) -> list[str]:
    """Start the pod's containers; returns what was done, one line each."""
    if not any(s.image for s in spec.containers):
        raise InvalidInput(f"no container of pod {pp.key} has an image: nothing for podman to run")
    names = {c.name for c in pp.containers}
    missing = [s.name for s in spec.containers if s.name not in names]
    if missing:  # the manifest changed since it was planned
        raise InvalidInput(f"pod {pp.key} has no planned container {missing[0]!r}; run sync first")
    check_non_root(spec)
    existing = pod_containers(pp)
    if existing and not replace:
        raise PodRunning(f"pod {pp.key} already has podman containers ({', '.join(c.name for c in existing)}); "
                         "pass --replace to stop them first")
    done = []
    if existing:
        podman.remove([c.name for c in existing], grace_s=pp.grace_period if pp.grace_period is not None else 30)
        done.append(f"removed {len(existing)} earlier container(s) of pod {pp.key}")
    root = host_volumes.volume_root()
    spec = host_volumes.prepare(spec, pp.uid, root)
    unit = plan.unit(pp.slice)
    assert unit is not None
    target = launch.Target(unit, launch.ancestors(plan, pp.slice), 0, f"pod {pp.key}")
    for name in await launch.ensure_ancestors(sd, target):
        done.append(f"created {name}")
    by_name = {c.name: c for c in pp.containers}
    started: list[str] = []
    try:
        for s in spec.containers:
            if not s.image:
                done.append(f"skipped {s.name}: no image (run it with `sdqos run {pp.key} {s.name} -- CMD`)")
                continue
            c = by_name[s.name]
            name = flags.container_name(pp, s.name)
            args = flags.run_args(pp, c, s, spec.restart_policy, plan.cgroup, volume_root=root)
            if s.kind == "init":
                args.insert(1, "--rm")
                r = podman.run(args, timeout=3600)
                if r.returncode != 0:
                    last = (r.stderr or "").strip().splitlines()[-1:] or [""]
                    raise SdqosError(f"init container {s.name} of pod {pp.key} exited {r.returncode}"
                                     + (f": {last[0]}" if last[0] else "") + "; the pod was not started")
                done.append(f"ran init container {name} to completion")
            else:
                podman.check(args)
                started.append(name)
                done.append(f"started {name} ({s.kind}) in {pp.slice}")
    except BaseException:
        if started:  # a pod starts whole or not at all
            podman.remove(started, grace_s=2)
        host_volumes.remove(pp.uid, root)
        raise
    return done


def check_non_root(spec: PodRunSpec) -> None:
    """kubelet's verifyRunAsNonRoot for containers without runAsUser: the image's user decides. Before
    anything starts, so a refused container leaves nothing of the pod running."""
    for s in spec.containers:
        if s.image and s.security.needs_image_user:
            problem = non_root_error(podman.image_user(s.image))
            if problem:
                raise InvalidInput(f"{problem} (image {s.image})", where=spec.where,
                                   field=f"{s.path}.securityContext.runAsNonRoot")


def stop(pp: PodPlan) -> list[str]:
    """Stop and remove the pod's podman containers, giving them its terminationGracePeriodSeconds."""
    existing = pod_containers(pp)
    grace = pp.grace_period if pp.grace_period is not None else launch.DEFAULT_GRACE_PERIOD_S
    podman.remove([c.name for c in existing], grace_s=max(launch.MINIMUM_GRACE_PERIOD_S, grace))
    host_volumes.remove(pp.uid, host_volumes.volume_root())  # its emptyDirs go with it
    return [f"removed {c.name}" for c in existing]
