"""A pod's containers as `podman run` arguments (sdqos.plan.podman) and the run spec read from the
manifest (sdqos.kube.runspec): kubelet's values as podman flags, names and labels."""

from __future__ import annotations

import dataclasses

import pytest

from sdqos.errors import InvalidInput
from sdqos.kube.runspec import run_spec
from sdqos.plan.engine import build_plan
from sdqos.plan.podman import container_name, labels, run_args

from ..helpers import node, pod_from

DOC = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "initContainers": [
            {"name": "migrate", "image": "bb", "command": ["/bin/sh", "-c", "true"],
             "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "shipper", "image": "bb", "restartPolicy": "Always", "args": ["-v"]},
        ],
        "containers": [
            {"name": "nginx", "image": "nginx:1", "env": [{"name": "A", "value": "1"}], "workingDir": "/srv",
             "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}},
        ],
    },
}


def planned(cgroup="v1", **kw):
    plan = build_plan(node(**kw), [pod_from(DOC)], cgroup=cgroup)
    return plan.pods[0]


def test_run_spec_from_the_manifest():
    spec = run_spec(DOC, "pods/web.yaml[0]")
    assert spec.restart_policy == "Always"
    assert [(c.name, c.kind, c.image) for c in spec.containers] == [
        ("migrate", "init", "bb"), ("shipper", "sidecar", "bb"), ("nginx", "app", "nginx:1")]
    nginx = spec.containers[2]
    assert (nginx.command, nginx.args, nginx.env, nginx.working_dir) == (None, None, (("A", "1"),), "/srv")


@pytest.mark.parametrize("mutate,where", [
    (lambda d: d["spec"]["containers"][0].update(env=[{"name": "A", "valueFrom": {"secretKeyRef": {}}}]),
     "pods/web.yaml[0]: spec.containers[0].env[0].valueFrom"),
    (lambda d: d["spec"]["containers"][0].update(command="sh -c x"), "pods/web.yaml[0]: spec.containers[0].command"),
    (lambda d: d["spec"].update(restartPolicy="Sometimes"), "pods/web.yaml[0]: spec.restartPolicy"),
    (lambda d: d["spec"]["containers"][0].update(image=""), "pods/web.yaml[0]: spec.containers[0].image"),
])
def test_run_spec_refuses_what_it_cannot_run(mutate, where):
    import copy

    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(InvalidInput) as exc:
        run_spec(doc, "pods/web.yaml[0]")
    assert str(exc.value).startswith(where + ": ")


def test_app_container_flags_are_kubelets_values():
    pp = planned()
    nginx = next(c for c in pp.containers if c.name == "nginx")
    spec = run_spec(DOC, "x").containers[2]
    args = run_args(pp, nginx, spec, "Always", "v1")
    assert args[:3] == ["run", "--name=shop_web_nginx", f"--cgroup-parent={pp.slice}"]
    assert "--detach" in args and "--restart=always" in args
    assert "--cpu-shares=256" in args and "--cpu-quota=50000" in args and "--cpu-period=100000" in args
    assert f"--memory={256 * 2**20}" in args and f"--oom-score-adj={nginx.oom_score_adj}" in args
    assert "--pids-limit=-1" in args and "--env=A=1" in args and "--workdir=/srv" in args
    assert args[-1] == "nginx:1" and not any(a.startswith("--cgroup-conf") for a in args)
    assert {f"--label={k}={v}" for k, v in labels(pp, "nginx").items()} <= set(args)
    assert labels(pp, "nginx")["io.kubernetes.pod.uid"] == pp.uid


def test_init_and_sidecar_and_entrypoint():
    pp = planned()
    spec = run_spec(DOC, "x")
    migrate = run_args(pp, pp.containers[0], spec.containers[0], "Never", "v1")
    assert "--detach" not in migrate and not any(a.startswith("--restart") for a in migrate)
    assert migrate[-3:] == ["--entrypoint=[\"/bin/sh\", \"-c\", \"true\"]", "--", "bb"]
    shipper = run_args(pp, pp.containers[1], spec.containers[1], "Never", "v1")
    assert "--restart=always" in shipper and shipper[-3:] == ["--", "bb", "-v"]  # args after the image
    assert "--cpu-quota" not in " ".join(shipper)  # no CPU limit: no quota, as kubelet
    assert container_name(pp, "shipper") == "shop_web_shipper"


def test_v2_adds_swap_and_oom_group():
    pp = planned("v2")
    nginx = next(c for c in pp.containers if c.name == "nginx")
    args = run_args(pp, nginx, run_spec(DOC, "x").containers[2], "OnFailure", "v2")
    assert "--cgroup-conf=memory.swap.max=0" in args and "--cgroup-conf=memory.oom.group=1" in args
    assert "--restart=on-failure" in args


def test_update_args_bring_a_running_container_to_the_current_values():
    from sdqos.plan.podman import update_args

    pp = planned()
    nginx = next(c for c in pp.containers if c.name == "nginx")
    assert update_args(nginx, "v1") == ["update", "--cpu-shares=256", "--cpu-quota=50000", "--cpu-period=100000",
                                        f"--memory={256 * 2**20}", f"--memory-swap={256 * 2**20}"]
    shipper = next(c for c in pp.containers if c.name == "shipper")
    no_limit = 0x7FFFFFFFFFFFF000  # the kernel's own: podman takes no -1 for a memory limit
    # no limits: both removed (podman 4.3 drops --cpu-quota=-1: the kernel's largest quota lifts one)
    assert update_args(shipper, "v2")[:3] == ["update", "--cpu-quota=17592186044415", "--cpu-period=100000"]
    assert update_args(shipper, "v1") == ["update", "--cpu-shares=2", "--cpu-quota=17592186044415",
                                          "--cpu-period=100000", f"--memory={no_limit}", f"--memory-swap={no_limit}"]
    # v2: the weight is the scope's, set by systemd; crun would overwrite it with its own conversion
    v2 = next(c for c in planned("v2").containers if c.name == "nginx")
    assert update_args(v2, "v2") == [
        "update", "--cpu-quota=50000", "--cpu-period=100000", f"--memory={256 * 2**20}", f"--memory-swap={256 * 2**20}"]
    # cpuManagerPolicy static on v2: the container's CPUs as the plan holds them, one token
    pinned = dataclasses.replace(v2, resources=dataclasses.replace(v2.resources, cpuset="0-1"))
    assert update_args(pinned, "v2")[-1] == "--cpuset-cpus=0-1"


@pytest.mark.parametrize("policy,flag", [(None, None), ("Always", "--pull=always"), ("IfNotPresent", "--pull=missing"),
                                         ("Never", "--pull=never")])
def test_image_pull_policy_as_podmans_pull(policy, flag):
    import copy

    doc = copy.deepcopy(DOC)
    if policy:
        doc["spec"]["containers"][0]["imagePullPolicy"] = policy
    pp = planned()
    args = run_args(pp, pp.containers[2], run_spec(doc, "x").containers[2], "Always", "v1")
    assert [a for a in args if a.startswith("--pull")] == ([flag] if flag else [])


def test_an_unknown_pull_policy_is_refused():
    import copy

    doc = copy.deepcopy(DOC)
    doc["spec"]["containers"][0]["imagePullPolicy"] = "Sometimes"
    with pytest.raises(InvalidInput) as exc:
        run_spec(doc, "pods/web.yaml[0]")
    assert str(exc.value).startswith("pods/web.yaml[0]: spec.containers[0].imagePullPolicy: 'Sometimes' is not one of")


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
def test_no_swap_as_kubelet_on_run_and_update(cgroup):
    """kubelet's NoSwap: memory+swap equal to the memory limit (v1: memsw = memory; v2:
    memory.swap.max 0), on run and on update; podman's own default would be twice the limit."""
    from sdqos.plan.podman import update_args

    pp = planned(cgroup)
    nginx = next(c for c in pp.containers if c.name == "nginx")
    run = run_args(pp, nginx, run_spec(DOC, "x").containers[2], "Always", cgroup)
    for args in (run, update_args(nginx, cgroup)):
        assert f"--memory={256 * 2**20}" in args and f"--memory-swap={256 * 2**20}" in args


@pytest.mark.parametrize("cgroup", ["v1", "v2"])
def test_the_shared_pool_reaches_a_podman_container_on_both_cgroup_versions(cgroup):
    """cpuManagerPolicy static: the plan holds each container's CPUs (the shared pool here) on v1
    too, for `podman update --cpuset-cpus` and the read-back of crun's own cgroup (v1: the cpuset
    hierarchy's cpuset.cpus); systemd gets AllowedCPUs on v2 only. Policy none: nothing."""
    from sdqos.reconcile.live import container_expected
    from sdqos.plan.podman import update_args

    static = build_plan(node(cpu_manager_policy="static"), [pod_from(DOC)], cgroup=cgroup, shared_cpus="0")
    nginx = next(c for c in static.pods[0].containers if c.name == "nginx")
    assert nginx.resources.cpuset == "0" and update_args(nginx, cgroup)[-1] == "--cpuset-cpus=0"
    assert ("AllowedCPUs" in nginx.properties) == (cgroup == "v2")
    want = container_expected(nginx.properties, cgroup, 4096, nginx.resources.cpuset)
    assert want is not None and (want.get("cpuset/cpuset.cpus") == "0") == (cgroup == "v1")
    none = build_plan(node(), [pod_from(DOC)], cgroup=cgroup, shared_cpus="0")
    plain = next(c for c in none.pods[0].containers if c.name == "nginx")
    assert plain.resources.cpuset is None and not any(a.startswith("--cpuset") for a in update_args(plain, cgroup))
