"""The YAML reader: scalars as Kubernetes (sigs.k8s.io/yaml, go-yaml v2) reads them, SafeLoader's
structure, and the limits that protect against hostile files."""

from __future__ import annotations

import pytest
import yaml

from sdqos.kube.yamlsafe import YamlError, load_documents

# Structure (anchors, merge keys, documents, block scalars) as SafeLoader builds it.
SAME_AS_SAFELOADER = [
    "base: &b {x: 1}\nd:\n  <<: *b\n  z: 2\n",
    "m: &m {a: 1}\nq:\n  <<: [*m, {b: 2}]\n  a: 3\n",
    "a: &a [1]\nb: *a\n",
    "---\na: 1\n---\n---\nb: 2\n...\n",
    "k: |\n  multi\n  line\n",
    "- - - x\n",
]


@pytest.mark.parametrize("text", SAME_AS_SAFELOADER)
def test_same_structure_as_safeloader(text):
    assert load_documents(text) == [d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d is not None]


# Scalars as Kubernetes reads them: sigs.k8s.io/yaml decodes with go-yaml v2 (goyaml.v2/resolve.go)
# into interface{}; where PyYAML's YAML 1.1 resolver says otherwise, its answer is in the comment.
GO_SCALARS = [
    ("1:30", "1:30"),  # PyYAML: 90 (base 60; go-yaml: "purposefully unsupported")
    ("1:30.5", "1:30.5"),  # PyYAML: 90.5
    ("0o17", 15),  # PyYAML: "0o17"
    ("0777", 511), ("0x1F", 31), ("0X1f", 31), ("0b101", 5), ("-0b101", -5), ("1_000", 1000),
    ("08", 8.0),  # ParseInt fails (octal), ParseFloat does not; PyYAML: "08"
    ("1e3", 1000.0),  # PyYAML: "1e3" (its floats need a dot)
    ("1.0e+3", 1000.0), (".5", 0.5), ("-.5", -0.5), ("1.", 1.0), ("+1", 1),
    ("1e400", "1e400"),  # ParseFloat overflows: a string; PyYAML: inf
    ("y", True), ("Y", True), ("n", False), ("N", False),  # PyYAML: strings
    ("yes", True), ("No", False), ("on", True), ("OFF", False), ("true", True), ("FALSE", False),
    ("~", None), ("null", None), ("Null", None), ("", None),
    ("2024-01-02", "2024-01-02"),  # a timestamp stays its text in interface{}; PyYAML: a date
    ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("18446744073709551615", 2**64 - 1), ("18446744073709551616", 2**64), ("-9223372036854775809", -(2**63) - 1),
    ("nan", "nan"), ("inf", "inf"), ("abc", "abc"), ("True", True), ("tRUE", "tRUE"),
]


@pytest.mark.parametrize("text, expected", GO_SCALARS)
def test_plain_scalars_resolve_as_kubernetes_resolves_them(text, expected):
    (doc,) = load_documents(f"v: {text}\n")
    assert doc["v"] == expected and type(doc["v"]) is type(expected)


def test_special_floats_and_quoted_scalars():
    (doc,) = load_documents("a: .inf\nb: -.Inf\nc: .NaN\nd: '1e3'\ne: \"y\"\nf: |\n  1:30\n")
    assert doc["a"] == float("inf") and doc["b"] == float("-inf") and doc["c"] != doc["c"]
    assert (doc["d"], doc["e"], doc["f"]) == ("1e3", "y", "1:30\n")


@pytest.mark.parametrize("text, expected", [
    ("1: a", "1"), ("true: a", "true"), ("y: a", "true"), ("1.5: a", "1.5"), ("0x10: a", "16"), ("'1': a", "1"),
])
def test_map_keys_become_strings(text, expected):
    assert load_documents(text) == [{expected: "a"}]


def test_a_null_key_is_refused():
    with pytest.raises(YamlError, match="unsupported map key None"):
        load_documents("~: a\n")


def billion_laughs(levels: int = 9) -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for n in "bcdefghijk"[: levels - 1]:
        text += f"{n}: &{n} [" + ",".join(["*" + prev] * 9) + "]\n"
        prev = n
    return text


REFUSED = [
    (billion_laughs(), "document expands to more than 1000000 nodes (alias bomb?)"),
    ("[" * 100_000 + "]" * 100_000, "nesting deeper than 64 levels"),  # libyaml's composer would crash here
    ("- " * 30_000 + "x", "nesting deeper than 64 levels"),
    ("a: 1\na: 2\n", "line 2 column 4: key 'a' is given twice"),
    ("? [a]\n: 1\n", "a mapping key must be a scalar"),
    ("x: !!python/object:os.system ls\n", "unsupported tag 'tag:yaml.org,2002:python/object:os.system'"),
    ("a: *nope\n", "alias *nope refers to no (finished) anchor"),
    ("a: [1,\n b", "line 3 column 1: did not find expected ',' or ']'"),
]


@pytest.mark.parametrize("text,message", REFUSED, ids=[m for _, m in REFUSED])
def test_refused_with_a_reason(text, message):
    with pytest.raises(YamlError) as exc:
        load_documents(text)
    assert message in str(exc.value)


def test_remembered_scalars_resolve_the_same_every_time():
    """Plain scalars are memoised across documents: the second load of the same text (and the same
    text in other styles) must give the same objects with the same types; explicit tags go through
    SafeLoader's constructors."""
    text = ("a: [1, '1', 1.5, '1.5', true, 'true', yes, null, '', ~, 0o17, 017, 0x1f, .inf, 2001-12-14,"
            " 2001-12-14t21:59:43.10-05:00, !!str 3, !!int '4', !!float '5', \"6\", y, 'y', 1e3, '1e3']\n")
    want = [1, "1", 1.5, "1.5", True, "true", True, None, "", None, 15, 15, 31, float("inf"), "2001-12-14",
            "2001-12-14t21:59:43.10-05:00", "3", 4, 5.0, "6", True, "y", 1000.0, "1e3"]
    for _ in range(2):
        got = load_documents(text)[0]["a"]
        assert got == want
        assert [type(v) for v in got] == [type(v) for v in want]


def test_scalar_memo_stays_bounded():
    from sdqos.kube import yamlsafe

    text = "".join(f"k{i}: {i}\n" for i in range(yamlsafe._MEMO_MAX + 10))
    doc = load_documents(text)[0]
    assert doc[f"k{yamlsafe._MEMO_MAX + 9}"] == yamlsafe._MEMO_MAX + 9
    assert len(yamlsafe._RESOLVED) <= yamlsafe._MEMO_MAX and len(yamlsafe._CONSTRUCTED) <= yamlsafe._MEMO_MAX


def test_importing_yamlsafe_leaves_pyyaml_and_re_as_they_are():
    """No private patch: importing sdqos' loader before PyYAML leaves re.compile and PyYAML's
    module-level patterns exactly as PyYAML made them."""
    import subprocess
    import sys

    probe = ("import re; from sdqos.kube import yamlsafe; import yaml\n"
             "assert re.compile.__module__ == 're'\n"
             "assert isinstance(yaml.reader.Reader.NON_PRINTABLE, re.Pattern)\n"
             "assert all(isinstance(rx, re.Pattern) for rows in yaml.resolver.Resolver.yaml_implicit_resolvers.values()"
             " for _, rx in rows)\n")
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=120)
