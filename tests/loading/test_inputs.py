"""The loader names every input it reads (``Config.inputs``): the warm no-op proof
(reconcile/noop.py) is made from exactly those, so a file the loader reads and does not name
would let a sync say "nothing to do" after it changed. Watched with an audit hook
(``sys.addaudithook``, CPython's public API): every ``open`` and directory listing during a load
must be one the returned inputs name."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from sdqos.host import cpustate, rundir
from sdqos.loading import load

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
_WATCH: list = []  # the events of the load being watched; the hook stays (hooks cannot be removed)


def _hook(event: str, args: tuple) -> None:
    if not _WATCH:
        return
    if event == "open":
        path, _mode, flags = args
        if isinstance(path, int) or flags is None:  # an fd (os.fdopen): its open was seen
            return
        if flags & (os.O_WRONLY | os.O_RDWR):
            return  # a write (the parse cache): not an input
        _WATCH[0].append(("open", os.fsdecode(path)))
    elif event in ("os.listdir", "os.scandir"):
        _WATCH[0].append(("list", os.fsdecode(args[0]) if args[0] is not None else "."))


sys.addaudithook(_hook)


def _watched(fn):
    seen: list = []
    _WATCH.append(seen)
    try:
        return fn(), seen
    finally:
        _WATCH.clear()


@pytest.fixture
def cfg(tmp_path) -> Path:
    d = tmp_path / "cfg"
    shutil.copytree(EXAMPLES, d, symlinks=True)
    for p in [d, *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    (d / "vms").mkdir(mode=0o755)
    return d


@pytest.fixture
def run(tmp_path, monkeypatch) -> Path:
    r = tmp_path / "run"
    r.mkdir(mode=0o755)
    monkeypatch.setattr(rundir, "DEFAULT_RUN_DIR", r)  # (the loader's run dir: this test's, never /run/sdqos)
    rundir.write(rundir.LAST_SYNC, json.dumps({"machines": [], "kept": [], "warnings": []}), r)
    return r


def _unnamed(reads: rundir.Reads, seen: list) -> list:
    """What was opened or listed that the inputs do not name; the parse cache aside (an encoding
    of what the named files hold: the plan is the same with or without it, test_incremental.py)."""
    named = set(reads.paths()) | {str(rundir.PARSE_CACHE.path(rundir.DEFAULT_RUN_DIR))}
    return [(kind, path) for kind, path in seen if path not in named]


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("as_synced", [False, True])
def test_every_file_the_loader_reads_is_named_in_its_inputs(cfg, run, cached, as_synced):
    load.load(cfg, "v1", writes=cached)  # imports done (their files are not the load's), the cache made
    (cfg_, _), seen = _watched(lambda: load.load(cfg, "v1", writes=cached, as_synced=as_synced))
    reads = cfg_.inputs
    assert any(p.endswith("pods/db.yaml") for _, p in seen) or cached  # it did read (a watch that sees nothing proves nothing)
    assert ("list", str(cfg / "pods")) in seen
    assert reads.stable and reads.changed() is None
    assert _unnamed(reads, seen) == []
    assert str(rundir.LAST_SYNC.path(run)) in reads.paths()


def test_the_cpu_managers_state_is_an_input_under_the_static_policy(cfg, run):
    node = cfg / "node.yaml"
    node.write_text(node.read_text().replace("cpuCFSQuota: true", "cpuCFSQuota: true\ncpuManagerPolicy: static"))
    load.load(cfg, "v1")
    (cfg_, _), seen = _watched(lambda: load.load(cfg, "v1"))
    assert ("open", str(cpustate.state_path(run))) in seen  # looked for, though there is none
    assert _unnamed(cfg_.inputs, seen) == []
    assert cfg_.inputs.changed() is None
    # a sync's first admission writes it (kubelet's checkpoint; checksum 0: not checked, as kubelet)
    rundir.write(rundir.CPU_STATE, json.dumps({"policyName": "static", "defaultCpuSet": "0-1", "checksum": 0}), run)
    assert cpustate.assignments(run) == {}  # (it reads)
    assert cfg_.inputs.changed() == str(cpustate.state_path(run))
