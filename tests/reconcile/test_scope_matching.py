"""Which live scope is which container (sdqos.reconcile.scopes, .binding), pure: podman's labels
first, conmon never, the most specific sdqos.io/scopes glob whatever the order, and warnings for a
glob that matches several scopes or never decides."""

from __future__ import annotations

from sdqos.host.podman import PodmanContainer
from sdqos.plan.engine import build_plan
from sdqos.reconcile.binding import bind_scopes, machine_names
from sdqos.reconcile.runtimes import Seen
from sdqos.reconcile.scopes import LiveScope

from ..helpers import node, pod_from

A, B, C = "a" * 64, "b" * 64, "c" * 64


def plan_with(annotation: str | None = None):
    meta = {"name": "web", "namespace": "shop"}
    if annotation:
        meta["annotations"] = {"sdqos.io/scopes": annotation}
    pod = pod_from({"metadata": meta, "spec": {"containers": [
        {"name": "nginx", "resources": {"requests": {"cpu": "250m"}}},
        {"name": "sidecar", "resources": {"requests": {"cpu": "50m"}}}]}})
    return build_plan(node(), [pod], cgroup="v1")


def scope(plan, name):
    sl = plan.pods[0].slice
    return name, LiveScope(name, sl, f"/kubepods.slice/kubepods-burstable.slice/{sl}/{name}", [100])


def test_podman_labels_decide_and_conmon_is_never_a_container():
    plan = plan_with()
    uid = plan.pods[0].uid
    scopes = dict([scope(plan, f"libpod-{A}.scope"), scope(plan, f"libpod-conmon-{A}.scope"), scope(plan, f"libpod-{B}.scope")])
    containers = {A: PodmanContainer(A, "shop_web_sidecar", {"io.kubernetes.pod.uid": uid,
                                                             "io.kubernetes.container.name": "sidecar",
                                                             "sdqos.io/managed": "true"}, "running")}
    warnings: list[str] = []
    seen = Seen({"podman": containers})
    bindings, unmatched, _ = bind_scopes(plan, scopes, warnings, seen)
    assert str(bindings[f"libpod-{A}.scope"].owner) == "pod shop/web container sidecar"
    assert unmatched == [f"libpod-{B}.scope"]  # no labels: nothing says whose it is
    assert f"libpod-conmon-{A}.scope" not in bindings and f"libpod-conmon-{A}.scope" not in unmatched
    managed = seen.managed(scopes)
    assert {s: w.name for s, w in managed.items()} == {f"libpod-{A}.scope": "shop_web_sidecar",
                                                        f"libpod-conmon-{A}.scope": "shop_web_sidecar"}
    assert {w.runtime for w in managed.values()} == {"podman"}


def test_labels_of_another_pod_do_not_count():
    plan = plan_with()
    scopes = dict([scope(plan, f"libpod-{A}.scope")])
    containers = {A: PodmanContainer(A, "x", {"io.kubernetes.pod.uid": "someone-else",
                                              "io.kubernetes.container.name": "nginx"}, "running")}
    bindings, unmatched, _ = bind_scopes(plan, scopes, [], Seen({"podman": containers}))
    assert bindings == {} and unmatched == [f"libpod-{A}.scope"]


def test_the_most_specific_glob_wins_whatever_the_order():
    plan = plan_with(f"nginx=libpod-*.scope,sidecar=libpod-{B[:8]}*.scope")
    scopes = dict([scope(plan, f"libpod-{A}.scope"), scope(plan, f"libpod-{B}.scope")])
    warnings: list[str] = []
    bindings, _, _ = bind_scopes(plan, scopes, warnings)
    assert str(bindings[f"libpod-{A}.scope"].owner) == "pod shop/web container nginx"
    assert str(bindings[f"libpod-{B}.scope"].owner) == "pod shop/web container sidecar"
    assert warnings == []


def test_a_glob_matching_several_scopes_or_never_deciding_is_a_warning():
    plan = plan_with(f"nginx=libpod-*.scope,sidecar=libpod-{A}.scope")
    scopes = dict([scope(plan, f"libpod-{A}.scope"), scope(plan, f"libpod-{B}.scope"), scope(plan, f"libpod-{C}.scope")])
    warnings: list[str] = []
    bindings, _, _ = bind_scopes(plan, scopes, warnings)
    assert str(bindings[f"libpod-{A}.scope"].owner) == "pod shop/web container sidecar"
    assert warnings == [f"pod shop/web: sdqos.io/scopes nginx=libpod-*.scope matches 2 scopes "
                        f"(libpod-{B}.scope, libpod-{C}.scope); each gets nginx's values: make the glob specific"]
    plan = plan_with(f"nginx=libpod-*.scope,sidecar=libpod-{A}.scope")
    warnings = []
    bind_scopes(plan, dict([scope(plan, f"libpod-{A}.scope")]), warnings)
    assert warnings == [f"pod shop/web: sdqos.io/scopes nginx=libpod-*.scope is shadowed by a more specific entry "
                        f"for every scope it matches (libpod-{A}.scope)"]


def test_a_podman_pods_sub_slice_counts_as_its_pod_slice():
    plan = plan_with()
    pp = plan.pods[0]
    sub = pp.slice[: -len(".slice")] + f"-libpod_pod_{C}.slice"
    name = f"libpod-{A}.scope"
    scopes = {name: LiveScope(name, sub, f"/x/{sub}/{name}", [100])}
    containers = {A: PodmanContainer(A, "n", {"io.kubernetes.pod.uid": pp.uid, "io.kubernetes.container.name": "nginx"},
                                     "running")}
    bindings, unmatched, bound = bind_scopes(plan, scopes, [], Seen({"podman": containers}))
    assert str(bindings[name].owner) == "pod shop/web container nginx" and unmatched == []
    assert [u.slice for u in bound if u.name == name] == [sub]  # tuned where it is
    assert plan.unit(name) is None  # the plan is not edited: the bound unit is returned


def test_podman_containers_in_machine_slice_are_named_as_containers():
    plan = build_plan(node(), [], [], cgroup="v1")
    name = f"libpod-{A}.scope"
    scopes = {name: LiveScope(name, "machine.slice", f"/machine.slice/{name}", [100]),
              f"libpod-conmon-{A}.scope": LiveScope(f"libpod-conmon-{A}.scope", "machine.slice", "/m", [101])}
    warnings: list[str] = []
    containers = {A: PodmanContainer(A, "web1", {}, "running")}
    seen = Seen({"podman": containers})
    bind_scopes(plan, scopes, warnings, seen, names=machine_names(scopes, seen))
    assert warnings == [f"{name} in machine.slice is podman container web1, not a VM: left running, untouched, counted in the node budget "
                        "(run it in a pod slice with `sdqos podman start`, or podman's --cgroup-parent)"]


def test_a_glob_match_and_a_scope_in_machine_slice_in_one_pass():
    """The scopes a glob matched once shadowed the names of machine.slice's scopes (a crash)."""
    plan = plan_with("nginx=libpod-*.scope")
    other = f"libpod-{B}.scope"
    scopes = dict([scope(plan, f"libpod-{A}.scope")])
    scopes[other] = LiveScope(other, "machine.slice", f"/machine.slice/{other}", [100])
    warnings: list[str] = []
    bindings, _, _ = bind_scopes(plan, scopes, warnings, Seen(), names={other: "podman container web1"})
    assert str(bindings[f"libpod-{A}.scope"].owner) == "pod shop/web container nginx"
    assert warnings == [f"{other} in machine.slice is podman container web1, not a VM: left running, untouched, counted "
                        "in the node budget (run it in a pod slice with `sdqos podman start`, or podman's --cgroup-parent)"]


def test_a_vm_found_in_another_vms_scope_is_not_bound_as_it(tmp_path):
    """A pid-file VM whose PID runs in the scope another VM names: one scope runs one VM, so the
    scope is tuned as the VM that names it, never as the other too (nor stopped as it)."""
    import os

    from sdqos.kube.model import CPU, MEMORY, VirtualMachine
    from sdqos.kube.quantity import parse_quantity

    pid_file = tmp_path / "pf.pid"
    pid_file.write_text(f"{os.getpid()}\n")  # a real process, started before the file was written
    req = {CPU: parse_quantity("1"), MEMORY: parse_quantity("1Gi")}
    vms = [VirtualMachine(name="db", requests=req, limits=req, overhead={}, scope="machine-db.scope"),
           VirtualMachine(name="pf", requests=req, limits=req, overhead={}, pid_file=str(pid_file), eviction="Allowed")]
    plan = build_plan(node(), [], vms, cgroup="v1")
    scopes = {"machine-db.scope": LiveScope("machine-db.scope", "machine.slice", "/machine.slice/machine-db.scope",
                                            [os.getpid()])}
    warnings: list[str] = []
    bindings, _, _ = bind_scopes(plan, scopes, warnings)
    assert {n: str(b.owner) for n, b in bindings.items()} == {"machine-db.scope": "vm db"}
    assert ("VM pf is found in machine-db.scope, which is VM db's: not tuned, counted or stopped as pf (one scope "
            "runs one VM)") in warnings, warnings
