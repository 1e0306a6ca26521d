"""Command-line interface (typer). Placeholder until the commands land."""

import typer

app = typer.Typer(no_args_is_help=True, help="sdqos: kubelet's QoS model as systemd units.")


@app.callback()
def _root() -> None:
    """sdqos: kubelet's QoS cgroup model, enforced as systemd units over D-Bus."""


def main() -> None:
    app()
