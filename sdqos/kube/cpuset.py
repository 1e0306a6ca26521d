"""CPU lists ("0-1,4") as kubelet reads them: k8s.io/utils/cpuset ``Parse`` and ``String``.

Parse splits on ",", each part on the first "-"; a number is Go's strconv.Atoi (an optional sign,
ASCII digits); a range whose start is above its end is an error; "" is the empty set.
"""

from __future__ import annotations

import re

MAX_RANGE = 1 << 16
_ATOI = re.compile(r"[+-]?[0-9]+")


def _atoi(text: str) -> int:
    if not _ATOI.fullmatch(text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def parse(text: str) -> frozenset[int]:
    """cpuset.Parse: ValueError with kubelet's wording when ``text`` is not a CPU list."""
    if text == "":
        return frozenset()
    out: set[int] = set()
    for part in text.split(","):
        bounds = part.split("-", 1)
        if len(bounds) == 1:
            out.add(_atoi(bounds[0]))
            continue
        start, end = _atoi(bounds[0]), _atoi(bounds[1])
        if start > end:
            raise ValueError(f'invalid range "{part}" ({start} > {end})')
        if end - start >= MAX_RANGE:  # (kubelet would try to hold it; no host has that many CPUs)
            raise ValueError(f'range "{part}" holds more than {MAX_RANGE} CPUs')
        out.update(range(start, end + 1))
    return frozenset(out)


def format_set(cpus: frozenset[int] | set[int]) -> str:
    """cpuset's String: sorted, consecutive CPUs as ranges ("1-3,5-6,8")."""
    ranges: list[list[int]] = []
    for c in sorted(cpus):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
