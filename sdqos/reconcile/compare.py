"""A unit as systemd holds it, and whether its planned values are in place: the one comparison. Pure.

The diff (:func:`sdqos.reconcile.diff.unit_changes`), the desired state's clamps
(:func:`sdqos.reconcile.desired.clamps`) and the warm no-op proof
(``sdqos.reconcile.noop._props_in_place``) all ask here, so a rule changed here changes each of
them alike (``tests/reconcile/test_compare.py`` runs the full path and the proof over every row of
the property table and holds them to the same answer). The rules:

- a property is in place when systemd holds exactly the value planned for it: systemd keeps the
  value it was sent and shows it back over D-Bus. The rounding systemd would do (a CPU quota in
  whole percents) is done in the planned value already (``plan.properties.quota_per_sec_usec``);
  the kernel's (page-rounded bytes, cpu.max's period) is the kernel read-back's, per row of the
  property table (``host/cgroupfs.py``). A property that was not read is not in place;
- a ``CPUQuotaPeriodUSec`` systemd holds that the plan does not set is wanted back at systemd's
  unset (not on a reserved cgroup: system.slice's period is not sdqos's);
- a memory limit of the node, a tier, a VM or machine.slice below what it already uses is clamped
  to the usage (kubelet's ``retrySetMemoryReserve``): a tier's to the byte, the others up to a
  4 MiB step (a guest's usage moves a little all the time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sdqos.kube.naming import marked
from sdqos.plan.properties import INFINITY, MEMORY_PROPERTIES, PERIOD_PROPERTY, planned_value

CLAMPED_KINDS = ("node", "tier", "vm", "machine")
CLAMPED_PROPERTIES = MEMORY_PROPERTIES
VM_STEP = 4 << 20  # a VM's usage moves a little all the time: 4 MiB steps keep the limit still
NO_PERIOD_RESET = frozenset({"reserved"})  # unit kinds whose unplanned period is left as it is


@dataclass(slots=True)
class LiveUnit:
    """A unit as systemd has it now (what the D-Bus read returns, reduced)."""

    name: str
    load_state: str = "loaded"
    active_state: str = "active"
    transient: bool = False  # read only where it decides ownership (live.read_marks)
    description: str = ""
    props: dict[str, int] = field(default_factory=dict)
    memory_current: int | None = None
    cpu_usage_ns: int | None = None
    tasks_current: int | None = None
    control_group: str | None = None
    kernel_drift: dict[str, list] = field(default_factory=dict)  # cgroupfs file: [kernel, expected]
    kernel_read: bool = False  # its kernel files were compared with its planned values as it was read

    @property
    def exists(self) -> bool:
        return self.load_state == "loaded" and self.active_state in ("active", "activating", "reloading")

    @property
    def failed(self) -> bool:
        return self.active_state == "failed"

    @property
    def ours(self) -> bool:
        return marked(self.description)


def in_place(prop: str, want: int, have: int | None) -> bool:
    """Whether systemd holds property ``prop``'s wanted value (``have``: what it showed; None: not
    read). Every row of the property table compares exactly (see the module's rules)."""
    return have is not None and have == want


def wanted(kind: str, planned: Mapping[str, int], have: Mapping[str, int]) -> dict[str, int]:
    """What a unit of ``kind`` with ``planned`` values must hold, given what it holds (``have``):
    the planned values, and the period back at systemd's unset where one is held but not planned."""
    out = dict(planned)
    if PERIOD_PROPERTY in have and PERIOD_PROPERTY not in out and kind not in NO_PERIOD_RESET:
        out[PERIOD_PROPERTY] = planned_value(out, PERIOD_PROPERTY)
    return out


def changes(kind: str, planned: Mapping[str, int], have: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Each property not in place → (what systemd holds, INFINITY when not read; what is wanted)."""
    out = {}
    for prop, want in wanted(kind, planned, have).items():
        held = have.get(prop)
        if not in_place(prop, want, held):
            out[prop] = (INFINITY if held is None else held, want)
    return out


def clamped(kind: str, prop: str, want: int, usage: int | None) -> int | None:
    """The value a planned limit is raised to because the unit already uses more (``usage``: its
    memory in use, None when not known); None: not clamped."""
    if kind not in CLAMPED_KINDS or prop not in CLAMPED_PROPERTIES or want == INFINITY:
        return None
    if usage is None or usage <= want:
        return None
    step = 1 if kind == "tier" else VM_STEP  # (and room for the pages faulted in between reading and writing)
    return -(-usage // step) * step


def settled(kind: str, planned: Mapping[str, int], have: Mapping[str, int], usage: int | None) -> bool:
    """Nothing for a sync to do on this unit: every value in place and none to clamp."""
    return not changes(kind, planned, have) and all(clamped(kind, p, v, usage) is None for p, v in planned.items())
