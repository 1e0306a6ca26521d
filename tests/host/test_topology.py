"""sdqos.host.topology reads fake /sys trees made in temp dirs (nothing of the host is touched),
and the host's own /sys read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdqos.errors import HostError
from sdqos.host.topology import read_numa_info, read_topology
from sdqos.kube.cputopology import CPUInfo


def fake_sys(root: Path, online: str, cpus: dict[int, tuple[int, int, str]], nodes: dict[int, str] | None,
             die: bool = True) -> Path:
    """cpus: cpu → (physical_package_id, core_id, thread_siblings_list)."""
    base = root / "sys/devices/system"
    (base / "cpu").mkdir(parents=True)
    (base / "cpu/online").write_text(online + "\n")
    for cpu, (pkg, core, siblings) in cpus.items():
        top = base / f"cpu/cpu{cpu}/topology"
        top.mkdir(parents=True)
        (top / "physical_package_id").write_text(f"{pkg}\n")
        (top / "core_id").write_text(f"{core}\n")
        (top / "thread_siblings_list").write_text(siblings + "\n")
        if die:
            (top / "die_id").write_text("0\n")
    for node, cpulist in (nodes or {}).items():
        (base / f"node/node{node}").mkdir(parents=True)
        (base / f"node/node{node}/cpulist").write_text(cpulist + "\n")
    if nodes is not None:
        (base / "node/possible").write_text("0-1\n")  # a file beside the nodeN dirs: not a node
    return root


def test_dual_socket_ht_as_kubelet_numbers_it(tmp_path):
    """2 sockets × 2 cores × 2 threads, siblings N and N+4 (as Linux numbers them); sysfs core_id
    repeats across sockets (0, 1 on each), kubelet's core id is the lowest sibling."""
    cpus = {}
    for cpu in range(8):
        socket = (cpu % 4) // 2
        first = cpu % 4
        cpus[cpu] = (socket, first % 2, f"{first},{first + 4}")
    root = fake_sys(tmp_path, "0-7", cpus, {0: "0-1,4-5", 1: "2-3,6-7"})
    t = read_topology(root)
    assert (t.num_cpus, t.num_cores, t.num_sockets, t.num_numa_nodes) == (8, 4, 2, 2)
    assert t.cpus_per_core() == 2
    assert t.details[6] == CPUInfo(numa_node=1, socket=1, core=2, die=0)
    assert t.details.cpus_in_cores(3) == {3, 7}
    assert t.details.cpus_in_numa_nodes(0) == {0, 1, 4, 5}


def test_no_numa_dir_and_an_offline_cpu(tmp_path):
    """No /sys/devices/system/node (a kernel without NUMA): every CPU on node 0; CPU 3 offline
    (not in `online`, its sibling list still names it): it is not counted."""
    cpus = {0: (0, 0, "0,2"), 1: (0, 1, "1,3"), 2: (0, 0, "0,2")}
    t = read_topology(fake_sys(tmp_path, "0-2", cpus, None, die=False))
    assert t.num_cpus == 3 and t.num_numa_nodes == 1 and t.details[1] == CPUInfo(0, 0, 1, None)
    assert t.details.cpus_in_cores(1) == {1}


def test_unreadable_or_malformed_files_name_the_file(tmp_path):
    root = fake_sys(tmp_path, "0-1", {0: (0, 0, "0")}, None)
    with pytest.raises(HostError, match="cpu1/topology/physical_package_id"):
        read_topology(root)
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-x\n")
    with pytest.raises(HostError, match="cpu/online"):
        read_topology(root)
    with pytest.raises(HostError, match="cpu/online"):
        read_topology(tmp_path / "nowhere")


def test_this_hosts_topology_matches_proc_and_sysconf():
    import os

    online = Path("/sys/devices/system/cpu/online")
    if not online.exists():
        pytest.skip("no /sys")
    t = read_topology("/")
    assert os.sched_getaffinity(0) <= t.details.cpus()
    assert t.num_cpus == os.sysconf("SC_NPROCESSORS_ONLN")
    assert t.num_cores >= 1 and t.num_sockets >= 1 and t.num_numa_nodes >= 1


def test_numa_nodes_and_their_distances(tmp_path):
    """numa_info.go: the nodeN directories and each one's distance row; none shown: node 0 alone."""
    root = fake_sys(tmp_path, "0-3", {c: (c // 2, c % 2, str(c)) for c in range(4)}, {0: "0-1", 1: "2-3"})
    for node, row in ((0, "10 20"), (1, "20 10")):
        (root / f"sys/devices/system/node/node{node}/distance").write_text(row + "\n")
    info = read_numa_info(root)
    assert info.nodes == (0, 1) and info.distances == {0: (10, 20), 1: (20, 10)}
    assert read_numa_info(tmp_path / "nothing").nodes == (0,)
    (root / "sys/devices/system/node/node1/distance").write_text("20 x\n")
    with pytest.raises(HostError, match="node1/distance"):
        read_numa_info(root)


@pytest.mark.skipif(not Path("/sys/devices/system/node/node0").is_dir(), reason="no NUMA nodes shown")
def test_this_hosts_numa_nodes():
    info = read_numa_info("/")
    assert 0 in info.nodes and all(len(info.distances[n]) > max(info.nodes) for n in info.distances)
