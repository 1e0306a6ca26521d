"""The ``sdqos`` command line. Each command is a thin shell around a pure core: load config →
engine → (D-Bus) → render. Errors become one readable line on stderr and a documented exit code:
0 ok, 1 error (systemd, host), 2 invalid input, 3 lock held by another sync.
"""

from __future__ import annotations

import contextlib
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Iterator, List, Optional

import typer

from . import __version__
from .errors import EXIT_INVALID, InvalidInput, SdqosError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    help="Kubelet's QoS model (node allocatable → QoS tiers → pods → containers, plus VMs in "
    "machine.slice) enforced as systemd units over D-Bus.\n\n"
    "Exit codes: 0 ok, 1 error, 2 invalid input, 3 another sync holds the lock.",
)

CONFIG_HELP = "Config directory: node.yaml, pods/*.yaml, vms/*.yaml."
ConfigOpt = typer.Option(Path("/etc/sdqos"), "--config", "-c", envvar="SDQOS_CONFIG", help=CONFIG_HELP)
InsecureOpt = typer.Option(False, "--insecure", help="Accept config files writable by non-root users.")


class Output(str, Enum):
    text = "text"
    json = "json"


class CgroupMode(str, Enum):
    auto = "auto"
    v1 = "v1"
    v2 = "v2"


def err(line: str) -> None:
    typer.echo(f"sdqos: {line}", err=True)


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn sdqos errors into one line on stderr and their exit code."""
    try:
        yield
    except SdqosError as exc:
        for e in getattr(exc, "errors", None) or [exc]:
            err(f"error: {e}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err("interrupted")
        raise typer.Exit(130) from None


def resolve_cgroup(mode: CgroupMode) -> str:
    from .host import detect_cgroup_mode

    return detect_cgroup_mode() if mode == CgroupMode.auto else mode.value


def print_errors(errors: list[InvalidInput]) -> None:
    for e in errors:
        err(f"error: {e}")


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        typer.echo(f"sdqos {__version__}")
        raise typer.Exit(0)


@app.command()
def plan(
    config: Path = ConfigOpt,
    cgroup: CgroupMode = typer.Option(CgroupMode.auto, "--cgroup", help="Which cgroup version to plan for."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text (a tree) or json (a stable contract)."),
    insecure: bool = InsecureOpt,
) -> None:
    """Show the unit tree with kubelet's values for every tier, pod, container and VM. No D-Bus."""
    from .config import load_config
    from .engine import build_plan
    from .render import plan_json, plan_text

    with cli_errors():
        cfg = load_config(config, insecure=insecure)
        p = build_plan(cfg.node, cfg.pods, cfg.vms, resolve_cgroup(cgroup))
        errors = [str(e) for e in cfg.errors]
        if output == Output.json:
            typer.echo(json.dumps(plan_json(p, errors), indent=2))
        else:
            typer.echo(plan_text(p, color=sys.stdout.isatty()))
        print_errors(cfg.errors)
        if cfg.errors:
            raise typer.Exit(EXIT_INVALID)


@app.command()
def explain(
    pod: str = typer.Argument(..., help="A pod manifest file (what-if: added to the config), or namespace/name of a configured pod."),
    config: Path = ConfigOpt,
    cgroup: CgroupMode = typer.Option(CgroupMode.auto, "--cgroup"),
    insecure: bool = InsecureOpt,
) -> None:
    """Every value of one pod with the formula and inputs that produced it."""
    from .config import load_config
    from .engine import build_plan
    from .explain import explain_pod
    from .manifests import ParseResult, check_duplicates, parse_pod_documents
    from .yamlsafe import YamlError, load_documents

    with cli_errors():
        cfg = load_config(config, insecure=insecure)
        pods = list(cfg.pods)
        wanted: list[str] = []
        path = Path(pod)
        if path.is_file():
            try:
                docs = load_documents(path.read_text(encoding="utf-8"))
            except (YamlError, UnicodeDecodeError, OSError) as exc:
                raise InvalidInput(str(exc), where=str(path)) from None
            result = ParseResult()
            parse_pod_documents(docs, str(path), result)
            if result.errors:
                print_errors(result.errors)
                raise typer.Exit(EXIT_INVALID)
            for new in result.pods:
                pods = [p for p in pods if p.key != new.key] + [new]
                wanted.append(new.key)
            check = ParseResult(pods=pods)
            check_duplicates(check)
            if check.errors:
                print_errors(check.errors)
                raise typer.Exit(EXIT_INVALID)
        else:
            key = pod if "/" in pod else None
            matches = [p.key for p in pods if p.key == pod or (key is None and p.name == pod)]
            if not matches:
                raise InvalidInput(f"no such file, and no configured pod named {pod!r}")
            wanted = matches[:1]
        p = build_plan(cfg.node, pods, cfg.vms, resolve_cgroup(cgroup), explain=True)
        texts = [explain_pod(p, pp) for pp in p.pods if pp.pod.key in wanted]
        typer.echo("\n\n".join(texts))
        for w in p.warnings:
            err(f"warning: {w}")


def _add_subcommands() -> None:
    from . import sandbox

    app.add_typer(sandbox.app, name="sandbox", help="A private throwaway systemd (PID 1 of its own namespaces) to try sdqos in.")


_add_subcommands()


def main() -> None:
    app()
