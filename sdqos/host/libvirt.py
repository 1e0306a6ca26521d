"""libvirt's own record of its running QEMU domains: ``/run/libvirt/qemu/<name>.xml``.

libvirtd writes a status XML for every running domain (``<domstatus pid=…>`` around the live
``<domain>``) and removes it when the domain stops. It names the domain as the operator wrote it,
gives qemu's PID (which finds the scope whatever machined made of the name: machined drops
characters and cuts at 64, and a ``<resource><partition>`` puts the scope in a sub-slice), the
guest's RAM and vCPUs. Read only; a file that is not root's, or is writable by others, is not
trusted (it could point sdqos at any process).

A record outlives its domain when libvirtd is down while the guest ends (or is killed with it),
and its PID may then be another process's. So a record counts only while its PID is that
domain's QEMU: a process with ``-name guest=<domain>`` on its command line, started before the
record was last written. Otherwise sdqos would tune (and count) whatever scope now holds the PID.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

RUN_DIR = Path("/run/libvirt/qemu")
URI = "qemu:///system"  # the libvirtd whose records RUN_DIR holds
VIRSH_TIMEOUT_S = 30.0  # destroy waits up to 10 s for QEMU to end on SIGTERM before its SIGKILL
MAX_STATUS_BYTES = 4 << 20  # a status XML is a few KiB; a larger file is not libvirt's
UNITS = {"b": 1, "bytes": 1, "kb": 1000, "k": 1024, "kib": 1024, "mb": 10**6, "m": 2**20, "mib": 2**20,
         "gb": 10**9, "g": 2**30, "gib": 2**30, "tb": 10**12, "t": 2**40, "tib": 2**40}


@dataclass(frozen=True, slots=True)
class Domain:
    """A running domain as libvirt records it."""

    name: str
    pid: int
    memory: int  # bytes: <memory>, the guest's maximum RAM at boot
    vcpus: int
    partition: str | None  # <resource><partition>, e.g. /machine/tenant1
    id: int | None = None
    uuid: str | None = None  # <uuid>: what virsh is given to stop it (see virsh_argv)


def _bytes(el: ET.Element | None) -> int:
    text = (el.text or "").strip() if el is not None else ""
    if el is None or not text:
        return 0
    return int(text) * UNITS.get(el.get("unit", "KiB").lower(), 1024)


def parse_status(text: str) -> Domain | None:
    """One status XML → its domain; None when it is not a running domain's status."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    dom = root.find("domain") if root.tag == "domstatus" else None
    if dom is None or not (root.get("pid") or "").isdigit():
        return None
    name = (dom.findtext("name") or "").strip()
    if not name:
        return None
    vcpu = dom.find("vcpu")
    try:
        return Domain(
            name=name,
            pid=int(root.get("pid", "")),
            memory=_bytes(dom.find("memory")),
            vcpus=int((vcpu.text or "1").strip()) if vcpu is not None else 1,
            partition=(dom.findtext("resource/partition") or "").strip() or None,
            id=int(dom.get("id", "")) if (dom.get("id") or "").lstrip("-").isdigit() else None,
            uuid=_uuid(dom.findtext("uuid")),
        )
    except ValueError:
        return None


def _uuid(text: str | None) -> str | None:
    """A domain's ``<uuid>`` as libvirt writes it (8-4-4-4-12 hex digits); None otherwise."""
    import re

    text = (text or "").strip().lower()
    return text if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", text) else None


def qemu_options(value: str) -> list[str]:
    """A QEMU option value split at single commas (``,,`` is a literal comma, as QEMU reads it)."""
    out, cur, i = [], [], 0
    while i < len(value):
        if value[i] == ",":
            if value[i + 1:i + 2] == ",":
                cur.append(",")
                i += 2
                continue
            out.append("".join(cur))
            cur = []
        else:
            cur.append(value[i])
        i += 1
    out.append("".join(cur))
    return out


def guest_name(argv: list[str]) -> str | None:
    """The guest name a QEMU command line gives (``-name guest=NAME,…`` or ``-name NAME``)."""
    for i, arg in enumerate(argv[:-1]):
        if arg in ("-name", "--name"):
            opts = qemu_options(argv[i + 1])
            for o in opts:
                if o.startswith("guest="):
                    return o[len("guest="):]
            return opts[0] if opts and "=" not in opts[0] else None
    return None


def _start_time(pid: int, proc: Path) -> float | None:
    """When ``pid`` started, in seconds since the epoch (from /proc: boot time + start ticks)."""
    try:
        stat_line = (proc / str(pid) / "stat").read_text()
        ticks = int(stat_line.rsplit(")", 1)[1].split()[19])
        btime = next(int(ln.split()[1]) for ln in (proc / "stat").read_text().splitlines() if ln.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def stale_reason(dom: Domain, written: float, proc: Path = Path("/proc")) -> str | None:
    """Why a status record's PID is not (or no longer) its domain's QEMU; None when it is."""
    return process_stale_reason(dom.pid, dom.name, written, proc, qemu=True)


def process_stale_reason(pid: int, guest: str | None, written: float, proc: Path = Path("/proc"), *,
                         qemu: bool) -> str | None:
    """Why ``pid``, as a record written at ``written`` (libvirt's status XML, a VM's pid file) names
    it, is not that record's process; None when it is. The process must exist and have started
    before the record was last written (a PID reused after the record's process ended started
    later), and run the guest the record is for: with ``qemu``, a QEMU with ``-name guest``;
    otherwise any process, but a QEMU naming another guest is not it."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "no such process"
    argv = [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0") if a]
    name = guest_name(argv)
    if (qemu or name is not None) and name != guest:
        return "that process is not its QEMU" + (f" (it runs guest {name!r})" if name else "")
    started = _start_time(pid, proc)
    if started is not None and started > written + 2.0:  # btime has whole seconds
        return "that process started after the record was written"
    return None


def running_domains(run_dir: Path = RUN_DIR, warnings: list[str] | None = None,
                    proc: Path = Path("/proc")) -> dict[str, Domain]:
    """Every running domain libvirt records, by name (none when libvirt is not there); a record
    whose PID is not its domain's QEMU is ignored, with a warning."""
    out: dict[str, Domain] = {}
    try:
        entries = sorted(e for e in os.listdir(run_dir) if e.endswith(".xml"))
    except OSError:
        return out
    for entry in entries:
        path = run_dir / entry
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # removed meanwhile (the domain stopped), or a symlink
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()) \
                    or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                if warnings is not None:
                    warnings.append(f"{path} is not libvirt's (owner or mode): ignored")
                continue
            data = fh.read(MAX_STATUS_BYTES + 1)
        if len(data) > MAX_STATUS_BYTES:
            continue
        dom = parse_status(data.decode("utf-8", "replace"))
        if dom is None:
            continue
        why = stale_reason(dom, st.st_mtime, proc)
        if why is not None:
            if warnings is not None:
                warnings.append(f"{path} names PID {dom.pid} for domain {dom.name}, but {why} (libvirtd down, or "
                                "the guest gone): ignored, and that process's scope is not tuned as the VM")
            continue
        out[dom.name] = dom
    return out


# --- stopping a domain through libvirt (eviction) --------------------------------------------------


def virsh_argv(verb: str, domain: str) -> list[str]:
    """virsh's command line for a domain verb (``destroy``, ``shutdown``): the domain is the value
    of ``--domain=`` in one word, so whatever it holds (a name starting with ``--``) is never an
    option. Give it the domain's UUID: virsh looks a ``--domain`` up as an id first, then a UUID,
    then a name, so a domain named ``1`` would be read as the domain whose id is 1."""
    return ["virsh", "--quiet", "--connect", URI, verb, f"--domain={domain}"]


def virsh(verb: str, domain: str, timeout: float = VIRSH_TIMEOUT_S) -> None:
    """Run one domain verb (see :func:`virsh_argv`); a virsh that is missing, fails or hangs is a
    HostError with virsh's own message."""
    import shutil
    import subprocess

    from sdqos.errors import HostError

    argv = virsh_argv(verb, domain)
    exe = shutil.which(argv[0])
    if exe is None:
        raise HostError("virsh not found (Debian package libvirt-clients)")
    try:
        cp = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout, check=False,
                            stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostError(f"virsh {verb} did not finish within {timeout:g}s") from None
    except OSError as exc:
        raise HostError(f"virsh {verb}: {exc}") from None
    if cp.returncode != 0:
        why = " ".join(ln.removeprefix("error: ") for ln in cp.stderr.strip().splitlines()) or f"exit {cp.returncode}"
        raise HostError(f"virsh {verb} failed: {why}")
