"""Manifest fields are data, never options: for any strings in a Pod manifest (image, command, args,
env names and values, workingDir, container, pod and namespace names, labels, annotations,
capabilities, seccomp profile paths, sysctls, supplemental groups) either
sdqos refuses the document with one InvalidInput line naming file, document and field, or the
``podman run`` argv keeps its shape — read as podman reads it (pflag: options up to the first
positional or ``--``), every option is one of sdqos's own, the image is exactly the manifest's
validated reference right after ``--``, and the manifest's args follow it untouched."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sdqos.errors import InvalidInput
from sdqos.kube.expansion import expand, expand_env
from sdqos.kube.imageref import image_error
from sdqos.kube.manifests import ParseResult, parse_pod
from sdqos.kube.model import Source
from sdqos.kube.runspec import run_spec
from sdqos.plan.engine import build_plan
from sdqos.plan.podman import container_name, labels, run_args

from ..helpers import node

OWN_FLAGS = {"name", "cgroup-parent", "detach", "restart", "label", "cpu-shares", "cpu-quota", "cpu-period",
             "memory", "memory-swap", "oom-score-adj", "pids-limit", "cgroup-conf", "env", "workdir", "entrypoint", "rm",
             "user", "group-add", "privileged", "read-only", "read-only-tmpfs", "security-opt", "cap-add", "cap-drop",
             "sysctl", "mount", "pull"}
MOUNT_KEYS = {"type", "source", "destination", "ro", "bind-propagation", "tmpfs-size", "tmpfs-mode"}
BOOLEAN = {"detach", "rm", "privileged", "read-only"}  # the only flags sdqos gives without a value
LISTS = {"cap-add", "cap-drop", "group-add", "sysctl"}  # podman splits these at ',': one value each
WHERE = "pods/t.yaml[0]"

# What an attacker would try, mixed with anything at all.
NASTY = ["$(A)", "$$(A)", "$(", "--$(A)", "--privileged", "--volume=/:/host", "-v", "/:/host", "--", "-", "-it", "--rm", "localhost/bb",
         "a=b", "=", "A", "--env=X=1", "x\ny", "x\0y", " A", "", "nginx:1", "-e", "--entrypoint=sh"]


def text():
    return st.one_of(st.sampled_from(NASTY), st.text(max_size=20),
                     st.text(st.characters(codec="ascii"), max_size=20))


def pflag_read(argv: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """argv as podman's `run` reads it (cobra/pflag, interspersed off): options until ``--`` or the
    first argument not starting with ``-``; then positionals. A value-taking option without ``=``
    would swallow the next token: sdqos never gives one, so it is a failure here."""
    opts, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return opts, argv[i + 1:]
        if not tok.startswith("-") or tok == "-":
            return opts, argv[i:]
        assert tok.startswith("--"), f"short option {tok!r}"
        name, eq, value = tok[2:].partition("=")
        assert eq or name in BOOLEAN, f"option {tok!r} would take the next token as its value"
        opts.append((name, value if eq else None))
        i += 1
    return opts, []


def check_shape(argv: list[str], doc_container: dict, pp, cname: str) -> None:
    assert argv[0] == "run"
    assert not any("\0" in a for a in argv)
    opts, positionals = pflag_read(argv[1:])
    assert {n for n, _ in opts} <= OWN_FLAGS, opts
    assert not any("," in v or '"' in v for n, v in opts if n in LISTS), opts
    assert positionals[0] == doc_container["image"] and image_error(positionals[0]) is None
    env_doc = [(e["name"], e.get("value") or "") for e in doc_container.get("env") or []]
    expanded = dict(expand_env(tuple(env_doc)))  # kubelet's $(VAR) expansion (sdqos.kube.expansion)
    assert positionals[1:] == [expand(a, expanded) for a in doc_container.get("args") or []]
    assert ("name", container_name(pp, cname)) in opts
    assert {v for n, v in opts if n == "label"} == {f"{k}={v}" for k, v in labels(pp, cname).items()}
    env = [v for n, v in opts if n == "env"]
    assert env == [f"{k}={v}" for k, v in expand_env(tuple(env_doc))]
    mounts = [v for n, v in opts if n == "mount"]
    assert len(mounts) == len(doc_container.get("volumeMounts") or [])
    for value, vm in zip(mounts, doc_container.get("volumeMounts") or []):
        items = [i.partition("=") for i in value.split(",")]  # podman reads --mount as comma-separated key=value
        assert {k for k, _, _ in items} <= MOUNT_KEYS and '"' not in value, value
        assert [v for k, _, v in items if k == "destination"] == [vm["mountPath"]]
    entry = [json.loads(v) for n, v in opts if n == "entrypoint"]
    assert entry == ([[expand(a, expanded) for a in doc_container["command"]]] if doc_container.get("command") else [])


@st.composite
def manifests(draw) -> dict:
    env = draw(st.lists(st.fixed_dictionaries({"name": st.one_of(st.just("A"), text()), "value": text()}), max_size=3))
    container = {"name": draw(st.one_of(st.just("app"), text())), "image": draw(st.one_of(st.just("localhost/bb"), text())),
                 "command": draw(st.one_of(st.none(), st.lists(text(), max_size=3))),
                 "args": draw(st.one_of(st.none(), st.lists(text(), max_size=4))), "env": env,
                 "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}
    sc = {"capabilities": {"add": draw(st.lists(text(), max_size=2)), "drop": draw(st.lists(text(), max_size=2))},
          "seccompProfile": {"type": "Localhost", "localhostProfile": draw(text())}}
    if draw(st.booleans()):
        container["securityContext"] = sc
    volumes = []
    if draw(st.booleans()):
        volumes = [{"name": "h", "hostPath": {"path": draw(st.one_of(st.just("/srv"), text()))}},
                   {"name": "e", "emptyDir": {"medium": draw(st.sampled_from(["", "Memory"]))}}]
        container["volumeMounts"] = [
            {"name": draw(st.sampled_from(["h", "e"])), "mountPath": draw(st.one_of(st.just("/data"), text())),
             "subPath": draw(st.one_of(st.just(""), text()))} for _ in range(draw(st.integers(0, 2)))]
    wd = draw(st.one_of(st.none(), text(), st.just("/srv")))
    if wd is not None:
        container["workingDir"] = wd
    meta = {"name": draw(st.one_of(st.just("web"), text())), "namespace": draw(st.one_of(st.just("shop"), text())),
            "labels": draw(st.dictionaries(text(), text(), max_size=2)),
            "annotations": draw(st.dictionaries(text(), text(), max_size=2))}
    spec = {"containers": [container], "volumes": volumes}
    if draw(st.booleans()):
        spec["securityContext"] = {"sysctls": [{"name": draw(st.one_of(st.just("kernel.shm_rmid_forced"), text())),
                                                "value": draw(text())}],
                                   "supplementalGroups": [draw(st.one_of(st.integers(), text()))]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def argv_or_refusal(doc: dict):
    """(argv, pod plan) for the document's container, or the InvalidInput errors refusing it."""
    result = ParseResult()
    pod = parse_pod(doc, Source("pods/t.yaml", 0), result)
    if result.errors or pod is None:
        return None, result.errors
    pp = build_plan(node(), [pod], cgroup="v1").pods[0]
    try:
        spec = run_spec(doc, WHERE)
    except InvalidInput as exc:
        return None, [exc]
    s = spec.containers[0]
    return (run_args(pp, pp.containers[0], s, spec.restart_policy, "v1"), pp), []


@settings(deadline=None)
@given(manifests())
@example({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
          "spec": {"containers": [{"name": "app", "image": "--privileged", "args": ["localhost/bb"]}]}})
@example({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
          "spec": {"containers": [{"name": "app", "image": "localhost/bb", "command": ["--privileged"],
                                   "args": ["--", "-v", "/:/host"], "env": [{"name": "-e", "value": "--rm"}]}]}})
def test_any_manifest_is_refused_or_keeps_the_argv_shape(doc):
    built, errors = argv_or_refusal(doc)
    if built is None:
        assert errors and all(isinstance(e, InvalidInput) for e in errors)
        for e in errors:
            line = str(e)
            assert "\n" not in line and "\0" not in line and line.startswith("pods/t.yaml[0]: ")
            assert e.field, line  # names the field
        return
    argv, pp = built
    check_shape(argv, doc["spec"]["containers"][0], pp, doc["spec"]["containers"][0]["name"])
    # the init-container form (``--rm`` added by sdqos podman start) keeps it too
    check_shape([argv[0], "--rm", *argv[1:]], doc["spec"]["containers"][0], pp, doc["spec"]["containers"][0]["name"])


@pytest.mark.parametrize("image", ["--privileged", "--volume=/:/host", "-v", "nginx\n", "nginx\0", " nginx", "Nginx",
                                   "a" * 64, "x/-y", "nginx:-1", "nginx@sha256:short"])
def test_an_image_that_is_not_a_reference_is_refused_in_one_line(image):
    doc = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app", "image": image, "args": ["localhost/bb"]}]}}
    with pytest.raises(InvalidInput) as exc:
        run_spec(doc, WHERE)
    assert str(exc.value).startswith(f"{WHERE}: spec.containers[0].image: ") and "\n" not in str(exc.value)


@pytest.mark.parametrize("image", ["nginx", "nginx:1.25", "localhost/bb", "localhost:5000/team/app:v1",
                                   "registry.example.com/a/b@sha256:" + "0" * 64, "[::1]:5000/x:1", "a__b/c---d"])
def test_image_references_pass(image):
    assert image_error(image) is None


@pytest.mark.parametrize("field,value,message", [
    ("command", ["sh", "-c", "a\0b"], "spec.containers[0].command[2]: must not contain a NUL character"),
    ("args", ["ok", 3], "spec.containers[0].args[1]: must be a string, not int"),
    ("env", [{"name": "A=B", "value": "x"}], "spec.containers[0].env[0].name: 'A=B' must consist of printable ASCII"),
    ("env", [{"name": "", "value": "x"}], "spec.containers[0].env[0].name: Required value"),
    ("env", [{"name": "Ä", "value": "x"}], "spec.containers[0].env[0].name: 'Ä' must consist of printable ASCII"),
    ("env", [{"name": " A", "value": "x"}], "spec.containers[0].env[0].name: ' A' must not start with a space"),
    ("env", [{"name": "A", "value": "x\0"}], "spec.containers[0].env[0].value: must not contain a NUL character"),
    ("env", [{"name": "A", "value": 1}], "spec.containers[0].env[0].value: must be a string, not int"),
    ("workingDir", "srv", "spec.containers[0].workingDir: 'srv' must be an absolute path"),
    ("workingDir", "/srv\n--privileged", "spec.containers[0].workingDir: must not contain a line break"),
])
def test_fields_podman_cannot_carry_are_refused_naming_the_field(field, value, message):
    doc = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app", "image": "localhost/bb", field: value}]}}
    with pytest.raises(InvalidInput) as exc:
        run_spec(doc, WHERE)
    assert str(exc.value).startswith(f"{WHERE}: {message}")


def test_what_the_api_server_allows_passes_as_data():
    """Env names with dots, dashes and spaces inside (relaxed validation), values and args with
    newlines and leading dashes: all carried as they are."""
    doc = {"metadata": {"name": "web"}, "spec": {"containers": [{
        "name": "app", "image": "localhost/bb", "command": [], "args": ["--privileged", "line1\nline2"],
        "env": [{"name": "my.var-1 x", "value": "--volume=/:/host\n"}], "workingDir": "/srv/a b"}]}}
    s = run_spec(doc, WHERE).containers[0]
    assert (s.command, s.args, s.env, s.working_dir) == (
        None, ("--privileged", "line1\nline2"), (("my.var-1 x", "--volume=/:/host\n"),), "/srv/a b")
