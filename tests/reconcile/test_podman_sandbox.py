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

from ..sbhelpers import UNLIMITED_V1, copy_config, end_tree, interrupt_at, sdqos_in, sync_json

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

    # sync recognises them by podman's labels: the container values already on their scopes (podman
    # start put them there through the sync's path), conmon untouched
    report = sync_json(sb, config, env=env)
    updated = {u["unit"] for u in report["updated"]}
    nginx_scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    assert nginx_scope in report["unchanged"] and not any("conmon" in u for u in updated) and report["foreign"] == []
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


def test_a_container_started_after_a_warm_sync_is_found_and_tuned(podman_env):
    """A warm sync reuses podman's answer while the same libpod scopes run (observed.json); a
    container started since, in the pod slice, is a new scope: podman is asked, the container
    matched by its labels and tuned, its process given the container's OOM score."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    ids = {inspect(sb, env, f"shop_web_{n}")["Id"] for n in ("nginx", "shipper")}
    kept = json.loads(sbx.run(sb, ["cat", "/run/sdqos/observed.json"], check=True).stdout)["podman"]
    assert ids <= {c["id"] for c in kept["containers"]}
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).stdout.startswith("nothing to do")
    pod = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]
    cid = podman(sb, env, "run", "--detach", "--name=late", f"--cgroup-parent={pod['slice']}",
                 f"--label=io.kubernetes.pod.uid={pod['uid']}", "--label=io.kubernetes.container.name=nginx",
                 "localhost/bb", "/bin/sleep", "100000").strip()
    report = sync_json(sb, config, env=env)
    scope = f"libpod-{cid}.scope"
    assert scope in {u["unit"] for u in report["updated"]} and report["foreign"] == [], json.dumps(report)
    nginx = next(c for c in pod["containers"] if c["name"] == "nginx")
    pid = inspect(sb, env, "late")["State"]["Pid"]
    cg = sbx.run(sb, ["systemctl", "show", scope, "-p", "ControlGroup", "--value"], check=True).stdout.strip()
    assert f"{cg}/" in sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"]).stdout or f"{cg}\n" in sbx.run(
        sb, ["cat", f"/proc/{pid}/cgroup"]).stdout
    for controller, name, want in (("memory", "memory.limit_in_bytes", nginx["properties"]["MemoryLimit"]),
                                   ("cpu", "cpu.shares", nginx["properties"]["CPUShares"])):
        mount = next(d for d in os.listdir("/sys/fs/cgroup") if controller in d.split(","))
        assert int(sbx.run(sb, ["cat", f"/sys/fs/cgroup/{mount}{cg}/{name}"], check=True).stdout) == want
    assert int(sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"]).stdout) == nginx["oomScoreAdj"]
    # and once it is gone, its scope is no longer there to match (podman asked again, nothing stale)
    podman(sb, env, "rm", "--force", "--time", "0", "late")
    report = sync_json(sb, config, env=env)
    assert scope not in {u["unit"] for u in report["updated"]} and report["errors"] == []
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).stdout.startswith("nothing to do")


def test_a_pod_that_leaves_the_config_is_stopped_through_podman(podman_env):
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    slice_name = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]["slice"]
    sync_json(sb, config, env=env)
    (config / "pods" / "shop.yaml").unlink()
    t0 = time.monotonic()
    report = sync_json(sb, config, "--allow-empty", "--max-removals", "100%", env=env)
    assert slice_name in report["removed"]
    assert report["podmanRemoved"] == ["shop_web_nginx", "shop_web_shipper"] and report["warnings"] == []
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


def test_only_sdqos_own_containers_are_stopped_or_removed(podman_env):
    """An operator's container with only the pod's uid label (as the docs tell operators to label
    theirs, so sync tunes them) survives `podman start`, `start --replace`, `podman stop` and the
    sync that removes the pod; sdqos's own containers go, exited ones too, and the pod, back in the
    config, starts without --replace."""
    sb, env, config = podman_env
    sync_json(sb, config, env=env)
    pod = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]
    podman(sb, env, "run", "--detach", "--name=operators", f"--label=io.kubernetes.pod.uid={pod['uid']}",
           "localhost/bb", "/bin/sleep", "100000")

    def names(*flags):
        return sorted(podman(sb, env, "ps", *flags, "--format", "{{.Names}}").split())

    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    r = sdqos_in(sb, "podman", "start", "shop/web", "--replace", "--config", str(config), env=env)
    assert r.returncode == 0 and "removed 2 earlier container(s) of pod shop/web" in r.stdout, r.stderr
    assert names() == ["operators", "shop_web_nginx", "shop_web_shipper"]
    r = sdqos_in(sb, "podman", "stop", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0 and "operators" not in r.stdout
    assert names("--all") == ["operators"]

    # An exited container of the pod, and a running one: both go with the pod, the operator's stays.
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    podman(sb, env, "stop", "--time=0", "shop_web_nginx")
    assert names() == ["operators", "shop_web_shipper"]
    pod_file = config / "pods" / "shop.yaml"
    pod_file.rename(config / "shop.yaml.off")
    report = sync_json(sb, config, "--allow-empty", "--max-removals", "100%", env=env)
    assert pod["slice"] in report["removed"], report
    assert report["podmanRemoved"] == ["shop_web_nginx", "shop_web_shipper"]
    assert names("--all") == ["operators"]
    assert inspect(sb, env, "operators")["State"]["Running"]

    # Back in the config: starts without --replace (nothing of its earlier run is left).
    (config / "shop.yaml.off").rename(pod_file)
    sync_json(sb, config, env=env)
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0 and "earlier container" not in r.stdout, r.stderr
    # Exited leftovers of an earlier run do not need --replace either; running ones do.
    podman(sb, env, "stop", "--time=0", "shop_web_nginx", "shop_web_shipper")
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0 and "removed 2 earlier container(s) of pod shop/web" in r.stdout, r.stderr
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 1 and "--replace" in r.stderr
    assert inspect(sb, env, "operators")["State"]["Running"]


def _hold_sync_lock(sb):
    """A process in the sandbox holding /run/sdqos/sync.lock (as a running sync does) until its
    stdin closes."""
    import subprocess

    p = sbx.popen(sb, ["sh", "-c", "mkdir -p -m 755 /run/sdqos && exec 9>>/run/sdqos/sync.lock && flock 9 "
                       "&& echo locked && read x"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_podman_start_and_run_wait_for_the_sync_lock_and_sync_plans_under_it(podman_env):
    """`podman start` and `run` make slices only while they hold the sync lock, and sync plans only
    once it holds it: a sync that planned before a pod was added never removes the slice `podman
    start` made for it."""
    import subprocess

    sb, env, config = podman_env
    pod_file = config / "pods" / "shop.yaml"
    pod_file.rename(config / "shop.yaml.off")
    sync_json(sb, config, "--allow-empty", env=env)
    (config / "shop.yaml.off").rename(pod_file)
    slice_name = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]["slice"]
    holder = _hold_sync_lock(sb)
    try:
        for argv in (["podman", "start", "shop/web"], ["run", "shop/web", "nginx", "--", "true"]):
            r = sdqos_in(sb, *argv[:1 if argv[0] == "run" else 2], "--config", str(config), "--lock-timeout", "0.5",
                         *argv[1 if argv[0] == "run" else 2:], env=env)
            assert r.returncode == 3 and "sync.lock" in r.stderr, (argv, r.stderr)
        assert sbx.run(sb, ["systemctl", "is-active", slice_name]).stdout.strip() != "active"
        assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""
        # A sync that starts while the lock is held plans once it has the lock: with the pod added meanwhile.
        pod_file.rename(config / "shop.yaml.off")
        waiting = sbx.popen(sb, [__import__("sys").executable, "-m", "sdqos", "sync", "--config", str(config),
                                 "-o", "json", "--allow-empty", "--max-removals", "100%"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=sbx.inner_env(env))
        time.sleep(1.0)
        (config / "shop.yaml.off").rename(pod_file)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    out, errs = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, errs
    assert slice_name in json.loads(out)["created"]
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    assert sbx.run(sb, ["systemctl", "is-active", slice_name]).stdout.strip() == "active"


@pytest.mark.parametrize("broken", ["/nonexistent/podman", "podman --root /proc/version"])
def test_a_podman_that_cannot_be_asked_fails_the_sync_and_keeps_its_containers(podman_env, broken):
    """A missing podman, or one that exits non-zero (unusable storage), is an error in the report
    and exit 1, never a warning; its containers keep their values and keep running, and a pod that
    left the config keeps its slice, until podman answers again."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    limit = cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")
    bad = dict(env, SDQOS_PODMAN=broken)
    report = sync_json(sb, config, env=bad, expect=1)
    assert any(e.startswith("cannot ask podman which containers run in pod slices: ") for e in report["errors"]), report
    assert not any("podman" in w for w in report["warnings"]), report["warnings"]
    assert report["removed"] == [] and report["reset"] == []
    r = sdqos_in(sb, "sync", "--config", str(config), "--quiet", env=bad)
    assert r.returncode == 1 and "sdqos: error: cannot ask podman" in r.stderr
    pod_file = config / "pods" / "shop.yaml"
    pod_file.rename(config / "shop.yaml.off")
    report = sync_json(sb, config, "--allow-empty", "--max-removals", "100%", env=bad, expect=1)
    assert report["removed"] == [] and report["podmanRemoved"] == []
    assert inspect(sb, env, "shop_web_nginx")["State"]["Running"]
    assert inspect(sb, env, "shop_web_nginx")["State"]["Pid"] == pid
    assert cgroup_file(sb, pid, "memory", "memory.limit_in_bytes") == limit
    report = sync_json(sb, config, "--allow-empty", "--max-removals", "100%", env=env)  # podman back
    assert report["podmanRemoved"] == ["shop_web_nginx", "shop_web_shipper"]


STUBBORN = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop}}
spec:
  terminationGracePeriodSeconds: 6
  containers:
  - name: app
    image: localhost/bb
    command: ["/bin/sleep", "100000"]
    resources: {{requests: {{cpu: 50m, memory: 16Mi}}, limits: {{cpu: 100m, memory: 32Mi}}}}
"""


def test_removed_pods_stop_side_by_side_each_with_its_grace_period(podman_env):
    """Two pods whose containers ignore SIGTERM (sleep as PID 1), 6 s grace each: removed together
    in one sync, they get their 6 s (not kubelet's default 30) side by side (not 12 s one after
    the other), and the report says so as a change, not a warning."""
    sb, env, config = podman_env
    (config / "pods" / "shop.yaml").unlink()
    for name in ("a", "b"):
        (config / "pods" / f"{name}.yaml").write_text(STUBBORN.format(name=name))
    sync_json(sb, config, env=env)
    for name in ("a", "b"):
        r = sdqos_in(sb, "podman", "start", f"shop/{name}", "--config", str(config), env=env)
        assert r.returncode == 0, r.stderr
    assert inspect(sb, env, "shop_a_app")["Config"]["Labels"]["io.kubernetes.pod.terminationGracePeriod"] == "6"
    for name in ("a", "b"):
        (config / "pods" / f"{name}.yaml").unlink()
    t0 = time.monotonic()
    r = sdqos_in(sb, "sync", "--config", str(config), "--allow-empty", "--max-removals", "100%", env=env)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stdout + r.stderr, r.stdout
    assert "  removed  podman container shop_a_app" in r.stdout.splitlines()
    assert "  removed  podman container shop_b_app" in r.stdout.splitlines()
    assert 6 <= took < 12, took  # each waited out its own grace period, both at once
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""


def test_init_container_output_stays_out_of_sdqos_and_an_interrupted_start_leaves_nothing_running(podman_env):
    """An init container that writes 300 MB: its output goes to podman's log, sdqos's peak RSS stays
    small. An init container that never ends is waited for without a time limit; Ctrl-C on sdqos
    stops and removes it."""
    import signal
    import subprocess
    import sys

    sb, env, config = podman_env
    pod = config / "pods" / "shop.yaml"
    pod.write_text(POD.replace('"echo migrated"', '"head -c 300000000 /dev/zero | tr \\\\\\\\0 x; echo done"'))
    probe = ("import resource, subprocess, sys; r = subprocess.run([sys.executable, '-m', 'sdqos'] + sys.argv[1:]); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = sbx.run(sb, [sys.executable, "-c", probe, "podman", "start", "shop/web", "--config", str(config)],
                env=env, timeout=300)
    code, maxrss_kib = map(int, r.stdout.split()[-2:])
    assert code == 0 and "ran init container shop_web_migrate to completion" in r.stdout, r.stderr
    assert maxrss_kib < 150 * 1024, maxrss_kib  # sdqos and the podman commands it waited for
    assert sdqos_in(sb, "podman", "stop", "shop/web", "--config", str(config), env=env).returncode == 0

    pod.write_text(POD.replace('"echo migrated"', '"sleep 100000"'))
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "podman", "start", "shop/web", "--config", str(config)],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=sbx.inner_env(env),
                  start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "shop_web_migrate" not in podman(sb, env, "ps", "--format", "{{.Names}}"):
            assert time.monotonic() < deadline and p.poll() is None, p.communicate()
            time.sleep(0.2)
        time.sleep(1)
        assert p.poll() is None  # still waiting: no time limit
        pids = sbx.run(sb, ["pgrep", "-f", f"sdqos podman start shop/web --config {config}"]).stdout.split()
        assert len(pids) == 1, pids
        sbx.run(sb, ["kill", "-INT", pids[0]], check=True)
        out, errs = p.communicate(timeout=60)
    finally:
        end_tree(p)
    assert p.returncode == 130 and "sdqos: interrupted" in errs, errs
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""


@pytest.mark.parametrize("delay", (0.0, 0.3, 1.0, 2.0, 3.5, 6.0))
def test_ctrl_c_at_any_point_of_a_start_ends_it_and_leaves_no_container(podman_env, delay):
    """One SIGINT whenever it comes (loading, making the slice, `podman run`, waiting for an init
    container): sdqos ends, and what it started is stopped and removed (a podman killed while it
    held a container's lock once made that cleanup wait forever)."""
    import sys

    sb, env, config = podman_env
    (config / "pods" / "shop.yaml").write_text(POD.replace('"echo migrated"', '"sleep 100000"'))
    rc, out, err, took = interrupt_at(sb, [sys.executable, "-m", "sdqos", "podman", "start", "shop/web", "--config",
                                           str(config)], delay, env=env, within=90)
    assert rc is not None, "podman start still running 90 s after Ctrl-C"
    assert rc in (130, -2) or err.startswith("Fatal Python error: init_import_site"), (rc, err)
    assert "Traceback" not in err or err.startswith("Fatal Python error"), err
    assert podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""


def test_no_swap_as_kubelet_on_start_and_after_an_update(podman_env):
    """kubelet's NoSwap on cgroup v1: memory+swap equal to the memory limit, in the container's
    own cgroup (podman's default would give twice the limit), and still so after a sync changed the
    limit through `podman update`."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    assert "/container" in sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"]).stdout  # crun's cgroup below the scope
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 256 * 2**20
    assert int(cgroup_file(sb, pid, "memory", "memory.memsw.limit_in_bytes")) == 256 * 2**20
    sync_json(sb, config, env=env)
    pod_file = config / "pods" / "shop.yaml"
    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}", "limits: {cpu: 500m, memory: 300Mi}"))
    report = sync_json(sb, config, env=env)
    assert report["errors"] == []
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 300 * 2**20
    assert int(cgroup_file(sb, pid, "memory", "memory.memsw.limit_in_bytes")) == 300 * 2**20
    pod_file.write_text(pod_file.read_text().replace("memory: 300Mi}", "memory: 200Mi}"))  # shrinking: memsw first
    assert sync_json(sb, config, env=env)["errors"] == []
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 200 * 2**20
    assert int(cgroup_file(sb, pid, "memory", "memory.memsw.limit_in_bytes")) == 200 * 2**20


def test_a_manifest_edit_is_an_update_of_the_containers_scope_never_drift(podman_env):
    """A limit changed in the manifest is what sdqos was asked to do: the running container's scope
    (and its own cgroup, through podman update) is reported updated, old → new, not drift."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    pod_file = config / "pods" / "shop.yaml"
    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}",
                                                     "limits: {cpu: 500m, memory: 300Mi}"))
    r = sdqos_in(sb, "sync", "--config", str(config), "--dry-run", "-o", "json", env=env)
    assert r.returncode == 4 and json.loads(r.stdout)["drift"] == [], r.stdout
    pending = {u["unit"]: u.get("container") or {} for u in json.loads(r.stdout)["updated"]}
    assert pending[scope].get("memory/memory.limit_in_bytes") == [256 * 2**20, 300 * 2**20], pending
    report = sync_json(sb, config, env=env)
    assert report["errors"] == [] and report["drift"] == [], report
    updated = {u["unit"]: u["changes"] for u in report["updated"]}
    assert updated[scope]["MemoryLimit"] == [256 * 2**20, 300 * 2**20], updated
    # and the container's own cgroup, podman update's doing, on the same entry
    inner = {u["unit"]: u.get("container") or {} for u in report["updated"]}
    assert inner[scope].get("memory/memory.limit_in_bytes") == [256 * 2**20, 300 * 2**20], inner
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 300 * 2**20
    pod_file.write_text(pod_file.read_text().replace("memory: 300Mi}", "memory: 200Mi}"))
    text = sdqos_in(sb, "sync", "--config", str(config), env=env)
    assert text.returncode == 0 and "drift" not in text.stdout and "changed outside" not in text.stdout, text.stdout
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 200 * 2**20


def test_a_refused_qos_class_change_keeps_the_containers_in_their_slice_and_status_says_so(podman_env):
    """Guaranteed requests for a running Burstable pod: refused; its containers' scopes stay in the
    old slice with their values, reported kept, and `status` shows them there: no missing slice, no drift."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    pod_file = config / "pods" / "shop.yaml"
    text = pod_file.read_text()
    for old, new in (("requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}",
                      "requests: {cpu: 200m, memory: 64Mi}, limits: {cpu: 200m, memory: 64Mi}"),
                     ("requests: {cpu: 50m, memory: 16Mi}, limits: {cpu: 100m, memory: 32Mi}",
                      "requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 100m, memory: 32Mi}"),
                     ("requests: {cpu: 250m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}",
                      "requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: 500m, memory: 256Mi}")):
        assert old in text
        text = text.replace(old, new)
    pod_file.write_text(text)
    report = sync_json(sb, config, env=env, expect=2)
    assert "QoS class changed" in " ".join(report["invalid"]), report
    assert scope in report["kept"] and report["drift"] == [], report
    r = sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0", env=env)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    units = {u["unit"]: u for u in st["units"]}
    old_slice = "kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"
    assert "kept" in units[old_slice]["flags"], units[old_slice]
    nginx = units[scope]
    assert nginx["parent"] == old_slice and nginx["running"] and nginx["flags"] == ["kept"], nginx
    assert (nginx["namespace"], nginx["pod"], nginx["container"], nginx["qos"]) == ("shop", "web", "nginx", "Burstable")
    assert st["summary"]["drift"] == 0 and not [u for u in st["units"] if "missing" in u["flags"]], st["units"]


def test_a_removed_limit_reaches_the_container_and_the_sync_reads_the_container_back(podman_env):
    """A container's memory limit removed from the manifest reaches the running container's own
    cgroup (podman takes no -1: the kernel's no-limit value clears it), and only then is the scope
    reported as updated. A limit changed in the container's cgroup behind sdqos's back is drift,
    restored through podman; one that cannot be restored is an error, never "updated"."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    limit_file = "memory.limit_in_bytes"
    pod_file = config / "pods" / "shop.yaml"
    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}", "limits: {cpu: 500m}"))
    report = sync_json(sb, config, env=env)
    assert report["errors"] == [] and scope in {u["unit"] for u in report["updated"]}
    assert int(cgroup_file(sb, pid, "memory", limit_file)) == UNLIMITED_V1
    assert int(cgroup_file(sb, pid, "memory", "memory.memsw.limit_in_bytes")) == UNLIMITED_V1
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).stdout.startswith("nothing to do")

    # Behind sdqos's back, in the container's own cgroup (below the scope): drift, restored.
    lines = sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"], check=True).stdout.splitlines()
    path = next(ln.split(":", 2)[2] for ln in lines if "memory" in ln.split(":")[1].split(","))
    assert path.endswith(f"/{scope}/container")
    mount = next(d for d in os.listdir("/sys/fs/cgroup") if "memory" in d.split(","))
    sbx.run(sb, ["sh", "-c", f"echo {64 * 2**20} > /sys/fs/cgroup/{mount}{path}/{limit_file}"], check=True)
    r = sdqos_in(sb, "diff", "--config", str(config), env=env)
    assert r.returncode == 4 and f"memory.limit_in_bytes 64 MiB → unlimited" in r.stdout, r.stdout
    report = sync_json(sb, config, env=env)
    assert [d["unit"] for d in report["drift"]] == [scope] and report["errors"] == []
    assert int(cgroup_file(sb, pid, "memory", limit_file)) == UNLIMITED_V1

    # One podman does not restore (its update refused): an error naming what the container keeps,
    # every sync, and never "restored" or "updated".
    sbx.run(sb, ["sh", "-c", f"echo {64 * 2**20} > /sys/fs/cgroup/{mount}{path}/{limit_file}"], check=True)
    wrapper = config.parent / "podman-no-update"
    wrapper.write_text('#!/bin/sh\nfor a; do [ "$a" = update ] && { echo "Error: refused" >&2; exit 125; }; done\n'
                       f'exec {env["SDQOS_PODMAN"]} "$@"\n')
    wrapper.chmod(0o755)
    for _ in range(2):
        report = sync_json(sb, config, env=dict(env, SDQOS_PODMAN=str(wrapper)), expect=1)
        assert report["drift"] == [] and report["updated"] == [], report
        assert f"{scope} (shop/web/nginx): container shop_web_nginx keeps its memory limit 64 MiB (wanted unlimited): " \
               "podman update did not reach it; `sdqos podman start --replace shop/web` recreates it with the new " \
               "values" in report["errors"], report["errors"]
    assert int(cgroup_file(sb, pid, "memory", limit_file)) == 64 * 2**20


def test_a_raised_or_removed_cpu_limit_reaches_the_container_and_is_read_back(podman_env):
    """Every value `podman update` is asked to change is read back from the container's own cgroup,
    the CPU quota as the memory limit. On v1 the kernel refuses a container a quota above its
    scope's, so a raised limit reaches the container once systemd has raised the scope's. A removed
    limit: podman 4.3 sends crun no quota for --cpu-quota=-1, so sdqos gives the kernel's largest
    (2^44-1 µs per 100 ms: it can never throttle) and reads it back as no quota; the sync is clean,
    never "updated" while the container keeps the old quota."""
    sb, env, config = podman_env
    assert sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env).returncode == 0
    sync_json(sb, config, env=env)
    scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
    pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == 50_000
    pod_file = config / "pods" / "shop.yaml"
    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}",
                                                     "limits: {cpu: 800m, memory: 256Mi}"))
    report = sync_json(sb, config, env=env)
    assert report["errors"] == [] and scope in {u["unit"] for u in report["updated"]}, report
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == 80_000

    pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 800m, memory: 256Mi}", "limits: {memory: 256Mi}"))
    report = sync_json(sb, config, env=env)
    assert report["errors"] == [] and scope in {u["unit"] for u in report["updated"]}, report
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == (1 << 44) - 1  # the kernel's largest
    assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_period_us")) == 100_000
    lines = sbx.run(sb, ["cat", f"/proc/{pid}/cgroup"], check=True).stdout.splitlines()
    path = next(ln.split(":", 2)[2] for ln in lines if "cpu" in ln.split(":")[1].split(","))
    assert path.endswith(f"/{scope}/container")
    mount = next(d for d in os.listdir("/sys/fs/cgroup") if "cpu" in d.split(","))
    held = sbx.run(sb, ["cat", f"/sys/fs/cgroup/{mount}{path.rsplit('/', 1)[0]}/cpu.cfs_quota_us"], check=True)
    assert held.stdout.strip() == "-1"  # the scope: systemd's
    assert sdqos_in(sb, "sync", "--config", str(config), env=env).stdout.startswith("nothing to do")
    assert sdqos_in(sb, "diff", "--config", str(config), env=env).returncode == 0
    assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 256 * 2**20  # (unchanged)


def test_right_after_podman_start_the_scopes_hold_kubelets_values_and_explain_names_them(podman_env):
    """`podman start` brings its containers' scopes to kubelet's values through the sync's own path
    (not at the next sync): `status` shows them ok, `diff` has nothing pending (exit 0), and
    `explain` names the libpod scope each running container is in."""
    sb, env, config = podman_env
    sync_json(sb, config, env=env)
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    nginx = inspect(sb, env, "shop_web_nginx")
    scope = f"libpod-{nginx['Id']}.scope"
    want = {c["name"]: c for c in
            json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]["containers"]}
    show = sbx.run(sb, ["systemctl", "show", scope, "-p", "MemoryLimit", "-p", "CPUShares"]).stdout.split()
    assert show == [f"CPUShares={want['nginx']['properties']['CPUShares']}",
                    f"MemoryLimit={want['nginx']['properties']['MemoryLimit']}"]
    d = sdqos_in(sb, "diff", "--config", str(config), env=env)
    assert d.returncode == 0 and d.stdout.startswith("nothing to do"), d.stdout
    status = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0", env=env).stdout)
    rows = {u["unit"]: u for u in status["units"]}
    assert rows[scope]["flags"] == [] and rows[scope]["container"] == "nginx"
    text = sdqos_in(sb, "explain", "shop/web", "--config", str(config), env=env).stdout
    assert f"  {scope}  (container nginx, app; runs now: podman container shop_web_nginx)" in text.splitlines()
    ex = json.loads(sdqos_in(sb, "explain", "shop/web", "--config", str(config), "-o", "json", env=env).stdout)
    assert {c["name"]: c.get("liveScope") for c in ex["pods"][0]["containers"]}["nginx"] == scope
    assert sdqos_in(sb, "podman", "stop", "shop/web", "--config", str(config), env=env).returncode == 0
    text = sdqos_in(sb, "explain", "shop/web", "--config", str(config), env=env).stdout
    assert "runs now" not in text
