"""What a runtime needs to start a pod's containers, read from the Pod manifest: image, command,
args, env, workingDir and the pod's restartPolicy. Pure.

The QoS engine never needs these (so the parsed ``Pod`` leaves them out, and the plan cache stays
small); ``sdqos podman start`` reads them from the manifest document the pod came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdqos.errors import InvalidInput

RESTART_POLICIES = ("Always", "OnFailure", "Never")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One container as a runtime starts it."""

    name: str
    kind: str  # app | init | sidecar
    image: str | None  # None: not the runtime's to start (``sdqos run`` it)
    command: tuple[str, ...] | None  # replaces the image's entrypoint when given
    args: tuple[str, ...] | None  # replaces the image's cmd when given
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None


@dataclass(frozen=True, slots=True)
class PodRunSpec:
    restart_policy: str  # the pod's: Always (API default) | OnFailure | Never
    containers: tuple[RunSpec, ...]  # init containers (sidecars among them) first, then app containers


def _strings(value, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput("must be a list of strings", where=where)
    return tuple(value)


def run_spec(doc: dict, where: str) -> PodRunSpec:
    """The run spec of a (valid) Pod document; ``where`` names it in errors (``pods/web.yaml[0]``).
    An env entry sdqos cannot resolve (``valueFrom`` needs the API server) is an error naming the
    field; a container without an image is left to ``sdqos run``."""
    spec = doc.get("spec") or {}
    policy = spec.get("restartPolicy") or "Always"
    if policy not in RESTART_POLICIES:
        raise InvalidInput(f"{policy!r} is not one of {', '.join(RESTART_POLICIES)}", where=f"{where}: spec.restartPolicy")
    out = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            path = f"{where}: spec.{key}[{i}]"
            image = c.get("image")
            if image is not None and (not isinstance(image, str) or not image):
                raise InvalidInput("must be an image name", where=f"{path}.image")
            env = []
            for j, e in enumerate(c.get("env") or []):
                if not isinstance(e, dict) or not isinstance(e.get("name"), str):
                    raise InvalidInput("must be {name, value}", where=f"{path}.env[{j}]")
                if "valueFrom" in e:
                    raise InvalidInput("valueFrom needs the Kubernetes API; give a value", where=f"{path}.env[{j}].valueFrom")
                value = e.get("value", "")
                env.append((e["name"], value if isinstance(value, str) else str(value)))
            kind = "app"
            if key == "initContainers":
                kind = "sidecar" if c.get("restartPolicy") == "Always" else "init"
            wd = c.get("workingDir")
            out.append(RunSpec(c["name"], kind, image, _strings(c.get("command"), f"{path}.command"),
                               _strings(c.get("args"), f"{path}.args"), tuple(env), wd if isinstance(wd, str) else None))
    return PodRunSpec(policy, tuple(out))
