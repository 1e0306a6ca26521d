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
