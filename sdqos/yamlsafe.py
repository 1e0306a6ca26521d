"""YAML documents from untrusted bytes, with limits.

PyYAML's safe loader builds aliases as shared references, so a "billion laughs" file costs little
to load but explodes the moment anything walks it. We compose the node graph first, measure its
*expanded* size and depth, and refuse anything out of proportion before constructing objects.
"""

from __future__ import annotations

import yaml

MAX_EXPANDED_NODES = 1_000_000
MAX_DEPTH = 64
# libyaml's composer recurses in C and crashes the interpreter somewhere past ~10 000 levels.
# Every nesting level needs at least one indicator character of its own, so a text with fewer
# indicators than this cannot nest that deep; anything else gets an iterative event scan first.
_SAFE_INDICATORS = 8000
_INDICATORS = "[{-?:"

try:  # the C loader is ~10x faster when libyaml is present
    _Loader = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


class YamlError(ValueError):
    """Not loadable YAML; the message says where (line:column) and why."""


def _measure(node: yaml.Node, memo: dict[int, int], depth: int) -> int:
    """Expanded node count of a composed graph (shared alias targets counted once per use)."""
    if depth > MAX_DEPTH:
        raise YamlError(f"nesting deeper than {MAX_DEPTH} levels")
    key = id(node)
    if key in memo:
        return memo[key]
    total = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            total += _measure(child, memo, depth + 1)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            total += _measure(k, memo, depth + 1) + _measure(v, memo, depth + 1)
    if total > MAX_EXPANDED_NODES:
        raise YamlError(f"document expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)")
    memo[key] = total
    return total


def _check_depth_by_events(text: str) -> None:
    """Iterative depth check on the event stream (no recursion anywhere)."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlError(f"nesting deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_documents(text: str) -> list[object]:
    """All documents of a YAML stream, as plain Python objects. Empty documents are dropped."""
    if sum(text.count(ch) for ch in _INDICATORS) > _SAFE_INDICATORS:
        try:
            _check_depth_by_events(text)
        except yaml.MarkedYAMLError:
            pass  # reported with its position by the real load below
    loader = _Loader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _measure(node, {}, 0)
            docs.append(loader.construct_document(node))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        raise YamlError(f"{where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0]) from None
    except RecursionError:
        raise YamlError("nesting too deep") from None
    finally:
        loader.dispose()
    return [d for d in docs if d is not None]
