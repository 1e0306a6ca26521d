"""`sdqos status` fits a terminal: unit names shortened in the middle as systemctl does."""

from __future__ import annotations

import pytest

from sdqos.cli.status import Row, Status, render_plain
from sdqos.humanize import ellipsize


@pytest.mark.parametrize("text,width,out", [
    ("kubepods-burstable-pod0d5c8a4e_6f3b_4c1e.slice", 20, "kubepods-…4c1e.slice"),
    ("short.slice", 20, "short.slice"),
    ("abcdef", 5, "ab…ef"),
    ("abcdef", 3, "abc"),
])
def test_ellipsize_in_the_middle(text, width, out):
    got = ellipsize(text, width)
    assert got == out and len(got) <= max(width, 0)


def _status():
    uid = "0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55"
    rows = [Row("kubepods.slice", "node", "-.slice", "node", None, True, {"cpuShares": 7168, "memoryLimit": 2**34}),
            Row("kubepods-burstable.slice", "tier", "kubepods.slice", "tier", "Burstable", True, {"cpuShares": 1228}),
            Row(f"kubepods-burstable-pod{uid}.slice", "pod", "kubepods-burstable.slice", "pod", "Burstable", True,
                {"cpuShares": 256, "memoryLimit": 2**28}, namespace="shop", pod="web"),
            Row(f"sdqos-pod{uid}-nginx.scope", "container", f"kubepods-burstable-pod{uid}.slice", "c", "Burstable",
                True, {"cpuShares": 256, "memoryLimit": 2**28}, oom_score_adj=[968], namespace="shop", pod="web",
                container="nginx")]
    return Status("v1", rows, [], 0.0, {"pods": 1, "vms": 0, "running": 4, "units": 4, "drift": 0, "flagged": 0})


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_fits_the_terminal(width):
    lines = render_plain(_status(), width).splitlines()
    table = lines[:5]
    assert all(len(ln) <= width for ln in table), [len(ln) for ln in table]
    assert "shop/web/nginx" in table[4]
    if width == 80:  # too narrow for unit names and names side by side: pods and containers by name
        assert table[0].split()[0] == "UNIT/NAME" and table[4].split()[0] == "shop/web/nginx"
    else:  # unit names shortened in the middle, names beside them
        assert table[0].split()[:2] == ["UNIT", "NAME"] and "…" in table[4] and table[4].split()[1] == "shop/web/nginx"


def test_too_narrow_for_any_table_gives_one_block_per_unit():
    st = _status()
    st.rows[3].usage = {"memoryBytes": 2**20, "cpuCores": 0.25, "tasks": 3}
    st.rows[3].flags = ["near-cpu-limit", "oom-score-off"]
    lines = render_plain(st, 60).splitlines()
    assert all(len(ln) <= 60 for ln in lines), [len(ln) for ln in lines]
    i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("shop/web/nginx"))
    assert [ln.strip() for ln in lines[i:i + 5]] == [
        "shop/web/nginx  Burstable", "near-cpu-limit oom-score-off",
        "sdqos-pod0d5c8a4e_6f3b_4c…d_7b8e1f0c3a55-nginx.scope",
        "cpu 256 sh · memory 256 MiB · using 1 MiB · 0.25 cpu", "oom 968"]


def test_whole_names_without_a_width():
    text = render_plain(_status())
    assert "sdqos-pod0d5c8a4e_6f3b_4c1e_9a2d_7b8e1f0c3a55-nginx.scope" in text


@pytest.mark.parametrize("width", [80, 120])
def test_plan_fits_the_terminal_and_names_every_container(width):
    from pathlib import Path

    from sdqos.cli.render import plan_text
    from sdqos.loading.configdir import load_config
    from sdqos.plan.engine import build_plan

    examples = Path(__file__).resolve().parents[2] / "examples"
    cfg = load_config(examples, insecure=True)
    plan = build_plan(cfg.node, cfg.pods, cfg.vms, "v1")
    text = plan_text(plan, width=width)
    assert all(len(ln) <= width for ln in text.splitlines())
    assert "shop/web/nginx · oom_score_adj" in text and "shop/db (Guaranteed)" in text
    whole = plan_text(plan)
    assert max(len(ln) for ln in whole.splitlines()) > 120  # piped: nothing shortened
    assert "sdqos-podb3edc188_0213_5f84_afdc_caf4bbcd1698-nginx.scope  shop/web/nginx" in whole


@pytest.mark.parametrize("name,old,new,text", [
    ("MemoryLimit", 2**30, 12 * 2**30, "1 GiB → 12 GiB"),
    ("MemoryLimit", 20508827648, 20508827648 + 8 * 2**20, "19.10 GiB → 19.11 GiB"),
    ("MemoryLimit", 20508827648, 20508827648 + 4096, "19.100334 GiB → 19.100338 GiB"),
    ("MemoryMax", 2**40 + 1, 2**40 + 2, "1099511627777 B → 1099511627778 B"),
    ("CPUQuotaPerSecUSec", 500001, 500002, "50.00% CPU (500001) → 50.00% CPU (500002)"),
    ("CPUShares", 100, 1228, "100 shares → 1228 shares"),
])
def test_a_change_never_reads_the_same_on_both_sides(name, old, new, text):
    from sdqos.plan.properties import change

    assert change(name, old, new) == text


def test_kernel_file_changes_get_enough_digits_too():
    from sdqos.humanize import change

    assert change("memory.limit_in_bytes", 20508827648, 20508827648 + 2**23, kernel=True) == "19.10 GiB → 19.11 GiB"
    assert change("cpu.shares", 100, 1228, kernel=True) == "100 → 1228"


def test_a_drifted_unit_gets_one_line_more_live_to_planned():
    st = _status()
    st.rows[1].drift = {"CPUShares": [100, 1228]}
    st.rows[1].flags = ["drift"]
    for width in (80, 120, None):
        lines = render_plain(st, width).splitlines()
        i = next(i for i, ln in enumerate(lines) if "kubepods-burstable.slice" in ln)
        assert lines[i].split()[-1] == "drift"
        assert lines[i + 1] == "    ↳ drift (live → planned): CPUShares 100 shares → 1228 shares"


def test_the_node_lines_show_conditions_and_each_signal_against_its_thresholds():
    from sdqos.cli.status import node_lines

    node = {"conditions": {"MemoryPressure": True, "PIDPressure": False}, "signals": [
        {"signal": "memory.available", "available": 90 << 20, "capacity": 4 << 30, "thresholds": [
            {"amount": 100 << 20, "hard": True, "gracePeriodSeconds": 0.0, "met": True},
            {"amount": 1 << 30, "hard": False, "gracePeriodSeconds": 60.0, "met": True}]},
        {"signal": "allocatableMemory.available", "available": None, "capacity": None, "thresholds": []},
        {"signal": "pid.available", "available": 4000, "capacity": 4096, "thresholds": []},
    ]}
    assert node_lines(node) == [
        "node: MemoryPressure=True · PIDPressure=False",
        "  memory.available 90 MiB of 4 GiB: evicts at hard below 100 MiB (crossed), soft (60s) below 1 GiB (crossed)",
    ]
    assert node_lines(None) == []
