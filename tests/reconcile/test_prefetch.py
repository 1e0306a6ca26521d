"""sdqos.reconcile.prefetch: what the child confirms is what the live read would have found.

The child checks each slice of applied.json against what its applied values make the kernel hold
(:func:`prefetch.doubtful`, in-process here against files in a temp dir); the live read trusts a
planned unit only when :func:`prefetch.confirmed` says so. Whatever the files hold and whatever the
plan wants now, a confirmed unit is one ``cgroupfs.holds`` finds holding the planned values."""

from __future__ import annotations

import json
import threading
import time

from hypothesis import given, strategies as st

from sdqos.host import cgroupfs, children
from sdqos.plan import properties as P
from sdqos.reconcile import prefetch

from ..host.test_cgroupfs import INF, _props, _texts

POD = "kubepods-burstable-poda.slice"
CG = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda.slice"


def _write(root, want: dict, texts: dict) -> None:
    for f, text in texts.items():
        if text is not None:
            d = root / (f.split("/")[0] if "/" in f else "") / CG.strip("/")
            d.mkdir(parents=True, exist_ok=True)
            (d / f.split("/")[-1]).write_text(text)


def _want(props: dict, mode: str):
    check = dict(props)
    check.setdefault(P.PERIOD_PROPERTY, INF)
    return cgroupfs.expected(check, mode, 4096)


@given(mode=st.sampled_from(["v1", "v2"]), data=st.data(), same=st.booleans())
def test_a_confirmed_unit_holds_its_planned_values(tmp_path_factory, mode, data, same):
    applied_values = data.draw(_props(mode), label="applied")
    planned = dict(applied_values) if same else data.draw(_props(mode), label="planned")
    want = _want(applied_values, mode)
    root = tmp_path_factory.mktemp("cg")
    if want is not None:
        _write(root, want, _texts(want, data))
    record = {**applied_values, "sdqos.cpuRequest": 100, "sdqos.pod": "ns/a"}  # (as sync records a pod)
    applied = {POD: record, "kubepods-burstable.slice": {"CPUShares": 2}}
    doubts = frozenset(prefetch.doubtful(json.dumps(applied).encode(), mode, root))
    planned_want = _want(planned, mode)
    if prefetch.confirmed(POD, planned, applied, doubts, mode):
        assert planned_want is not None and cgroupfs.holds(CG, planned_want, root) == planned_want
    elif same and want is not None and cgroupfs.holds(CG, want, root) == want:
        raise AssertionError("in place with the values applied, and not confirmed")


def test_in_place_units_are_confirmed_and_others_are_not(tmp_path):
    values = {"CPUShares": 512, "MemoryLimit": 2**30, "TasksMax": INF}
    want = _want(values, "v1")
    _write(tmp_path, want, {f: r.decode() for f, r in zip(want, cgroupfs.rendered(want))})
    applied = {POD: {**values, "sdqos.pod": "ns/a"}, "gone.slice": values}
    doubts = frozenset(prefetch.doubtful(json.dumps(applied).encode(), "v1", tmp_path))
    assert doubts == {"gone.slice"}  # its cgroup does not exist
    assert prefetch.confirmed(POD, values, applied, doubts, "v1")
    assert not prefetch.confirmed(POD, {**values, "CPUShares": 1024}, applied, doubts, "v1")  # the plan changed it
    assert not prefetch.confirmed(POD, {**values, "CPUQuotaPerSecUSec": 10_000}, applied, doubts, "v1")
    assert not prefetch.confirmed("gone.slice", values, applied, doubts, "v1")
    assert not prefetch.confirmed("other.slice", values, applied, doubts, "v1")  # not applied: not checked
    assert not prefetch.confirmed(POD, values, applied, None, "v1")  # the child did not deliver
    (tmp_path / "cpu" / CG.strip("/") / "cpu.shares").write_text("77\n")
    assert POD in prefetch.doubtful(json.dumps(applied).encode(), "v1", tmp_path)


def _slow(items):
    time.sleep(30)
    return ["x"]


def test_what_the_child_found_is_taken_once_and_not_after_applied_changes(tmp_path):
    applied = tmp_path / "applied.json"
    applied.write_text("{}")
    child = children.spawn(lambda items: ["a.slice;b.slice"], [b""])
    assert child is not None
    s = prefetch.KernelCheck(child, applied, prefetch._identity(applied))
    assert s.take() == {"a.slice", "b.slice"}
    assert s.take() is None  # once
    s.close()
    child = children.spawn(lambda items: [""], [b""])
    assert child is not None
    s = prefetch.KernelCheck(child, applied, prefetch._identity(applied))
    time.sleep(0.01)
    applied.write_text("{}")  # rewritten since: the sync may have loaded other values
    assert s.take() is None
    slow = children.spawn(_slow, [b""])
    assert slow is not None
    s = prefetch.KernelCheck(slow, applied, prefetch._identity(applied))
    t = time.monotonic()
    s.close()  # stopped and reaped, at once
    assert time.monotonic() - t < 5 and s.take() is None
    try:
        import os

        os.waitpid(slow[0], os.WNOHANG)
        raise AssertionError("not reaped")
    except ChildProcessError:
        pass


def test_no_child_on_one_cpu_beside_other_threads_without_a_cgroup_view_or_a_record(tmp_path, monkeypatch):
    (tmp_path / "applied.json").write_text("{" + " " * prefetch.MIN_BYTES + "}")
    tmp_path.chmod(0o700)
    (tmp_path / "applied.json").chmod(0o600)
    monkeypatch.setattr(cgroupfs, "available", lambda *a, **k: True)
    monkeypatch.setattr(children, "usable_cpus", lambda: 2)
    s = prefetch.prefetch(tmp_path, "v1")
    assert s is not None and s.take() == frozenset()  # (what it takes when all is well: nothing in doubt)
    monkeypatch.setattr(children, "usable_cpus", lambda: 1)
    assert prefetch.prefetch(tmp_path, "v1") is None
    monkeypatch.setattr(children, "usable_cpus", lambda: 2)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert prefetch.prefetch(tmp_path, "v1") is None
    finally:
        stop.set()
        t.join()
    assert prefetch.prefetch(tmp_path / "nothing", "v1") is None  # nothing applied yet
    (tmp_path / "small").mkdir(mode=0o700)
    (tmp_path / "small" / "applied.json").write_text("{}")
    assert prefetch.prefetch(tmp_path / "small", "v1") is None  # too little to be worth a fork
    monkeypatch.setattr(cgroupfs, "available", lambda *a, **k: False)
    assert prefetch.prefetch(tmp_path, "v1") is None
