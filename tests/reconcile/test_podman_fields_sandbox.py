"""Manifest fields reach real podman as data (sdqos.kube.runspec, sdqos.plan.podman): an `image:`
that reads like an option is refused in one line and nothing starts; `command: []` keeps the
image's ENTRYPOINT, as kubelet; args that look like options reach the container untouched.
Real podman + crun in the sandbox (fixture from test_podman_sandbox)."""

from __future__ import annotations

import json

import pytest

from sdqos import sandbox as sbx

from ..sbhelpers import sdqos_in
from .test_podman_sandbox import inspect, podman, podman_env  # noqa: F401  (fixture)

WAIT = "trap 'exit 0' TERM; sleep 100000 & wait"


def pod(container: str) -> str:
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n"
            "  terminationGracePeriodSeconds: 2\n  containers:\n" + container)


def nothing_runs(sb, env) -> bool:
    return podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == ""


@pytest.mark.parametrize("image", ["--privileged", "--volume=/:/host"])
def test_an_image_that_reads_like_an_option_is_refused_and_starts_nothing(podman_env, image):
    sb, env, config = podman_env
    (config / "pods" / "shop.yaml").write_text(pod(
        f"  - name: app\n    image: {json.dumps(image)}\n    args: [localhost/bb, /bin/sh, -c, {json.dumps(WAIT)}]\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.splitlines() == [f"sdqos: error: pods/shop.yaml[0]: spec.containers[0].image: {image!r} is not "
                                     "an image reference ([registry[:port]/]name[:tag][@digest])"]
    assert r.stdout == "" and nothing_runs(sb, env)
    slices = sbx.run(sb, ["systemctl", "list-units", "--all", "--plain", "--no-legend", "kubepods*"]).stdout
    assert "pod" not in slices  # not even the pod's slice was made


def test_command_empty_keeps_the_entrypoint_and_option_like_args_are_data(podman_env):
    sb, env, config = podman_env
    # An image with an ENTRYPOINT and a CMD, as most are.
    store_img = json.loads(podman(sb, env, "image", "inspect", "localhost/bb"))[0]["Id"]
    podman(sb, env, "tag", store_img, "localhost/plain")
    cid = podman(sb, env, "create", "--entrypoint=[\"/bin/sh\", \"-c\"]", "localhost/bb", WAIT).strip()
    podman(sb, env, "commit", "--quiet", cid, "localhost/entry")
    podman(sb, env, "rm", cid)
    img = json.loads(podman(sb, env, "image", "inspect", "localhost/entry"))[0]["Config"]
    assert (img["Entrypoint"], img["Cmd"]) == (["/bin/sh", "-c"], [WAIT])

    (config / "pods" / "shop.yaml").write_text(pod(
        "  - name: keep\n    image: localhost/entry\n    command: []\n    args: []\n"
        f"  - name: dashes\n    image: localhost/entry\n    args: [{json.dumps(WAIT + ' # --privileged')}, --privileged, --volume=/:/host]\n"
        f"  - name: own\n    image: localhost/plain\n    command: [/bin/sh, -c, {json.dumps(WAIT)}, --privileged]\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    keep = inspect(sb, env, "shop_web_keep")
    assert (keep["Path"], keep["Args"]) == ("/bin/sh", ["-c", WAIT])  # image ENTRYPOINT + CMD
    dashes = inspect(sb, env, "shop_web_dashes")
    assert (dashes["Path"], dashes["Args"]) == ("/bin/sh", ["-c", WAIT + " # --privileged", "--privileged", "--volume=/:/host"])
    own = inspect(sb, env, "shop_web_own")  # command given, no args: the image's CMD goes (kubelet/CRI)
    assert (own["Path"], own["Args"]) == ("/bin/sh", ["-c", WAIT, "--privileged"])
    for c in (keep, dashes, own):
        assert c["State"]["Running"] and not c["HostConfig"]["Privileged"] and c["Mounts"] == []
