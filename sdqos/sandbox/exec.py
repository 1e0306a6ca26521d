"""Running things inside a sandbox: its mount, pid and uts namespaces through nsenter, with an
environment that points at its bus and runtime dir, never the host's."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from sdqos.errors import SandboxError, ToolMissing
from sdqos.sandbox.state import _ENV_DROP, _PATH, Sandbox, _cwd, _tool, get

# --- running things inside -----------------------------------------------------------------------


def nsenter_argv(sb: Sandbox | str, argv: Sequence[str], cwd: str | None = None) -> list[str]:
    """The host command line that runs `argv` inside the sandbox (its mount, pid, uts and cgroup
    namespaces; the working directory is kept, since the file system is shared but for /run).
    The cgroup namespace makes cgroup paths read inside agree with systemd's (systemd-cgls)."""
    sb = get(sb) if isinstance(sb, str) else sb
    if not argv:
        raise SandboxError("nothing to run: empty argv")
    wd = cwd if cwd is not None else _cwd()
    return [_tool("nsenter"), "-t", str(sb.pid), "-m", "-p", "-u", "-C", f"--wd={wd}", "--", *argv]


def inner_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ours) minus what must not leak inside: host bus addresses, runtime dir,
    and the host service manager's per-service variables."""
    out = dict(os.environ if env is None else env)
    for k in _ENV_DROP:
        out.pop(k, None)
    out.setdefault("PATH", _PATH)
    return out


def run(
    sb: Sandbox | str,
    argv: Sequence[str],
    *,
    check: bool = False,
    capture_output: bool = True,
    text: bool = True,
    timeout: float | None = 60.0,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess:
    """Run `argv` inside the sandbox and return the CompletedProcess (output captured as text by
    default; its `args` is `argv`, not the nsenter command line). With check=True a non-zero exit
    raises SandboxError carrying stderr."""
    cmd = nsenter_argv(sb, argv, cwd)
    try:
        cp = subprocess.run(
            cmd, capture_output=capture_output, text=text, timeout=timeout, input=input, env=inner_env(env)
        )
    except subprocess.TimeoutExpired:
        raise SandboxError(f"`{' '.join(argv)}` in the sandbox did not finish in {timeout}s") from None
    except FileNotFoundError:
        raise ToolMissing("nsenter not found (Debian package util-linux)") from None
    if check and cp.returncode != 0:
        err = cp.stderr if isinstance(cp.stderr, str) else (cp.stderr or b"").decode(errors="replace")
        raise SandboxError(f"`{' '.join(argv)}` in the sandbox exited {cp.returncode}: {err.strip()[-500:]}")
    cp.args = list(argv)
    return cp


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
