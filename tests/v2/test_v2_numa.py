"""kubelet's topology manager with the static CPU manager on a real machine with two NUMA nodes: a
qemu guest of two sockets, each its own NUMA node (node0 = CPUs 0-1, node1 = CPUs 2-3; guest.py
``numa=True``), booted on cgroup v1 so the static policy sets each container's CPUs as its
processes' affinity, which the kernel shows in /proc/PID/status (Cpus_allowed_list).

With reservedSystemCPUs "0" and topologyManagerPolicy single-numa-node: a Guaranteed 3-CPU pod
cannot have its CPUs on one NUMA node and is refused in one line (kubelet's TopologyAffinityError);
a Guaranteed 1-CPU pod gets CPU 1 (node0, the narrowest preferred hint); a Guaranteed 2-CPU pod then
gets both CPUs of node1. Under best-effort the 3-CPU pod is admitted (CPUs 1-3). A pod of two 1-CPU
containers: node0 then node1 with topologyManagerScope container, both on node1 with pod.
memoryManagerPolicy Static is refused on this host, with its reason."""

from __future__ import annotations

import json

import pytest

from ..sbhelpers import static_node
from . import guest as g
from .conftest import _require_prerequisites
from .suites import one_suite_name

pytestmark = pytest.mark.v2

CONFIG = "/root/numa"


def _pod(name: str, cpus: int) -> str:
    res = f'{{cpu: "{cpus}", memory: 32Mi}}'
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
    resources: {{requests: {res}, limits: {res}}}
"""


@pytest.fixture(scope="module")
def numa_guest(sdqos_wheel_dir):
    _require_prerequisites()  # a skip, or with SDQOS_REQUIRE_V2=1 a failure, as the shared guests
    guest = g.Guest.boot(one_suite_name("bookworm"), share=sdqos_wheel_dir, numa=True)
    try:
        guest.check("pip install -q --no-index --no-deps /share/sdqos-*.whl", timeout=300)
        yield guest
    finally:
        guest.close()


DUO = """\
apiVersion: v1
kind: Pod
metadata: {name: duo, namespace: t}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "1", memory: 32Mi}, limits: {cpu: "1", memory: 32Mi}}
  - name: b
    resources: {requests: {cpu: "1", memory: 32Mi}, limits: {cpu: "1", memory: 32Mi}}
"""


def _configure(guest, policy: str, node_extra: str = "") -> None:
    """A fresh config dir and nothing of sdqos's running (processes, kubepods tree, run dir)."""
    guest.run("pkill -f '[s]leep 100000'; systemctl stop kubepods.slice; systemctl reset-failed; rm -rf /run/sdqos",
              timeout=120)
    pods = "".join(f"cat > {CONFIG}/pods/{n}.yaml <<'X'\n{_pod(n, c)}X\n" for n, c in (("one", 1), ("two", 2), ("big", 3)))
    pods += f"cat > {CONFIG}/pods/duo.yaml <<'X'\n{DUO}X\n"
    guest.check(f"rm -rf {CONFIG} && mkdir -p {CONFIG}/pods && cat > {CONFIG}/node.yaml <<'X'\n"
                f"{static_node(capacity=None, topologyManagerPolicy=policy)}{node_extra}X\n{pods}")


def _cpus_allowed(guest, pid: int) -> str:
    out = guest.check(f"grep Cpus_allowed_list /proc/{pid}/status")
    return out.split(":", 1)[1].strip()


def _entries(guest) -> dict:
    return json.loads(guest.check("cat /run/sdqos/cpu_manager_state")).get("entries") or {}


def test_the_guest_has_two_numa_nodes(numa_guest):
    nodes = numa_guest.check("ls -d /sys/devices/system/node/node*").split()
    assert nodes == ["/sys/devices/system/node/node0", "/sys/devices/system/node/node1"]
    assert numa_guest.check("cat /sys/devices/system/node/node0/cpulist /sys/devices/system/node/node1/cpulist").split() \
        == ["0-1", "2-3"]


def test_single_numa_node_aligns_and_refuses(numa_guest):
    guest = numa_guest
    _configure(guest, "single-numa-node")
    r = guest.run(f"sdqos run --config {CONFIG} t/big app -- true", timeout=180)
    assert r.rc == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    assert ("pod t/big: container app: TopologyAffinityError: Resources cannot be allocated with Topology locality "
            "(topologyManagerPolicy single-numa-node, scope container: 3 exclusive CPUs needed; free CPUs by NUMA node: "
            'node0: "1", node1: "2-3")') in r.stderr, r.stderr
    assert guest.run("test -e /run/sdqos/cpu_manager_state").rc != 0 or _entries(guest) == {}

    one = guest.sdqos_run(f"--config {CONFIG} t/one app -- sleep 100000")
    assert _cpus_allowed(guest, one) == "1"  # node0's free CPU: the narrowest preferred hint, 01
    two = guest.sdqos_run(f"--config {CONFIG} t/two app -- sleep 100000")
    assert _cpus_allowed(guest, two) == "2-3"  # both CPUs of node1
    assert sorted(c["app"] for c in _entries(guest).values()) == ["1", "2-3"]


def test_best_effort_admits_what_cannot_be_aligned(numa_guest):
    guest = numa_guest
    _configure(guest, "best-effort")
    big = guest.sdqos_run(f"--config {CONFIG} t/big app -- sleep 100000")
    assert _cpus_allowed(guest, big) == "1-3"
    assert [c["app"] for c in _entries(guest).values()] == ["1-3"]


@pytest.mark.parametrize("scope,expect", [("container", {"a": "1", "b": "2"}), ("pod", {"a": "2", "b": "3"})])
def test_scope_container_aligns_each_container_scope_pod_the_whole_pod(numa_guest, scope, expect):
    """Two 1-CPU containers: with the container scope each gets the narrowest free node (a: node0's CPU 1,
    then b: node1); with the pod scope the pod's 2 CPUs must fit one node: node1 for both."""
    guest = numa_guest
    _configure(guest, "single-numa-node", f"topologyManagerScope: {scope}\n")
    a = guest.sdqos_run(f"--config {CONFIG} t/duo a -- sleep 100000")
    assert _cpus_allowed(guest, a) == expect["a"]
    assert list(_entries(guest).values()) == [expect]  # admission allocated the whole pod


def test_memory_manager_static_is_refused_with_its_reason(numa_guest):
    guest = numa_guest
    _configure(guest, "single-numa-node", 'memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: '
                                          '{memory: 100Mi}}]\nsystemReserved: {memory: 100Mi}\nevictionHard: '
                                          '{memory.available: "0"}\n')
    r = guest.run(f"sdqos plan --config {CONFIG}", timeout=180)
    assert r.rc == 2, (r.stdout, r.stderr)
    assert "memoryManagerPolicy: Static: not built for a host with 2 NUMA nodes" in r.stderr, r.stderr
    assert "reservedMemory per NUMA node" in r.stderr and "AllowedMemoryNodes=" in r.stderr, r.stderr
    assert "topologyManagerPolicy" not in r.stderr, r.stderr
