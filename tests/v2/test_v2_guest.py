"""sdqos on a real cgroup v2 kernel with a real systemd as PID 1 (the guest is the throwaway machine):
the values kubelet would set are in the kernel's v2 files, a second sync has nothing to do, and
README's first command (a sandbox on a host where /run is a tmpfs) works there."""

from __future__ import annotations

import json
import time

from .suites import one_suite

INFINITY = 2**64 - 1
PAGE = 4096


def cgroup_dir(unit: str) -> str:
    stem = unit[: -len(".slice")]
    parts = stem.split("-")
    return "/sys/fs/cgroup/" + "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def expected_files(props: dict[str, int]) -> dict[str, str]:
    """What the v2 kernel files hold for a unit's planned properties (memory in whole pages, as the
    kernel's page counters keep it; cpu.max as quota and period in µs). Only the files of the
    properties the unit has."""
    def mem(v: int) -> str:
        return "max" if v == INFINITY else str(v // PAGE * PAGE)

    period = props.get("CPUQuotaPeriodUSec", 100_000)
    out = {}
    if "CPUWeight" in props:
        out["cpu.weight"] = str(props["CPUWeight"])
    if "CPUQuotaPerSecUSec" in props:
        per_sec = props["CPUQuotaPerSecUSec"]
        # no quota: systemd leaves the period in cpu.max as it was (the kernel's 100 ms), not CPUQuotaPeriodUSec
        out["cpu.max"] = "max 100000" if per_sec == INFINITY else f"{per_sec * period // 1_000_000} {period}"
    for prop, file in (("MemoryMax", "memory.max"), ("MemoryMin", "memory.min"), ("MemoryLow", "memory.low"),
                       ("MemoryHigh", "memory.high"), ("MemorySwapMax", "memory.swap.max")):
        if prop in props:
            out[file] = mem(props[prop])
    if "TasksMax" in props:
        out["pids.max"] = "max" if props["TasksMax"] == INFINITY else str(props["TasksMax"])
    return out


def kernel_files(guest, unit: str, files) -> dict[str, str]:
    d = cgroup_dir(unit)
    out = guest.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in files))
    return dict(line.split("=", 1) for line in out.splitlines())


def test_the_guest_is_cgroup_v2_only_with_its_suites_systemd(v2guest):
    from .guest import SUITES

    assert v2guest.check("stat -f -c %T /sys/fs/cgroup").strip() == "cgroup2fs"
    assert "memory" in v2guest.check("cat /sys/fs/cgroup/cgroup.controllers").split()
    version = int(v2guest.check("systemctl --version").split()[1])
    assert version == SUITES[v2guest.suite] or (SUITES[v2guest.suite] is None and version >= 257)


def test_sync_puts_kubelets_v2_values_in_the_kernel_and_then_has_nothing_to_do(v2guest):
    g = v2guest
    r = g.run("sdqos sync --config /root/examples -o json")
    assert r.rc == 0, r.stderr
    report = json.loads(r.stdout)
    assert len(report["created"]) == 8 and report["errors"] == []
    plan = json.loads(g.check("sdqos plan --config /root/examples -o json"))
    assert plan["cgroup"] == "v2"  # detected on this host
    slices = [u for u in plan["units"] if u["name"].endswith(".slice") and u["name"].startswith("kubepods")]
    assert len(slices) == 8
    for u in slices:
        want = expected_files(u["properties"])
        assert kernel_files(g, u["name"], want) == want, u["name"]
    again = json.loads(g.check("sdqos sync --config /root/examples -o json"))
    assert again["created"] == again["updated"] == again["removed"] == [] and again["drift"] == []
    assert len(again["unchanged"]) == 8


def test_readme_first_command_works_where_run_is_a_tmpfs(v2guest):
    g = v2guest
    # /run is a tmpfs of its own, as on every systemd host (the mount point's file system differs from /'s)
    assert g.check("stat -f -c %T /run; stat -f -c %T /").split() == ["tmpfs", "ext2/ext3"]
    r = g.run("cd /root && sdqos sandbox up demo && sdqos sandbox exec demo -- sdqos sync --config examples "
              "&& sdqos sandbox exec -n demo -- systemctl is-active kubepods.slice; rc=$?; sdqos sandbox down demo; "
              "exit $rc", timeout=300)
    assert r.rc == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("8 created") for ln in lines) and "active" in lines
    assert g.check("ls /run/sdqos-sandbox 2>/dev/null | wc -l").strip() == "0"  # nothing left


@one_suite("bookworm")
def test_the_quickstart_config_works_on_a_2_gib_one_cpu_host(v2guest):
    """README's quickstart on the guest (1 CPU, 2 GiB, its real capacity; no podman there, so up to
    the sync and status): plan, diff (exit 4), sync, status, with no warning, and kubepods.slice
    gets a real CPU weight."""
    g = v2guest
    assert g.check("nproc").strip() == "1"
    g.check("rm -rf /etc/sdqos && mkdir -p /etc/sdqos && cp -r /root/examples/quickstart/. /etc/sdqos/")
    try:
        plan = g.run("sdqos plan -o json")
        assert plan.rc == 0, plan.stderr
        doc = json.loads(plan.stdout)
        assert doc["warnings"] == [] and doc["errors"] == []
        kubepods = next(u for u in doc["units"] if u["name"] == "kubepods.slice")
        assert kubepods["properties"]["CPUWeight"] > 1
        assert g.run("sdqos diff").rc == 4
        sync = g.run("sdqos sync")
        assert sync.rc == 0 and "warning" not in sync.stdout + sync.stderr, sync.stdout + sync.stderr
        status = g.run("sdqos status --pod demo/hello --interval 0")
        assert status.rc == 0 and "demo/hello" in status.stdout, status.stdout + status.stderr
        assert kernel_files(g, "kubepods.slice", ["cpu.weight"]) == {"cpu.weight": str(kubepods["properties"]["CPUWeight"])}
    finally:
        g.run("systemctl stop kubepods.slice; rm -rf /etc/sdqos /run/sdqos")


NODE = """\
capacity: {cpu: "4", memory: 8Gi, pids: "100000"}
kubeReserved: {cpu: 500m, memory: 512Mi}
podPidsLimit: 1024
cpuCFSQuotaPeriod: 50ms
featureGates: {QOSReserved: true}
qosReserved: {memory: 50%}
"""
PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop}
spec:
  containers:
  - name: postgres
    resources: {limits: {cpu: "1", memory: 1Gi}}
  - name: exporter
    resources: {limits: {cpu: 200m, memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  initContainers:
  - name: migrate
    resources: {requests: {cpu: 500m, memory: 128Mi}, limits: {cpu: "1", memory: 256Mi}}
  - name: shipper
    restartPolicy: Always
    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}}
  containers:
  - name: nginx
    resources: {requests: {cpu: 250m, memory: 128Mi}, limits: {cpu: 500m, memory: 256Mi}}
  - name: limited
    resources: {limits: {cpu: 300m, memory: 96Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop}
spec:
  containers:
  - name: job
"""


def write_config(g, node: str = NODE, pods: str = PODS) -> str:
    g.check(f"rm -rf /root/real && mkdir -p /root/real/pods && cat > /root/real/node.yaml <<'X'\n{node}X\n"
            f"cat > /root/real/pods/shop.yaml <<'X'\n{pods}X\n")
    return "/root/real"


def planned(g, config: str) -> dict:
    return json.loads(g.check(f"sdqos plan --config {config} -o json"))


def check_kernel(g, plan: dict) -> int:
    """Every planned slice, and every container scope that runs, against the kernel's files."""
    checked = 0
    for u in plan["units"]:
        if u["name"].endswith(".slice") and u["kind"] in ("node", "tier", "pod"):
            want = expected_files(u["properties"])
            assert kernel_files(g, u["name"], want) == want, u["name"]
            checked += 1
    for p in plan["pods"]:
        for c in p["containers"]:
            d = f"{cgroup_dir(p['slice'])}/{c['scope']}"
            if g.run(f"test -d {d}").rc != 0:
                continue
            want = expected_files(c["properties"])
            want["memory.oom.group"] = "1"  # kubelet's v2 default (singleProcessOOMKill unset)
            got = dict(ln.split("=", 1) for ln in g.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in want)).splitlines())
            assert got == want, c["scope"]
            for pid in g.check(f"cat {d}/cgroup.procs").split():
                assert int(g.check(f"cat /proc/{pid}/oom_score_adj")) == c["oomScoreAdj"], (c["scope"], pid)
            checked += 1
    return checked


def test_a_realistic_config_reaches_the_v2_kernel_and_survives_reload_and_reexec(v2guest):
    """All three classes, init containers, a sidecar, a limit-only container, qosReserved,
    podPidsLimit, a 50 ms CFS period; running containers (sdqos run) with their OOM scores; then
    daemon-reload and daemon-reexec keep every value, quotas included."""
    g = v2guest
    cfg = write_config(g)
    r = g.run(f"sdqos sync --config {cfg} -o json")
    assert r.rc == 0, r.stderr
    for pid in [g.spawn_run(f"--config {cfg} {pod} {c} -- sleep 100000")
                for pod, c in (("shop/db", "postgres"), ("shop/web", "nginx"), ("shop/web", "limited"), ("shop/batch", "job"))]:
        g.wait_running(pid)
    plan = planned(g, cfg)
    assert plan["cgroup"] == "v2"
    import time

    deadline = time.monotonic() + 60
    while g.run(f"ls -d /sys/fs/cgroup/kubepods.slice/*/*/sdqos-pod*-job.scope /sys/fs/cgroup/kubepods.slice/*/sdqos-pod*-postgres.scope "
                "/sys/fs/cgroup/kubepods.slice/*/*/sdqos-pod*-nginx.scope /sys/fs/cgroup/kubepods.slice/*/*/sdqos-pod*-limited.scope").rc:
        assert time.monotonic() < deadline, "the containers did not start"
        time.sleep(0.5)
    assert check_kernel(g, plan) == 6 + 4  # node, 2 tiers, 3 pods, and the 4 running containers
    for step in ("systemctl daemon-reload", "systemctl daemon-reexec"):
        g.check(step, timeout=120)
        assert check_kernel(g, plan) == 10, step
    assert json.loads(g.check(f"sdqos sync --config {cfg} -o json"))["updated"] == []


OOM_PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: shop}
spec:
  containers:
  - name: app
    resources: {requests: {memory: 32Mi}, limits: {memory: 48Mi}}
"""


def test_an_oom_kill_takes_the_whole_container_unless_single_process_oom_kill(v2guest):
    """kubelet on v2 sets memory.oom.group=1 (the scope's OOMPolicy=kill): one process over the
    limit takes the whole container. singleProcessOOMKill: true leaves memory.oom.group 0 and only
    the chosen process dies. Either way swap is off (memory.swap.max 0, NoSwap)."""
    import time

    g = v2guest
    hog = "sleep 100000 & python3 -c 'a = bytearray(200 << 20)'; sleep 100000"
    for single, survives in (("", False), ("singleProcessOOMKill: true\n", True)):
        cfg = write_config(g, NODE + single, OOM_PODS)
        g.check(f"sdqos sync --config {cfg}")
        c = planned(g, cfg)["pods"][0]["containers"][0]
        d = f"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/{planned(g, cfg)['pods'][0]['slice']}/{c['scope']}"
        g.check(f"(sdqos run --config {cfg} shop/hog app -- sh -c \"{hog}\" >/dev/null 2>&1 &); sleep 0.2")
        deadline = time.monotonic() + 60
        while c["scope"] not in g.run("dmesg | grep oom-kill:").stdout:  # the kernel names the cgroup
            assert time.monotonic() < deadline, "no OOM kill"
            time.sleep(0.5)
        time.sleep(2)
        state = g.run(f"systemctl is-active {c['scope']}").stdout.strip()
        if survives:
            assert state == "active"
            assert g.check(f"cat {d}/memory.oom.group").strip() == "0"
            assert g.check(f"cat {d}/memory.swap.max").strip() == "0"
            assert len(g.check(f"cat {d}/cgroup.procs").split()) >= 2  # sh and sleep are still there
        else:
            assert state in ("inactive", "failed", "unknown"), state
            assert g.run(f"test -d {d}").rc != 0 or g.check(f"cat {d}/cgroup.procs").strip() == ""
        g.run(f"systemctl stop {c['scope']}; systemctl reset-failed; dmesg -C")


@one_suite("trixie")
def test_drift_in_a_v2_file_is_restored_and_a_removed_pod_goes(v2guest):
    g = v2guest
    cfg = write_config(g)
    g.check(f"sdqos sync --config {cfg}")
    plan = planned(g, cfg)
    web = next(p for p in plan["pods"] if p["name"] == "web")
    g.check(f"echo 123456789 > {cgroup_dir(web['slice'])}/memory.max")  # behind systemd's back
    report = json.loads(g.check(f"sdqos sync --config {cfg} -o json"))
    assert [d["unit"] for d in report["drift"]] == [web["slice"]]
    assert check_kernel(g, plan) >= 6
    g.check(f"cat > {cfg}/pods/shop.yaml <<'X'\n{PODS.split('---')[0]}X\n")  # only db is left
    report = json.loads(g.check(f"sdqos sync --config {cfg} -o json --max-removals 100%"))
    assert web["slice"] in report["removed"]
    assert g.run(f"test -d {cgroup_dir(web['slice'])}").rc != 0


def test_memory_qos_reaches_v2_memory_high_and_min(v2guest):
    """MemoryQoS (cgroup v2 only): memory.high throttles Burstable containers below their limit; with
    memoryReservationPolicy TieredReservation, memory.min protects what Guaranteed pods request."""
    g = v2guest
    node = NODE.replace("featureGates: {QOSReserved: true}", "featureGates: {QOSReserved: true, MemoryQoS: true}")
    cfg = write_config(g, node + "memoryReservationPolicy: TieredReservation\n")
    g.check(f"sdqos sync --config {cfg}")
    g.sdqos_run(f"--config {cfg} shop/web nginx -- sleep 100000")
    plan = planned(g, cfg)
    db = next(p for p in plan["pods"] if p["name"] == "db")
    web = next(p for p in plan["pods"] if p["name"] == "web")
    nginx = next(c for c in web["containers"] if c["name"] == "nginx")
    assert db["properties"]["MemoryMin"] > 0 and nginx["properties"]["MemoryHigh"] < INFINITY
    import time

    deadline = time.monotonic() + 60
    while g.run(f"test -d {cgroup_dir(web['slice'])}/{nginx['scope']}").rc:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert check_kernel(g, plan) == 6 + 1
    assert int(g.check(f"cat {cgroup_dir(db['slice'])}/memory.min")) == db["properties"]["MemoryMin"] // PAGE * PAGE


@one_suite("trixie")
def test_status_and_metrics_read_v2_usage(v2guest):
    """status and metrics on v2: entitlements from the v2 properties, memory usage (memory.current
    through systemd) and CPU usage (cpu.stat) of a busy container."""
    g = v2guest
    cfg = write_config(g)
    g.check(f"sdqos sync --config {cfg}")
    g.check(f"(sdqos run --config {cfg} shop/web nginx -- python3 -c 'x = bytearray(32 << 20)\nwhile True: pass' "
            ">/dev/null 2>&1 &)")
    # until the command runs in its scope with its 32 MiB charged there (sdqos run under TCG can
    # take seconds before it execs)
    running = ("p=$(pgrep -f '^python3 -c x = bytearray') && cg=$(cut -d: -f3 /proc/$p/cgroup) && "
               "case $cg in *-nginx.scope) test $(cat /sys/fs/cgroup$cg/memory.current) -ge 33554432;; *) false;; esac")
    deadline = time.monotonic() + 120
    while g.run(running).rc != 0:
        assert time.monotonic() < deadline, g.run("ps -ef; journalctl -b -n 40 --no-pager").stdout
        time.sleep(1)
    st = json.loads(g.check(f"sdqos status --config {cfg} -o json --interval 1", timeout=120))
    units = {u["unit"]: u for u in st["units"]}
    web = next(u for u in st["units"] if u["kind"] == "pod" and "shop/web" in u["label"])
    assert web["qos"] == "Burstable" and web["running"]
    nginx = next(u for u in st["units"] if u["kind"] == "container" and u["unit"].endswith("-nginx.scope"))
    assert nginx["usage"]["memoryBytes"] >= 32 << 20  # memory.current, through systemd
    assert nginx["usage"]["cpuCores"] > 0.1  # cpu.stat's usage over the interval
    assert units["kubepods.slice"]["entitled"]["memoryLimit"] == 7.5 * 2**30
    assert units["kubepods.slice"]["entitled"]["cpuWeight"] == 137  # v2: a weight, no shares
    text = g.check(f"sdqos metrics --config {cfg}", timeout=120)
    series = [ln for ln in text.splitlines() if ln.startswith("sdqos_unit_memory_usage_bytes{") and "nginx" in ln]
    assert series and float(series[0].rsplit(" ", 1)[1]) >= 32 << 20, text[-2000:]
    assert any(ln.startswith("sdqos_unit_cpu_weight{") for ln in text.splitlines())


VM = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: vm1}
spec:
  resources:
    requests: {cpu: 500m}
    limits: {cpu: "1", memory: 64Mi}
  overhead: {cpu: 100m, memory: 64Mi}
"""


@one_suite("trixie")
def test_a_vm_in_machine_slice_shares_the_node_budget_on_v2(v2guest):
    """A qemu (the guest's own kernel as a paused tiny guest) started by `sdqos run --vm` lands in
    machine.slice with its v2 values; kubepods.slice gets what the VM leaves; the OOM score is set."""
    g = v2guest
    cfg = write_config(g)
    g.check(f"mkdir -p {cfg}/vms && cat > {cfg}/vms/vm1.yaml <<'X'\n{VM}X\n")
    g.check(f"sdqos sync --config {cfg}")
    kernel = g.check("ls /boot/vmlinuz-* | tail -1").strip()
    g.sdqos_run(f"--config {cfg} --vm vm1 -- qemu-system-x86_64 -S -nodefaults -display none -m 32 -kernel {kernel}")
    import time

    deadline = time.monotonic() + 60
    while g.run("ls -d /sys/fs/cgroup/machine.slice/machine-vm1.scope").rc:
        assert time.monotonic() < deadline, g.check("systemctl list-units 'machine*' --no-pager")
        time.sleep(0.5)
    plan = planned(g, cfg)
    vp = next(v for v in plan["vms"] if v["name"] == "vm1")
    want = expected_files(vp["properties"])
    d = "/sys/fs/cgroup/machine.slice/machine-vm1.scope"
    got = dict(ln.split("=", 1) for ln in g.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in want)).splitlines())
    assert got == want
    assert got["cpu.max"] == "55000 50000" and got["memory.max"] == str(128 << 20)  # 1.1 CPU per 50 ms; 64 + 64 MiB
    pid = g.check(f"cat {d}/cgroup.procs").split()[0]
    # `run` writes the score after its pass through sync's diff and apply has set the values: wait for it
    deadline = time.monotonic() + 60
    while int(g.check(f"cat /proc/{pid}/oom_score_adj")) != vp["oomScoreAdj"]:
        assert time.monotonic() < deadline, g.check(f"cat /proc/{pid}/oom_score_adj")
        time.sleep(0.5)
    node = next(u for u in plan["units"] if u["kind"] == "node")
    machine = next(u for u in plan["units"] if u["name"] == "machine.slice")
    assert node["properties"]["MemoryMax"] + machine["properties"]["MemoryMax"] <= 7.5 * 2**30
    assert check_kernel(g, plan) >= 6
    g.check("pkill -f 'qemu-system-x86_64 -[S]'")


@one_suite("bookworm")
def test_adopt_moves_a_running_process_with_its_oom_score_on_v2(v2guest):
    """`sdqos adopt` of a process started elsewhere: it lands in its container's scope, created
    around it with the container's v2 values (memory.oom.group and memory.swap.max included), and
    gets the container's OOM score."""
    import time

    g = v2guest
    cfg = write_config(g, NODE, OOM_PODS)
    g.check(f"sdqos sync --config {cfg}")
    pod = planned(g, cfg)["pods"][0]
    c = pod["containers"][0]
    g.check("(systemd-run --unit=loose.scope --scope sleep 100000 >/dev/null 2>&1 </dev/null &)")
    deadline = time.monotonic() + 60
    while not (pids := g.run("cat /sys/fs/cgroup/system.slice/loose.scope/cgroup.procs").stdout.split()):
        assert time.monotonic() < deadline, "loose.scope did not start"
        time.sleep(0.5)
    pid = pids[0]
    out = g.check(f"sdqos adopt --config {cfg} shop/hog app {pid}")
    assert out.startswith(f"created {c['scope']}"), out
    d = f"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/{pod['slice']}/{c['scope']}"
    deadline = time.monotonic() + 30
    while pid not in g.run(f"cat {d}/cgroup.procs").stdout.split():
        assert time.monotonic() < deadline
        time.sleep(0.5)
    want = expected_files(c["properties"])
    got = dict(ln.split("=", 1) for ln in g.check("; ".join(f"echo {f}=$(cat {d}/{f})" for f in want)).splitlines())
    assert got == want
    assert g.check(f"cat {d}/memory.oom.group").strip() == "1"
    assert int(g.check(f"cat /proc/{pid}/oom_score_adj")) == c["oomScoreAdj"]
    g.run(f"systemctl stop {c['scope']} loose.scope; systemctl reset-failed")


def test_the_systemd_version_choice(v2guest):
    """Manager.Version decides one thing: systemd >= 258 has no cgroup v1 properties, so a sync asked
    to send them is refused with one line; below 258 systemd still takes them (and maps them to v2)."""
    g = v2guest
    major = int(g.check("systemctl --version | head -1").split()[1])
    r = g.run("sdqos sync --config /root/examples --cgroup v1")
    if major >= 258:
        assert r.rc == 1 and r.stdout == ""
        assert r.stderr.startswith(f"sdqos: error: systemd {major}") and "has no cgroup v1 properties" in r.stderr
        assert "Traceback" not in r.stderr
    else:
        assert r.rc == 0, r.stderr
    g.run("systemctl stop kubepods.slice; rm -rf /run/sdqos")
