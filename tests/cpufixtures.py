"""Set-up shared by the static CPU manager's sandbox tests (tests/reconcile/test_cpu_static_sandbox.py,
test_vm_cpus_sandbox.py, test_vm_cpus_libvirt_sandbox.py and those importing them): the skip mark,
the manifests, the VMs' config dir, and the wait for a container's one process. The node.yaml
writer and the CPU manager's state are in tests/sbhelpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .reconcile.test_scopes_sandbox import procs_of
from .sbhelpers import static_config, wait_for

needs_cpus_0_and_1 = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2 or not Path("/sys/devices/system/cpu/cpu1").exists(), reason="needs CPUs 0 and 1")


def pod_yaml(name: str, cpu: str, limit: bool) -> str:
    """Pod st/NAME of one container `app` requesting ``cpu`` and 16Mi (and as much as its limits)."""
    res = f'{{cpu: "{cpu}", memory: 16Mi}}'
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: st}}
spec:
  containers:
  - name: app
    resources: {{requests: {res}{", limits: " + res if limit else ""}}}
"""


def vm_yaml(name: str, dedicated: bool) -> str:
    """VirtualMachine NAME of 1 CPU and 64Mi (plus overhead), with spec.cpu.dedicatedCpuPlacement or not."""
    return f"""\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {{name: {name}}}
spec:
  resources:
    limits: {{cpu: "1", memory: 64Mi}}
  overhead: {{cpu: 100m, memory: 64Mi}}
{"  cpu: {dedicatedCpuPlacement: true}" if dedicated else ""}
"""


@pytest.fixture
def vm_cpu_config(tmp_path: Path) -> Path:
    """A config dir under the static policy (CPU 0 reserved) with vms/ and pod st/gu (Guaranteed, 1 CPU)."""
    d = static_config(tmp_path / "cfg")
    (d / "vms").mkdir()
    (d / "pods" / "gu.yaml").write_text(pod_yaml("gu", "1", True))
    return d


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def one_pid(sb, rel: str) -> int:
    """The container's one process once it runs the command (`sdqos run` is in the scope before
    it sets the affinity and execs)."""
    return wait_for(lambda: (lambda ps: ps[0] if len(ps) == 1 and _comm(ps[0]) == "sleep" else None)(procs_of(sb, rel)),
                    what=f"sleep alone in {rel}", timeout=90)
