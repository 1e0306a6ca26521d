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
