"""``explain``'s eviction rank (reconcile/evict.py:rank_of, pure): a pod's place in kubelet's memory
and PID orders among the running pods and VMs, and why; no rank without usage."""

from __future__ import annotations

from sdqos.plan.engine import build_plan
from sdqos.reconcile.evict import Usage, rank_of

from ..helpers import node, pod_from

MI = 2**20


def pod(name: str, mem_request: str | None, priority: int | None = None):
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"memory": mem_request}} if mem_request else {}}]}
    if priority is not None:
        spec["priorityClassName"] = f"p{priority}"
    return pod_from({"metadata": {"name": name, "namespace": "t"}, "spec": spec},
                    classes={f"p{priority}": priority} if priority is not None else None)


PLAN = build_plan(node(), [pod("under", "512Mi"), pod("over", "64Mi"), pod("be", None, priority=10),
                           pod("idle", "64Mi")], cgroup="v1")
USAGE = {"t/under": Usage(100 * MI, 3), "t/over": Usage(200 * MI, 9), "t/be": Usage(50 * MI, 2)}


def orders(r: dict) -> list[tuple[str, int, int]]:
    return [(o["signal"], o["rank"], o["of"]) for o in r["orders"]]


def test_rank_follows_kubelets_orders_with_the_workloads_before_it():
    over = rank_of(PLAN, "t/over", USAGE, {})
    assert orders(over) == [("memory.available", 1, 3), ("pid.available", 1, 3)]
    assert over["exceedsRequest"] and over["usage"] == 200 * MI and over["memoryRequest"] == 64 * MI
    assert over["orders"][0]["why"].startswith("uses more than it requested, priority 0, usage above request 136 MiB")
    be = rank_of(PLAN, "t/be", USAGE, {})  # over its request of 0, but priority 10 after t/over
    assert orders(be) == [("memory.available", 2, 3), ("pid.available", 3, 3)]
    assert be["orders"][0]["why"].endswith("before it: t/over")
    under = rank_of(PLAN, "t/under", USAGE, {})
    assert orders(under) == [("memory.available", 3, 3), ("pid.available", 2, 3)]
    assert under["orders"][0]["why"].startswith("uses no more than it requested")


def test_no_rank_without_usage_and_why():
    idle = rank_of(PLAN, "t/idle", USAGE, {})
    assert idle["orders"] == [] and idle["usage"] is None and "not running" in idle["why"]
    unread = rank_of(PLAN, "t/over", None, None, "no memory controller at /sys/fs/cgroup")
    assert unread["orders"] == [] and unread["why"] == ("the rank needs usage, which could not be read "
                                                        "(no memory controller at /sys/fs/cgroup)")


def test_a_critical_pod_is_ranked_and_said_never_evicted():
    crit = pod("crit", None, priority=2000001000)
    plan = build_plan(node(), [crit, pod("over", "64Mi")], cgroup="v1")
    r = rank_of(plan, "t/crit", {"t/crit": Usage(10 * MI, 1), "t/over": Usage(200 * MI, 1)}, {})
    assert r["notEvictable"].startswith("critical pod") and orders(r)[0] == ("memory.available", 2, 2)


def test_eviction_counts_outlive_the_record_of_a_workload_that_ran_again(tmp_path):
    """The metrics' counter: evictions since boot, kept when a record goes (its pod ran again)."""
    from sdqos.cli import metrics as m
    from sdqos.reconcile import evict

    evict._save(tmp_path, {"pod:t/be": {"name": "t/be"}}, {"pod:t/be": {"memory.available": 2}, "vm:v": {"pid.available": 1}})
    assert evict.load_evicted(tmp_path) == {"pod:t/be": {"name": "t/be"}}
    evict._save(tmp_path, {}, evict.load_counts(tmp_path))
    assert evict.load_counts(tmp_path) == {"pod:t/be": {"memory.available": 2}, "vm:v": {"pid.available": 1}}
    text = m.render(None, {}, evict.load_counts(tmp_path))
    assert 'sdqos_evictions_total{kind="pod",pod="t/be",signal="memory.available"} 2' in text.splitlines()
    assert 'sdqos_evictions_total{kind="vm",vm="v",signal="pid.available"} 1' in text.splitlines()
    assert text.count("# TYPE sdqos_evictions_total counter") == 1


def test_vms_found_by_pid_file_are_measured_at_their_scope_and_only_in_machine_slice(tmp_path):
    """vm_cgroups: a pid-file VM's QEMU below its scope (libvirt's emulator sub-cgroup) counts at
    the scope; one running outside machine.slice is not ranked (sync warns about it)."""
    from sdqos.kube.model import CPU, MEMORY, VirtualMachine
    from sdqos.kube.quantity import parse_quantity
    from sdqos.plan.engine import build_plan
    from sdqos.reconcile.evict import vm_cgroups

    from ..helpers import node

    proc = tmp_path / "proc"
    for pid, path, guest in ((41, "/machine.slice/machine-qemu\\x2d3\\x2dinside.scope/libvirt/emulator", "inside"),
                             (42, "/system.slice/qemu-outside.service", "outside"),
                             (43, "/machine.slice/machine-qemu\\x2d4\\x2dother.scope/libvirt/emulator", "other")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(f"0::{path}\n")
        (proc / str(pid) / "cmdline").write_bytes(f"qemu-system-x86_64\0-name\0guest={guest}\0".encode())
    vms = []
    # "reused": its pid file names PID 43, now another guest's QEMU: neither measured nor stopped as it
    for name, pid in (("inside", 41), ("outside", 42), ("reused", 43)):
        (tmp_path / f"{name}.pid").write_text(f"{pid}\n")
        req = {CPU: parse_quantity("1"), MEMORY: parse_quantity("1Gi")}
        vms.append(VirtualMachine(name=name, requests=req, limits=req, overhead={}, pid_file=str(tmp_path / f"{name}.pid")))
    vms.append(VirtualMachine(name="named", requests={}, limits={}, overhead={}, scope="machine-named.scope"))
    plan = build_plan(node(), [], vms, cgroup="v2")
    assert vm_cgroups(plan, proc) == {"inside": "/machine.slice/machine-qemu\\x2d3\\x2dinside.scope",
                                      "named": "/machine.slice/machine-named.scope"}


def test_two_vms_found_in_one_scope_are_neither_ranked(tmp_path):
    """A pid-file VM (eviction: Allowed) whose PID runs in the scope another VM names: which VM runs
    there is unknown, so neither is ranked, and the Allowed one's eviction cannot stop the other."""
    from sdqos.kube.model import CPU, MEMORY, VirtualMachine
    from sdqos.kube.quantity import parse_quantity
    from sdqos.plan.engine import build_plan
    from sdqos.reconcile.evict import vm_cgroups

    from ..helpers import node

    proc = tmp_path / "proc"
    (proc / "44").mkdir(parents=True)
    (proc / "44" / "cgroup").write_text("0::/machine.slice/machine-db.scope\n")
    (proc / "44" / "cmdline").write_bytes(b"qemu-system-x86_64\0-name\0guest=pf\0")
    (tmp_path / "pf.pid").write_text("44\n")
    req = {CPU: parse_quantity("1"), MEMORY: parse_quantity("1Gi")}
    vms = [VirtualMachine(name="db", requests=req, limits=req, overhead={}, scope="machine-db.scope"),
           VirtualMachine(name="pf", requests=req, limits=req, overhead={}, pid_file=str(tmp_path / "pf.pid"),
                          eviction="Allowed"),
           VirtualMachine(name="web", requests=req, limits=req, overhead={}, scope="machine-web.scope")]
    plan = build_plan(node(), [], vms, cgroup="v2")
    assert vm_cgroups(plan, proc) == {"web": "/machine.slice/machine-web.scope"}
