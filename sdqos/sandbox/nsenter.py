"""The host tools a sandbox is made and reached with, and running a program in a sandbox's
namespaces through nsenter, given the host PID of its PID 1, with an environment that points at its
bus and runtime dir, never the host's. ``Sandbox.run`` (sdqos.sandbox.state) and
sdqos.sandbox.exec build on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from sdqos.errors import SandboxError, ToolMissing

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Host variables that would point clients inside at the wrong bus, service manager or runtime dir.
_ENV_DROP = (
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "NOTIFY_SOCKET",
    "LISTEN_PID",
    "LISTEN_FDS",
    "LISTEN_FDNAMES",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
    "INVOCATION_ID",
    "JOURNAL_STREAM",
    "MANAGERPID",
    "SYSTEMD_EXEC_PID",
)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


def _path() -> str:
    return os.environ.get("PATH", "") + ":" + _PATH


def _tool(name: str) -> str:
    """Absolute path of a host tool (our PATH, then the usual sbin/bin dirs)."""
    return shutil.which(name, path=_path()) or name


def argv_for(pid: int, argv: Sequence[str], cwd: str | None = None) -> list[str]:
    """The host command line that runs `argv` in the namespaces of PID 1 ``pid`` (mount, pid, uts
    and cgroup; the working directory is kept, since the file system is shared but for /run).
    The cgroup namespace makes cgroup paths read inside agree with systemd's (systemd-cgls)."""
    if not argv:
        raise SandboxError("nothing to run: empty argv")
    wd = cwd if cwd is not None else _cwd()
    return [_tool("nsenter"), "-t", str(pid), "-m", "-p", "-u", "-C", f"--wd={wd}", "--", *argv]


def inner_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ours) minus what must not leak inside: host bus addresses, runtime dir,
    and the host service manager's per-service variables."""
    out = dict(os.environ if env is None else env)
    for k in _ENV_DROP:
        out.pop(k, None)
    out.setdefault("PATH", _PATH)
    return out


def run(
    pid: int,
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
    """Run `argv` in the namespaces of PID 1 ``pid`` and return the CompletedProcess (output
    captured as text by default; its `args` is `argv`, not the nsenter command line). With
    check=True a non-zero exit raises SandboxError carrying stderr."""
    cmd = argv_for(pid, argv, cwd)
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
