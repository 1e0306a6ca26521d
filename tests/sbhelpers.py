"""Helpers for tests that run sdqos inside the sandbox and read the result where the kernel holds it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from sdqos import sandbox as sbx

from . import vmtools as vm

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
UNLIMITED_V1 = 9223372036854771712  # memory.limit_in_bytes with no limit (page-rounded LONG_MAX)
INFINITY = 2**64 - 1


def sdqos_in(sb: sbx.Sandbox, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`sdqos ARGS` inside the sandbox (its /run, its PID namespace, its systemd), as an operator runs it."""
    return sbx.run(sb, [sys.executable, "-m", "sdqos", *args], env=env, timeout=timeout)


def sync_json(sb: sbx.Sandbox, config: Path, *extra: str, expect: int | None = 0, env: dict | None = None) -> dict:
    r = sdqos_in(sb, "sync", "--config", str(config), "-o", "json", *extra, env=env)
    if expect is not None:
        assert r.returncode == expect, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return json.loads(r.stdout) if r.stdout.strip() else {"_stderr": r.stderr, "_rc": r.returncode}


def plan_json(config: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "sdqos", "plan", "--config", str(config), "-o", "json"],
                       capture_output=True, text=True)
    assert r.returncode in (0, 2), r.stderr
    return json.loads(r.stdout)


def copy_config(tmp_path: Path, src: Path = EXAMPLES) -> Path:
    d = tmp_path / "cfg"
    shutil.copytree(src, d)
    return d


def cgroup_rel(unit: str, parent: str | None = None) -> str:
    """Path of a unit's cgroup below the root: slices nest by their dashes; a scope sits in `parent`."""
    if unit.endswith(".scope"):
        assert parent, "a scope needs its slice"
        return f"{cgroup_rel(parent)}/{unit}"
    stem = unit[: -len(".slice")]
    parts = stem.split("-")
    return "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def pids_below(d: Path) -> list[int]:
    """Host PIDs in cgroup dir ``d`` and below, from the kernel's own lists. A cgroup removed while
    we look (a scope being replaced) holds no process: os.walk skips a directory that vanished, and
    so is a ``cgroup.procs`` that did. Callers that wait for processes poll."""
    pids: list[int] = []
    for root, _dirs, _files in os.walk(d):
        try:
            pids += [int(x) for x in Path(root, "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            pass
    return pids


def kernel(sb: sbx.Sandbox, controller: str, rel: str, file: str) -> int:
    return int((sb.cgroup_path(controller) / rel / file).read_text().strip())


def kernel_values(sb: sbx.Sandbox, rel: str) -> dict[str, int]:
    return {
        "cpu.shares": kernel(sb, "cpu", rel, "cpu.shares"),
        "cpu.cfs_quota_us": kernel(sb, "cpu", rel, "cpu.cfs_quota_us"),
        "cpu.cfs_period_us": kernel(sb, "cpu", rel, "cpu.cfs_period_us"),
        "memory.limit_in_bytes": kernel(sb, "memory", rel, "memory.limit_in_bytes"),
        "pids.max": _pids_max(sb, rel),
    }


def _pids_max(sb: sbx.Sandbox, rel: str) -> int:
    text = (sb.cgroup_path("pids") / rel / "pids.max").read_text().strip()
    return INFINITY if text == "max" else int(text)


def expected_kernel(props: dict[str, int]) -> dict[str, int]:
    """What the kernel must hold for a unit's planned v1 properties (runc's rounding applied)."""
    period = props.get("CPUQuotaPeriodUSec", 100_000)
    per_sec = props["CPUQuotaPerSecUSec"]
    mem = props["MemoryLimit"]
    return {
        "cpu.shares": props["CPUShares"],
        "cpu.cfs_quota_us": -1 if per_sec == INFINITY else per_sec * period // 1_000_000,
        "cpu.cfs_period_us": period,
        "memory.limit_in_bytes": UNLIMITED_V1 if mem == INFINITY else mem,
        "pids.max": props["TasksMax"],
    }


def show(sb: sbx.Sandbox, unit: str, *props: str) -> dict[str, str]:
    args = ["systemctl", "show", unit] + [f"--property={p}" for p in props]
    r = sbx.run(sb, args, check=True)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def dbus_props(sb: sbx.Sandbox, unit: str, *props: str) -> dict[str, int]:
    """Exact numbers as systemd holds them (busctl get-property; systemctl show pretty-prints)."""
    from sdqos.host.systemd import unit_path

    iface = "org.freedesktop.systemd1." + unit.rsplit(".", 1)[1].capitalize()
    r = sbx.run(sb, ["busctl", "get-property", "org.freedesktop.systemd1", unit_path(unit), iface, *props], check=True)
    return {p: int(line.split()[1]) for p, line in zip(props, r.stdout.splitlines())}


def active_state(sb: sbx.Sandbox, unit: str) -> str:
    return show(sb, unit, "ActiveState", "LoadState")["ActiveState"]


def all_units_state(sb: sbx.Sandbox) -> str:
    """Every kubepods unit's owned properties and state, for before/after comparisons."""
    r = sbx.run(sb, ["systemctl", "list-units", "--all", "--plain", "--no-legend", "kubepods*", "sdqos-*"], check=True)
    names = sorted(line.split()[0] for line in r.stdout.splitlines() if line.strip())
    out = []
    for n in names:
        s = show(sb, n, "ActiveState", "CPUShares", "CPUQuotaPerSecUSec", "MemoryLimit", "TasksMax", "InvocationID")
        out.append(f"{n} {sorted(s.items())}")
    return "\n".join(out)


def wait_for(cond, what: str = "condition", timeout: float = 20.0):
    """Poll `cond` until it returns something true (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def sdqos_run_vm(sb: sbx.Sandbox, config: Path, name: str, timeout: float = 20.0) -> subprocess.Popen:
    """`sdqos run --config CONFIG --vm NAME -- QEMU` in the sandbox (tests/vmtools.py's guest, the pid
    file and QMP socket of an earlier guest of that name removed), returned once the guest runs. A run
    that exits before says why at once; one that is not running after ``timeout`` s is killed with all
    it started."""
    d = vm.vm_dir(sb)
    for f in (f"{name}.pid", f"{name}.qmp"):
        (d / f).unlink(missing_ok=True)
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "--vm", name, "--",
                       *vm.qemu_argv(name)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def running() -> bool:
        if p.poll() is not None:  # refused or failed: say why at once
            raise AssertionError(f"sdqos run --vm {name} exited {p.returncode}: {p.stderr.read() if p.stderr else ''}")
        return (d / f"{name}.pid").exists() and vm.qmp_status(sb, name) == "running"

    try:
        wait_for(running, f"guest {name} running", timeout=timeout)
    except BaseException:
        end_tree(p)
        raise
    return p


def remove_sync_units(sb: sbx.Sandbox, directory: str = "/run/systemd/system") -> None:
    """Undo `sdqos install-units --dir DIRECTORY --now` inside the sandbox: stop and remove the
    service, timer and path unit, the pressure service (it would evict other tests' pods) and their
    enablement links."""
    sbx.run(sb, ["systemctl", "disable", "--now", "sdqos-sync.timer", "sdqos-sync.path", "sdqos-pressure.service"])
    sbx.run(sb, ["systemctl", "stop", "sdqos-sync.service", "sdqos-pressure.service"])
    sbx.run(sb, ["rm", "-rf", *(f"{directory}/{name}" for name in (
        "sdqos-sync.timer", "sdqos-sync.service", "sdqos-sync.path", "sdqos-pressure.service", "timers.target.wants",
        "paths.target.wants", "multi-user.target.wants"))])
    sbx.run(sb, ["systemctl", "daemon-reload"])


# --- the static CPU manager -----------------------------------------------------------------------

CPU_STATE = "/run/sdqos/cpu_manager_state"  # kubelet's checkpoint, in the sandbox's (or guest's) run dir
CAPACITY = '{cpu: "4", memory: 4Gi, pids: "100000"}'  # 4 CPUs on a host of 2: kubelet's allocatable check passes


def static_node(reserved: str = "0", *, capacity: str | None = CAPACITY, policy: str | None = "static",
                **extra: str | None) -> str:
    """node.yaml of the static CPU manager's tests: capacity, reservedSystemCPUs, cpuManagerPolicy,
    then each of ``extra`` as `key: value`, in that order; a field given None is left out (capacity:
    detected; cpuManagerPolicy: the default, none)."""
    fields = {"capacity": capacity, "reservedSystemCPUs": f'"{reserved}"', "cpuManagerPolicy": policy, **extra}
    return "".join(f"{k}: {v}\n" for k, v in fields.items() if v is not None)


def static_config(cfg_dir: Path, reserved: str = "0", **node: str | None) -> Path:
    """``cfg_dir`` with a pods/ folder and static_node(reserved, **node) as its node.yaml."""
    (cfg_dir / "pods").mkdir(parents=True, exist_ok=True)
    (cfg_dir / "node.yaml").write_text(static_node(reserved, **node))
    return cfg_dir


def forget_cpu_state(sb: sbx.Sandbox) -> None:
    """No CPUs given to any container: the CPU manager's state file removed from the sandbox."""
    sbx.run(sb, ["rm", "-f", CPU_STATE])


def cpu_state(sb: sbx.Sandbox) -> dict:
    """The CPU manager's state file in the sandbox's run dir, read from the host."""
    return json.loads((Path(sb.run_dir) / CPU_STATE.removeprefix("/run/")).read_text())


# --- processes a test starts: always ended, whatever happens --------------------------------------


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first), read from /proc's children lists."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                kids = [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def end_tree(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``, its process group and everything below it, and reap ``proc``: for a
    ``finally``, so nothing a test started outlives it (nsenter's child in the sandbox included)."""
    for pid in [*reversed(descendants(proc.pid)), proc.pid]:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    try:
        os.killpg(proc.pid, 9)  # (started with start_new_session: its group is its pid)
    except OSError:
        pass
    try:
        proc.communicate(timeout=30)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def _tree(pid: int) -> str:
    """What runs below ``pid``: one line per process (pid, state, where it waits, command line)."""
    lines = []
    for p in [pid, *descendants(pid)]:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{p}/wchan").read_text()
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stack = Path(f"/proc/{p}/stack").read_text().replace("\n", " | ") if os.geteuid() == 0 else ""
        except OSError:
            continue
        lines.append(f"{p} {state} {wchan} {cmd[:200]} [{stack[:300]}]")
    return "\n".join(lines)


def interrupt_at(sb: sbx.Sandbox, argv: list[str], delay: float, *, env: dict | None = None,
                 within: float = 60.0) -> tuple[int | None, str, str, float]:
    """Start ``argv`` in the sandbox, send its process (nsenter's child: what a terminal's Ctrl-C
    reaches) one SIGINT ``delay`` seconds after it exists, and wait ``within`` seconds for it to end.
    (returncode, stdout, stderr, seconds it took after the SIGINT); returncode None: it did not end
    (then it is killed)."""
    import signal

    p = sbx.popen(sb, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                  **({"env": sbx.inner_env(env)} if env is not None else {}))
    try:
        inner = wait_for(lambda: descendants(p.pid)[:1] or (p.poll() is not None and [0]), "nsenter's child", 60)[0]
        time.sleep(delay)
        t0 = time.monotonic()
        if inner:
            try:
                os.kill(inner, signal.SIGINT)
            except ProcessLookupError:
                pass  # it ended before
        try:
            out, err = p.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            return None, "", _tree(p.pid), time.monotonic() - t0
        return p.returncode, out, err, time.monotonic() - t0
    finally:
        end_tree(p)
