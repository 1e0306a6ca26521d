"""The run dir's one store (sdqos/host/rundir.py): every file sdqos keeps there is a row of its
table, and no other module spells a run-dir file's name in code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sdqos.host import facts, rundir

PACKAGE = Path(rundir.__file__).resolve().parent.parent
STORE = Path(rundir.__file__).resolve()
# kubelet's own name for its checkpoint (/var/lib/kubelet/cpu_manager_state), in the pure module
# that decodes it and words kubelet's messages; the run dir's file is the store's row
KUBELETS_NAME = {("cpu_manager_state", PACKAGE / "kube" / "cpumanager_state.py")}
NAMES = [r.name for r in rundir.RECORDS] + [p.replace("*", "") for p in rundir.LEFTOVERS]


def _code_strings(source: str) -> list[str]:
    """The string constants of a module's code: docstrings left out (they may name a file)."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _spelled(name: str, source: str) -> bool:
    parts = [p for p in name.split("..") if p] if ".." in name else [name]  # a leftover's pattern: its pieces
    return any(all(p in s for p in parts) for s in _code_strings(source))


def test_the_finder_sees_a_name_in_code_and_not_in_a_docstring():
    assert _spelled("applied.json", 'def f(run):\n    """reads applied.json"""\n    return run / "applied.json"\n')
    assert _spelled("applied.json", 'x = f"{run}/applied.json"\n')
    assert not _spelled("applied.json", '"""The record (applied.json)."""\nx = 1  # applied.json\n')


@pytest.mark.parametrize("name", NAMES)
def test_a_run_dir_files_name_is_spelled_in_the_store_only(name):
    assert _spelled(name, STORE.read_text()), "the store names it"
    elsewhere = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
                 if p != STORE and (name, p) not in KUBELETS_NAME and _spelled(name, p.read_text())]
    assert elsewhere == [], f"{name} is spelled outside sdqos/host/rundir.py: use its row of rundir.RECORDS"


def test_every_record_has_a_schema_a_format_and_one_writer():
    assert len({r.name for r in rundir.RECORDS}) == len(rundir.RECORDS)
    for r in rundir.RECORDS:
        assert r.schema >= 1 and r.format and r.writer, r
        assert (PACKAGE / r.writer.split()[0]).exists(), f"{r.name}: its writer {r.writer} is not a module"


def test_the_capacity_counts_are_keyed_by_the_models_resource_names():
    from sdqos.kube.model import CPU, MEMORY, PID, SWAP

    assert set(facts.capacity_counts()) <= {CPU, MEMORY, PID, SWAP}
    assert CPU in facts.capacity_counts() and MEMORY in facts.capacity_counts()


def test_a_records_write_is_atomic_private_and_read_back_by_the_trusted_reader(tmp_path):
    run = tmp_path / "run"
    rundir.write(rundir.EVICTED, '{"evicted": {}}', run)
    assert (run / rundir.EVICTED.name).stat().st_mode & 0o777 == 0o600
    assert rundir.load(rundir.EVICTED, run) == {"evicted": {}}
    assert sorted(p.name for p in run.iterdir()) == [rundir.EVICTED.name]  # no temp file left


def test_the_architecture_pages_table_is_the_stores():
    import re

    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    rows = dict(re.findall(r"^\| `([^`]+)` \| (\d+) \|", doc, re.M))
    assert rows == {r.name: str(r.schema) for r in rundir.RECORDS}
