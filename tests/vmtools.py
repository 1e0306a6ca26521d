"""VM workloads inside a sandbox (sdqos.sandbox), for tests: real qemu guests, scopes made exactly
as systemd-machined makes them, and (opt-in sandbox services) machined and libvirt themselves.

The guest. ``qemu-system-x86_64`` with TCG (no KVM needed, none used), no disk, no NIC, no
display, 64 MiB, booting `HALT_KERNEL`: a 36-byte multiboot image that runs ``cli; hlt``.
SeaBIOS hands over to it within ~0.1-0.3 s and the vCPU then halts for good: a *running* guest
(QMP ``query-status`` says ``running``) that costs ~0.1-0.3 % of a CPU, where SeaBIOS idling at
"No bootable device" costs ~1-4 % and ``-S`` (never started, status ``prelaunch``) costs 0.
Every file lives in the instance's /run (host: ``sb.run_dir/sdqos/vm``): nothing lands on the
shared file system.

PIDs. systemd resolves the PIDs of ``StartTransientUnit(PIDs=...)`` in *its* PID namespace, so the
helpers work with the PID as seen inside the sandbox (``inner_pid``): qemu writes it to its
``-pidfile`` inside, the host side reads that file, and cross-checks it against the last
``NSpid`` field of the host process (the child of the ``nsenter`` that `start_qemu` returns).
A qemu started by `start_qemu` sits in the caller's cgroups until a scope takes it in; with
``before_exec`` the scope is made before qemu runs at all, as libvirt does (see `start_qemu`).

Always stop what you start: `stop_qemu` (or the `running_qemu` context manager) SIGKILLs the qemu
and reaps its nsenter; `libvirt_destroy_domain` for libvirt domains. Whatever is left dies with
the sandbox (its PID namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from sdqos import sandbox as sbx
from sdqos.host.systemd import Systemd
from sdqos.kube.naming import MACHINE_SLICE, machine_scope

QEMU = "qemu-system-x86_64"
INNER_DIR = "/run/sdqos/vm"  # inside the sandbox; host: sb.run_dir / "sdqos" / "vm"
MACHINED = "org.freedesktop.machine1"
MACHINED_PATH = "/org/freedesktop/machine1"
MACHINED_MANAGER = MACHINED + ".Manager"
MACHINE_TASKS_MAX = 16384  # machined's TasksMax for every machine scope
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,23}")  # file names; the QMP socket path must fit 108 bytes
_DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # libvirt shortens its own socket paths
_MACHINE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # what machined accepts (hostname characters)


def _halt_kernel() -> bytes:
    """A multiboot (v1) image with the address fields (flag bit 16), so that no ELF is needed:
    loaded at 1 MiB, entry right after the 32-byte header: ``cli; hlt; jmp back to hlt``."""
    magic, flags, base = 0x1BADB002, 0x00010000, 0x100000
    header = struct.pack("<8I", magic, flags, -(magic + flags) & 0xFFFFFFFF, base, base, 0, 0, base + 32)
    return header + bytes([0xFA, 0xF4, 0xEB, 0xFD])


HALT_KERNEL = _halt_kernel()
HALT_EIP = 0x100022  # where the vCPU halts: after the `hlt` at 1 MiB + 32 + 1


# --- availability ----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def qemu_available() -> str | None:
    """Why no qemu guest can be started here (None: it can)."""
    exe = shutil.which(QEMU, path=os.environ.get("PATH", "") + ":/usr/bin:/usr/local/bin")
    if exe is None:
        return f"{QEMU} not found (Debian package qemu-system-x86)"
    try:
        cp = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{exe} -version failed: {e}"
    if cp.returncode != 0:
        return f"{exe} -version exited {cp.returncode}: {cp.stderr.strip()[-300:]}"
    return None


def machined_available() -> str | None:
    """Why a sandbox cannot run systemd-machined here (None: it can)."""
    problems = sbx.missing_vm_prerequisites(machined=True)
    return "; ".join(problems) or None


def libvirt_available() -> str | None:
    """Why a sandbox cannot run libvirtd with qemu domains here (None: it can)."""
    problems = sbx.missing_vm_prerequisites(libvirt=True) + ([qemu_available()] if qemu_available() else [])
    return "; ".join(dict.fromkeys(problems)) or None


def need(reason: str | None) -> None:
    """Skip the test for ``reason`` (one of the above); with SDQOS_REQUIRE_VM=1 (CI) fail it instead."""
    if reason:
        if os.environ.get("SDQOS_REQUIRE_VM") == "1":
            pytest.fail(reason + " (SDQOS_REQUIRE_VM=1)", pytrace=False)
        pytest.skip(reason)


# --- qemu ------------------------------------------------------------------------------------------


def qemu_argv(name: str, memory_mib: int = 64, *, paused: bool = False, inner_dir: str = INNER_DIR) -> list[str]:
    """The qemu command line (paths as seen inside the sandbox)."""
    argv = [
        QEMU, "-name", name,
        "-machine", "pc,accel=tcg", "-cpu", "qemu64", "-smp", "1", "-m", str(memory_mib),
        "-nodefaults", "-no-user-config", "-display", "none", "-serial", "none", "-parallel", "none",
        "-monitor", "none", "-no-reboot",
        "-kernel", f"{inner_dir}/halt.bin",
        "-pidfile", f"{inner_dir}/{name}.pid",
        "-qmp", f"unix:{inner_dir}/{name}.qmp,server=on,wait=off",
    ]
    return argv + (["-S"] if paused else [])


def vm_dir(sb: sbx.Sandbox) -> Path:
    """Host path of the helpers' dir in the sandbox's /run (created, with the halt kernel)."""
    d = sb.run_dir / INNER_DIR.removeprefix("/run/")
    d.mkdir(parents=True, exist_ok=True)
    kernel = d / "halt.bin"
    if not kernel.exists():
        tmp = d / "halt.bin.tmp"
        tmp.write_bytes(HALT_KERNEL)
        os.replace(tmp, kernel)
    return d


# Holds the process before it execs qemu: writes its PID, waits for a line on the fifo, then
# execs (same PID). `start_qemu(before_exec=...)` creates the scope in between, as libvirt does
# (its child waits for a handshake while libvirt has machined create the scope, then execs qemu).
_HOLD = 'p=$1; shift; echo $$ > "$p.hold" && read go < "$p.go" && [ "$go" = go ] && exec "$@"'


def start_qemu(sb: sbx.Sandbox, name: str, memory_mib: int = 64, *, paused: bool = False,
               before_exec: Callable[[int], Any] | None = None, wait_halted: bool = True,
               timeout: float = 30.0) -> tuple[subprocess.Popen, int]:
    """Start a qemu guest inside the sandbox and wait until QMP reports it running (``prelaunch``
    when `paused`) and, with `wait_halted`, until its vCPU has reached the halt kernel's ``hlt``
    (SeaBIOS takes ~0.1-0.3 s to get there, busy all the while). Returns the Popen (of the host's
    nsenter, whose child is qemu) and qemu's PID as seen inside the sandbox. Stop it with
    `stop_qemu`.

    Without `before_exec`, qemu starts in the caller's cgroups and a scope created afterwards
    (`machined_style_scope`) moves it: on cgroup v1 the memory it charged until then (~20-40 MiB)
    stays with the caller's memory cgroup (charges do not move). With `before_exec(inner_pid)`,
    the process is held before it execs qemu and the callback runs then (e.g.
    ``lambda pid: machined_style_scope(sb, "qemu-1-x", pid)``): everything qemu does is
    accounted in the scope, as with libvirt."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"qemu name {name!r}: use 1-24 of [A-Za-z0-9_.-]")
    d = vm_dir(sb)
    for suffix in (".pid", ".qmp", ".log", ".hold", ".go"):
        with contextlib.suppress(FileNotFoundError):
            (d / f"{name}{suffix}").unlink()
    argv = qemu_argv(name, memory_mib, paused=paused)
    if before_exec is not None:
        os.mkfifo(d / f"{name}.go", 0o600)
        argv = ["/bin/sh", "-c", _HOLD, "sh", f"{INNER_DIR}/{name}", *argv]
    with open(d / f"{name}.log", "wb") as log:
        p = sbx.popen(sb, argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd="/")
    log_path = d / f"{name}.log"
    try:
        deadline = time.monotonic() + timeout
        if before_exec is not None:
            held = _wait_pidfile(p, d / f"{name}.hold", log_path, deadline)
            before_exec(held)
            _release(d / f"{name}.go", p, deadline)
        inner = _wait_pidfile(p, d / f"{name}.pid", log_path, deadline)
        host = qemu_host_pid(p)
        if host is None or _nspid(host) != inner or (before_exec is not None and inner != held):
            raise RuntimeError(f"qemu {name}: pidfile says {inner}, but nsenter's child is {host} "
                               f"(inner {host and _nspid(host)})")
        want = "prelaunch" if paused else "running"
        while True:
            status = qmp_status(sb, name)
            if status == want and (paused or not wait_halted or guest_halted(sb, name)):
                return p, inner
            if p.poll() is not None:
                raise RuntimeError(f"qemu {name} exited {p.returncode}: {_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"qemu {name}: QMP status {status!r}, not {want!r} after {timeout:g}s")
            time.sleep(0.02)
    except BaseException:
        stop_qemu(p)
        raise


def guest_halted(sb: sbx.Sandbox, name: str) -> bool:
    """Whether qemu `name`'s vCPU sits halted in the halt kernel (after its ``hlt``)."""
    regs = qmp(sb, name, "human-monitor-command", {"command-line": "info registers"})
    return "HLT=1" in regs and f"EIP={HALT_EIP:08x}" in regs


def _release(fifo: Path, p: subprocess.Popen, deadline: float) -> None:
    """Write "go" to the held shell's fifo once it has opened it for reading."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"held process did not wait on {fifo} (exited: {p.returncode})")
        time.sleep(0.005)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def _wait_pidfile(p: subprocess.Popen, pidfile: Path, log: Path, deadline: float) -> int:
    while True:
        try:
            text = pidfile.read_text().strip()
            if text:
                return int(text)
        except (FileNotFoundError, ValueError):
            pass
        if p.poll() is not None:
            raise RuntimeError(f"qemu exited {p.returncode} before writing its pidfile: {_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"qemu wrote no pidfile {pidfile} in time: {_tail(log)}")
        time.sleep(0.01)


def _tail(path: Path, n: int = 600) -> str:
    try:
        return path.read_text(errors="replace").strip()[-n:] or "(no output)"
    except OSError:
        return "(no output)"


def qemu_host_pid(p: subprocess.Popen) -> int | None:
    """Host PID of the qemu that `start_qemu` started (nsenter's child), None once it is gone."""
    try:
        kids = Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()
    except OSError:  # nsenter gone (or no CONFIG_PROC_CHILDREN: scan for it)
        kids = [str(q) for q in _pids() if _ppid(q) == p.pid]
    for k in kids:
        if _alive(int(k)):
            return int(k)
    return None


def stop_qemu(p: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGKILL the qemu of `p` and reap `p` (idempotent). Its scope, if any, then empties and
    systemd collects it."""
    host = qemu_host_pid(p) if p.poll() is None else None
    if host is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(host, signal.SIGKILL)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout)


@contextlib.contextmanager
def running_qemu(sb: sbx.Sandbox, name: str, memory_mib: int = 64, **kw: Any) -> Iterator[tuple[subprocess.Popen, int]]:
    """`start_qemu` that always ends in `stop_qemu`."""
    p, inner = start_qemu(sb, name, memory_mib, **kw)
    try:
        yield p, inner
    finally:
        stop_qemu(p)


def qmp(sb: sbx.Sandbox, name: str, command: str, arguments: Mapping[str, Any] | None = None,
        timeout: float = 5.0) -> Any:
    """One QMP command to qemu `name` of `start_qemu` (a fresh connection each time); its
    ``return`` value. RuntimeError on a QMP error, OSError if the socket is not there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sb.run_dir / INNER_DIR.removeprefix("/run/") / f"{name}.qmp"))
        f = s.makefile("rw", encoding="utf-8")
        f.readline()  # greeting
        call: dict[str, Any] = {"execute": command, **({"arguments": dict(arguments)} if arguments else {})}
        for cmd in ({"execute": "qmp_capabilities"}, call):
            f.write(json.dumps(cmd) + "\n")
            f.flush()
            while True:
                line = f.readline()
                if not line:
                    raise OSError(f"qemu {name}: QMP connection closed")
                msg = json.loads(line)
                if "error" in msg:
                    raise RuntimeError(f"qemu {name}: QMP {cmd['execute']}: {msg['error']}")
                if "return" in msg:
                    break  # anything else is an event
        return msg["return"]


def qmp_status(sb: sbx.Sandbox, name: str) -> str | None:
    """qemu's run state, or None while its QMP socket is not there or not accepting yet (qemu
    writes its pidfile before it creates the socket)."""
    try:
        return qmp(sb, name, "query-status")["status"]
    except OSError:
        return None


# --- scopes as machined makes them -----------------------------------------------------------------


def machined_scope_properties(machine_name: str, inner_pid: int, *, add_ref: bool = True) -> dict[str, Any]:
    """What systemd-machined 252 sends with StartTransientUnit (src/machine/machined-dbus.c,
    manager_start_scope), before the properties of CreateMachine's caller; mode "fail"."""
    props: dict[str, Any] = {
        "Slice": MACHINE_SLICE,
        "Description": f"Virtual Machine {machine_name}",  # "Container ..." for class container
        "PIDs": [inner_pid],
        "Delegate": True,
        "CollectMode": "inactive-or-failed",
        # AddRef ties the unit to the creator's bus connection (GC only; ours closes at once)
        **({"AddRef": True} if add_ref else {}),
        "TasksMax": MACHINE_TASKS_MAX,
    }
    return props


def machined_style_scope(sb: sbx.Sandbox, machine_name: str, inner_pid: int, *,
                         extra: Mapping[str, Any] | None = None, add_ref: bool = True) -> str:
    """Create ``machine-<escaped machine_name>.scope`` for `inner_pid` (a PID inside the sandbox)
    exactly as systemd-machined does, through the sandbox's bus; `extra` plays the properties
    libvirt passes to CreateMachine (e.g. ``{"After": ["libvirtd.service"]}``). Returns the unit
    name once its start job is done."""
    if not _MACHINE_NAME.fullmatch(machine_name):
        raise ValueError(f"machine name {machine_name!r}: machined takes 1-64 of [A-Za-z0-9_.-]")
    unit = machine_scope(machine_name)
    props = {**machined_scope_properties(machine_name, inner_pid, add_ref=add_ref), **(extra or {})}

    async def create() -> None:
        async with Systemd(sb.bus_address) as sd:
            await sd.start_transient_unit(unit, props, mode="fail")

    asyncio.run(create())
    return unit


# --- the real machined and libvirt (sandbox booted with machined=True / libvirt=True) --------------


def _busctl(sb: sbx.Sandbox, *args: str, timeout: float = 30.0) -> list[Any]:
    """busctl from the host against the sandbox's bus: one `data` per output line (`call`: one
    list of return values; `get-property`: one value per property)."""
    cp = subprocess.run(["busctl", f"--address={sb.bus_address}", "--json=short", f"--timeout={timeout}", *args],
                        capture_output=True, text=True, timeout=timeout + 10)
    if cp.returncode != 0:
        raise RuntimeError(f"busctl {' '.join(args[:4])}: {cp.stderr.strip()}")
    return [json.loads(ln)["data"] for ln in cp.stdout.splitlines() if ln.strip()]


def _require(sb: sbx.Sandbox, unit: str, flag: str) -> None:
    if not (sb.unit_dir / unit).exists():
        raise RuntimeError(f"sandbox {sb.name} has no {unit}: boot it with sdqos.sandbox.up(name, {flag}=True)")


def machine_info(sb: sbx.Sandbox, *, machine_name: str | None = None, inner_pid: int | None = None) -> dict[str, Any]:
    """machined's record of a machine, by name or by a PID inside it: Name, Unit, Leader, Class, Service."""
    if machine_name is not None:
        ((path,),) = _busctl(sb, "call", MACHINED, MACHINED_PATH, MACHINED_MANAGER, "GetMachine", "s", machine_name)
    else:
        ((path,),) = _busctl(sb, "call", MACHINED, MACHINED_PATH, MACHINED_MANAGER, "GetMachineByPID", "u",
                             str(inner_pid))
    names = ("Name", "Unit", "Leader", "Class", "Service")
    values = _busctl(sb, "get-property", MACHINED, path, MACHINED + ".Machine", *names)
    return dict(zip(names, values))


def machined_create_machine(sb: sbx.Sandbox, machine_name: str, inner_pid: int, *, service: str = "sdqos-test",
                            scope_properties: Mapping[str, str] | None = None) -> str:
    """Register `inner_pid` with the sandbox's real systemd-machined (CreateMachine, class vm), which
    creates the scope; returns the scope's name. `scope_properties`: string-valued extras."""
    _require(sb, "systemd-machined.service", "machined")
    extras: list[str] = [str(len(scope_properties or {}))]
    for k, v in (scope_properties or {}).items():
        extras += [k, "s", v]
    _busctl(sb, "call", MACHINED, MACHINED_PATH, MACHINED_MANAGER, "CreateMachine", "sayssusa(sv)",
            machine_name, "0", service, "vm", str(inner_pid), "", *extras)
    return machine_info(sb, machine_name=machine_name)["Unit"]


@dataclass(frozen=True)
class Domain:
    """A libvirt domain running in a sandbox."""

    name: str
    id: int  # libvirt's domain id: the machine is qemu-<id>-<name>
    machine: str  # machined's machine name
    scope: str  # its unit: machine-qemu\x2d<id>\x2d<name>.scope
    inner_pid: int  # qemu's PID inside the sandbox
    uuid: str | None = None  # given by libvirt_define_domain (virsh reads a numeric name as an id)


def domain_xml(name: str, memory_mib: int = 64, inner_dir: str = INNER_DIR, partition: str | None = None) -> str:
    """A transient TCG domain: no disk, no NIC, no display, the halt kernel as its OS; in a
    libvirt resource partition (``/machine/tenant1``) when given."""
    from xml.sax.saxutils import escape

    resource = f"\n  <resource><partition>{escape(partition)}</partition></resource>" if partition else ""
    return f"""<domain type='qemu'>
  <name>{escape(name)}</name>
  <memory unit='MiB'>{memory_mib}</memory>
  <vcpu>1</vcpu>{resource}
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{inner_dir}/halt.bin</kernel>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/{QEMU}</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
"""


def virsh(sb: sbx.Sandbox, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``virsh -c qemu:///system ARGS`` inside the sandbox."""
    return sb.run(["virsh", "-q", "-c", "qemu:///system", *args], check=check, timeout=timeout)


def libvirt_start_domain(sb: sbx.Sandbox, name: str, memory_mib: int = 64, *, timeout: float = 60.0,
                         partition: str | None = None) -> Domain:
    """``virsh create`` a transient domain `name` in a sandbox booted with ``libvirt=True``; libvirtd
    starts qemu and registers it with machined, which creates its scope. Returns what machined
    recorded. Destroy it with `libvirt_destroy_domain`."""
    if not _DOMAIN_NAME.fullmatch(name):
        raise ValueError(f"domain name {name!r}: use 1-100 of [A-Za-z0-9_.-]")
    _require(sb, "libvirtd.service", "libvirt")
    d = vm_dir(sb)
    (d / f"{name}.xml").write_text(domain_xml(name, memory_mib, partition=partition))
    virsh(sb, "create", f"{INNER_DIR}/{name}.xml", timeout=timeout)
    try:
        dom_id = int(virsh(sb, "domid", name).stdout.strip())
        inner = int((sb.run_dir / "libvirt" / "qemu" / f"{name}.pid").read_text().strip())
        info = machine_info(sb, inner_pid=inner)
        return Domain(name=name, id=dom_id, machine=info["Name"], scope=info["Unit"], inner_pid=inner)
    except BaseException:
        libvirt_destroy_domain(sb, name)
        raise


def libvirt_destroy_domain(sb: sbx.Sandbox, name: str) -> None:
    """``virsh destroy`` (idempotent: a domain that is not there is fine)."""
    cp = virsh(sb, "destroy", name, check=False)
    if cp.returncode != 0 and "failed to get domain" not in cp.stderr and "not running" not in cp.stderr:
        raise RuntimeError(f"virsh destroy {name}: {cp.stderr.strip()}")


def libvirt_define_domain(sb: sbx.Sandbox, name: str, memory_mib: int = 64, *, timeout: float = 60.0) -> Domain:
    """``virsh define`` then ``start`` a persistent domain `name` (any name libvirt takes, e.g. one
    starting with ``--``), so that it outlives its QEMU and ``virsh domstate --reason`` says how it
    ended. It is given a UUID, by which virsh is told which domain (``--domain=UUID``: a name such
    as ``3`` would be read as the id of another). Remove it with `libvirt_remove_domain`."""
    import uuid as uuidlib

    _require(sb, "libvirtd.service", "libvirt")
    uuid = str(uuidlib.uuid4())
    d = vm_dir(sb)
    (d / "define.xml").write_text(domain_xml(name, memory_mib).replace("</name>", f"</name>\n  <uuid>{uuid}</uuid>", 1))
    virsh(sb, "define", f"--file={INNER_DIR}/define.xml", timeout=timeout)
    try:
        virsh(sb, "start", f"--domain={uuid}", timeout=timeout)
        dom_id = int(virsh(sb, "domid", f"--domain={uuid}").stdout.strip())
        inner = int((sb.run_dir / "libvirt" / "qemu" / f"{name}.pid").read_text().strip())
        info = machine_info(sb, inner_pid=inner)
        return Domain(name=name, id=dom_id, machine=info["Name"], scope=info["Unit"], inner_pid=inner, uuid=uuid)
    except BaseException:
        libvirt_remove_domain(sb, uuid)
        raise


def libvirt_remove_domain(sb: sbx.Sandbox, uuid: str) -> None:
    """``virsh destroy`` and ``undefine`` a domain of `libvirt_define_domain` (idempotent)."""
    virsh(sb, "destroy", f"--domain={uuid}", check=False)
    virsh(sb, "undefine", f"--domain={uuid}", check=False)


def domstate(sb: sbx.Sandbox, domain: str) -> str:
    """``virsh domstate --reason`` of a domain (its UUID, or a name that is not a number): e.g.
    "shut off (destroyed)", "shut off (crashed)", "running (booted)"."""
    return virsh(sb, "domstate", "--reason", f"--domain={domain}").stdout.strip()


# --- /proc -----------------------------------------------------------------------------------------


def _nspid(host_pid: int) -> int | None:
    """`host_pid` as seen in its innermost PID namespace."""
    try:
        for ln in Path(f"/proc/{host_pid}/status").read_text().splitlines():
            if ln.startswith("NSpid:"):
                return int(ln.split()[-1])
    except OSError:
        pass
    return None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def host_pid(sb: sbx.Sandbox, inner_pid: int) -> int | None:
    """The host PID of the sandbox's process `inner_pid` (None: no such process)."""
    try:
        ns = os.readlink(f"/proc/{sb.pid}/ns/pid")
    except OSError:
        return None
    for pid in _pids():
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/ns/pid") == ns and _nspid(pid) == inner_pid:
                return pid
    return None
