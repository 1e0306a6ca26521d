"""The CPU manager's state file (/var/lib/kubelet/cpu_manager_state), pure encode/decode.

As kubelet 1.36 writes it (pkg/kubelet/cm/cpumanager/state/checkpoint.go, `CPUManagerCheckpointV2`;
state_checkpoint.go `storeStateV2` / `restoreState`):

    {"policyName":"static","defaultCpuSet":"0-1,6-11","entries":{"<pod uid>":{"<container>":"2-3"}},"checksum":N}

`entries` is left out when empty. The checksum is not over the JSON: kubelet's
checkpointmanager/checksum hashes (FNV-32a) the go-spew `%#v` dump of the checkpoint struct with
its checksum field 0 (k8s.io/apiserver util/hash DeepHashObject → k8s.io/utils dump.ForHash:
sorted map keys, no pointer addresses), e.g.

    (*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0-1 Entries:(map[string]map[string]string)map[pod:map[c:2-3]] Checksum:(checksum.Checksum)0}

`_spew` writes exactly that text (checked against checkpoints real kubelets wrote, in the tests).
A checksum of 0 is accepted unchecked (upstream: "compatibility with old file backend"). A v1
checkpoint (entries keyed by container ID) is recognised by its own checksum; kubelet migrates
it with the runtime's container-ID map, which sdqos does not have: one without entries is taken,
one with entries refused. The V3 format (gate PodLevelResourceManagers, alpha, off) is not
written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sdqos.errors import CPUManagerStateError, CPUSetError
from sdqos.kube.cpumanager import CPUManagerState, StaticPolicy, validate_state
from sdqos.kube.cpuset import parse

CHECKPOINT_NAME = "cpu_manager_state"
CORRUPT = "checkpoint is corrupted"  # checkpointmanager/errors ErrCorruptCheckpoint


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _spew_map(m: Mapping[str, Any] | None, nested: bool) -> str:
    if m is None:
        return "<nil>"
    parts = []
    for k in sorted(m, key=lambda s: s.encode()):
        v = m[k]
        parts.append(f"{k}:{_spew_map(v, False) if nested else v}")
    return "map[" + " ".join(parts) + "]"


def _spew(policy: str, default: str, entries: Mapping[str, Any] | None, v1: bool = False) -> str:
    """go-spew %#v of *state.CPUManagerCheckpoint (v1: its Entries map[string]string; kubelet
    renames the v1 type to CPUManagerCheckpoint before hashing)."""
    kind = "map[string]string" if v1 else "map[string]map[string]string"
    return (f"(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default} "
            f"Entries:({kind}){_spew_map(entries, nested=not v1)} Checksum:(checksum.Checksum)0}}")


def checksum(policy: str, default: str, entries: Mapping[str, Mapping[str, str]] | None) -> int:
    """checksum.New(checkpoint) with its checksum field 0."""
    return fnv32a(_spew(policy, default, entries).encode())


def _go_json(value: object) -> str:
    """encoding/json.Marshal: compact, map keys sorted, <, >, & and U+2028/9 escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def encode(state: CPUManagerState) -> bytes:
    """storeStateV2 + MarshalCheckpoint: the file's bytes."""
    default = str(state.default_cpuset)
    entries = {pod: {c: str(s) for c, s in conts.items()} for pod, conts in state.entries.items() if conts}
    doc: dict[str, object] = {"policyName": state.policy_name, "defaultCpuSet": default}
    if entries:
        doc["entries"] = {p: dict(sorted(c.items())) for p, c in sorted(entries.items())}
    doc["checksum"] = checksum(state.policy_name, default, entries)
    return _go_json(doc).encode()


def _field(doc: Mapping[str, Any], name: str) -> Any:
    """encoding/json matches field names case-insensitively (an exact match first)."""
    if name in doc:
        return doc[name]
    for k, v in doc.items():
        if k.casefold() == name.casefold():
            return v
    return None


def _str(v: Any, what: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise CPUManagerStateError(f"{what}: json: cannot unmarshal {type(v).__name__} into a string")
    return v


def decode(data: bytes | str, policy_name: str) -> CPUManagerState:
    """restoreState for a file that exists: parse, verify the checksum, check the policy name,
    parse the CPU sets. CPUManagerStateError with kubelet's message otherwise (kubelet then
    refuses to start: 'please drain this node and delete the CPU manager checkpoint file')."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CPUManagerStateError(f"could not restore state from checkpoint: {e}") from None
    if not isinstance(doc, dict):
        raise CPUManagerStateError("could not restore state from checkpoint: not a JSON object")
    policy = _str(_field(doc, "policyName"), "policyName")
    default = _str(_field(doc, "defaultCpuSet"), "defaultCpuSet")
    raw_sum = _field(doc, "checksum")
    if raw_sum is None:
        raw_sum = 0
    if not isinstance(raw_sum, int) or isinstance(raw_sum, bool) or not 0 <= raw_sum < 2**64:
        raise CPUManagerStateError("could not restore state from checkpoint: checksum is not a uint64")
    raw_entries = _field(doc, "entries")
    entries: dict[str, dict[str, str]] | None
    if raw_entries is None:
        entries = None if "entries" in {k.casefold() for k in doc} else {}
    elif isinstance(raw_entries, dict):
        entries = raw_entries
    else:
        raise CPUManagerStateError("could not restore state from checkpoint: entries is not an object")
    v2 = entries is None or all(isinstance(c, dict) and all(isinstance(s, str) for s in c.values())
                                     for c in entries.values())
    if v2 and (raw_sum == 0 or raw_sum == checksum(policy, default, entries)):
        pass
    elif entries is not None and all(isinstance(s, str) for s in entries.values()) and (
            raw_sum == 0 or raw_sum == fnv32a(_spew(policy, default, entries, v1=True).encode())):
        if entries:
            raise CPUManagerStateError(
                "could not restore state from checkpoint: a v1 checkpoint (entries by container ID) "
                "cannot be migrated without the runtime's container list; drain the node and delete "
                f"{CHECKPOINT_NAME}")
        entries = {}
    else:
        raise CPUManagerStateError(f"could not restore state from checkpoint: {CORRUPT}")
    if policy != policy_name:
        raise CPUManagerStateError(f'configured policy "{policy_name}" differs from state checkpoint policy "{policy}"')
    try:
        default_set = parse(default)
    except CPUSetError as e:
        raise CPUManagerStateError(f'could not parse default cpu set "{default}": {e}') from None
    assignments: dict[str, dict[str, Any]] = {}
    for pod, conts in (entries or {}).items():
        for container, text in conts.items():
            try:
                assignments.setdefault(pod, {})[container] = parse(text)
            except CPUSetError as e:
                raise CPUManagerStateError(
                    f'could not parse cpuset "{text}" for container "{container}" in pod "{pod}": {e}') from None
    return CPUManagerState(policy, default_set, assignments)


def restore(data: bytes | str | None, policy: StaticPolicy) -> CPUManagerState:
    """What kubelet does at start with the file's bytes (None: no file yet): restoreState, then
    the policy's Start (validateState), which makes an empty state the initial one."""
    state = CPUManagerState(policy.name) if data is None else decode(data, policy.name)
    return validate_state(policy, state)
