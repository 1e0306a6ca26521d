"""k8s.io/utils/cpuset: a set of logical CPU ids and the Linux CPU-list syntax ("0-3,7").

`CPUSet` is a frozenset of ints with the upstream methods' names (size, is_empty, contains,
equals, is_subset_of, union, intersection, difference, list, unsorted_list, clone); `parse` and
`str()` are upstream's `Parse` and `String` (kubernetes/utils cpuset/cpuset.go @ cf1189d6). Pure.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable

from sdqos.errors import CPUSetError

# strconv.Atoi: an optional sign and decimal digits, nothing else (no spaces, no underscores)
_ATOI = re.compile(r"[+-]?[0-9]+")
# A range is held as a set: one wider than any host's CPUs ("0-999999999" in node.yaml) is refused
# rather than built (kubelet would try to hold it).
MAX_RANGE = 1 << 16


def _atoi(text: str) -> int:
    if not _ATOI.fullmatch(text):
        raise CPUSetError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


class CPUSet(frozenset[int]):
    """An immutable set of CPU ids; set operations return a CPUSet."""

    __slots__ = ()

    def __new__(cls, cpus: Iterable[int] = ()) -> CPUSet:
        return super().__new__(cls, cpus)

    @classmethod
    def of(cls, *cpus: int) -> CPUSet:
        """cpuset.New(cpus...)."""
        return cls(cpus)

    def size(self) -> int:
        return len(self)

    def is_empty(self) -> bool:
        return not self

    def contains(self, cpu: int) -> bool:
        return cpu in self

    def equals(self, other: Iterable[int]) -> bool:
        return self == frozenset(other)

    def is_subset_of(self, other: Iterable[int]) -> bool:
        return self <= frozenset(other)

    def union(self, *others: Iterable[int]) -> CPUSet:  # type: ignore[override]
        return CPUSet(frozenset.union(self, *others))

    def intersection(self, *others: Iterable[int]) -> CPUSet:  # type: ignore[override]
        return CPUSet(frozenset.intersection(self, *others))

    def difference(self, *others: Iterable[int]) -> CPUSet:  # type: ignore[override]
        return CPUSet(frozenset.difference(self, *others))

    def __or__(self, other: frozenset[int]) -> CPUSet:  # type: ignore[override]
        return self.union(other)

    def __and__(self, other: frozenset[int]) -> CPUSet:  # type: ignore[override]
        return self.intersection(other)

    def __sub__(self, other: frozenset[int]) -> CPUSet:  # type: ignore[override]
        return self.difference(other)

    def list(self) -> list[int]:
        """List(): the ids, ascending."""
        return sorted(self)

    def unsorted_list(self) -> builtins.list[int]:
        return builtins.list(iter(self))

    def clone(self) -> CPUSet:
        return self

    def __str__(self) -> str:
        """String(): ascending, adjacent ids folded into ranges: "1-3,5-6,8"; "" when empty."""
        ranges: builtins.list[builtins.list[int]] = []
        for cpu in sorted(self):
            if ranges and cpu == ranges[-1][1] + 1:
                ranges[-1][1] = cpu
            else:
                ranges.append([cpu, cpu])
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)

    def __repr__(self) -> str:
        return f"CPUSet({str(self)!r})"


def parse(text: str) -> CPUSet:
    """Parse(): "0-5,34,46-48" → {0..5, 34, 46, 47, 48}; "" → empty. Raises CPUSetError with
    upstream's message (strconv's for a non-number, 'invalid range "3-0" (3 > 0)')."""
    if text == "":
        return CPUSet()
    result: set[int] = set()
    for part in text.split(","):
        bounds = part.split("-", 1)
        if len(bounds) == 1:
            result.add(_atoi(bounds[0]))
            continue
        start, end = _atoi(bounds[0]), _atoi(bounds[1])
        if start > end:
            raise CPUSetError(f'invalid range "{part}" ({start} > {end})')
        if end - start >= MAX_RANGE:
            raise CPUSetError(f'range "{part}" holds more than {MAX_RANGE} CPUs')
        result.update(range(start, end + 1))
    return CPUSet(result)
