"""Unit identity, both ways: every unit name sdqos makes or must recognise, each maker with its
parser beside it, as kubelet's ``CgroupName.ToSystemd`` sits next to ``ParseSystemdToCgroupName``
(kubernetes ``pkg/kubelet/cm/cgroup_manager_linux.go``). ``parse(make(x)) == x`` for each pair
(``tests/kube/test_naming.py``). Nothing outside this module takes a unit name apart.

Names are exactly as kubelet's systemd cgroup driver, systemd-machined, libvirt and podman make
them. In a slice name every ``-`` opens a level (``a-b.slice`` lives in ``a.slice``), so text that
comes from a manifest must never reach a unit name unescaped: kubelet turns the dashes of a pod UID
into underscores, and everything else goes through systemd's own escaping (``systemd-escape``).

A unit's owner (:class:`Owner`) and its Description (:func:`description`) are here too: the
Description says who a unit is for, to people and ``systemctl``; sdqos reads back only its mark
(:data:`MARK`, "sdqos made this"), never who it is for — that comes from the name, the plan, or
the record sync keeps in /run/sdqos.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from sdqos.kube.model import BESTEFFORT, BURSTABLE, GUARANTEED

ROOT_SLICE = "-.slice"
MACHINE_SLICE = "machine.slice"
UNIT_NAME_MAX = 255
KUBEPODS = "kubepods"
TIERS = {BURSTABLE: "burstable", BESTEFFORT: "besteffort"}  # QoS class → its tier's slice component
QOS_OF_TIER: dict[str | None, str] = {None: GUARANTEED, **{t: c for c, t in TIERS.items()}}  # ... and back (None: no tier)
MARK = "sdqos "  # every Description sdqos writes starts with it: the unit is sdqos's own

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


def slice_components(unit: str) -> tuple[str, ...] | None:
    """kubelet's ``ParseSystemdToCgroupName``: ``kubepods-burstable-pod1_2.slice`` →
    ``(kubepods, burstable, pod1-2)``; ``-.slice`` → ``()``; None for a name that is not a slice.
    (Components never hold ``_``: kubelet's ``NewCgroupName`` forbids it, so the mapping reverses.)"""
    if unit == ROOT_SLICE:
        return ()
    if not unit.endswith(".slice") or unit == ".slice":
        return None
    return tuple(c.replace("_", "-") for c in unit[: -len(".slice")].split("-"))


def parent_slice(slice_unit: str) -> str:
    """The slice a slice lives in, from its name alone (``a-b-c.slice`` → ``a-b.slice``)."""
    stem = slice_unit[: -len(".slice")]
    if stem in ("", "-"):
        return ROOT_SLICE
    head, sep, _ = stem.rpartition("-")
    return head + ".slice" if sep else ROOT_SLICE


def cgroup_path(unit: str, parent: str) -> str:
    """A unit's cgroup path, as systemd nests slices by their dashes (``a-b.slice`` →
    ``/a.slice/a-b.slice``); anything else sits in its slice ``parent``."""
    if unit.endswith(".slice"):
        stem = unit[: -len(".slice")]
        if stem in ("", "-"):
            return "/"
        out, prefix = [], None  # each prefix of the stem up to a dash, then the stem: "a", "a-b", ...
        for part in stem.split("-"):
            prefix = part if prefix is None else f"{prefix}-{part}"
            out.append(f"/{prefix}.slice")
        return "".join(out)
    base = cgroup_path(parent, "") if parent and parent != ROOT_SLICE else ""
    return f"{base}/{unit}"


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


def node_slice(root: Sequence[str]) -> str:
    """``[<root>-]kubepods.slice``: all pods, kubelet's node allocatable (cgroupRoot's components first)."""
    return slice_name([*root, KUBEPODS])


def parse_node_slice(unit: str) -> tuple[str, ...] | None:
    """The cgroupRoot components of a ``…kubepods.slice``, or None."""
    comps = slice_components(unit)
    return comps[:-1] if comps and comps[-1] == KUBEPODS else None


def tier_slice(root: Sequence[str], tier: str | None) -> str:
    """A QoS tier's slice, ``kubepods-burstable.slice``; tier None (Guaranteed): kubepods.slice itself."""
    return slice_name([*root, KUBEPODS, *([tier] if tier else [])])


def parse_tier_slice(unit: str) -> tuple[tuple[str, ...], str] | None:
    """(root components, tier) of ``…kubepods-<tier>.slice`` (a tier of :data:`TIERS`), or None."""
    comps = slice_components(unit)
    if comps and len(comps) >= 2 and comps[-2] == KUBEPODS and comps[-1] in QOS_OF_TIER:
        return comps[:-2], comps[-1]
    return None


def in_tree(unit: str, top: str) -> bool:
    """``unit`` is the slice ``top`` or a slice below it, by their names: ``slice_components(unit)``
    begins with ``slice_components(top)``. Only the first components of ``unit`` are looked at
    (a sync asks it of every planned unit: ~3000 at 1000 pods)."""
    root = _top_components(top)
    if root is None or not unit.endswith(".slice") or unit == ".slice":
        return False
    if unit == ROOT_SLICE:
        return not root
    k = len(root)
    head = unit[: -len(".slice")].split("-", k)[:k]  # its first k components (or fewer)
    return len(head) == k and tuple([c.replace("_", "-") for c in head]) == root


_top_components = lru_cache(maxsize=16)(slice_components)  # in_tree's ``top``: the tree's root, every time


def tree_globs(top: str) -> list[str]:
    """Globs (ListUnitsByPatterns) for the slice ``top`` and every slice below it."""
    return [top] if top == ROOT_SLICE else [top, f"{top[: -len('.slice')]}-*.slice"]


@dataclass(frozen=True, slots=True)
class PodSlice:
    """What a pod slice's name says: its tree's root components, its tier (None: Guaranteed), its uid."""

    root: tuple[str, ...]
    tier: str | None
    uid: str

    @property
    def qos(self) -> str:
        return QOS_OF_TIER[self.tier]


def pod_slice(root: Sequence[str], tier: str | None, uid: str) -> str:
    """``kubepods-pod<uid>.slice`` (Guaranteed, tier None) or ``kubepods-<tier>-pod<uid>.slice``."""
    return _tier_prefix(tuple(root), tier) + slice_name([uid_component(uid)])


def parse_pod_slice(unit: str) -> PodSlice | None:
    """:func:`pod_slice` read back: ``kubepods-burstable-pod1_2.slice`` → ((), burstable, 1-2); None
    for any other name (a tier, a podman pod's sub-slice ``…-libpod_pod_<id>.slice``)."""
    comps = slice_components(unit)
    if not comps or len(comps) < 2 or not comps[-1].startswith("pod") or len(comps[-1]) == 3:
        return None
    uid = comps[-1][3:]
    if comps[-2] == KUBEPODS:
        return PodSlice(comps[:-2], None, uid)
    if len(comps) >= 3 and comps[-3] == KUBEPODS and comps[-2] in TIERS.values():
        return PodSlice(comps[:-3], comps[-2], uid)
    return None


@lru_cache(maxsize=64)
def _tier_prefix(root: tuple[str, ...], tier: str | None) -> str:
    """``kubepods-<tier>-``: the part every pod slice of a tier shares, computed once per tier."""
    return slice_name([*root, "kubepods", *([tier] if tier else [])]).removesuffix(".slice") + "-"


_CONTAINER_SCOPE = "sdqos-pod"


def container_scope(uid: str, container: str) -> str:
    """The scope of one container of a pod: ``sdqos-pod<uid>-<escaped container>.scope``.

    Scope names have no hierarchy, but the container name is still escaped by systemd's rules,
    so nothing from a manifest can produce ``/`` or ``..``."""
    return f"{_CONTAINER_SCOPE}{uid.replace('-', '_')}-{systemd_escape(container)}.scope"


CONTAINER_SCOPE_GLOB = f"{_CONTAINER_SCOPE}*.scope"  # every container scope sdqos makes


def parse_container_scope(unit: str) -> tuple[str, str] | None:
    """:func:`container_scope` read back: (pod uid, container name), or None."""
    if not unit.startswith(_CONTAINER_SCOPE) or not unit.endswith(".scope"):
        return None
    uid, sep, container = unit[len(_CONTAINER_SCOPE): -len(".scope")].partition("-")
    if not sep or not uid or not container or not _UID_ESCAPED.match(uid):
        return None
    return uid.replace("_", "-"), systemd_unescape(container)


_UID_ESCAPED = re.compile(r"^[A-Za-z0-9_]+$")


def machine_scope(machine_name: str) -> str:
    """systemd-machined's scope name for a machine: ``machine-<escaped name>.scope``
    (``qemu-1-vm1`` → ``machine-qemu\\x2d1\\x2dvm1.scope``)."""
    return f"machine-{systemd_escape(machine_name)}.scope"


def parse_machine_scope(unit: str) -> str | None:
    """:func:`machine_scope` read back: the machine's name, or None."""
    if not unit.startswith("machine-") or not unit.endswith(".scope") or unit == "machine-.scope":
        return None
    return systemd_unescape(unit[len("machine-"): -len(".scope")])


def in_machine_tree(slice_unit: str) -> bool:
    """machine.slice or a slice below it (a libvirt partition ``/machine/tenant1`` is
    ``machine-tenant1.slice``)."""
    return slice_unit == MACHINE_SLICE or slice_unit.startswith("machine-") and slice_unit.endswith(".slice")


# --- the runtimes' names sdqos must recognise --------------------------------------------------

def libvirt_scope(domain_id: int, domain: str) -> str:
    """libvirt's QEMU scope: machined's scope of machine ``qemu-<id>-<domain>``
    (``machine-qemu\\x2d3\\x2ddb.scope``)."""
    return machine_scope(f"qemu-{domain_id}-{domain}")


_LIBVIRT_MACHINE = re.compile(r"^qemu-([0-9]+)-(.+)$", re.S)


def parse_libvirt_scope(unit: str) -> tuple[int, str] | None:
    """:func:`libvirt_scope` read back: (domain id, domain name as the scope has it), or None."""
    machine = parse_machine_scope(unit)
    m = _LIBVIRT_MACHINE.match(machine) if machine is not None else None
    return (int(m.group(1)), m.group(2)) if m else None


_PODMAN_ID = re.compile(r"^[0-9a-f]{64}$")


def podman_scope(container_id: str) -> str:
    """The scope podman (crun/runc, systemd cgroup manager) runs a container in: ``libpod-<id>.scope``."""
    return f"libpod-{container_id}.scope"


def parse_podman_scope(unit: str) -> str | None:
    """:func:`podman_scope` read back: the container's 64-hex id, or None (conmon's is not one)."""
    cid = unit[len("libpod-"): -len(".scope")] if unit.startswith("libpod-") and unit.endswith(".scope") else ""
    return cid if _PODMAN_ID.match(cid) else None


def podman_conmon_scope(container_id: str) -> str:
    """The scope of podman's monitor (conmon) for a container: ``libpod-conmon-<id>.scope``."""
    return f"libpod-conmon-{container_id}.scope"


def parse_podman_conmon_scope(unit: str) -> str | None:
    """:func:`podman_conmon_scope` read back: the container's id, or None."""
    return parse_podman_scope("libpod-" + unit[len("libpod-conmon-"):]) if unit.startswith("libpod-conmon-") else None


def podman_pod_slice(parent: str, pod_id: str) -> str:
    """The slice ``podman pod create --cgroup-parent=<parent>`` makes: ``<parent stem>-libpod_pod_<id>.slice``."""
    return f"{parent[: -len('.slice')]}-libpod_pod_{pod_id}.slice"


def parse_podman_pod_slice(unit: str) -> tuple[str, str] | None:
    """:func:`podman_pod_slice` read back: (its parent slice, the podman pod's id), or None."""
    head, sep, tail = unit.rpartition("-libpod_pod_")
    pod_id = tail[: -len(".slice")] if tail.endswith(".slice") else ""
    if not sep or not head or not _PODMAN_ID.match(pod_id):
        return None
    return head + ".slice", pod_id


# Whose a scope is by its name's prefix alone, for names the exact parsers above do not take (a
# runtime's id in another form, a runtime sdqos never tunes: crun/runc with the systemd cgroup driver
# name scopes ``<prefix><id>.scope``). Used only to refuse taking a process, never to tune.
_MAKER_PREFIXES = (("machine-qemu", "libvirt"), ("libpod-conmon-", "podman's conmon"), ("libpod-", "podman"),
                   ("docker-", "docker"), ("cri-containerd-", "containerd"), ("crio-conmon-", "CRI-O's conmon"),
                   ("crio-", "CRI-O"), ("machine-", "systemd-machined"))


def scope_maker(unit: str) -> str | None:
    """Who makes a scope of this name: ``sdqos`` (a container's), ``libvirt``, ``podman's conmon``,
    ``podman``, ``systemd-machined``, docker, containerd, CRI-O; None when the name does not say."""
    if not unit.endswith(".scope"):
        return None
    if parse_container_scope(unit) is not None:
        return "sdqos"
    if parse_libvirt_scope(unit) is not None:
        return "libvirt"
    if parse_podman_conmon_scope(unit) is not None:
        return "podman's conmon"
    if parse_podman_scope(unit) is not None:
        return "podman"
    return next((who for prefix, who in _MAKER_PREFIXES if unit.startswith(prefix)), None)


def owning_slice(slice_unit: str) -> str:
    """The slice a scope counts under: a podman pod's sub-slice counts as its parent."""
    parsed = parse_podman_pod_slice(slice_unit)
    return parsed[0] if parsed else slice_unit


# --- owners and Descriptions -------------------------------------------------------------------

POD, VM = "pod", "vm"


@dataclass(frozen=True, slots=True)
class Owner:
    """Whom a unit is for: a pod (``name`` is its key, namespace/name), one container of it, or a VM."""

    kind: str  # POD | VM
    name: str  # the pod's namespace/name, or the VM's name
    container: str | None = None

    @classmethod
    def pod(cls, key: str, container: str | None = None) -> Owner:
        return cls(POD, key, container)

    @classmethod
    def vm(cls, name: str) -> Owner:
        return cls(VM, name)

    @property
    def pod_key(self) -> str | None:
        return self.name if self.kind == POD else None

    @property
    def vm_name(self) -> str | None:
        return self.name if self.kind == VM else None

    def __str__(self) -> str:
        """``pod ns/name container c``, ``pod ns/name``, ``vm name``: how messages name it."""
        return f"{self.kind} {self.name}" + (f" container {self.container}" if self.container else "")


def description(kind: str, owner: Owner | None = None, qos: str | None = None) -> str:
    """The Description of a unit sdqos makes (kind: node, tier, pod, container, vm): who it is for,
    for people and ``systemctl status``. Always starts with :data:`MARK`; never parsed back."""
    if kind == "node":
        return f"{MARK}node allocatable for pods (kubepods)"
    if kind == "tier":
        return f"{MARK}{qos} QoS tier"
    assert owner is not None, f"a {kind} unit has an owner"
    if owner.kind == VM:
        return f"{MARK}vm {owner.name} ({qos})"
    if owner.container is not None:
        return f"{MARK}container {owner.name}/{owner.container} ({qos})"
    return f"{MARK}pod {owner.name} ({qos})"


def marked(description_text: str) -> bool:
    """The Description carries sdqos's mark: sdqos made the unit."""
    return description_text.startswith(MARK)


_UNIT_NAME_CHARS = _SAFE | frozenset("-\\@")


def valid_unit_name(name: str) -> bool:
    """Characters and length systemd accepts in a unit name (the characters checked in one
    C-level pass: a cold sync asks this of ~3000 names)."""
    return 0 < len(name) <= UNIT_NAME_MAX and _UNIT_NAME_CHARS.issuperset(name)
