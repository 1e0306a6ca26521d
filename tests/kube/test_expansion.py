"""kubelet's $(VAR) expansion (third_party/forked/golang/expansion): its own test table, and how
sdqos.kube.runspec applies it to env, command and args."""

from __future__ import annotations

import pytest

from sdqos.kube.expansion import expand, expand_env
from sdqos.kube.runspec import run_spec

ENV = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}


@pytest.mark.parametrize("text,want", [
    ("$(VAR_A)", "A"), ("___$(VAR_B)___", "___B___"), ("$(VAR_A)-$(VAR_A)", "A-A"), ("$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"),
    ("f000-$$VAR_A", "f000-$VAR_A"), ("$$$(VAR_A)", "$A"), ("$$$$$$(VAR_A)", "$$$(VAR_A)"), ("$$(VAR_A)", "$(VAR_A)"),
    ("$(VAR_REF)", "$(VAR_A)"),  # no recursion
    ("$(VAR_EMPTY)", ""), ("$(VAR_DNE)", "$(VAR_DNE)"), ("$(VAR_A", "$(VAR_A"), ("$(", "$("), ("$", "$"),
    ("$VAR_A", "$VAR_A"), ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"), ("$()", "$()"), ("\n$(VAR_A)\n", "\nA\n"),
    ("Ä$(VAR_A)ü", "ÄAü"),
])
def test_expand_as_kubelet(text, want):
    assert expand(text, ENV) == want


def test_env_sees_what_was_defined_before_it():
    assert expand_env((("A", "1"), ("B", "$(A)-$(C)"), ("C", "3"), ("A", "$(A)$(A)"))) == (
        ("A", "1"), ("B", "1-$(C)"), ("C", "3"), ("A", "11"))


def test_command_and_args_see_the_whole_env():
    doc = {"metadata": {"name": "web"}, "spec": {"containers": [{
        "name": "app", "image": "localhost/bb", "env": [{"name": "PORT", "value": "8080"}, {"name": "URL", "value": "http://x:$(PORT)"}],
        "command": ["serve", "$(URL)"], "args": ["--port=$(PORT)", "$$(PORT)", "$(NOPE)"]}]}}
    s = run_spec(doc, "pods/t.yaml[0]").containers[0]
    assert s.env == (("PORT", "8080"), ("URL", "http://x:8080"))
    assert s.command == ("serve", "http://x:8080") and s.args == ("--port=8080", "$(PORT)", "$(NOPE)")
