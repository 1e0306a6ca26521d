"""Go's time.ParseDuration, for the KubeletConfiguration's duration fields (metav1.Duration:
``evictionPressureTransitionPeriod``, ``evictionSoftGracePeriod``, ``cpuCFSQuotaPeriod``, …), read
by node.yaml's check (:mod:`sdqos.kube.nodeconfig`), eviction's thresholds
(:mod:`sdqos.kube.eviction`) and the defaults' comparison (:mod:`sdqos.kube.dispositions`)."""

from __future__ import annotations

import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def parse_go_duration(text: str) -> int:
    """Go's time.ParseDuration → nanoseconds ("100ms", "1m30s", "1.5ms"). ValueError if invalid."""
    s = text.strip() if isinstance(text, str) else None
    if not s:
        raise ValueError(f"{text!r} is not a duration")
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    if s == "0":
        return 0
    pos, total = 0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m:
            raise ValueError(f"{text!r} is not a duration (e.g. 100ms, 1s)")
        number, unit = m.groups()
        if "." in number:
            whole, frac = number.split(".")
            total += int(whole or 0) * _UNIT_NS[unit] + int(frac or 0) * _UNIT_NS[unit] // 10 ** len(frac or "")
        else:
            total += int(number) * _UNIT_NS[unit]
        pos = m.end()
    return sign * total
