"""YAML documents from untrusted bytes, with limits, fast.

Objects are built straight from libyaml's event stream, without PyYAML's node graph (whose node
and position objects cost four times the parse itself) and without recursion (libyaml's C
composer crashes the interpreter on documents nested ~10 000 deep). The same pass enforces the
limits: aliases are shared references, so a "billion laughs" file is cheap to load but explodes
the moment anything walks it — every use of an alias counts the full size of what it refers to,
and documents expanding past a million nodes, or nested deeper than 64, are refused.

Plain scalars resolve as Kubernetes resolves them — sigs.k8s.io/yaml, which decodes with go-yaml
v2 into interface{} and converts to JSON — not as PyYAML's YAML 1.1 resolver does: ``1:30`` is the
string "1:30" (no base 60), ``0o17`` is 15, ``1e3`` is a float, ``y``/``n`` are booleans like
``yes``/``no``/``on``/``off``, a timestamp stays the text it was, a number too big for int64 and
uint64 is kept exact, ``1e400`` is a string; map keys that are numbers or booleans become strings
(``strconv`` formatting), a null key is an error; a number where a string belongs is the field
check's error, as in Kubernetes. Quoted scalars are strings. Merge keys (``<<``)
work. Like kubectl's strict decoding, a key given twice in one mapping is an error rather than a
silent "last one wins".
"""

from __future__ import annotations

import datetime
from typing import Any


import yaml

from sdqos.errors import YamlError
from sdqos.kube.goyaml import go_float_text, go_scalar

MAX_EXPANDED_NODES = 1_000_000
MAX_DEPTH = 64
MAX_DOCUMENTS = 10_000  # per file: 8 MiB of "--- {}" would otherwise be a million documents

_Loader: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:  # libyaml's parser is ~10x faster when present
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_MISSING = object()


# A manifest repeats the same few scalars ("cpu", "100m", "true", 80 ...): resolving a plain scalar's
# tag runs PyYAML's regexes in Python, so the answers are kept (the tag depends only on the text
# and its implicit flags; a constructed int, float, bool, None or date is immutable and shared).
_RESOLVED: dict[str, object] = {}  # plain scalar text -> what go_scalar made of it
_CONSTRUCTED: dict[tuple, object] = {}
_MEMO_MAX = 10_000  # then start over: a file of unique numbers must not grow these without bound
_MEMO_LEN = 12  # only short scalars repeat (keys, units, flags); names and UIDs would only take memory
_IMMUTABLE = (int, float, type(None), datetime.date, bytes)  # bool is an int; datetime is a date


def go_key(key: object, event) -> str:
    """sigs.k8s.io/yaml's map keys: JSON has only string keys, so ints, floats and bools become
    their strconv text; a null key (or a mapping or list as key) is refused."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_float_text(key, 32)
    raise YamlError(f"{_where(event)}unsupported map key {key!r}")


def _remember(memo: dict, key: tuple, value: object) -> None:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value


def _where(event) -> str:
    mark = getattr(event, "start_mark", None)
    return f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""


class _Collection:
    """A mapping or sequence under construction."""

    __slots__ = ("value", "anchor", "start_total", "key", "merges", "event")

    def __init__(self, value, anchor, start_total, event) -> None:
        self.value = value
        self.anchor = anchor
        self.start_total = start_total
        self.key = _MISSING  # mappings: the key waiting for its value
        self.merges: list = []
        self.event = event


class _Builder:
    def __init__(self, loader) -> None:
        self.loader = loader
        self.anchors: dict[str, tuple[object, int]] = {}  # anchor -> (object, expanded size)
        self.stack: list[_Collection] = []
        self.total = 0
        self.documents = 0
        self.docs: list[object] = []

    def count(self, n: int, event) -> None:
        self.total += n
        if self.total > MAX_EXPANDED_NODES:
            raise YamlError(f"{_where(event)}document expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)")

    def scalar(self, event):
        tag, value = event.tag, event.value
        if tag is None:
            if event.style or not event.implicit[0]:
                return value  # quoted, literal or folded: a string
            if value == "<<":
                return _MERGE_KEY
            if len(value) > _MEMO_LEN:
                return go_scalar(value)
            out = _RESOLVED.get(value, _MISSING)
            if out is _MISSING:
                out = go_scalar(value)  # str, bool, None, int or float: immutable, shareable
                _remember(_RESOLVED, value, out)
            return out
        if tag == "!":
            return value
        if tag == _STR:
            return value
        if tag == _MERGE:
            return _MERGE_KEY
        key = (tag, value, event.style)
        out = _CONSTRUCTED.get(key, _MISSING)
        if out is _MISSING:
            constructor = self.loader.yaml_constructors.get(tag)
            if constructor is None:
                raise YamlError(f"{_where(event)}unsupported tag {tag!r}")
            out = constructor(self.loader, yaml.ScalarNode(tag, value, None, None, event.style))
            if isinstance(out, _IMMUTABLE):
                _remember(_CONSTRUCTED, key, out)
        return out

    def add(self, value, event) -> None:
        """Put a finished value into its parent (or make it a document)."""
        if not self.stack:
            self.docs.append(value)
            return
        top = self.stack[-1]
        if isinstance(top.value, list):
            top.value.append(value)
        elif top.key is _MISSING:
            if isinstance(value, (dict, list)):
                raise YamlError(f"{_where(event)}a mapping key must be a scalar")
            top.key = value if value is _MERGE_KEY else go_key(value, event)
        else:
            key, top.key = top.key, _MISSING
            if key is _MERGE_KEY:
                top.merges.append((value, event))
            elif key in top.value:
                raise YamlError(f"{_where(event)}key {key!r} is given twice")
            else:
                top.value[key] = value

    def feed(self, event) -> None:
        kind = event.__class__
        if kind is yaml.ScalarEvent:
            self.count(1, event)
            value = self.scalar(event)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self.add(value, event)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            if event.tag not in (None, "!", _MAP if kind is yaml.MappingStartEvent else _SEQ):
                raise YamlError(f"{_where(event)}unsupported tag {event.tag!r}")
            if len(self.stack) >= MAX_DEPTH:
                raise YamlError(f"{_where(event)}nesting deeper than {MAX_DEPTH} levels")
            self.count(1, event)
            value = {} if kind is yaml.MappingStartEvent else []
            self.stack.append(_Collection(value, event.anchor, self.total - 1, event))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            top = self.stack.pop()
            for merged, ev in top.merges:
                for source in merged if isinstance(merged, list) else [merged]:
                    if not isinstance(source, dict):
                        raise YamlError(f"{_where(ev)}a merge key (<<) needs a mapping")
                    for k, v in source.items():
                        top.value.setdefault(k, v)
            if top.anchor:
                self.anchors[top.anchor] = (top.value, self.total - top.start_total)
            self.add(top.value, event)
        elif kind is yaml.AliasEvent:
            if event.anchor not in self.anchors:
                raise YamlError(f"{_where(event)}alias *{event.anchor} refers to no (finished) anchor")
            value, size = self.anchors[event.anchor]
            self.count(size, event)
            self.add(value, event)
        elif kind is yaml.DocumentStartEvent:
            self.anchors.clear()  # anchors do not cross documents
            self.documents += 1
            if self.documents > MAX_DOCUMENTS:
                raise YamlError(f"{_where(event)}more than {MAX_DOCUMENTS} documents in one file")


_MERGE_KEY = object()


def load_documents(text: str) -> list[object]:
    """All documents of a YAML stream, as plain Python objects. Empty documents are dropped."""
    builder = _Builder(_Loader(""))
    loader = _Loader(text)
    try:
        # yaml.parse's loop, without its generator and check_event(): one C call per event.
        # get_event() answers None once the stream's end has been read.
        get, feed = loader.get_event, builder.feed
        while (event := get()) is not None:
            feed(event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context
        if problem and "maximum nesting depth" in problem:  # PyYAML >= 6.0.4 scans ahead and stops first
            problem = f"nesting deeper than {MAX_DEPTH} levels"
        raise YamlError(f"{where}{problem}") from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0]) from None
    except (ValueError, TypeError) as exc:  # a constructor refusing a scalar (e.g. a bad timestamp)
        if isinstance(exc, YamlError):
            raise
        raise YamlError(str(exc).splitlines()[0]) from None
    finally:
        loader.dispose()
    return [d for d in builder.docs if d is not None]
