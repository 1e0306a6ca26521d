"""PriorityClasses as the API server validates them, and the Priority admission plugin."""

from __future__ import annotations

import pytest
import yaml

from sdqos.kube.manifests import ParseResult, parse_priority_class_documents
from sdqos.kube.priority import PriorityClasses


def classes_of(text: str) -> tuple[PriorityClasses, list[str]]:
    result = ParseResult()
    got = parse_priority_class_documents(list(yaml.safe_load_all(text)), "priorityclasses.yaml", result)
    return got, [str(e) for e in result.errors]


PC = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: %s\n"


def test_priority_classes_as_kubectl_writes_them():
    text = (PC % ("batch", -5) + "description: batch jobs\npreemptionPolicy: Never\n---\n"
            + PC % ("web", 1000) + "globalDefault: true\n---\n"
            "apiVersion: v1\nkind: List\nitems:\n- " + (PC % ("top", 1_000_000_000)).replace("\n", "\n  "))
    got, errors = classes_of(text)
    assert errors == []
    assert got == PriorityClasses({"batch": -5, "web": 1000, "top": 1_000_000_000}, default="web")
    assert got.admit("", None) == ("web", 1000, None)
    assert got.admit("system-node-critical", None) == ("system-node-critical", 2_000_001_000, None)


@pytest.mark.parametrize("text, line", [
    (PC % ("top", 1_000_000_001), "priorityclasses.yaml[0]: value: maximum allowed value of a user defined "
                                  "priority is 1000000000"),
    (PC % ("system-mine", 10), "priorityclasses.yaml[0]: metadata.name: priority class names with 'system-' prefix "
                               "are reserved for system use only (system-node-critical, system-cluster-critical are "
                               "built in)"),
    (PC % ("system-node-critical", 2_000_001_000), "priorityclasses.yaml[0]: metadata.name: priority class names "
     "with 'system-' prefix are reserved for system use only (system-node-critical, system-cluster-critical are "
     "built in)"),
    (PC % ("a", 1) + "globalDefault: true\n---\n" + PC % ("b", 2) + "globalDefault: true\n",
     "priorityclasses.yaml[1]: globalDefault: PriorityClass a is already marked as default. Only one default can exist"),
    (PC % ("a", 1) + "---\n" + PC % ("a", 2), 'priorityclasses.yaml[1]: metadata.name: Duplicate PriorityClass "a" '
                                            "(also priorityclasses.yaml[0])"),
    (PC % ("a", '"high"'), "priorityclasses.yaml[0]: value: must be an integer, not a string"),
    (PC % ("a", 1) + "valeu: 2\n", 'priorityclasses.yaml[0]: valeu: unknown field (did you mean "value"?)'),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\n",
     "priorityclasses.yaml[0]: value: Required value"),
    (PC.replace("v1\n", "v1beta1\n", 1) % ("a", 1),
     'priorityclasses.yaml[0]: apiVersion: must be "scheduling.k8s.io/v1", not "scheduling.k8s.io/v1beta1"'),
    (PC % ("a", 1) + "preemptionPolicy: Sometimes\n", 'priorityclasses.yaml[0]: preemptionPolicy: Unsupported value: '
     '"Sometimes": supported values: "PreemptLowerPriority", "Never"'),
])
def test_priority_classes_are_validated_as_the_api_server_does(text, line):
    assert classes_of(text)[1] == [line]
