"""live_patterns: the one listing's globs cover the tree and every container scope; only the
plan's other units are named one by one (pure; the listing itself is tested in the sandbox)."""

from __future__ import annotations

import dataclasses

from sdqos.kube.naming import in_tree, parse_container_scope
from sdqos.plan.engine import build_plan
from sdqos.reconcile.live import KUBELET, live_patterns

from ..helpers import node, pod_from


def _pod(name: str, containers: list[str]):
    return pod_from({"metadata": {"name": name, "namespace": "default"},
                     "spec": {"containers": [{"name": c, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
                                             for c in containers]}})


def test_named_units_are_exactly_those_outside_the_globs():
    plan = build_plan(node(), [_pod("a", ["web", "side-car", "x-y"]), _pod("b", ["db"])], cgroup="v1")
    scopes = [u for u in plan.units if u.kind == "container"]
    assert len(scopes) == 4 and all(parse_container_scope(u.name) for u in scopes)
    outside = dataclasses.replace(plan.units[0], name="system-reserved.slice", slice="-.slice", kind="reserved")
    vm = dataclasses.replace(plan.units[0], name="machine-qemu\\x2d1\\x2dvm.scope", slice="machine.slice", kind="vm")
    plan = dataclasses.replace(plan, units=[*plan.units, outside, vm])
    patterns = live_patterns(plan)
    # what the globs leave out is named, nothing else: the reference is the unit-by-unit parse
    want = sorted({u.name for u in plan.units
                   if not (in_tree(u.name, plan.root_slice) or parse_container_scope(u.name) is not None)})
    assert want == ["machine-qemu\\x2d1\\x2dvm.scope", "system-reserved.slice"]
    assert patterns[-len(want):] == want and KUBELET in patterns
    assert not any(u.name in patterns for u in scopes)
