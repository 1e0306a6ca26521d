"""The parse cache (/run/sdqos/parsed.json): a warm load must give exactly what a cold one gives,
re-read a file whose identity changed, and ignore a cache it must not trust."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdqos import parsecache as pc
from sdqos.config import load_config
from sdqos.engine import build_plan
from sdqos.quantity import Quantity

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CAPACITY = {"cpu": Quantity.parse("8"), "memory": Quantity.parse("16Gi"), "pid": Quantity.parse("4194304")}

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: {cpu}, memory: 64Mi}}
      limits: {{cpu: {cpu}, memory: 64Mi}}
"""


def config(tmp_path: Path) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text("kubeReserved: {cpu: 500m, memory: 1Gi}\n")
    (d / "pods" / "a.yaml").write_text(POD.format(name="a", cpu="250m"))
    (d / "pods" / "b.yaml").write_text(POD.format(name="b", cpu="1"))
    (d / "pods" / "bad.yaml").write_text(POD.format(name="bad", cpu="12x"))
    for p in [d, d / "pods", *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return d


def load(cfg: Path, cache: Path | None):
    c = load_config(cfg, detected=CAPACITY, cache_dir=cache)
    return c, build_plan(c.node, c.pods, c.vms, "v1")


def summary(c, plan) -> tuple:
    return (c.pods, [str(e) for e in c.errors], c.failed_files, c.warnings,
            [(u.name, u.properties) for u in plan.units])


@pytest.mark.parametrize("src", ["tmp", "examples"])
def test_warm_load_equals_cold_load(tmp_path, src):
    cfg = config(tmp_path) if src == "tmp" else EXAMPLES
    run = tmp_path / "run"
    cold = summary(*load(cfg, None))
    first = summary(*load(cfg, run))
    assert (run / pc.CACHE_NAME).stat().st_mode & 0o777 == 0o600
    warm = summary(*load(cfg, run))
    assert cold == first == warm
    assert cold[0], "the config has pods"


def test_changed_file_is_parsed_again_and_removed_file_dropped(tmp_path):
    cfg, run = config(tmp_path), tmp_path / "run"
    load(cfg, run)
    (cfg / "pods" / "a.yaml").write_text(POD.format(name="a", cpu="750m"))
    (cfg / "pods" / "b.yaml").unlink()
    c, plan = load(cfg, run)
    assert [p.name for p in c.pods] == ["a"]
    assert c.pods[0].containers[0].requests["cpu"] == Quantity.parse("750m")
    assert summary(c, plan) == summary(*load(cfg, None))
    entries = json.loads((run / pc.CACHE_NAME).read_text())["files"]
    assert sorted(Path(k).name for k in entries) == ["a.yaml", "bad.yaml"]


def test_invalid_file_stays_invalid_when_cached(tmp_path):
    cfg, run = config(tmp_path), tmp_path / "run"
    for _ in range(2):
        c, _ = load(cfg, run)
        assert [e for e in map(str, c.errors) if "12x" in e] == [
            f'pods/bad.yaml[0]: spec.containers[0].resources.{k}.cpu: "12x" is not a quantity'
            for k in ("requests", "limits")]


@pytest.mark.parametrize("damage", ["garbage", "group-writable", "wrong-tag", "entry-not-json", "forged-identity"])
def test_untrusted_or_damaged_cache_is_ignored(tmp_path, damage):
    cfg, run = config(tmp_path), tmp_path / "run"
    want = summary(*load(cfg, None))
    load(cfg, run)
    path = run / pc.CACHE_NAME
    data = json.loads(path.read_text())
    a = str((cfg / "pods" / "a.yaml").absolute())
    if damage == "garbage":
        path.write_text("{not json")
    elif damage == "group-writable":
        # a cache anyone could have written: a forged entry in it must not be believed
        data["files"][a][1] = data["files"][a][1].replace("250000000", "999000000000")
        path.write_text(json.dumps(data))
        os.chmod(path, 0o620)
    elif damage == "wrong-tag":
        data["tag"] = "0.0.0/other"
        data["files"][a][1] = data["files"][a][1].replace("250000000", "999000000000")
        path.write_text(json.dumps(data))
    elif damage == "entry-not-json":
        data["files"][a][1] = "{"
        path.write_text(json.dumps(data))
    else:  # an entry for another version of the file (other identity) is not used
        data["files"][a][0] = [0, 0, 0, 0, 0]
        data["files"][a][1] = data["files"][a][1].replace("250000000", "999000000000")
        path.write_text(json.dumps(data))
    assert summary(*load(cfg, run)) == want
