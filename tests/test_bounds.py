"""Bounded cost for any input: documents per file, items per List and errors per file are capped,
so a small file that expands into a flood costs about what its size says. And metrics print their
numbers exactly (a timestamp printed with six digits was an hour off)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos.kube import yamlsafe
from sdqos.kube.manifests import MAX_LIST_ITEMS
from sdqos.loading.configdir import MAX_ERRORS_PER_FILE

NODE = 'capacity: {cpu: "8", memory: 16Gi, pids: "100000"}\n'


def plan(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True, exist_ok=True)
    (d / "node.yaml").write_text(NODE)
    (d / "pods" / "a.yaml").write_text(text)
    return subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(d), "--insecure"],
                          capture_output=True, text=True, timeout=120)


def test_a_million_empty_documents_are_refused_at_the_cap(tmp_path):
    r = plan(tmp_path, "--- {}\n" * 1_000_000)  # 7 MB: it was 75 s and 6.4 GB (bench/pathological.py)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"sdqos: error: pods/a.yaml: line {yamlsafe.MAX_DOCUMENTS + 1} column 1: "
        f"more than {yamlsafe.MAX_DOCUMENTS} documents in one file"]


def test_a_list_of_too_many_items_is_one_error(tmp_path):
    r = plan(tmp_path, "kind: List\nitems:\n" + "- {}\n" * (MAX_LIST_ITEMS + 1))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"sdqos: error: pods/a.yaml[0]: items: {MAX_LIST_ITEMS + 1} items; at most {MAX_LIST_ITEMS} in one List"]


def test_errors_per_file_are_capped_and_counted(tmp_path):
    r = plan(tmp_path, "--- {}\n" * 500)
    lines = r.stderr.splitlines()
    assert r.returncode == 2
    assert len(lines) == MAX_ERRORS_PER_FILE + 1
    total = int(lines[-1].split("and ")[1].split()[0]) + MAX_ERRORS_PER_FILE
    assert lines[-1] == f"sdqos: error: pods/a.yaml: … and {total - MAX_ERRORS_PER_FILE} more errors in this file"
    assert total >= 500  # every document had at least one


def test_documents_up_to_the_cap_are_read(tmp_path):
    pod = "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: t}}\nspec: {{containers: [{{name: c}}]}}\n"
    r = plan(tmp_path, "".join(pod.format(i=i) for i in range(300)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("cgroup v1 · 300 pods")


@pytest.mark.parametrize("when", [time.time(), 1795470123.456789, 1e-3, 0.1])
def test_metrics_print_floats_exactly(when):
    from sdqos.cli import metrics as m

    rec = {"timestamp": when, "durationSeconds": 0.123456789, "created": 1, "updated": 0, "removed": 0, "drift": 0,
           "errors": 0, "invalid": 0, "dbusCalls": 7, "success": True, "lastSuccess": when}
    text = m.render(None, rec)
    values = dict(line.split(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(values["sdqos_sync_last_run_timestamp_seconds"]) == when
    assert float(values["sdqos_sync_last_success_timestamp_seconds"]) == when
    assert float(values["sdqos_sync_duration_seconds"]) == 0.123456789
    assert values["sdqos_sync_success"] == "1"


def test_metrics_timestamp_is_now(tmp_path, monkeypatch):
    from sdqos.cli import metrics as m
    from sdqos.reconcile.report import Report

    before = time.time()
    rec = m.record_sync(Report(), tmp_path)
    text = m.render(None, m.load_sync_record(tmp_path))
    line = next(ln for ln in text.splitlines() if ln.startswith("sdqos_sync_last_run_timestamp_seconds "))
    assert before <= float(line.split()[1]) <= time.time()
    assert float(line.split()[1]) == rec["timestamp"]
