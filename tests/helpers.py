"""Builders shared by the pure tests: pods from manifest dicts, node configs from kwargs."""

from __future__ import annotations

from sdqos.errors import InvalidInput
from sdqos.kube.manifests import ParseResult, parse_pod
from sdqos.kube.model import CPU, MEMORY, PID, NodeConfig, Pod, Source
from sdqos.kube.nodeconfig import GATE_DEFAULTS
from sdqos.kube.quantity import parse_quantity


def pod_from(manifest: dict, *, defaults: bool = True, classes: dict[str, int] | None = None) -> Pod:
    """A Pod from a manifest dict (apiVersion/kind added when missing); fails loudly if invalid.
    ``classes``: the PriorityClasses declared (name → value), as priorityclasses.yaml would."""
    from sdqos.kube.priority import PriorityClasses

    doc = {"apiVersion": "v1", "kind": "Pod", **manifest}
    doc.pop("status", None)
    result = ParseResult()
    pod = parse_pod(doc, Source("test.yaml"), result, apply_defaults=defaults, check_values=defaults,
                    classes=PriorityClasses(classes or {}))
    if result.errors:
        raise AssertionError("; ".join(str(e) for e in result.errors))
    assert pod is not None
    return pod


def parse_errors(manifest: dict) -> list[str]:
    result = ParseResult()
    parse_pod(manifest, Source("pods/t.yaml", 0), result)
    return [str(e) for e in result.errors]


def node(cpu: str = "8", memory: str = "16Gi", pids: str = "4194304", *, gates: dict | None = None, **kw) -> NodeConfig:
    g = dict(GATE_DEFAULTS)
    g.update(gates or {})
    for key in ("kube_reserved", "system_reserved"):
        if key in kw:
            kw[key] = {k: parse_quantity(v) for k, v in kw[key].items()}
    return NodeConfig(
        capacity={CPU: parse_quantity(cpu), MEMORY: parse_quantity(memory), PID: parse_quantity(pids)},
        capacity_source={},
        feature_gates=g,
        **kw,
    )


def quantity_map(d: dict) -> dict:
    return {k: parse_quantity(v) for k, v in d.items()}


__all__ = ["pod_from", "parse_errors", "node", "quantity_map", "InvalidInput"]
