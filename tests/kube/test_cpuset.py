"""sdqos.kube.cpuset against k8s.io/utils cpuset_test.go (tests/k8s_cases/cpumanager_cases.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdqos.errors import CPUSetError
from sdqos.kube.cpuset import CPUSet, parse

from ..k8s_cases import cpumanager_cases as K


def S(t):
    return CPUSet(t)


def test_size_is_empty_contains():
    for cpus, n in K.CPUSET_SIZE:
        assert S(cpus).size() == n
    for cpus, empty in K.CPUSET_IS_EMPTY:
        assert S(cpus).is_empty() == empty
    for cpus, yes, no in K.CPUSET_CONTAINS:
        assert all(S(cpus).contains(c) for c in yes)
        assert not any(S(cpus).contains(c) for c in no)


def test_equal_and_subset():
    for a, b in K.CPUSET_EQUAL:
        assert S(a).equals(S(b))
    for a, b in K.CPUSET_NOT_EQUAL:
        assert not S(a).equals(S(b))
    for a, b in K.CPUSET_SUBSET:
        assert S(a).is_subset_of(S(b))
    for a, b in K.CPUSET_NOT_SUBSET:
        assert not S(a).is_subset_of(S(b))


def test_union_intersection_difference():
    for a, others, exp in K.CPUSET_UNION:
        got = S(a).union(*(S(o) for o in others))
        assert got == S(exp) and isinstance(got, CPUSet)
    for a, b, exp in K.CPUSET_INTERSECTION:
        assert S(a).intersection(S(b)) == S(exp) == (S(a) & S(b))
    for a, b, exp in K.CPUSET_DIFFERENCE:
        got = S(a) - S(b)
        assert got == S(exp) == S(a).difference(S(b)) and isinstance(got, CPUSet)


def test_list_and_string():
    for cpus, exp in K.CPUSET_LIST:
        assert S(cpus).list() == exp
        assert sorted(S(cpus).unsorted_list()) == exp
    for cpus, exp in K.CPUSET_STRING:
        assert str(S(cpus)) == exp


@pytest.mark.parametrize("text,cpus", K.CPUSET_PARSE)
def test_parse(text, cpus):
    assert parse(text) == S(cpus)


@pytest.mark.parametrize("text", K.CPUSET_PARSE_ERRORS)
def test_parse_refuses(text):
    with pytest.raises(CPUSetError):
        parse(text)


def test_parse_is_as_strict_as_strconv_atoi():
    for text in (" 1", "1 ", "1_0", "١", "1\n"):  # Python's int() takes these, Go's Atoi does not
        with pytest.raises(CPUSetError):
            parse(text)
    assert parse("+1-+2") == S((1, 2))  # Atoi takes a sign
    assert str(pytest.raises(CPUSetError, parse, "3-0").value) == 'invalid range "3-0" (3 > 0)'


@given(st.frozensets(st.integers(0, 300)))
def test_string_and_parse_round_trip(cpus):
    assert parse(str(CPUSet(cpus))) == cpus
