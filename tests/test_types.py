"""The package type-checks: `python -m mypy sdqos` at its default settings ([tool.mypy] in
pyproject.toml) reports no error. Here rather than in .ci/run so that README's one test command
(which CI runs verbatim) holds it too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_reports_no_error_in_the_package():
    run = subprocess.run([sys.executable, "-m", "mypy", "sdqos"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"mypy sdqos (exit {run.returncode}):\n{run.stdout}{run.stderr}"


def test_every_error_class_lives_in_errors_py():
    """sdqos's exceptions are defined in sdqos/errors.py only (other modules import them from there)."""
    import ast
    import importlib

    elsewhere = []
    for path in sorted((ROOT / "sdqos").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.as_posix() in ("sdqos/errors.py", "sdqos/__main__.py"):
            continue
        classes = [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]
        if not classes:
            continue
        module = importlib.import_module(".".join(rel.with_suffix("").parts).removesuffix(".__init__"))
        for name in classes:
            cls = getattr(module, name, None)
            if isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                elsewhere.append(f"{rel}: {name}")
    assert elsewhere == [], "move these to sdqos/errors.py (and import them from there)"
