"""cpuManagerPolicy static on cgroup v2, through the shipped units, in a guest of four vCPUs in two
cores of two threads (guest.TOPOLOGY): systemd holds each container's CPUs as its scope's
AllowedCPUs (cpuset.cpus). With reservedSystemCPUs "0", a Guaranteed 2-CPU container runs on the
whole other core, with no CFS quota on its scope or its pod; a Burstable and a non-integer
Guaranteed container run on the shared pool (narrowed by the sync after the exclusive pod starts)
with their quotas; the assignment survives syncs and a restart of the service; a pod that does
not fit is refused in one line (exit 2); a cpuset.cpus written by hand is restored by the next
sync; the pool grows back when the exclusive pod leaves."""

from __future__ import annotations

import json
import time

from ..sbhelpers import static_node
from .test_v2_guest import cgroup_dir

CFG = "/root/cpu"
# capacity 8: kubelet's allocatable check passes the second 2-CPU pod, so the CPU manager refuses it
NODE = static_node(capacity='{cpu: "8", memory: 2Gi, pids: "100000"}')


def _pod(name: str, requests: str, limits: str | None) -> str:
    res = f"{{requests: {requests}" + (f", limits: {limits}}}" if limits else "}")
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: st}}\nspec:\n  containers:\n"
            f"  - name: app\n    resources: {res}\n")


PODS = {
    "gu": _pod("gu", '{cpu: "2", memory: 32Mi}', '{cpu: "2", memory: 32Mi}'),  # exclusive: a whole core
    "bu": _pod("bu", '{cpu: 100m, memory: 16Mi}', '{cpu: 500m}'),  # Burstable: the pool, quota 50 %
    "gf": _pod("gf", '{cpu: 300m, memory: 16Mi}', '{cpu: 300m, memory: 16Mi}'),  # non-integer Guaranteed: the pool
    "big": _pod("big", '{cpu: "2", memory: 16Mi}', '{cpu: "2", memory: 16Mi}'),  # does not fit beside gu
}
SERVICE = "sdqos-sync.service"


def _wait(g, what: str, cond, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            why = g.run(f"systemctl status --no-pager {SERVICE}; journalctl -b --no-pager -n 40 -u {SERVICE}").stdout
            raise AssertionError(f"timed out waiting for {what}\n{why}")
        time.sleep(1)


def _sync(g) -> None:
    """One sync by the service that starts after this call: a sync already under way (the path
    unit's, the timer's) is waited for first, else the start would only join it; a start then
    waits for the oneshot (or joins one the timer started meanwhile, also a fresh one)."""
    _wait(g, "the running sync to end", lambda: g.check(f"systemctl show -P ActiveState {SERVICE}").strip()
          in ("inactive", "failed"))
    g.check(f"systemctl start {SERVICE}", timeout=600)
    assert g.check(f"systemctl show -P Result {SERVICE}").strip() == "success", \
        g.run(f"journalctl -b --no-pager -n 40 -u {SERVICE}").stdout


def _where(g, name: str) -> tuple[str, str]:
    """(the pod slice's cgroup dir, the scope unit) of pod st/NAME's container app."""
    plan = json.loads(g.check(f"sdqos plan --config {CFG} -o json"))
    p = next(p for p in plan["pods"] if p["name"] == name)
    return cgroup_dir(p["slice"]), p["containers"][0]["scope"]


def _cat(g, path: str) -> str:
    return g.check(f"cat {path}").strip()


def _allowed(g, pid: int) -> str:
    return next(line.split(":", 1)[1].strip() for line in g.check(f"cat /proc/{pid}/status").splitlines()
                if line.startswith("Cpus_allowed_list:"))


def _cores(g) -> set[str]:
    """The guest's cores, each as its thread_siblings_list."""
    return set(g.check("cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list").split())


def test_static_cpus_are_held_by_systemd_on_cgroup_v2(v2cpu):
    g = v2cpu
    cores = _cores(g)
    assert _cat(g, "/sys/devices/system/cpu/online") == "0-3"
    assert cores == {"0-1", "2-3"}, cores  # two cores of two threads: else there is no whole core to choose
    core = next(c for c in cores if "0" not in c.replace("-", ",").split(","))  # CPU 0 is reserved: the other core
    pool = "0-1"  # every CPU no container holds (the reserved CPU 0 stays in it)
    g.check(f"rm -rf {CFG} && mkdir -p {CFG}/pods && cat > {CFG}/node.yaml <<'X'\n{NODE}X\n"
            + "".join(f"cat > {CFG}/pods/{n}.yaml <<'X'\n{t}X\n" for n, t in PODS.items()))
    pids: dict[str, int] = {}
    try:
        g.check(f"sdqos install-units --config {CFG} --now")
        _wait(g, "the first sync", lambda: g.run("systemctl is-active kubepods.slice").stdout.strip() == "active"
              and g.check(f"systemctl show -P ActiveState {SERVICE}").strip() == "inactive")
        _sync(g)
        assert g.run("test -f /run/sdqos/cpu_manager_state").rc == 0  # kubelet's checkpoint, written at start
        g.check("systemctl stop sdqos-sync.timer")  # until the restart: what holds gu's CPUs is its `sdqos run`

        # bu before gu: its scope gets the whole pool (no CPU held yet), narrowed once gu holds its core
        pids["bu"] = g.sdqos_run(f"--config {CFG} st/bu app -- sleep 100000", log="/tmp/bu.log")
        bu_slice, bu_scope = _where(g, "bu")
        assert _allowed(g, pids["bu"]) == "0-3"
        pids["gu"] = g.sdqos_run(f"--config {CFG} st/gu app -- sleep 100000", log="/tmp/gu.log")
        pids["gf"] = g.sdqos_run(f"--config {CFG} st/gf app -- sleep 100000", log="/tmp/gf.log")
        gu_slice, gu_scope = _where(g, "gu")
        gf_slice, gf_scope = _where(g, "gf")
        gu_dir, bu_dir, gf_dir = f"{gu_slice}/{gu_scope}", f"{bu_slice}/{bu_scope}", f"{gf_slice}/{gf_scope}"

        state = json.loads(_cat(g, "/run/sdqos/cpu_manager_state"))
        assert state["defaultCpuSet"] == pool and list(state["entries"].values()) == [{"app": core}], state
        # the exclusive container: from its start, on the whole core, by its scope's cpuset; no quota
        assert _allowed(g, pids["gu"]) == core
        assert _cat(g, f"{gu_dir}/cpuset.cpus") == core and _cat(g, f"{gu_dir}/cpuset.cpus.effective") == core
        assert g.check(f"systemctl show -p AllowedCPUs {gu_scope}").strip() == f"AllowedCPUs={core}"
        assert _cat(g, f"{gu_dir}/cpu.max").split()[0] == "max"
        assert _cat(g, f"{gu_slice}/cpu.max").split()[0] == "max"
        assert _cat(g, f"{gu_slice}/cpuset.cpus") == ""  # kubelet sets no cpuset on a pod's cgroup
        first = min(int(c) for c in core.replace("-", ",").split(","))  # a core's id: its lowest CPU (kubelet's)
        assert f"exclusive: Guaranteed, 2 integer CPUs, whole core {first} (CPUs {core})" in \
            g.check(f"sdqos explain --config {CFG} st/gu")
        # the non-integer Guaranteed container started after: on the pool, with its quota
        assert _allowed(g, pids["gf"]) == pool and _cat(g, f"{gf_dir}/cpuset.cpus.effective") == pool
        assert _cat(g, f"{gf_dir}/cpu.max") == "30000 100000"

        _sync(g)  # kubelet's reconcileState: every container to its CPUs; bu leaves the core gu holds
        assert _allowed(g, pids["bu"]) == pool and _cat(g, f"{bu_dir}/cpuset.cpus.effective") == pool
        assert g.check(f"systemctl show -p AllowedCPUs {bu_scope}").strip() == f"AllowedCPUs={pool}"
        assert _cat(g, f"{bu_dir}/cpu.max") == "50000 100000"

        # syncs (the timer's again) and a restart of the service keep the assignment
        g.check("systemctl start sdqos-sync.timer")
        g.check(f"systemctl restart {SERVICE}", timeout=600)
        _sync(g)
        assert json.loads(_cat(g, "/run/sdqos/cpu_manager_state")) == state
        assert _allowed(g, pids["gu"]) == core and _allowed(g, pids["gf"]) == pool and _allowed(g, pids["bu"]) == pool

        # a pod that does not fit: refused in one line, nothing runs
        r = g.run(f"sdqos run --config {CFG} st/big app -- sleep 1")
        assert r.rc == 2, (r.stdout, r.stderr)
        line = r.stderr.strip()
        assert "\n" not in line and "pod st/big" in line and "container app" in line \
            and 'CPUs free: 1 ("1")' in line, line
        assert json.loads(_cat(g, "/run/sdqos/cpu_manager_state")) == state

        # drift: a cpuset written behind systemd's back is restored by the next sync
        g.check(f"echo 1 > {gu_dir}/cpuset.cpus && echo 2-3 > {bu_dir}/cpuset.cpus")
        assert _allowed(g, pids["gu"]) == "1"
        _sync(g)
        assert _cat(g, f"{gu_dir}/cpuset.cpus") == core and _allowed(g, pids["gu"]) == core
        assert _cat(g, f"{bu_dir}/cpuset.cpus") == pool and _allowed(g, pids["bu"]) == pool

        # the exclusive pod leaves: its core goes back to the pool, and the shared containers grow
        # in that same start of the service (the timer stopped: no other sync may do it): the sync
        # that stops gu's units releases its CPUs, and --settle's next pass plans the wider pool
        g.check("systemctl stop sdqos-sync.timer")
        _wait(g, "the running sync to end", lambda: g.check(f"systemctl show -P ActiveState {SERVICE}").strip()
              in ("inactive", "failed"))
        g.check(f"rm {CFG}/pods/gu.yaml")  # the path unit starts a sync, which stops its units
        _wait(g, "gu's container to be stopped", lambda: g.run(f"test -e /proc/{pids['gu']}").rc != 0)
        _wait(g, "gu's CPUs released", lambda: json.loads(_cat(g, "/run/sdqos/cpu_manager_state"))
              .get("entries") in (None, {}))
        _wait(g, "the path unit's sync to end", lambda: g.check(f"systemctl show -P ActiveState {SERVICE}").strip()
              in ("inactive", "failed"))
        assert json.loads(_cat(g, "/run/sdqos/cpu_manager_state"))["defaultCpuSet"] == "0-3"
        for name, d in (("bu", bu_dir), ("gf", gf_dir)):
            assert _allowed(g, pids[name]) == "0-3", name
            assert _cat(g, f"{d}/cpuset.cpus.effective") == "0-3", name
    finally:
        g.run(f"systemctl disable --now sdqos-sync.timer sdqos-sync.path sdqos-pressure.service; "
              f"systemctl stop {SERVICE}; rm -f /etc/systemd/system/sdqos-sync.* /etc/systemd/system/sdqos-pressure.service; "
              "systemctl daemon-reload; pkill -f '^sleep 100000'; systemctl stop kubepods.slice; rm -rf /run/sdqos")
