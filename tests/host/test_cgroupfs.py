"""What the kernel must hold for a unit's properties (sdqos.host.cgroupfs), read from files laid out
as cgroupfs lays them out. The v2 facts come from the v2 guest (tests/v2)."""

from __future__ import annotations

from sdqos.host import cgroupfs

INF = 2**64 - 1


def write(root, rel: str, files: dict[str, str]) -> None:
    d = root / rel.strip("/")
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text + "\n")


def test_v2_without_quota_accepts_any_period_systemd_leaves_in_cpu_max(tmp_path):
    """systemd 252 and 257 keep cpu.max at "max 100000" for a unit with CPUQuotaPeriodUSec=50ms and no
    quota: that is in sync, not drift (it was reported as drift, and "restored", on every sync)."""
    props = {"CPUWeight": 100, "CPUQuotaPerSecUSec": INF, "CPUQuotaPeriodUSec": 50_000, "MemoryMax": INF,
             "MemoryMin": 0, "MemoryLow": 0, "MemoryHigh": INF, "TasksMax": 1024}
    write(tmp_path, "/a.slice", {"cpu.weight": "100", "cpu.max": "max 100000", "memory.max": "max", "memory.min": "0",
                                 "memory.low": "0", "memory.high": "max", "pids.max": "1024"})
    assert cgroupfs.in_sync(props, "/a.slice", "v2", root=tmp_path)
    write(tmp_path, "/a.slice", {"cpu.max": "50000 100000"})  # a quota written behind systemd's back
    assert not cgroupfs.in_sync(props, "/a.slice", "v2", root=tmp_path)


def test_v2_with_quota_checks_quota_and_period(tmp_path):
    props = {"CPUWeight": 100, "CPUQuotaPerSecUSec": 500_000, "CPUQuotaPeriodUSec": 50_000, "TasksMax": INF}
    write(tmp_path, "/b.slice", {"cpu.weight": "100", "cpu.max": "25000 50000", "pids.max": "max"})
    assert cgroupfs.in_sync(props, "/b.slice", "v2", root=tmp_path)
    write(tmp_path, "/b.slice", {"cpu.max": "25000 100000"})
    assert not cgroupfs.in_sync(props, "/b.slice", "v2", root=tmp_path)
