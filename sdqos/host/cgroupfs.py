"""What the kernel holds for a unit's cgroup, and what a unit's properties must make it hold.

Used as the fast path of a warm sync: reading a few small cgroupfs files per unit costs a
fraction of a D-Bus ``GetAll`` (which makes systemd compute every counter of the unit), and the
kernel's values are what actually enforces QoS. A unit whose kernel values match what its planned
properties produce is in sync; any other is read over D-Bus as usual. Reads only — sdqos never
writes cgroupfs — and only where this process sees systemd's own cgroup tree (same mount and
cgroup namespaces as PID 1, and PID 1 is systemd), so it can never read someone else's tree.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from sdqos.kube.naming import cgroup_path as cgroup_of  # a unit's cgroup, as systemd nests slices
from sdqos.plan import properties as P
from sdqos.plan.properties import ANY_PERIOD

ROOT = Path("/sys/fs/cgroup")
CPU_LIST = "cpuset.cpus"  # the one file holding a CPU list (AllowedCPUs)


def available(proc: Path = Path("/proc"), root: Path = ROOT) -> bool:
    """Whether this process sees the cgroup tree of the systemd it talks to: PID 1 is systemd, and
    PID 1's own cgroup, as this process's cgroup namespace names it (``/proc/1/cgroup``: systemd's
    hierarchy on v1, the one tree on v2), is a cgroup of the tree mounted here that holds PID 1 —
    true on a systemd host, inside `sdqos sandbox exec` and in the shipped service; false when
    pointing --bus-address at a systemd elsewhere (another cgroup namespace names PID 1's cgroup
    with "..", another mount of the tree does not hold it). Not by comparing the ``/proc/1/ns``
    links, which takes CAP_SYS_PTRACE: the hardened service has not got it, and so never read
    the kernel."""
    try:
        if (proc / "1" / "comm").read_text().strip() != "systemd":
            return False
        paths: dict[str, str] = {}
        for line in (proc / "1" / "cgroup").read_text().splitlines():
            _, _, rest = line.partition(":")
            controllers, _, path = rest.partition(":")
            paths[controllers] = path
        hierarchy = "systemd" if "name=systemd" in paths else ""
        found = paths.get("name=systemd" if hierarchy else "")
        if found is None or not found.startswith("/") or "/.." in found:
            return False
        procs = root / hierarchy / found.strip("/") / "cgroup.procs"
        return "1" in procs.read_text().split()
    except (OSError, UnicodeDecodeError):
        return False


def populated(cgroup: str, root: Path = ROOT) -> bool | None:
    """Whether any process runs in ``cgroup`` or below it: the ``populated`` line of its
    cgroup.events in the cgroup-v2 tree systemd tracks processes in (/sys/fs/cgroup itself, or
    /sys/fs/cgroup/unified on a hybrid host). False also when systemd has no cgroup there; None on
    a host without that tree (legacy v1: ask systemd)."""
    rel = cgroup.strip("/")
    for base in (f"{root}/unified", str(root)):
        if not os.path.exists(f"{base}/cgroup.controllers"):
            continue
        try:
            fd = os.open(f"{base}/{rel}/cgroup.events", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False if not os.path.isdir(f"{base}/{rel}") else None
        except OSError:
            return None
        try:
            for line in os.read(fd, 256).decode().splitlines():
                key, _, value = line.partition(" ")
                if key == "populated":
                    return value.strip() != "0"
        except OSError:
            pass
        finally:
            os.close(fd)
        return None
    return None


def expected(props: dict[str, int], mode: str, page: int = 4096) -> dict[str, object] | None:
    """Kernel file → value a unit with these properties has (each property's row in
    ``plan/properties.py`` names its file and converts). None: properties we cannot predict."""
    return P.kernel_files(props, mode, page)


def unit_expected(props: dict[str, int], mode: str, page: int = 4096) -> dict[str, object] | None:
    """:func:`expected` for a unit sdqos manages: a CPU period its properties leave unset is
    systemd's default (the live read, the no-op stamp and the prefetch child all check it so)."""
    check = dict(props)
    check.setdefault(P.PERIOD_PROPERTY, P.INFINITY)
    return expected(check, mode, page)


def held_expected(planned: Mapping[str, int], held: Mapping[str, int], mode: str,
                  page: int = 4096) -> dict[str, object] | None:
    """:func:`expected` for a unit read over D-Bus, whose properties systemd reported (``held``):
    the planned values of the properties systemd has, with the CPU period systemd holds where
    the quota's files depend on it (a reserved cgroup's period is not sdqos's)."""
    check = {k: v for k, v in planned.items() if k in held}
    if P.PERIOD_PROPERTY in check or P.QUOTA_PROPERTY in check:
        check.setdefault(P.PERIOD_PROPERTY, held.get(P.PERIOD_PROPERTY, P.INFINITY))
    return expected(check, mode, page) if check else None


def _parse(file: str, text: str) -> object:
    text = text.strip()
    if file.endswith(CPU_LIST):  # a CPU list ("0-1,3"), in its canonical form; "" for none
        return P.cpu_list(text)
    if file.endswith("cpu.max"):
        quota, _, period = text.partition(" ")
        return ("max" if quota == "max" else int(quota), int(period))
    if text == "max":
        return "max"
    return int(text)


def rendered(want: dict[str, object]) -> tuple[bytes | None, ...]:
    """For each file of ``want`` (as from :func:`expected`), in order, the bytes the kernel prints
    when the file holds that value ("100\\n", "max\\n", "25000 50000\\n"): exactly the bytes
    :func:`_parse` reads back as that value (an int's decimal, "max", cpu.max's "QUOTA PERIOD");
    None for a value with no such spelling (a period that is not systemd's, ANY_PERIOD): then that
    file is parsed."""
    out: list[bytes | None] = []
    for file, value in want.items():
        if file.endswith("cpu.max"):  # as _parse reads it: (quota or "max", period)
            quota, period = value if isinstance(value, tuple) and len(value) == 2 else (None, None)
            ok = type(period) is int and (quota == "max" or type(quota) is int)
            out.append(f"{quota} {period}\n".encode() if ok else None)
        elif type(value) is str and file.endswith(CPU_LIST):  # the kernel prints a CPU list as sdqos does
            out.append(f"{value}\n".encode())
        elif value == "max" or type(value) is int:
            out.append(f"{value}\n".encode())
        else:
            out.append(None)
    return tuple(out)


@lru_cache(maxsize=1024)
def _rendering(items: tuple) -> tuple[bytes | None, ...]:
    """:func:`rendered`, once per distinct set of values: pods with equal resources share one."""
    return rendered(dict(items))


def holds(cgroup: str, want: dict[str, object], root: Path = ROOT) -> dict[str, object] | None:
    """``read(cgroup, want)``, for a caller that expects ``want``: each file's bytes are compared
    with what the kernel prints for the wanted value (:func:`rendered`), and only when one differs
    (or cannot be rendered) is the cgroup read and parsed as :func:`read` does. The same answer
    (bytes equal to the rendering parse to the wanted value), without parsing every file of every
    unit of every warm sync."""
    rel = cgroup.strip("/")
    base = str(root)
    for file, expect in zip(want, _rendering(tuple(want.items()))):
        if expect is None:
            return read(cgroup, want, root)
        got = file_bytes(file_path(base, rel, file))
        if got is None:
            return None
        if got != expect:
            return read(cgroup, want, root)
    return want


def file_path(base: str, rel: str, file: str) -> str:
    """The path of ``file`` (v1: ``controller/file``) of the cgroup ``rel`` (no leading slash; ""
    for the root) under the hierarchy mounted at ``base``."""
    if "/" in file:  # v1: <controller>/<file>
        controller, name = file.split("/", 1)
        return f"{base}/{controller}/{rel}/{name}" if rel else f"{base}/{controller}/{name}"
    return f"{base}/{rel}/{file}" if rel else f"{base}/{file}"


def file_bytes(path: str) -> bytes | None:
    """What a cgroup file holds (one read: the files sdqos reads are short), None if it cannot be
    read. Plain os calls: this runs for every file of every unit of every warm sync."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 128)
    except OSError:
        return None
    finally:
        os.close(fd)


def read(cgroup: str, files, root: Path = ROOT) -> dict[str, object] | None:
    """The kernel's values for ``files`` (as from :func:`expected`) of a cgroup; None if any is
    missing or unreadable (the caller then asks systemd). Plain os calls: this runs for every unit
    of every warm sync."""
    out = {}
    rel = cgroup.strip("/")
    base = str(root)
    for file in files:
        got = file_bytes(file_path(base, rel, file))
        if got is None:
            return None
        try:
            value = out[file] = _parse(file, got.decode())
        except ValueError:
            return None
        if isinstance(value, tuple) and isinstance(files, dict) and isinstance(files[file], tuple) \
                and files[file][1] is ANY_PERIOD:
            out[file] = (value[0], ANY_PERIOD)
    return out


def differing(want: dict[str, object], have: dict[str, object]) -> dict[str, list]:
    """Kernel file → [what it holds, what it should] for the files that differ."""
    return {f: [have[f], want[f]] for f in want if have[f] != want[f]}
