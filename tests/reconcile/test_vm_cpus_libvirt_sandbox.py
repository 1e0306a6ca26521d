"""A VM with spec.cpu.dedicatedCpuPlacement that libvirt runs (declared in vms/ with its libvirt
domain, found by a sync), under cpuManagerPolicy static on cgroup v1: real libvirtd and qemu in the
sandbox (started as tests/reconcile/test_vms_sandbox.py starts libvirt domains), the kernel's record
of each qemu thread's CPUs (/proc/PID/task/*/status Cpus_allowed_list) and the state file. node.yaml
reserves CPU 0: the sync that finds the domain gives it CPU 1 (keyed by the VM's uid, container
"compute"), a Guaranteed 1-CPU pod is then refused, and the sync after the domain is destroyed gives
the CPU back."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdqos.kube.manifests import stable_uid

from .. import vmtools as vm
from ..cpufixtures import needs_cpus_0_and_1, vm_cpu_config, vm_yaml  # noqa: F401 (fixture)
from ..sbhelpers import active_state, cpu_state, forget_cpu_state, sdqos_in, sync_json, wait_for
from .test_vm_cpus_sandbox import _threads_cpus

pytestmark = needs_cpus_0_and_1

LV_UID = stable_uid("VirtualMachine", "lv")


@pytest.fixture
def lv_cpu_sandbox(lv_sandbox):
    """lv_sandbox (libvirtd and machined, tests/conftest.py) with no CPU manager state before and
    after (a VM's CPUs are given back only by a sync after it is gone)."""
    forget_cpu_state(lv_sandbox)
    yield lv_sandbox
    forget_cpu_state(lv_sandbox)


@pytest.fixture
def config(vm_cpu_config: Path) -> Path:
    (vm_cpu_config / "vms" / "lv.yaml").write_text(vm_yaml("lv", True) + "  libvirt: {domain: lvded}\n")
    return vm_cpu_config


def test_a_dedicated_libvirt_vm_gets_cpu_1_at_sync_and_gives_it_back_when_destroyed(lv_cpu_sandbox, config):
    sb = lv_cpu_sandbox
    dom = vm.libvirt_start_domain(sb, "lvded")
    try:
        host = vm.host_pid(sb, dom.inner_pid)
        assert host is not None
        assert set(_threads_cpus(host).values()) != {"1"}  # libvirt started it on every CPU
        report = sync_json(sb, config)
        assert report["errors"] == [], report
        assert not any("dedicatedCpuPlacement" in w for w in report["warnings"]), report["warnings"]
        threads = _threads_cpus(host)
        assert len(threads) > 1 and set(threads.values()) == {"1"}, threads  # every qemu thread: CPU 1
        st = cpu_state(sb)
        assert st["defaultCpuSet"] == "0" and st["entries"] == {LV_UID: {"compute": "1"}}, st

        r = sdqos_in(sb, "run", "--config", str(config), "st/gu", "app", "--", "true")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "pod st/gu: container app needs 1 exclusive CPUs (cpuManagerPolicy " \
            "static), CPUs free: 0 (none)" in r.stderr, r.stderr

        again = sync_json(sb, config)  # kept while the domain runs
        assert again["errors"] == [] and cpu_state(sb)["entries"] == {LV_UID: {"compute": "1"}}
        assert set(_threads_cpus(host).values()) == {"1"}

        vm.libvirt_destroy_domain(sb, "lvded")
        wait_for(lambda: active_state(sb, dom.scope) in ("inactive", "failed", ""), f"{dom.scope} gone", timeout=60)
        sync_json(sb, config)
        st = cpu_state(sb)
        assert st.get("entries") in ({}, None) and st["defaultCpuSet"] == "0-1", st  # the pool grew back
    finally:
        vm.libvirt_destroy_domain(sb, "lvded")


def test_adopt_vm_of_a_dedicated_vm_allocates_its_cpu_at_once(lv_cpu_sandbox, config):
    """`sdqos adopt --vm` of a dedicated VM's qemu started outside sdqos (as test_vms_sandbox's adopt
    tests start one): its CPU is allocated and set on every qemu thread by adopt, before any sync."""
    sb = lv_cpu_sandbox
    (config / "vms" / "lv.yaml").unlink()
    (config / "vms" / "ad.yaml").write_text(vm_yaml("ad", True))
    ad, ad_pid = vm.start_qemu(sb, "ad")
    try:
        host = vm.host_pid(sb, ad_pid)
        assert host is not None
        r = sdqos_in(sb, "adopt", "--config", str(config), "--vm", "ad", str(ad_pid))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "created machine-ad.scope with 1 process(es) of vm ad"
        st = cpu_state(sb)  # no sync yet
        assert st["defaultCpuSet"] == "0" and st["entries"] == {stable_uid("VirtualMachine", "ad"): {"compute": "1"}}, st
        threads = _threads_cpus(host)
        assert len(threads) > 1 and set(threads.values()) == {"1"}, threads
        r = sdqos_in(sb, "run", "--config", str(config), "st/gu", "app", "--", "true")
        assert r.returncode == 2 and "CPUs free: 0 (none)" in r.stderr, (r.stdout, r.stderr)
    finally:
        vm.stop_qemu(ad)
