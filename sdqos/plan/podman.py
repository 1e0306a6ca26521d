"""A configured pod's containers as ``podman run`` arguments: kubelet's container values as podman
flags, the way kubelet hands them to its runtime over CRI. Pure.

- ``--cgroup-parent`` the pod slice: podman (crun, systemd cgroup manager) creates the container's
  ``libpod-<id>.scope`` there, as a CRI runtime creates its scope in the pod's slice.
- ``--cpu-shares`` (the request, or the limit without one), ``--cpu-quota``/``--cpu-period`` (only
  with a CPU limit and cpuCFSQuota), ``--memory`` (the limit) with ``--memory-swap`` (kubelet's
  swap: no swap beyond the limit on v1, the limit plus the container's swap on v2), ``--oom-score-adj`` (kubelet's
  policy), ``--pids-limit -1`` (kubelet limits pids per pod, not per container; podman's own
  default would be 2048). On cgroup v2 also ``memory.swap.max`` (memorySwap) and
  ``memory.oom.group`` (singleProcessOOMKill) through ``--cgroup-conf``.
- Named ``<namespace>_<pod>_<container>`` and labelled as kubelet labels CRI containers
  (``io.kubernetes.pod.namespace``, ``.name``, ``.uid``, ``io.kubernetes.container.name``) plus
  ``sdqos.io/managed=true``: what ``sync`` recognises a container by.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sdqos.kube import qos
from sdqos.plan.creation import DEFAULT_GRACE_PERIOD_S, MINIMUM_GRACE_PERIOD_S
from sdqos.plan.engine import ContainerPlan, PodPlan

if TYPE_CHECKING:  # a sync reads the labels below on every run; the run spec only when it runs podman
    from sdqos.kube.runspec import RunSpec
    from sdqos.kube.security import Security

MANAGED_LABEL = "sdqos.io/managed"
NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_LABEL = "io.kubernetes.pod.name"
UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_LABEL = "io.kubernetes.container.name"
# The pod's terminationGracePeriodSeconds on each container, as kubelet labels its CRI containers:
# a sync that removes a pod which left the config still gives its containers their grace period.
GRACE_LABEL = "io.kubernetes.pod.terminationGracePeriod"
# The pod's restartPolicy as podman's --restart; sidecars always restart (kubelet restarts them).
RESTART = {"Always": "always", "OnFailure": "on-failure", "Never": "no"}
# An imagePullPolicy the manifest gives, as podman's --pull; none given: podman's own (missing),
# i.e. IfNotPresent — not the API server's Always for :latest, which would pull local images away.
PULL = {"Always": "always", "IfNotPresent": "missing", "Never": "never"}
END_OF_OPTIONS = "--"  # podman run reads no option after it: the next argument is the image


def container_name(pp: PodPlan, container: str) -> str:
    ns, name = pp.key.split("/", 1)
    return f"{ns}_{name}_{container}"


def labels(pp: PodPlan, container: str) -> dict[str, str]:
    ns, name = pp.key.split("/", 1)
    out = {NAMESPACE_LABEL: ns, POD_LABEL: name, UID_LABEL: pp.uid, CONTAINER_LABEL: container, MANAGED_LABEL: "true"}
    if pp.grace_period is not None:
        out[GRACE_LABEL] = str(pp.grace_period)
    return out


def grace_seconds(pp: PodPlan | None = None, labels: dict[str, str] | None = None) -> int:
    """A pod's terminationGracePeriodSeconds (from its plan, else the label its containers carry),
    kubelet's default 30 when unset, never below kubelet's floor of 2."""
    grace = pp.grace_period if pp is not None else None
    if grace is None and labels is not None and (labels.get(GRACE_LABEL) or "").isdigit():
        grace = int(labels[GRACE_LABEL])
    if grace is None:
        grace = DEFAULT_GRACE_PERIOD_S
    return max(MINIMUM_GRACE_PERIOD_S, grace)


def owned_by(labels_: dict[str, str], uid: str | None = None) -> bool:
    """A container sdqos started (its managed label) for pod ``uid`` (any pod when None). The uid
    label alone is not enough: operators put it on their own containers so sync matches them."""
    return labels_.get(MANAGED_LABEL) == "true" and (uid is None or labels_.get(UID_LABEL) == uid)


# The kernel's own "no limit" (page-rounded LONG_MAX): what `podman update` is given to clear a
# memory limit, since podman 4.3 takes no -1 for --memory (memory+swap the same: no swap above it).
UNLIMITED_MEMORY = 0x7FFFFFFFFFFFF000
# The largest CFS quota the kernel takes, in µs (kernel/sched: max_cfs_runtime, 2^44 - 1): what
# `podman update` is given to lift a quota set before. podman 4.3 drops a quota <= 0
# (--cpu-quota=-1 and --cpus=0 send crun no quota: the old one stays) and crun 1.8 writes -1 as an
# unsigned number the kernel refuses, so no podman flag makes the file -1 again; this one can never
# throttle. The container's cgroup is read back holding it as holding no quota (reconcile/live.py).
MAX_CFS_QUOTA_US = (1 << 44) - 1


def _cpu_memory_flags(c: ContainerPlan, cgroup: str, *, no_quota: list[str], no_memory: Sequence[str] = ()) -> list[str]:
    """Shares, quota and period (``no_quota`` when there is no CPU limit), memory limit, and swap
    as kubelet sets it (configureContainerSwapResources): on v1 memory+swap equal to the memory
    limit (NoSwap: v1 has no other), on v2 the limit plus the container's swap (0 with NoSwap).
    Always given with a memory limit: podman's own default is twice the limit, swap as large as
    the memory, on ``run`` and again on every ``update``."""
    rc = c.resources
    out = [f"--cpu-shares={rc.cpu_shares}"]
    if rc.cpu_quota and rc.cpu_quota > 0:
        out += [f"--cpu-quota={rc.cpu_quota}", f"--cpu-period={rc.cpu_period}"]
    else:
        out += no_quota
    if rc.memory:
        swap = (rc.swap or 0) if cgroup == "v2" else 0
        out += [f"--memory={rc.memory}", f"--memory-swap={rc.memory + swap}"]
    elif not (cgroup == "v2" and rc.swap):  # (no limit but swap on v2: memory+swap cannot say that)
        out += list(no_memory)
    return out


def resource_flags(c: ContainerPlan, cgroup: str) -> list[str]:
    """kubelet's container values (generateLinuxContainerResources) as podman flags."""
    rc = c.resources
    out = _cpu_memory_flags(c, cgroup, no_quota=[]) + [f"--oom-score-adj={c.oom_score_adj}", "--pids-limit=-1"]
    if cgroup == "v2":
        if rc.swap is not None:
            out.append(f"--cgroup-conf=memory.swap.max={rc.swap}")
        if rc.oom_group is not None:
            out.append(f"--cgroup-conf=memory.oom.group={1 if rc.oom_group else 0}")
        if rc.memory_min:
            out.append(f"--cgroup-conf=memory.min={rc.memory_min}")
        if rc.memory_low:
            out.append(f"--cgroup-conf=memory.low={rc.memory_low}")
        if rc.memory_high and rc.memory_high > 0:
            out.append(f"--cgroup-conf=memory.high={rc.memory_high}")
    return out


def security_flags(sec: Security) -> list[str]:
    """The effective securityContext as podman flags (what a CRI runtime sets from
    LinuxContainerSecurityContext). Nothing here is free text: ids are integers, capability and
    sysctl names checked, profile paths checked (sdqos.kube.security)."""
    out = []
    if sec.run_as_user is not None:
        out.append(f"--user={sec.run_as_user}" + (f":{sec.run_as_group}" if sec.run_as_group is not None else ""))
    out += [f"--group-add={g}" for g in sec.groups]
    if sec.privileged:
        out.append("--privileged")
    if sec.read_only_root:  # kubelet's read-only root has no writable /tmp or /run: podman's tmpfs off
        out += ["--read-only", "--read-only-tmpfs=false"]
    if sec.no_new_privileges:
        out.append("--security-opt=no-new-privileges")
    out += [f"--cap-drop={c}" for c in sec.cap_drop]
    out += [f"--cap-add={c}" for c in sec.cap_add]
    if sec.seccomp:
        out.append(f"--security-opt=seccomp={sec.seccomp}")
    if sec.apparmor:
        out.append(f"--security-opt=apparmor={sec.apparmor}")
    out += [f"--sysctl={k}={v}" for k, v in sec.sysctls]
    return out


def mount_flags(spec: RunSpec, pp: PodPlan, volume_root: str) -> list[str]:
    """volumeMounts as ``--mount`` options: a bind of the host side (hostPath, on-disk emptyDir,
    subPath included), or a tmpfs for a Memory emptyDir (``sizeLimit``, else the pod's memory limit,
    as kubelet sizes it). Paths were checked to hold no ``,`` or ``"`` (sdqos.kube.volumes)."""
    out = []
    for m in spec.mounts:
        if m.volume.memory:
            size = m.volume.size_limit or pp.limits.get("memory")
            opts = ["type=tmpfs", f"destination={m.destination}", "tmpfs-mode=1777"]
            opts += [f"tmpfs-size={size}"] if size else []
        else:
            from sdqos.kube import volumes

            opts = ["type=bind", f"source={volumes.source(m, volume_root, pp.uid)}", f"destination={m.destination}"]
            opts += [f"bind-propagation={m.propagation}"] if m.propagation else []
        if m.read_only:
            opts.append("ro")
        out.append("--mount=" + ",".join(opts))
    return out


def run_args(pp: PodPlan, c: ContainerPlan, spec: RunSpec, restart_policy: str, cgroup: str, *,
             volume_root: str | None = None) -> list[str]:
    """``podman run`` arguments (after ``podman [global flags]``) for one container.

    The shape is fixed whatever the manifest holds: every option is one ``--flag=value`` token
    (a value is never a token of its own, so it can never be read as an option), then ``--``, then
    the image, then the manifest's args. podman (cobra/pflag) reads no option after ``--``, so the
    image is always the argument after it and everything behind it goes to the container.
    ``volume_root``: where emptyDirs live (None: :data:`sdqos.kube.volumes.DEFAULT_VOLUME_ROOT`)."""
    assert spec.image, "a container without an image is not podman's to run"
    if volume_root is None:
        from sdqos.kube import volumes

        volume_root = volumes.DEFAULT_VOLUME_ROOT
    args = ["run", f"--name={container_name(pp, c.name)}", f"--cgroup-parent={pp.slice}"]
    if spec.kind != "init":
        args.append("--detach")
        args.append(f"--restart={'always' if spec.kind == 'sidecar' else RESTART[restart_policy]}")
    for k, v in labels(pp, c.name).items():
        args.append(f"--label={k}={v}")
    args += resource_flags(c, cgroup)
    for k, v in spec.env:
        args.append(f"--env={k}={v}")
    if spec.working_dir:
        args.append(f"--workdir={spec.working_dir}")
    if spec.pull:
        args.append(f"--pull={PULL[spec.pull]}")
    args += security_flags(spec.security)
    args += mount_flags(spec, pp, volume_root)
    if spec.command:  # [] is no command, as in kubelet: the image's ENTRYPOINT stays
        args.append(f"--entrypoint={json.dumps(list(spec.command))}")
    args += [END_OF_OPTIONS, spec.image]
    if spec.args:
        args += list(spec.args)
    return args


def update_args(c: ContainerPlan, cgroup: str) -> list[str]:
    """``podman update`` arguments bringing a running container to kubelet's current values (what
    kubelet's UpdateContainerResources does for a resized pod, and its CPU manager's reconcileState
    for a container whose CPUs changed, pkg/kubelet/cm/cpumanager/cpu_manager.go): crun keeps a
    container's limits and its cpuset in its own cgroup below the scope, where the scope's values
    alone would not reach. (podman 4.3 takes no -1 for a memory limit: the kernel's own no-limit
    value clears one set before; nor for a quota: :data:`MAX_CFS_QUOTA_US` lifts one.)

    ``--cpuset-cpus`` where the plan holds the container's CPUs (cpuManagerPolicy static: its
    exclusive CPUs, else the shared pool as the state file has it now; crun writes them to the
    container's own cpuset.cpus, on v1 in the cpuset hierarchy systemd does not manage).

    No ``--cpu-shares`` on cgroup v2: crun converts shares to a weight with its own formula (crun
    1.8: linear, 256 shares → weight 10, where kubelet's is 35) and writes it to the scope through
    systemd, over the CPUWeight sync just gave it; the weight that counts is the scope's (crun's
    ``container`` cgroup below it has no siblings), and systemd sets it."""
    no_quota = [f"--cpu-quota={MAX_CFS_QUOTA_US}", f"--cpu-period={c.resources.cpu_period or qos.QUOTA_PERIOD_US}"]
    flags = _cpu_memory_flags(c, cgroup, no_quota=no_quota,
                              no_memory=[f"--memory={UNLIMITED_MEMORY}", f"--memory-swap={UNLIMITED_MEMORY}"])
    if c.resources.cpuset:  # (a CPU list the plan made from the state file: "0", "2-3")
        flags.append(f"--cpuset-cpus={c.resources.cpuset}")
    return ["update", *(f for f in flags if not (cgroup == "v2" and f.startswith("--cpu-shares=")))]
