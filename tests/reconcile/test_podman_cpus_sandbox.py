"""`sdqos podman start` under cpuManagerPolicy static on cgroup v1, with real podman and crun in
the sandbox: a container holding an exclusive CPU starts on it, one without on the shared pool —
from its first instruction (podman's --cpuset-cpus), not only once sdqos sets its affinity
afterwards. Checked where the kernel holds it: the container's own Cpus_allowed_list as its
command printed it when it began, its process's /proc/PID/status right after start, and its
cpuset cgroup. `status` then shows the same CPUs on podman's scopes."""

from __future__ import annotations

import json
import shutil
import sys

from sdqos import sandbox as sbx

from ..cpufixtures import needs_cpus_0_and_1
from ..sbhelpers import forget_cpu_state, sdqos_in, static_node, sync_json
from .test_podman_sandbox import cgroup_file, inspect, podman, podman_env  # noqa: F401 (fixture)
from .test_scopes_sandbox import can_lower_oom

pytestmark = needs_cpus_0_and_1

# The container's first act: print its own status (cat inherits the shell's affinity), then wait.
REPORT = '["/bin/sh", "-c", "cat /proc/self/status; trap \'exit 0\' TERM; sleep 100000 & wait"]'
POD = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: pin, namespace: st}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: pinned
    image: localhost/bb
    command: {REPORT}
    resources: {{requests: {{cpu: "1", memory: 32Mi}}, limits: {{cpu: "1", memory: 32Mi}}}}
  - name: shared
    image: localhost/bb
    command: {REPORT}
    resources: {{requests: {{cpu: 500m, memory: 32Mi}}, limits: {{cpu: 500m, memory: 32Mi}}}}
"""
NODE = static_node()


# Only where root may not lower oom_score_adj (no CAP_SYS_RESOURCE, as on our CI VMs): crun would
# refuse the Guaranteed pod's -997 and start nothing. This runs the real crun with everything it is
# given, the OCI config's process.oomScoreAdj alone left out (sdqos's own pass after the start
# tries it again and warns); the cpuset under test is crun's own doing.
CRUN_WITHOUT_OOM_SCORE = """\
import json, os, sys
args = sys.argv[1:]
for i, a in enumerate(args):
    if a in ("--bundle", "-b") or a.startswith("--bundle="):
        bundle = a.split("=", 1)[1] if "=" in a else args[i + 1]
        path = os.path.join(bundle, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.get("process", {}).pop("oomScoreAdj", None)
        with open(path, "w") as f:
            json.dump(config, f)
os.execv(CRUN, ["crun", *args])
"""


def _runtime(tmp_path, env: dict) -> dict:
    if can_lower_oom():
        return env
    crun = shutil.which("crun") or "/usr/libexec/podman/crun"
    wrapper = tmp_path / "runtime" / "crun"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!{sys.executable}\nCRUN = {crun!r}\n" + CRUN_WITHOUT_OOM_SCORE)
    wrapper.chmod(0o755)
    return {**env, "SDQOS_PODMAN": f"{env['SDQOS_PODMAN']} --runtime {wrapper}"}


def _allowed(status_text: str) -> str:
    return next(ln.split(":", 1)[1].strip() for ln in status_text.splitlines() if ln.startswith("Cpus_allowed_list:"))


def test_podman_start_puts_containers_on_their_cpus_at_once(podman_env, tmp_path):
    sb, env, config = podman_env
    env = _runtime(tmp_path, env)
    (config / "node.yaml").write_text(NODE)
    for f in (config / "pods").iterdir():
        f.unlink()
    (config / "pods" / "st.yaml").write_text(POD)
    r = sdqos_in(sb, "podman", "start", "st/pin", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    for name, want in (("pinned", "1"), ("shared", "0")):
        info = inspect(sb, env, f"st_pin_{name}")
        pid = info["State"]["Pid"]
        assert _allowed(sbx.run(sb, ["cat", f"/proc/{pid}/status"], check=True).stdout) == want, name
        assert cgroup_file(sb, pid, "cpuset", "cpuset.cpus") == want, name
        assert info["HostConfig"]["CpusetCpus"] == want, name
        # what the container saw when it began, before sdqos's own pass after the start
        assert _allowed(podman(sb, env, "logs", f"st_pin_{name}")) == want, name
    state = json.loads(sbx.run(sb, ["cat", "/run/sdqos/cpu_manager_state"], check=True).stdout)
    assert state["defaultCpuSet"] == "0" and list(state["entries"].values()) == [{"pinned": "1"}]

    st = json.loads(sdqos_in(sb, "status", "--config", str(config), "-o", "json", "--interval", "0", env=env).stdout)
    rows = {u["container"]: u for u in st["units"] if u["kind"] == "container" and u["running"]}
    assert rows["pinned"]["unit"].startswith("libpod-"), rows
    assert rows["pinned"]["cpus"] == {"cpus": "1", "count": 1, "exclusive": True, "affinityOff": {}}
    assert rows["shared"]["cpus"] == {"cpus": "0", "count": 1, "exclusive": False, "affinityOff": {}}
    assert sdqos_in(sb, "podman", "stop", "st/pin", "--config", str(config), env=env).returncode == 0


def _pod(name: str, cpu: str, guaranteed: bool) -> str:
    res = f'{{cpu: "{cpu}", memory: 32Mi}}'
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: st}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/bb
    command: {REPORT}
    resources: {{requests: {res}{", limits: " + res if guaranteed else ""}}}
"""


def _cpus(sb, env, name: str) -> tuple[str, str]:
    """(the container's cpuset cgroup's cpuset.cpus, its process's Cpus_allowed_list) as the kernel holds them."""
    pid = inspect(sb, env, name)["State"]["Pid"]
    return (cgroup_file(sb, pid, "cpuset", "cpuset.cpus"),
            _allowed(sbx.run(sb, ["cat", f"/proc/{pid}/status"], check=True).stdout))


def _scope(sb, env, name: str) -> str:
    return f"libpod-{inspect(sb, env, name)['Id']}.scope"


def test_a_shared_containers_cpuset_follows_the_pool_as_pinned_pods_come_and_go(podman_env, tmp_path):
    """cgroup v1: podman's --cpuset-cpus puts a shared container's CPUs in crun's own cgroup of the
    cpuset hierarchy, which limits any affinity sdqos sets. When a Guaranteed pod takes CPU 1 the
    pool narrows to 0, when it goes the pool is 0-1 again: each sync brings that cgroup's
    cpuset.cpus (and so its process's CPUs) to the pool through podman update, as kubelet's CPU
    manager updates every container whose CPUs changed (reconcileState). Each sync's report lists
    that update on the container's scope (a pool that changed: an update, not drift); the next
    sync, with nothing to do, lists nothing."""
    sb, env, config = podman_env
    env = _runtime(tmp_path, env)
    (config / "node.yaml").write_text(NODE)
    for f in (config / "pods").iterdir():
        f.unlink()
    forget_cpu_state(sb)
    pods = config / "pods"
    (pods / "wide.yaml").write_text(_pod("wide", "100m", False))
    started: list[str] = []

    def start(pod: str) -> None:
        started.append(pod)
        r = sdqos_in(sb, "podman", "start", pod, "--config", str(config), env=env)
        assert r.returncode == 0, r.stdout + r.stderr

    try:
        start("st/wide")
        assert _cpus(sb, env, "st_wide_app") == ("0-1", "0-1")
        (pods / "pin.yaml").write_text(_pod("pin", "1", True))
        start("st/pin")
        assert _cpus(sb, env, "st_pin_app") == ("1", "1")
        report = sync_json(sb, config, env=env)  # the pool is 0 now: the shared container narrows to it
        assert report["errors"] == [], report
        assert _cpus(sb, env, "st_wide_app") == ("0", "0")
        wide = _scope(sb, env, "st_wide_app")
        moved = {u["unit"]: u.get("container") for u in report["updated"]}
        assert moved.get(wide) == {"cpuset/cpuset.cpus": ["0-1", "0"]} and report["drift"] == [], report
        again = sync_json(sb, config, env=env)
        assert again["updated"] == again["drift"] == again["errors"] == [], again
        (pods / "late.yaml").write_text(_pod("late", "100m", False))  # one started now: on the narrow pool
        start("st/late")
        assert _cpus(sb, env, "st_late_app") == ("0", "0")

        stop = sdqos_in(sb, "podman", "stop", "st/pin", "--config", str(config), env=env)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        (pods / "pin.yaml").unlink()
        reports = [sync_json(sb, config, env=env) for _ in range(2)]  # the CPUs given back at a full
        assert all(r["errors"] == [] for r in reports), reports       # sync widen the next one's pool
        for name in ("st_wide_app", "st_late_app"):
            assert _cpus(sb, env, name) == ("0-1", "0-1"), name
        moved = {u["unit"]: u.get("container") for r in reports for u in r["updated"]}
        for name in ("st_wide_app", "st_late_app"):
            assert moved.get(_scope(sb, env, name)) == {"cpuset/cpuset.cpus": ["0", "0-1"]}, (name, reports)
        assert all(r["drift"] == [] for r in reports), reports
        # (the pool widens before the container's cpuset does: an affinity the kernel keeps in that
        # cpuset is not reported as changed)
        assert not any(u.get("affinity") for r in reports for u in r["updated"]), reports
        again = sync_json(sb, config, env=env)
        assert again["updated"] == again["drift"] == again["errors"] == [], again
        text = sdqos_in(sb, "sync", "--config", str(config), env=env)
        assert text.returncode == 0 and "nothing to do" in text.stdout, text.stdout + text.stderr
    finally:
        for pod in started:
            sdqos_in(sb, "podman", "stop", pod, "--config", str(config), env=env)
