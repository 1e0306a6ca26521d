"""The shipped sdqos-pressure.service keeps evicting through each fault that used to stop it
(`sdqos install-units --now` inside the sandbox, then nothing but the unit): an invalid pod file
beside valid ones, a pod whose slice also holds a unit sdqos does not own, a runtime that cannot be
asked, the bus stopped. Each time it evicts the valid, stoppable pods one per pass, says what it
skipped or could not do, and never restarts.

The threshold is set above anything the sandbox can have available (memory.available < 4095Mi of
a 4Gi capacity), so the node stays under pressure and the service evicts every running pod it may,
in kubelet's order, one per pass: what it reaches is what the test reads."""

from __future__ import annotations

import json
import subprocess
import sys

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid

from ..sbhelpers import remove_sync_units, show, sync_json, wait_for
from .test_podman_sandbox import podman, podman_env  # noqa: F401 (fixture)
from .test_pressure_sandbox import HOLD, NODE, readline
from .test_pressure_service_sandbox import UNIT, install, journal

BURSTY = """\
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: t}
spec:
  containers:
  - name: app
    %s
"""
TYPO = """\
apiVersion: v1
kind: Pod
metadata: {name: typo, namespace: t}
spec:
  containers:
  - name: app
    resources: {limits: {memory: 12Q}}
"""


def config_with(tmp_path, pods: dict[str, str]):
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE % "100Mi")
    for name, res in pods.items():
        (d / "pods" / f"{name}.yaml").write_text(BURSTY % (name, res))
    return d


def start(sb, config, pod: str, mib: int, procs: dict, env: dict | None = None) -> None:
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), f"t/{pod}", "app", "--",
                       sys.executable, "-c", HOLD, str(mib)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, env=sbx.inner_env(env) if env else sbx.inner_env())
    procs[pod] = p
    assert readline(p) == "ready", p.stderr.read() if p.poll() is not None else ""


def evicted(sb, *pods: str, timeout: float = 90) -> list[str]:
    """The service's journal once it has said it evicted each of ``pods``."""
    want = [f"evicted pod {p}: " for p in pods]
    return wait_for(lambda: (lambda ls: ls if all(any(ln.startswith(w) for ln in ls) for w in want) else None)(
        journal(sb)), f"the service's eviction of {', '.join(pods)}", timeout=timeout)


def counts(sb) -> dict:
    return json.loads((sb.run_dir / "sdqos" / "evicted.json").read_text())["counts"]


def cross(config) -> None:
    """Under pressure from the service's next pass (it re-reads node.yaml every pass, 10 s)."""
    (config / "node.yaml").write_text(NODE % "4095Mi")


def never_restarted(sb) -> None:
    assert show(sb, UNIT, "ActiveState", "NRestarts") == {"ActiveState": "active", "NRestarts": "0"}


def cleanup(sb, procs: dict) -> None:
    remove_sync_units(sb)
    for p in procs.values():
        p.kill()
        p.wait()
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])


def test_an_invalid_pod_file_leaves_the_valid_rest_evicted(clean_sandbox, tmp_path):
    """A typo in one pod file: the service says it skipped that file and evicts the valid pods."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    config = config_with(tmp_path, {"a": "", "b": ""})
    (config / "pods" / "typo.yaml").write_text(TYPO)
    sync_json(sb, config, expect=2)  # sync syncs the valid rest
    procs: dict = {}
    try:
        start(sb, config, "a", 40, procs)
        start(sb, config, "b", 5, procs)
        install(sb, config)
        cross(config)
        said = evicted(sb, "t/a", "t/b")
        assert any(ln.startswith("invalid, skipped: ") and "typo.yaml" in ln for ln in said), said
        assert procs["a"].wait(timeout=30) == -15 and procs["b"].wait(timeout=30) == -15
        never_restarted(sb)
    finally:
        cleanup(sb, procs)


def test_a_pod_it_cannot_stop_wholly_is_evicted_once_and_the_next_is_reached(clean_sandbox, tmp_path):
    """Pod a's slice also holds a service sdqos did not make: its eviction stops a's own scope and
    leaves the service running; a is not evicted again (counted once) and b, next, is evicted."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    config = config_with(tmp_path, {"a": "", "b": ""})
    sync_json(sb, config)
    procs: dict = {}
    slice_a = f"kubepods-besteffort-pod{stable_uid('t', 'a').replace('-', '_')}.slice"
    try:
        start(sb, config, "a", 40, procs)
        start(sb, config, "b", 5, procs)
        sbx.run(sb, ["systemd-run", "--unit", "sdqos-test-foreign", f"--slice={slice_a}", "sleep", "600"], check=True)
        install(sb, config)
        cross(config)
        said = evicted(sb, "t/a", "t/b")
        line = next(ln for ln in said if ln.startswith("evicted pod t/a: "))
        assert "left running (not sdqos's): sdqos-test-foreign.service" in line, line
        assert procs["a"].wait(timeout=30) == -15 and procs["b"].wait(timeout=30) == -15
        assert show(sb, "sdqos-test-foreign.service", "ActiveState")["ActiveState"] == "active"
        assert counts(sb) == {"pod:t/a": {"memory.available": 1}, "pod:t/b": {"memory.available": 1}}
        never_restarted(sb)
    finally:
        sbx.run(sb, ["systemctl", "stop", "sdqos-test-foreign.service"])
        cleanup(sb, procs)


def test_a_runtime_that_cannot_be_asked_does_not_stop_the_others_eviction(podman_env, tmp_path):  # noqa: F811
    """The podman pod ranks first, but the service's podman cannot be asked (its storage is not a
    directory): it says it could not evict that pod and evicts the next, a pod podman has nothing
    to do with."""
    sb, env, config = podman_env
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    (config / "node.yaml").write_text(NODE % "100Mi")
    # a Burstable pod far below its request ranks after shop/web (usage above request: less)
    (config / "pods" / "a.yaml").write_text(BURSTY % ("a", "resources: {requests: {memory: 1Gi}}"))
    (config / "environment").write_text("".join(f'{k}="{v}"\n' for k, v in env.items()))
    sync_json(sb, config, env=env)
    procs: dict = {}
    try:
        r = sbx.run(sb, [sys.executable, "-m", "sdqos", "podman", "start", "shop/web", "--config", str(config)],
                    env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        start(sb, config, "a", 5, procs, env=env)
        install(sb, config, env=env)
        broken = tmp_path / "broken-storage"
        broken.write_text("not a directory\n")
        bad = {**env, "SDQOS_PODMAN": f"podman --root {broken} --runroot /run/sdqos-test-podman --storage-driver vfs"}
        (config / "environment").write_text("".join(f'{k}="{v}"\n' for k, v in bad.items()))
        sbx.run(sb, ["systemctl", "restart", UNIT], check=True)
        wait_for(lambda: "node conditions: none" in journal(sb), "the restarted service's first pass", timeout=30)
        cross(config)
        said = evicted(sb, "t/a")
        assert any(ln.startswith("could not evict pod shop/web: ") for ln in said), said
        assert procs["a"].wait(timeout=30) == -15
        assert show(sb, UNIT, "ActiveState")["ActiveState"] == "active"
        assert "pod:shop/web" not in counts(sb)
        assert len(json.loads(podman(sb, env, "ps", "--format", "json"))) == 2  # left as they were
    finally:
        cleanup(sb, procs)


def test_the_service_evicts_with_the_bus_stopped(clean_sandbox, tmp_path):
    """dbus-daemon stopped after the service started: it evicts through systemd's private socket."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    config = config_with(tmp_path, {"a": "", "b": ""})
    sync_json(sb, config)
    procs: dict = {}
    try:
        start(sb, config, "a", 40, procs)
        start(sb, config, "b", 5, procs)
        install(sb, config)
        # between evictions it holds no D-Bus connection (stdout and stderr are the journal's socket)
        pid = show(sb, UNIT, "MainPID")["MainPID"]
        fds = sbx.run(sb, ["find", f"/proc/{pid}/fd", "-mindepth", "1", "-printf", "%f %l\n"], check=True).stdout
        assert [ln for ln in fds.splitlines() if ln.split()[1].startswith("socket:") and int(ln.split()[0]) > 2] == []
        sbx.run(sb, ["systemctl", "stop", "dbus.socket", "dbus.service"], check=True)
        cross(config)
        evicted(sb, "t/a", "t/b")
        assert procs["a"].wait(timeout=30) == -15 and procs["b"].wait(timeout=30) == -15
        assert show(sb, "dbus.service", "ActiveState")["ActiveState"] == "inactive"
        never_restarted(sb)
    finally:
        sbx.run(sb, ["systemctl", "reset-failed", "dbus.socket", "dbus.service"])
        sbx.run(sb, ["systemctl", "start", "dbus.socket", "dbus.service"])
        cleanup(sb, procs)
