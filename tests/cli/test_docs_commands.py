"""Every `sdqos …` command line in README.md and docs/*.md names commands and flags the real CLI has:
a concrete line parses (click's own parser, as the shell would hand it the words), a synopsis
(`[--config DIR]`, `NS/NAME`, `…`) names only options its command takes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer.main

from sdqos.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDER = re.compile(r"[\[\]…]|\\\||(?<![\w-])[A-Z][A-Z0-9_]*(?:/[A-Z]+)?(?![\w-])")
DESCRIPTION = re.compile(r"sdqos (?:pod|container|vm|[A-Z])")  # a unit's Description, not a command
GLOBAL = {"--help", "-h", "--version", "--install-completion", "--show-completion"}


def _texts(md: str) -> list[str]:
    """Code: the lines of fenced blocks (not YAML/JSON), and inline code spans elsewhere."""
    out: list[str] = []
    parts = re.split(r"^```(\w*)\n(.*?)^```", md, flags=re.S | re.M)
    for i in range(0, len(parts), 3):
        prose = parts[i]
        out += re.findall(r"`([^`\n]+)`", prose)
        if i + 2 < len(parts) and parts[i + 1] not in ("yaml", "json"):
            out += parts[i + 2].splitlines()
    return out


def command_lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for text in _texts(path.read_text()):
            text = text.split(" #", 1)[0]
            for m in re.finditer(r"(?:^|(?<=[\s(;&|`$]))sdqos(?=\s|$)", text):
                rest = text[m.start():]
                line = re.split(r"\s(?:&&|\|\||;|\||>)\s?", rest, maxsplit=1)[0].strip()
                if not DESCRIPTION.match(line):
                    found.append((path.name, line))
    return sorted(set(found))


def _resolve(words: list[str]):
    """(click command, its context path, the remaining words) for `sdqos WORDS…`."""
    group = typer.main.get_command(app)
    ctx = group.make_context("sdqos", [], resilient_parsing=True)
    cmd, i = group, 0
    while hasattr(cmd, "get_command") and i < len(words) and not words[i].startswith("-"):
        names = re.split(r"\\?\||/", words[i])  # `start|stop`, `start/stop`: each must be a command
        subs = [cmd.get_command(ctx, n) for n in names]
        if None in subs:
            break
        sub = subs[0]
        ctx = sub.make_context(words[i], [], parent=ctx, resilient_parsing=True)
        cmd, i = sub, i + 1
    return cmd, ctx, words[i:]


LINES = command_lines()


def test_the_docs_hold_command_lines():
    assert len(LINES) > 60, len(LINES)


@pytest.mark.parametrize("where,line", LINES, ids=[f"{w}:{l}" for w, l in LINES])
def test_command_line_parses_against_the_cli(where, line):
    try:
        words = shlex.split(line)[1:]
    except ValueError:
        words = line.split()[1:]
    cmd, ctx, rest = _resolve(words)
    assert rest == [] or not hasattr(cmd, "get_command") or rest[0].startswith("-"), \
        f"{where}: `{line}`: no command {rest[0]!r}"
    known = GLOBAL | {o for p in cmd.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}
    if "--" in rest:
        rest = rest[:rest.index("--")]  # what follows is the command sdqos runs
    flags = [w.split("=", 1)[0] for w in rest if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", w)]
    unknown = [f for f in flags if f not in known]
    assert not unknown, f"{where}: `{line}`: `{ctx.command_path}` has no {unknown}"
    if PLACEHOLDER.search(line):
        return  # a synopsis: its flags exist, that is all it claims
    try:
        cmd.make_context(cmd.name, list(rest), parent=ctx.parent, resilient_parsing=True)
    except Exception as exc:  # click's UsageError and friends
        raise AssertionError(f"{where}: `{line}` does not parse: {exc}") from None
