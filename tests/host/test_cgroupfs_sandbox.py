"""cgroupfs.holds against what a real systemd makes the kernel hold: after a sync, every pod's and
container's cgroup files are, byte for byte, what :func:`sdqos.host.cgroupfs.rendered` says the
kernel prints for the planned values — the live read answers them without parsing — and a value
written behind systemd's back is still read and parsed as it is."""

from __future__ import annotations

import json
import sys

from sdqos import sandbox as sbx

from ..sbhelpers import cgroup_rel, copy_config, sync_json

WEB = "kubepods-burstable-podb3edc188_0213_5f84_afdc_caf4bbcd1698.slice"

# Inside the sandbox (its mount and cgroup namespaces: cgroupfs.available() holds there): each
# planned unit the live read checks in the kernel and that has a cgroup, as the live read checks it.
CHECK = r"""
import json, sys
from pathlib import Path
from sdqos.cli.app import load_planned
from sdqos.host import cgroupfs, facts
from sdqos.host.facts import detect_cgroup_mode
from sdqos.plan.properties import INFINITY, PERIOD_PROPERTY
assert cgroupfs.available()
mode = detect_cgroup_mode()
_, plan = load_planned(Path(sys.argv[1]), False, mode)
out = {}
for u in plan.units:
    if u.kind in ("node", "tier", "reserved", "machine"):
        continue
    check = dict(u.properties)
    check.setdefault(PERIOD_PROPERTY, INFINITY)
    want = cgroupfs.expected(check, mode, facts.page_size())
    cg = cgroupfs.cgroup_of(u.name, u.slice)
    raw = cgroupfs.rendered(want)
    have, held = cgroupfs.holds(cg, want), cgroupfs.read(cg, want)
    if held is None:  # a container's scope, made when it starts: no cgroup, as holds says too
        assert have is None, u.name
        continue
    out[u.name] = {"bytes": have is want, "same": have == held, "inPlace": held == want,
                   "rendered": all(r is not None for r in raw)}
print(json.dumps(out))
"""


def check(sb, config) -> dict:
    r = sbx.run(sb, [sys.executable, "-c", CHECK, str(config)], check=True)
    return json.loads(r.stdout)


def test_the_kernel_prints_what_rendered_says_and_a_value_behind_systemds_back_is_parsed(clean_sandbox, tmp_path):
    sb = clean_sandbox
    config = copy_config(tmp_path)
    sync_json(sb, config)
    seen = check(sb, config)
    assert WEB in seen and len(seen) >= 3
    for name, row in seen.items():  # every unit in place, answered from its bytes (none of v1's values is unrenderable)
        assert row == {"bytes": True, "same": True, "inPlace": True, "rendered": True}, name
    (sb.cgroup_path("cpu") / cgroup_rel(WEB) / "cpu.shares").write_text("77")  # behind systemd's back
    after = check(sb, config)
    assert after[WEB] == {"bytes": False, "same": True, "inPlace": False, "rendered": True}
    assert {n: r for n, r in after.items() if n != WEB} == {n: r for n, r in seen.items() if n != WEB}
    restored = sync_json(sb, config)
    assert [d["unit"] for d in restored["drift"]] == [WEB]
    assert check(sb, config)[WEB] == seen[WEB]
