"""Manifest fields reach real podman as data (sdqos.kube.runspec, sdqos.plan.podman): an `image:`
that reads like an option is refused in one line and nothing starts; `command: []` keeps the
image's ENTRYPOINT, as kubelet; args that look like options reach the container untouched (but for
kubelet's $(VAR) expansion).
Real podman + crun in the sandbox (fixture from test_podman_sandbox)."""

from __future__ import annotations

import json
import os

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
        f"  - name: dashes\n    image: localhost/entry\n    args: [{json.dumps(WAIT + ' # --privileged')}, --privileged, --volume=/:/host, '--port=$(PORT)', '$$(PORT)']\n"
        "    env: [{name: PORT, value: '8080'}]\n"
        f"  - name: own\n    image: localhost/plain\n    command: [/bin/sh, -c, {json.dumps(WAIT)}, --privileged]\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    keep = inspect(sb, env, "shop_web_keep")
    assert (keep["Path"], keep["Args"]) == ("/bin/sh", ["-c", WAIT])  # image ENTRYPOINT + CMD
    dashes = inspect(sb, env, "shop_web_dashes")
    assert (dashes["Path"], dashes["Args"]) == ("/bin/sh", ["-c", WAIT + " # --privileged", "--privileged", "--volume=/:/host",
                                                         "--port=8080", "$(PORT)"])  # kubelet's $(VAR) expansion
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


def test_host_path_and_empty_dir_are_mounted_as_kubelet_mounts_them(podman_env, tmp_path):
    sb, env, config = podman_env
    host = tmp_path / "host"
    (host / "data").mkdir(parents=True)
    (host / "data" / "hello").write_text("from the host\n")
    vols = tmp_path / "vols"
    env = {**env, "SDQOS_VOLUME_DIR": str(vols)}
    wait = json.dumps(WAIT)
    (config / "pods" / "shop.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n"
        "  terminationGracePeriodSeconds: 2\n"
        "  volumes:\n"
        f"  - {{name: data, hostPath: {{path: {host / 'data'}, type: Directory}}}}\n"
        f"  - {{name: made, hostPath: {{path: {host / 'made'}, type: DirectoryOrCreate}}}}\n"
        "  - {name: scratch, emptyDir: {}}\n"
        "  - {name: fast, emptyDir: {medium: Memory, sizeLimit: 8Mi}}\n"
        "  initContainers:\n"
        "  - name: fill\n    image: localhost/bb\n"
        "    command: [/bin/sh, -c, 'echo filled > /scratch/note && echo made > /made/m']\n"
        "    volumeMounts: [{name: scratch, mountPath: /scratch}, {name: made, mountPath: /made}]\n"
        "  containers:\n"
        f"  - name: app\n    image: localhost/bb\n    command: [/bin/sh, -c, {wait}]\n"
        "    volumeMounts:\n"
        "    - {name: data, mountPath: /data, readOnly: true}\n"
        "    - {name: scratch, mountPath: /scratch}\n"
        "    - {name: scratch, mountPath: /sub, subPath: deep/er}\n"
        "    - {name: fast, mountPath: /fast}\n")
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    cat = exec_in(sb, env, "shop_web_app", "cat", "/data/hello", "/scratch/note")
    assert cat.stdout == "from the host\nfilled\n", cat.stderr  # the init container's emptyDir is the app's
    assert (host / "made" / "m").read_text() == "made\n"  # DirectoryOrCreate made it, the write reached the host
    ro = exec_in(sb, env, "shop_web_app", "/bin/sh", "-c", "echo x > /data/hello")
    assert ro.returncode != 0 and "Read-only file system" in ro.stderr
    assert (host / "data" / "hello").read_text() == "from the host\n"
    assert exec_in(sb, env, "shop_web_app", "/bin/sh", "-c", "echo sub > /sub/f").returncode == 0
    uid = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)["pods"][0]["uid"]
    scratch = vols / uid / "volumes" / "kubernetes.io~empty-dir" / "scratch"
    assert (scratch / "deep" / "er" / "f").read_text() == "sub\n" and oct(scratch.stat().st_mode & 0o7777) == "0o777"
    pid = inspect(sb, env, "shop_web_app")["State"]["Pid"]
    fast = [ln for ln in sbx.run(sb, ["cat", f"/proc/{pid}/mountinfo"], check=True).stdout.splitlines()
            if ln.split()[4] == "/fast"]
    assert len(fast) == 1 and " - tmpfs " in fast[0] and "size=8192k" in fast[0], fast

    stop = sdqos_in(sb, "podman", "stop", "shop/web", "--config", str(config), env=env)
    assert stop.returncode == 0 and not (vols / uid).exists()  # the emptyDir went with the pod
    assert (host / "data" / "hello").exists()  # a hostPath stays


@pytest.mark.parametrize("volumes,mounts,line", [
    ("[{name: cfg, configMap: {name: web}}]", "[{name: cfg, mountPath: /etc/web}]",
     "spec.volumes[0].configMap: configMap volumes need the Kubernetes API or a volume plugin; sdqos podman serves "
     "hostPath and emptyDir only"),
    ("[{name: claim, persistentVolumeClaim: {claimName: c}}]", "[]",
     "spec.volumes[0].persistentVolumeClaim: persistentVolumeClaim volumes need the Kubernetes API"),
    ("[{name: h, hostPath: {path: /nonexistent-sdqos, type: Directory}}]", "[{name: h, mountPath: /h}]",
     "spec.volumes[0].hostPath.type: hostPath type check failed: /nonexistent-sdqos does not exist"),
    ("[{name: h, hostPath: {path: '/tmp,ro=false'}}]", "[{name: h, mountPath: /h}]",
     "spec.volumes[0].hostPath.path: '/tmp,ro=false': podman's --mount cannot carry"),
    ("[{name: s, emptyDir: {}}]", "[{name: s, mountPath: /s, subPath: ../../etc}]",
     "spec.containers[0].volumeMounts[0].subPath: '../../etc' must not contain '..'"),
    ("[{name: s, emptyDir: {}}]", "[{name: t, mountPath: /s}]",
     "spec.containers[0].volumeMounts[0].name: Not found: 't'"),
])
def test_volumes_that_cannot_be_served_start_nothing(podman_env, volumes, mounts, line):
    sb, env, config = podman_env
    (config / "pods" / "shop.yaml").write_text(pod(
        f"  - name: app\n    image: localhost/bb\n    command: [/bin/sh, -c, {json.dumps(WAIT)}]\n"
        f"    volumeMounts: {mounts}\n") + f"  volumes: {volumes}\n")
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"sdqos: error: pods/shop.yaml[0]: {line}"), r.stderr
    assert nothing_runs(sb, env)


def test_a_sub_path_through_a_symlink_out_of_its_volume_is_refused(podman_env, tmp_path):
    sb, env, config = podman_env
    vol = tmp_path / "vol"
    vol.mkdir()
    os.symlink("/etc", vol / "out")
    (config / "pods" / "shop.yaml").write_text(pod(
        f"  - name: app\n    image: localhost/bb\n    command: [/bin/sh, -c, {json.dumps(WAIT)}]\n"
        "    volumeMounts: [{name: v, mountPath: /v, subPath: out/sdqos-made-this}]\n") +
        f"  volumes: [{{name: v, hostPath: {{path: {vol}}}}}]\n")
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "sdqos: error: pods/shop.yaml[0]: spec.containers[0].volumeMounts[0].subPath: subPath 'out/sdqos-made-this' "
        "leads out of volume 'v' (to /etc/sdqos-made-this)"]
    assert not os.path.exists("/etc/sdqos-made-this") and nothing_runs(sb, env)


def test_image_pull_policy_never_never_pulls(podman_env):
    sb, env, config = podman_env
    (config / "pods" / "shop.yaml").write_text(pod(
        "  - name: app\n    image: registry.invalid/absent:1\n    imagePullPolicy: Never\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 1 and r.stderr.splitlines() == [
        "sdqos: error: podman run failed: Error: registry.invalid/absent:1: image not known"]  # no pull was tried
    assert nothing_runs(sb, env)
