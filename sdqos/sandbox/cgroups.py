"""The instance's cgroups on the host: one dir named for it in every hierarchy (memory below the
caller's own memory cgroup), made before boot and removed depth-first after."""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdqos.errors import SandboxError
from sdqos.sandbox.units import CGROUP_PREFIX, CGROUP_ROOT

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
    goes below our own memory cgroup. On a cgroup2-only host the instance sits at the
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
