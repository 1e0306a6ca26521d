"""kubelet's ``$(VAR)`` expansion in env values, command and args
(third_party/forked/golang/expansion, as ExpandContainerCommandAndArgs and makeEnvironmentVariables
use it). Pure.

``$(NAME)`` becomes the variable's value when it is defined (else it stays as written), ``$$`` is
one ``$``, anything else after ``$`` is kept. An env value sees only the variables defined before
it; command and args see them all. Without this, ``args: ["--port=$(PORT)"]`` would reach the
container literally where kubelet passes ``--port=8080``.
"""

from __future__ import annotations

from collections.abc import Mapping


def expand(text: str, env: Mapping[str, str]) -> str:
    out: list[str] = []
    checkpoint = cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:  # incomplete reference: "$(" kept, reading goes on after "("
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env[name] if name in env else f"$({name})")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def expand_env(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Each value expanded with the variables defined before it (a later definition wins)."""
    seen: dict[str, str] = {}
    out = []
    for name, value in env:
        value = expand(value, seen)
        seen[name] = value
        out.append((name, value))
    return tuple(out)
