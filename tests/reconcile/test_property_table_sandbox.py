"""The property table (sdqos/plan/properties.py) against the real systemd and kernel: after a sync,
every owned property of every planned slice reads back from its kernel file through the table's
conversion as the value systemd holds (and the plan wanted), the files hold exactly what the table
predicts from systemd's values, and each row's D-Bus signature is the one systemd reports."""

from __future__ import annotations

import pytest

from sdqos import sandbox as sbx
from sdqos.host import cgroupfs
from sdqos.host.systemd import unit_path
from sdqos.plan import properties as P

from ..sbhelpers import cgroup_rel, copy_config, plan_json, sync_json

PAGE = 4096


def _typed(sb: sbx.Sandbox, unit: str, names: list[str]) -> dict[str, tuple[str, str]]:
    """name → (D-Bus signature, value) as systemd holds them (busctl prints ``t 7168``)."""
    iface = "org.freedesktop.systemd1." + unit.rsplit(".", 1)[1].capitalize()
    r = sbx.run(sb, ["busctl", "get-property", "org.freedesktop.systemd1", unit_path(unit), iface, *names], check=True)
    lines = r.stdout.splitlines()
    assert len(lines) == len(names), r.stdout
    return {n: (line.split()[0], line.split(maxsplit=1)[1]) for n, line in zip(names, lines)}


def _held(sb: sbx.Sandbox, rel: str, files: tuple[str, ...]) -> dict[str, object]:
    """What the kernel holds in a unit's files (names as the table gives them: v1 ``controller/file``)."""
    out = {}
    for f in files:
        controller, _, name = f.rpartition("/")
        path = sb.cgroup_path(controller or "unified") / rel / name
        out[f] = cgroupfs._parse(f, path.read_text())
    return out


@pytest.mark.parametrize("period", ["100ms", "50ms"])
def test_every_owned_property_reads_back_from_its_kernel_file_through_the_table(clean_sandbox, tmp_path, period):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    node = config / "node.yaml"
    node.write_text(node.read_text().replace("cpuCFSQuotaPeriod: 100ms", f"cpuCFSQuotaPeriod: {period}"))
    report = sync_json(sb, config)
    assert report["errors"] == []
    plan = plan_json(config)
    cgroup = plan["cgroup"]
    names = list(P.owned(cgroup))
    slices = [u for u in plan["units"] if u["name"].endswith(".slice") and u.get("kind") != "reserved"]
    assert any(u["kind"] == "pod" for u in slices) and any(
        u["properties"]["CPUQuotaPerSecUSec"] != P.INFINITY for u in slices), "the example has pods with a quota"
    checked = set()
    for u in slices:
        name, rel = u["name"], cgroup_rel(u["name"])
        typed = _typed(sb, name, names)
        systemd = {n: int(v) for n, (_, v) in typed.items()}
        for prop in names:
            row = P.BY_NAME[prop]
            assert typed[prop][0] == row.signature, (name, prop, typed[prop])
            assert systemd[prop] == P.planned_value(u["properties"], prop), (name, prop)
            k = row.kernel[cgroup]
            if k is None:  # (the period: in the quota's files, compared with them below)
                continue
            held = _held(sb, rel, k.files)
            back = k.from_files(held)
            assert back == systemd[prop], f"{name}: {prop} reads back {back} from {held}, systemd holds {systemd[prop]}"
            assert _same(k.to_files(systemd[prop], systemd, PAGE), held), (name, prop, held)
            checked.add(prop)
        want = cgroupfs.expected(systemd, cgroup, PAGE)  # the whole unit at once, as sync's warm path
        assert want is not None and _same(want, _held(sb, rel, tuple(want))), name
    assert checked == {n for n in names if P.BY_NAME[n].kernel[cgroup] is not None}
    if period == "50ms":
        assert any(u["properties"].get(P.PERIOD_PROPERTY) == 50_000 for u in slices)


def _same(want: dict[str, object], held: dict[str, object]) -> bool:
    """The kernel holds what the table predicts (cpu.max's period: any, where systemd leaves it)."""
    def one(w: object, h: object) -> bool:
        if isinstance(w, tuple) and w[1] is cgroupfs.ANY_PERIOD:
            return isinstance(h, tuple) and h[0] == w[0]
        return h == w

    return set(want) == set(held) and all(one(w, held[f]) for f, w in want.items())
