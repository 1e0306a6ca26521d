"""``sdqos man``: a man page (roff, section 1) generated from the command line's own help, so the
page cannot drift from the commands: every command, its usage, help text and options, sandbox's
subcommands included. Works on click's objects by duck typing: typer 0.28 carries its own copy of
click, earlier ones use click itself."""

from __future__ import annotations

import datetime
from typing import Any


def _esc(text: str) -> str:
    """Plain text as roff: backslashes escaped, non-ASCII as \\[uXXXX] (any troff reads it), a leading
    dot or quote guarded."""
    out = []
    text = "".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in text.replace("\\", "\\e"))
    for line in text.splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def _paragraphs(text: str) -> str:
    return "\n.PP\n".join(_esc(" ".join(p.split())) for p in text.strip().split("\n\n") if p.strip())


def _options(cmd: Any, ctx: Any) -> list[str]:
    out = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out += [".TP", f"\\fB{_esc(names)}\\fR", _esc(" ".join(help_text.split())) or "\\&"]
    return out


def _command(cmd: Any, path: str, parent: Any) -> list[str]:
    ctx = cmd.context_class(cmd, info_name=path.split()[-1], parent=parent, **cmd.context_settings)
    out = [".SS " + _esc(path), ".PP", f"\\fB{_esc(path)}\\fR {_esc(' '.join(cmd.collect_usage_pieces(ctx)))}", ".PP",
           _paragraphs(cmd.help or cmd.short_help or "")]
    out += _options(cmd, ctx)
    if hasattr(cmd, "list_commands"):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += _command(sub, f"{path} {name}", ctx)
    return out


def render(group: Any, version: str, today: datetime.date | None = None) -> str:
    """The whole page for ``group`` (the ``sdqos`` command)."""
    ctx = group.context_class(group, info_name="sdqos", **group.context_settings)
    date = (today or datetime.date.today()).isoformat()
    lines = [
        f'.TH SDQOS 1 "{date}" "sdqos {_esc(version)}" "User Commands"',
        ".SH NAME",
        "sdqos \\- kubelet's QoS model for pods and VMs, enforced as systemd units",
        ".SH SYNOPSIS",
        "\\fBsdqos\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        _paragraphs(group.help or ""),
        ".SH OPTIONS",
        *_options(group, ctx),
        ".SH COMMANDS",
    ]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None and not cmd.hidden:
            lines += _command(cmd, f"sdqos {name}", ctx)
    from sdqos.errors import EXIT_CODES

    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_CODES:
        lines += [".TP", f"\\fB{code}\\fR", _esc(meaning)]
    lines += [".SH FILES", ".TP", "\\fI/etc/sdqos\\fR", "node.yaml, pods/*.yaml (or *.json), vms/*.yaml (\\fB--config\\fR).",
              ".TP", "\\fI/run/sdqos\\fR", "the sync lock, what sdqos applied, its parse and plan cache.",
              ".SH SEE ALSO", "\\fBsystemctl\\fR(1), \\fBsystemd-cgls\\fR(1), \\fBsystemd.resource-control\\fR(5)"]
    return "\n".join(lines) + "\n"
