"""Property-based: for any generated quantity, pod and node.yaml, `sdqos plan` exits 0 or 2, never
crashes, every error is one line naming a file and a field, and every value in the plan can be sent
over D-Bus and set by the kernel. The generators stay here so that every CI run explores anew.

Inputs are built the way people and tools write them — YAML from dicts, with numbers, strings,
booleans and nulls where quantities and fields go, values at the edges of int64 and uint64 — and
written to a real config dir; the CLI runs in-process (tests/hostile_helpers.plan_in_process).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdqos.kube import naming
from sdqos.kube.quantity import Quantity
from sdqos.plan.properties import unsendable

from .hostile_helpers import stderr_lines

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- generators ------------------------------------------------------------------------------------

SUFFIXES = ["", "m", "u", "n", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "E-2", "e18", "e-9"]
EDGES = [0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**20, 20000000000000]


@st.composite
def quantity_text(draw) -> str:
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    digits = draw(st.one_of(st.integers(0, 10**6).map(str), st.sampled_from([str(e) for e in EDGES]),
                            st.text("0123456789", min_size=1, max_size=25)))
    frac = draw(st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=10).map(lambda t: "." + t)))
    return sign + digits + frac + draw(st.sampled_from(SUFFIXES))


def quantity_value():
    """What people put where a quantity goes: text, YAML numbers, and things that are not quantities."""
    return st.one_of(quantity_text(), quantity_text(), st.sampled_from(EDGES), st.floats(allow_nan=True),
                     st.booleans(), st.none(), st.text(max_size=12), st.lists(st.integers(), max_size=2))


def resource_list():
    names = st.sampled_from(["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "pods", "nvidia.com/gpu", "bogus"])
    return st.dictionaries(names, quantity_value(), max_size=4)


def dns_label():
    return st.one_of(st.from_regex(r"\A[a-z]([a-z0-9-]{0,20}[a-z0-9])?\Z"), st.text(max_size=70))


@st.composite
def container(draw, init: bool = False) -> dict:
    c: dict = {"name": draw(dns_label())}
    if draw(st.booleans()):
        c["resources"] = {k: draw(resource_list()) for k in draw(st.sets(st.sampled_from(["requests", "limits"])))}
    if init and draw(st.booleans()):
        c["restartPolicy"] = draw(st.sampled_from(["Always", "Never", 1]))
    return c


@st.composite
def pod_doc(draw) -> dict:
    meta: dict = {"name": draw(dns_label()), "namespace": draw(st.sampled_from(["t", "shop", "kube-system"]))}
    if draw(st.booleans()):
        meta["uid"] = draw(st.one_of(st.uuids().map(str), st.text(max_size=140), st.integers()))
    spec: dict = {"containers": draw(st.lists(container(), min_size=0, max_size=3))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(st.lists(container(init=True), max_size=2))
    if draw(st.booleans()):
        spec["overhead"] = draw(resource_list())
    if draw(st.booleans()):
        spec["resources"] = {"requests": draw(resource_list()), "limits": draw(resource_list())}
    if draw(st.booleans()):
        spec["terminationGracePeriodSeconds"] = draw(st.one_of(st.sampled_from(EDGES), st.text(max_size=4)))
    if draw(st.booleans()):
        spec["priorityClassName"] = draw(st.sampled_from(["system-node-critical", "system-cluster-critical", "x"]))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@st.composite
def node_doc(draw) -> dict:
    d: dict = {"capacity": {"cpu": draw(st.sampled_from(["2", "8", "64"])), "memory": draw(st.sampled_from(["4Gi", "64Gi"])),
                            "pids": "100000"}}
    fields = {
        "kubeReserved": resource_list(), "systemReserved": resource_list(),
        "evictionHard": st.dictionaries(st.sampled_from(["memory.available", "memory.available", "nodefs.available", "x"]),
                                        st.one_of(st.sampled_from(["10%", "inf%", "1e400", "-1Gi", "abc", "150%", "1e400%",
                                                                   "0%", "100%", "-5%", "nan%"]), quantity_value()),
                                        min_size=1, max_size=3),
        "cpuCFSQuotaPeriod": st.sampled_from(["100ms", "1ms", "1s", "2s", "500us", "abc", 5, None]),
        "cpuCFSQuota": st.one_of(st.booleans(), st.sampled_from(["yes", 1])),
        "podPidsLimit": st.one_of(st.sampled_from(EDGES), st.text(max_size=4)),
        "qosReserved": st.dictionaries(st.sampled_from(["memory", "cpu"]), st.sampled_from(["50%", "100%", "0%", "101%", "x", 5]), max_size=2),
        "featureGates": st.dictionaries(st.sampled_from(["QOSReserved", "MemoryQoS", "PodLevelResources", "Nope"]),
                                        st.one_of(st.booleans(), st.just("true")), max_size=3),
        "cgroupRoot": st.one_of(st.sampled_from(["/", "/sdqos", "/a.slice/a-b.slice", "../x", ""]), st.text(max_size=300)),
        "enforceNodeAllocatable": st.lists(st.sampled_from(["pods", "system-reserved", "kube-reserved", "none", "x"]), max_size=3),
        "systemReservedCgroup": st.sampled_from(["/system.slice", "/kubepods.slice", "relative", "/kubepods.slice/x.slice"]),
        "memoryThrottlingFactor": st.one_of(st.floats(allow_nan=True), st.integers(-2, 2)),
    }
    for name in draw(st.sets(st.sampled_from(sorted(fields)), max_size=5)):
        d[name] = draw(fields[name])
    return d


# --- the property ----------------------------------------------------------------------------------


def check_plan(node: dict, pods: list[dict]) -> None:
    from .hostile_helpers import plan_in_process

    d = Path(tempfile.mkdtemp(prefix="sdqos-gen-"))
    try:
        (d / "pods").mkdir()
        (d / "node.yaml").write_text(yaml.safe_dump(node))
        (d / "pods" / "p.yaml").write_text(yaml.safe_dump_all(pods))
        code, stdout, stderr = plan_json_in_process(d)
        assert code in (0, 2), (code, stderr)
        for line in stderr_lines(stderr):  # one line each, sdqos's own, no traceback
            assert "Traceback" not in line and "internal error" not in line, line
            if line.startswith("sdqos: error: "):
                body = line[len("sdqos: error: "):]
                assert body.startswith(("node.yaml", "pods/p.yaml", "config directory")), line
                assert body.count(": ") >= 1, line  # where: (field:) message
        if code == 2 and not stdout.strip():
            return  # node.yaml refused: nothing planned
        plan = json.loads(stdout)
        for u in plan["units"]:
            assert naming.valid_unit_name(u["name"]), u["name"]
            assert unsendable(u["properties"]) == [], (u["name"], u["properties"])
        for p in plan["pods"]:
            for c in p["containers"]:
                assert naming.valid_unit_name(c["scope"]) and unsendable(c["properties"]) == [], c
                assert -1000 <= c["oomScoreAdj"] <= 1000
    finally:
        shutil.rmtree(d)


def plan_json_in_process(config: Path) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from sdqos.cli.app import app

    r = CliRunner().invoke(app, ["plan", "--config", str(config), "-o", "json", "--insecure"])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@SETTINGS
@given(st.lists(pod_doc(), min_size=1, max_size=4))
def test_any_pods_plan_or_fail_in_one_line_per_field(pods):
    check_plan({"capacity": {"cpu": "8", "memory": "16Gi", "pids": "100000"}}, pods)


@SETTINGS
@given(node_doc(), st.lists(pod_doc(), max_size=2))
def test_any_node_yaml_plans_or_fails_in_one_line_per_field(node, pods):
    check_plan(node, pods)


@SETTINGS
@given(quantity_text())
def test_any_quantity_text_parses_or_is_refused_with_a_reason(text):
    from sdqos.errors import QuantityError

    try:
        q = Quantity.parse(text)
    except QuantityError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    # The canonical form is a fixed point. (It need not read back as the same amount: like upstream,
    # a power of ten with no suffix — 10^21 — prints without one: "100000000000000000000k" is "100".)
    again = Quantity.parse(str(q))
    assert str(again) == str(q)
    assert again == q or (q.as_fraction() >= 10**21 or q.as_fraction() <= -(10**21))
