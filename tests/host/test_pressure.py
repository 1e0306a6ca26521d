"""Eviction signals from the kernel's numbers (sdqos/host/pressure.py, kube/eviction.py:observe)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.host import pressure, procfs
from sdqos.kube import eviction as ev
from sdqos.kube.eviction import Observation

Mi, Gi = 2**20, 2**30


def test_observe_from_raw_numbers():
    """makeSignalObservations: capacity − working set; allocatable − the workloads' working set;
    MaxPID = min(pid_max, threads-max) − tasks (TestMakeSignalObservations' figures for pid)."""
    obs = ev.observe(memory_capacity=8 * Gi, node_usage=5 * Gi, node_inactive_file=2 * Gi,
                     allocatable_memory=6 * Gi, workloads_working_set=Gi,
                     pid_max=4194304, threads_max=255816, tasks=1000)
    assert obs == {
        "memory.available": Observation(8 * Gi - 3 * Gi, 8 * Gi),
        "allocatableMemory.available": Observation(5 * Gi, 6 * Gi),
        "pid.available": Observation(255816 - 1000, 255816),
    }


def test_observe_edges():
    # inactive_file above usage: working set 0 (cadvisor); no allocatable: not observed;
    # node.yaml's capacity.pid wins over the kernel's limits
    obs = ev.observe(memory_capacity=Gi, node_usage=100, node_inactive_file=200, allocatable_memory=None,
                     workloads_working_set=None, pid_max=32768, threads_max=None, tasks=100, pid_capacity=500)
    assert obs == {"memory.available": Observation(Gi, Gi), "pid.available": Observation(400, 500)}


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_memory_stat_v1_layout(tmp_path):
    root = _tree(tmp_path, {
        "memory/memory.usage_in_bytes": "1000000\n",
        "memory/memory.stat": "cache 5\ninactive_file 7\ntotal_inactive_file 300000\n",
        "memory/kubepods.slice/memory.usage_in_bytes": "5000\n",
        "memory/kubepods.slice/memory.stat": "inactive_file 1\ntotal_inactive_file 1000\n",
    })
    assert pressure.memory_stat("/", "v1", root) == pressure.MemoryStat(1000000, 300000)
    assert pressure.memory_stat("/kubepods.slice", "v1", root).working_set == 4000
    assert pressure.memory_stat("/machine.slice", "v1", root) is None


def test_memory_stat_v2_layout(tmp_path):
    """v2's root has no memory.current: anon + file (runc's rootStatsFromMeminfo)."""
    root = _tree(tmp_path, {
        "memory.stat": "anon 600\nfile 400\ninactive_file 150\nactive_file 250\n",
        "kubepods.slice/memory.current": "900\n",
        "kubepods.slice/memory.stat": "anon 500\nfile 400\ninactive_file 300\n",
    })
    assert pressure.memory_stat("/", "v2", root) == pressure.MemoryStat(1000, 150)
    assert pressure.memory_stat("/kubepods.slice", "v2", root) == pressure.MemoryStat(900, 300)


def test_tasks_reads_loadavg_total(tmp_path):
    proc = _tree(tmp_path, {"sys/kernel/pid_max": "4194304\n", "sys/kernel/threads-max": "95000\n",
                            "loadavg": "0.10 0.20 0.30 2/345 6789\n"})
    assert pressure.tasks(proc) == pressure.Tasks(4194304, 95000, 345)


def test_tasks_of_this_host_are_plausible():
    t = pressure.tasks()
    assert 0 < t.tasks < min(t.pid_max, t.threads_max or t.pid_max)


def test_unreadable_is_a_typed_error(tmp_path):
    with pytest.raises(pressure.SignalReadError, match="cannot read the task count"):
        pressure.tasks(tmp_path)


HOLD = "import sys, time; b = b'\\x01' * (int(sys.argv[1]) << 20); print('ready', flush=True); time.sleep(300)"


def test_working_set_of_a_real_cgroup(sandbox, tmp_path):
    """The kernel's own numbers: a process in kubepods.slice that holds 96 MiB of anonymous memory
    raises kubepods.slice's working set (and the sandbox root's) by about that much."""
    sb = sandbox
    if sb.cgroup_mode == "unified":
        root, mode = sb.cgroup_path("memory"), "v2"
    else:
        root, mode = tmp_path, "v1"
        (tmp_path / "memory").symlink_to(sb.cgroup_path("memory"))  # memory_stat reads <root>/memory/...
    unit = "sdqos-test-hold.service"
    sbx.run(sb, ["systemctl", "stop", unit])
    sbx.run(sb, ["systemctl", "reset-failed", unit])
    before_pods = pressure.memory_stat("/kubepods.slice", mode, root)
    before_pods_ws = before_pods.working_set if before_pods else 0
    r = sbx.run(sb, ["systemd-run", f"--unit={unit}", "--slice=kubepods.slice", "-p", "Type=exec",
                     sys.executable, "-c", HOLD, "96"])
    assert r.returncode == 0, r.stderr
    try:
        import time

        deadline = time.monotonic() + 30
        while True:
            m = pressure.memory_stat("/kubepods.slice", mode, root)
            grown = (m.working_set if m else 0) - before_pods_ws
            if grown >= 96 * Mi or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert 96 * Mi <= grown < 96 * Mi + 40 * Mi, grown
        node = pressure.memory_stat("/", mode, root)
        assert node.working_set >= m.working_set
    finally:
        sbx.run(sb, ["systemctl", "stop", unit])
    after = pressure.memory_stat("/kubepods.slice", mode, root)
    assert (after.working_set if after else 0) < before_pods_ws + 16 * Mi


PSI = """
import os
from sdqos.host import pressure as hp
t = hp.PsiTrigger()
print(t.stall_us, t.window_us, hp.wait([t], 0.2) == [] or 'fired')
t.close()
caps = int(next(ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('CapEff:')), 16)
print('privileged' if caps >> 24 & 1 else 'unprivileged')
for statement in (b'some 50000 500000', b'some 50000 500000\\0'):
    fd = os.open('/proc/pressure/memory', os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, statement)
        print('taken')
    except OSError as exc:
        print(exc.errno)
    finally:
        os.close(fd)
"""


def test_a_psi_trigger_registers_with_the_kernel(sandbox):
    """The node's PSI trigger as the watching loop arms it, in the sandbox (the host's kernel): taken
    with the 500 ms window where the process holds CAP_SYS_RESOURCE, else with 2 s (this build
    host's VMs lack it); the same statement without its trailing NUL is refused (EINVAL, 22) —
    /proc/pressure/*'s write handler cuts the last byte — which is what an earlier attempt ran into."""
    import os

    if not os.path.exists("/proc/pressure/memory"):
        pytest.skip("this kernel has no PSI (CONFIG_PSI, or psi=0 on its command line)")
    r = sbx.run(sandbox, [sys.executable, "-c", PSI])
    assert r.returncode == 0, r.stderr
    trigger, who, bare, with_nul = r.stdout.splitlines()
    if who == "privileged":
        assert trigger.startswith("50000 500000 ") and bare == "22" and with_nul == "taken", r.stdout
    else:  # 2 s windows only: both 500 ms statements refused
        assert trigger.startswith("200000 2000000 ") and bare == "22" and with_nul == "22", r.stdout


def test_a_real_zombie_is_found_until_it_is_reaped():
    """A child that exited and is not waited for is a zombie (it still holds its PID); once reaped,
    or for a PID that is gone or alive, there is none."""
    child = subprocess.Popen(["true"])
    while not procfs.zombies([child.pid]):  # it exits on its own; not reaped while nobody waits
        time.sleep(0.01)
    assert procfs.zombies([child.pid, os.getpid(), 2**22 + 7]) == [child.pid]
    child.wait()
    assert procfs.zombies([child.pid]) == []


def test_process_ids_walk_the_cgroup_below(tmp_path):
    root = _tree(tmp_path, {"a/cgroup.procs": "10\n11\n", "a/b/cgroup.procs": "12\n", "a/c/cgroup.procs": ""})
    assert sorted(pressure.process_ids("/a", "v2", root)) == [10, 11, 12]
    assert pressure.processes("/a", "v2", root) == 3


def test_orphan_zombies_are_the_zombies_pid_1_has_to_reap(tmp_path):
    """/proc/PID/stat's state and parent, after the command name (which may hold ") " itself)."""
    rest = " 0 0 0 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n"
    root = _tree(tmp_path, {"10/stat": "10 (sh) Z 1" + rest, "11/stat": "11 (a) Z 9) Z 1" + rest,
                            "12/stat": "12 (x) Z 5" + rest, "13/stat": "13 (y) S 1" + rest,
                            "14/stat": "14 (z) Z 12" + rest, "sys/kernel/pid_max": "4194304\n"})
    assert sorted(procfs.orphan_zombies(root)) == [10, 11]
    child = subprocess.Popen(["true"])  # a real zombie: its parent is this process, not PID 1
    try:
        while not procfs.zombies([child.pid]):
            time.sleep(0.01)
        (tmp_path / str(child.pid)).symlink_to(f"/proc/{child.pid}")
        assert child.pid not in procfs.orphan_zombies(root)
    finally:
        child.wait()
