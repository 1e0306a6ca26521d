"""explain's words for where exclusive CPUs lie (sdqos.kube.cputopology.describe), on kubelet's
own test topologies (tests/k8s_cases/cpumanager_cases.py)."""

import pytest

from sdqos.kube.cputopology import describe

from .test_cpumanager import topo as topology


@pytest.mark.parametrize("topo, cpus, words", [
    ("topoSingleSocketHT", {1, 5}, "whole core 1"),
    ("topoSingleSocketHT", {1}, "core 1 (1 of 2 threads)"),
    ("topoSingleSocketHT", set(range(8)), "whole socket 0"),
    ("topoSingleSocketHT", {0, 4, 2, 6}, "whole cores 0, 2"),
    ("topoSingleSocketHT", {0, 4, 1}, "whole core 0, core 1 (1 of 2 threads)"),
    ("topoDualSocketHT", {0, 2, 4, 6, 8, 10, 1, 7}, "whole socket 0, whole core 1"),
    ("topoDualSocketHT", {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}, "whole sockets 0, 1"),
    ("topoDualSocketNoHT", {4, 5}, "whole cores 4, 5"),
    ("topoSingleSocketHT", {3, 99, 100}, "core 3 (1 of 2 threads), CPUs 99-100 not in the host's topology"),
    ("topoSingleSocketHT", set(), ""),
])
def test_describe(topo, cpus, words):
    assert describe(cpus, topology(topo)) == words
