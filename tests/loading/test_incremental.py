"""The incremental planner (sdqos.loading.incremental): whatever the cache holds, ``load_plan`` gives exactly
what ``build_plan(load_config(...))`` gives, and a pod file that did not change is neither decoded
nor planned again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdqos.host import cpustate
from sdqos.kube import cpuset
from sdqos.kube.quantity import Quantity
from sdqos.loading import cache as pc
from sdqos.loading.configdir import load_config
from sdqos.loading.incremental import context_key, load_plan
from sdqos.plan import engine
from sdqos.plan.engine import build_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CAPACITY = {"cpu": Quantity.parse("8"), "memory": Quantity.parse("16Gi"), "pid": Quantity.parse("4194304")}

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t{uid}}}
spec:
  initContainers:
  - name: side
    restartPolicy: Always
    resources: {{requests: {{cpu: 100m, memory: 32Mi}}}}
  containers:
  - name: app
    resources:
      requests: {{cpu: {cpu}, memory: 64Mi}}
      limits: {{memory: {mem}}}
"""
VM = ("apiVersion: sdqos.io/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: v}}\n"
      "spec: {{resources: {{limits: {{cpu: 1, memory: {mem}}}}}}}\n")
NODE = "kubeReserved: {cpu: 500m, memory: 1Gi}\nfeatureGates: {MemoryQoS: true}\npodPidsLimit: 1024\n"


def write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o644)


def config(tmp_path: Path) -> Path:
    """Pods in two classes, a sidecar, a file with an error, and a VM (it moves the pods' budget)."""
    d = tmp_path / "cfg"
    for sub in ("pods", "vms"):
        (d / sub).mkdir(parents=True)
    for p in (d, d / "pods", d / "vms"):
        p.chmod(0o755)
    write(d / "node.yaml", NODE)
    write(d / "pods" / "a.yaml", POD.format(name="a", uid="", cpu="250m", mem="128Mi"))
    write(d / "pods" / "b.yaml", POD.format(name="b", uid="", cpu="1", mem="1Gi"))
    write(d / "pods" / "two.yaml", POD.format(name="c", uid="", cpu="2", mem="256Mi") + "---\n"
          + POD.format(name="d", uid="", cpu="100m", mem="64Mi"))
    write(d / "pods" / "bad.yaml", POD.format(name="bad", uid="", cpu="12x", mem="64Mi"))
    write(d / "vms" / "vm.yaml", VM.format(mem="2Gi"))
    return d


def expected(cfg: Path, cgroup: str):
    c = load_config(cfg, detected=CAPACITY)
    return c, build_plan(c.node, c.pods, c.vms, cgroup)


def check_same(cfg: Path, run: Path | None, cgroup: str) -> tuple:
    """load_plan against the two steps it replaces: plan, pods, errors, everything."""
    want_cfg, want = expected(cfg, cgroup)
    got_cfg, got = load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run)
    assert got == want  # every unit, property, pod plan, VM plan, warning
    assert [u.properties for u in got.units] == [u.properties for u in want.units]
    assert list(got_cfg.pods) == want_cfg.pods
    assert [pp.pod for pp in got.pods] == [pp.pod for pp in want.pods]
    assert got_cfg.vms == want_cfg.vms
    assert [str(e) for e in got_cfg.errors] == [str(e) for e in want_cfg.errors]
    assert (got_cfg.failed_files, got_cfg.warnings, got_cfg.invalid_keys, got_cfg.vms_declared) == (
        want_cfg.failed_files, want_cfg.warnings, want_cfg.invalid_keys, want_cfg.vms_declared)
    return got_cfg, got


def fragments(run: Path) -> tuple[str | None, dict[str, str]]:
    _, entries, context = pc.decode_file((run / pc.CACHE_NAME).read_text())
    return context, {Path(k).name: e[2] for k, e in entries.items() if e[2]}


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
@pytest.mark.parametrize("src", ["tmp", "examples"])
def test_cold_warm_and_uncached_plans_equal_build_plan(tmp_path, src, cgroup):
    cfg = config(tmp_path) if src == "tmp" else EXAMPLES
    run = tmp_path / "run"
    check_same(cfg, None, cgroup)
    check_same(cfg, run, cgroup)  # cold: every file parsed and planned, fragments written
    context, frags = fragments(run)
    assert context is not None
    assert frags and "bad.yaml" not in frags and "vm.yaml" not in frags and "node.yaml" not in frags
    check_same(cfg, run, cgroup)  # warm: every pod's plan from its fragment


def count_calls(monkeypatch, module, name: str) -> list:
    calls: list = []
    fn = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(a) or fn(*a, **k))
    return calls


def test_unchanged_files_are_neither_decoded_nor_planned(tmp_path, monkeypatch):
    cfg, run = config(tmp_path), tmp_path / "run"
    load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    decoded = count_calls(monkeypatch, pc, "pod_from_json")
    planned = count_calls(monkeypatch, engine, "plan_pod")
    c, plan = load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert (len(decoded), len(planned)) == (0, 0)
    write(cfg / "pods" / "two.yaml", POD.format(name="c", uid="", cpu="3", mem="256Mi") + "---\n"
          + POD.format(name="d", uid="", cpu="100m", mem="64Mi"))
    c, plan = check_same(cfg, run, "v2")
    monkeypatch.undo()
    decoded = count_calls(monkeypatch, pc, "pod_from_json")
    planned = count_calls(monkeypatch, engine, "plan_pod")
    c, plan = load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert (len(decoded), len(planned)) == (0, 0)
    write(cfg / "pods" / "a.yaml", POD.format(name="a", uid="", cpu="300m", mem="128Mi"))
    c, plan = load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert [a[0].name for a in planned] == ["a"]  # only the changed file's pod
    assert plan.pod("t/a").containers[1].properties["CPUWeight"] != 0
    assert len(decoded) == 1  # ... and only it was decoded; a reused plan decodes its pod when asked:
    assert plan.pod("t/b").pod.containers[0].name == "app"
    assert len(decoded) == 2


@pytest.mark.parametrize("change", ["node", "cgroup"])
def test_a_new_context_replans_every_pod(tmp_path, monkeypatch, change):
    cfg, run = config(tmp_path), tmp_path / "run"
    check_same(cfg, run, "v2")
    before, _ = fragments(run)
    cgroup = "v2"
    if change == "node":
        write(cfg / "node.yaml", NODE.replace("1024", "2048"))
    else:
        cgroup = "v1"
    planned = count_calls(monkeypatch, engine, "plan_pod")
    load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run)
    assert sorted(a[0].name for a in planned) == ["a", "b", "c", "d"]  # every valid pod, in every file
    after, frags = fragments(run)
    assert after != before and sorted(frags) == ["a.yaml", "b.yaml", "two.yaml"]
    planned.clear()
    load_plan(cfg, cgroup, detected=CAPACITY, cache_dir=run)
    assert planned == []
    monkeypatch.undo()
    check_same(cfg, run, cgroup)


@pytest.mark.parametrize("change", ["vm", "removed-vm"])
def test_a_vm_change_replans_no_pod(tmp_path, monkeypatch, change):
    """A pod's values never depend on the VMs (MemoryQoS' memory.high of a limitless container comes
    from node allocatable, as kubelet's): a VM edit reuses every pod's plan, and gives the same plan."""
    cfg, run = config(tmp_path), tmp_path / "run"
    check_same(cfg, run, "v2")
    if change == "vm":
        write(cfg / "vms" / "vm.yaml", VM.format(mem="3Gi"))
    else:
        (cfg / "vms" / "vm.yaml").unlink()
    planned = count_calls(monkeypatch, engine, "plan_pod")
    load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert planned == []
    monkeypatch.undo()
    check_same(cfg, run, "v2")


def test_context_key_is_the_same_in_every_process(tmp_path):
    """Sets and dicts enter it in a fixed order: a fresh interpreter (another hash seed) agrees."""
    import subprocess
    import sys

    cfg = config(tmp_path)
    write(cfg / "node.yaml", NODE + "enforceNodeAllocatable: [pods, system-reserved, kube-reserved]\n"
          "systemReservedCgroup: /system.slice\nkubeReservedCgroup: /kube.slice\n")
    code = ("import sys, json; from pathlib import Path; from sdqos.loading.configdir import load_config; "
            "from sdqos.plan.engine import plan_basis; from sdqos.loading.incremental import context_key; "
            "from tests.loading.test_incremental import CAPACITY; "
            "c = load_config(sys.argv[1], detected=CAPACITY); print(context_key(plan_basis(c.node, c.vms, 'v2').context))")
    keys = {subprocess.run([sys.executable, "-c", code, str(cfg)], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)},
                           cwd=Path(__file__).resolve().parents[2]).stdout
            for seed in (1, 2, 3)}
    assert len(keys) == 1
    c = load_config(cfg, detected=CAPACITY)
    assert keys == {context_key(engine.plan_basis(c.node, c.vms, "v2").context) + "\n"}


def test_duplicates_are_found_among_reused_plans(tmp_path):
    cfg, run = config(tmp_path), tmp_path / "run"
    check_same(cfg, run, "v1")
    # a new file repeats pod t/a, whose plan is reused: both are invalid, neither is planned
    write(cfg / "pods" / "z.yaml", POD.format(name="a", uid="", cpu="1", mem="64Mi"))
    c, plan = check_same(cfg, run, "v1")
    assert "t/a" not in [pp.key for pp in plan.pods]
    assert sum("Duplicate namespace/name" in str(e) for e in c.errors) == 2
    assert "pod:t/a" in c.invalid_keys
    # one uid in two files, both reused
    write(cfg / "pods" / "z.yaml", POD.format(name="z", uid=", uid: 0b5c8c32-0001-4000-8000-000000000001",
                                              cpu="1", mem="64Mi"))
    write(cfg / "pods" / "b.yaml", POD.format(name="b", uid=", uid: 0b5c8c32-0001-4000-8000-000000000001",
                                              cpu="1", mem="1Gi"))
    check_same(cfg, run, "v1")
    c, plan = check_same(cfg, run, "v1")
    assert sum("Duplicate uid" in str(e) for e in c.errors) == 2


@pytest.mark.parametrize("damage", ["not-json", "wrong-shape", "truncated-list", "foreign-context"])
def test_a_damaged_fragment_is_planned_again(tmp_path, damage):
    cfg, run = config(tmp_path), tmp_path / "run"
    check_same(cfg, run, "v1")
    path = run / pc.CACHE_NAME
    tag, entries, context = pc.decode_file(path.read_text())
    a = str((cfg / "pods" / "a.yaml").absolute())
    good = json.loads(entries[a][2])
    if damage == "not-json":
        entries[a][2] = "[{"
    elif damage == "wrong-shape":
        entries[a][2] = json.dumps([{"key": "t/a"}])
    elif damage == "truncated-list":
        entries[a][2] = json.dumps([good[0][:5]])
    else:  # fragments computed under another node config are not used at all
        good[0][6] = [999999, 1]
        entries[a][2] = json.dumps(good)
        context = context.replace("1024", "2048")
    path.write_text("".join(pc.encode_file(tag, entries, context)))
    check_same(cfg, run, "v1")
    check_same(cfg, run, "v1")


def test_pods_are_found_by_name_without_decoding_them(tmp_path):
    """`sdqos run POD CONTAINER` and Plan.pod look a pod up by its name from the plan alone: a plan
    reused from the cache does not decode a thousand manifests for it."""
    from sdqos.errors import InvalidInput
    from sdqos.reconcile import launch

    d = config(tmp_path)
    write(d / "pods" / "other.yaml", POD.format(name="a", uid="2", cpu="100m", mem="64Mi"))  # t2/a
    _, plan = load_plan(d, "v1", detected=CAPACITY, insecure=True)
    decoded = []
    for pp in plan.pods:
        pp.manifest = lambda pp=pp: decoded.append(pp.key)
    b = next(p for p in plan.pods if p.key == "t/b")
    assert launch.container_target(plan, "b", "app").unit.name == next(c.scope for c in b.containers if c.name == "app")
    assert plan.pod("b").key == "t/b" and plan.pod("t2/a").key == "t2/a"
    with pytest.raises(InvalidInput, match="pod name 'a' is ambiguous: t/a, t2/a"):
        launch.container_target(plan, "a", "app")
    assert decoded == []


def test_two_vm_files_naming_one_scope_are_refused_and_the_rest_planned(tmp_path):
    """One scope, two definitions (one `eviction: Allowed`, one `Never`): neither is planned, so
    neither is ranked or stopped; every pod and the other VM are planned, with or without the cache."""
    cfg, run = config(tmp_path), tmp_path / "run"
    two = ("apiVersion: sdqos.io/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\n"
           "spec: {{resources: {{limits: {{cpu: 1, memory: 1Gi}}}}, scope: db.scope, eviction: {ev}}}\n")
    write(cfg / "vms" / "db-a.yaml", two.format(name="db-a", ev="Allowed"))
    write(cfg / "vms" / "db-b.yaml", two.format(name="db-b", ev="Never"))
    for _ in range(2):  # parsed, then from the cache
        c, plan = check_same(cfg, run, "v2")
        assert [vp.vm.name for vp in plan.vms] == ["v"]
        assert [str(e) for e in c.errors if "db" in str(e)] == [
            f'vms/db-{x}.yaml[0]: spec.scope: Duplicate VM scope "db.scope" (defined in vms/db-a.yaml[0], '
            'vms/db-b.yaml[0])' for x in "ab"]
        assert {"vm:db-a", "vm:db-b"} <= c.invalid_keys
        assert sorted(pp.key for pp in plan.pods) == ["t/a", "t/b", "t/c", "t/d"]


def test_priority_classes_come_from_priorityclasses_yaml_and_a_change_reparses_the_pods(tmp_path):
    """A pod's priority is its class's (the config dir's priorityclasses.yaml, as PriorityClass
    objects); pods parsed under other classes are not reused from the cache; a class the file does
    not declare refuses only the pods naming it (their units kept); a bad file stops everything, as a
    bad node.yaml does."""
    from sdqos.errors import ConfigInvalid

    cfg, run = config(tmp_path), tmp_path / "run"
    named = POD.format(name="named", uid="", cpu="1", mem="64Mi").replace("spec:\n", "spec:\n  priorityClassName: batch\n")
    write(cfg / "pods" / "named.yaml", named)
    c, _ = check_same(cfg, run, "v2")
    assert "pod:t/named" in c.invalid_keys and [str(e) for e in c.errors if "named" in str(e)] == [
        "pods/named.yaml[0]: spec.priorityClassName: no PriorityClass with name batch was found (declare it in "
        "priorityclasses.yaml; built in: system-node-critical, system-cluster-critical)"]
    classes = ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch}\nvalue: -5\n---\n"
               "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: normal}\nvalue: 7\n"
               "globalDefault: true\n")
    write(cfg / "priorityclasses.yaml", classes)
    for _ in range(2):  # parsed, then from the cache
        c, plan = check_same(cfg, run, "v2")
        got = {pp.key: (pp.pod.priority_class_name, pp.pod.priority) for pp in plan.pods}
        assert got == {"t/a": ("normal", 7), "t/b": ("normal", 7), "t/c": ("normal", 7), "t/d": ("normal", 7),
                       "t/named": ("batch", -5)}
    write(cfg / "priorityclasses.yaml", classes.replace("value: 7", "value: 8"))
    c, plan = check_same(cfg, run, "v2")
    assert {pp.pod.priority for pp in plan.pods if pp.key != "t/named"} == {8}
    write(cfg / "priorityclasses.yaml", classes.replace("value: 7", "value: 1000000001"))
    with pytest.raises(ConfigInvalid) as exc:
        load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert [str(e) for e in exc.value.errors] == [
        "priorityclasses.yaml[1]: value: maximum allowed value of a user defined priority is 1000000000"]


def test_the_shared_cpu_pool_is_part_of_the_context_and_of_the_fragments(tmp_path, monkeypatch):
    """cpuManagerPolicy static on v2: every container scope's AllowedCPUs comes from the state
    file's shared pool (an input, as the state file is): a warm plan from fragments carries it, and
    another pool replans every pod."""
    from sdqos.kube.cpumanager import CPUManagerState
    from sdqos.loading import incremental

    cfg, run = config(tmp_path), tmp_path / "run"
    write(cfg / "node.yaml", NODE + 'cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n')
    pool = ["0-3"]
    monkeypatch.setattr(cpustate, "decoded",
                        lambda run_dir=None: CPUManagerState("static", default_cpuset=cpuset.parse(pool[0])))
    c = load_config(cfg, detected=CAPACITY)
    for _ in range(2):  # cold, then warm from the fragments
        _, got = load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
        assert got == build_plan(c.node, c.pods, c.vms, "v2", shared_cpus="0-3")
        assert {cp.properties["AllowedCPUs"] for pp in got.pods for cp in pp.containers} == {0b1111}
    pool[0] = "0-1"
    planned = count_calls(monkeypatch, engine, "plan_pod")
    _, got = load_plan(cfg, "v2", detected=CAPACITY, cache_dir=run)
    assert sorted(a[0].name for a in planned) == ["a", "b", "c", "d"]
    assert {cp.properties["AllowedCPUs"] for pp in got.pods for cp in pp.containers} == {0b0011}
    assert all("AllowedCPUs" not in pp.properties for pp in got.pods)  # kubelet sets no cpuset on a pod


@pytest.mark.parametrize("after", ["kept", "removed", "damaged"])
def test_a_plans_pods_are_read_back_from_the_cache_file_once_it_holds_them(tmp_path, monkeypatch, after):
    """Once the parse cache file holds every entry, the load lets go of the entries' texts (a sync
    seldom asks for a pod): a pod asked for later is decoded from its entry read back from the
    file; with the file gone or damaged, from its manifest parsed again — the same pod."""
    from sdqos.loading import configdir

    cfg, run = config(tmp_path), tmp_path / "run"
    want_cfg, _ = expected(cfg, "v1")
    for _ in range(2):  # cold (every file parsed and saved), then warm (every plan from its fragment)
        _, plan = load_plan(cfg, "v1", detected=CAPACITY, cache_dir=run)
        scan = plan.pods[0].manifest.scan  # type: ignore[union-attr]
        assert all(f.text == "" for f in scan.files)  # no entry text is held
        path = run / pc.CACHE_NAME
        if after == "removed":
            path.unlink()
        elif after == "damaged":
            path.write_text(path.read_text().replace('{"pods":', '{"podz":'))
        with monkeypatch.context() as m:
            parsed = count_calls(m, configdir, "_parse_files")
            assert [pp.pod for pp in plan.pods] == want_cfg.pods
        assert bool(parsed) == (after != "kept")  # read back from the file, else parsed again


def test_a_load_that_cannot_save_the_cache_keeps_the_entries_texts(tmp_path):
    """A read-only load (``cache_write=False``: status, explain) does not write the cache file, so
    the entries it parsed are not there to read back: it keeps their texts."""
    cfg, run = config(tmp_path), tmp_path / "run"
    _, plan = load_plan(cfg, "v1", detected=CAPACITY, cache_dir=run, cache_write=False)
    scan = plan.pods[0].manifest.scan  # type: ignore[union-attr]
    assert all(f.text for f in scan.files if not f.rel.startswith("vms/"))
    assert [pp.pod for pp in plan.pods] == expected(cfg, "v1")[0].pods
