"""Real podman + crun on a real cgroup v2 kernel (the bookworm guest with the "podman" layer: podman
4.3, crun 1.8, as on the v1 hosts the sandbox tests run on), where podman differs from v1: swap is
``memory.swap.max`` (kubelet's NoSwap: 0, also after ``podman update``), ``memory.oom.group`` comes
with ``--cgroup-conf``, and a removed memory limit is cleared by ``podman update``.

On v2 crun puts the container's process in a cgroup of its own below the scope,
``libpod-<id>.scope/container``; the limits are checked there (and on the scope). The CPU weight
is checked on the scope: crun writes its own conversion of the shares (1.8: linear, weight 10 for
256 shares) into ``container``, which has no siblings, so only the scope's weight counts, and that
one is kubelet's (sdqos sets it through systemd)."""

from __future__ import annotations

import json

from .conftest import PODMAN_ENV
from .test_v2_guest import write_config

MiB = 2**20
NODE = """\
capacity: {cpu: "2", memory: 2Gi, pids: "100000"}
"""
# A container process that ends on SIGTERM (a plain `sleep` as PID 1 would wait out the grace period).
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: nginx
    image: localhost/bb
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]
    resources: {requests: {cpu: 250m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}}
"""
FILES = ("cpu.weight", "cpu.max", "memory.max", "memory.swap.max", "memory.oom.group")


def sh(g, cmd: str, **kw) -> str:
    return g.check(cmd, env=PODMAN_ENV, **kw)


def container(g, name: str) -> tuple[str, str]:
    """(the container's own cgroup dir, its scope's dir), from where its process runs."""
    info = json.loads(sh(g, f"$SDQOS_PODMAN inspect {name}"))[0]
    path = sh(g, f"cat /proc/{info['State']['Pid']}/cgroup").strip()
    assert path.startswith("0::/") and path.endswith(f"/libpod-{info['Id']}.scope/container"), path
    own = "/sys/fs/cgroup" + path[len("0::"):]
    return own, own[: -len("/container")]


def files(g, d: str) -> dict[str, str]:
    out = sh(g, "; ".join(f"echo {f}=$(cat {d}/{f})" for f in FILES))
    return dict(line.split("=", 1) for line in out.splitlines())


def holds(g, d: str, want: dict[str, str]) -> bool:
    have = files(g, d)
    assert {f: have[f] for f in want} == want, d
    return True


def sync(g, cfg: str) -> dict:
    r = g.run(f"sdqos sync --config {cfg} -o json", env=PODMAN_ENV)
    assert r.rc == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_podman_pod_gets_kubelets_v2_values_and_keeps_no_swap_through_updates(v2podman):
    g = v2podman
    cfg = write_config(g, NODE, POD)
    sync(g, cfg)  # the QoS tree first, as README's walkthrough does
    r = g.run(f"sdqos podman start shop/web --config {cfg}", env=PODMAN_ENV)
    assert r.rc == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("started shop_web_nginx (app) in kubepods-burstable-pod")
    plan = json.loads(sh(g, f"sdqos plan --config {cfg} -o json"))
    assert plan["cgroup"] == "v2"
    weight = plan["pods"][0]["containers"][0]["properties"]["CPUWeight"]
    assert weight == 35  # kubelet 1.36's weight for 250m (256 shares)
    own, scope = container(g, "shop_web_nginx")
    assert holds(g, own, {"cpu.max": "50000 100000", "memory.max": str(256 * MiB),
                             "memory.swap.max": "0", "memory.oom.group": "1"})
    assert files(g, scope)["cpu.weight"] == str(weight)
    # right after podman start the scope holds kubelet's values: nothing pending
    d = g.run(f"sdqos diff --config {cfg}", env=PODMAN_ENV)
    assert d.rc == 0, d.stdout + d.stderr

    # An edited limit: podman update brings the container's own cgroup to it, still without swap,
    # and the scope keeps kubelet's weight (crun's own conversion does not overwrite it).
    sh(g, f"sed -i 's/limits: {{cpu: 500m, memory: 256Mi}}/limits: {{cpu: 300m, memory: 200Mi}}/' {cfg}/pods/shop.yaml")
    report = sync(g, cfg)
    assert report["errors"] == [] and scope.rsplit("/", 1)[1] in {u["unit"] for u in report["updated"]}, report
    assert holds(g, own, {"cpu.max": "30000 100000", "memory.max": str(200 * MiB),
                             "memory.swap.max": "0", "memory.oom.group": "1"})
    assert files(g, scope)["cpu.weight"] == str(weight)
    again = sync(g, cfg)
    assert again["updated"] == again["drift"] == again["errors"] == [], again

    # A removed memory limit: podman update with the kernel's own no-limit value clears it in the
    # container's cgroup (v2: "max"), swap stays 0.
    sh(g, f"sed -i 's/limits: {{cpu: 300m, memory: 200Mi}}/limits: {{cpu: 300m}}/' {cfg}/pods/shop.yaml")
    report = sync(g, cfg)
    assert report["errors"] == [], report
    assert holds(g, own, {"cpu.max": "30000 100000", "memory.max": "max", "memory.swap.max": "0"})
    assert files(g, scope)["memory.max"] == "max" and files(g, scope)["cpu.weight"] == str(weight)
    again = sync(g, cfg)
    assert again["updated"] == again["drift"] == again["errors"] == [], again
    assert g.run(f"sdqos diff --config {cfg}", env=PODMAN_ENV).rc == 0

    # A removed CPU limit: podman 4.3 sends crun no quota for --cpu-quota=-1, so the container gets
    # the kernel's largest (it can never throttle), read back as none; the scope's is systemd's "max".
    sh(g, f"sed -i 's/limits: {{cpu: 300m}}/limits: {{}}/' {cfg}/pods/shop.yaml")
    report = sync(g, cfg)
    assert report["errors"] == [] and scope.rsplit("/", 1)[1] in {u["unit"] for u in report["updated"]}, report
    assert files(g, own)["cpu.max"] == f"{2**44 - 1} 100000" and files(g, scope)["cpu.max"] == "max 100000"
    again = sync(g, cfg)
    assert again["updated"] == again["drift"] == again["errors"] == [], again

    stop = g.run(f"sdqos podman stop shop/web --config {cfg}", env=PODMAN_ENV)
    assert stop.rc == 0 and stop.stdout.split() == ["removed", "shop_web_nginx"], stop.stdout + stop.stderr
    assert sh(g, "$SDQOS_PODMAN ps --all --format '{{.Names}}'").strip() == ""


def test_single_process_oom_kill_leaves_the_containers_oom_group_off(v2podman):
    g = v2podman
    cfg = write_config(g, NODE + "singleProcessOOMKill: true\n", POD)
    sync(g, cfg)
    r = g.run(f"sdqos podman start shop/web --config {cfg}", env=PODMAN_ENV)
    assert r.rc == 0, r.stderr
    own, _ = container(g, "shop_web_nginx")
    assert files(g, own)["memory.oom.group"] == "0"
    assert g.run(f"sdqos podman stop shop/web --config {cfg}", env=PODMAN_ENV).rc == 0


STATIC_NODE = NODE + 'reservedSystemCPUs: "0"\ncpuManagerPolicy: static\n'
# No CPU request: with CPU 0 reserved one CPU is allocatable, all of it for the pinned pod below.
SHARED = POD.replace("requests: {cpu: 250m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}",
                     "requests: {memory: 128Mi}, limits: {memory: 256Mi}")
PINNED = """\
apiVersion: v1
kind: Pod
metadata: {name: pin, namespace: shop}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: localhost/bb
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]
    resources: {requests: {cpu: "1", memory: 32Mi}, limits: {cpu: "1", memory: 32Mi}}
"""


def cpus_of(g, name: str) -> tuple[str, str, str]:
    """(the container's own cpuset.cpus, its scope's, its process's Cpus_allowed_list)."""
    own, scope = container(g, name)
    pid = json.loads(sh(g, f"$SDQOS_PODMAN inspect {name}"))[0]["State"]["Pid"]
    allowed = next(ln.split(":", 1)[1].strip() for ln in sh(g, f"cat /proc/{pid}/status").splitlines()
                   if ln.startswith("Cpus_allowed_list:"))
    return sh(g, f"cat {own}/cpuset.cpus").strip(), sh(g, f"cat {scope}/cpuset.cpus").strip(), allowed


def test_a_shared_containers_cpuset_follows_the_pool_as_pinned_pods_come_and_go(v2podman):
    """cpuManagerPolicy static: a container on the shared pool started with podman's --cpuset-cpus,
    which crun pins in its own cgroup below the scope. When a Guaranteed pod takes CPU 1 the pool
    narrows to 0, when it goes the pool is 0-1 again: each sync brings the container's own
    cpuset.cpus (and so its process's affinity) to the pool through podman update, as kubelet's CPU
    manager updates every container whose CPUs changed (reconcileState)."""
    g = v2podman
    if sh(g, "nproc").strip() != "2":
        raise AssertionError("the podman guest has no second vCPU")
    assert SHARED != POD
    cfg = write_config(g, STATIC_NODE, SHARED)
    sh(g, f"cat > {cfg}/pods/pin.yaml <<'X'\n{PINNED}X\n")
    sync(g, cfg)
    r = g.run(f"sdqos podman start shop/web --config {cfg}", env=PODMAN_ENV)
    assert r.rc == 0, r.stderr
    assert cpus_of(g, "shop_web_nginx") == ("0-1", "0-1", "0-1")

    r = g.run(f"sdqos podman start shop/pin --config {cfg}", env=PODMAN_ENV)
    assert r.rc == 0, r.stderr
    assert cpus_of(g, "shop_pin_app") == ("1", "1", "1")
    report = sync(g, cfg)  # the pool is 0 now: the shared container narrows to it
    assert report["errors"] == [], report
    assert cpus_of(g, "shop_web_nginx") == ("0", "0", "0")
    again = sync(g, cfg)
    assert again["updated"] == again["drift"] == again["errors"] == [], again
    # one started now starts on the narrow pool
    sh(g, f"cat > {cfg}/pods/late.yaml <<'X'\n{SHARED.replace('name: web', 'name: late')}X\n")
    r = g.run(f"sdqos podman start shop/late --config {cfg}", env=PODMAN_ENV)
    assert r.rc == 0, r.stderr
    assert cpus_of(g, "shop_late_nginx") == ("0", "0", "0")

    stop = g.run(f"sdqos podman stop shop/pin --config {cfg}", env=PODMAN_ENV)
    assert stop.rc == 0, stop.stdout + stop.stderr
    sh(g, f"rm {cfg}/pods/pin.yaml")
    for _ in range(2):  # the CPUs given back at a full sync widen the next one's pool
        report = sync(g, cfg)
        assert report["errors"] == [], report
    for name in ("shop_web_nginx", "shop_late_nginx"):
        assert cpus_of(g, name) == ("0-1", "0-1", "0-1"), name
    again = sync(g, cfg)
    assert again["updated"] == again["drift"] == again["errors"] == [], again
    for pod in ("shop/web", "shop/late"):
        assert g.run(f"sdqos podman stop {pod} --config {cfg}", env=PODMAN_ENV).rc == 0
