"""Unit names, exactly as kubelet's systemd cgroup driver and systemd-machined make them.

In a slice name every ``-`` opens a level (``a-b.slice`` lives in ``a.slice``), so text that comes
from a manifest must never reach a unit name unescaped: kubelet turns the dashes of a pod UID into
underscores, and everything else goes through systemd's own escaping (``systemd-escape``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

ROOT_SLICE = "-.slice"
MACHINE_SLICE = "machine.slice"
UNIT_NAME_MAX = 255

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.")
_UNSAFE = re.compile(r"[^A-Za-z0-9:_./]+")  # "/" is not escaped but turned into "-"
_COMPONENT = re.compile(r"^[A-Za-z0-9]+(?:[A-Za-z0-9-]*[A-Za-z0-9])?$")


def _hex(m: re.Match) -> str:
    return "".join(f"\\x{b:02x}" for b in m.group().encode("utf-8"))


@lru_cache(maxsize=4096)  # container names repeat across pods: a plan escapes each name once
def systemd_escape(text: str) -> str:
    """``systemd-escape TEXT``: ``/`` → ``-``, anything outside ``[A-Za-z0-9:_.]`` → ``\\xNN`` per
    UTF-8 byte, a leading ``.`` escaped too. The result can never add a slice level or a path."""
    out = _UNSAFE.sub(_hex, text).replace("/", "-")
    return "\\x2e" + out[1:] if out.startswith(".") else out


def systemd_unescape(text: str) -> str:
    """Inverse of :func:`systemd_escape` (for display)."""
    raw = bytearray()
    i = 0
    while i < len(text):
        if text.startswith("\\x", i) and i + 4 <= len(text):
            try:
                raw.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            except ValueError:
                pass
        raw.extend(b"/" if text[i] == "-" else text[i].encode("utf-8"))
        i += 1
    return raw.decode("utf-8", errors="replace")


def slice_name(components: list[str] | tuple[str, ...]) -> str:
    """kubelet's ``CgroupName.ToSystemd()``: each component's ``-`` becomes ``_``, components are
    joined with ``-``: ``[kubepods, burstable, pod1-2]`` → ``kubepods-burstable-pod1_2.slice``."""
    if not components:
        return ROOT_SLICE
    return "-".join(c.replace("-", "_") for c in components) + ".slice"


def parent_slice(slice_unit: str) -> str:
    """The slice a slice lives in, from its name alone (``a-b-c.slice`` → ``a-b.slice``)."""
    stem = slice_unit[: -len(".slice")]
    if stem in ("", "-"):
        return ROOT_SLICE
    head, sep, _ = stem.rpartition("-")
    return head + ".slice" if sep else ROOT_SLICE


def cgroup_root_components(cgroup_root: str) -> list[str]:
    """Components of kubelet's ``cgroupRoot`` (``/`` → none). Accepts the cgroupfs form
    (``/custom`` or ``/a/b``) and the systemd form (``/custom.slice``, ``/a.slice/a-b.slice``).
    Raises ValueError for a component that could not be a slice name component."""
    root = cgroup_root.strip()
    if root in ("", "/"):
        return []
    parts = [p for p in root.split("/") if p]
    if parts and parts[-1].endswith(".slice"):
        comps = parts[-1][: -len(".slice")].split("-")
    else:
        comps = parts
    for c in comps:
        if not _COMPONENT.match(c) or "-" in c:
            raise ValueError(f"{cgroup_root!r} is not a usable cgroup root (component {c!r})")
    return comps


def uid_component(uid: str) -> str:
    """``pod<UID>`` as kubelet names it; the caller has validated the UID's characters."""
    return "pod" + uid


def pod_slice(root: Sequence[str], tier: str | None, uid: str) -> str:
    """``kubepods-pod<uid>.slice`` (Guaranteed, tier None) or ``kubepods-<tier>-pod<uid>.slice``."""
    return _tier_prefix(tuple(root), tier) + slice_name([uid_component(uid)])


@lru_cache(maxsize=64)
def _tier_prefix(root: tuple[str, ...], tier: str | None) -> str:
    """``kubepods-<tier>-``: the part every pod slice of a tier shares, computed once per tier."""
    return slice_name([*root, "kubepods", *([tier] if tier else [])]).removesuffix(".slice") + "-"


def container_scope(uid: str, container: str) -> str:
    """The scope of one container of a pod: ``sdqos-pod<uid>-<escaped container>.scope``.

    Scope names have no hierarchy, but the container name is still escaped by systemd's rules,
    so nothing from a manifest can produce ``/`` or ``..``."""
    return f"sdqos-pod{uid.replace('-', '_')}-{systemd_escape(container)}.scope"


def machine_scope(machine_name: str) -> str:
    """systemd-machined's scope name for a machine: ``machine-<escaped name>.scope``
    (``qemu-1-vm1`` → ``machine-qemu\\x2d1\\x2dvm1.scope``)."""
    return f"machine-{systemd_escape(machine_name)}.scope"


def valid_unit_name(name: str) -> bool:
    """Characters and length systemd accepts in a unit name."""
    return (
        0 < len(name) <= UNIT_NAME_MAX
        and all(ch in _SAFE or ch in "-\\@" for ch in name)
        and "/" not in name
    )
