"""securityContext as kubelet merges it (pod's, overridden by the container's) and as podman flags
(sdqos.kube.security, sdqos.plan.podman.security_flags); what podman cannot honour is refused in
one line naming the field."""

from __future__ import annotations

import pytest

from sdqos.errors import InvalidInput
from sdqos.kube.runspec import run_spec
from sdqos.kube.security import HostSecurity, Security, non_root_error
from sdqos.plan.podman import security_flags

WHERE = "pods/t.yaml[0]"


def doc(pod_sc=None, sc=None, **spec) -> dict:
    c = {"name": "app", "image": "localhost/bb"}
    if sc is not None:
        c["securityContext"] = sc
    s = {"containers": [c], **spec}
    if pod_sc is not None:
        s["securityContext"] = pod_sc
    return {"metadata": {"name": "web"}, "spec": s}


def effective(pod_sc=None, sc=None, host=HostSecurity(), **spec) -> Security:
    return run_spec(doc(pod_sc, sc, **spec), WHERE, host).containers[0].security


def refused(pod_sc=None, sc=None, host=HostSecurity(), **spec) -> str:
    with pytest.raises(InvalidInput) as exc:
        run_spec(doc(pod_sc, sc, **spec), WHERE, host)
    line = str(exc.value)
    assert line.startswith(WHERE + ": spec.") and "\n" not in line
    return line.removeprefix(WHERE + ": ")


def test_nothing_asked_is_nothing_given():
    assert effective() == Security() and security_flags(Security()) == []


def test_the_container_overrides_the_pod_and_the_pod_gives_groups_and_sysctls():
    sec = effective({"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000, 5000],
                     "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"},
                                 {"name": "net/ipv4/ip_local_port_range", "value": "1024 65000"}],
                     "seccompProfile": {"type": "Unconfined"}},
                    {"runAsUser": 1001, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                     "capabilities": {"drop": ["ALL"], "add": ["net_bind_service", "CAP_CHOWN"]},
                     "seccompProfile": {"type": "Localhost", "localhostProfile": "team/strict.json"}},
                    HostSecurity(seccomp_root="/srv/seccomp"))
    assert security_flags(sec) == [
        "--user=1001:3000", "--group-add=2000", "--group-add=4000", "--group-add=5000",
        "--read-only", "--read-only-tmpfs=false", "--security-opt=no-new-privileges",
        "--cap-drop=ALL", "--cap-add=CAP_NET_BIND_SERVICE", "--cap-add=CAP_CHOWN",
        "--security-opt=seccomp=/srv/seccomp/team/strict.json",
        "--sysctl=kernel.shm_rmid_forced=1", "--sysctl=net.ipv4.ip_local_port_range=1024 65000"]


def test_privileged_unconfined_and_apparmor_where_the_host_has_it():
    host = HostSecurity(apparmor=True)
    assert security_flags(effective(None, {"privileged": True, "appArmorProfile": {"type": "Unconfined"}}, host)) == [
        "--privileged", "--security-opt=apparmor=unconfined"]
    assert security_flags(effective({"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-nginx"}},
                                    None, host)) == ["--security-opt=apparmor=k8s-nginx"]
    assert security_flags(effective(None, {"appArmorProfile": {"type": "RuntimeDefault"}}, host)) == []
    # without AppArmor in the kernel, Unconfined is what the container gets anyway
    assert security_flags(effective(None, {"appArmorProfile": {"type": "Unconfined"}})) == []


@pytest.mark.parametrize("pod_sc,sc,spec,message", [
    (None, {"runAsNonRoot": True, "runAsUser": 0}, {}, "spec.containers[0].securityContext.runAsUser: container's runAsUser breaks non-root policy"),
    ({"runAsNonRoot": True}, {"runAsUser": 0}, {}, "spec.containers[0].securityContext.runAsUser: container's runAsUser breaks"),
    ({"runAsUser": 0}, {"runAsNonRoot": True}, {}, "spec.securityContext.runAsUser: container's runAsUser breaks"),
    (None, {"runAsGroup": 10}, {}, "spec.containers[0].securityContext.runAsGroup: podman needs runAsUser"),
    (None, {"runAsUser": -1}, {}, "spec.containers[0].securityContext.runAsUser: must be an integer between 0 and 2147483647"),
    (None, {"runAsUser": "1000"}, {}, "spec.containers[0].securityContext.runAsUser: must be an integer"),
    ({"fsGroup": 2**31}, None, {}, "spec.securityContext.fsGroup: must be an integer"),
    ({"supplementalGroups": [1, True]}, None, {}, "spec.securityContext.supplementalGroups[1]: must be an integer"),
    ({"supplementalGroups": [1, None]}, None, {}, "spec.securityContext.supplementalGroups[1]: must be an integer"),
    (None, {"privileged": "yes"}, {}, "spec.containers[0].securityContext.privileged: must be true or false"),
    (None, {"privileged": True, "allowPrivilegeEscalation": False}, {},
     "spec.containers[0].securityContext.allowPrivilegeEscalation: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
    (None, {"allowPrivilegeEscalation": False, "capabilities": {"add": ["SYS_ADMIN"]}}, {},
     "spec.containers[0].securityContext.allowPrivilegeEscalation: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"),
    (None, {"capabilities": {"add": ["NET_ADMIN,SYS_ADMIN"]}}, {}, "spec.containers[0].securityContext.capabilities.add[0]: 'NET_ADMIN,SYS_ADMIN' is not a Linux capability"),
    (None, {"capabilities": {"drop": ["--privileged"]}}, {}, "spec.containers[0].securityContext.capabilities.drop[0]: '--privileged' is not"),
    (None, {"seLinuxOptions": {"level": "s0:c1"}}, {}, "spec.containers[0].securityContext.seLinuxOptions: SELinux labels are not supported"),
    ({"seLinuxOptions": {"level": "s0:c1"}}, None, {}, "spec.securityContext.seLinuxOptions: SELinux labels"),
    ({"windowsOptions": {}}, None, {}, "spec.securityContext.windowsOptions: Windows options"),
    (None, {"procMount": "Unmasked"}, {}, "spec.containers[0].securityContext.procMount: 'Unmasked': an unmasked /proc"),
    (None, None, {"hostUsers": False}, "spec.hostUsers: user namespaces (hostUsers: false) are not supported"),
    ({"supplementalGroupsPolicy": "Strict"}, None, {}, "spec.securityContext.supplementalGroupsPolicy: 'Strict'"),
    (None, {"seccompProfile": {"type": "Localhost", "localhostProfile": "../../etc/x.json"}}, {},
     "spec.containers[0].securityContext.seccompProfile.localhostProfile: '../../etc/x.json' must be a relative path"),
    (None, {"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/x.json"}}, {},
     "spec.containers[0].securityContext.seccompProfile.localhostProfile: '/etc/x.json' must be a relative path"),
    (None, {"seccompProfile": {"type": "Localhost"}}, {}, "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value"),
    (None, {"seccompProfile": {"type": "Unconfined", "localhostProfile": "x"}}, {}, "spec.containers[0].securityContext.seccompProfile.localhostProfile: can only be set"),
    (None, {"seccompProfile": {"type": "Maybe"}}, {}, "spec.containers[0].securityContext.seccompProfile.type: 'Maybe' is not one of"),
    (None, {"appArmorProfile": {"type": "RuntimeDefault"}}, {}, "spec.containers[0].securityContext.appArmorProfile.type: RuntimeDefault: cannot enforce AppArmor: AppArmor is not enabled on the host"),
    ({"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}, None, {}, "spec.securityContext.appArmorProfile.type: Localhost: cannot enforce AppArmor"),
    ({"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}, None, {}, "spec.securityContext.sysctls[0].name: 'kernel.msgmax' is not one of kubelet's safe sysctls"),
    ({"sysctls": [{"name": "Kernel..x", "value": "1"}]}, None, {}, "spec.securityContext.sysctls[0].name: 'Kernel..x' is not a sysctl name"),
    ({"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports", "value": "80,443"}]}, None, {}, "spec.securityContext.sysctls[0].value: '80,443': podman cannot carry"),
    ({"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1\n"}]}, None, {}, "spec.securityContext.sysctls[0].value: must not contain control characters"),
    (None, {"runAsUsr": 1}, {}, "spec.containers[0].securityContext.runAsUsr: is not a securityContext field"),
    ({"fsGroup": 1, "bogus": 1}, None, {}, "spec.securityContext.bogus: is not a securityContext field"),
])
def test_what_podman_cannot_honour_is_refused_naming_the_field(pod_sc, sc, spec, message):
    assert refused(pod_sc, sc, **spec).startswith(message)


def test_apparmor_localhost_profile_names_are_checked():
    host = HostSecurity(apparmor=True)
    assert refused(None, {"appArmorProfile": {"type": "Localhost", "localhostProfile": "-x"}}, host).startswith(
        "spec.containers[0].securityContext.appArmorProfile.localhostProfile: '-x' is not an AppArmor profile name")


@pytest.mark.parametrize("user,problem", [
    (None, "cannot verify runAsNonRoot: the image is not in podman's store"),
    ("", "container has runAsNonRoot and image will run as root"),
    ("0", "container has runAsNonRoot and image will run as root"),
    ("0:1000", "container has runAsNonRoot and image will run as root"),
    ("nginx", "container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root"),
    ("4294967296", "container has runAsNonRoot and image has an invalid user id"),
    ("1000", None), ("1000:1000", None),
])
def test_run_as_non_root_checks_the_images_user_as_kubelet(user, problem):
    got = non_root_error(user)
    assert (got is None) if problem is None else got.startswith(problem)


def test_run_as_non_root_with_a_user_needs_no_image():
    assert not effective(None, {"runAsNonRoot": True, "runAsUser": 1000}).needs_image_user
    assert effective({"runAsNonRoot": True}, None).needs_image_user
    assert not effective({"runAsNonRoot": True}, {"runAsNonRoot": False}).needs_image_user  # the container's wins


def test_the_deprecated_apparmor_annotation_counts_after_the_container_before_the_pod():
    host = HostSecurity(apparmor=True)
    key = "container.apparmor.security.beta.kubernetes.io/app"

    def flags(ann, pod_sc=None, sc=None, h=host):
        d = doc(pod_sc, sc)
        d["metadata"]["annotations"] = ann
        return security_flags(run_spec(d, WHERE, h).containers[0].security)

    assert flags({key: "localhost/k8s-web"}, {"appArmorProfile": {"type": "Unconfined"}}) == ["--security-opt=apparmor=k8s-web"]
    assert flags({key: "localhost/k8s-web"}, None, {"appArmorProfile": {"type": "Unconfined"}}) == [
        "--security-opt=apparmor=unconfined"]
    assert flags({key: "unconfined"}) == ["--security-opt=apparmor=unconfined"]
    assert flags({"container.apparmor.security.beta.kubernetes.io/other": "unconfined"}) == []
    d = doc()
    d["metadata"]["annotations"] = {key: "runtime/default"}
    with pytest.raises(InvalidInput) as exc:  # no AppArmor on the host
        run_spec(d, WHERE)
    assert str(exc.value).startswith(f"{WHERE}: metadata.annotations.{key}: RuntimeDefault: cannot enforce")
    d["metadata"]["annotations"] = {key: "bogus"}
    with pytest.raises(InvalidInput) as exc:
        run_spec(d, WHERE, host)
    assert str(exc.value).startswith(f"{WHERE}: metadata.annotations.{key}: 'bogus': invalid AppArmor profile")
