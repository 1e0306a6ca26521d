"""volumes and volumeMounts as sdqos podman start serves them (sdqos.kube.volumes) and their
``--mount`` options (sdqos.plan.podman.mount_flags); what cannot be served is refused in one line."""

from __future__ import annotations

import pytest

from sdqos.errors import InvalidInput
from sdqos.kube.runspec import run_spec
from sdqos.plan.engine import build_plan
from sdqos.plan.podman import mount_flags

from ..helpers import node, pod_from

WHERE = "pods/t.yaml[0]"


def doc(volumes, *mounts_per_container) -> dict:
    containers = [{"name": f"c{i}", "image": "localhost/bb", "volumeMounts": m,
                   "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}} for i, m in enumerate(mounts_per_container)]
    return {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"volumes": volumes, "containers": containers}}


def refused(d) -> str:
    with pytest.raises(InvalidInput) as exc:
        run_spec(d, WHERE)
    assert "\n" not in str(exc.value)
    return str(exc.value).removeprefix(WHERE + ": ")


def test_mount_options_for_each_kind():
    d = doc([{"name": "h", "hostPath": {"path": "/srv/data/", "type": "Directory"}}, {"name": "e", "emptyDir": {}},
             {"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
             {"name": "n", "emptyDir": {"medium": "Memory"}}],
            [{"name": "h", "mountPath": "/data", "readOnly": True, "mountPropagation": "HostToContainer"},
             {"name": "e", "mountPath": "/scratch", "subPath": "a/b"}, {"name": "m", "mountPath": "/fast"},
             {"name": "n", "mountPath": "/fast2", "readOnly": True}])
    pp = build_plan(node(), [pod_from(d)], cgroup="v1").pods[0]
    spec = run_spec(d, WHERE).containers[0]
    assert mount_flags(spec, pp, "/var/lib/sdqos/pods") == [
        "--mount=type=bind,source=/srv/data,destination=/data,bind-propagation=rslave,ro",
        f"--mount=type=bind,source=/var/lib/sdqos/pods/{pp.uid}/volumes/kubernetes.io~empty-dir/e/a/b,destination=/scratch",
        f"--mount=type=tmpfs,destination=/fast,tmpfs-mode=1777,tmpfs-size={16 * 2**20}",
        f"--mount=type=tmpfs,destination=/fast2,tmpfs-mode=1777,tmpfs-size={64 * 2**20},ro"]  # the pod's memory limit


@pytest.mark.parametrize("volumes,mounts,message", [
    ([{"name": "s", "secret": {"secretName": "x"}}], [], "spec.volumes[0].secret: secret volumes need the Kubernetes API"),
    ([{"name": "p", "projected": {}}], [], "spec.volumes[0].projected: projected volumes need"),
    ([{"name": "d", "downwardAPI": {}}], [], "spec.volumes[0].downwardAPI: downwardAPI volumes need"),
    ([{"name": "x", "bogusSource": {}}], [], "spec.volumes[0].bogusSource: is not a volume source"),
    ([{"name": "x"}], [], "spec.volumes[0]: must have exactly one volume source"),
    ([{"name": "x", "emptyDir": {}, "hostPath": {"path": "/a"}}], [], "spec.volumes[0]: may not specify more than 1 volume type"),
    ([{"name": "X", "emptyDir": {}}], [], "spec.volumes[0].name: must be a DNS-1123 label"),
    ([{"name": "x", "emptyDir": {}}, {"name": "x", "emptyDir": {}}], [], "spec.volumes[1].name: Duplicate value: 'x'"),
    ([{"name": "x", "emptyDir": {"medium": "HugePages"}}], [], "spec.volumes[0].emptyDir.medium: 'HugePages'"),
    ([{"name": "x", "emptyDir": {"sizeLimit": "lots"}}], [], "spec.volumes[0].emptyDir.sizeLimit: "),
    ([{"name": "x", "hostPath": {"path": "rel"}}], [], "spec.volumes[0].hostPath.path: 'rel' must be an absolute path"),
    ([{"name": "x", "hostPath": {"path": "/a/../etc"}}], [], "spec.volumes[0].hostPath.path: '/a/../etc' must not contain '..'"),
    ([{"name": "x", "hostPath": {"path": "/a", "type": "Dir"}}], [], "spec.volumes[0].hostPath.type: 'Dir' is not one of"),
    ([{"name": "x", "hostPath": {"path": '/a"b'}}], [], "spec.volumes[0].hostPath.path: '/a\"b': podman's --mount cannot carry"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "rel"}], "spec.containers[0].volumeMounts[0].mountPath: 'rel' must be an absolute path"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a,type=bind"}], "spec.containers[0].volumeMounts[0].mountPath: '/a,type=bind': podman's --mount cannot carry"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a"}, {"name": "x", "mountPath": "/a"}], "spec.containers[0].volumeMounts[1].mountPath: '/a': must be unique"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "subPath": "/etc"}], "spec.containers[0].volumeMounts[0].subPath: '/etc' must be a relative path"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "subPathExpr": "$(POD)"}], "spec.containers[0].volumeMounts[0].subPathExpr: needs"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "mountPropagation": "Both"}], "spec.containers[0].volumeMounts[0].mountPropagation: 'Both'"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "readOnly": True, "recursiveReadOnly": "Enabled"}], "spec.containers[0].volumeMounts[0].recursiveReadOnly: Enabled: podman 4 cannot"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "recursiveReadOnly": "IfPossible"}], "spec.containers[0].volumeMounts[0].recursiveReadOnly: may only be specified when readOnly is true"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "readOnly": "yes"}], "spec.containers[0].volumeMounts[0].readOnly: must be true or false"),
    ([{"name": "x", "emptyDir": {}}], [{"name": "x", "mountPath": "/a", "mountpath": "/b"}], "spec.containers[0].volumeMounts[0].mountpath: is not a volumeMount field"),
])
def test_what_cannot_be_served_is_refused_naming_the_field(volumes, mounts, message):
    assert refused(doc(volumes, mounts)).startswith(message)


def test_a_memory_empty_dir_is_mounted_once():
    vols = [{"name": "m", "emptyDir": {"medium": "Memory"}}]
    assert refused(doc(vols, [{"name": "m", "mountPath": "/a"}], [{"name": "m", "mountPath": "/b"}])).startswith(
        "spec.containers[1].volumeMounts[0]: Memory emptyDir 'm' is also mounted by spec.containers[0].volumeMounts[0]: "
        "podman cannot share")
    assert refused(doc(vols, [{"name": "m", "mountPath": "/a"}, {"name": "m", "mountPath": "/b"}])).startswith(
        "spec.containers[0].volumeMounts[1]: Memory emptyDir 'm' is also mounted by spec.containers[0].volumeMounts[0]")
