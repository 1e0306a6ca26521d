"""What a runtime needs to start a pod's containers, read from the Pod manifest: image, command,
args, env, workingDir, securityContext (sdqos.kube.security), volumes and volumeMounts
(sdqos.kube.volumes) and the pod's restartPolicy. Pure.

The QoS engine never needs these (so the parsed ``Pod`` leaves them out, and the plan cache stays
small); ``sdqos podman start`` reads them from the manifest document the pod came from.

Every field is data that ends up on podman's command line, so each is checked here as the 1.36 API
server checks it — and, where podman or the kernel cannot carry a value the API server lets
through (a NUL byte in an argument, an env name podman would trim), refused too: one
``InvalidInput`` naming file, document and field, before podman runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sdqos.errors import InvalidInput
from sdqos.kube import security, volumes
from sdqos.kube.expansion import expand, expand_env
from sdqos.kube.imageref import image_error
from sdqos.kube.security import HostSecurity, Security

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
# RelaxedEnvironmentVariableValidation (GA): any printable ASCII character but '=', at least one.
_ENV_NAME = re.compile(r"[ -<>-~]+", re.ASCII)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One container as a runtime starts it."""

    name: str
    kind: str  # app | init | sidecar
    image: str | None  # None: not the runtime's to start (``sdqos run`` it); else a valid reference
    command: tuple[str, ...] | None  # replaces the image's entrypoint when given (never empty)
    args: tuple[str, ...] | None  # replaces the image's cmd when given (never empty)
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None
    security: Security = Security()  # the effective securityContext (pod's and container's)
    path: str = ""  # the container in its document, for errors: spec.containers[0]
    mounts: tuple[volumes.Mount, ...] = ()  # its volumeMounts (sdqos.kube.volumes)
    pull: str | None = None  # imagePullPolicy when given: Always | IfNotPresent | Never


@dataclass(frozen=True, slots=True)
class PodRunSpec:
    restart_policy: str  # the pod's: Always (API default) | OnFailure | Never
    containers: tuple[RunSpec, ...]  # init containers (sidecars among them) first, then app containers
    where: str = ""  # the document, for errors: pods/web.yaml[0]
    volumes: tuple[volumes.Volume, ...] = ()  # the pod's volumes
    fs_group: int | None = None  # the pod's fsGroup: owner group of its emptyDirs, as kubelet sets it


class _Fields:
    """Reads one document's fields; every refusal names ``where`` (file[doc]) and the field."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, message: str):
        raise InvalidInput(message, where=self.where, field=field)

    def text(self, value, field: str, *, newline: bool = True) -> str:
        """A string podman can carry: never NUL (argv cannot hold it); no newline unless allowed."""
        if not isinstance(value, str):
            self.fail(field, f"must be a string, not {type(value).__name__}")
        if "\0" in value:
            self.fail(field, "must not contain a NUL character (no process argument can carry it)")
        if not newline and ("\n" in value or "\r" in value):
            self.fail(field, "must not contain a line break")
        return value

    def strings(self, value, field: str) -> tuple[str, ...] | None:
        """A list of strings; an empty list is no list (kubelet: ``len(command) == 0`` is unset)."""
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail(field, "must be a list of strings")
        out = tuple(self.text(v, f"{field}[{i}]") for i, v in enumerate(value))
        return out or None

    def env(self, value, field: str) -> tuple[tuple[str, str], ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(field, "must be a list of {name, value}")
        out = []
        for j, e in enumerate(value):
            path = f"{field}[{j}]"
            if not isinstance(e, dict):
                self.fail(path, "must be {name, value}")
            if "valueFrom" in e:
                self.fail(f"{path}.valueFrom", "valueFrom needs the Kubernetes API; give a value")
            name = self.text(e.get("name"), f"{path}.name")
            if not name:
                self.fail(f"{path}.name", "Required value")
            if not _ENV_NAME.fullmatch(name):
                self.fail(f"{path}.name", f"{name!r} must consist of printable ASCII characters except '='")
            if name.startswith(" "):  # podman trims leading blanks off a name: it would set another one
                self.fail(f"{path}.name", f"{name!r} must not start with a space (podman would drop it)")
            value_ = e.get("value", "")
            out.append((name, self.text(value_ if value_ is not None else "", f"{path}.value")))
        return tuple(out)

    def working_dir(self, value, field: str) -> str | None:
        if value is None or value == "":
            return None
        wd = self.text(value, field, newline=False)
        if not wd.startswith("/"):  # the OCI runtime spec's cwd is absolute; crun refuses others
            self.fail(field, f"{wd!r} must be an absolute path")
        return wd


def run_spec(doc: dict, where: str, host: HostSecurity = HostSecurity()) -> PodRunSpec:
    """The run spec of a (valid) Pod document; ``where`` names it in errors (``pods/web.yaml[0]``).
    An env entry sdqos cannot resolve (``valueFrom`` needs the API server) is an error naming the
    field; a container without an image is left to ``sdqos run``."""
    f = _Fields(where)
    spec = doc.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    if policy not in RESTART_POLICIES:
        f.fail("spec.restartPolicy", f"{policy!r} is not one of {', '.join(RESTART_POLICIES)}")
    pod_sc = security.pod_context(spec, where)
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    pod_volumes = volumes.pod_volumes(spec, where)
    out = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            path = f"spec.{key}[{i}]"
            name = c.get("name")
            if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
                f.fail(f"{path}.name", "must be a DNS-1123 label")
            image = c.get("image")
            if image is not None:
                problem = image_error(f.text(image, f"{path}.image"))
                if problem:
                    f.fail(f"{path}.image", problem)
            kind = "app"
            if key == "initContainers":
                kind = "sidecar" if c.get("restartPolicy") == "Always" else "init"
            pull = c.get("imagePullPolicy")
            if pull is not None and pull not in PULL_POLICIES:
                f.fail(f"{path}.imagePullPolicy", f"{pull!r} is not one of {', '.join(PULL_POLICIES)}")
            env = expand_env(f.env(c.get("env"), f"{path}.env"))  # $(VAR) as kubelet expands it
            known = dict(env)
            command, args = (f.strings(c.get(k), f"{path}.{k}") for k in ("command", "args"))
            command, args = ((tuple(expand(a, known) for a in v) if v else None) for v in (command, args))
            out.append(RunSpec(name, kind, image, command, args, env,
                               f.working_dir(c.get("workingDir"), f"{path}.workingDir"),
                               security.effective(pod_sc, c, where, path, host, annotations), path,
                               volumes.container_mounts(c, pod_volumes, where, path), pull))
    volumes.check_memory_volumes_not_shared([(s.name, s.mounts) for s in out], where)
    return PodRunSpec(policy, tuple(out), where, tuple(pod_volumes.values()), pod_sc.get("fsGroup"))
