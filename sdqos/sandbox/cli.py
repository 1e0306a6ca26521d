"""`sdqos sandbox up|exec|status|list|down`: the typer sub-app, built only when the command is named
(importing typer costs every other command)."""

from __future__ import annotations

from typing import Any, NoReturn

from sdqos.errors import SandboxError
from sdqos.sandbox.boot import down, list_sandboxes, status, up
from sdqos.sandbox.exec import exec_in
from sdqos.sandbox.units import BOOT_TIMEOUT, DEFAULT_NAME


def make_app() -> Any:
    import typer

    cli = typer.Typer(
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,  # plain help, as the rest of sdqos
        help="A private, throwaway systemd (own pid/mount/cgroup/uts namespaces and system bus) "
        "to try sdqos on without touching the host's init. Needs root.",
    )

    def fail(e: SandboxError) -> NoReturn:
        typer.echo(f"sdqos sandbox: {e}", err=True)
        raise typer.Exit(e.exit_code)

    @cli.command("up")
    def cmd_up(
        name: str = typer.Argument(DEFAULT_NAME, help="sandbox name"),
        timeout: float = typer.Option(BOOT_TIMEOUT, help="seconds to wait for systemd on its bus"),
        machined: bool = typer.Option(False, "--machined", help="also run systemd-machined (opt-in)"),
        libvirt: bool = typer.Option(False, "--libvirt", help="also run libvirtd and machined, for qemu domains (opt-in)"),
    ) -> None:
        """Boot a sandbox; error if NAME is already running."""
        try:
            up(name, timeout, machined=machined, libvirt=libvirt)
            typer.echo(status(name).describe())
        except SandboxError as e:
            fail(e)
        flag = "" if name == DEFAULT_NAME else f" -n {name}"
        typer.echo(f"run inside: sdqos sandbox exec{flag} -- systemctl status")

    @cli.command(
        "exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def cmd_exec(
        argv: list[str] = typer.Argument(..., help="command and its arguments (put -- before them)"),
        name: str = typer.Option(DEFAULT_NAME, "--name", "-n", help="sandbox name"),
    ) -> None:
        """Run a command inside a sandbox (its mount/pid/uts namespaces); exits with its status."""
        try:
            exec_in(name, argv)
        except SandboxError as e:
            fail(e)

    @cli.command("status")
    def cmd_status(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name")) -> None:
        """Show whether NAME runs, its PID, bus address, systemd version, units; exit 1 if not running."""
        try:
            s = status(name)
        except SandboxError as e:
            fail(e)
        typer.echo(s.describe())
        if not s.running:
            raise typer.Exit(1)

    @cli.command("list")
    def cmd_list() -> None:
        """List sandboxes (running or left over)."""
        for s in list_sandboxes():
            what = f"running  pid {s.pid}  {s.bus_address}" if s.running else f"stale ({s.problem})"
            typer.echo(f"{s.name}  {what}")

    @cli.command("down")
    def cmd_down(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name")) -> None:
        """Kill a sandbox and remove its cgroups and state (idempotent)."""
        try:
            found = down(name)
        except SandboxError as e:
            fail(e)
        typer.echo(f"{name}: {'removed' if found else 'nothing to remove'}")

    return cli
