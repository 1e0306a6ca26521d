"""The parse cache (/run/sdqos/parsed.json): a warm load must give exactly what a
cold one gives, re-read a file whose identity changed, and ignore a cache it must not trust."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdqos.kube.quantity import Quantity
from sdqos.loading import cache as pc
from sdqos.loading.configdir import load_config
from sdqos.loading.incremental import load_plan
from sdqos.plan.engine import build_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
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


def load_planned(cfg: Path, cache: Path | None):
    return load_plan(cfg, "v1", detected=CAPACITY, cache_dir=cache)


def summary(c, plan) -> tuple:
    return (list(c.pods), [str(e) for e in c.errors], c.failed_files, c.warnings,
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
    _, entries, _ = pc.decode_file((run / pc.CACHE_NAME).read_text())
    assert sorted(Path(k).name for k in entries) == ["a.yaml", "bad.yaml", "node.yaml"]


def test_invalid_file_stays_invalid_when_cached(tmp_path):
    cfg, run = config(tmp_path), tmp_path / "run"
    for _ in range(2):
        c, _ = load(cfg, run)
        assert [e for e in map(str, c.errors) if "12x" in e] == [
            f'pods/bad.yaml[0]: spec.containers[0].resources.{k}.cpu: "12x" is not a quantity'
            for k in ("requests", "limits")]


def rewrite(path: Path, tag: str, entries: dict) -> None:
    path.write_text("".join(pc.encode_file(tag, entries, pc.decode_file(path.read_text())[2])))


@pytest.mark.parametrize("damage", ["garbage", "group-writable", "wrong-tag", "entry-not-json", "entry-wrong-shape",
                                    "forged-identity", "cut-short", "line-added"])
@pytest.mark.parametrize("loader", ["config", "plan"])
def test_untrusted_or_damaged_cache_is_ignored(tmp_path, damage, loader):
    """For load_config, and for load_plan (what sync uses) with the plan fragments left in."""
    cfg, run = config(tmp_path), tmp_path / "run"
    want = summary(*load(cfg, None))
    load_it = load if loader == "config" else load_planned
    load_it(cfg, run)
    path = run / pc.CACHE_NAME
    tag, entries, _ = pc.decode_file(path.read_text())
    a = str((cfg / "pods" / "a.yaml").absolute())
    forged = entries[a][1].replace("250000000", "999000000000")
    assert forged != entries[a][1]
    if damage == "garbage":
        path.write_text("{not json")
    elif damage == "group-writable":
        # a cache anyone could have written: a forged entry in it must not be believed
        entries[a][1] = forged
        rewrite(path, tag, entries)
        os.chmod(path, 0o620)
    elif damage == "wrong-tag":
        entries[a][1] = forged
        rewrite(path, "0.0.0/other", entries)
    elif damage == "entry-not-json":
        entries[a][1] = "{"
        rewrite(path, tag, entries)
    elif damage == "entry-wrong-shape":  # looks like an entry of that file, but its pod does not decode
        entries[a][1] = '{"pods":[{"name":"a"}],"vms":[],"errors":[],"invalid":[],"failed":false,"rel":"pods/a.yaml"}'
        rewrite(path, tag, entries)
    elif damage == "forged-identity":  # an entry for another version of the file (other identity) is not used
        entries[a][0] = "0:0:0:0:0"
        entries[a][1] = forged
        rewrite(path, tag, entries)
    elif damage == "cut-short":  # a write that stopped half-way (lines no longer match the keys)
        entries[a][1] = forged
        text = "".join(pc.encode_file(tag, entries))
        path.write_text(text[: text.index(forged) + len(forged) + 1])
    else:  # one entry line too many: every entry would pair with the wrong file
        entries[a][1] = forged
        text = "".join(pc.encode_file(tag, entries))
        path.write_text(text + forged + "\n")
    assert summary(*load_it(cfg, run)) == want


def test_cache_file_round_trip():
    entries = {"/c/pods/a.yaml": ["1:2:3:4:5", '{"x":"a\\nb"}', '[{"y":1}]'],
               "/c/p\u00e4th\nnew.yaml": ["6:7:8:9:10", "{}", ""]}
    text = "".join(pc.encode_file("t", entries, "ctx"))
    assert text.isascii()
    assert pc.decode_file(text) == ("t", entries, "ctx")
    assert pc.decode_file(text[:-1]) is None  # no final newline: cut short
    assert pc.decode_file(text.rsplit("\n", 2)[0] + "\n") is None  # an entry without its fragment line


def test_node_yaml_is_cached_and_reread_when_changed(tmp_path):
    cfg, run = config(tmp_path), tmp_path / "run"
    c1, _ = load(cfg, run)
    _, entries, _ = pc.decode_file((run / pc.CACHE_NAME).read_text())
    node_key = str((cfg / "node.yaml").absolute())
    assert json.loads(entries[node_key][1]) == {"rel": "node.yaml", "docs": [{"kubeReserved": {"cpu": "500m", "memory": "1Gi"}}]}
    (cfg / "node.yaml").write_text("kubeReserved: {cpu: '1', memory: 1Gi}\n")
    c2, _ = load(cfg, run)
    assert c2.node.kube_reserved["cpu"] == Quantity.parse("1") != c1.node.kube_reserved["cpu"]
    assert summary(*load(cfg, run)) == summary(*load(cfg, None))


@pytest.mark.parametrize("text, cached", [("kubeReserved: {cpu: 500m}\n", True),
                                          ("x: {1: one}\n", True),  # the key is "1" already, as in Kubernetes
                                          ("x: .nan\n", False),  # NaN != NaN
                                          ("x: 2001-12-14\n", True)])  # a timestamp stays its text
def test_node_yaml_is_cached_only_when_json_holds_it_exactly(tmp_path, text, cached):
    from sdqos.loading.configdir import _node_documents

    node = tmp_path / "node.yaml"
    node.write_text(text)
    cache = pc.ParseCache(None, "t")
    docs = _node_documents(tmp_path, node, node.resolve(), os.stat(node), cache)
    assert len(docs) == 1
    assert (str(node.absolute()) in cache.entries) is cached


# --- saves and loads: one file, written whole -------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402


def _entries(n: int) -> dict[str, list]:
    return {f"/c/pods/p{i}.yaml": [f"1:{i}:100:7:7", f'{{"n":{i}}}', f"[{i}]"] for i in range(n)}


def _base(run: Path, n: int, context: str | None = "ctx") -> None:
    run.mkdir(mode=0o755, exist_ok=True)
    c = pc.ParseCache(run, "t")
    for k, (ident, text, frag) in _entries(n).items():
        c.put_text(k, ident, text)
        c.put_fragment(k, context, frag)
    c.save()


def _use_all(c: pc.ParseCache) -> None:
    for k, e in list(c.entries.items()):
        assert c.lookup(k, e[0]) is not None


def test_a_few_changes_rewrite_the_one_file_and_a_leftover_delta_is_not_read(tmp_path):
    """An earlier version wrote a few changed entries to parsed.delta.json beside the base; one
    left in the run dir (same tag, context and base identity as it wrote them) is not read."""
    run = tmp_path / "run"
    _base(run, 300)
    base = run / pc.CACHE_NAME
    c = pc.ParseCache(run, "t")
    _use_all(c)
    c.put_text("/c/pods/p3.yaml", "1:3:101:8:8", '{"n":"3b"}')
    c.used.discard("/c/pods/p5.yaml")  # not looked up: its file is gone
    want = {k: list(e) for k, e in c.entries.items() if k != "/c/pods/p5.yaml"}
    c.save()
    assert sorted(os.listdir(run)) == [pc.CACHE_NAME]
    assert pc.decode_file(base.read_text())[1] == want == pc.ParseCache(run, "t").entries
    st_ = os.stat(base)
    head = {"tag": "t", "format": pc.FORMAT, "context": "ctx",
            "base": [st_.st_dev, st_.st_ino, st_.st_size, st_.st_mtime_ns, st_.st_ctime_ns], "removed": []}
    forged = {"/c/pods/p1.yaml": ["1:1:100:7:7", '{"n":"forged"}', ""]}
    lines = list(pc.encode_file("t", forged, "ctx"))
    lines[0] = json.dumps(head) + "\n"
    (run / "parsed.delta.json").write_text("".join(lines))
    (run / "parsed.delta.json").chmod(0o600)
    assert pc.ParseCache(run, "t").entries == want


def test_a_new_plan_context_voids_every_fragment(tmp_path):
    run = tmp_path / "run"
    _base(run, 300)
    c = pc.ParseCache(run, "t")
    _use_all(c)
    c.put_fragment("/c/pods/p1.yaml", "ctx2", "[1]")
    c.save()
    got = pc.ParseCache(run, "t")
    assert got.context == "ctx2" and [k for k, e in got.entries.items() if e[2]] == ["/c/pods/p1.yaml"]


OPS = st.lists(st.tuples(st.sampled_from(["put", "fragment", "drop", "context"]), st.integers(0, 11),
                         st.integers(0, 3)), max_size=8)


@given(st.lists(OPS, min_size=1, max_size=6))
def test_what_a_cache_holds_after_a_save_is_what_the_next_load_finds(tmp_path_factory, syncs):
    """Whatever sequence of syncs — entries replaced, fragments added, files gone, the plan context
    changed — the next load finds exactly the entries the last save kept: every entry looked up or
    put, with its latest text and fragment."""
    run = tmp_path_factory.mktemp("run")
    model: dict[str, list] = {}
    context, stored = "c0", None  # the context fragments are computed in now; the cache's
    for n, ops in enumerate(syncs):
        c = pc.ParseCache(run, "t")
        assert c.entries == model and c.context == stored
        dropped = set()
        for op, i, v in ops:
            k = f"/c/p{i}.yaml"
            if op == "put":
                model[k] = [f"{i}:{v}:{n}:0:0", f'{{"v":{v},"n":{n}}}', ""]
                c.put_text(k, *model[k][:2])
                dropped.discard(k)
            elif op == "fragment" and k in model and k not in dropped:
                if context != stored:  # a new context voids every fragment
                    for e in model.values():
                        e[2] = ""
                    stored = context
                model[k][2] = f"[{v},{n}]"
                c.put_fragment(k, context, model[k][2])
            elif op == "drop" and k in model and k not in c.used:
                dropped.add(k)
            elif op == "context":
                context = f"c{n}.{v}"
        for k in model:
            if k not in dropped:
                c.lookup(k, model[k][0])
        for k in dropped:
            del model[k]
        c.save()
        if not model and not (run / pc.CACHE_NAME).exists():
            stored = None  # nothing was ever written
    got = pc.ParseCache(run, "t")
    assert got.entries == model and got.context == stored


def test_a_sync_over_hundreds_of_pods_after_one_edit_plans_as_a_cold_load(tmp_path):
    """One pod file edited and one removed among 300: the next loads, warm, plan exactly what a cold
    load plans."""
    cfg, run = config(tmp_path), tmp_path / "run"
    for i in range(300):
        p = cfg / "pods" / f"f{i}.yaml"
        p.write_text(POD.format(name=f"f{i}", cpu=f"{i + 1}m"))
        p.chmod(0o644)
    load_planned(cfg, run)
    (cfg / "pods" / "f7.yaml").write_text(POD.format(name="f7", cpu="900m"))
    (cfg / "pods" / "f8.yaml").unlink()
    first = load_planned(cfg, run)
    assert sorted(os.listdir(run)) == [pc.CACHE_NAME]
    assert summary(*first) == summary(*load_planned(cfg, run)) == summary(*load_planned(cfg, None))
    assert next(p for p in first[1].pods if p.key == "t/f7").requests["cpu"] == 900
