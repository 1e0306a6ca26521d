"""podman, as sdqos talks to it: its command line, run as a subprocess with the caller's
environment (so ``CONTAINERS_CONF``/``CONTAINERS_STORAGE_CONF`` and ``SDQOS_PODMAN`` choose which
podman and which storage). Rootful, with the systemd cgroup manager, as kubelet's CRI runtimes run.

``containers()`` is how ``sync`` recognises podman's containers in pod slices: podman's own record
of each container's id, name and labels (``podman ps --all --format json``), not guessing from a
scope name.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sdqos.errors import HostError

TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class PodmanContainer:
    id: str
    name: str
    labels: dict[str, str]
    state: str
    infra: bool = False  # a podman pod's infra (pause) container: the runtime's, as conmon is


def command() -> list[str]:
    """podman and its global flags (``SDQOS_PODMAN``, e.g. ``podman --root /srv/c``)."""
    argv = shlex.split(os.environ.get("SDQOS_PODMAN", "podman"))
    return argv + ["--cgroup-manager=systemd"]


def run(args: list[str], *, timeout: float | None = TIMEOUT_S, capture: bool = True) -> subprocess.CompletedProcess:
    """One podman command (``timeout`` None: wait as long as it takes); a podman that is missing
    or hangs is a HostError naming the command.

    podman runs in its own session, and is never killed mid-operation: a podman SIGKILLed while it
    holds a container's lock leaves it held, and the next podman command on that container waits
    forever (subprocess.run kills its child on Ctrl-C). On Ctrl-C (KeyboardInterrupt) a ``wait``
    is told to stop (podman ends on SIGTERM), any other command finishes, then the interrupt goes on."""
    argv = command() + args
    pipe = subprocess.PIPE if capture else None
    try:
        proc = subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except FileNotFoundError:
        raise HostError(f"{argv[0]} not found (install podman, or set SDQOS_PODMAN)") from None
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(proc, STOP_S)
            raise HostError(f"podman {args[0]} did not finish within {timeout:g}s") from None
        except KeyboardInterrupt:
            if args[0] == "wait":
                proc.terminate()
            _end(proc, timeout if timeout is not None else STOP_S)
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


STOP_S = 30.0  # a podman told to stop (SIGTERM) gets this long before SIGKILL


def _end(proc: subprocess.Popen, grace: float) -> None:
    """Wait for ``proc`` (``grace`` seconds), then SIGTERM it and wait, and only then SIGKILL."""
    for step in (None, proc.terminate, proc.kill):
        if step is not None:
            step()
        try:
            proc.communicate(timeout=grace if step is not proc.kill else None)
            return
        except subprocess.TimeoutExpired:
            continue


def check(args: list[str], **kw) -> str:
    r = run(args, **kw)
    if r.returncode != 0:
        last = (r.stderr or "").strip().splitlines()[-1:] or [f"exit {r.returncode}"]
        raise HostError(f"podman {args[0]} failed: {last[0]}")
    return r.stdout


def last_log_line(name: str) -> str:
    """The last line a container wrote (stdout or stderr), from podman's log: for an error message."""
    try:
        r = run(["logs", "--tail=1", name])
    except HostError:
        return ""
    lines = ((r.stdout or "") + (r.stderr or "")).strip().splitlines()
    return lines[-1].strip() if r.returncode == 0 and lines else ""


def installed() -> bool:
    """Whether the podman sdqos would run exists at all (a host without podman has no containers)."""
    name = command()[0]
    return (os.access(name, os.X_OK) if "/" in name else shutil.which(name) is not None)


def containers(*labels: str) -> list[PodmanContainer]:
    """Every container podman knows (optionally those with all of ``labels``, ``key=value`` each)."""
    args = ["ps", "--all", "--format", "json"] + [f"--filter=label={label}" for label in labels]
    rows = json.loads(check(args) or "[]")
    out = []
    for row in rows or []:
        names = row.get("Names") or []
        out.append(PodmanContainer(row.get("Id", ""), names[0] if names else "", dict(row.get("Labels") or {}),
                                   row.get("State", ""), bool(row.get("IsInfra"))))
    return out


def remove(names: list[str], *, grace_s: int = 10) -> None:
    """Stop (SIGTERM, then SIGKILL after ``grace_s``) and remove containers; missing ones are fine."""
    if names:
        check(["rm", "--force", "--ignore", f"--time={grace_s}", *names], timeout=grace_s + TIMEOUT_S)


def image_user(image: str) -> str | None:
    """The user an image runs as (its Config.User: ``uid[:gid]``, ``name``, or "" for root), or None
    when the image is not in podman's store. ``image`` is a checked reference (sdqos.kube.imageref),
    passed after ``--``. (Added for runAsNonRoot, issue 35's first part.)"""
    r = run(["image", "inspect", "--format={{.Config.User}}", "--", image])
    return r.stdout.strip() if r.returncode == 0 else None


def remove_side_by_side(groups: list[tuple[list[str], int]]) -> list[HostError | None]:
    """Remove several pods' containers at once, each group with its own grace period (as kubelet
    kills pods in parallel): two pods of 5 s take 5 s, not 10. One result per group: None when it
    went, else the error."""
    def one(group: tuple[list[str], int]) -> HostError | None:
        try:
            remove(group[0], grace_s=group[1])
            return None
        except HostError as exc:
            return exc

    if len(groups) <= 1:
        return [one(g) for g in groups]
    with ThreadPoolExecutor(max_workers=min(len(groups), 16)) as pool:
        return list(pool.map(one, groups))
