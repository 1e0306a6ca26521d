"""The property table (sdqos/plan/properties.py): every owned property has a complete row, every
row's kernel conversion round-trips through the files as cgroupfs lays them out, and what derives
from the table is what the hand-written mappings it replaced gave. The kernel and systemd check
the same rows in tests/reconcile/test_property_table_sandbox.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sdqos.host import cgroupfs
from sdqos.host.systemd import PROPERTY_SIGNATURES
from sdqos.plan import properties as P
from sdqos.plan.engine import build_plan, plan_basis, plan_pod
from sdqos.plan.properties import INFINITY, ResourceConfig

from ..helpers import node, pod_from

KINDS = {P.WEIGHT, P.QUOTA, P.PERIOD, P.MEMORY_LIMIT, P.MEMORY_HIGH, P.RESERVATION, P.SWAP, P.PIDS, P.OOM, P.OOMD,
         P.CPUSET}
PAGE = 4096
GI = 2**30


def test_every_owned_property_has_a_complete_row():
    for cgroup in ("v1", "v2"):
        assert P.owned(cgroup), cgroup
        for name in P.owned(cgroup):
            row = P.BY_NAME[name]
            assert cgroup in row.versions and row.owned, name
            assert row.kind in KINDS, name
            # every owned value is a uint64, but AllowedCPUs: a bitmask sent as systemd's byte array
            sig = "ay" if row.kind == P.CPUSET else "t"
            assert row.signature == sig and PROPERTY_SIGNATURES[name] == sig, name
            assert set(row.kernel) >= row.versions, f"{name}: no kernel entry for every version it is set on"
            assert isinstance(row.show(INFINITY), str) and isinstance(row.show(0), str), name
            assert callable(row.value), name
            assert row.reset is None or isinstance(row.reset, int), name
            assert row.summary is None or isinstance(row.summary, int), name
    for row in P.PROPERTIES:  # (not owned: OOMPolicy, taken when a scope is created)
        assert PROPERTY_SIGNATURES[row.name] == row.signature, row.name
        assert row.versions and row.kind in KINDS, row.name


def test_a_row_without_a_kernel_file_is_shown_in_another_rows_files():
    """CPUQuotaPeriodUSec has no file of its own: the quota's conversion writes it (cfs_period_us,
    cpu.max's second field). Changing it must change what that row predicts."""
    for row in P.PROPERTIES:
        for cgroup, k in row.kernel.items():
            if k is not None:
                continue
            assert row.kind == P.PERIOD, row.name
            quota = P.BY_NAME[P.QUOTA_PROPERTY].kernel[cgroup]
            assert quota is not None
            assert quota.to_files(500_000, {row.name: 50_000}, PAGE) != quota.to_files(500_000, {row.name: 100_000}, PAGE)
            assert P.kernel_files({P.QUOTA_PROPERTY: 500_000, row.name: 50_000}, cgroup) \
                != P.kernel_files({P.QUOTA_PROPERTY: 500_000}, cgroup)


def test_each_explain_key_is_one_the_engine_writes():
    """A row's explain key names a reason the engine records (build_plan(explain=True)) for some
    unit; a stale key would leave explain silent about that property."""
    pod = pod_from({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                                    "limits": {"cpu": "1", "memory": "2Gi"}}}]}})
    written: set[str] = set()
    for cgroup in ("v1", "v2"):
        plan = build_plan(node(memory="16Gi", pod_pids_limit=1024, swap_behavior="LimitedSwap", swap_capacity=4 * GI),
                          [pod], cgroup=cgroup, explain=True)
        written |= {k for u in plan.units for k in u.why}
        written |= {k for pp in plan.pods for k in pp.why}
        written |= {k for pp in plan.pods for c in pp.containers for k in c.why}
    # AllowedCPUs: cpuManagerPolicy static on v2, the shared pool an input of the plan (as the state file is)
    ctx = plan_basis(node(cpu_manager_policy="static"), cgroup="v2", shared_cpus="0-3").context
    written |= {k for c in plan_pod(pod, ctx, explain=True).containers for k in c.why}
    for row in P.PROPERTIES:
        assert row.why is None or row.why in written, (row.name, row.why, sorted(written))


def _text(value: object) -> str:
    """A kernel value as its file holds it (cpu.max's period: any, when systemd does not write it)."""
    if isinstance(value, tuple):
        return f"{value[0]} {100_000 if value[1] is None else value[1]}"
    return str(value)


def _through_files(name: str, cgroup: str, value, props: dict) -> object:
    """value → the row's files, written as the kernel shows them, read back by cgroupfs.read →
    the row's value again."""
    k = P.BY_NAME[name].kernel[cgroup]
    assert k is not None
    want = k.to_files(value, {**props, name: value}, PAGE)
    assert set(want) == set(k.files), name
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for f, v in want.items():
            path = root / (f.split("/")[0] + "/a.slice/" + f.split("/")[1] if "/" in f else f"a.slice/{f}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_text(v) + "\n")
        held = cgroupfs.read("/a.slice", want, root)
    assert held == want, name  # what the row predicts is what cgroupfs reads for it
    return k.from_files(held)


sizes = st.one_of(st.just(INFINITY), st.integers(0, 2**50).map(lambda n: n * PAGE))


@given(value=sizes)
@example(value=INFINITY)
@example(value=0)
def test_memory_rows_round_trip(value):
    for row in P.PROPERTIES:
        if row.kind not in (P.MEMORY_LIMIT, P.MEMORY_HIGH, P.RESERVATION, P.SWAP):
            continue
        for cgroup in row.versions:
            assert _through_files(row.name, cgroup, value, {}) == value, (row.name, cgroup)


@given(shares=st.integers(2, 262_144), weight=st.integers(1, 10_000))
def test_weight_rows_round_trip(shares, weight):
    assert _through_files("CPUShares", "v1", shares, {}) == shares
    assert _through_files("CPUWeight", "v2", weight, {}) == weight


@given(tasks=st.one_of(st.just(INFINITY), st.integers(1, 2**22)))
def test_tasks_rows_round_trip(tasks):
    for cgroup in ("v1", "v2"):
        assert _through_files("TasksMax", cgroup, tasks, {}) == tasks


@given(percent=st.integers(1, 100_000), period_ms=st.one_of(st.none(), st.integers(1, 1000)))
@example(percent=1, period_ms=100)
@example(percent=100, period_ms=None)
def test_quota_round_trips_with_its_period(percent, period_ms):
    """Per-second quotas as sdqos sends them (whole percents), with the node's period or systemd's
    default; where the quota is at least the kernel's 1 ms per period (below it systemd stretches
    the period and the kernel holds a rounded quota)."""
    per_sec = percent * 10_000
    period = INFINITY if period_ms is None else period_ms * 1000
    if per_sec * (100_000 if period == INFINITY else period) < 1_000_000_000:
        return
    for cgroup in ("v1", "v2"):
        props = {P.PERIOD_PROPERTY: period}
        assert _through_files(P.QUOTA_PROPERTY, cgroup, per_sec, props) == per_sec
        assert _through_files(P.QUOTA_PROPERTY, cgroup, INFINITY, props) == INFINITY


def test_oom_policy_round_trips_through_memory_oom_group():
    for policy, group in (("kill", 1), ("continue", 0)):
        k = P.BY_NAME["OOMPolicy"].kernel["v2"]
        assert k is not None and k.to_files(policy, {}, PAGE) == {"memory.oom.group": group}
        assert _through_files("OOMPolicy", "v2", policy, {}) == policy


# ---- what derives from the table is what the hand-written mappings gave (before the table) ------------

def _hand_written(rc: ResourceConfig, cgroup: str, period_us: int, container: bool) -> dict[str, int]:
    """to_properties as it was written out by hand before the table (commit 4ed322d)."""
    from sdqos.kube import qos

    shares = rc.cpu_shares if rc.cpu_shares is not None else qos.SHARES_PER_CPU
    props: dict[str, int] = {}
    if cgroup == "v1":
        props["CPUShares"] = shares
    else:
        props["CPUWeight"] = qos.shares_to_weight_runc(shares) if container else qos.shares_to_weight_kubelet(shares)
    props["CPUQuotaPerSecUSec"] = P.quota_per_sec_usec(rc.cpu_quota, rc.cpu_period or period_us)
    if period_us != P.DEFAULT_PERIOD_US:
        props["CPUQuotaPeriodUSec"] = period_us
    memory = rc.memory if rc.memory is not None and rc.memory > 0 else INFINITY
    if cgroup == "v1":
        props["MemoryLimit"] = memory
    else:
        props["MemoryMax"] = memory
        props["MemoryMin"] = rc.memory_min or 0
        props["MemoryLow"] = rc.memory_low or 0
        high = rc.memory_high
        props["MemoryHigh"] = INFINITY if high is None or high < 0 else high
        if rc.swap is not None:
            props["MemorySwapMax"] = rc.swap
    props["TasksMax"] = rc.pids if rc.pids is not None and rc.pids > 0 else INFINITY
    return props


maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731
configs = st.builds(
    ResourceConfig, cpu_shares=maybe(st.integers(2, 262_144)), cpu_quota=maybe(st.integers(-1, 10**7)),
    cpu_period=maybe(st.integers(1000, 10**6)), memory=maybe(st.integers(-1, 2**40)), pids=maybe(st.integers(-1, 2**22)),
    memory_min=maybe(st.integers(0, 2**40)), memory_low=maybe(st.integers(0, 2**40)),
    memory_high=maybe(st.integers(-1, 2**40)), swap=maybe(st.integers(0, 2**40)), oom_group=maybe(st.booleans()))


@given(rc=configs, cgroup=st.sampled_from(["v1", "v2"]), period=st.sampled_from([100_000, 50_000, 1000, 10**6]),
       container=st.booleans())
def test_to_properties_gives_what_the_hand_written_mapping_gave_in_its_order(rc, cgroup, period, container):
    got = P.to_properties(rc, cgroup, period, container=container)
    want = _hand_written(rc, cgroup, period, container)
    assert list(got.items()) == list(want.items())


def test_the_derived_sets_are_those_it_had():
    assert P.LIMITS == {"MemoryLimit", "MemoryMax", "MemoryHigh", "CPUQuotaPerSecUSec", "TasksMax"}
    assert P.RESETS == {"CPUShares": INFINITY, "CPUWeight": INFINITY, "CPUQuotaPerSecUSec": INFINITY,
                        "MemoryLimit": INFINITY, "MemoryMax": INFINITY, "MemoryHigh": INFINITY,
                        "MemorySwapMax": INFINITY, "MemoryMin": 0, "MemoryLow": 0, "AllowedCPUs": 0}
    assert P.owned("v1") == ("CPUShares", "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec", "MemoryLimit", "TasksMax")
    assert P.SUMMARY == ("CPUShares", "CPUWeight", "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec", "MemoryLimit", "MemoryMax",
                         "MemoryHigh", "MemoryLow", "MemoryMin", "TasksMax", "AllowedCPUs")  # the plan tree's order
    assert P.STATUS_KEYS == {"CPUShares": "cpuShares", "CPUWeight": "cpuWeight",
                             "CPUQuotaPerSecUSec": "cpuQuotaPerSecUSec", "TasksMax": "tasksMax"}
    assert set(P.owned("v2")) == {"CPUWeight", "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec", "MemoryMax", "MemoryMin",
                                  "MemoryLow", "MemoryHigh", "TasksMax", "MemorySwapMax", "AllowedCPUs"}


@pytest.mark.parametrize("cgroup,props,files", [
    ("v1", {"CPUShares": 512, "CPUQuotaPerSecUSec": 250_000, "MemoryLimit": 2**30 + 5, "TasksMax": INFINITY},
     {"cpu/cpu.shares": 512, "cpu/cpu.cfs_quota_us": 25_000, "cpu/cpu.cfs_period_us": 100_000,
      "memory/memory.limit_in_bytes": 2**30, "pids/pids.max": "max"}),
    # no quota on v1: systemd writes the kernel's default period (measured in the sandbox)
    ("v1", {"MemoryLimit": INFINITY, "CPUQuotaPerSecUSec": INFINITY, "CPUQuotaPeriodUSec": 50_000},
     {"memory/memory.limit_in_bytes": 0x7FFFFFFFFFFFF000, "cpu/cpu.cfs_quota_us": -1, "cpu/cpu.cfs_period_us": 100_000}),
    ("v1", {"CPUQuotaPerSecUSec": 500_000, "CPUQuotaPeriodUSec": 50_000},
     {"cpu/cpu.cfs_quota_us": 25_000, "cpu/cpu.cfs_period_us": 50_000}),
    ("v2", {"CPUWeight": 39, "CPUQuotaPerSecUSec": 10_000, "CPUQuotaPeriodUSec": 1000, "MemoryMax": INFINITY,
            "MemoryMin": 4097, "MemoryLow": 0, "MemoryHigh": 2**30, "MemorySwapMax": 0, "TasksMax": 10},
     {"cpu.weight": 39, "cpu.max": (1000, 100_000), "memory.max": "max", "memory.min": 4096, "memory.low": 0,
      "memory.high": 2**30, "memory.swap.max": 0, "pids.max": 10}),
    ("v2", {"CPUQuotaPerSecUSec": INFINITY}, {"cpu.max": ("max", None)}),
    # AllowedCPUs' bitmask: cpuset.cpus's CPU list; none: "" (systemd writes an empty list)
    ("v2", {"AllowedCPUs": 0b1101, "CPUWeight": 4}, {"cpu.weight": 4, "cpuset.cpus": "0,2-3"}),
    ("v2", {"AllowedCPUs": 0}, {"cpuset.cpus": ""}),
    ("v1", {"AllowedCPUs": 3}, None),  # no cpuset systemd holds on v1
    ("v1", {"MemoryMax": 1}, None),  # a v2 property on v1: not predictable
    ("v2", {"OOMPolicy": "kill"}, None),  # not owned: never compared
])
def test_kernel_files_as_cgroupfs_predicted_them(cgroup, props, files):
    assert cgroupfs.expected(props, cgroup) == files
