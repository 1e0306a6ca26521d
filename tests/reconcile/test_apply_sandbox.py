"""apply's skip of a failed parent's children, and the in-memory systemd of the root-free tests
(tests/fakesystemd.py), against the real systemd in the sandbox: the fake's answers are systemd's."""

from __future__ import annotations

import asyncio
import json
import uuid

from sdqos.errors import JobFailed, SystemdError
from sdqos.host.systemd import SLICE, UNIT, Systemd, SystemdAPI
from sdqos.plan.engine import build_plan
from sdqos.reconcile.apply import apply
from sdqos.reconcile.diff import compute_diff
from sdqos.reconcile.report import Report

from ..fakesystemd import FakeSystemd
from ..helpers import node, pod_from
from ..sbhelpers import show


def test_children_of_a_slice_systemd_refused_are_not_made_in_an_implicit_one(clean_sandbox):
    """systemd refuses kubepods-burstable.slice (CPUShares=1 is out of range). Its pods' slices are
    not sent: systemd would load the missing slice implicitly, with none of its limits, and make
    them in it. The rest of the tree is made."""
    sb = clean_sandbox
    pods = [pod_from({"metadata": {"name": n, "namespace": "default"}, "spec": {"containers": [
        {"name": "c", "resources": res}]}}) for n, res in (("g", {"limits": {"cpu": "1", "memory": "1Gi"}}),
                                                           ("b", {"requests": {"cpu": "100m"}}))]
    plan = build_plan(node(), pods, cgroup="v1")
    plan.unit("kubepods-burstable.slice").properties["CPUShares"] = 1
    b, g = (next(p.slice for p in plan.pods if p.pod.name == n) for n in "bg")

    async def main():
        async with Systemd(sb.bus_address) as sd:
            report = Report()
            done = await apply(sd, compute_diff(plan, {}), report)
            return report, done
    report, done = asyncio.run(main())
    assert [e.split(":")[0] for e in report.errors] == ["create kubepods-burstable.slice", f"create {b}"]
    assert report.errors[1] == f"create {b}: skipped, its parent kubepods-burstable.slice failed"
    assert done == {"kubepods.slice", "kubepods-besteffort.slice", g}
    assert show(sb, b, "ActiveState", "Transient") == {"ActiveState": "inactive", "Transient": "no"}  # never made
    assert show(sb, "kubepods-burstable.slice", "ActiveState")["ActiveState"] == "inactive"
    assert show(sb, g, "ActiveState", "MemoryLimit") == {"ActiveState": "active", "MemoryLimit": str(2**30)}


async def _script(sd: SystemdAPI, tag: str) -> list:
    """The same calls on either systemd; what each returned, raised or left behind."""
    out: list = []
    top, child, scope, svc = f"kubepods-f{tag}.slice", f"kubepods-f{tag}-c.slice", f"sdqos-pod{tag}-c.scope", \
        f"sdqos-f{tag}.service"

    async def step(what: str, call) -> None:
        try:
            await call
            out.append((what, "ok"))
        except SystemdError as e:
            out.append((what, type(e).__name__))

    async def state(*names: str) -> None:
        got = await sd.read_units(list(names), {UNIT: ["Description", "Transient"],
                                                SLICE: ["MemoryLimit", "CPUShares", "MemoryLow"]})
        out.append(("state", {n: (s.load_state, s.active_state, s.transient, s.props) for n, s in sorted(got.items())}))

    await step("create", sd.start_transient_unit(top, {"Description": "top", "MemoryLimit": 2**30}))
    await step("create again", sd.start_transient_unit(top, {"Description": "again"}))
    await step("create child", sd.start_transient_unit(child, {"Description": "child", "CPUShares": 512}))
    await step("set child", sd.set_unit_properties(child, {"MemoryLimit": 2**29}))
    await state(top, child)
    await step("set a scope not there", sd.set_unit_properties(scope, {"CPUShares": 2}))
    await step("stop a scope not there", sd.stop_unit(scope))
    await step("stop a slice not there", sd.stop_unit(f"kubepods-f{tag}-none.slice"))
    await step("reset a unit not there", sd.reset_failed_unit(scope))
    await step("stop the top", sd.stop_unit(top))
    await state(top, child)
    results = await sd.stop_units([scope, top])
    out.append(("stop both", [type(r).__name__ if r else None for r in results]))
    # a unit whose start job failed keeps its name, failed, until reset
    await step("failing", sd.start_transient_unit(svc, {"Description": "fails", "Type": "oneshot",
                                                        "ExecStart": [("/bin/false", ["/bin/false"], False)]}))
    out.append(("failed", (await sd.get_properties(svc, UNIT, ["ActiveState"]))["ActiveState"]))
    await step("create over the failed", sd.start_transient_unit(svc, {"Description": "again"}))
    await step("reset", sd.reset_failed_unit(svc))
    out.append(("after reset", sorted(await sd.read_units([svc], {UNIT: ["Description"]}))))
    return out


def test_the_fake_answers_as_systemd_does(clean_sandbox):
    sb = clean_sandbox
    tag = uuid.uuid4().hex[:8]

    async def real():
        async with Systemd(sb.bus_address) as sd:
            await sd.start_transient_unit("kubepods.slice", {})  # the parent, as sync makes it
            return await _script(sd, tag)
    fake = FakeSystemd()
    fake.add("kubepods.slice")
    fake.faults[("StartTransientUnit", f"sdqos-f{tag}.service")] = [JobFailed(f"sdqos-f{tag}.service", "exit-code")]
    want = asyncio.run(real())
    got = asyncio.run(_script(fake, tag))
    for g, w in zip(got, want):
        assert g == w
    assert len(got) == len(want)


_READ_BACK_INSIDE = r'''
import asyncio, json, pickle, sys
from sdqos.host import cgroupfs, facts
from sdqos.host.systemd import Systemd
from sdqos.reconcile.apply import apply
from sdqos.reconcile.desired import of_plan
from sdqos.reconcile.diff import compute_diff
from sdqos.reconcile.live import ReadBack, _kernel_target, kernel_refusals
from sdqos.reconcile.report import Report

want = of_plan(pickle.load(open(sys.argv[1], "rb")))
last, other = sys.argv[2], sys.argv[3]
page = facts.page_size()


def tamper(name):
    """A memory limit other than the planned one, written straight into the unit's cgroup."""
    cg, files = _kernel_target(want.by_name, name, {}, want.cgroup, page)
    f = next(f for f in files if "memory" in f)
    with open(cgroupfs.file_path(str(cgroupfs.ROOT), cg.strip("/"), f), "w") as fh:
        fh.write(str(256 * 2**20))


async def main():
    rb = ReadBack.of(want, {})
    assert rb is not None, "this process does not see the sandbox's cgroups"
    async with Systemd() as sd:
        sent_at = {}

        def created(name):
            sent_at[name] = sd.stats.calls
            if name == last:  # the kernel does not hold it when it is read back
                tamper(name)
            rb(name)
        done = await apply(sd, compute_diff(want, {}), Report(), None, created)
    tamper(other)  # after it was read back holding its values
    with_held = await kernel_refusals(want, done, {}, Report(), settle_s=0.2, held=rb.held)
    without = await kernel_refusals(want, done, {}, Report(), settle_s=0.2)
    targets = sorted(n for n in done if _kernel_target(want.by_name, n, {}, want.cgroup, page))
    print(json.dumps({"held": sorted(rb.held), "targets": targets, "done": sorted(done), "sent_at": sent_at,
                      "calls": sd.stats.calls, "with_held": sorted(with_held), "without": sorted(without)}))

asyncio.run(main())
'''


def test_created_units_are_read_back_while_the_next_are_made(clean_sandbox, tmp_path):
    """A cold sync reads each created unit's cgroup as its job ends, while later units are still
    being sent (not all after the last job); a unit seen holding its values is not read again after
    apply, one that did not hold them when its job ended (here: its memory limit overwritten in the
    kernel just then) is, and is reported as refused."""
    import pickle
    import sys

    from sdqos import sandbox as sbx

    sb = clean_sandbox
    pods = [pod_from({"metadata": {"name": f"p{i}", "namespace": "default"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": f"{16 * (i + 1)}Mi"}}
         if i % 2 else {"limits": {"cpu": "100m", "memory": f"{16 * (i + 1)}Mi"}}}]}}) for i in range(40)]
    plan = build_plan(node(), pods, cgroup=sb.cgroup_mode if sb.cgroup_mode == "v2" else "v1")
    created = [u.name for u in plan.units if u.create]
    burstable = [n for n in created if n.startswith("kubepods-burstable-pod")]  # the last wave: 20 > 16 in flight
    last = burstable[-1]
    other = next(n for n in created if n.startswith("kubepods-pod"))  # a Guaranteed pod: an early wave
    (tmp_path / "plan.pickle").write_bytes(pickle.dumps(plan))
    script = tmp_path / "inside.py"
    script.write_text(_READ_BACK_INSIDE)
    cp = sbx.run(sb, [sys.executable, str(script), str(tmp_path / "plan.pickle"), last, other], timeout=120,
                 cwd=str(tmp_path))
    assert cp.returncode == 0, cp.stderr[-2000:]
    got = json.loads(cp.stdout)
    assert got["done"] == sorted(created)
    assert got["held"] == [n for n in got["targets"] if n != last]  # every other unit, read as its job ended
    assert set(burstable) | {other} <= set(got["targets"])
    assert got["sent_at"][burstable[0]] < got["calls"]  # read while the wave's last units were still to be sent
    assert got["with_held"] == [last]  # `other`, tampered after it was read holding its values: not read again
    assert got["without"] == sorted([last, other])  # (and it would have been caught by a full read)
