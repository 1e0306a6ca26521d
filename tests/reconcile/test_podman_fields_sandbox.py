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


def status(sb, pid: int) -> dict[str, str]:
    text = sbx.run(sb, ["cat", f"/proc/{pid}/status"], check=True).stdout
    return {k: v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines())}


def exec_in(sb, env, name: str, *cmd: str):
    return sbx.run(sb, ["sh", "-c", '$SDQOS_PODMAN exec "$@"', "podman", name, *cmd], env=env, timeout=60)


def test_security_context_reaches_the_container_process(podman_env, tmp_path):
    sb, env, config = podman_env
    seccomp = tmp_path / "seccomp"
    (seccomp / "team").mkdir(parents=True)
    (seccomp / "team" / "no-mkdir.json").write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
        {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}))
    env = {**env, "SDQOS_SECCOMP_ROOT": str(seccomp)}
    wait = json.dumps(WAIT)
    (config / "pods" / "shop.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n"
        "  terminationGracePeriodSeconds: 2\n"
        "  securityContext: {fsGroup: 2000, supplementalGroups: [4000], runAsNonRoot: true, runAsUser: 1000}\n"
        "  containers:\n"
        f"  - name: locked\n    image: localhost/bb\n    command: [/bin/sh, -c, {wait}]\n"
        "    securityContext: {runAsGroup: 3000, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false,\n"
        "                      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}\n"
        f"  - name: filtered\n    image: localhost/bb\n    command: [/bin/sh, -c, {wait}]\n"
        "    securityContext: {runAsUser: 0, runAsNonRoot: false,\n"
        "                      seccompProfile: {type: Localhost, localhostProfile: team/no-mkdir.json}}\n"
        f"  - name: priv\n    image: localhost/bb\n    command: [/bin/sh, -c, {wait}]\n"
        "    securityContext: {runAsUser: 0, runAsNonRoot: false, privileged: true}\n")
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr

    locked = status(sb, inspect(sb, env, "shop_web_locked")["State"]["Pid"])
    assert locked["Uid"].split()[0] == "1000" and locked["Gid"].split()[0] == "3000"
    assert {"2000", "4000"} <= set(locked["Groups"].split())
    assert locked["CapEff"] == f"{1 << 10:016x}"  # CAP_NET_BIND_SERVICE only
    assert locked["NoNewPrivs"] == "1" and locked["Seccomp"] == "2"  # podman's default profile
    touch = exec_in(sb, env, "shop_web_locked", "/bin/sh", "-c", "echo x > /probe")
    assert touch.returncode != 0 and "Read-only file system" in touch.stderr
    pid = inspect(sb, env, "shop_web_locked")["State"]["Pid"]
    mounts = {ln.split()[4] for ln in sbx.run(sb, ["cat", f"/proc/{pid}/mountinfo"], check=True).stdout.splitlines()}
    assert not mounts & {"/tmp", "/var/tmp", "/run"}  # no writable tmpfs slipped in (podman's --read-only default)

    filtered = status(sb, inspect(sb, env, "shop_web_filtered")["State"]["Pid"])
    assert filtered["Uid"].split()[0] == "0" and filtered["Seccomp"] == "2"
    mk = exec_in(sb, env, "shop_web_filtered", "/bin/busybox", "mkdir", "/d")
    assert mk.returncode != 0 and "Operation not permitted" in mk.stderr
    assert exec_in(sb, env, "shop_web_filtered", "/bin/sh", "-c", "echo x > /f").returncode == 0  # only what the profile denies

    priv = status(sb, inspect(sb, env, "shop_web_priv")["State"]["Pid"])
    assert int(priv["CapEff"], 16) == int(status(sb, 1)["CapBnd"], 16) and priv["Seccomp"] == "0"


@pytest.mark.parametrize("sc,line", [
    ("{runAsNonRoot: true}", "spec.containers[0].securityContext.runAsNonRoot: container has runAsNonRoot and image "
                             "will run as root (image localhost/bb)"),
    ("{runAsNonRoot: true, runAsUser: 0}", "spec.containers[0].securityContext.runAsUser: container's runAsUser breaks "
                                           "non-root policy (runAsNonRoot: true, runAsUser: 0)"),
    ("{appArmorProfile: {type: RuntimeDefault}}", "spec.containers[0].securityContext.appArmorProfile.type: "
                                                  "RuntimeDefault: cannot enforce AppArmor: AppArmor is not enabled on the host"),
])
def test_what_cannot_be_honoured_starts_nothing(podman_env, sc, line):
    sb, env, config = podman_env
    if "appArmor" in sc and sbx.run(sb, ["cat", "/sys/module/apparmor/parameters/enabled"]).stdout.strip() == "Y":
        pytest.skip("this host has AppArmor")
    (config / "pods" / "shop.yaml").write_text(pod(
        f"  - name: app\n    image: localhost/bb\n    command: [/bin/sh, -c, {json.dumps(WAIT)}]\n"
        f"    securityContext: {sc}\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert (r.returncode, r.stderr.splitlines()) == (2, [f"sdqos: error: pods/shop.yaml[0]: {line}"])
    assert nothing_runs(sb, env)
