"""kubelet's eviction threshold values, read once for everyone: evictionHard for node allocatable
(:mod:`sdqos.kube.nodeconfig`, on every load) and every threshold for node-pressure eviction
(:mod:`sdqos.kube.eviction`). Kubernetes 1.36 ``pkg/kubelet/eviction/helpers.go``
parseThresholdStatement, parsePercentage, parseMinimumReclaims; ``api/types.go`` ThresholdValue,
GetThresholdQuantity. Small on purpose: node.yaml's check imports it on the warm sync path."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sdqos.errors import QuantityError
from sdqos.kube.goyaml import float32
from sdqos.kube.quantity import parse_quantity

# pkg/kubelet/eviction/api/types.go: the signals a threshold may name.
SIGNALS = frozenset({
    "memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree",
    "pid.available",
})
# evictionHard when node.yaml gives none (kubelet's default memory.available 100Mi); node
# allocatable (sdqos.kube.nodeconfig) and eviction both read it.
DEFAULT_EVICTION_HARD = {"memory.available": "100Mi"}


@dataclass(frozen=True, slots=True)
class ThresholdValue:
    """evictionapi.ThresholdValue: an absolute amount (bytes, or a PID count) or a fraction of the
    signal's capacity (float32 precision, as kubelet keeps it)."""

    quantity: int | None = None
    percentage: float = 0.0

    def amount(self, capacity: int) -> int:
        """GetThresholdQuantity: the quantity, else int64(float64(capacity) × percentage)."""
        if self.quantity is not None:
            return self.quantity
        return int(float(capacity) * self.percentage)

    def __str__(self) -> str:
        if self.quantity is not None:
            return str(self.quantity)
        return f"{round(self.percentage * 100, 4):g}%"


def go_float32(text: str) -> float:
    """strconv.ParseFloat(text, 32) as kubelet's parsePercentage calls it, rounded to float32.
    NaN is refused (kubelet would take it and compare nothing against it)."""
    s = text
    literal_inf = s.lstrip("+-").lower() in ("inf", "infinity")
    if not literal_inf:
        if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?0[xX][0-9a-fA-F.]+[pP][+-]?\d+", s):
            raise ValueError(f'invalid percentage "{text}%"')
    try:
        value = float.fromhex(s) if "x" in s.lower() and not literal_inf else float(s)
    except (ValueError, OverflowError):
        raise ValueError(f'invalid percentage "{text}%"') from None
    if math.isnan(value) or (not literal_inf and abs(value) > 3.4028234663852886e38):
        raise ValueError(f'invalid percentage "{text}%": value out of range')
    return float32(value)


def percentage(value: str) -> float:
    """parsePercentage: strip every trailing '%', ParseFloat(…, 32), float32(v) / 100 in float32."""
    return float32(go_float32(value.rstrip("%")) / 100)


def parse_threshold_statement(signal: str, value) -> ThresholdValue | None:
    """parseThresholdStatement: a positive quantity, or a percentage in (0 %, 100 %); 0 % and 100 %
    mean "no threshold" (None). ValueError with kubelet's reason."""
    if signal not in SIGNALS:
        raise ValueError(f"unsupported eviction signal {signal}")
    if not isinstance(value, str):
        raise ValueError(f"must be a quantity or a percentage (a string), not {value!r}")
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        pct = percentage(value)
        if pct < 0:
            raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if pct > 1:
            raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return ThresholdValue(percentage=pct)
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if q.sign() <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {q}")
    return ThresholdValue(quantity=q.value())


def parse_minimum_reclaim(signal: str, value) -> ThresholdValue:
    """parseMinimumReclaims, one entry: a percentage > 0, or a quantity ≥ 0."""
    if signal not in SIGNALS:
        raise ValueError(f"unsupported eviction signal {signal}")
    if not isinstance(value, str):
        raise ValueError(f"must be a quantity or a percentage (a string), not {value!r}")
    if value.endswith("%"):
        pct = percentage(value)
        if pct <= 0:
            raise ValueError(f"eviction percentage minimum reclaim {signal} must be positive: {value}")
        return ThresholdValue(percentage=pct)
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if q.sign() < 0:
        raise ValueError(f"negative eviction minimum reclaim specified for {signal}")
    return ThresholdValue(quantity=q.value())
