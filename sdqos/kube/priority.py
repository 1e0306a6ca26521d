"""Pod priority as the API server gives it: PriorityClasses and the Priority admission plugin. Pure.

sdqos stands in for the API server for the pods of its config dir, so a pod's priority is what
``plugin/pkg/admission/priority/admission.go`` (admitPod) would make it, never what the manifest
claims:

- ``priorityClassName`` empty: the global default class (the one with ``globalDefault: true``),
  its name written into the pod, else priority 0 (``DefaultPriorityWhenNoDefaultClassExists``);
- named: a system class (built in, ``pkg/apis/scheduling`` SystemPriorityClasses:
  ``system-node-critical`` 2000001000, ``system-cluster-critical`` 2000000000), else a declared
  PriorityClass; none of that name: "no PriorityClass with name X was found";
- ``spec.priority`` in the manifest must be unset or equal to the class's value ("the integer
  value of priority (N) must not be provided in pod spec; …"): a pod cannot raise its own priority.

PriorityClasses are declared as the API objects an operator knows (``scheduling.k8s.io/v1``,
kubectl-style) in ``priorityclasses.yaml`` of the config dir, validated as the API server does
(``pkg/apis/scheduling/validation`` ValidatePriorityClass and the admission's validatePriorityClass):
a user class may not exceed ``HighestUserDefinablePriority`` (1000000000) nor take a ``system-``
name, and only one may be the global default. Parsing is in :mod:`sdqos.kube.manifests`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

API_VERSION = "scheduling.k8s.io/v1"
KIND = "PriorityClass"
FILE = "priorityclasses.yaml"  # in the config dir, next to node.yaml
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000  # scheduling.HighestUserDefinablePriority
SYSTEM_PREFIX = "system-"  # scheduling.SystemPriorityClassPrefix
SYSTEM_CLASSES: Mapping[str, int] = {SYSTEM_NODE_CRITICAL: SYSTEM_CRITICAL_PRIORITY + 1000,
                                     SYSTEM_CLUSTER_CRITICAL: SYSTEM_CRITICAL_PRIORITY}
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True)
class PriorityClasses:
    """The declared PriorityClasses (name → value) and the global default's name, if any; the
    system classes are always there."""

    values: Mapping[str, int] = field(default_factory=dict)
    default: str | None = None

    def value(self, name: str) -> int | None:
        """The class's value (a system class first, as admission resolves); None when unknown."""
        return SYSTEM_CLASSES.get(name, self.values.get(name))

    def admit(self, class_name: str, priority: int | None) -> tuple[str, int, str | None]:
        """admitPod: (priorityClassName, priority, why refused) for a pod naming ``class_name``
        (may be "") and carrying ``priority`` (None: unset)."""
        if not class_name:
            name = self.default or ""
            value = self.values[name] if name else 0
        else:
            name = class_name
            found = self.value(class_name)
            if found is None:
                return class_name, 0, (f"no PriorityClass with name {class_name} was found"
                                       f" (declare it in {FILE}; built in: {', '.join(SYSTEM_CLASSES)})")
            value = found
        if priority is not None and priority != value:
            return name, value, (f"the integer value of priority ({priority}) must not be provided in pod spec; "
                                 f"priority admission controller computed {value} from the given PriorityClass name"
                                 f" ({name or 'none: no globalDefault class'})")
        return name, value, None

    def tag(self) -> str:
        """Canonical text for the parse cache's options: pods parsed under other classes differ."""
        if not self.values and self.default is None:
            return ""
        return json.dumps([sorted(self.values.items()), self.default], separators=(",", ":"))


NO_CLASSES = PriorityClasses()
