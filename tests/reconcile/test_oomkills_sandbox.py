"""OOM kills made visible, against the sandbox and the real kernel: a container scope with a 64 MiB
limit and a process that wants 200 MiB. The kill shows in `status` (when, which process, which
limit), counts in the metrics, and sync says it in one line, once — also for a scope that ended with
its victim, and not again when the scope is made anew under the same name."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid
from sdqos.kube.naming import container_scope

from ..sbhelpers import active_state, cgroup_rel, sdqos_in, sync_json, wait_for
from .test_scopes_sandbox import kill_all, procs_of, run_bg

LIMIT = 64 * 2**20
HOG = "b = bytearray(200 * 2**20)"  # more than its limit, all at once: the kernel kills it


@pytest.fixture
def hogpod(tmp_path: Path):
    """A pod of its own name: the kernel log is shared by every sandbox on the host."""
    name = f"hog{os.getpid()}x{time.monotonic_ns() % 10**6}"
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text('capacity: {cpu: "2", memory: 4Gi, pids: "100000"}\n')
    (d / "pods" / "hog.yaml").write_text(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: oomt}}
spec:
  containers:
  - name: hog
    resources:
      requests: {{cpu: 100m, memory: 32Mi}}
      limits: {{cpu: 500m, memory: 64Mi}}
""")
    uid = stable_uid("oomt", name)
    pod_slice = f"kubepods-burstable-pod{uid.replace('-', '_')}.slice"
    return d, name, container_scope(uid, "hog"), pod_slice


def kmsg_readable(sb) -> bool:
    """Whether sdqos inside the sandbox can read the kernel log (one record: a read smaller than
    a record fails)."""
    code = "import os; os.read(os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK), 8192)"
    return sbx.run(sb, [sys.executable, "-c", code]).returncode == 0


def kernel_count(sb, rel: str) -> int:
    text = (sb.cgroup_path("memory") / rel / "memory.oom_control").read_text()
    return int(re.search(r"^oom_kill (\d+)$", text, re.M).group(1))


def status_row(sb, cfg, unit):
    r = sdqos_in(sb, "status", "--config", str(cfg), "-o", "json", "--interval", "0")
    assert r.returncode == 0, r.stderr
    return next(u for u in json.loads(r.stdout)["units"] if u["unit"] == unit)


def oom_lines(sb, cfg) -> list[str]:
    r = sdqos_in(sb, "sync", "--config", str(cfg), "--quiet")
    assert r.returncode == 0, r.stderr
    return [ln for ln in r.stdout.splitlines() if ln.startswith("oom-killed:")]


def kills_metric(sb, cfg, unit) -> float:
    r = sdqos_in(sb, "metrics", "--config", str(cfg), "--interval", "0")
    assert r.returncode == 0, r.stderr
    fams = {f.name: f for f in text_string_to_metric_families(r.stdout)}
    return {s.labels["unit"]: s.value for s in fams["sdqos_oom_kills"].samples}[unit]


def test_an_oom_kill_shows_in_status_metrics_and_one_sync_line(clean_sandbox, hogpod):
    sb = clean_sandbox
    cfg, name, scope, pod_slice = hogpod
    log_readable = kmsg_readable(sb)
    sync_json(sb, cfg)
    assert oom_lines(sb, cfg) == []
    t0 = time.time()
    # The shell stays: the scope outlives its victim, and its counter can be read.
    p = run_bg(sb, cfg, f"oomt/{name}", "hog", "--", "/bin/sh", "-c", f"{sys.executable} -c '{HOG}'; exec sleep 300")
    try:
        rel = cgroup_rel(scope, pod_slice)
        wait_for(lambda: procs_of(sb, rel) and kernel_count(sb, rel) == 1, what="the kernel's OOM kill")
        row = status_row(sb, cfg, scope)  # before any sync: read from the kernel
        assert "oom-killed" in row["flags"] and row["running"]
        k = row["oomKilled"]
        assert k["count"] == 1
        last = k["last"]
        assert last["limit"] == LIMIT and last["limitUnit"] in (scope, pod_slice)  # both hold 64 MiB
        assert t0 - 1 <= last["time"] <= time.time() + 1
        if log_readable:
            assert last["source"] == "kernel log" and last["comm"].startswith("python")
            assert last["constraint"] == "CONSTRAINT_MEMCG" and isinstance(last["pid"], int)
        assert kills_metric(sb, cfg, scope) == 1
        lines = oom_lines(sb, cfg)
        assert len(lines) == 1 and f"oomt/{name}/hog ({scope})" in lines[0] and "limit 64 MiB" in lines[0], lines
        if log_readable:
            assert f"process {last['pid']} (python" in lines[0]
        assert oom_lines(sb, cfg) == []  # once
        assert status_row(sb, cfg, scope)["oomKilled"]["count"] == 1
    finally:
        sbx.run(sb, ["systemctl", "stop", scope])
        kill_all(p)
    wait_for(lambda: active_state(sb, scope) in ("inactive", ""), what="scope gone")
    if log_readable:
        # A scope whose only process is the victim ends with it: the kernel log still tells.
        hog = run_bg(sb, cfg, f"oomt/{name}", "hog", "--", sys.executable, "-c", HOG)
        assert hog.wait(timeout=60) in (-signal.SIGKILL, 128 + signal.SIGKILL)
        wait_for(lambda: active_state(sb, scope) in ("inactive", ""), what="scope gone")
        lines = oom_lines(sb, cfg)
        assert len(lines) == 1 and "(python" in lines[0], lines
        row = status_row(sb, cfg, scope)
        assert not row["running"] and row["oomKilled"]["count"] == 2 and "oom-killed" in row["flags"]
        assert kills_metric(sb, cfg, scope) == 2
    # Made anew under the same name: a new cgroup whose counter starts at 0, nothing reported again.
    q = run_bg(sb, cfg, f"oomt/{name}", "hog", "--", "sleep", "300")
    try:
        wait_for(lambda: procs_of(sb, cgroup_rel(scope, pod_slice)), what="new scope")
        assert oom_lines(sb, cfg) == []
        assert oom_lines(sb, cfg) == []
        assert status_row(sb, cfg, scope)["oomKilled"]["count"] == (2 if log_readable else 1)
    finally:
        sbx.run(sb, ["systemctl", "stop", scope])
        kill_all(q)


def test_a_vm_the_kernel_oom_killed_is_named_after_its_scope_ended(clean_sandbox, tmp_path):
    """`sdqos run --vm` puts the process in the VM's machine scope (128 MiB here); the process is
    killed, the scope ends with it, and sync and status still name the VM."""
    sb = clean_sandbox
    if not kmsg_readable(sb):
        pytest.skip("the kernel log is not readable here: a scope gone with its victim leaves no counter")
    name = f"oomvm{os.getpid()}x{time.monotonic_ns() % 10**6}"
    d = tmp_path / "cfg"
    (d / "vms").mkdir(parents=True)
    (d / "pods").mkdir()
    (d / "node.yaml").write_text('capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\n')
    (d / "vms" / "vm.yaml").write_text(f"""\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: {name}}}
spec:
  resources:
    requests: {{cpu: 500m}}
    limits: {{cpu: "1", memory: 64Mi}}
  overhead: {{cpu: 100m, memory: 64Mi}}
""")
    sync_json(sb, d)
    assert oom_lines(sb, d) == []
    hog = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(d), "--vm", name, "--",
                         sys.executable, "-c", "b = bytearray(400 * 2**20)"])
    assert hog.wait(timeout=60) in (-signal.SIGKILL, 128 + signal.SIGKILL)
    scope = f"machine-{name}.scope"
    wait_for(lambda: active_state(sb, scope) in ("inactive", ""), what="the VM's scope gone")
    lines = oom_lines(sb, d)
    assert len(lines) == 1 and lines[0].startswith(f"oom-killed: vm {name} ({scope}): the kernel killed process "), lines
    assert "limit 128 MiB" in lines[0]
    assert oom_lines(sb, d) == []
    r = sdqos_in(sb, "status", "--config", str(d), "-o", "json", "--interval", "0")
    row = next(u for u in json.loads(r.stdout)["units"] if u["vm"] == name)
    assert row["oomKilled"]["count"] == 1 and "oom-killed" in row["flags"] and "not-running" in row["flags"]


def _kmsg_messages() -> list[tuple[int, str]]:
    """(facility, message) of every record of the kernel log (``PRI,SEQ,USEC,FLAGS;MESSAGE``)."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    out = []
    try:
        while True:
            try:
                raw = os.read(fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                return out
            except BrokenPipeError:
                continue
            head, _, body = raw.partition(";")
            out.append((int(head.split(",")[0]) >> 3, body.split("\n", 1)[0]))
    finally:
        os.close(fd)


def test_lines_that_quote_a_kill_are_no_kills(clean_sandbox, hogpod, tmp_path):
    """After a real OOM kill of PID: a segfault in a file named ``Killed process PID (cryptominer)``
    (the kernel's own line, quoting the file) and the kill line's exact shape written to /dev/kmsg
    (a userspace record). Each was one more kill, with the attacker's name, in sync's line and
    status; they are no kills."""
    import subprocess

    from sdqos.host import oomevents

    sb = clean_sandbox
    if not kmsg_readable(sb):
        pytest.skip("the kernel log cannot be read here")
    cfg, name, scope, pod_slice = hogpod
    sync_json(sb, cfg)
    assert oom_lines(sb, cfg) == []
    hog = run_bg(sb, cfg, f"oomt/{name}", "hog", "--", sys.executable, "-c", HOG)
    assert hog.wait(timeout=60) in (-signal.SIGKILL, 128 + signal.SIGKILL)
    wait_for(lambda: active_state(sb, scope) in ("inactive", ""), what="scope gone")
    got = oomevents.read_log(None)
    assert got is not None
    pid = [k.pid for k in got[0] if k.task_memcg.endswith(f"/{scope}")][-1]  # as the kernel printed it
    (tmp_path / "crash.c").write_text("int main(void) { *(volatile int *)0 = 0; return 0; }\n")
    exe = tmp_path / f"Killed process {pid} (cryptominer)"
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(tmp_path / "crash.c")], check=True)
    sbx.run(sb, [str(exe)])  # SIGSEGV in that file: the kernel says so
    quoted = f" in Killed process {pid} (cryptominer)["
    wait_for(lambda: any(f == 0 and quoted in m for f, m in _kmsg_messages()), what="the kernel's segfault line")
    forged = (f"Memory cgroup out of memory: Killed process {pid} (cryptominer) total-vm:4kB, anon-rss:4kB, "
              "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0")
    sbx.run(sb, ["sh", "-c", 'printf "%s\\n" "$1" > /dev/kmsg', "sh", forged], check=True)
    lines = oom_lines(sb, cfg)
    assert len(lines) == 1 and f"process {pid} (python" in lines[0], lines
    assert "cryptominer" not in lines[0] and "more of its group" not in lines[0], lines
    row = status_row(sb, cfg, scope)
    assert row["oomKilled"]["count"] == 1 and row["oomKilled"]["last"]["comm"].startswith("python")
    assert oom_lines(sb, cfg) == []
