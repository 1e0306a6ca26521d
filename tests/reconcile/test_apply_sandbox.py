"""apply's skip of a failed parent's children, and the in-memory systemd of the root-free tests
(tests/fakesystemd.py), against the real systemd in the sandbox: the fake's answers are systemd's."""

from __future__ import annotations

import asyncio
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
