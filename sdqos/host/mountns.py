"""A pod's own /dev/shm, as kubelet's container runtime gives it (containerd's pod sandbox:
``internal/cri/server/podsandbox`` ``defaultShmSize`` 64 MiB, a tmpfs mounted
``nosuid,noexec,nodev,mode=1777``): ``sdqos run`` puts the process it is about to exec into a
mount namespace of its own (propagation private: nothing mounted there reaches the host) with a
fresh tmpfs on /dev/shm. What the pod writes there is charged to its cgroup and freed when its
last process exits (the namespace goes, and the tmpfs with it), so an evicted pod's shared memory
is given back as kubelet's is — on the host's /dev/shm it stayed charged after the eviction.
"""

from __future__ import annotations

import ctypes
import os

from sdqos.errors import HostError

SHM_SIZE = 64 * 2**20  # containerd's defaultShmSize
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18


def _check(rc: int, what: str) -> None:
    if rc != 0:
        e = ctypes.get_errno()
        raise HostError(f"cannot give the container its own /dev/shm ({what}): {os.strerror(e)}")


def private_shm(size: int = SHM_SIZE, target: str = "/dev/shm") -> None:
    """This process (and what it execs) in a new mount namespace with a private tmpfs of ``size``
    bytes on ``target``. HostError when the kernel refuses (no CAP_SYS_ADMIN)."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWNS), "unshare")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount propagation")
    opts = f"mode=1777,size={size}".encode()
    _check(libc.mount(b"shm", target.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, opts), "mount")
