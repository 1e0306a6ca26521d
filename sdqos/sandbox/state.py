"""What a sandbox is, as the host sees it: the Sandbox and SandboxStatus types, its state dir and
state.json, PIDs verified by their start time, the console log. Written before anything is
created, so that `down` can always find and remove everything."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdqos.errors import SandboxError
from sdqos.sandbox.nsenter import run as _run_inside
from sdqos.sandbox.units import CGROUP_ROOT, DEFAULT_NAME, STATE_ROOT

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")  # 40: the bus socket path must fit 108 bytes


# --- public types --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sandbox:
    """A running (or at least recorded) sandbox, as seen from the host."""

    name: str
    pid: int  # host PID of the instance's PID 1 (systemd)
    state_dir: Path
    run_dir: Path  # host path of the instance's /run
    unit_dir: Path  # host path of the instance's unit dir (inside: /run/sdqos/units)
    cgroups: Mapping[str, str] = field(default_factory=dict)  # hierarchy key -> host dir
    started: float = 0.0  # time.time() when up() finished
    cgroup_mode: str = "hybrid"  # host layout: legacy (v1 only), hybrid (v1 + unified), unified (v2 only)

    @property
    def bus_address(self) -> str:
        """D-Bus address of the instance's system bus, usable from the host."""
        return f"unix:path={self.run_dir}/dbus/system_bus_socket"

    def cgroup_path(self, controller: str = "systemd") -> Path:
        """Host directory of the instance's root cgroup in the hierarchy of `controller`
        (``cpu``, ``cpuacct``, ``memory``, ``pids``, ``systemd``/``name=systemd``, ``unified``...).
        A unit's cgroup is below it, e.g. ``cgroup_path("cpu") / "kubepods.slice"``. On a
        cgroup2-only host there is one directory, whatever the controller."""
        if self.cgroup_mode == "unified" and "unified" in self.cgroups:
            return Path(self.cgroups["unified"])
        try:
            return Path(self.cgroups[controller])
        except KeyError:
            raise SandboxError(
                f"sandbox {self.name}: no cgroup hierarchy '{controller}' (have: {', '.join(sorted(self.cgroups))})"
            ) from None

    def run(self, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
        """`run` inside this sandbox."""
        return _run_inside(self.pid, argv, **kwargs)

    def systemctl(self, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        """``systemctl ARGS`` inside this sandbox (output captured as text)."""
        return _run_inside(self.pid, ["systemctl", *args], check=check)


@dataclass(frozen=True)
class SandboxStatus:
    """What `status` reports; `running` is False for a crashed or half-made sandbox."""

    name: str
    running: bool
    pid: int | None
    bus_address: str | None
    state_dir: Path
    systemd_version: str | None = None
    system_state: str | None = None  # Manager.SystemState: running / degraded / starting ...
    units: int | None = None  # Manager.NNames: units loaded
    failed_units: int | None = None
    uptime: float | None = None
    problem: str | None = None

    def describe(self) -> str:
        """Human-readable, a few lines."""
        if not self.running:
            why = f" ({self.problem})" if self.problem else ""
            return f"{self.name}: not running{why}; state {self.state_dir}"
        rows = [
            f"{self.name}: {self.system_state or 'unknown'}",
            f"  pid          {self.pid}",
            f"  bus          {self.bus_address}",
            f"  systemd      {self.systemd_version or '?'}",
            f"  units        {self.units if self.units is not None else '?'}"
            f" ({self.failed_units if self.failed_units is not None else '?'} failed)",
            f"  uptime       {self.uptime:.0f}s" if self.uptime is not None else "  uptime       ?",
            f"  state        {self.state_dir}",
        ]
        if self.problem:
            rows.append(f"  problem      {self.problem}")
        return "\n".join(rows)


# --- internals: state ----------------------------------------------------------------------------


def state_dir(name: str) -> Path:
    return STATE_ROOT / name


def _write_state(sdir: Path, st: Mapping[str, Any]) -> None:
    tmp = sdir / "state.json.tmp"
    tmp.write_text(json.dumps(st, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, sdir / "state.json")


def _read_state(name: str) -> dict[str, Any] | None:
    try:
        st = json.loads((state_dir(name) / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(st, dict):
        return None
    if not st.get("pid"):  # up() may not have recorded it yet
        try:
            st["pid"] = int((state_dir(name) / "pid").read_text().split()[0])
            st["pid_starttime"] = int((state_dir(name) / "pid").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return st


def _sandbox_from_state(st: Mapping[str, Any]) -> Sandbox:
    cg = dict(st.get("cgroups") or {})
    # also answer to each controller of a co-mounted hierarchy (cpu,cpuacct) and name=systemd
    for h in st.get("hierarchies") or []:
        for k in h.get("controllers", []):
            cg.setdefault(k, h["dir"])
        if h.get("name"):
            cg.setdefault(f"name={h['name']}", h["dir"])
    return Sandbox(
        name=st["name"],
        pid=int(st.get("pid") or 0),
        state_dir=Path(st["state_dir"]),
        run_dir=Path(st["run_dir"]),
        unit_dir=Path(st["unit_dir"]),
        cgroups=cg,
        started=float(st.get("started") or 0.0),
        cgroup_mode=_cgroup_mode(st.get("hierarchies") or []),
    )


def _cgroup_mode(hierarchies: Sequence[Mapping[str, Any]]) -> str:
    if len(hierarchies) == 1 and hierarchies[0]["mount"] == str(CGROUP_ROOT):
        return "unified"
    return "hybrid" if any(h["type"] == "cgroup2" for h in hierarchies) else "legacy"


def _starttime(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot): tells a PID from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _pid_exists(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _verified_pid(pid: Any, starttime: Any) -> int | None:
    """`pid` if that process still exists and is the one we recorded (same start time)."""
    if not pid:
        return None
    st = _starttime(int(pid))
    if st is None or (starttime is not None and st != int(starttime)):
        return None
    return int(pid)


def _alive(st: Mapping[str, Any] | None) -> bool:
    if not st:
        return False
    return _verified_pid(st.get("pid"), st.get("pid_starttime")) is not None and _pid_exists(int(st["pid"]))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _console_tail(sdir: Path, lines: int = 12) -> str:
    try:
        data = (sdir / "console.log").read_bytes()[-8192:]
    except OSError:
        return ""
    text = data.decode(errors="replace").replace("\r", "")
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])


def get(name: str = DEFAULT_NAME) -> Sandbox:
    """The running sandbox `name`; SandboxError if it is not running."""
    check_name(name)
    st = _read_state(name)
    if st is None:
        raise SandboxError(f"sandbox {name} does not exist (no {state_dir(name) / 'state.json'}); "
                           f"`sdqos sandbox up{'' if name == 'sdqos' else ' ' + name}` boots it")
    if not _alive(st) or not st.get("started"):
        raise SandboxError(f"sandbox {name} is not running (run `down` to clean up, then `up`)")
    return _sandbox_from_state(st)


def check_name(name: str) -> None:
    """A sandbox name: 1-40 of [A-Za-z0-9_.-], not starting with . or -."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise SandboxError(f"invalid sandbox name {name!r}: use 1-40 of [A-Za-z0-9_.-], starting alphanumeric")


def _write_pidfile(p: Path, pid: int) -> None:
    tmp = p.with_suffix(".tmp")
    tmp.write_text(f"{pid} {_starttime(pid)}\n")
    os.replace(tmp, p)
