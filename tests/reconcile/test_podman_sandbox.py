"""Real containers: `sdqos podman start|stop` runs a configured pod's containers with rootful podman
(crun, the systemd cgroup manager) inside the sandbox, and `sync` recognises them by podman's
labels. Checked where the kernel holds it: the container process's cgroup under the pod slice, its
cpu.shares, cfs quota, memory limit and oom_score_adj, and that conmon gets none of them.

podman's storage lives in the test's temp dir (vfs), its run state in the sandbox's private /run;
no network (netns none); the image is a static busybox imported with `podman import`."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from ..sbhelpers import copy_config, sdqos_in, sync_json

BUSYBOX = "/bin/busybox"
# A container process that ends on SIGTERM (a plain `sleep` as PID 1 would ignore it and wait out
# the grace period).
WAIT = '["/bin/sh", "-c", "trap \'exit 0\' TERM; sleep 100000 & wait"]'
POD = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: web, namespace: shop}}
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: migrate
    image: localhost/bb
    command: ["/bin/sh", "-c", "echo migrated"]
    resources: {{requests: {{cpu: 100m, memory: 32Mi}}, limits: {{cpu: 200m, memory: 64Mi}}}}
  - name: shipper
    image: localhost/bb
    restartPolicy: Always
    command: {WAIT}
    resources: {{requests: {{cpu: 50m, memory: 16Mi}}, limits: {{cpu: 100m, memory: 32Mi}}}}
  containers:
  - name: nginx
    image: localhost/bb
    command: {WAIT}
    env: [{{name: GREETING, value: hello}}]
    resources: {{requests: {{cpu: 250m, memory: 128Mi}}, limits: {{cpu: 500m, memory: 256Mi}}}}
"""


def _missing() -> list[str]:
    out = [f"{tool} not found (Debian package {pkg})" for tool, pkg in
           (("podman", "podman"), ("crun", "crun"), ("conmon", "conmon"))
           if shutil.which(tool) is None and not os.path.exists(f"/usr/libexec/podman/{tool}")]
    if not os.path.exists(BUSYBOX):
        out.append(f"{BUSYBOX} not found (Debian package busybox-static)")
    return out


@pytest.fixture
def podman_env(clean_sandbox, tmp_path):
    """(sandbox, env for sdqos and podman inside it, config dir with the pod)."""
    missing = _missing()
    if missing:
        reason = "podman prerequisites missing: " + "; ".join(missing)
        if os.environ.get("SDQOS_REQUIRE_PODMAN") == "1":
            pytest.fail(reason + " (SDQOS_REQUIRE_PODMAN=1)", pytrace=False)
        pytest.skip(reason)
    sb = clean_sandbox
    store = tmp_path / "podman"
    (store / "img" / "bin").mkdir(parents=True)
    shutil.copy(BUSYBOX, store / "img" / "bin" / "busybox")
    for applet in ("sh", "sleep", "echo", "cat"):
        os.symlink("busybox", store / "img" / "bin" / applet)
    conf = store / "containers.conf"
    conf.write_text('[containers]\ndefault_sysctls = []\nnetns = "none"\n[engine]\nruntime = "crun"\n'
                    'events_logger = "none"\n')
    env = {"CONTAINERS_CONF": str(conf),
           "SDQOS_PODMAN": f"podman --root {store}/root --runroot /run/sdqos-test-podman --storage-driver vfs"}
    r = sbx.run(sb, ["sh", "-c", f"tar -C {store}/img -cf {store}/img.tar . && $SDQOS_PODMAN import "
                     f"{store}/img.tar localhost/bb:latest"], env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    config = copy_config(tmp_path)
    for f in (config / "pods").iterdir():
        f.unlink()
    (config / "pods" / "shop.yaml").write_text(POD)
    yield sb, env, config
    sbx.run(sb, ["sh", "-c", "$SDQOS_PODMAN rm --all --force --time 0"], env=env, timeout=120)


def podman(sb, env, *args) -> str:
    r = sbx.run(sb, ["sh", "-c", '$SDQOS_PODMAN "$@"', "podman", *args], env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def inspect(sb, env, name) -> dict:
    return json.loads(podman(sb, env, "inspect", name))[0]


def cgroup_file(sb, pid: int, controller: str, name: str) -> str:
    """A cgroup v1 file of the cgroup ``pid`` runs in (for the controller), as the kernel holds it."""
    lines = sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"], check=True).stdout.splitlines()
    path = next(ln.split(":", 2)[2] for ln in lines if controller in ln.split(":")[1].split(","))
    mount = next(d for d in os.listdir("/sys/fs/cgroup") if controller in d.split(","))
    return sbx.run(sb, ["cat", f"/sys/fs/cgroup/{mount}{path}/{name}"], check=True).stdout.strip()


def test_podman_start_runs_the_pod_with_kubelets_values(podman_env):
    sb, env, config = podman_env
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-3:] == [
        "ran init container shop_web_migrate to completion",
        "started shop_web_shipper (sidecar) in kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice",
        "started shop_web_nginx (app) in kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"]
    plan = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)
    pod = plan["pods"][0]
    want = {c["name"]: c for c in pod["containers"]}
    for name, quota in (("nginx", 50_000), ("shipper", 10_000)):
        info = inspect(sb, env, f"shop_web_{name}")
        assert info["State"]["Running"] and info["Config"]["Labels"]["io.kubernetes.container.name"] == name
        pid = info["State"]["Pid"]
        assert f"/{pod['slice']}/libpod-{info['Id']}.scope" in sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"]).stdout
        props = want[name]["properties"]
        assert int(cgroup_file(sb, pid, "cpu", "cpu.shares")) == props["CPUShares"]
        assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == quota
        assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == props["MemoryLimit"]
        assert int(sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"]).stdout) == want[name]["oomScoreAdj"]
        conmon = info["State"]["ConmonPid"]
        assert int(sbx.run(sb, ["cat", f"/proc/{conmon}/oom_score_adj"]).stdout) != want[name]["oomScoreAdj"]
        assert "libpod-conmon-" in sbx.run(sb, ["cat", f"/proc/{conmon}/cgroup"]).stdout
        assert int(cgroup_file(sb, conmon, "memory", "memory.limit_in_bytes")) > 2**40  # none of the container's
    assert "GREETING=hello" in inspect(sb, env, "shop_web_nginx")["Config"]["Env"]
    assert "shop_web_migrate" not in podman(sb, env, "ps", "--all", "--format", "{{.Names}}")  # ran, and went

    # sync recognises them by podman's labels: the container values on their scopes too, conmon untouched
    report = sync_json(sb, config, env=env)
    updated = {u["unit"] for u in report["updated"]}
    nginx_scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    assert nginx_scope in updated and not any("conmon" in u for u in updated) and report["foreign"] == []
    text = sdqos_in(sb, "sync", "--config", str(config), env=env)
    assert text.stdout.startswith("nothing to do"), text.stdout
    status = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0", env=env).stdout)
    row = next(u for u in status["units"] if u["unit"] == nginx_scope)
    assert (row["pod"], row["container"], row["flags"], row["oomScoreAdj"]) == ("web", "nginx", [], [want["nginx"]["oomScoreAdj"]])

    # An edited limit reaches the running container itself (podman update), not only its scope.
    pod_file = config / "pods" / "shop.yaml"
    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}", "limits: {cpu: 300m, memory: 200Mi}"))
    report = sync_json(sb, config, env=env)
    assert nginx_scope in {u["unit"] for u in report["updated"]} and report["errors"] == []
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 200 * 2**20
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == 30_000
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).stdout.startswith("nothing to do")

    again = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert again.returncode == 1 and "already has podman containers" in again.stderr and "--replace" in again.stderr
    stop = sdqos_in(sb, "podman", "stop", "shop/web", "--config", str(config), env=env)
    assert stop.returncode == 0 and sorted(stop.stdout.split()) == sorted(
        ["removed", "shop_web_shipper", "removed", "shop_web_nginx"])
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""


def test_a_pod_that_leaves_the_config_is_stopped_through_podman(podman_env):
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    slice_name = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]["slice"]
    sync_json(sb, config, env=env)
    (config / "pods" / "shop.yaml").unlink()
    t0 = time.monotonic()
    report = sync_json(sb, config, "--allow-empty", "--max-removals", "100%", env=env)
    assert slice_name in report["removed"]
    assert f"{slice_name}: removed podman containers shop_web_nginx, shop_web_shipper" in report["warnings"]
    assert time.monotonic() - t0 < 20  # SIGTERM ended them; no grace period waited out
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""
    assert sbx.run(sb, ["systemctl", "is-active", slice_name]).stdout.strip() != "active"


def test_a_failing_init_container_starts_nothing(podman_env):
    sb, env, config = podman_env
    pod = config / "pods" / "shop.yaml"
    pod.write_text(pod.read_text().replace('"echo migrated"', '"echo failing >&2; exit 3"'))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 1
    assert r.stderr.strip() == ("sdqos: error: init container migrate of pod shop/web exited 3: failing; "
                                "the pod was not started")
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""
    # A container without an image is not podman's to run: the others start, and it is named.
    Path(config / "pods" / "shop.yaml").write_text(POD.replace("    image: localhost/bb\n    restartPolicy", "    restartPolicy"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    assert "skipped shipper: no image (run it with `sdqos run shop/web shipper -- CMD`)" in r.stdout.splitlines()
    assert podman(sb, env, "ps", "--format", "{{.Names}}").split() == ["shop_web_nginx"]
    env_from = POD.replace("env: [{name: GREETING, value: hello}]", "env: [{name: GREETING, valueFrom: {}}]")
    Path(config / "pods" / "shop.yaml").write_text(env_from)
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), "--replace", env=env)
    assert r.returncode == 2 and r.stderr.strip() == ("sdqos: error: pods/shop.yaml[0]: spec.containers[0].env[0].valueFrom: "
                                                       "valueFrom needs the Kubernetes API; give a value")


def test_a_podman_pod_in_the_pod_slice_is_matched_through_its_sub_slice(podman_env):
    """`podman pod create --cgroup-parent=<pod slice>` puts its containers one slice deeper
    (`<pod slice stem>-libpod_pod_<id>.slice`); a container there labelled with the pod's uid and
    a container name (as kubelet's CRI labels them) still gets that container's values."""
    sb, env, config = podman_env
    sync_json(sb, config, env=env)
    pod = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]
    podman(sb, env, "pod", "create", "--name=p1", f"--cgroup-parent={pod['slice']}")  # with its infra (catatonit)
    cid = podman(sb, env, "run", "--detach", "--pod=p1", "--name=manual", f"--label=io.kubernetes.pod.uid={pod['uid']}",
                 "--label=io.kubernetes.container.name=nginx", "localhost/bb", "/bin/sleep", "100000").strip()
    report = sync_json(sb, config, env=env)
    scope = f"libpod-{cid}.scope"
    assert scope in {u["unit"] for u in report["updated"]}, json.dumps(report)
    assert not any(f.startswith("libpod-") for f in report["foreign"])
    nginx = next(c for c in pod["containers"] if c["name"] == "nginx")
    pid = inspect(sb, env, "manual")["State"]["Pid"]
    cgroup = sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"]).stdout
    assert f"/{pod['slice'][:-len('.slice')]}-libpod_pod_" in cgroup
    assert int(sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"]).stdout) == nginx["oomScoreAdj"]
    show = sbx.run(sb, ["systemctl", "show", scope, "-p", "MemoryLimit", "-p", "CPUShares"]).stdout.split()
    assert show == [f"CPUShares={nginx['properties']['CPUShares']}", f"MemoryLimit={nginx['properties']['MemoryLimit']}"]
    podman(sb, env, "pod", "rm", "--force", "p1")


def test_readmes_walkthrough_from_a_manifest_to_a_running_container(podman_env):
    """README quickstart's manifest (examples/quickstart) and commands (its image is the local busybox
    under that name); tests/test_quickstart_sandbox.py runs the quickstart's lines themselves."""
    import re

    sb, env, config = podman_env
    manifest = (Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "pods" / "hello.yaml").read_text()
    image = re.search(r"image: (\S+)", manifest).group(1)
    podman(sb, env, "tag", "localhost/bb:latest", image)
    (config / "pods" / "hello.yaml").write_text(manifest)
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).returncode == 0
    r = sdqos_in(sb, "podman", "start", "demo/hello", "--config", str(config), env=env)
    assert r.returncode == 0 and "started demo_hello_app (app)" in r.stdout, r.stderr
    pid = inspect(sb, env, "demo_hello_app")["State"]["Pid"]
    assert int(cgroup_file(sb, pid, "cpu", "cpu.shares")) == 102  # 100m
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == 50_000  # 500m
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 64 * 2**20
    status = json.loads(sdqos_in(sb, "status", "--config", str(config), "--pod", "demo/hello", "-o", "json",
                                 "--interval", "0", env=env).stdout)
    assert any(u["container"] == "app" and u["running"] for u in status["units"])
    (config / "pods" / "hello.yaml").write_text(manifest.replace("memory: 64Mi}", "memory: 96Mi}"))
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).returncode == 0
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 96 * 2**20
    r = sdqos_in(sb, "podman", "stop", "demo/hello", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    assert "demo_hello_app" not in podman(sb, env, "ps", "--all", "--format", "{{.Names}}")
