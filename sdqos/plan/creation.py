"""What a unit is created with: its owned properties plus what only creation sets (a Description,
accounting, and for a scope Delegate, CollectMode, OOMPolicy and ManagedOOMPreference). One function, used by
apply (the one writer: sync, and the narrow passes of ``sdqos run``/``adopt``/``podman start``) and
shown by ``plan -o json``, so what the plan shows is what systemd gets."""

from __future__ import annotations

from typing import Any

from sdqos.plan.engine import UnitPlan
from sdqos.plan.properties import DEFAULT_PERIOD_US, PROPERTIES

# kubelet's default (the API server defaults terminationGracePeriodSeconds to 30) and its floor:
# pkg/kubelet/kuberuntime/kuberuntime_container.go, minimumGracePeriodInSeconds = 2.
DEFAULT_GRACE_PERIOD_S = 30
MINIMUM_GRACE_PERIOD_S = 2
CREATE_EXTRAS = {"DefaultDependencies": False, "CPUAccounting": True, "MemoryAccounting": True, "TasksAccounting": True}


def grace_period_us(seconds: int | None) -> int:
    """How long a pod's processes get between SIGTERM and SIGKILL when its scope is stopped."""
    s = DEFAULT_GRACE_PERIOD_S if seconds is None else max(MINIMUM_GRACE_PERIOD_S, seconds)
    return min(s, 2**64 // 1_000_000 - 1) * 1_000_000


def create_properties(u: UnitPlan, stop_timeout_us: int | None = None) -> dict[str, Any]:
    """Everything a new unit is created with: its owned properties, a Description that says what
    it is (so `systemctl status` reads well), and what runc's systemd driver adds.
    ``stop_timeout_us``: a container scope's SIGTERM → SIGKILL time (:func:`grace_period_us`)."""
    props: dict[str, Any] = dict(u.properties)
    props["Description"] = u.description
    props.update(CREATE_EXTRAS)
    if u.name.endswith(".scope"):
        props["Slice"] = u.slice
        props["Delegate"] = True  # processes can later be attached (adopt), as runc does
        props["CollectMode"] = "inactive-or-failed"  # an OOM-killed scope frees its name
        # What systemd takes only now (the table's rows that are not owned): OOMPolicy (memory.oom.group,
        # kubelet's via runc's Unified), ManagedOOMPreference (the cgroup's oomd xattr).
        for row in PROPERTIES:
            value = None if row.owned else row.value(u.resources, DEFAULT_PERIOD_US, True)
            if value is not None:
                props[row.name] = value
        if stop_timeout_us is not None:
            props["TimeoutStopUSec"] = stop_timeout_us
    elif u.slice != "-.slice":
        props["Wants"] = [u.slice]  # as runc does: the parent is started first
    return props
