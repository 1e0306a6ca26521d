"""The private test systemd (sdqos.sandbox), against the real thing: boot, systemctl inside,
transient units reaching cgroupfs, daemon-reload, teardown leaving nothing, coexistence, errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.errors import SandboxError

pytestmark = pytest.mark.sandbox

MANAGER = ("org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager")


def start_slice(sb: sbx.Sandbox, unit: str, *props: str) -> None:
    """StartTransientUnit(unit, "fail", props) with busctl inside the sandbox; props are
    busctl's flat (name, signature, value) triples."""
    assert len(props) % 3 == 0
    cp = sb.run(["busctl", "call", *MANAGER, "StartTransientUnit", "ssa(sv)a(sa(sv))",
                 unit, "fail", str(len(props) // 3), *props, "0"], check=True)
    assert cp.stdout.startswith("o ")
    wait_for(lambda: sb.systemctl("is-active", unit).stdout.strip() == "active", f"{unit} active")


def wait_for(cond, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def show(sb: sbx.Sandbox, unit: str, *props: str) -> dict[str, str]:
    out = sb.systemctl("show", unit, "-p", ",".join(props), check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def read(p: Path) -> str:
    return p.read_text().strip()


def need_v1(sb: sbx.Sandbox) -> None:
    if sb.cgroup_mode == "unified":
        pytest.skip("checks cgroup v1 files (cpu.shares, memory.limit_in_bytes); this host is cgroup2-only")


def leftovers(sb: sbx.Sandbox) -> list[str]:
    """Everything of `sb` still visible on the host: process, cgroup dirs, mounts, state dir."""
    out = []
    if os.path.exists(f"/proc/{sb.pid}"):
        out.append(f"process {sb.pid}")
    out += [f"cgroup {d}" for d in set(sb.cgroups.values()) if os.path.exists(d)]
    leaf = sbx.CGROUP_PREFIX + sb.name
    mounts = Path("/proc/mounts").read_text() + Path("/proc/self/mountinfo").read_text()
    out += [f"mount {ln}" for ln in mounts.splitlines() if str(sb.state_dir) in ln or leaf in ln]
    if sb.state_dir.exists():
        out.append(f"state dir {sb.state_dir}")
    for pid in filter(str.isdigit, os.listdir("/proc")):  # supervisor, unshare, anything of it
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(sb.state_dir) + " " in cmd + " " or f"container={sb.name}" in cmd:
            out.append(f"process {pid}: {cmd}")
    return out


# --- boot and status -----------------------------------------------------------------------------


def test_boot_status(sandbox: sbx.Sandbox):
    st = sbx.status(sandbox.name)
    assert st.running and st.pid == sandbox.pid
    assert st.system_state == "running"
    assert st.systemd_version and st.systemd_version[:3].isdigit()
    assert st.units and st.units > 5 and st.failed_units == 0
    assert st.bus_address == f"unix:path={sandbox.run_dir}/dbus/system_bus_socket" == sandbox.bus_address
    assert sandbox.name in st.describe() and "running" in st.describe()
    assert sandbox.name in [s.name for s in sbx.list_sandboxes()]
    assert sbx.get(sandbox.name) == sandbox
    # the state a separate CLI invocation relies on
    assert read(sandbox.state_dir / "pid").split()[0] == str(sandbox.pid)
    assert (sandbox.state_dir / "state.json").is_file()
    assert (sandbox.unit_dir / sbx.TARGET).is_file()


def test_list_and_status_json_use_camel_case_keys_as_every_json_of_sdqos(sandbox: sbx.Sandbox):
    import json

    keys = {"name", "running", "pid", "busAddress", "stateDir", "systemdVersion", "systemState", "units",
            "failedUnits", "uptime", "problem"}
    for args in (["list"], ["status", sandbox.name]):
        r = subprocess.run([sys.executable, "-m", "sdqos", "sandbox", *args, "-o", "json"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        mine = next(d for d in doc if d["name"] == sandbox.name) if args == ["list"] else doc
        assert set(mine) == keys and mine["running"] is True and mine["busAddress"] == sandbox.bus_address


def test_systemctl_inside(clean_sandbox: sbx.Sandbox):
    sb = clean_sandbox
    assert sb.systemctl("is-system-running").stdout.strip() == "running"
    units = sb.systemctl("list-units", "--plain", "--no-legend", check=True).stdout
    names = {ln.split()[0] for ln in units.splitlines() if ln.strip()}
    assert {"dbus.service", "dbus.socket", sbx.TARGET, "machine.slice", "system.slice", "-.slice", "init.scope"} <= names
    assert sb.run(["cat", "/proc/1/comm"], check=True).stdout.strip() == "systemd"  # own pid namespace
    assert sb.run(["cat", "/run/systemd/container"], check=True).stdout.strip() == sb.name


def test_pid1_environment(sandbox: sbx.Sandbox):
    env = Path(f"/proc/{sandbox.pid}/environ").read_bytes().split(b"\0")
    assert f"container={sandbox.name}".encode() in env
    assert f"SYSTEMD_UNIT_PATH={sbx.UNIT_PATH}".encode() in env
    # the instance sees only its own unit dirs, never the host's: no vendor dirs, and its /etc is
    # its own (test_private_etc)
    unit_path = sandbox.systemctl("show", "-p", "UnitPath", "--value", check=True).stdout.split()
    assert unit_path == sbx.UNIT_PATH.split(":")
    assert not any(p.startswith(("/lib/systemd", "/usr/lib/systemd", "/usr/local/lib")) for p in unit_path)
    assert sandbox.systemctl("start", "systemd-timesyncd.service").returncode != 0  # a host unit: not found
    # the host's generators (fstab, sysv, postgresql, ...) do not run in the instance
    gen = sandbox.run_dir / "systemd"
    assert not any(any(d.iterdir()) for d in gen.glob("generator*")), list(gen.glob("generator*/*"))


def test_private_run_and_proc_sys(sandbox: sbx.Sandbox):
    marker = sandbox.run_dir / "sdqos-test-marker"
    marker.write_text("hello\n")
    try:
        assert sandbox.run(["cat", "/run/sdqos-test-marker"], check=True).stdout == "hello\n"
    finally:
        marker.unlink()
    assert sandbox.run(["test", "-e", str(sandbox.state_dir)]).returncode != 0  # host /run is hidden
    # sysctls are the host's: read-only inside (systemd would raise fs.nr_open at boot)
    assert sandbox.run(["sh", "-c", "echo 1048576 > /proc/sys/fs/nr_open"]).returncode != 0


def test_private_etc(sandbox: sbx.Sandbox):
    """The instance's /etc is the host's, copy-on-write: what is written inside stays inside, and its
    /etc/systemd/system starts empty (the host's enabled units are not the instance's)."""
    sb = sandbox
    assert sb.run(["cat", "/etc/os-release"], check=True).stdout == Path("/etc/os-release").read_text()
    inside = set(sb.run(["ls", "-A", "/etc/systemd/system"], check=True).stdout.split())
    host = {e for e in os.listdir("/etc/systemd/system") if not e.startswith("sdqos")} - {"timers.target.wants"}
    assert not inside & host, inside & host  # none of the host's enabled units (tests may add their own)
    probe = "/etc/systemd/system/sdqos-test-private.service"
    sb.run(["sh", "-c", f"echo '[Service]' > {probe} && mkdir -p /etc/sdqos-test-private"], check=True)
    try:
        assert sb.run(["cat", probe], check=True).stdout == "[Service]\n"
        assert not os.path.lexists(probe) and not os.path.lexists("/etc/sdqos-test-private")
        assert (sb.state_dir / "etc" / "upper" / probe.removeprefix("/etc/")).exists()  # where it went
    finally:
        sb.run(["rm", "-rf", probe, "/etc/sdqos-test-private"])


def test_up_where_run_is_a_mount(sandbox: sbx.Sandbox, sandbox_name: str, tmp_path: Path):
    """On a systemd host /run is a tmpfs of its own (and the sandbox's state dir lives on it):
    README's first command, in a mount namespace where /run is such a tmpfs with a submount."""
    name = f"{sandbox_name}-runmnt"
    sdqos = f"{sys.executable} -m sdqos"
    script = f"""
        set -e
        mount -t tmpfs -o mode=755 tmpfs /run
        mkdir /run/user && mount -t tmpfs tmpfs /run/user
        trap '{sdqos} sandbox down {name} >/dev/null' EXIT
        {sdqos} sandbox up {name} >/dev/null
        {sdqos} sandbox exec {name} -- {sdqos} sync --config {sbx_examples()}
        {sdqos} sandbox exec -n {name} -- systemctl is-active kubepods.slice
        {sdqos} sandbox exec -n {name} -- findmnt -n -o TARGET /run/user || echo "no /run/user inside"
    """
    cp = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0].startswith("8 created"), cp.stdout
    assert "active" in lines and "no /run/user inside" in lines, cp.stdout  # the host's /run is gone inside
    assert not sbx.state_dir(name).exists()  # it lived in the namespace's /run, never the host's


def sbx_examples() -> Path:
    return Path(__file__).resolve().parents[2] / "examples"


def test_exec_argv_status_env(sandbox: sbx.Sandbox):
    cp = sandbox.run(["printf", "%s|", "a b", "$HOME", "'q'", "--", "-n"], check=True)
    assert cp.stdout == "a b|$HOME|'q'|--|-n|"  # argv untouched, no shell
    assert sandbox.run(["sh", "-c", "exit 7"]).returncode == 7
    env = {**os.environ, "SDQOS_PROBE": "x y", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nowhere"}
    cp = sandbox.run(["sh", "-c", 'echo "$SDQOS_PROBE|${DBUS_SYSTEM_BUS_ADDRESS-unset}"'], env=env)
    assert cp.stdout == "x y|unset\n"
    assert sandbox.run(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    with pytest.raises(SandboxError, match="exited 3"):
        sandbox.run(["sh", "-c", "echo oops >&2; exit 3"], check=True)


def test_exec_in_replaces_process(sandbox: sbx.Sandbox):
    code = "import sys; from sdqos.sandbox import exec_in; exec_in(sys.argv[1], sys.argv[2:])"
    cp = subprocess.run([sys.executable, "-c", code, sandbox.name, "sh", "-c", "cat /proc/1/comm; exit 42"],
                        capture_output=True, text=True, timeout=30)
    assert (cp.returncode, cp.stdout) == (42, "systemd\n")
    cp = subprocess.run([sys.executable, "-c", code, sandbox.name + "-nonexistent", "true"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0 and "does not exist" in cp.stderr


def test_exec_of_a_missing_sandbox_names_it(sandbox: sbx.Sandbox):
    """`sandbox exec NAME -- CMD`: a NAME that does not exist is reported by that name (not as
    the default sandbox, and not run as a command there)."""
    missing = sandbox.name + "-nosuch"
    cp = subprocess.run([sys.executable, "-m", "sdqos", "sandbox", "exec", missing, "--", "true"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 1
    assert cp.stderr.startswith(f"sdqos sandbox: sandbox {missing} does not exist"), cp.stderr
    assert f"`sdqos sandbox up {missing}` boots it" in cp.stderr
    cp = subprocess.run([sys.executable, "-m", "sdqos", "sandbox", "exec", sandbox.name, "--", "cat", "/proc/1/comm"],
                        capture_output=True, text=True, timeout=30)
    assert (cp.returncode, cp.stdout) == (0, "systemd\n")


def test_completion_offers_sandbox_names(sandbox: sbx.Sandbox):
    """`sdqos sandbox exec|down|status <TAB>`: the sandboxes there are."""
    for words in (f"sdqos sandbox exec {sandbox.name[:-1]}", f"sdqos sandbox down {sandbox.name[:-1]}"):
        env = {**os.environ, "_SDQOS_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "3"}
        r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'sdqos'; from sdqos.cli.app import main; main()"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0 and sandbox.name in r.stdout.split(), (words, r.stdout, r.stderr)


def test_the_journal_inside_shows_a_services_output_and_stays_inside(clean_sandbox: sbx.Sandbox):
    """`journalctl -u UNIT` inside works as on a host (README points there for sdqos-sync); the
    journal is volatile, in the instance's /run: nothing in the host's /var/log/journal."""
    sb = clean_sandbox
    machine_id = sb.run(["cat", "/etc/machine-id"], check=True).stdout.strip()
    sb.run(["systemd-run", "--wait", "--quiet", "--unit=sdqos-journal-probe.service", "sh", "-c", "echo probe-7731"],
           check=True)
    deadline = time.monotonic() + 10
    while True:
        out = sb.run(["journalctl", "-u", "sdqos-journal-probe", "--no-pager", "-o", "cat"]).stdout
        if "probe-7731" in out or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "probe-7731" in out, out
    assert (sb.run_dir / "log" / "journal" / machine_id).is_dir()
    assert not Path("/var/log/journal", machine_id).exists()


def test_var_lib_is_copy_on_write(sandbox: sbx.Sandbox):
    """What runs inside writes /var/lib (podman's /var/lib/containers, systemd's stamps) into the
    instance's state dir, never into the host's /var/lib."""
    name = f"sdqos-probe-{os.getpid()}"
    sandbox.run(["sh", "-c", f"mkdir -p /var/lib/{name} && echo x > /var/lib/{name}/f"], check=True)
    try:
        assert sandbox.run(["cat", f"/var/lib/{name}/f"], check=True).stdout == "x\n"
        assert not Path("/var/lib", name).exists()
        assert (sandbox.state_dir / "varlib" / "upper" / name / "f").read_text() == "x\n"
    finally:
        sandbox.run(["rm", "-rf", f"/var/lib/{name}"])


def test_bus_from_host(sandbox: sbx.Sandbox):
    cp = subprocess.run(["busctl", f"--address={sandbox.bus_address}", "get-property", *MANAGER, "Version"],
                        capture_output=True, text=True, timeout=30, check=True)
    assert cp.stdout.startswith('s "')


def test_cgroup_paths(sandbox: sbx.Sandbox):
    need_v1(sandbox)
    leaf = sbx.CGROUP_PREFIX + sandbox.name
    for ctrl in ("cpu", "cpuacct", "cpuset", "pids", "blkio", "devices", "freezer", "systemd", "unified"):
        if not (sbx.CGROUP_ROOT / ctrl).exists():
            continue  # e.g. a legacy host without the unified hierarchy
        assert sandbox.cgroup_path(ctrl).resolve() == (sbx.CGROUP_ROOT / ctrl / leaf).resolve()
        assert sandbox.cgroup_path(ctrl).is_dir()
    assert sandbox.cgroup_path("name=systemd") == sandbox.cgroup_path("systemd")
    # memory: below the caller's own memory cgroup
    own = next(ln.split(":", 2)[2] for ln in Path("/proc/self/cgroup").read_text().splitlines()
               if "memory" in ln.split(":")[1].split(","))
    assert sandbox.cgroup_path("memory") == Path(f"/sys/fs/cgroup/memory{own.rstrip('/')}/{leaf}")
    cpuset = sandbox.cgroup_path("cpuset")
    assert read(cpuset / "cpuset.cpus") == read(cpuset.parent / "cpuset.cpus") != ""
    # the instance's PID 1 lives in init.scope of its own cgroup tree
    assert str(sandbox.pid) in read(sandbox.cgroup_path("systemd") / "init.scope" / "cgroup.procs").split()
    with pytest.raises(SandboxError, match="no cgroup hierarchy"):
        sandbox.cgroup_path("nonesuch")


# --- transient units reach the kernel, and survive daemon-reload ---------------------------------


def test_transient_slice_limits_and_daemon_reload(clean_sandbox: sbx.Sandbox):
    sb = clean_sandbox
    need_v1(sb)
    start_slice(sb, "kubepods.slice",
                "CPUShares", "t", "2048",
                "MemoryLimit", "t", "1073741824",
                "CPUQuotaPerSecUSec", "t", "500000")
    cpu, mem = sb.cgroup_path("cpu") / "kubepods.slice", sb.cgroup_path("memory") / "kubepods.slice"

    def kernel() -> tuple[str, str, str]:
        return read(cpu / "cpu.shares"), read(cpu / "cpu.cfs_quota_us"), read(mem / "memory.limit_in_bytes")

    assert kernel() == ("2048", "50000", "1073741824")
    # a child slice and a scope with a process, like kubelet's tree
    start_slice(sb, "kubepods-burstable.slice", "CPUShares", "t", "512")
    assert read(sb.cgroup_path("cpu") / "kubepods.slice" / "kubepods-burstable.slice" / "cpu.shares") == "512"

    sb.systemctl("daemon-reload", check=True)  # needs /run/systemd/{system.control,transient} in the unit path
    props = show(sb, "kubepods.slice", "CPUShares", "MemoryLimit", "CPUQuotaPerSecUSec", "ActiveState", "FragmentPath")
    assert props == {"CPUShares": "2048", "MemoryLimit": "1073741824", "CPUQuotaPerSecUSec": "500ms",
                     "ActiveState": "active", "FragmentPath": "/run/systemd/transient/kubepods.slice"}
    assert kernel() == ("2048", "50000", "1073741824")
    # runtime property changes land in system.control and survive a reload too
    sb.systemctl("set-property", "--runtime", "kubepods.slice", "CPUShares=4096", check=True)
    sb.systemctl("daemon-reload", check=True)
    assert show(sb, "kubepods.slice", "CPUShares")["CPUShares"] == "4096"
    assert kernel() == ("4096", "50000", "1073741824")


def test_scope_with_process(clean_sandbox: sbx.Sandbox):
    sb = clean_sandbox
    need_v1(sb)
    p = sbx.popen(sb, ["systemd-run", "--quiet", "--scope", "--unit=machine-sdqostest.scope", "--slice=machine.slice",
                       "-p", "CPUShares=300", "sleep", "600"])
    try:
        wait_for(lambda: sb.systemctl("is-active", "machine-sdqostest.scope").stdout.strip() == "active", "scope")
        d = sb.cgroup_path("cpu") / "machine.slice" / "machine-sdqostest.scope"
        assert read(d / "cpu.shares") == "300"
        assert len(read(d / "cgroup.procs").split()) == 1
    finally:
        sbx.reset_units(sb)  # what clean_sandbox does before the next test
        p.wait(timeout=10)
    assert not (sb.cgroup_path("cpu") / "machine.slice" / "machine-sdqostest.scope").exists()


def test_reset_units(clean_sandbox: sbx.Sandbox):
    sb = clean_sandbox
    start_slice(sb, "kubepods.slice")
    start_slice(sb, "kubepods-besteffort.slice", "CPUShares", "t", "2")
    sbx.reset_units(sb)
    left = sb.systemctl("list-units", "--all", "--plain", "--no-legend", "kubepods*").stdout
    assert "loaded" not in left
    assert not (sb.cgroup_path("cpu") / "kubepods.slice").exists()


def test_timer_and_service_from_run_systemd_system(clean_sandbox: sbx.Sandbox):
    """/run/systemd/system (in the private /run) is on the unit path; services and timers with
    default dependencies work (they need sysinit.target)."""
    sb = clean_sandbox
    d = sb.run_dir / "systemd" / "system"
    d.mkdir(parents=True, exist_ok=True)
    (d / "sdqos-tick.service").write_text("[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo tick >> /run/sdqos-tick'\n")
    (d / "sdqos-tick.timer").write_text("[Timer]\nOnActiveSec=1ms\nAccuracySec=1ms\n")
    try:
        sb.systemctl("daemon-reload", check=True)
        sb.systemctl("start", "sdqos-tick.timer", check=True)
        wait_for(lambda: (sb.run_dir / "sdqos-tick").exists(), "the timer's service to run")
        assert show(sb, "sdqos-tick.service", "Result")["Result"] == "success"
        cp = sb.run(["systemd-run", "--quiet", "--wait", "--unit=sdqos-transient-svc", "true"])
        assert cp.returncode == 0, cp.stderr
    finally:
        sb.systemctl("stop", "sdqos-tick.timer")
        for f in ("sdqos-tick.service", "sdqos-tick.timer"):
            (d / f).unlink(missing_ok=True)
        (sb.run_dir / "sdqos-tick").unlink(missing_ok=True)
        sb.systemctl("daemon-reload")


# --- several sandboxes, teardown -----------------------------------------------------------------


def test_two_sandboxes_coexist_and_down_leaves_nothing(sandbox: sbx.Sandbox, sandbox_name: str):
    need_v1(sandbox)
    a_name, b_name = f"{sandbox_name}-a", f"{sandbox_name}-b"
    try:
        t0 = time.monotonic()
        a = sbx.up(a_name)
        boot = time.monotonic() - t0
        b = sbx.up(b_name)
        assert boot < 15
        assert len({a.pid, b.pid, sandbox.pid}) == 3
        assert a.bus_address != b.bus_address
        assert a.cgroup_path("cpu") != b.cgroup_path("cpu")
        start_slice(a, "kubepods.slice", "CPUShares", "t", "1234")
        assert read(a.cgroup_path("cpu") / "kubepods.slice" / "cpu.shares") == "1234"
        assert not (b.cgroup_path("cpu") / "kubepods.slice").exists()
        assert b.systemctl("is-active", "kubepods.slice").stdout.strip() != "active"
        assert {a_name, b_name} <= {s.name for s in sbx.list_sandboxes() if s.running}
        # a process in a scope, and a mount inside: down must take both along
        p = sbx.popen(a, ["systemd-run", "--quiet", "--scope", "--unit=machine-x.scope", "sleep", "600"])
        wait_for(lambda: a.systemctl("is-active", "machine-x.scope").stdout.strip() == "active", "scope")
        a.run(["mount", "-t", "tmpfs", "tmpfs", "/run/systemd/system"], check=True)

        t0 = time.monotonic()
        assert sbx.down(a_name) is True
        assert time.monotonic() - t0 < 10
        p.wait(timeout=10)
        assert leftovers(a) == []
        assert not sbx.status(a_name).running
        assert sbx.down(a_name) is False  # idempotent
        assert sbx.status(b_name).system_state == "running"  # the other one is unaffected
        assert sbx.status(sandbox.name).system_state == "running"
    finally:
        sbx.down(a_name)
        sbx.down(b_name)
    assert leftovers(b) == []


def test_up_twice_is_an_error(sandbox: sbx.Sandbox):
    with pytest.raises(SandboxError, match="already running"):
        sbx.up(sandbox.name)
    assert sbx.status(sandbox.name).system_state == "running"


def test_crashed_sandbox_is_cleaned_up(sandbox: sbx.Sandbox, sandbox_name: str):
    name = f"{sandbox_name}-crash"
    try:
        sb = sbx.up(name)
        os.kill(sb.pid, 9)  # systemd dies; state dir and cgroups stay behind
        wait_for(lambda: not sbx.status(name).running, "status to notice")
        assert sb.state_dir.exists()
        assert "PID 1 is gone" in sbx.status(name).describe()
        with pytest.raises(SandboxError, match="not running"):
            sbx.get(name)
        sb2 = sbx.up(name)  # up cleans the leftovers and boots afresh
        assert sb2.pid != sb.pid and sbx.status(name).running
    finally:
        sbx.down(name)
    assert leftovers(sb2) == []


def test_half_made_sandbox_is_cleaned_up(sandbox: sbx.Sandbox, sandbox_name: str):
    """State dir without state.json, and cgroup dirs with sub-cgroups but no processes."""
    name = f"{sandbox_name}-half"
    leaf = sbx.CGROUP_PREFIX + name
    dirs = [sbx.CGROUP_ROOT / "cpu" / leaf / "kubepods.slice", sbx.CGROUP_ROOT / "pids" / leaf]
    sdir = sbx.state_dir(name)
    try:
        (sdir / "run").mkdir(parents=True)
        for d in dirs:
            d.mkdir(parents=True)
        st = sbx.status(name)
        assert not st.running and "state file" in st.problem
        assert sbx.down(name) is True
        assert not sdir.exists() and not any(d.exists() for d in dirs)
        assert not (sbx.CGROUP_ROOT / "cpu" / leaf).exists()
    finally:
        sbx.down(name)


# --- errors --------------------------------------------------------------------------------------

FAKE_HEAD = '#!/bin/sh\n[ "$1" = --version ] && { echo "systemd 252 (fake)"; exit 0; }\n'


def test_boot_failure_reports_console_and_cleans_up(sandbox: sbx.Sandbox, sandbox_name: str,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake = tmp_path / "fake-systemd"
    fake.write_text(FAKE_HEAD + "echo fake systemd refusing to boot\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sbx.boot, "_systemd_binary", lambda: str(fake))
    name = f"{sandbox_name}-fail"
    with pytest.raises(SandboxError, match="fake systemd refusing to boot") as e:
        sbx.up(name)
    assert "\n" not in str(e.value)
    assert not sbx.state_dir(name).exists()
    assert not (sbx.CGROUP_ROOT / "cpu" / (sbx.CGROUP_PREFIX + name)).exists()


def test_bus_timeout_is_a_clear_error(sandbox: sbx.Sandbox, sandbox_name: str,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fake = tmp_path / "fake-systemd"
    fake.write_text(FAKE_HEAD + "echo stuck\nexec sleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sbx.boot, "_systemd_binary", lambda: str(fake))
    name = f"{sandbox_name}-stuck"
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match=r"bus not up after 2s .*stuck"):
        sbx.up(name, timeout=2)
    assert time.monotonic() - t0 < 8
    assert not sbx.state_dir(name).exists()
    assert not (sbx.CGROUP_ROOT / "cpu" / (sbx.CGROUP_PREFIX + name)).exists()


def test_prerequisite_errors(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sbx.prereqs, "SYSTEMD_CANDIDATES", ("/nonexistent/systemd",))
    problems = sbx.missing_prerequisites()
    assert any("root" in p for p in problems)
    assert any("no systemd binary" in p for p in problems)
    with pytest.raises(SandboxError, match="cannot boot sandbox x: must run as root"):
        sbx.up("x")
    for bad in ("", "../x", "a/b", "-x", ".x", "x" * 41, "a b"):
        with pytest.raises(SandboxError, match="invalid sandbox name"):
            sbx.check_name(bad)


V2_SCRIPT = """
import os, subprocess, sys
subprocess.run(["umount", "-l", "/sys/fs/cgroup"], check=True)
subprocess.run(["mount", "-t", "cgroup2", "cgroup2", "/sys/fs/cgroup"], check=True)
from sdqos import sandbox as sbx
name = sys.argv[1]
try:
    sb = sbx.up(name)
    assert sb.cgroup_mode == "unified", sb
    assert sb.cgroup_path("cpu") == sb.cgroup_path("memory") == sbx.CGROUP_ROOT / (sbx.CGROUP_PREFIX + name)
    assert sb.systemctl("is-system-running").stdout.strip() == "running"
    mounts = sb.run(["cat", "/proc/self/mountinfo"], check=True).stdout
    assert any(l.split()[4] == "/sys/fs/cgroup" and " - cgroup2 " in l for l in mounts.splitlines()), mounts
    sb.run(["busctl", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
            "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
            "kubepods.slice", "fail", "0", "0"], check=True)
    for _ in range(100):
        if (sb.cgroup_path("cpu") / "kubepods.slice").is_dir():
            break
        import time; time.sleep(0.05)
    assert (sb.cgroup_path("cpu") / "init.scope").is_dir() and (sb.cgroup_path("cpu") / "kubepods.slice").is_dir()
    top = sb.cgroup_path("cpu")
finally:
    sbx.down(name)
assert not top.exists()
print("ok")
"""


def test_cgroup2_only_host_emulated(sandbox: sbx.Sandbox, sandbox_name: str):
    """The cgroup2-only code path, in a mount namespace whose /sys/fs/cgroup is the host's cgroup2
    hierarchy (here without the v1-bound controllers, so no limits are checked)."""
    if "unified" not in sandbox.cgroups:
        pytest.skip("no cgroup2 hierarchy on this host to emulate a cgroup2-only host with")
    name = f"{sandbox_name}-v2"
    cp = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", sys.executable, "-c", V2_SCRIPT, name],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0 and cp.stdout.strip() == "ok", cp.stderr
    assert not (Path("/sys/fs/cgroup/unified") / (sbx.CGROUP_PREFIX + name)).exists()
    assert not sbx.state_dir(name).exists()
