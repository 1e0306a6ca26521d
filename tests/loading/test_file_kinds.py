"""Which files of pods/ are read, and how: YAML and JSON manifests (kubectl reads both), a file
that is not read is named in a warning, a document of another kind is one error."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sdqos.kube.quantity import Quantity
from sdqos.loading.configdir import load_config

CAPACITY = {"cpu": Quantity.parse("8"), "memory": Quantity.parse("16Gi"), "pid": Quantity.parse("4194304")}


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
            "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}}]}}


def config(tmp_path: Path, files: dict[str, str]) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text("kubeReserved: {cpu: 500m, memory: 1Gi}\n")
    for name, text in files.items():
        (d / "pods" / name).write_text(text)
    for p in [d, *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return d


def load(d: Path, cache: Path | None = None):
    return load_config(d, detected=CAPACITY, cache_dir=cache)


def test_json_pod_files_are_read_like_yaml_ones(tmp_path):
    """A Pod, and a List of Pods, as kubectl writes JSON (tab-indented too), and the same through
    the parse cache."""
    as_list = {"apiVersion": "v1", "kind": "List", "items": [pod("b"), pod("c")]}
    d = config(tmp_path, {"a.json": json.dumps(pod("a"), indent="\t"), "bc.json": json.dumps(as_list),
                          "y.yaml": json.dumps(pod("y"))})
    cache = tmp_path / "run"
    cache.mkdir(mode=0o755)
    for _ in range(2):  # cold, then from the cache
        cfg = load(d, cache)
        assert cfg.errors == [] and cfg.warnings == []
        assert sorted(p.key for p in cfg.pods) == ["t/a", "t/b", "t/c", "t/y"]
        assert {p.key: p.source.file for p in cfg.pods}["t/a"] == "pods/a.json"


def test_a_broken_json_file_is_one_error_with_its_position(tmp_path):
    d = config(tmp_path, {"a.json": '{\n  "apiVersion": "v1",\n  "kind": "Pod"\n  "metadata": {}\n}\n',
                          "ok.yaml": json.dumps(pod("ok"))})
    cfg = load(d)
    assert [str(e) for e in cfg.errors] == [
        "pods/a.json: line 4 column 3: Expecting ',' delimiter (not valid JSON)"]
    assert [p.key for p in cfg.pods] == ["t/ok"]
    assert "pods/a.json" in cfg.failed_files  # its pods are unknown: nothing is removed for it


def test_files_that_are_not_read_are_named_in_a_warning(tmp_path):
    d = config(tmp_path, {"a.yaml": json.dumps(pod("a")), "notes.txt": "x", "b.yaml.bak": "x",
                          "a.yaml~": "x", ".hidden.yaml": "x"})
    cfg = load(d)
    assert cfg.errors == []
    assert [p.key for p in cfg.pods] == ["t/a"]
    assert cfg.warnings == [
        "pods/b.yaml.bak is not read: only *.yaml, *.yml and *.json files in pods/ are",
        "pods/notes.txt is not read: only *.yaml, *.yml and *.json files in pods/ are",
    ]  # hidden files and editors' backups (~) are skipped quietly


def test_a_deployment_is_one_error(tmp_path):
    """Another kind's document: one error for its kind, none for the fields a Pod lacks or has not."""
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: t}\n"
                  "spec:\n  replicas: 2\n  template:\n    spec:\n      containers: [{name: a, image: x}]\n")
    d = config(tmp_path, {"web.yaml": deployment, "ok.yaml": json.dumps(pod("ok"))})
    cfg = load(d)
    assert [str(e) for e in cfg.errors] == [
        'pods/web.yaml[0]: kind: must be "Pod", not "Deployment" '
        "(sdqos reads Pods: write the Deployment's pod template as a Pod)"]
    assert [p.key for p in cfg.pods] == ["t/ok"]
    assert os.path.exists(d / "pods" / "web.yaml")
