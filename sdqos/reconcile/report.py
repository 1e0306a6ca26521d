"""What a sync did: the report ``sdqos sync`` prints, and its stable JSON contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sdqos.errors import EXIT_ERROR, EXIT_INVALID, EXIT_OK, EXIT_PENDING

if TYPE_CHECKING:
    from sdqos.reconcile.desired import Desired


@dataclass(slots=True)
class Report:
    """What a sync did, as ``sdqos sync`` prints it (``as_json``: the stable JSON contract)."""

    created: list[str] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)  # failed units reset (scopes: their name is free again)
    containers_removed: list[str] = field(default_factory=list)  # podman containers of removed pods
    unchanged: list[str] = field(default_factory=list)
    drift: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    kept_why: dict[str, str] = field(default_factory=dict)  # kept unit → why it is kept
    foreign: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    dry_run: bool = False
    aborted: bool = False  # refused to write anything (see Diff.abort)
    duration_s: float = 0.0
    dbus_calls: int = 0
    disconnects: int = 0
    oom_adjusted: int = 0  # processes whose oom_score_adj this sync wrote
    whose: dict[str, str] = field(default_factory=dict)  # removed units → who they were for (ns/pod[/container])
    plan: object = None  # the desired units as a Plan (Desired.as_plan: machine.slice counted, scopes bound)
    desired: "Desired | None" = None  # what the sync wanted (reconcile.desired.Desired): adjustments, kept pods
    oom_kills: list = field(default_factory=list)  # new OOM kills (reconcile.oomkills.Kill), each reported once
    failed_creates: list[str] = field(default_factory=list)  # units whose creation failed or was skipped

    def as_json(self) -> dict:
        return {
            "created": self.created,
            "updated": self.updated,
            "removed": self.removed,
            "reset": self.reset,
            "podmanRemoved": self.containers_removed,
            "unchanged": self.unchanged,
            "drift": self.drift,
            "warnings": self.warnings,
            "errors": self.errors,
            "invalid": self.invalid,
            "kept": self.kept,
            "keptWhy": self.kept_why,
            "foreign": self.foreign,
            "dryRun": self.dry_run,
            "aborted": self.aborted,
            "durationSeconds": round(self.duration_s, 4),
            "dbusCalls": self.dbus_calls,
            "disconnects": self.disconnects,
            "oomAdjusted": self.oom_adjusted,
            "oomKills": [{"unit": k.unit, "name": k.name, "kind": k.kind, "qos": k.qos, **k.detail}
                         for k in self.oom_kills],
        }

    def note_update(self, unit: str, key: str, what: dict) -> None:
        """A change a sync made beside systemd's properties, into the unit's one entry of ``updated``
        (made when it has none): ``container`` (a runtime's own cgroup below the scope, by
        ``podman update``: {file: [old, new]}), ``affinity`` (cgroup v1, static CPU manager: its
        threads' CPUs, {"cpus": list, "threads": {old list: count}})."""
        entry = next((u for u in self.updated if u["unit"] == unit), None)
        if entry is None:
            entry = {"unit": unit, "changes": {}}
            self.updated.append(entry)
        entry[key] = what

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed or self.reset or self.containers_removed)

    @property
    def exit_code(self) -> int:
        """sync's exit status (sdqos.errors.EXIT_CODES): 2 when it refused to write anything or
        only invalid input is wrong, 1 on any error, with --dry-run 4 when changes are pending."""
        if self.aborted or (self.invalid and not self.errors):
            return EXIT_INVALID
        if self.errors:
            return EXIT_ERROR
        return EXIT_PENDING if self.dry_run and (self.changed or self.drift) else EXIT_OK
