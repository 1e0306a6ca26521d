"""A real cgroup v2 machine for the tests: a small Debian guest with its own kernel and systemd,
booted under qemu's software emulation (TCG), driven over a virtio-serial command channel.

Our build machines are cgroup v1/hybrid and cannot be switched; systemd 258 and later support only
v2. So the v2 tests boot a guest whose kernel runs with ``systemd.unified_cgroup_hierarchy=1
cgroup_no_v1=all`` and test sdqos against the guest's own systemd as PID 1 — the guest is the
throwaway machine. /dev/kvm on these machines is a nested PVM that runs stock kernels far slower
than TCG (/work/shared/v2-route/README.md), hence TCG.

- ``image(suite)`` builds the guest once per recipe and Debian suite (mmdebstrap: systemd, dbus,
  udev, the distribution kernel with an initramfs for virtio, python3 with sdqos's dependencies in
  /opt/venv from wheels downloaded on the host, the command agent) into ``CACHE`` and reuses it.
  Builds take a lock and land atomically (a killed build leaves no half image).
- ``image(suite, layer)``: that image with a layer's packages installed on top (``LAYERS``; podman
  for tests/v2/test_v2_podman.py), a cache entry of its own built from the suite's image in seconds;
  the suite's image and its recipe key stay as they are.
- ``Guest.boot(suite, wheels)`` starts qemu with the disk as a snapshot (every boot is pristine),
  no network device at all, this checkout's sdqos wheel shared read-only, and waits until the
  guest's systemd has finished starting; ``run`` executes a command there; ``close`` kills qemu and
  removes its run dir. Nothing is left on the host but the image cache.
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import hashlib
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(os.environ.get("SDQOS_V2_CACHE", "/var/cache/sdqos-test/v2"))
SUITES = {"bookworm": 252, "trixie": 257, "sid": None}  # Debian suite → its systemd (sid: whatever it has)
QEMU = "qemu-system-x86_64"
# "-cpu max": measured here, "max,-svm" makes Debian 12's 6.1 kernel under TCG print every mount point
# in /proc/*/mountinfo as "xxx" (and so no cgroup hierarchy could be found); plain "max" does not.
BOOT_TIMEOUT = 300.0
PACKAGES = ("systemd,systemd-sysv,dbus,udev,kmod,linux-image-amd64,initramfs-tools,python3,python3-venv,"
            "util-linux,procps,mount,qemu-system-x86")  # qemu: VMs in the guest's machine.slice
REQUIREMENTS = ("dbus-next>=0.2.3", "pyyaml>=6.0", "typer>=0.12,<0.29", "tenacity>=8.2", "dbus-fast>=2.0")
# Packages some tests need on top of a suite's image, as a layer of their own (its own cache entry):
# the base images, their recipe and their keys stay as they are. Real podman + crun on cgroup v2
# (tests/v2/test_v2_podman.py); busybox-static for a local image. systemd-oomd.
LAYERS = {"podman": ("podman", "crun", "conmon", "catatonit", "busybox-static"),
          # systemd-oomd, as Fedora and Ubuntu run it (tests/v2/test_v2_oomd.py)
          "oomd": ("systemd-oomd",)}
AGENT_UNIT = """\
[Unit]
Description=sdqos v2 test agent
DefaultDependencies=no
After=systemd-udevd.service

[Service]
ExecStart=/usr/local/sbin/sdqos-v2-agent
Restart=always

[Install]
WantedBy=sysinit.target
"""


def missing_prerequisites() -> list[str]:
    out = []
    if os.geteuid() != 0:
        out.append("not root (the image build and qemu's 9p share need it)")
    for tool, pkg in ((QEMU, "qemu-system-x86"), ("mmdebstrap", "mmdebstrap"), ("mke2fs", "e2fsprogs")):
        if shutil.which(tool) is None:
            out.append(f"{tool} not found (Debian package {pkg})")
    return out


def _recipe_key(suite: str) -> str:
    h = hashlib.sha256()
    recipe = inspect.getsource(_build) + inspect.getsource(_mirrors)  # what goes into the image, not how it boots
    for part in (suite, PACKAGES, *REQUIREMENTS, AGENT_UNIT, (HERE / "agent.py").read_text(), recipe):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:12]


def _mirrors() -> tuple[str, str]:
    """The Debian archives this host's apt uses (main, security)."""
    uris: list[str] = []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        uris += [ln.split()[1] for ln in f.read_text().splitlines() if ln.startswith("URIs:")]
    lst = Path("/etc/apt/sources.list")
    if lst.exists():
        uris += [ln.split()[1] for ln in lst.read_text().splitlines() if ln.startswith("deb ")]
    main = uris[0] if uris else "http://deb.debian.org/debian"
    sec = next((u for u in uris if "security" in u), main.rstrip("/") + "-security")
    return main, sec


def image(suite: str, layer: str | None = None) -> Path:
    """The cached guest image dir for ``suite`` (vmlinuz, initrd.img, rootfs.ext4), built if missing;
    with ``layer`` (a key of ``LAYERS``) that image with the layer's packages added on top."""
    if layer is not None:
        base = image(suite)
        key = hashlib.sha256("\0".join((base.name, *LAYERS[layer], inspect.getsource(_add_layer))).encode())
        # "<layer>-<suite>-…": not matched by the "<suite>-*" the base image's build clears
        return _cached(CACHE / f"{layer}-{suite}-{key.hexdigest()[:12]}", f"{layer}-{suite}-*",
                       lambda work: _add_layer(base, work, LAYERS[layer]))
    return _cached(CACHE / f"{suite}-{_recipe_key(suite)}", f"{suite}-*", lambda work: _build(suite, work))


def _cached(final: Path, earlier: str, build) -> Path:
    """``final`` if it was built, else ``build(work)`` under the cache's lock, landed atomically;
    the dirs matching ``earlier`` (earlier recipes of the same image) go."""
    if (final / "ok").exists():
        return final
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / "ok").exists():  # another build finished while we waited
            return final
        work = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=CACHE))
        try:
            build(work)
            (work / "ok").write_text("")
            shutil.rmtree(final, ignore_errors=True)
            os.rename(work, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for old in CACHE.glob(earlier):
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
    return final


def _add_layer(base: Path, work: Path, packages: tuple[str, ...]) -> None:
    """``base``'s image with ``packages`` installed by the image's own apt (its sources are the
    host's mirrors), in a chroot on the copied rootfs mounted in a private mount namespace (nothing
    of it is seen outside, and it goes with the namespace). No service starts (policy-rc.d)."""
    for name in ("vmlinuz", "initrd.img"):
        shutil.copyfile(base / name, work / name)
    _run(["cp", "--sparse=always", str(base / "rootfs.ext4"), str(work / "rootfs.ext4")], "copying the base image")
    root = work / "root"
    root.mkdir()
    script = f"""set -e
mount -o loop "$1/rootfs.ext4" "$2"
mount -t proc proc "$2/proc"
mount --bind /dev "$2/dev"
[ -e "$2/etc/resolv.conf" ] || [ -L "$2/etc/resolv.conf" ] && mv "$2/etc/resolv.conf" "$2/etc/resolv.conf.sdqos"
cp /etc/resolv.conf "$2/etc/resolv.conf"
printf '#!/bin/sh\\nexit 101\\n' > "$2/usr/sbin/policy-rc.d" && chmod 755 "$2/usr/sbin/policy-rc.d"
chroot "$2" env DEBIAN_FRONTEND=noninteractive sh -c 'apt-get -q update && \
  apt-get -q install -y --no-install-recommends {" ".join(packages)} && apt-get clean'
rm -f "$2/usr/sbin/policy-rc.d" "$2/etc/resolv.conf" "$2/var/lib/apt/lists"/*_Packages
[ ! -e "$2/etc/resolv.conf.sdqos" ] && [ ! -L "$2/etc/resolv.conf.sdqos" ] || mv "$2/etc/resolv.conf.sdqos" "$2/etc/resolv.conf"
umount "$2/dev" "$2/proc" "$2"
"""
    _run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(work), str(root)],
         f"installing {', '.join(packages)}")
    root.rmdir()
    _run(["e2fsck", "-f", "-p", str(work / "rootfs.ext4")], "checking the layered image")


def _build(suite: str, work: Path) -> None:
    root, wheels = work / "root", work / "root" / "tmp" / "w"
    main, sec = _mirrors()
    unit = AGENT_UNIT.replace("\n", "\\n")
    hooks = [
        'echo sdqos-v2 > "$1/etc/hostname"',
        'printf "/dev/vda / ext4 rw,noatime 0 1\\n" > "$1/etc/fstab"',
        f'install -m 755 {HERE / "agent.py"} "$1/usr/local/sbin/sdqos-v2-agent"',
        f'printf "{unit}" > "$1/etc/systemd/system/sdqos-v2-agent.service"',
        'chroot "$1" systemctl enable sdqos-v2-agent.service',
        'chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer '
        'getty@tty1.service systemd-timesyncd.service e2scrub_reap.service serial-getty@ttyS0.service '
        'systemd-networkd.service systemd-networkd-wait-online.service 2>/dev/null || true',
        'printf "MODULES=list\\nCOMPRESS=zstd\\n" > "$1/etc/initramfs-tools/conf.d/sdqos-v2" && '
        'printf "virtio_pci\\nvirtio_blk\\nvirtio_console\\n9p\\n9pnet_virtio\\next4\\n" >> "$1/etc/initramfs-tools/modules" && '
        'chroot "$1" update-initramfs -u -k all',
        'mkdir -p "$1/src" "$1/wheels"',
        'rm -rf "$1/var/cache/apt/archives"/*.deb "$1/var/lib/apt/lists"/*_Packages',
    ]
    _run(["mmdebstrap", "--variant=minbase", f"--include={PACKAGES}", *[f"--customize-hook={h}" for h in hooks],
          suite, str(root), f"deb {main} {suite} main", f"deb {main} {suite}-updates main",
          f"deb {sec} {suite}-security main"] if suite not in ("sid", "unstable") else
         # unstable as this archive serves it: its Release file may be past its Valid-Until
         ["mmdebstrap", "--variant=minbase", "--aptopt=Acquire::Check-Valid-Until \"false\"", f"--include={PACKAGES}",
          *[f"--customize-hook={h}" for h in hooks], suite, str(root), f"deb {main} {suite} main"], "mmdebstrap")
    # sdqos's dependencies in /opt/venv, as wheels for whatever Python the suite has (no network there)
    py = subprocess.run(["chroot", str(root), "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                        capture_output=True, text=True, check=True).stdout.strip()
    _run([sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels), "--only-binary=:all:",
          "--python-version", py, "--implementation", "cp", "--abi", "cp" + py.replace(".", ""),
          "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
          "--platform", "manylinux_2_28_x86_64", *REQUIREMENTS], f"downloading wheels for Python {py}")
    _run(["chroot", str(root), "sh", "-c", "python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --no-index "
          "--find-links /tmp/w /tmp/w/*.whl"], "installing the wheels")
    shutil.rmtree(wheels)
    for name in ("vmlinuz", "initrd.img"):
        src = sorted((root / "boot").glob(f"{name}-*"))[-1]
        shutil.copyfile(src, work / name)
    _run(["mke2fs", "-q", "-t", "ext4", "-L", "sdqos-v2", "-d", str(root), str(work / "rootfs.ext4"), "3G"], "mke2fs")
    shutil.rmtree(root)


def _run(argv: list[str], what: str) -> None:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-20:])
        raise RuntimeError(f"v2 guest image: {what} failed (exit {p.returncode}):\n{tail}")


def sdqos_wheel(dest: Path) -> Path:
    """This checkout of sdqos as a wheel, for the guest's pip (no network there)."""
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(REPO)], "building sdqos's wheel")
    return next(dest.glob("sdqos-*.whl"))


# Two sockets of two cores, one NUMA node each (1 GiB of RAM apiece): node0 = CPUs 0-1, node1 = CPUs
# 2-3. The kernel boots on cgroup v1 (systemd's hybrid layout, as our build machines): the static CPU
# manager sets exclusive CPUs as the processes' affinity there, which /proc/PID/status shows.
NUMA_MACHINE = ["-smp", "4,sockets=2,cores=2,threads=1", "-m", "2048",
                "-object", "memory-backend-ram,id=m0,size=1G", "-numa", "node,nodeid=0,cpus=0-1,memdev=m0",
                "-object", "memory-backend-ram,id=m1,size=1G", "-numa", "node,nodeid=1,cpus=2-3,memdev=m1"]
NUMA_CGROUP = "systemd.unified_cgroup_hierarchy=0"


def _numa_argv(argv: list[str]) -> list[str]:
    """The one-vCPU argv with ``NUMA_MACHINE`` in place of its -smp and -m, and cgroup v1."""
    out: list[str] = []
    it = iter(argv)
    for a in it:
        if a in ("-smp", "-m"):
            next(it)
            continue
        if a == "-append":
            cmdline = next(it).replace("systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all", NUMA_CGROUP)
            out += [a, cmdline]
            continue
        out.append(a)
    return out[:1] + NUMA_MACHINE + out[1:]


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    seconds: float


class Guest:
    """One booted guest; ``run`` commands in it, ``close`` when done (also at exit)."""

    def __init__(self, suite: str, rundir: Path, proc: subprocess.Popen, layer: str | None = None):
        self.suite, self.rundir, self.proc, self.layer = suite, rundir, proc, layer
        self.numa = False
        self.sock_path = rundir / "agent.sock"
        self.share: Path | None = None
        atexit.register(self.close)

    def alive(self) -> bool:
        """qemu runs and the guest answers (a panicking guest's qemu may not have exited yet)."""
        if self.proc.poll() is not None:
            return False
        try:
            return self._run("true", 20, None).rc == 0
        except (OSError, ValueError):
            return False

    def revive(self) -> None:
        """Boot a fresh guest of the same suite in place of one that died (what died is kept in the
        error the test that saw it got; the next test gets a pristine machine)."""
        fresh = Guest.boot(self.suite, self.share, layer=self.layer, numa=self.numa)
        self.close()
        atexit.unregister(fresh.close)
        self.rundir, self.proc, self.sock_path = fresh.rundir, fresh.proc, fresh.sock_path

    @classmethod
    def boot(cls, suite: str, share: Path | None = None, layer: str | None = None, numa: bool = False) -> "Guest":
        """A guest of ``suite``'s image (with ``layer``'s packages when given, see ``LAYERS``).
        ``numa``: the machine of ``NUMA_MACHINE`` instead of one vCPU (tests/v2/test_v2_numa.py)."""
        img = image(suite, layer)
        rundir = Path(tempfile.mkdtemp(prefix=f"sdqos-v2-{suite}-"))
        # One vCPU: with two, Debian unstable's kernel (7.2) panicked twice in one CI run at
        # bpf_lsm_file_open+0x5 ("Code: … e9 <47> …": a half-patched jump) when systemd 262 attached
        # its BPF LSM program: the kernel rewrites that hook's code while the other vCPU may run it,
        # and TCG's multi-threaded emulation of cross-modifying code races. One vCPU has no other.
        argv = [QEMU, "-accel", "tcg,thread=multi", "-cpu", os.environ.get("SDQOS_V2_CPU", "max"), "-machine", "q35", "-smp", "1", "-m", "2048",
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", str(img / "vmlinuz"), "-initrd", str(img / "initrd.img"),
                "-append", "root=/dev/vda rw console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all",
                "-drive", f"file={img / 'rootfs.ext4'},if=virtio,format=raw,snapshot=on,cache=unsafe",
                "-serial", f"file:{rundir / 'console.log'}",
                "-device", "virtio-serial-pci", "-chardev", f"socket,id=ag,path={rundir / 'agent.sock'},server=on,wait=off",
                "-device", "virtserialport,chardev=ag,name=sdqos-agent"]
        if numa:
            argv = _numa_argv(argv)
        if share is not None:
            argv += ["-virtfs", f"local,path={share},mount_tag=share,security_model=none,readonly=on"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        g = cls(suite, rundir, proc, layer)
        g.share, g.numa = share, numa
        try:
            g._wait_up()
            if share is not None:
                g.check("mkdir -p /share && mount -t 9p -o trans=virtio,version=9p2000.L,ro share /share")
        except BaseException:
            g.close()
            raise
        return g

    def _wait_up(self) -> None:
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"qemu exited ({self.proc.returncode}): {self.proc.stderr.read().decode()[-2000:]}"
                                   f"\nconsole: {self.console_tail()}")
            try:
                self._run("true", 20, None)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the v2 guest did not answer within {BOOT_TIMEOUT:.0f}s; console: "
                                       f"{self.console_tail()}") from None
                time.sleep(0.5)
        state = self.run("systemctl is-system-running --wait", timeout=BOOT_TIMEOUT).stdout.strip()
        if state not in ("running", "degraded"):
            raise RuntimeError(f"the v2 guest's systemd is {state!r}; console: {self.console_tail()}")

    def console_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.rundir / "console.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no console log)"

    def run(self, sh: str, *, timeout: float = 300, env: dict | None = None) -> Result:
        """``sh -c SH`` in the guest (as root, PATH with /opt/venv/bin first). A guest that went away
        meanwhile is an error that carries the tail of its console (why it went)."""
        try:
            return self._run(sh, timeout, env)
        except (ConnectionError, FileNotFoundError) as exc:
            if self.proc.poll() is None and self.sock_path.exists():
                raise
            raise RuntimeError(f"the {self.suite} guest is gone (qemu exit {self.proc.poll()}) while running "
                               f"`{sh}`: {exc}; console:\n{self.console_tail(60)}") from None

    def _run(self, sh: str, timeout: float, env: dict | None) -> Result:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout + 30)
        try:
            s.connect(str(self.sock_path))
            rid = uuid.uuid4().hex
            s.sendall((json.dumps({"id": rid, "sh": sh, "timeout": timeout, "env": env or {}}) + "\n").encode())
            buf = b""
            while True:
                data = s.recv(1 << 20)
                if not data:
                    raise ConnectionError("the guest agent closed the channel")
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    rep = json.loads(line)
                    if rep.get("id") == rid:
                        return Result(rep["rc"], base64.b64decode(rep["out"]).decode(errors="replace"),
                                      base64.b64decode(rep["err"]).decode(errors="replace"), rep.get("t", 0.0))
        finally:
            s.close()

    def check(self, sh: str, **kw) -> str:
        r = self.run(sh, **kw)
        if r.rc != 0:
            raise AssertionError(f"in the v2 guest, `{sh}` exited {r.rc}:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def spawn_run(self, args: str, log: str = "/dev/null") -> int:
        """``sdqos run ARGS`` in the background; its PID, which becomes the command's (run execs it)."""
        return int(self.check(f"(sdqos run {args} >{log} 2>&1 </dev/null & echo $!)").split()[-1])

    def wait_running(self, pid: int, log: str = "/dev/null", timeout: float = 180) -> None:
        """Until ``sdqos run``'s process ``pid`` has exec'd its command, which it does only after its
        scope exists with its values and the OOM score is written. Under TCG with one vCPU that
        takes seconds, so a fixed sleep races (two CI failures did)."""
        probe = (f"test -e /proc/{pid} || exit 2; tr '\\0' ' ' < /proc/{pid}/cmdline | grep -q 'sdqos run' && exit 1; "
                 f"grep -q '\\.scope$' /proc/{pid}/cgroup")
        deadline = time.monotonic() + timeout
        while (rc := self.run(probe).rc) != 0:
            if rc == 2 or time.monotonic() > deadline:
                raise AssertionError(f"`sdqos run` (PID {pid}) {'exited' if rc == 2 else 'did not exec'} "
                                     f"in time:\n{self.run(f'cat {log}; ps -ef; journalctl -b -n 40 --no-pager').stdout}")
            time.sleep(0.5)

    def sdqos_run(self, args: str, log: str = "/dev/null", timeout: float = 180) -> int:
        """``sdqos run ARGS`` in the background, once its command runs in its scope; its PID."""
        pid = self.spawn_run(args, log)
        self.wait_running(pid, log, timeout)
        return pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.rundir, ignore_errors=True)
