"""The package layout is the architecture (sdqos/__init__.py, docs/architecture.md): each layer
imports only the layers below it, the pure layers do no I/O of their own, and the sandbox stands
apart. Every import counts, also the lazy ones inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "sdqos"

# layer → the sdqos layers it may import (besides itself)
BASE = {"errors", "humanize"}
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "kube": {"base"},
    "plan": {"base", "kube"},
    "host": {"base", "kube", "plan"},
    "loading": {"base", "kube", "plan", "host"},
    "reconcile": {"base", "kube", "plan", "host"},
    "cli": {"base", "kube", "plan", "host", "loading", "reconcile", "sandbox", "top"},
    "sandbox": {"base"},
    "top": {"cli"},  # sdqos/__init__.py, __main__.py
}
# What loading may use of the host side: facts about the machine, the run dir (the CPU manager state in it) and forked children, never D-Bus.
LOADING_HOST = {"sdqos.host.facts", "sdqos.host.rundir", "sdqos.host.children", "sdqos.host.cpustate"}
# Pure layers compute; they never talk to a bus, spawn a process or open a socket.
PURE = {"base", "kube", "plan"}
NOT_IN_PURE = {"dbus_next", "dbus_fast", "typer", "click", "rich", "asyncio", "subprocess", "socket", "tenacity"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "sdqos":
        raise ValueError(module)
    if len(parts) == 1 or parts[1] in ("__main__", "__init__"):
        return "top"
    if parts[1] in BASE:
        return "base"
    return parts[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement, relative ones resolved."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # `from sdqos.host import systemd` imports the module sdqos.host.systemd
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names
                    if target.startswith("sdqos") and is_module(f"{target}.{a.name}")]
    return out


def is_module(dotted: str) -> bool:
    p = PKG.parent.joinpath(*dotted.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    mine = layer_of(module)
    bad = []
    for line, target in imports_of(source, module, is_package):
        root = target.split(".")[0]
        if root == "sdqos":
            if target == "sdqos":
                continue  # `from sdqos import __version__` and the like: the top module's constants
            theirs = layer_of(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                bad.append(f"{module}:{line}: {mine} imports {target} ({theirs})")
            elif mine == "loading" and theirs == "host" and target.count(".") >= 2 and target not in LOADING_HOST:
                bad.append(f"{module}:{line}: loading imports {target} (only {', '.join(sorted(LOADING_HOST))})")
        elif mine in PURE and root in NOT_IN_PURE:
            bad.append(f"{module}:{line}: pure layer {mine} imports {target}")
    return bad


def all_modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    for path in all_modules():
        assert layer_of(module_name(path)) in ALLOWED, path


def test_layers_import_only_downwards():
    bad = []
    for path in all_modules():
        bad += violations(path.read_text(), module_name(path), path.name == "__init__.py")
    assert bad == []


def test_every_subpackage_says_what_it_owns_and_may_import():
    for init in sorted(PKG.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc) > 200 and "import" in doc, f"{init}: needs a docstring saying what it owns and may import"


@pytest.mark.parametrize("module, source, expected", [
    ("sdqos.kube.qos", "from sdqos.host.systemd import Systemd", "kube imports sdqos.host.systemd (host)"),
    ("sdqos.plan.engine", "def f():\n    from sdqos.cli import render", "plan imports sdqos.cli (cli)"),
    ("sdqos.plan.engine", "from ..reconcile import diff", "plan imports sdqos.reconcile"),
    ("sdqos.kube.manifests", "import subprocess", "pure layer kube imports subprocess"),
    ("sdqos.loading.configdir", "from sdqos.host import systemd", "loading imports sdqos.host.systemd"),
    ("sdqos.sandbox", "from sdqos.kube import quantity", "sandbox imports sdqos.kube"),
    ("sdqos.reconcile.sync", "from sdqos.loading.incremental import load_plan", "reconcile imports sdqos.loading"),
])
def test_the_checker_finds_each_kind_of_violation(module, source, expected):
    found = violations(source, module)
    assert any(expected in v for v in found), found


def test_the_checker_accepts_downward_imports():
    assert violations("from sdqos.kube.quantity import Quantity\nfrom sdqos import humanize", "sdqos.plan.engine") == []
    assert violations("from sdqos.host import facts, rundir", "sdqos.loading.configdir") == []
