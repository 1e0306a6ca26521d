"""The shipped units on a real systemd as PID 1 (the v2 guest is the throwaway host): `sdqos
install-units --now` leaves no unit changed on disk, as `systemctl enable --now`; the installed
service's exposure (`systemd-analyze security`, the host's own systemd) is what docs/service.md
says; and the hardened service lowers an OOM score (CAP_SYS_RESOURCE kept), triggered by the path
unit alone. The pressure service runs, at OOM score -999 and with its memory bounds in its own
cgroup v2 files (the sandbox's VMs cannot lower a score: test_pressure_service_sandbox.py)."""

from __future__ import annotations

import re
import time

from .test_v2_guest import PODS, planned, write_config

UNITS = ("sdqos-sync.service", "sdqos-sync.timer", "sdqos-sync.path", "sdqos-pressure.service")
PRESSURE = "sdqos-pressure.service"
EXPOSURE_LIMIT = 4.6  # as tests/reconcile/test_service_sandbox.py


def _wait(what: str, cond, timeout: float = 60, g=None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            why = g.run("systemctl status --no-pager sdqos-sync.service; journalctl -b --no-pager -n 30 "
                        "-u sdqos-sync.service").stdout if g is not None else ""
            raise AssertionError(f"timed out waiting for {what}\n{why}")
        time.sleep(0.5)


def test_the_installed_units_on_a_real_systemd(v2guest):
    g = v2guest
    cfg = write_config(g, pods=PODS)
    out = g.check(f"sdqos install-units --config {cfg} --now")
    try:
        assert "started sdqos-sync.timer, sdqos-sync.path and sdqos-pressure.service" in out
        for unit in (*UNITS, "timers.target", "paths.target"):
            assert g.check(f"systemctl show -P NeedDaemonReload {unit}").strip() == "no", unit
        st = g.run("systemctl status --no-pager " + " ".join(UNITS))
        assert "changed on disk" not in st.stdout + st.stderr, st.stdout
        score = g.check("systemd-analyze security --no-pager sdqos-sync.service")
        m = re.search(r"Overall exposure level for sdqos-sync.service: (\d+\.\d+)", score)
        assert m and float(m.group(1)) <= EXPOSURE_LIMIT, score
        score = g.check(f"systemd-analyze security --no-pager {PRESSURE}")
        m = re.search(rf"Overall exposure level for {PRESSURE}: (\d+\.\d+)", score)
        assert m and float(m.group(1)) <= EXPOSURE_LIMIT, score
        print(f"{PRESSURE} on the guest: exposure {m.group(1)}")
        assert g.check(f"systemctl show -P ActiveState {PRESSURE}").strip() == "active"
        assert g.check(f"systemctl show -P UnitFileState {PRESSURE}").strip() == "enabled"
        main = g.check(f"systemctl show -P MainPID {PRESSURE}").strip()
        assert g.check(f"cat /proc/{main}/oom_score_adj").strip() == "-999"
        d = f"/sys/fs/cgroup/system.slice/{PRESSURE}"
        assert g.check(f"cat {d}/memory.max {d}/memory.high").split() == [str(160 * 2**20), str(96 * 2**20)]
        _wait("the pressure service's first pass",
              lambda: "node conditions: none" in g.run(f"journalctl -b --no-pager -o cat -u {PRESSURE}").stdout, 60, g)
        current = int(g.check(f"systemctl show -P MemoryCurrent {PRESSURE}"))
        print(f"{PRESSURE} on the guest: MemoryCurrent {current / 2**20:.1f} MiB")
        assert 0 < current < 160 * 2**20

        _wait("the timer's first sync", lambda: g.run("systemctl is-active kubepods.slice").stdout.strip() == "active"
              and g.check("systemctl show -P Result sdqos-sync.service").strip() == "success"
              and g.check("systemctl show -P ActiveState sdqos-sync.service").strip() == "inactive", 120, g)
        c = next(c for p in planned(g, cfg)["pods"] if p["name"] == "db" for c in p["containers"]
                 if c["name"] == "postgres")
        assert c["oomScoreAdj"] < 0  # guaranteed: lowering it takes CAP_SYS_RESOURCE
        g.check(f"(sdqos run --config {cfg} shop/db postgres -- sleep 100000 >/dev/null 2>&1 </dev/null &)")
        _wait("the container's process", lambda: g.run("pgrep -f '^sleep 100000'").rc == 0)
        pid = g.check("pgrep -f '^sleep 100000'").split()[0]
        _wait("its OOM score", lambda: int(g.check(f"cat /proc/{pid}/oom_score_adj")) == c["oomScoreAdj"], 30)
        g.check("systemctl stop sdqos-sync.timer")
        g.check(f"echo 0 > /proc/{pid}/oom_score_adj")
        g.check(f"echo '# touched' >> {cfg}/node.yaml")  # the path unit starts a sync
        _wait("the service to lower the OOM score again",
              lambda: int(g.check(f"cat /proc/{pid}/oom_score_adj")) == c["oomScoreAdj"], 30, g)
        _wait("the service to end", lambda: g.check("systemctl show -P ActiveState sdqos-sync.service").strip()
              == "inactive")
        assert g.check("systemctl show -P Result sdqos-sync.service").strip() == "success"
    finally:
        g.run(f"systemctl disable --now sdqos-sync.timer sdqos-sync.path {PRESSURE}; systemctl stop sdqos-sync.service; "
              f"rm -f /etc/systemd/system/sdqos-sync.* /etc/systemd/system/{PRESSURE}; systemctl daemon-reload; "
              "pkill -f '^sleep 100000'")
