"""adopt's owner check: whose a process is, by the unit it runs in. Scopes of podman, libvirt and
machined are known through the runtime table (reconcile/runtimes: the row that claims the name),
never by a second list of name prefixes; others (docker, containerd, CRI-O) by name. The process's
unit comes from /proc (procfs.unit_of), given here; the real refusals are in
test_ownership_sandbox.py."""

from __future__ import annotations

import pytest

from sdqos.host import procfs
from sdqos.kube.naming import libvirt_scope, machine_scope, podman_conmon_scope, podman_scope
from sdqos.plan.engine import build_plan
from sdqos.reconcile import launch, runtimes

from ..helpers import node, pod_from

CID = "a" * 64


def target():
    p = pod_from({"metadata": {"name": "web", "namespace": "shop"},
                  "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}]}})
    return launch.container_target(build_plan(node(), [p], cgroup="v1"), "shop/web", "app")


@pytest.mark.parametrize("unit, who", [
    (podman_scope(CID), "podman"),
    (podman_conmon_scope(CID), "podman"),
    (libvirt_scope(3, "db"), "libvirt"),
    (machine_scope("vm1"), "machined"),
])
def test_a_runtimes_scope_is_named_by_its_row_and_force_may_take_it(monkeypatch, unit, who):
    assert runtimes.row_of(unit) is not None and runtimes.row_of(unit).name == who
    monkeypatch.setattr(procfs, "unit_of", lambda pid: (unit, f"/machine.slice/{unit}"))
    assert launch.owner_of(4242, target()) == (f"{unit} ({who})", True)


def test_other_owners_by_name_and_the_target_itself_is_free(monkeypatch):
    t = target()
    cases = {"docker-" + CID + ".scope": (f"docker-{CID}.scope (docker)", True),
             "cron.service": ("cron.service (a service: systemd manages its processes)", True),
             "init.scope": ("init.scope (the service manager's own)", False),
             "session-3.scope": None, t.unit.name: None}
    for unit, want in cases.items():
        monkeypatch.setattr(procfs, "unit_of", lambda pid, u=unit: (u, f"/system.slice/{u}"))
        assert launch.owner_of(1, t) == want, unit
    other = launch.container_target(build_plan(node(), [pod_from({
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"containers": [{"name": "x", "resources": {"requests": {"cpu": "1"}}}]}})], cgroup="v1"),
        "shop/db", "x").unit.name
    monkeypatch.setattr(procfs, "unit_of", lambda pid: (other, f"/kubepods.slice/{other}"))
    assert launch.owner_of(1, t) == (f"{other} (another container's scope)", True)
