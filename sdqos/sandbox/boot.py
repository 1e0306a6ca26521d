"""Bringing a sandbox up and down: the supervisor that holds the console, the wait for systemd on
its bus, teardown that leaves no process, cgroup, mount or file behind; status and listing."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdqos.errors import SandboxError, ToolMissing
from sdqos.sandbox.cgroups import (
    _cgroup_pids,
    _cgroup_symlinks,
    _find_cgroup_dirs,
    _host_hierarchies,
    _instance_dirs,
    _make_cgroups,
    _mounts_under,
    _rmtree_cgroup,
)
from sdqos.sandbox.exec import run
from sdqos.sandbox.nsenter import _path, _tool
from sdqos.sandbox.pid1 import _init
from sdqos.sandbox.prereqs import _systemd_binary, missing_prerequisites
from sdqos.sandbox.state import (
    _NAME_RE,
    Sandbox,
    SandboxStatus,
    _alive,
    _console_tail,
    _kill,
    _pid_exists,
    _read_state,
    _sandbox_from_state,
    _verified_pid,
    _write_pidfile,
    _write_state,
    check_name,
    state_dir,
)
from sdqos.sandbox.units import (
    BOOT_TIMEOUT,
    CONSOLE_LOG_MAX,
    DEFAULT_NAME,
    DOWN_TIMEOUT,
    INNER_GENERATOR_DIR,
    INNER_UNIT_DIR,
    STATE_ROOT,
    JOURNALD_CONF,
    PODMAN_CONF,
    UNITS,
    _vm_services,
    _write_vm_units,
    unit_text,
)


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
            running = _read_state(name) or {}
            raise SandboxError(f"sandbox {name} is already running (pid {running.get('pid')}); `down` it first")
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
        st = _initial_state(name, sdir, hierarchies, services)
        _write_state(sdir, st)
        _lay_out(sdir, st, services)
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


def _initial_state(name: str, sdir: Path, hierarchies: list[dict[str, Any]], services: Sequence[str]
                   ) -> dict[str, Any]:
    """state.json before anything else exists: where everything will be, so `down` can always find it."""
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
    return st


def _lay_out(sdir: Path, st: dict[str, Any], services: Sequence[str]) -> None:
    """The instance's files in its state dir: unit and generator dirs, units, machine-id, its
    copy-on-write /etc and /var/lib, podman's storage."""
    unit_dir = Path(st["unit_dir"])
    unit_dir.mkdir(parents=True)
    Path(st["run_dir"], INNER_GENERATOR_DIR.removeprefix("/run/")).mkdir()
    for unit in UNITS:
        (unit_dir / unit).write_text(unit_text(unit))
    _write_vm_units(st, services)
    (sdir / "machine-id").write_text(st["machine_id"] + "\n")
    _make_private_etc(sdir / "etc")
    for d in ("upper", "work"):  # /var/lib copy-on-write too (see pid1._init)
        (sdir / "varlib" / d).mkdir(parents=True)
    (sdir / "containers").mkdir()  # podman's default storage inside (see pid1._init)


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


# --- internals: boot -----------------------------------------------------------------------------


def _make_private_etc(etc: Path) -> None:
    """The upper and work dirs of the instance's copy-on-write /etc. Its systemd/system is opaque:
    the instance sees an empty /etc/systemd/system, not the host's enabled units. podman inside
    gets a drop-in that lets it run containers there (PODMAN_CONF)."""
    if any(c in str(etc) for c in ",:\\"):
        raise SandboxError(f"{etc}: the sandbox state dir must not contain ',', ':' or '\\' (overlay options)")
    (etc / "work").mkdir(parents=True)
    opaque = etc / "upper" / "systemd" / "system"
    opaque.mkdir(parents=True)
    os.setxattr(opaque, "trusted.overlay.opaque", b"y")
    journald = etc / "upper" / "systemd" / "journald.conf.d"
    journald.mkdir()
    (journald / "sdqos-sandbox.conf").write_text(JOURNALD_CONF)
    podman = etc / "upper" / "containers" / "containers.conf.d"
    podman.mkdir(parents=True)
    (podman / "sdqos-sandbox.conf").write_text(PODMAN_CONF)


def _stage_cmd(stage: str, sdir: Path, *extra: str) -> list[str]:
    # PYTHONPATH (see _stage_env) points at this copy of sdqos; keep sdqos/__init__.py light:
    # both stages import it
    return [sys.executable, "-m", "sdqos.sandbox", stage, str(sdir), *extra]


def _stage_env() -> dict[str, str]:
    pkg_parent = str(Path(__file__).resolve().parents[2])  # the dir holding sdqos/ (this is sdqos/sandbox/boot.py)
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


def _wait_exit_record(sdir: Path, deadline: float) -> None:
    while not (sdir / "exited").exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _wait_ready(sb: Sandbox, sdir: Path, t0: float, timeout: float) -> None:
    """Wait until org.freedesktop.systemd1 is on the instance's bus and done starting up."""
    last = "bus socket not there yet"
    while True:
        _check_exited(sb.name, sdir)
        if not _pid_exists(sb.pid):
            # The supervisor drains the console and then writes `exited`: wait for it, so the
            # error carries what systemd printed last (the console tail), not an empty log.
            _wait_exit_record(sdir, time.monotonic() + 3.0)
            _check_exited(sb.name, sdir)
            raise SandboxError(f"sandbox {sb.name}: systemd (pid {sb.pid}) died during boot")
        if (sb.run_dir / "dbus" / "system_bus_socket").exists():
            try:
                state = _manager_properties(sb.bus_address, "SystemState", timeout=2.0)["SystemState"]
                if state in ("running", "degraded"):
                    return
                last = f"systemd is on the bus, SystemState={state}"
            except ToolMissing:
                raise
            except SandboxError as e:
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
        raise ToolMissing("busctl not found (Debian package systemd)") from None
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
