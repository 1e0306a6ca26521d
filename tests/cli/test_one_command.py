"""The console script builds only the command it runs (``sdqos.cli.app.for_args``): what a user
sees — help, errors, exit codes — is what the whole app gives, for every command."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from sdqos.cli.app import app, for_args

from tests.cli.test_conventions import COMMANDS, PODMAN

OWN = [c for c in COMMANDS if c != "sandbox"]  # (sandbox is loaded lazily by the group itself)


def _invoke(a: typer.Typer, args: list[str]):
    return CliRunner().invoke(a, args, prog_name="sdqos")


@pytest.mark.parametrize("cmd", [[c] for c in OWN] + [["podman", s] for s in PODMAN])
@pytest.mark.parametrize("tail", [["--help"], ["--no-such-option"]])
def test_a_command_alone_answers_as_the_whole_app(cmd, tail):
    alone, whole = _invoke(for_args(cmd + tail), cmd + tail), _invoke(app, cmd + tail)
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert alone.exit_code in (0, 2) and alone.output.startswith("Usage: sdqos")


@pytest.mark.parametrize("cmd", OWN)
def test_only_the_named_command_is_built(cmd):
    assert sorted(typer.main.get_command(for_args([cmd, "--help"])).commands) == [cmd]


@pytest.mark.parametrize("args", [[], ["--help"], ["-h"], ["--version"], ["synk"], ["sandbox", "list"]])
def test_anything_else_gets_the_whole_app(args):
    assert for_args(args) is app


def test_shell_completion_gets_the_whole_app(monkeypatch):
    monkeypatch.setenv("_SDQOS_COMPLETE", "bash_complete")
    assert for_args(["sync"]) is app


def test_the_app_itself_is_not_changed():
    for_args(["sync"])
    assert len(app.registered_commands) == len(OWN) - 1 and [g.name for g in app.registered_groups] == ["podman"]
