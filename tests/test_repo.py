"""The repository keeps its promises: README's commands are what CI runs, units/ is what
`sdqos install-units` writes by default."""

from __future__ import annotations

import re
from pathlib import Path

from sdqos.host import unitfiles

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())[:2]


def test_ci_runs_readme_test_command_verbatim():
    _, test_cmd = readme_commands()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == test_cmd


def test_readme_first_command_syncs_the_example():
    demo, _ = readme_commands()
    assert "pip install ." in demo and "sdqos sandbox up demo" in demo and "sync --config examples" in demo


def test_units_dir_is_the_rendered_default():
    for name, text in unitfiles.render().items():
        assert (ROOT / "units" / name).read_text() == text


def test_readme_is_short_and_its_links_resolve():
    """README is for users (under 20 KB); the reference lives in docs/, and every link to it works."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 20_000
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", md.read_text()):
            assert (md.parent / target).exists(), (md.name, target)
