"""`sdqos sandbox up|exec|status|list|down`: the typer sub-app. This module is imported only when
the command is named (``sdqos.sandbox.app``; importing typer costs every other command), and never
by the stages a sandbox runs as (``python -m sdqos.sandbox``)."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any, NoReturn, Optional

import typer

from sdqos.errors import SandboxError
from sdqos.sandbox.boot import down, list_sandboxes, status, up
from sdqos.sandbox.exec import exec_in
from sdqos.sandbox.units import BOOT_TIMEOUT, DEFAULT_NAME


def _is_sandbox(candidate: str) -> bool:
    return any(s.name == candidate for s in list_sandboxes())


def _named_before_dashes(argv: list[str]) -> bool:
    """Whether the command line put one word between `exec` and `--` (click drops the `--`
    itself): then that word is NAME, and a missing sandbox is reported under that name."""
    raw = sys.argv[1:]
    if "exec" not in raw or "--" not in raw:
        return False
    before = [a for a in raw[raw.index("exec") + 1:raw.index("--")] if not a.startswith("-")]
    return len(before) == 1 and len(argv) > 1 and argv[0] == before[0]


def complete_sandboxes(incomplete: str) -> list[str]:
    """Shell completion: the sandboxes there are (as `sandbox list` shows them)."""
    try:
        return [s.name for s in list_sandboxes() if s.name.startswith(incomplete)]
    except Exception:
        return []


def _json(s) -> dict:
    """A sandbox's status as JSON values (paths as text), its keys in camelCase as every JSON
    sdqos prints (``busAddress``, ``systemdVersion``)."""
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.capitalize() for part in rest)

    return {camel(k): v for k, v in json.loads(json.dumps(dataclasses.asdict(s), default=str)).items()}


def make_app() -> Any:
    cli = typer.Typer(
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,  # plain help, as the rest of sdqos
        help="A private, throwaway systemd (own pid/mount/cgroup/uts namespaces and system bus) "
        "to try sdqos on without touching the host's init. Needs root.",
    )
    cli.command("up")(cmd_up)
    cli.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(cmd_exec)
    cli.command("status")(cmd_status)
    cli.command("list")(cmd_list)
    cli.command("down")(cmd_down)
    return cli


def _output(value: str) -> str:
    if value not in ("text", "json"):
        raise typer.BadParameter(f"{value!r} is not one of 'text', 'json'")
    return value


def _fail(e: SandboxError) -> NoReturn:
    typer.echo(f"sdqos sandbox: {e}", err=True)
    raise typer.Exit(e.exit_code)


OUTPUT_OPT = typer.Option("text", "--output", "-o", help="text or json", callback=_output)


def cmd_up(
    name: str = typer.Argument(DEFAULT_NAME, help="sandbox name", autocompletion=complete_sandboxes),
    timeout: float = typer.Option(BOOT_TIMEOUT, help="seconds to wait for systemd on its bus"),
    machined: bool = typer.Option(False, "--machined", help="also run systemd-machined (opt-in)"),
    libvirt: bool = typer.Option(False, "--libvirt", help="also run libvirtd and machined, for qemu domains (opt-in)"),
    replace: bool = typer.Option(False, "--replace", help="if NAME is running, take it down and boot it afresh"),
) -> None:
    """Boot a sandbox. If NAME already runs, it is left as it is (exit 0), or rebooted with --replace."""
    try:
        current = status(name)
        if current.running and not replace:
            typer.echo(current.describe())
            typer.echo(f"{name}: already running (--replace boots it afresh)")
            return
        if current.running:
            down(name)
        up(name, timeout, machined=machined, libvirt=libvirt)
        typer.echo(status(name).describe())
    except SandboxError as e:
        _fail(e)
    where = "" if name == DEFAULT_NAME else f" {name}"
    typer.echo(f"run inside: sdqos sandbox exec{where} -- systemctl status")


def cmd_exec(
    argv: list[str] = typer.Argument(..., metavar="[NAME] -- COMMAND...", autocompletion=complete_sandboxes,
                                     help="sandbox name (as for up/status/down), then -- and the command"),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="sandbox name (the same as NAME)",
                                       autocompletion=complete_sandboxes),
) -> None:
    """Run a command inside a sandbox (its mount/pid/uts namespaces); exits with its status.

    `sdqos sandbox exec demo -- systemctl status`; without NAME, the sandbox named sdqos."""
    if name is None:
        named = _named_before_dashes(argv)
        if named:  # `exec foo -- cmd`: foo is the sandbox, whether or not it exists
            name, argv = argv[0], argv[1:]
        elif len(argv) > 1 and _is_sandbox(argv[0]):
            name, argv = argv[0], argv[1:]
        else:
            name = DEFAULT_NAME
    try:
        exec_in(name, argv)
    except SandboxError as e:
        _fail(e)


def cmd_status(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name", autocompletion=complete_sandboxes), output: str = OUTPUT_OPT) -> None:
    """Show whether NAME runs, its PID, bus address, systemd version, units; exit 1 if not running."""
    try:
        s = status(name)
    except SandboxError as e:
        _fail(e)
    typer.echo(json.dumps(_json(s), indent=2) if output == "json" else s.describe())
    if not s.running:
        raise typer.Exit(1)


def cmd_list(output: str = OUTPUT_OPT) -> None:
    """List sandboxes (running or left over)."""
    if output == "json":
        typer.echo(json.dumps([_json(s) for s in list_sandboxes()], indent=2))
        return
    for s in list_sandboxes():
        what = f"running  pid {s.pid}  {s.bus_address}" if s.running else f"stale ({s.problem})"
        typer.echo(f"{s.name}  {what}")


def cmd_down(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name", autocompletion=complete_sandboxes)) -> None:
    """Kill a sandbox and remove its cgroups and state (idempotent)."""
    try:
        found = down(name)
    except SandboxError as e:
        _fail(e)
    typer.echo(f"{name}: {'removed' if found else 'nothing to remove'}")
