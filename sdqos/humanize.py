"""Numbers for people: 128 MiB, 850m, 50% CPU. Used by plan/explain/status text output."""

from __future__ import annotations

INFINITY = 2**64 - 1  # systemd's "infinity" (and "unset" for CPUShares/CPUWeight): UINT64_MAX

_BINARY = (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def size(n: int | None, decimals: int = 1) -> str:
    """Bytes with a binary unit; exact values stay exact (1.5 GiB), others get ``decimals``."""
    if n is None or n == INFINITY:
        return "unlimited"
    if n < 0:
        return "-" + size(-n, decimals)
    if n >= 2**70:  # past any machine: digits, not EiB (and no float, which 1e400 would overflow)
        d = str(n)
        return f"{d[0]}.{d[1:3]}e{len(d) - 1} B"
    for unit, factor in _BINARY:
        if n >= factor:
            whole, rest = divmod(n, factor)  # integers: a quantity like 1e400 is no float
            if not rest:
                return f"{whole} {unit}"
            scale = 10**decimals
            part = (rest * scale + factor // 2) // factor  # rounded, in integers
            return f"{whole + part // scale}.{part % scale:0{decimals}d} {unit}"
    return f"{n} B"


def cpu(milli: int | None) -> str:
    """Millicores the way Kubernetes writes them: 250m, 2, 1500m."""
    if milli is None:
        return "-"
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def quota(per_sec_usec: int | None) -> str:
    """CPUQuotaPerSecUSec as systemd shows it: 50% CPU (of one CPU), or 'no quota'."""
    if per_sec_usec is None or per_sec_usec == INFINITY:
        return "no quota"
    whole, rest = divmod(per_sec_usec, 10_000)
    if not rest:
        return f"{whole}% CPU"
    hundredths = (rest * 100 + 5_000) // 10_000  # rounded, in integers (no float for huge quotas)
    return f"{whole + hundredths // 100}.{hundredths % 100:02d}% CPU"


def count(n: int | None) -> str:
    if n is None or n == INFINITY:
        return "unlimited"
    return str(n)


def usec(n: int | None) -> str:
    if n is None or n == INFINITY:
        return "default"
    if n % 1000 == 0:
        return f"{n // 1000}ms"
    return f"{n}us"


def change(name: str, old, new, *, kernel: bool = False, show=None, sizes: bool = False) -> str:
    """``old → new`` for a cgroup file (``kernel``) or a value ``show`` renders (a property: see
    ``plan.properties.change``; ``sizes``: it is a size in bytes): with enough digits that two
    different values never read the same (19.1 GiB → 19.1 GiB becomes 19.08 GiB → 19.09 GiB, or
    exact bytes)."""
    if show is None:
        show = (lambda v: kernel_value(name, v)) if kernel else str
    a, b = show(old), show(new)
    if a != b or old == new:
        return f"{a} → {b}"
    if isinstance(old, int) and isinstance(new, int) and (sizes or (kernel and "memory" in name)):
        for d in (2, 3, 4, 6):
            a, b = size(old, d), size(new, d)
            if a != b:
                return f"{a} → {b}"
        return f"{old} B → {new} B"
    return f"{a} ({old}) → {b} ({new})"


def kernel_value(file: str, v) -> str:
    """A cgroup file's value as people read it: sizes for memory files (``unlimited`` for the
    kernel's no-limit values), ``quota period`` for cpu.max."""
    if isinstance(v, (tuple, list)):
        return " ".join(str(x) for x in v if x is not None)
    if isinstance(v, int) and "memory" in file and v >= 0:
        return "unlimited" if v >= 2**62 else size(v)
    return str(v)


def ellipsize(text: str, width: int) -> str:
    """``text`` cut in the middle with … to ``width`` characters, as systemctl shortens unit names."""
    if width <= 0 or len(text) <= width:
        return text
    if width < 5:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]
