"""The runtime table (sdqos.reconcile.runtimes), pure: which row a scope name is, which scopes are a runtime's own, and that a runtime that could not
be asked leaves exactly its scopes alone. The rows against the real runtimes: test_podman_sandbox.py,
test_vms_sandbox.py, test_pressure_sandbox.py (eviction)."""

from __future__ import annotations

from sdqos.host.libvirt import Domain
from sdqos.host.machined import Machine
from sdqos.host.podman import PodmanContainer
from sdqos.reconcile import runtimes
from sdqos.reconcile.runtimes import Seen
from sdqos.reconcile.scopes import LiveScope

A = "a" * 64
LIBVIRT = "machine-qemu\\x2d3\\x2ddb\\x2d1.scope"


def scope(name: str, *pids: int, description: str = "") -> LiveScope:
    return LiveScope(name, "machine.slice", f"/machine.slice/{name}", list(pids), description)


def test_each_scope_name_is_tried_against_the_rows_in_order():
    assert runtimes.row_of(LIBVIRT).name == "libvirt"  # before machined's machine-*
    assert runtimes.row_of("machine-web.scope").name == "machined"
    assert runtimes.row_of(f"libpod-{A}.scope").name == "podman"
    assert runtimes.row_of(f"libpod-conmon-{A}.scope").name == "podman"
    assert runtimes.row_of("libpod-x.scope") is None  # not podman's name: matched by the other rules
    assert runtimes.row_of("sdqos-pod1234-nginx.scope") is None
    assert runtimes.row("libvirt").named_by(LIBVIRT) == "db-1"


def test_workloads_by_each_runtimes_record():
    infra = "b" * 64
    seen = Seen({
        "podman": {A: PodmanContainer(A, "shop_web_nginx", {"sdqos.io/managed": "true", "io.kubernetes.pod.uid": "u1",
                                                            "io.kubernetes.container.name": "nginx"}, "running"),
                   infra: PodmanContainer(infra, "p-infra", {}, "running", infra=True)},
        "libvirt": {"db-1": Domain("db-1", 4242, 2 << 30, 2, None)},
        "machined": [Machine("web", "container", "systemd-nspawn")],
    })
    w = seen.workload(scope(f"libpod-{A}.scope", 7))
    assert (w.runtime, w.name, w.pod_uid, w.container, w.managed) == ("podman", "shop_web_nginx", "u1", "nginx", True)
    assert w.scopes == (f"libpod-{A}.scope", f"libpod-conmon-{A}.scope")
    assert seen.helper(f"libpod-conmon-{A}.scope") and seen.helper(f"libpod-{infra}.scope")
    assert not seen.helper(f"libpod-{A}.scope")
    vm = seen.workload(scope("anything.scope", 4242))  # by its QEMU's PID, whatever the scope's name
    assert (vm.runtime, vm.name, vm.guest) == ("libvirt", "db-1", (2 << 30, 2))
    assert seen.describe(scope("machine-web.scope", 9)) == "container web (machined, registered by systemd-nspawn)"
    assert seen.describe(scope("machine-web.scope", 9, description="sdqos vm web (Guaranteed)")) is None
    scopes = {n: scope(n, 1) for n in (f"libpod-{A}.scope", f"libpod-conmon-{A}.scope", "machine-web.scope")}
    assert set(seen.managed(scopes)) == {f"libpod-{A}.scope", f"libpod-conmon-{A}.scope"}


def test_a_runtime_that_could_not_be_asked_leaves_only_its_own_scopes_alone():
    scopes = {n: scope(n, 1) for n in (f"libpod-{A}.scope", "machine-web.scope", "other.scope")}
    assert Seen({"podman": None, "libvirt": {}, "machined": []}).unsure(scopes) == {f"libpod-{A}.scope"}
    assert Seen({"podman": {}, "libvirt": {}, "machined": []}).unsure(scopes) == frozenset()
