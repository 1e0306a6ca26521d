"""What sdqos owns and what it never harms, against the sandbox systemd with real processes: a valid
edit never kills a running pod, a slice holding someone else's units is never stopped, another
manager's tree (kubelet's) is never taken over, removals are bounded and honour grace periods."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import active_state, cgroup_rel, kernel, pids_below, sdqos_in, wait_for

NODE = 'capacity: {cpu: "4", memory: 8Gi, pids: "100000"}\n'
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t{uid}}}
spec:
{grace}  containers:
  - name: app
    resources:
      requests: {{cpu: {req_cpu}, memory: {req_mem}}}
      limits: {{cpu: 500m, memory: 64Mi}}
"""
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MANAGER = ("org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager")


def pod(name: str, *, guaranteed: bool = False, uid: str | None = None, grace: int | None = None) -> str:
    req_cpu, req_mem = ("500m", "64Mi") if guaranteed else ("100m", "32Mi")
    return POD.format(name=name, req_cpu=req_cpu, req_mem=req_mem,
                      uid=f", uid: {uid}" if uid else "",
                      grace=f"  terminationGracePeriodSeconds: {grace}\n" if grace is not None else "")


def burst_slice(name: str, uid: str | None = None) -> str:
    return f"kubepods-burstable-pod{(uid or stable_uid('t', name)).replace('-', '_')}.slice"


def guar_slice(name: str, uid: str | None = None) -> str:
    return f"kubepods-pod{(uid or stable_uid('t', name)).replace('-', '_')}.slice"


def scope(name: str, uid: str | None = None) -> str:
    return container_scope(uid or stable_uid("t", name), "app")


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    return d


def sync(sb, cfg: Path, *extra: str) -> subprocess.CompletedProcess:
    return sdqos_in(sb, "sync", "--config", str(cfg), "-o", "json", *extra)


def report(r: subprocess.CompletedProcess) -> dict:
    return json.loads(r.stdout)


def run_bg(sb, cfg: Path, pod_key: str, *argv: str) -> subprocess.Popen:
    return sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), pod_key, "app", "--", *argv],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def procs(sb, unit: str, parent: str) -> list[int]:
    return pids_below(sb.cgroup_path("pids") / cgroup_rel(unit, parent))


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def kill(*ps: subprocess.Popen) -> None:
    for p in ps:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_qos_class_change_keeps_the_running_pod(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "flip.yaml").write_text(pod("flip"))
    (cfg / "pods" / "idle.yaml").write_text(pod("idle"))
    assert sync(sb, cfg).returncode == 0
    p = run_bg(sb, cfg, "t/flip", "sleep", "3001")
    try:
        (pid,) = wait_for(lambda: procs(sb, scope("flip"), burst_slice("flip")), what="the container's process")
        # requests = limits: Guaranteed. Another pod moves too, with no process; a third is new.
        (cfg / "pods" / "flip.yaml").write_text(pod("flip", guaranteed=True))
        (cfg / "pods" / "idle.yaml").write_text(pod("idle", guaranteed=True))
        (cfg / "pods" / "new.yaml").write_text(pod("new"))
        r = sync(sb, cfg)
        assert r.returncode == 2, r.stderr
        lines = [ln for ln in r.stderr.splitlines() if "flip" in ln]
        assert len(lines) == 1 and lines[0].startswith("sdqos: error: pods/flip.yaml: spec: the QoS class changed "
                                                       "from Burstable to Guaranteed"), r.stderr
        assert "sdqos sync --recreate t/flip" in lines[0]
        rep = report(r)
        assert burst_slice("flip") in rep["kept"] and guar_slice("flip") not in rep["created"]
        assert alive(pid) and procs(sb, scope("flip"), burst_slice("flip")) == [pid]
        assert active_state(sb, guar_slice("flip")) == "inactive"
        assert kernel(sb, "memory", cgroup_rel(scope("flip"), burst_slice("flip")), "memory.limit_in_bytes") == 64 * 2**20
        # Everything else was synced: the idle pod moved (it ran nothing), the new one exists.
        assert burst_slice("idle") in rep["removed"] and guar_slice("idle") in rep["created"]
        assert burst_slice("new") in rep["created"]
        # The same again: still refused, still alive, nothing else to do.
        r = sync(sb, cfg)
        assert r.returncode == 2 and alive(pid) and report(r)["created"] == []
        # Asked for explicitly: the pod is recreated in its new class (its process stopped).
        r = sync(sb, cfg, "--recreate", "t/flip")
        assert r.returncode == 0, r.stderr
        assert p.wait(timeout=30) is not None and not alive(pid)
        assert burst_slice("flip") in report(r)["removed"] and guar_slice("flip") in report(r)["created"]
        assert active_state(sb, guar_slice("flip")) == "active"
    finally:
        kill(p)


def test_uid_change_keeps_the_running_pod(clean_sandbox, cfg):
    sb = clean_sandbox
    old, new = "0f0e0d0c-0000-4000-8000-000000000001", "0f0e0d0c-0000-4000-8000-000000000002"
    (cfg / "pods" / "u.yaml").write_text(pod("u", uid=old))
    assert sync(sb, cfg).returncode == 0
    p = run_bg(sb, cfg, "t/u", "sleep", "3003")
    try:
        (pid,) = wait_for(lambda: procs(sb, scope("u", old), burst_slice("u", old)), what="the process")
        (cfg / "pods" / "u.yaml").write_text(pod("u", uid=new))
        r = sync(sb, cfg)
        assert r.returncode == 2
        assert f"error: pods/u.yaml: metadata.uid: changed from {old} to {new}" in r.stderr
        assert alive(pid) and active_state(sb, burst_slice("u", new)) == "inactive"
    finally:
        kill(p)


def test_a_slice_holding_foreign_units_is_never_stopped(clean_sandbox, cfg):
    """podman with --cgroup-parent: its scope in the pod slice. The pod leaves the config: the
    slice stays (and says why) until the foreign scope is gone, then goes."""
    sb = clean_sandbox
    (cfg / "pods" / "demo.yaml").write_text(pod("demo"))
    (cfg / "pods" / "other.yaml").write_text(pod("other"))
    assert sync(sb, cfg).returncode == 0
    slc = burst_slice("demo")
    fg = sbx.popen(sb, ["systemd-run", "--quiet", "--scope", "--unit=libpod-demo.scope", f"--slice={slc}",
                        "sleep", "3002"])
    try:
        (pid,) = wait_for(lambda: procs(sb, "libpod-demo.scope", slc), what="the foreign scope's process")
        (cfg / "pods" / "demo.yaml").unlink()
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        rep = report(r)
        assert slc in rep["kept"] and slc not in rep["removed"]
        assert f"kept: pod slice {slc} holds units sdqos did not create (libpod-demo.scope); not stopped" \
            in rep["warnings"]
        assert alive(pid) and active_state(sb, "libpod-demo.scope") == "active" and active_state(sb, slc) == "active"
        fg.send_signal(signal.SIGKILL)
        sbx.run(sb, ["systemctl", "kill", "--signal=KILL", "libpod-demo.scope"])
        wait_for(lambda: active_state(sb, "libpod-demo.scope") != "active", what="the foreign scope to end")
        r = sync(sb, cfg)
        assert r.returncode == 0 and slc in report(r)["removed"]
    finally:
        kill(fg)


def start_kubelet_tree(sb) -> None:
    """kubepods.slice as kubelet (runc's systemd driver) makes it: transient, its Description, its values."""
    for unit, shares, mem in (("kubepods.slice", 7777, 5 * 2**30), ("kubepods-burstable.slice", 1234, None)):
        props = [("Description", "s", f"libcontainer container {unit}"), ("CPUShares", "t", str(shares))]
        if mem:
            props.append(("MemoryLimit", "t", str(mem)))
        flat = [x for p in props for x in p]
        sb.run(["busctl", "call", *MANAGER, "StartTransientUnit", "ssa(sv)a(sa(sv))", unit, "fail",
                str(len(props)), *flat, "0"], check=True)


def test_another_managers_tree_is_not_taken_over(clean_sandbox, cfg):
    sb = clean_sandbox
    if sb.cgroup_mode == "unified":
        pytest.skip("kubelet's tree is built with cgroup v1 properties here")
    start_kubelet_tree(sb)
    kubelet = sbx.popen(sb, ["systemd-run", "--quiet", "--unit=kubelet.service", "sleep", "3004"])
    try:
        wait_for(lambda: active_state(sb, "kubelet.service") == "active", what="a kubelet.service")
        (cfg / "pods" / "a.yaml").write_text(pod("a"))
        r = sync(sb, cfg)
        assert r.returncode == 1
        assert ("error: kubepods.slice belongs to another manager ('libcontainer container kubepods.slice'); "
                "is kubelet running? nothing in it was changed.") in r.stderr
        assert "--adopt-existing" in r.stderr and "cgroupRoot" in r.stderr
        rep = report(r)
        assert rep["created"] == [] and rep["updated"] == [] and "kubepods.slice" in rep["foreign"]
        assert any(w.startswith("kubelet.service is active on this host") for w in rep["warnings"])
        assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == 7777
        assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 5 * 2**30
        assert kernel(sb, "cpu", "kubepods.slice/kubepods-burstable.slice", "cpu.shares") == 1234
        assert active_state(sb, burst_slice("a")) == "inactive"
        # Beside kubelet, in a tree of its own: cgroupRoot.
        (cfg / "node.yaml").write_text(NODE + "cgroupRoot: /sdqos\n")
        r = sync(sb, cfg)
        assert r.returncode == 0, r.stderr
        assert "sdqos-kubepods.slice" in report(r)["created"]
        assert active_state(sb, "sdqos-kubepods-burstable-pod" + stable_uid("t", "a").replace("-", "_") + ".slice") \
            == "active"
        assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == 7777  # kubelet's, untouched
        assert kernel(sb, "memory", "kubepods.slice", "memory.limit_in_bytes") == 5 * 2**30
        # Told to, it takes kubelet's tree over, and marks it as its own.
        (cfg / "node.yaml").write_text(NODE)
        r = sync(sb, cfg, "--adopt-existing", "--allow-empty")
        assert r.returncode == 0, r.stderr
        assert kernel(sb, "cpu", "kubepods.slice", "cpu.shares") == 4096
        desc = sb.systemctl("show", "-p", "Description", "--value", "kubepods.slice").stdout.strip()
        assert desc.startswith("sdqos ")
        assert sync(sb, cfg).returncode == 0  # ours from now on, without the flag
    finally:
        kill(kubelet)
        sb.systemctl("stop", "kubelet.service", "sdqos.slice")


def test_removed_pods_stop_side_by_side_within_their_grace_period(clean_sandbox, cfg):
    sb = clean_sandbox
    names = ("g1", "g2", "g3")
    for n in names:
        (cfg / "pods" / f"{n}.yaml").write_text(pod(n, grace=3))
    (cfg / "pods" / "stay.yaml").write_text(pod("stay"))
    assert sync(sb, cfg).returncode == 0
    ps = [run_bg(sb, cfg, f"t/{n}", "/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.2; done") for n in names]
    try:
        pids = [wait_for(lambda n=n: procs(sb, scope(n), burst_slice(n)), what=f"{n}'s processes") for n in names]
        usec = sb.systemctl("show", "-p", "TimeoutStopUSec", "--value", scope("g1")).stdout.strip()
        assert usec == "3s"  # the pod's terminationGracePeriodSeconds
        for n in names:
            (cfg / "pods" / f"{n}.yaml").unlink()
        t0 = time.monotonic()
        r = sync(sb, cfg, "--max-removals", "100%")
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert set(report(r)["removed"]) >= {burst_slice(n) for n in names}
        assert 3 <= took < 5.5, took  # one grace period for all three, not three
        assert not any(alive(pid) for group in pids for pid in group)
        assert any("took" in w and "grace period" in w for w in report(r)["warnings"])
    finally:
        kill(*ps)


def test_mass_removal_is_refused_without_the_flag(clean_sandbox, cfg):
    sb = clean_sandbox
    names = ("m1", "m2", "m3")
    for n in names:
        (cfg / "pods" / f"{n}.yaml").write_text(pod(n))
    assert sync(sb, cfg).returncode == 0
    ps = [run_bg(sb, cfg, f"t/{n}", "sleep", "3005") for n in names]
    try:
        pids = [wait_for(lambda n=n: procs(sb, scope(n), burst_slice(n)), what=f"{n}'s process")[0] for n in names]
        for n in names[:2]:
            (cfg / "pods" / f"{n}.yaml").unlink()
        r = sync(sb, cfg)
        assert r.returncode == 1
        assert ("error: refusing to stop 2 of the 3 pods that run processes (at most 1 at once, --max-removals 50%); "
                "if they really are to go, pass --max-removals 2 or --max-removals 100%") in r.stderr
        assert report(r)["removed"] == [] and all(alive(pid) for pid in pids)
        r = sync(sb, cfg, "--max-removals", "2")
        assert r.returncode == 0, r.stderr
        assert not alive(pids[0]) and not alive(pids[1]) and alive(pids[2])
    finally:
        kill(*ps)


def test_an_empty_pod_file_removes_nothing(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "e.yaml").write_text(pod("e"))
    (cfg / "pods" / "f.yaml").write_text(pod("f"))
    assert sync(sb, cfg).returncode == 0
    os.truncate(cfg / "pods" / "e.yaml", 0)  # an editor half-way through writing it
    r = sync(sb, cfg)
    assert r.returncode == 0, r.stderr
    rep = report(r)
    assert rep["removed"] == [] and burst_slice("e") in rep["kept"]
    assert "pods/e.yaml is empty (being rewritten?); nothing in the config is removed until it has content" \
        in rep["warnings"]
    assert active_state(sb, burst_slice("e")) == "active"


# --- run/adopt never steal another owner's process -----------------------------------------------


def inner_pid_of(sb, command: str) -> str:
    """The PID of the process whose whole command line is ``command`` (anchored: `systemd-run ...
    sleep N` matches an unanchored pattern too, before it has made its scope and exec'd sleep; the
    command may be spelt with its path)."""
    return wait_for(lambda: sb.run(["pgrep", "-f", f"^([^ ]*/)?{command}$"]).stdout.split(), what=command)[0]


def test_adopt_refuses_a_process_of_another_runtime_unless_forced(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "a.yaml").write_text(pod("a"))
    fg = sbx.popen(sb, ["systemd-run", "--quiet", "--scope", "--unit=libpod-x.scope", "sleep", "3006"])
    try:
        pid = inner_pid_of(sb, "sleep 3006")
        r = sdqos_in(sb, "adopt", "--config", str(cfg), "t/a", "app", pid)
        assert r.returncode == 2
        assert r.stderr.strip() == (f"sdqos: error: PID {pid}: refusing to adopt it: it belongs to libpod-x.scope (podman);"
                                    " pass --force to take it anyway")
        assert "/libpod-x.scope" in sb.run(["cat", f"/proc/{pid}/cgroup"], check=True).stdout  # still there
        r = sdqos_in(sb, "adopt", "--config", str(cfg), "--force", "t/a", "app", pid)
        assert r.returncode == 0, r.stderr
        assert f"/{scope('a')}" in sb.run(["cat", f"/proc/{pid}/cgroup"], check=True).stdout
    finally:
        kill(fg)
        sb.run(["pkill", "-f", "sleep 3006"])


def test_adopt_refuses_a_services_process(clean_sandbox, cfg):
    sb = clean_sandbox
    (cfg / "pods" / "a.yaml").write_text(pod("a"))
    sb.run(["systemd-run", "--quiet", "--unit=sdqos-test-svc.service", "sleep", "3007"], check=True)
    try:
        pid = inner_pid_of(sb, "sleep 3007")
        r = sdqos_in(sb, "adopt", "--config", str(cfg), "t/a", "app", pid)
        assert r.returncode == 2
        assert "it belongs to sdqos-test-svc.service (a service: systemd manages its processes)" in r.stderr
        assert active_state(sb, "sdqos-test-svc.service") == "active"
        r = sdqos_in(sb, "adopt", "--config", str(cfg), "--force", "t/a", "app", "1")
        assert r.returncode == 2 and "PID 1: refusing to adopt it: it belongs to init.scope" in r.stderr
        assert len(r.stderr.splitlines()) == 1, r.stderr  # not one more line per child of PID 1
        assert "--force" not in r.stderr.split("init.scope", 1)[1]  # PID 1's own: never, not even forced
    finally:
        sb.systemctl("stop", "sdqos-test-svc.service")


def test_oom_score_is_written_only_inside_the_target_scope():
    """set_oom checks each PID's cgroup first: a PID elsewhere (here: this test process) keeps its score."""
    from sdqos.plan.engine import UnitPlan
    from sdqos.plan.properties import ResourceConfig
    from sdqos.reconcile import launch

    unit = UnitPlan("sdqos-podx-app.scope", "kubepods-podx.slice", "container", "d", {}, ResourceConfig())
    target = launch.Target(unit, [], 777, "pod t/x container app")
    before = Path("/proc/self/oom_score_adj").read_text()
    warnings = launch.set_oom([os.getpid()], target)
    assert Path("/proc/self/oom_score_adj").read_text() == before
    assert warnings == [f"pod t/x container app: PID {os.getpid()} not in sdqos-podx-app.scope as this process sees "
                        "it; its OOM score was not written"]


# --- trust like sshd and systemd ------------------------------------------------------------------


def test_a_config_dir_below_a_group_writable_parent_is_refused(tmp_path):
    parent = tmp_path / "shared"
    (parent / "cfg" / "pods").mkdir(parents=True)
    (parent / "cfg" / "node.yaml").write_text(NODE)
    parent.chmod(0o775)
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(parent / "cfg")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"sdqos: error: config directory {parent / 'cfg'}: parent {parent} is writable by group "
                                "or others (mode 0775); run chmod go-w on it, or pass --insecure")
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(parent / "cfg"), "--insecure"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("mode, owner, trusted", [(0o644, 0, True), (0o666, 0, False), (0o644, 65534, False)])
def test_a_vm_pid_file_is_trusted_as_systemd_trusts_pidfile(tmp_path, mode, owner, trusted):
    from sdqos.reconcile.binding import read_pid_file

    f = tmp_path / "vm.pid"
    f.write_text(f"{os.getpid()}\n")  # a process that runs, started before the file was written
    os.chown(f, owner, 0)
    f.chmod(mode)
    warnings: list[str] = []
    assert read_pid_file(str(f), warnings, vm="vm") == (os.getpid() if trusted else None)
    assert bool(warnings) != trusted
    if not trusted:
        assert warnings[0].startswith(f"pid file {f} is ") and warnings[0].endswith(": not trusted, ignored")
    link = tmp_path / "link.pid"
    link.symlink_to(f)
    assert read_pid_file(str(link), []) is None  # never through a symlink


def test_explain_never_echoes_a_file_that_is_not_a_manifest(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root:$6$salt$hash:19000:0:99999:7:::\nkind: topsecret\npassword: hunter2\n")
    secret.chmod(0o600)
    r = subprocess.run([sys.executable, "-m", "sdqos", "explain", "--config", str(EXAMPLES), str(secret)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == "" and r.stderr.strip() == (f"sdqos: error: {secret}: is not a Pod manifest (every document "
                                                   "must be kind: Pod, or a List of Pods); nothing of it is shown")
    for word in ("$6$", "hunter2", "topsecret", "99999"):
        assert word not in r.stderr
    secret.write_text("a: [unclosed, *hunter2\n")
    r = subprocess.run([sys.executable, "-m", "sdqos", "explain", "--config", str(EXAMPLES), str(secret)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "hunter2" not in r.stderr and "is not valid YAML (line" in r.stderr
    secret.chmod(0o666)
    r = subprocess.run([sys.executable, "-m", "sdqos", "explain", "--config", str(EXAMPLES), str(secret)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "writable by group or others" in r.stderr


def _pid_file(tmp_path: Path, pid: int, written: float | None = None) -> Path:
    f = tmp_path / "vm.pid"
    f.write_text(f"{pid}\n")
    f.chmod(0o644)
    if written is not None:
        os.utime(f, (written, written))
    return f


def test_a_pid_file_older_than_its_process_is_stale():
    """The VM's QEMU killed and its PID taken by a process started since: the pid file was written
    before that process existed, so it is not the file's process (checked as libvirt's record is).
    A real process; its start time from /proc."""
    import tempfile

    from sdqos.reconcile.binding import read_pid_file

    p = subprocess.Popen(["sleep", "300"])
    try:
        with tempfile.TemporaryDirectory() as d:
            f = _pid_file(Path(d), p.pid, written=time.time() - 3600)
            warnings: list[str] = []
            assert read_pid_file(str(f), warnings, vm="vm1") is None
            assert warnings == [f"pid file {f} names PID {p.pid} for VM vm1, but that process started after the "
                                "record was written (the VM gone, its PID reused?): ignored, and that process's "
                                "scope is not tuned, counted or stopped as the VM"]
            os.utime(f)  # written now, after the process started: it is the file's process
            assert read_pid_file(str(f), warnings, vm="vm1") == p.pid
    finally:
        p.kill()
        p.wait()


def test_a_pid_file_naming_a_qemu_of_another_guest_is_not_the_vms():
    """A real QEMU (no guest: -machine none, stopped) whose -name is another guest is not VM vm1's,
    whenever the pid file was written; named vm1 it is."""
    import shutil
    import tempfile

    from sdqos.reconcile.binding import read_pid_file

    exe = shutil.which("qemu-system-x86_64")
    if exe is None:
        pytest.skip("qemu-system-x86_64 not found")
    for guest, ok in (("other", False), ("vm1", True)):
        p = subprocess.Popen([exe, "-name", f"guest={guest},debug-threads=on", "-machine", "none", "-nodefaults",
                              "-display", "none", "-monitor", "none", "-serial", "none", "-S"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not Path(f"/proc/{p.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
                time.sleep(0.01)  # the kernel shows an empty command line while the exec is under way
            with tempfile.TemporaryDirectory() as d:
                f = _pid_file(Path(d), p.pid)
                warnings: list[str] = []
                assert read_pid_file(str(f), warnings, vm="vm1") == (p.pid if ok else None)
                assert warnings == ([] if ok else [
                    f"pid file {f} names PID {p.pid} for VM vm1, but that process is not its QEMU (it runs guest "
                    "'other') (the VM gone, its PID reused?): ignored, and that process's scope is not tuned, "
                    "counted or stopped as the VM"])
        finally:
            p.kill()
            p.wait()
