"""Stage 2, PID 1 of the new namespaces: join the instance cgroups, unshare the cgroup namespace,
mount /proc, /etc (copy-on-write), /run, /sys/fs/cgroup and /dev/console, exec systemd. Also the
syscalls the stdlib lacks here (unshare before 3.12, the new mount API)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, NoReturn

from sdqos.sandbox.nsenter import _PATH
from sdqos.sandbox.state import _cgroup_mode, _write_pidfile
from sdqos.sandbox.units import CGROUP_ROOT, INNER_GENERATOR_DIR, TARGET, UNIT_PATH


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
    # /var/lib copy-on-write as well: what runs inside keeps its state there (podman's
    # /var/lib/containers, systemd's timer stamps), and none of it may reach the host's disk.
    varlib = sdir / "varlib"
    if varlib.is_dir():
        sh("mount", "-t", "overlay", "-o", f"lowerdir=/var/lib,upperdir={varlib}/upper,workdir={varlib}/work",
           "overlay", "/var/lib")
        # podman's default storage (overlay driver) cannot live on an overlayfs: a plain directory of
        # the instance's own (on the host's /run) takes /var/lib/containers' place, so a podman run
        # without storage options works inside, as on a host, and still writes nothing to its disk.
        containers = sdir / "containers"
        if containers.is_dir():
            os.makedirs("/var/lib/containers", exist_ok=True)
            sh("mount", "--bind", str(containers), "/var/lib/containers")
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
