"""The state file codec (sdqos/kube/cpumanager_state.py) against checkpoints real kubelets wrote,
and kubelet's restore errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdqos.errors import CPUManagerStateError
from sdqos.kube import cpumanager_state as cs
from sdqos.kube.cpumanager import CPUManagerState
from sdqos.kube.cpuset import CPUSet, parse

# Files kubelets wrote, quoted in public material (the index ids of the pages quoting them).
REAL_V2 = [
    # a test fixture "Taken from a real kubelet v1.34 checkpoint" (idx#58466985700)
    '{"policyName":"static","defaultCpuSet":"0-1,6-11","entries":{"4aec46af-22b7-4e26-babb-d15383ac9151":'
    '{"mysqld":"2-3"},"60008d73-6f6f-4467-96c5-cd0a1eeadf23":{"mysqld2":"4-5"}},"checksum":2764424633}',
    # KEP-4540 strict-cpu-reservation, reserved and not (idx#1626629267, idx#51772160598)
    '{"policyName":"static","defaultCpuSet":"0-63","checksum":1058907510}',
    '{"policyName":"static","defaultCpuSet":"2-15,17-31,34-47,49-63","checksum":4141502832}',
    '{"policyName":"static","defaultCpuSet":"0-79","checksum":1241370203}',
    '{"policyName":"static","defaultCpuSet":"2-19,22-39,42-59,62-79","checksum":3758876046}',
    # a cloud vendor's docs (idx#37433034365), a topology-manager write-up (idx#10467208751)
    '{"policyName":"static","defaultCpuSet":"0,10-15,25-31","entries":{"777870b5-c64f-42f5-9296-688b9dc212ba":'
    '{"container-1":"16-24"},"fb15e10a-b6a5-4aaa-8fcd-76c1aa64e6fd":{"container-1":"1-9"}},"checksum":318470969}',
    '{"policyName":"static","defaultCpuSet":"0-1,6-13,18-23","entries":{"28c11c89-3493-4972-bb67-7090b9d75e0d":'
    '{"mytestclient":"2-3,14-15","mytestclient2":"4-5,16-17"}},"checksum":1684933537}',
    # the none policy's file, seen on every kubelet node
    '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}',
]
# an old kubelet's v1 file (entries by container ID; here none) (idx#19076858636)
REAL_V1_EMPTY = '{"policyName":"none","defaultCpuSet":"","checksum":3242152201}'


@pytest.mark.parametrize("text", REAL_V2)
def test_real_checkpoints_decode_and_encode_byte_for_byte(text):
    policy = json.loads(text)["policyName"]
    state = cs.decode(text, policy)
    assert cs.encode(state) == text.encode()


def test_decoded_values():
    state = cs.decode(REAL_V2[0], "static")
    assert state.default_cpuset == parse("0-1,6-11")
    assert state.get("60008d73-6f6f-4467-96c5-cd0a1eeadf23", "mysqld2") == CPUSet.of(4, 5)


def test_a_changed_byte_is_a_corrupt_checkpoint():
    tampered = REAL_V2[0].replace('"2-3"', '"2-4"')
    with pytest.raises(CPUManagerStateError, match="checkpoint is corrupted"):
        cs.decode(tampered, "static")


def test_checksum_zero_is_accepted_unchecked():
    state = cs.decode('{"policyName":"static","defaultCpuSet":"0-3","checksum":0}', "static")
    assert state.default_cpuset == parse("0-3")


def test_policy_name_must_match():
    with pytest.raises(CPUManagerStateError) as e:
        cs.decode(REAL_V2[-1], "static")
    assert str(e.value) == 'configured policy "static" differs from state checkpoint policy "none"'


def test_v1_files():
    assert cs.decode(REAL_V1_EMPTY, "none").entries == {}
    doc = {"policyName": "static", "defaultCpuSet": "0-1", "entries": {"containerid": "2-3"}}
    doc["checksum"] = cs.fnv32a(cs._spew("static", "0-1", doc["entries"], v1=True).encode())
    with pytest.raises(CPUManagerStateError, match="v1 checkpoint"):
        cs.decode(json.dumps(doc), "static")


def test_unparsable_sets_are_refused_with_kubelets_message():
    doc = {"policyName": "static", "defaultCpuSet": "0-", "checksum": 0}
    with pytest.raises(CPUManagerStateError, match='could not parse default cpu set "0-"'):
        cs.decode(json.dumps(doc), "static")
    doc = {"policyName": "static", "defaultCpuSet": "0", "entries": {"p": {"c": "x"}}, "checksum": 0}
    with pytest.raises(CPUManagerStateError, match='could not parse cpuset "x" for container "c" in pod "p"'):
        cs.decode(json.dumps(doc), "static")
    for junk in (b"", b"[]", b"{", b'{"policyName":1}', b'{"checksum":"1"}'):
        with pytest.raises(CPUManagerStateError):
            cs.decode(junk, "static")


names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8)


@given(policy=st.sampled_from(["static", "none"]), default=st.frozensets(st.integers(0, 64)),
       entries=st.dictionaries(names, st.dictionaries(names, st.frozensets(st.integers(0, 64), min_size=1),
                                                      min_size=1, max_size=3), max_size=3))
def test_encode_decode_round_trip(policy, default, entries):
    state = CPUManagerState(policy, CPUSet(default), {p: {c: CPUSet(s) for c, s in cs_.items()}
                                                       for p, cs_ in entries.items()})
    assert cs.decode(cs.encode(state), policy) == state


def test_restore_checks_the_file_against_the_node():
    from sdqos.kube.cpumanager import new_static_policy
    from sdqos.kube.cputopology import CPUInfo, make_topology

    # 12 CPUs, 6 cores (siblings N, N+6), as the kubelet v1.34 checkpoint above describes
    topo = make_topology({c: CPUInfo(0, 0, c % 6) for c in range(12)})
    policy = new_static_policy(topo, 1)
    state = cs.restore(REAL_V2[0], policy)
    assert state.default_cpuset | state.assigned() == CPUSet(range(12))
    assert cs.restore(None, policy).default_cpuset == CPUSet(range(12))
    smaller = new_static_policy(make_topology({c: CPUInfo(0, 0, c % 4) for c in range(8)}), 1)
    with pytest.raises(CPUManagerStateError, match="doesn't match with CPUs in state"):
        cs.restore(REAL_V2[0], smaller)
