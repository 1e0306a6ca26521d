"""Running things inside a sandbox: its mount, pid and uts namespaces through nsenter, with an
environment that points at its bus and runtime dir, never the host's."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from sdqos.errors import SandboxError
from sdqos.sandbox.nsenter import argv_for, inner_env
from sdqos.sandbox.nsenter import run as _run_inside
from sdqos.sandbox.state import Sandbox, get

# --- running things inside -----------------------------------------------------------------------


def nsenter_argv(sb: Sandbox | str, argv: Sequence[str], cwd: str | None = None) -> list[str]:
    """The host command line that runs `argv` inside the sandbox (its mount, pid, uts and cgroup
    namespaces; the working directory is kept, since the file system is shared but for /run).
    The cgroup namespace makes cgroup paths read inside agree with systemd's (systemd-cgls)."""
    sb = get(sb) if isinstance(sb, str) else sb
    return argv_for(sb.pid, argv, cwd)


def run(sb: Sandbox | str, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """Run `argv` inside the sandbox and return the CompletedProcess (output captured as text by
    default; its `args` is `argv`, not the nsenter command line). With check=True a non-zero exit
    raises SandboxError carrying stderr. ``kwargs``: sdqos.sandbox.nsenter.run's (check,
    capture_output, text, timeout, input, env, cwd)."""
    sb = get(sb) if isinstance(sb, str) else sb
    return _run_inside(sb.pid, argv, **kwargs)


def popen(sb: Sandbox | str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """Start `argv` inside the sandbox without waiting (e.g. ``systemd-run --scope sleep 1000``
    that must keep running); `kwargs` go to subprocess.Popen. Killing the Popen kills nsenter;
    what it started dies with the sandbox, or with the unit it was put in."""
    kwargs.setdefault("env", inner_env())
    return subprocess.Popen(nsenter_argv(sb, argv, kwargs.pop("cwd", None)), **kwargs)


def exec_in(name: Sandbox | str, argv: Sequence[str]) -> NoReturn:
    """Replace this process with `argv` running inside sandbox `name` (through nsenter: argv is
    passed untouched, no shell; its exit status becomes ours; stdin/stdout/tty are inherited)."""
    cmd = nsenter_argv(name, argv)
    try:
        os.execvpe(cmd[0], cmd, inner_env())
    except OSError as e:
        raise SandboxError(f"cannot exec nsenter: {e.strerror}") from None


def reset_units(
    sb: Sandbox | str,
    patterns: Sequence[str] = ("kubepods*.slice", "machine-*.scope"),
    timeout: float = 15.0,
) -> None:
    """Give tests a clean instance: kill and stop every loaded unit matching `patterns` (with
    everything below them), reset failed units, and wait until none of them is left loaded."""
    sb = get(sb) if isinstance(sb, str) else sb
    run(sb, ["systemctl", "kill", "--signal=SIGKILL", "--", *patterns])
    run(sb, ["systemctl", "stop", "--", *patterns], timeout=timeout)
    run(sb, ["systemctl", "reset-failed"])
    start = time.monotonic()
    while True:
        out = run(sb, ["systemctl", "list-units", "--all", "--plain", "--no-legend", "--", *patterns]).stdout
        rows = [ln.split() for ln in out.splitlines() if len(ln.split()) >= 3]
        left = [r for r in rows if r[1] != "not-found"]  # not-found: only referenced, nothing to clean
        # transient units are garbage-collected at once; an inactive one with a unit file may be
        # kept loaded by a reference: after a moment, inactive counts as clean
        if not left or (time.monotonic() - start > 1.0 and all(r[2] == "inactive" for r in left)):
            return
        if time.monotonic() - start > timeout:
            raise SandboxError(f"sandbox {sb.name}: units still loaded after reset: {' '.join(r[0] for r in left[:10])}")
        run(sb, ["systemctl", "reset-failed"])
        time.sleep(0.05)
