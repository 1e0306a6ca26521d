"""sdqos on a real cgroup v2 kernel with a real systemd as PID 1 (the guest is the throwaway machine):
the values kubelet would set are in the kernel's v2 files, a second sync has nothing to do, and
README's first command (a sandbox on a host where /run is a tmpfs) works there."""

from __future__ import annotations

import json

INFINITY = 2**64 - 1
PAGE = 4096


def cgroup_dir(unit: str) -> str:
    stem = unit[: -len(".slice")]
    parts = stem.split("-")
    return "/sys/fs/cgroup/" + "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def expected_files(props: dict[str, int]) -> dict[str, str]:
    """What the v2 kernel files hold for a slice's planned properties (memory in whole pages, as
    the kernel's page counters keep it; cpu.max as quota and period in µs)."""
    def mem(v: int) -> str:
        return "max" if v == INFINITY else str(v // PAGE * PAGE)

    period = props.get("CPUQuotaPeriodUSec", 100_000)
    per_sec = props["CPUQuotaPerSecUSec"]
    out = {
        "cpu.weight": str(props["CPUWeight"]),
        "cpu.max": f"max {period}" if per_sec == INFINITY else f"{per_sec * period // 1_000_000} {period}",
        "memory.max": mem(props["MemoryMax"]),
        "memory.min": mem(props["MemoryMin"]),
        "memory.low": mem(props["MemoryLow"]),
        "memory.high": mem(props["MemoryHigh"]),
        "pids.max": "max" if props["TasksMax"] == INFINITY else str(props["TasksMax"]),
    }
    return out


def kernel_files(guest, unit: str, files) -> dict[str, str]:
    d = cgroup_dir(unit)
    out = guest.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in files))
    return dict(line.split("=", 1) for line in out.splitlines())


def test_the_guest_is_cgroup_v2_only_with_its_suites_systemd(v2guest):
    from .guest import SUITES

    assert v2guest.check("stat -f -c %T /sys/fs/cgroup").strip() == "cgroup2fs"
    assert "memory" in v2guest.check("cat /sys/fs/cgroup/cgroup.controllers").split()
    version = int(v2guest.check("systemctl --version").split()[1])
    assert version == SUITES[v2guest.suite][1]


def test_sync_puts_kubelets_v2_values_in_the_kernel_and_then_has_nothing_to_do(v2guest):
    g = v2guest
    r = g.run("sdqos sync --config /root/examples -o json")
    assert r.rc == 0, r.stderr
    report = json.loads(r.stdout)
    assert len(report["created"]) == 8 and report["errors"] == []
    plan = json.loads(g.check("sdqos plan --config /root/examples -o json"))
    assert plan["cgroup"] == "v2"  # detected on this host
    slices = [u for u in plan["units"] if u["name"].endswith(".slice") and u["name"].startswith("kubepods")]
    assert len(slices) == 8
    for u in slices:
        want = expected_files(u["properties"])
        assert kernel_files(g, u["name"], want) == want, u["name"]
    again = json.loads(g.check("sdqos sync --config /root/examples -o json"))
    assert again["created"] == again["updated"] == again["removed"] == [] and again["drift"] == []
    assert len(again["unchanged"]) == 8


def test_readme_first_command_works_where_run_is_a_tmpfs(v2guest):
    g = v2guest
    # /run is a tmpfs of its own, as on every systemd host (the mount point's file system differs from /'s)
    assert g.check("stat -f -c %T /run; stat -f -c %T /").split() == ["tmpfs", "ext2/ext3"]
    r = g.run("cd /root && sdqos sandbox up demo && sdqos sandbox exec -n demo -- sdqos sync --config examples "
              "&& sdqos sandbox exec -n demo -- systemctl is-active kubepods.slice; rc=$?; sdqos sandbox down demo; "
              "exit $rc", timeout=300)
    assert r.rc == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("8 created") for ln in lines) and "active" in lines
    assert g.check("ls /run/sdqos-sandbox 2>/dev/null | wc -l").strip() == "0"  # nothing left
