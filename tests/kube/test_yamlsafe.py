"""The YAML reader: SafeLoader's types, and the limits that protect against hostile files."""

from __future__ import annotations

import pytest
import yaml

from sdqos.kube.yamlsafe import YamlError, load_documents

SAME_AS_SAFELOADER = [
    "a: 1\nb: true\nc: null\nd: 1.5\ne: '1'\nf: 2024-01-01\ng: [1, {x: y}]\n",
    "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
    "m: &m {a: 1}\nn:\n  <<: [*m, {b: 2}]\n  a: 3\n",
    "a: &a [1]\nb: *a\n",
    "x: 0o17\ny: 0x1f\nz: 1_000\nw: .inf\nv: ~\nu: -.5\nt: 2001-12-14t21:59:43.10-05:00\n",
    "---\na: 1\n---\n---\nb: 2\n...\n",
    "k: |\n  multi\n  line\n",
    "cpu: 1e3\nmem: 1.0e+3\n",
    "- - - x\n",
]


@pytest.mark.parametrize("text", SAME_AS_SAFELOADER)
def test_same_objects_as_safeloader(text):
    assert load_documents(text) == [d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d is not None]


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


def test_remembered_scalars_give_what_safeloader_gives():
    """Scalar tags and values are memoised across documents: the second load of the same text (and
    the same text in other styles) must still give SafeLoader's objects, with their types."""
    text = ("a: [1, '1', 1.5, '1.5', true, 'true', yes, null, '', ~, 0o17, 017, 0x1f, .inf, 2001-12-14,"
            " 2001-12-14t21:59:43.10-05:00, !!str 3, !!int '4', !!float '5', \"6\"]\n")
    want = yaml.load(text, Loader=yaml.SafeLoader)
    for _ in range(2):
        got = load_documents(text)[0]
        assert got == want
        assert [type(v) for v in got["a"]] == [type(v) for v in want["a"]]


def test_scalar_memo_stays_bounded():
    from sdqos.kube import yamlsafe

    text = "".join(f"k{i}: {i}\n" for i in range(yamlsafe._MEMO_MAX + 10))
    doc = load_documents(text)[0]
    assert doc[f"k{yamlsafe._MEMO_MAX + 9}"] == yamlsafe._MEMO_MAX + 9
    assert len(yamlsafe._RESOLVED) <= yamlsafe._MEMO_MAX and len(yamlsafe._CONSTRUCTED) <= yamlsafe._MEMO_MAX
