"""A private, throwaway systemd to try sdqos on — and to run its integration tests against.

sdqos drives systemd over D-Bus. Trying it on a real host means creating slices and scopes in the
host's own systemd; a test suite that did that would leak units into the machine it runs on, and
on a host whose PID 1 is not systemd there is nothing to talk to at all. A *sandbox* is a systemd
booted as PID 1 of its own pid, mount, cgroup and uts namespaces (DESIGN.md §5), with its own
system bus and only the handful of units it needs, so that:

- everything sdqos does lands in cgroups named for the sandbox, readable from the host
  (`Sandbox.cgroup_path`), and disappears with `down()`;
- the host's init, units and services are never touched: the instance gets a private ``/run``
  and a copy-on-write ``/etc`` (an overlay whose upper dir is in the state dir, with an empty
  ``/etc/systemd/system``, so ``systemctl enable`` and ``sdqos install-units`` work inside and
  write nothing to the host), its unit path holds only its own dirs (never ``/lib/systemd/system``),
  ``/proc/sys`` is read-only inside (systemd would otherwise raise the host's ``fs.nr_open`` at
  boot), and its console is a pty whose output lands in a log file.

Cgroups: on a cgroup v1/hybrid host (the layout DESIGN §5 was measured on) the instance gets
``sdqos-sandbox-<name>`` in every hierarchy mounted under /sys/fs/cgroup, memory below the
caller's own memory cgroup; inside, a read-only tmpfs on /sys/fs/cgroup with each hierarchy
remounted. On a cgroup2-only host it gets /sys/fs/cgroup/sdqos-sandbox-<name> and cgroup2 is
mounted on /sys/fs/cgroup inside.

Layout on the host (``/run`` is a tmpfs: the state lives exactly as long as the processes and
cgroups it describes, i.e. until reboot — state in ``/var/tmp`` would outlive them and describe
PIDs and cgroups that no longer exist)::

    /run/sdqos-sandbox/<name>/      ($SDQOS_SANDBOX_ROOT overrides /run/sdqos-sandbox)
        state.json      everything `down` needs, written before anything is created
        pid             host PID of the instance's PID 1 (and its start time)
        supervisor.pid  the supervisor's
        console.log     systemd's console output (a pty is its /dev/console), capped at 4 MiB
        machine-id      the instance's own, bound over /etc/machine-id
        etc/upper       what the instance wrote to its /etc (etc/work: the overlay's work dir)
        exited          why PID 1 exited, if it did while the supervisor watched
        run/            the instance's private /run (bus socket: run/dbus/system_bus_socket;
                        run/systemd/system is on its unit path: tests may install units there)
        run/sdqos/units the unit dir (inside: /run/sdqos/units)
        run/sdqos/libvirt  only with up(..., libvirt=True): libvirtd's qemu.conf, state and logs

Process tree: supervisor (python, holds the console pty, logs it, reaps; nobody's child) →
``unshare --pid --fork --mount --uts --propagation private`` → PID 1 = ``python -m
sdqos.sandbox _init``, which joins the instance cgroups, unshares its cgroup namespace, mounts
(/proc with a read-only /proc/sys, /etc, /run, /sys/fs/cgroup, /dev/console, /etc/machine-id) and
execs systemd. Where the host's /run is a mount of its own (every systemd host) the instance's /run
(a dir under it) is cloned as a detached mount before the host's /run is detached, then attached. PID 1 unsharing the cgroup namespace itself (rather than ``unshare --cgroup``) keeps the
unshare process out of the instance cgroups: only PID 1 and its descendants ever live there.

The CLI (``sdqos sandbox up|exec|status|down``) is the typer sub-app `app` (built lazily, so
the internal stages started with ``python -m sdqos.sandbox`` do not pay for importing typer).
"""

from __future__ import annotations

import errno
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from sdqos.errors import SandboxError

DEFAULT_NAME = "sdqos"
STATE_ROOT = Path(os.environ.get("SDQOS_SANDBOX_ROOT", "/run/sdqos-sandbox"))
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "sdqos-sandbox-"  # cgroup dir of instance NAME: sdqos-sandbox-NAME
TARGET = "sdqos-sandbox.target"
INNER_UNIT_DIR = "/run/sdqos/units"
# An empty dir as generator path: the host's generators (fstab, sysv, getty, postgresql ...) would
# run at every boot and daemon-reload (~120 ms of a ~175 ms boot here) for output that is not on
# the unit path anyway.
INNER_GENERATOR_DIR = "/run/sdqos/generators"
# systemd's own order, less the vendor dirs: the instance's /etc is private (copy-on-write, see
# _init), so `systemctl enable` and `sdqos install-units` work inside as on a host.
UNIT_PATH = ("/etc/systemd/system.control:/run/systemd/system.control:/run/systemd/transient:"
             f"/etc/systemd/system:/run/systemd/system:{INNER_UNIT_DIR}")
SYSTEMD_CANDIDATES = ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")
BOOT_TIMEOUT = 30.0
DOWN_TIMEOUT = 15.0
CONSOLE_LOG_MAX = 4 << 20

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")  # 40: the bus socket path must fit 108 bytes
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

# The instance's units. -.slice, system.slice and init.scope are built into systemd (perpetual).
UNITS: dict[str, str] = {
    TARGET: """\
[Unit]
Description=sdqos sandbox
Wants=dbus.socket dbus.service machine.slice
""",
    # systemd connects to the bus only while units with exactly these two names are active.
    "dbus.socket": """\
[Unit]
Description=D-Bus System Message Bus Socket (sdqos sandbox)
DefaultDependencies=no

[Socket]
ListenStream=/run/dbus/system_bus_socket
""",
    "dbus.service": """\
[Unit]
Description=D-Bus System Message Bus (sdqos sandbox)
DefaultDependencies=no
Requires=dbus.socket
After=dbus.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only
""",
    "machine.slice": """\
[Unit]
Description=Virtual Machine and Container Slice (sdqos sandbox)
""",
    # Services and timers with default dependencies Require= sysinit.target: without it
    # `systemd-run --unit=x cmd` or a test timer fails with result 'dependency'.
    "sysinit.target": """\
[Unit]
Description=System Initialization (sdqos sandbox: empty)
DefaultDependencies=no
""",
}

# --- opt-in VM services: up(name, machined=True) / up(name, libvirt=True) -----------------------
#
# With them the instance runs VM workloads the way a host does: libvirtd starts a qemu domain,
# registers it with systemd-machined (CreateMachine), and machined has the instance's systemd create
# `machine-qemu\x2d<id>\x2d<name>.scope` in machine.slice. The units are minimal ones of our own:
# the packaged ones depend on units the instance does not have. machined's D-Bus policy and
# activation file are the host's (the instance's dbus-daemon reads /usr/share/dbus-1 like the
# host's would). The file system is the host's but for /run, so libvirtd gets private dirs (under
# the instance's /run/sdqos/libvirt) bound over every place it writes to outside /run, a
# qemu.conf of ours, and a network namespace of its own (its network driver must never touch the
# host's interfaces or iptables). Logs: machined's to the console log, libvirtd's to
# /run/sdqos/libvirt/libvirtd.log, each domain's qemu output to /run/sdqos/libvirt/log/qemu/.
MACHINED_BINARIES = ("/lib/systemd/systemd-machined", "/usr/lib/systemd/systemd-machined")
LIBVIRTD_BINARY = "/usr/sbin/libvirtd"
INNER_LIBVIRT_DIR = "/run/sdqos/libvirt"
# libvirtd's state outside /run, each bound to INNER_LIBVIRT_DIR/<key> (created at `up`)
_LIBVIRT_BINDS = {"etc-qemu": "/etc/libvirt/qemu", "lib": "/var/lib/libvirt", "log": "/var/log/libvirt",
                  "cache": "/var/cache/libvirt"}
MACHINED_UNIT = """\
[Unit]
Description=Virtual Machine and Container Registration Service (sdqos sandbox)
Requires=dbus.socket
Wants=machine.slice
After=dbus.socket machine.slice

[Service]
BusName=org.freedesktop.machine1
ExecStart={binary}
Environment=SYSTEMD_LOG_TARGET=console
StandardOutput=tty
StandardError=inherit
"""
LIBVIRTD_UNIT = f"""\
[Unit]
Description=Virtualization daemon (sdqos sandbox)
Requires=dbus.socket
Wants=systemd-machined.service
After=dbus.service systemd-machined.service

[Service]
Type=notify
ExecStart={LIBVIRTD_BINARY}
Environment=LIBVIRT_LOG_OUTPUTS=3:file:{INNER_LIBVIRT_DIR}/libvirtd.log
KillMode=process
PrivateNetwork=yes
BindReadOnlyPaths={INNER_LIBVIRT_DIR}/qemu.conf:/etc/libvirt/qemu.conf
BindPaths={' '.join(f'{INNER_LIBVIRT_DIR}/{k}:{v}' for k, v in _LIBVIRT_BINDS.items())}
"""
# qemu runs as root: as libvirt-qemu it could not open a root-only (udev-less) /dev/kvm, and libvirt
# would then find its capability cache "probed with KVM, KVM not available now" and re-probe qemu on
# every domain start (~10 s each). No relabelling or chown, no per-domain /dev (it would mknod and
# chown /dev/kvm), qemu's stdout/stderr to a plain file (no virtlogd needed).
LIBVIRT_QEMU_CONF = """\
# sdqos sandbox (see sdqos/sandbox.py)
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = [ ]
stdio_handler = "file"
"""


def _vm_services(machined: bool, libvirt: bool) -> list[str]:
    """The opt-in units `up` must start and check, in start order."""
    return (["systemd-machined.service"] if machined or libvirt else []) + (["libvirtd.service"] if libvirt else [])


def _write_vm_units(st: Mapping[str, Any], services: Sequence[str]) -> None:
    unit_dir, run_dir = Path(st["unit_dir"]), Path(st["run_dir"])
    if "systemd-machined.service" in services:
        binary = next(p for p in MACHINED_BINARIES if os.access(p, os.X_OK))
        (unit_dir / "systemd-machined.service").write_text(MACHINED_UNIT.format(binary=binary))
        # what dbus-daemon asks systemd to start for org.freedesktop.machine1 (bus activation)
        os.symlink("systemd-machined.service", unit_dir / "dbus-org.freedesktop.machine1.service")
    if "libvirtd.service" in services:
        (unit_dir / "libvirtd.service").write_text(LIBVIRTD_UNIT)
        lv = run_dir / INNER_LIBVIRT_DIR.removeprefix("/run/")
        for key in _LIBVIRT_BINDS:
            (lv / key).mkdir(parents=True)
        (lv / "qemu.conf").write_text(LIBVIRT_QEMU_CONF)
    if services:
        dropin = unit_dir / f"{TARGET}.d"
        dropin.mkdir()
        (dropin / "vm.conf").write_text(f"[Unit]\nWants={' '.join(services)}\n")


def _check_vm_services(sb: Sandbox, services: Sequence[str]) -> None:
    """Every opt-in service must be active once the instance is up (a failed one only makes the
    instance 'degraded', which `_wait_ready` accepts)."""
    if not services:
        return
    cp = run(sb, ["systemctl", "is-active", *services], timeout=15)
    states = cp.stdout.split()
    bad = [f"{u} {s}" for u, s in zip(services, states) if s != "active"]
    if len(states) != len(services) or bad:
        detail = run(sb, ["systemctl", "status", "--no-pager", "--lines=8", *services], timeout=15).stdout
        why = ", ".join(bad) or cp.stderr.strip()
        raise SandboxError(f"sandbox {sb.name}: {why}: {' | '.join(detail.splitlines()[-12:])}")


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

    @property
    def console_log(self) -> Path:
        return self.state_dir / "console.log"

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
        return run(self, argv, **kwargs)

    def systemctl(self, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        """``systemctl ARGS`` inside this sandbox (output captured as text)."""
        return run(self, ["systemctl", *args], check=check)


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


# --- lifecycle -----------------------------------------------------------------------------------


def up(name: str = DEFAULT_NAME, timeout: float = BOOT_TIMEOUT, *, machined: bool = False,
       libvirt: bool = False) -> Sandbox:
    """Boot sandbox `name` and wait until its systemd is on its bus and has finished starting up.

    Bringing up a name that is already running is an error (`SandboxError`); leftovers of a
    crashed or half-made sandbox of that name are cleaned up first. On any failure everything
    created so far is removed again and the error carries the tail of systemd's console output.

    Opt-in VM services (off by default; see MACHINED_UNIT): `machined` also runs systemd-machined,
    `libvirt` runs libvirtd as well (and machined, which it needs); `up` returns once they are active.
    """
    check_name(name)
    services = _vm_services(machined, libvirt)
    problems = missing_prerequisites(machined=machined, libvirt=libvirt)
    if problems:
        raise SandboxError(f"cannot boot sandbox {name}: {'; '.join(problems)}")
    sdir = state_dir(name)
    if sdir.exists() or _find_cgroup_dirs(name, None):
        if _alive(_read_state(name)):
            st = _read_state(name) or {}
            raise SandboxError(f"sandbox {name} is already running (pid {st.get('pid')}); `down` it first")
        down(name)  # a crashed or half-made one
    sock = f"{sdir}/run/dbus/system_bus_socket"
    if len(sock.encode()) > 107:
        raise SandboxError(f"sandbox {name}: bus socket path {sock} is longer than 107 bytes; use a shorter name")
    t0 = time.monotonic()
    try:
        sdir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise SandboxError(f"sandbox {name}: {sdir} appeared meanwhile (another `up` running?)") from None
    except OSError as e:
        raise SandboxError(f"sandbox {name}: cannot create state dir {sdir}: {e.strerror}") from None
    try:
        hierarchies = _host_hierarchies()
        _instance_dirs(name, hierarchies)
        st: dict[str, Any] = {
            "name": name,
            "state_dir": str(sdir),
            "run_dir": str(sdir / "run"),
            "unit_dir": str(sdir / "run" / INNER_UNIT_DIR.removeprefix("/run/")),
            "systemd": _systemd_binary(),
            "hierarchies": hierarchies,
            "symlinks": _cgroup_symlinks(),
            "cgroups": {},
            "pid": None,
            "pid_starttime": None,
            "supervisor": None,
            "supervisor_starttime": None,
            "started": None,
            "machine_id": os.urandom(16).hex(),
            "services": services,
        }
        for h in hierarchies:  # decided before anything exists, so `down` can always find them
            st["cgroups"][h["key"]] = h["dir"]
        _write_state(sdir, st)
        unit_dir = Path(st["unit_dir"])
        unit_dir.mkdir(parents=True)
        Path(st["run_dir"], INNER_GENERATOR_DIR.removeprefix("/run/")).mkdir()
        for unit, text in UNITS.items():
            (unit_dir / unit).write_text(text)
        _write_vm_units(st, services)
        (sdir / "machine-id").write_text(st["machine_id"] + "\n")
        _make_private_etc(sdir / "etc")
        _make_cgroups(name, hierarchies)
        _start_supervisor(sdir)
        st = _wait_pid(name, sdir, t0 + timeout)
        sb = _sandbox_from_state(st)
        _wait_ready(sb, sdir, t0, timeout)
        _check_vm_services(sb, services)
        st["started"] = time.time()
        _write_state(sdir, st)
        return _sandbox_from_state(st)
    except BaseException as e:
        tail = _console_tail(sdir)
        try:
            down(name)
        except Exception:
            pass
        if isinstance(e, SandboxError):
            raise SandboxError(f"{e}{'; systemd said: ' + tail if tail else ''}") from None
        if isinstance(e, OSError):
            raise SandboxError(f"sandbox {name}: {e}{'; systemd said: ' + tail if tail else ''}") from None
        raise


def down(name: str = DEFAULT_NAME, timeout: float = DOWN_TIMEOUT) -> bool:
    """Tear sandbox `name` down: kill -9 its PID 1 (the pid namespace goes with it), wait for
    every process of it to be gone, remove its cgroup dirs depth-first in every hierarchy, and
    remove its state dir. Idempotent; also cleans up after a crashed or half-made sandbox.
    Returns whether there was anything to remove."""
    check_name(name)
    sdir = state_dir(name)
    st = _read_state(name) or {}
    cg_dirs = _find_cgroup_dirs(name, st)
    found = sdir.exists() or bool(cg_dirs)
    deadline = time.monotonic() + timeout

    pid1 = _verified_pid(st.get("pid"), st.get("pid_starttime"))
    if pid1 is not None:
        _kill(pid1)
    # Everything still in the instance cgroups is ours (PID 1 and its descendants, or a PID 1
    # that never got to write its pid).
    while True:
        pids = {p for d in cg_dirs for p in _cgroup_pids(d)}
        if pid1 is not None and _pid_exists(pid1):
            pids.add(pid1)
        if not pids:
            break
        if time.monotonic() > deadline:
            raise SandboxError(f"sandbox {name}: processes {sorted(pids)[:10]} still alive after {timeout:.0f}s")
        for p in pids:
            _kill(p)
        time.sleep(0.02)

    sup = _verified_pid(st.get("supervisor"), st.get("supervisor_starttime"))
    if sup is not None:  # it exits by itself once PID 1 is gone; give it a moment to drain
        end = min(deadline, time.monotonic() + 2.0)
        while _pid_exists(sup) and time.monotonic() < end:
            time.sleep(0.02)
        if _pid_exists(sup):
            _kill(sup)

    for d in cg_dirs:
        _rmtree_cgroup(Path(d), deadline, name)

    for mnt in _mounts_under(sdir):  # none expected: the instance's mounts die with its namespace
        subprocess.run([_tool("umount"), "-l", mnt], capture_output=True)
    if sdir.exists():
        try:
            shutil.rmtree(sdir)
        except OSError as e:
            raise SandboxError(f"sandbox {name}: cannot remove {sdir}: {e.strerror}") from None
    try:
        STATE_ROOT.rmdir()  # only if it was the last one
    except OSError:
        pass
    return found


def get(name: str = DEFAULT_NAME) -> Sandbox:
    """The running sandbox `name`; SandboxError if it is not running."""
    check_name(name)
    st = _read_state(name)
    if st is None:
        raise SandboxError(f"sandbox {name} does not exist (no {state_dir(name) / 'state.json'})")
    if not _alive(st) or not st.get("started"):
        raise SandboxError(f"sandbox {name} is not running (run `down` to clean up, then `up`)")
    return _sandbox_from_state(st)


def status(name: str = DEFAULT_NAME) -> SandboxStatus:
    """Running or not, PID, bus address, systemd version, state and unit count of `name`."""
    check_name(name)
    sdir = state_dir(name)
    st = _read_state(name)
    if st is None:
        problem = "no such sandbox" if not sdir.exists() else "state file missing or unreadable"
        return SandboxStatus(name, False, None, None, sdir, problem=problem)
    sb = _sandbox_from_state(st)
    if not _alive(st):
        return SandboxStatus(name, False, st.get("pid"), None, sdir, problem="PID 1 is gone")
    uptime = time.time() - st["started"] if st.get("started") else None
    try:
        props = _manager_properties(sb.bus_address, "Version", "SystemState", "NNames", "NFailedUnits")
    except SandboxError as e:
        return SandboxStatus(name, True, sb.pid, sb.bus_address, sdir, uptime=uptime, problem=str(e))
    return SandboxStatus(
        name,
        True,
        sb.pid,
        sb.bus_address,
        sdir,
        systemd_version=props.get("Version"),
        system_state=props.get("SystemState"),
        units=props.get("NNames"),
        failed_units=props.get("NFailedUnits"),
        uptime=uptime,
    )


def list_sandboxes() -> list[SandboxStatus]:
    """Status of every sandbox that has a state dir, by name."""
    if not STATE_ROOT.is_dir():
        return []
    return [status(p.name) for p in sorted(STATE_ROOT.iterdir()) if p.is_dir() and _NAME_RE.fullmatch(p.name)]


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
        raise SandboxError("nsenter not found (Debian package util-linux)") from None
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


# --- prerequisites -------------------------------------------------------------------------------


def check_name(name: str) -> None:
    """A sandbox name: 1-40 of [A-Za-z0-9_.-], not starting with . or -."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise SandboxError(f"invalid sandbox name {name!r}: use 1-40 of [A-Za-z0-9_.-], starting alphanumeric")


def missing_prerequisites(*, machined: bool = False, libvirt: bool = False) -> list[str]:
    """Why a sandbox cannot be booted here (empty list: it can). Each entry is one short reason.
    `machined`/`libvirt`: also what those opt-in services need (`missing_vm_prerequisites`)."""
    out = []
    if os.geteuid() != 0:
        out.append(f"must run as root (euid {os.geteuid()})")
    out.extend(missing_vm_prerequisites(machined=machined, libvirt=libvirt))
    for tool, pkg in (("unshare", "util-linux"), ("nsenter", "util-linux"), ("mount", "mount"),
                      ("umount", "mount"), ("busctl", "systemd")):
        if shutil.which(tool, path=_path()) is None:
            out.append(f"{tool} not found (Debian package {pkg})")
    if _systemd_binary() is None:
        out.append(f"no systemd binary at {' or '.join(SYSTEMD_CANDIDATES)} (Debian package systemd)")
    if not os.access("/usr/bin/dbus-daemon", os.X_OK):
        out.append("/usr/bin/dbus-daemon not found (Debian package dbus)")
    elif not os.path.exists("/usr/share/dbus-1/system.conf"):
        out.append("/usr/share/dbus-1/system.conf not found (Debian package dbus)")
    if not os.path.isfile("/etc/machine-id"):
        out.append("/etc/machine-id missing (systemd would create it on the host; run systemd-machine-id-setup)")
    try:
        hs = _host_hierarchies()
    except SandboxError as e:
        out.append(str(e))
        return out
    if _cgroup_mode(hs) != "unified":
        if not any(h["type"] == "cgroup" and h["name"] == "systemd" for h in hs):
            out.append(f"no name=systemd cgroup v1 hierarchy under {CGROUP_ROOT}")
        version = _systemd_version()
        if version is not None and version >= 258:
            out.append(f"systemd {version} cannot boot on cgroup v1/hybrid (support removed in 258)")
    return out


def missing_vm_prerequisites(*, machined: bool = True, libvirt: bool = False) -> list[str]:
    """What the opt-in VM services lack here (empty list: nothing), one short reason each."""
    out = []
    if machined or libvirt:
        if not any(os.access(p, os.X_OK) for p in MACHINED_BINARIES):
            out.append(f"no systemd-machined at {' or '.join(MACHINED_BINARIES)} (Debian package systemd-container)")
        elif not os.path.exists("/usr/share/dbus-1/system.d/org.freedesktop.machine1.conf"):
            out.append("no D-Bus policy for org.freedesktop.machine1 (Debian package systemd-container)")
    if libvirt:
        if not os.access(LIBVIRTD_BINARY, os.X_OK):
            out.append(f"{LIBVIRTD_BINARY} not found (Debian package libvirt-daemon-system)")
        if shutil.which("virsh", path=_path()) is None:
            out.append("virsh not found (Debian package libvirt-clients)")
        if shutil.which("qemu-system-x86_64", path=_path()) is None:
            out.append("qemu-system-x86_64 not found (Debian package qemu-system-x86)")
    return out


def _systemd_version() -> int | None:
    binary = _systemd_binary()
    if binary is None:
        return None
    try:
        cp = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
        return int(cp.stdout.split()[1].split(".")[0].split("~")[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


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
    return bool(st) and _verified_pid(st.get("pid"), st.get("pid_starttime")) is not None and _pid_exists(int(st["pid"]))


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


# --- internals: cgroups --------------------------------------------------------------------------


def _host_hierarchies() -> list[dict[str, Any]]:
    """The cgroup hierarchies mounted under /sys/fs/cgroup (dicts; `dir` is filled in by
    `_instance_dirs`)."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
        subsys = {ln.split()[0] for ln in Path("/proc/cgroups").read_text().splitlines()[1:] if ln.strip()}
    except OSError as e:
        raise SandboxError(f"cannot read /proc: {e.strerror}") from None
    by_mount: dict[str, dict[str, Any]] = {}
    root_type = root_entry = None
    for ln in mountinfo:
        pre, _, post = ln.partition(" - ")
        f = pre.split()
        fstype, _src, superopts = (post.split() + ["", "", ""])[:3]
        mnt = _unescape_mount(f[4])
        if mnt == str(CGROUP_ROOT):
            root_type, root_entry = fstype, _unescape_mount(f[3])
            by_mount.clear()  # something mounted over it hides what was below
            continue
        if os.path.dirname(mnt) != str(CGROUP_ROOT) or fstype not in ("cgroup", "cgroup2"):
            continue
        opts = superopts.split(",")
        ctrls = [o for o in opts if o in subsys]
        hname = next((o[5:] for o in opts if o.startswith("name=")), None)
        if fstype == "cgroup2":
            mount_opts = ""
        else:
            mount_opts = ",".join(ctrls + ([f"name={hname}"] if hname else [])) if ctrls else f"none,name={hname}"
        by_mount[mnt] = {
            "key": os.path.basename(mnt),
            "mount": mnt,
            "root": _unescape_mount(f[3]),
            "type": fstype,
            "controllers": ctrls,
            "name": hname,
            "options": mount_opts,
            "dir": None,
        }
    if root_type == "cgroup2":  # unified only: one hierarchy, mounted on /sys/fs/cgroup itself
        try:
            ctrls = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        except OSError:
            ctrls = []
        return [{"key": "unified", "mount": str(CGROUP_ROOT), "root": root_entry, "type": "cgroup2",
                 "controllers": ctrls, "name": None, "options": "", "dir": None}]
    if root_type is None and not by_mount:
        raise SandboxError(f"no cgroup file systems mounted under {CGROUP_ROOT}")
    return list(by_mount.values())


def _unescape_mount(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _cgroup_symlinks() -> dict[str, str]:
    """Symlinks in /sys/fs/cgroup such as cpu -> cpu,cpuacct, to recreate inside."""
    out = {}
    try:
        for p in CGROUP_ROOT.iterdir():
            if p.is_symlink():
                out[p.name] = os.readlink(p)
    except OSError:
        pass
    return out


def _own_cgroup(hierarchy: Mapping[str, Any]) -> str:
    """Our cgroup (as a path below the hierarchy's mount) in `hierarchy`."""
    want = "0" if hierarchy["type"] == "cgroup2" else None
    for ln in Path("/proc/self/cgroup").read_text().splitlines():
        hid, ctrls, path = ln.split(":", 2)
        names = ctrls.split(",")
        if (want is not None and hid == want and ctrls == "") or (
            want is None
            and (set(hierarchy["controllers"]) & set(names) or (hierarchy["name"] and f"name={hierarchy['name']}" in names))
        ):
            root = hierarchy["root"]
            if root != "/" and (path == root or path.startswith(root + "/")):
                path = path[len(root):] or "/"
            return path
    return "/"


def _make_cgroups(name: str, hierarchies: list[dict[str, Any]]) -> None:
    for h in hierarchies:
        d = Path(h["dir"])
        parent = d.parent
        try:
            d.mkdir()
        except FileExistsError:
            pass
        except OSError as e:
            raise SandboxError(f"sandbox {name}: cgroup mkdir {d} failed: {e.strerror}") from None
        if h["type"] == "cgroup2" and h["mount"] == str(CGROUP_ROOT):
            _enable_controllers(parent)
        if h["type"] == "cgroup" and "cpuset" in h["controllers"]:  # empty cpuset: nothing could run
            for f in ("cpuset.cpus", "cpuset.mems"):
                try:
                    (d / f).write_text((parent / f).read_text())
                except OSError as e:
                    raise SandboxError(f"sandbox {name}: cannot copy {parent / f} to {d}: {e.strerror}") from None


def _enable_controllers(parent: Path) -> None:
    """cgroup2-only host: make the resource controllers the instance needs available to it (a
    systemd host has them enabled at the top already). Best effort."""
    try:
        have = set((parent / "cgroup.controllers").read_text().split())
        on = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError:
        return
    for c in sorted(({"cpu", "cpuset", "io", "memory", "pids"} & have) - on):
        try:
            (parent / "cgroup.subtree_control").write_text(f"+{c}\n")
        except OSError:
            pass


def _instance_dirs(name: str, hierarchies: list[dict[str, Any]]) -> None:
    """Fill in each hierarchy's instance dir: <mount>/sdqos-sandbox-NAME, except v1 memory, which
    goes below our own memory cgroup (DESIGN §5). On a cgroup2-only host the instance sits at the
    top: below our own cgroup, which holds processes, no controller could be delegated to it."""
    leaf = CGROUP_PREFIX + name
    for h in hierarchies:
        if h["type"] == "cgroup" and "memory" in h["controllers"]:
            h["dir"] = str(Path(h["mount"] + _own_cgroup(h).rstrip("/")) / leaf)
        else:
            h["dir"] = str(Path(h["mount"]) / leaf)


def _find_cgroup_dirs(name: str, st: Mapping[str, Any] | None) -> list[str]:
    """Existing instance cgroup dirs of `name`: those recorded in its state, plus (for a sandbox
    whose state is gone) <mount>/sdqos-sandbox-NAME and, for memory, that dir up to 4 levels
    below the hierarchy's root."""
    leaf = CGROUP_PREFIX + name
    found: list[str] = []
    for d in (st or {}).get("cgroups", {}).values():
        if d and os.path.isdir(d):
            found.append(d)
    try:
        hierarchies = _host_hierarchies()
    except SandboxError:
        return found
    for h in hierarchies:
        d = os.path.join(h["mount"], leaf)
        if os.path.isdir(d) and d not in found:
            found.append(d)
        if "memory" in h["controllers"] and not any(x.startswith(h["mount"] + "/") for x in found):
            found.extend(_search(h["mount"], leaf, 4))
    return found


def _search(top: str, leaf: str, depth: int) -> list[str]:
    out = []
    try:
        for e in os.scandir(top):
            if e.is_dir(follow_symlinks=False):
                if e.name == leaf:
                    out.append(e.path)
                elif depth > 1:
                    out.extend(_search(e.path, leaf, depth - 1))
    except OSError:
        pass
    return out


def _cgroup_pids(d: str) -> set[int]:
    pids: set[int] = set()
    for root, _dirs, _files in os.walk(d):
        try:
            pids.update(int(x) for x in Path(root, "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            pass
    return pids


def _rmtree_cgroup(top: Path, deadline: float, name: str) -> None:
    """rmdir `top` and every cgroup below it, deepest first (cgroup dirs hold only kernel files)."""
    while True:
        busy = None
        for root, _dirs, _files in os.walk(top, topdown=False):
            try:
                os.rmdir(root)
            except FileNotFoundError:
                pass
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise SandboxError(f"sandbox {name}: cannot remove cgroup {root}: {e.strerror}") from None
                busy = root
        if busy is None:
            return
        if time.monotonic() > deadline:
            raise SandboxError(f"sandbox {name}: cgroup {busy} still busy")
        time.sleep(0.05)


def _mounts_under(d: Path) -> list[str]:
    prefix = str(d) + "/"
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    mnts = [_unescape_mount(ln.split()[4]) for ln in lines]
    return sorted((m for m in mnts if m == str(d) or m.startswith(prefix)), key=len, reverse=True)


# --- internals: boot -----------------------------------------------------------------------------


def _make_private_etc(etc: Path) -> None:
    """The upper and work dirs of the instance's copy-on-write /etc. Its systemd/system is opaque:
    the instance sees an empty /etc/systemd/system, not the host's enabled units."""
    if any(c in str(etc) for c in ",:\\"):
        raise SandboxError(f"{etc}: the sandbox state dir must not contain ',', ':' or '\\' (overlay options)")
    (etc / "work").mkdir(parents=True)
    opaque = etc / "upper" / "systemd" / "system"
    opaque.mkdir(parents=True)
    os.setxattr(opaque, "trusted.overlay.opaque", b"y")


def _systemd_binary() -> str | None:
    return next((p for p in SYSTEMD_CANDIDATES if os.access(p, os.X_OK)), None)


def _stage_cmd(stage: str, sdir: Path, *extra: str) -> list[str]:
    # PYTHONPATH (see _stage_env) points at this copy of sdqos; keep sdqos/__init__.py light:
    # both stages import it
    return [sys.executable, "-m", "sdqos.sandbox", stage, str(sdir), *extra]


def _stage_env() -> dict[str, str]:
    pkg_parent = str(Path(__file__).resolve().parent.parent)
    pp = os.environ.get("PYTHONPATH")
    return {"PATH": _path(), "PYTHONPATH": pkg_parent + (":" + pp if pp else ""), "LANG": "C.UTF-8"}


def _start_supervisor(sdir: Path) -> None:
    """Start the supervisor (it double-forks: it is nobody's child once this returns)."""
    log = open(sdir / "console.log", "ab")
    try:
        p = subprocess.Popen(
            _stage_cmd("_supervise", sdir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=_stage_env(),
            cwd="/",
        )
    except OSError as e:
        raise SandboxError(f"cannot start {sys.executable}: {e.strerror}") from None
    finally:
        log.close()
    rc = p.wait()
    if rc != 0:
        raise SandboxError(f"sandbox supervisor exited {rc}")


def _wait_pid(name: str, sdir: Path, deadline: float) -> dict[str, Any]:
    """Wait for PID 1 to report its host PID; record it (and the supervisor's) in state.json."""
    while True:
        st = _read_state(name) or {}
        sup = _read_pidfile(sdir / "supervisor.pid")
        if sup:
            st["supervisor"], st["supervisor_starttime"] = sup
        pid = _read_pidfile(sdir / "pid")
        if pid:
            st["pid"], st["pid_starttime"] = pid
            _write_state(sdir, st)
            return st
        _check_exited(name, sdir)
        if time.monotonic() > deadline:
            raise SandboxError(f"sandbox {name}: PID 1 did not report its pid in time (supervisor {'running' if sup else 'not started'})")
        time.sleep(0.01)


def _read_pidfile(p: Path) -> tuple[int, int] | None:
    try:
        a, b = p.read_text().split()
        return int(a), int(b)
    except (OSError, ValueError):
        return None


def _check_exited(name: str, sdir: Path) -> None:
    try:
        why = (sdir / "exited").read_text().strip()
    except OSError:
        return
    raise SandboxError(f"sandbox {name}: {why}")


def _wait_ready(sb: Sandbox, sdir: Path, t0: float, timeout: float) -> None:
    """Wait until org.freedesktop.systemd1 is on the instance's bus and done starting up."""
    last = "bus socket not there yet"
    while True:
        _check_exited(sb.name, sdir)
        if not _pid_exists(sb.pid):
            raise SandboxError(f"sandbox {sb.name}: systemd (pid {sb.pid}) died during boot")
        if (sb.run_dir / "dbus" / "system_bus_socket").exists():
            try:
                state = _manager_properties(sb.bus_address, "SystemState", timeout=2.0)["SystemState"]
                if state in ("running", "degraded"):
                    return
                last = f"systemd is on the bus, SystemState={state}"
            except SandboxError as e:
                if "not found" in str(e):
                    raise
                last = str(e)
        if time.monotonic() > t0 + timeout:
            raise SandboxError(f"sandbox {sb.name}: bus not up after {timeout:g}s ({last})")
        time.sleep(0.02)


def _manager_properties(address: str, *props: str, timeout: float = 5.0) -> dict[str, Any]:
    """Read Manager properties with busctl (one JSON object per property)."""
    cmd = [_tool("busctl"), f"--address={address}", "--json=short", f"--timeout={timeout}", "get-property",
           "org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", *props]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"busctl get-property timed out on {address}") from None
    except FileNotFoundError:
        raise SandboxError("busctl not found (Debian package systemd)") from None
    if cp.returncode != 0:
        raise SandboxError(f"systemd1 not on the bus: {cp.stderr.strip() or cp.returncode}")
    values = [json.loads(ln)["data"] for ln in cp.stdout.splitlines() if ln.strip()]
    return dict(zip(props, values))


def _supervise(sdir: Path) -> None:
    """Stage 1, on the host: own the console pty, start unshare, log, reap, record how it ended."""
    if os.fork():
        os._exit(0)  # up() reaps this; the supervisor itself is nobody's child from now on
    _write_pidfile(sdir / "supervisor.pid", os.getpid())
    master, slave = os.openpty()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the select below at once
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # PID 1 joins the instance cgroups itself (stage 2): `unshare --cgroup` would need the unshare
    # process in them too, a process outside the instance sitting in the instance's root cgroup.
    proc = subprocess.Popen(
        [_tool("unshare"), "--pid", "--fork", "--mount", "--uts", "--propagation", "private", "--",
         *_stage_cmd("_init", sdir, os.ttyname(slave))],
        stdin=slave, stdout=slave, stderr=slave, close_fds=True, env=_stage_env(), cwd="/",
    )
    log = open(sdir / "console.log", "ab", buffering=0)

    def drain(wait: float | None) -> bool:
        r, _, _ = select.select([master, wake_r], [], [], wait)
        if wake_r in r:
            os.read(wake_r, 512)
        if master not in r:
            return False
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        if log.tell() > CONSOLE_LOG_MAX:
            log.truncate(0)
            log.seek(0)
            log.write(b"[console log truncated]\n")
        log.write(data.replace(b"\r", b""))
        return True

    while proc.poll() is None:  # we keep our end of the slave open: the pty never hangs up
        drain(5.0)
    for _ in range(100):
        if not drain(0):
            break
    rc = proc.returncode
    _record_exit(sdir, f"PID 1 exited with {f'signal {-rc}' if rc < 0 else f'status {rc}'}")


def _record_exit(sdir: Path, why: str) -> None:
    try:
        (sdir / "exited").write_text(why + "\n")
    except OSError:
        pass  # down() removed the state dir already


def _write_pidfile(p: Path, pid: int) -> None:
    tmp = p.with_suffix(".tmp")
    tmp.write_text(f"{pid} {_starttime(pid)}\n")
    os.replace(tmp, p)


def _init(sdir: Path, console: str) -> NoReturn:
    """Stage 2: PID 1 of the new pid/mount/uts namespaces. Join the instance cgroups, unshare the
    cgroup namespace, set up /proc, /run, /sys/fs/cgroup and /dev/console, exec systemd."""
    st = json.loads((sdir / "state.json").read_text())
    name = st["name"]
    host_pid = int(os.readlink("/proc/self"))  # /proc is still the host's
    for h in st["hierarchies"]:
        Path(h["dir"], "cgroup.procs").write_text("0\n")
    _write_pidfile(sdir / "pid", host_pid)
    _unshare(0x02000000)  # CLONE_NEWCGROUP: our cgroups become the namespace's root

    def sh(*argv: str) -> None:
        cp = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if cp.returncode != 0:
            raise SystemExit(f"sandbox init: `{' '.join(argv)}` failed: {cp.stderr.strip()}")

    sh("umount", "-l", "/proc")  # drops the host's /proc with its submounts
    sh("mount", "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", "/proc")
    sh("mount", "--bind", "/proc/sys", "/proc/sys")  # sysctls are the host's: read-only
    sh("mount", "-o", "remount,bind,ro,nosuid,nodev,noexec", "/proc/sys")
    # /etc copy-on-write: systemctl enable, set-property (persistent) and friends write to the
    # instance's upper dir, never to the host's /etc; its /etc/systemd/system starts empty.
    etc = sdir / "etc"
    sh("mount", "-t", "overlay", "-o", f"lowerdir=/etc,upperdir={etc}/upper,workdir={etc}/work", "overlay", "/etc")
    sh("mount", "--bind", str(sdir / "machine-id"), "/etc/machine-id")
    # The instance's /run lives under the host's /run (sdir). Where /run is a mount point (every
    # systemd host) detaching it takes sdir along, so the new /run is cloned first and attached after.
    new_run = _open_tree(st["run_dir"])
    if os.path.ismount("/run"):
        sh("umount", "-l", "/run")  # drops the host's /run with its submounts
    _move_mount(new_run, "/run")
    sh("umount", "-l", str(CGROUP_ROOT))
    hs = st["hierarchies"]
    if _cgroup_mode(hs) == "unified":  # cgroup2-only host
        sh("mount", "-t", "cgroup2", "-o", "nosuid,nodev,noexec", "cgroup2", str(CGROUP_ROOT))
    else:
        sh("mount", "-t", "tmpfs", "-o", "mode=755,nosuid,nodev,noexec", "tmpfs", str(CGROUP_ROOT))
        for h in hs:
            d = CGROUP_ROOT / h["key"]
            d.mkdir()
            if h["type"] == "cgroup2":
                sh("mount", "-t", "cgroup2", "-o", "nosuid,nodev,noexec", "cgroup2", str(d))
            else:
                sh("mount", "-t", "cgroup", "-o", f"nosuid,nodev,noexec,{h['options']}", "cgroup", str(d))
        for link, target in st.get("symlinks", {}).items():
            os.symlink(target, CGROUP_ROOT / link)
        # read-only, as systemd leaves it on a real boot; it also stops systemd from mounting
        # hierarchies of its own (e.g. net_cls,net_prio), which would be the host's too
        sh("mount", "-o", "remount,ro,nosuid,nodev,noexec", "tmpfs", str(CGROUP_ROOT))
    sh("mount", "--bind", console, "/dev/console")  # a pty the supervisor logs
    env = {
        "container": name,
        "SYSTEMD_UNIT_PATH": UNIT_PATH,
        "SYSTEMD_GENERATOR_PATH": INNER_GENERATOR_DIR,
        "SYSTEMD_ENVIRONMENT_GENERATOR_PATH": INNER_GENERATOR_DIR,
        "PATH": _PATH,
        "LANG": "C.UTF-8",
    }
    argv = [st["systemd"], "--system", f"--unit={TARGET}", "--log-color=no"]
    os.execve(argv[0], argv, env)


def _libc_call(name: str, *args: Any) -> int:
    import ctypes  # here, not at the top: only PID 1 of a sandbox needs it

    libc = ctypes.CDLL(None, use_errno=True)
    if name == "syscall":  # variadic: every argument a full register
        args = tuple(ctypes.c_long(a) if isinstance(a, int) else a for a in args)
    rc = getattr(libc, name)(*args)
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{name}{args[:2]}: {os.strerror(e)}")
    return rc


def _unshare(flags: int) -> None:
    if hasattr(os, "unshare"):  # Python >= 3.12
        os.unshare(flags)
        return
    _libc_call("unshare", flags)


# The new mount API (Linux 5.2; the syscall numbers are the same on every architecture but alpha):
# a clone of a directory as a mount that belongs to no path yet, attached somewhere later. A plain
# `mount --bind` cannot take its source from a mount that has been detached meanwhile.
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT = 428, 429
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC, _AT_FDCWD, _MOVE_MOUNT_F_EMPTY_PATH = 1, os.O_CLOEXEC, -100, 4


def _open_tree(path: str) -> int:
    return _libc_call("syscall", _SYS_OPEN_TREE, _AT_FDCWD, path.encode(), _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC)


def _move_mount(fd: int, target: str) -> None:
    try:
        _libc_call("syscall", _SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, target.encode(), _MOVE_MOUNT_F_EMPTY_PATH)
    finally:
        os.close(fd)


def _main(argv: list[str]) -> None:
    stage, sdir = argv[0], Path(argv[1])
    if stage == "_supervise":
        try:
            _supervise(sdir)
        except BaseException as e:
            print(f"sandbox supervisor failed: {e!r}", file=sys.stderr, flush=True)
            _record_exit(sdir, f"supervisor failed: {e}")
            raise
    elif stage == "_init":
        try:
            _init(sdir, argv[2])
        except BaseException as e:  # say why on the console, then die: the supervisor records it
            print(f"sandbox init failed: {e}", file=sys.stderr, flush=True)
            os._exit(1)
    else:
        raise SystemExit(f"unknown stage {stage}")


# --- CLI: `sdqos sandbox ...` (typer sub-app, built on first access to `app`) -------------------


def __getattr__(attr: str) -> Any:
    if attr == "app":
        globals()["app"] = _make_app()
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def _make_app() -> Any:
    import typer

    cli = typer.Typer(
        no_args_is_help=True,
        rich_markup_mode=None,  # plain help, as the rest of sdqos
        help="A private, throwaway systemd (own pid/mount/cgroup/uts namespaces and system bus) "
        "to try sdqos on without touching the host's init. Needs root.",
    )

    def fail(e: SandboxError) -> NoReturn:
        typer.echo(f"sdqos sandbox: {e}", err=True)
        raise typer.Exit(e.exit_code)

    @cli.command("up")
    def cmd_up(
        name: str = typer.Argument(DEFAULT_NAME, help="sandbox name"),
        timeout: float = typer.Option(BOOT_TIMEOUT, help="seconds to wait for systemd on its bus"),
        machined: bool = typer.Option(False, "--machined", help="also run systemd-machined (opt-in)"),
        libvirt: bool = typer.Option(False, "--libvirt", help="also run libvirtd and machined, for qemu domains (opt-in)"),
    ) -> None:
        """Boot a sandbox; error if NAME is already running."""
        try:
            up(name, timeout, machined=machined, libvirt=libvirt)
            typer.echo(status(name).describe())
        except SandboxError as e:
            fail(e)
        flag = "" if name == DEFAULT_NAME else f" -n {name}"
        typer.echo(f"run inside: sdqos sandbox exec{flag} -- systemctl status")

    @cli.command(
        "exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def cmd_exec(
        argv: list[str] = typer.Argument(..., help="command and its arguments (put -- before them)"),
        name: str = typer.Option(DEFAULT_NAME, "--name", "-n", help="sandbox name"),
    ) -> None:
        """Run a command inside a sandbox (its mount/pid/uts namespaces); exits with its status."""
        try:
            exec_in(name, argv)
        except SandboxError as e:
            fail(e)

    @cli.command("status")
    def cmd_status(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name")) -> None:
        """Show whether NAME runs, its PID, bus address, systemd version, units; exit 1 if not running."""
        try:
            s = status(name)
        except SandboxError as e:
            fail(e)
        typer.echo(s.describe())
        if not s.running:
            raise typer.Exit(1)

    @cli.command("list")
    def cmd_list() -> None:
        """List sandboxes (running or left over)."""
        for s in list_sandboxes():
            what = f"running  pid {s.pid}  {s.bus_address}" if s.running else f"stale ({s.problem})"
            typer.echo(f"{s.name}  {what}")

    @cli.command("down")
    def cmd_down(name: str = typer.Argument(DEFAULT_NAME, help="sandbox name")) -> None:
        """Kill a sandbox and remove its cgroups and state (idempotent)."""
        try:
            found = down(name)
        except SandboxError as e:
            fail(e)
        typer.echo(f"{name}: {'removed' if found else 'nothing to remove'}")

    return cli


if __name__ == "__main__":
    _main(sys.argv[1:])
