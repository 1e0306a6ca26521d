"""The static CPU manager's state file, ``<run dir>/cpu_manager_state``, in kubelet's format
(CPUManagerCheckpointV2 with its checksum, sdqos.kube.cpumanager_state).

Kubelet keeps it in its root dir and reads it once at start (cpu_manager.go Start →
state_checkpoint.go restoreState, then the policy's validateState); a file that does not fit the
policy or the node's CPUs stops kubelet with "please drain this node and delete the CPU manager
checkpoint file". sdqos does the same on every load: the bytes are read with the run dir's trusted
reader (a symlink, FIFO or a file not ours is refused, never followed nor taken as "no state":
that would hand its CPUs out twice) and written atomically and durably.
"""

from __future__ import annotations

import os
from pathlib import Path

from sdqos.errors import CPUManagerStateError, HostError, SdqosError
from sdqos.host import rundir
from sdqos.kube import cpumanager_state
from sdqos.kube.cpumanager import CPUManagerState, StaticPolicy

STATE = rundir.CPU_STATE  # kubelet's name (cpu_manager.go cpuManagerStateFileName), the store's row
MAX_STATE = rundir.MAX_RECORD  # kubelet's file at 1000 pods × 2 containers is well under 1 MB


def state_path(run_dir: Path = rundir.DEFAULT_RUN_DIR) -> Path:
    return STATE.path(run_dir)


def read(run_dir: Path = rundir.DEFAULT_RUN_DIR) -> bytes | None:
    """The state file's bytes (the one reader of it); None when there is none. HostError when a
    file is there but is not a plain file of ours."""
    path = state_path(run_dir)
    data = rundir.read_private(path, MAX_STATE, ours=True)
    if data is None and os.path.lexists(path):
        raise HostError(f"{path} is not a plain file of ours (symlink, FIFO, too large, another owner or "
                        "writable by others); refusing to read the CPU manager's state from it")
    return data


def decoded(run_dir: Path = rundir.DEFAULT_RUN_DIR) -> CPUManagerState | None:
    """The state as the plan reads it (its assignments, on cgroup v2 its shared pool): missing,
    untrusted or unreadable, None (the sync that restores and validates the file with :func:`load`
    reports what is wrong)."""
    try:
        data = read(run_dir)
        return cpumanager_state.decode(data, "static") if data is not None else None
    except SdqosError:
        return None


def assignments(run_dir: Path = rundir.DEFAULT_RUN_DIR) -> dict[str, dict[str, str]]:
    """The static policy's assignments (pod uid → container → CPU list), as the plan reads them
    (:func:`decoded`)."""
    state = decoded(run_dir)
    if state is None:
        return {}
    return {uid: {name: str(cpus) for name, cpus in conts.items()} for uid, conts in state.entries.items()}


def load(policy: StaticPolicy, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> CPUManagerState:
    """The state restored and validated against ``policy`` (its topology: the host's online CPUs).
    No file: the initial state (every CPU shared). A file that is there but not a plain file of
    ours: HostError. One that does not decode or fit: CPUManagerStateError with kubelet's message
    and what to do."""
    path = state_path(run_dir)
    data = read(run_dir)
    if data is None:
        return cpumanager_state.restore(None, policy)
    try:
        return cpumanager_state.restore(data, policy)
    except CPUManagerStateError as exc:  # cpu_manager.go Start: "could not restore state from checkpoint"
        raise CPUManagerStateError(
            f"could not restore state from checkpoint: {exc}, please drain this node and delete the "
            f"CPU manager checkpoint file {str(path)!r} before restarting sdqos") from None


def save(state: CPUManagerState, run_dir: Path = rundir.DEFAULT_RUN_DIR) -> None:
    """Atomic, durable replace (temp file 0600, fsync, rename)."""
    rundir.write(STATE, cpumanager_state.encode(state).decode(), run_dir)
