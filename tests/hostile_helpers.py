"""Helpers for the hostile-input and fault tests (tests/test_hostile_inputs.py, tests/test_faults.py).

Both modules boot a private sandbox of their own (they kill dbus, re-exec systemd, plant symlinks
in the run dir, put VM values on machine.slice...): nothing they do can leak into the session
sandbox other test modules share.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from pathlib import Path

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid

from .sbhelpers import INFINITY, expected_kernel, sdqos_in, wait_for
from .sbhelpers import kernel_values as kernel_of

# --- a config of our own (the shape of examples/, pinned here so edits there cannot break us) ---

NODE = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
kubeReserved:
  cpu: 500m
  memory: 1Gi
  pid: "1000"
systemReserved:
  cpu: 500m
  memory: 1Gi
evictionHard:
  memory.available: 200Mi
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
podPidsLimit: 4096
featureGates:
  QOSReserved: true
qosReserved:
  memory: 50%
capacity:
  cpu: "8"
  memory: 16Gi
  pids: "4194304"
"""

DB = """\
apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: shop
  uid: 0d5c8a4e-6f3b-4c1e-9a2d-7b8e1f0c3a55
spec:
  containers:
  - name: postgres
    image: postgres:17
    resources:
      limits: {cpu: "2", memory: 4Gi}
"""

MORE = """\
apiVersion: v1
kind: Pod
metadata:
  name: api
  namespace: shop
spec:
  containers:
  - name: api
    resources:
      requests: {cpu: 500m, memory: 512Mi}
  - name: metrics
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: report
  namespace: batch
spec:
  containers:
  - name: report
---
apiVersion: v1
kind: Pod
metadata:
  name: node-agent
  namespace: kube-system
spec:
  priorityClassName: system-node-critical
  containers:
  - name: agent
    resources:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {memory: 256Mi}
"""

WEB = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  initContainers:
  - name: migrate
    resources:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: "1", memory: 512Mi}
  - name: log-shipper
    restartPolicy: Always
    resources:
      requests: {cpu: 50m, memory: 32Mi}
      limits: {cpu: 100m, memory: 64Mi}
  containers:
  - name: nginx
    resources:
      requests: {cpu: 250m, memory: 128Mi}
      limits: {cpu: 500m, memory: 256Mi}
"""

FRESH = """\
apiVersion: v1
kind: Pod
metadata: {name: fresh, namespace: hostile}
spec:
  containers:
  - name: app
    resources:
      requests: {cpu: 10m, memory: 16Mi}
      limits: {cpu: 20m, memory: 32Mi}
"""


def _slice(tier: str, uid: str) -> str:
    return f"kubepods-{tier + '-' if tier else ''}pod{uid.replace('-', '_')}.slice"


DB_SLICE = _slice("", "0d5c8a4e-6f3b-4c1e-9a2d-7b8e1f0c3a55")
WEB_SLICE = _slice("burstable", stable_uid("shop", "web"))
API_SLICE = _slice("burstable", stable_uid("shop", "api"))
FRESH_SLICE = _slice("burstable", stable_uid("hostile", "fresh"))
WEB_UID = stable_uid("shop", "web")


def write_base(d: Path) -> Path:
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    (d / "pods" / "db.yaml").write_text(DB)
    (d / "pods" / "more.yaml").write_text(MORE)
    (d / "pods" / "web.yaml").write_text(WEB)
    return d


# --- sandboxes ---------------------------------------------------------------------------------


@contextlib.contextmanager
def private_sandbox(name: str):
    sb = sbx.up(name)
    try:
        yield sb
    finally:
        sbx.down(name)


def sync(sb: sbx.Sandbox, config: Path | str, *extra: str, env: dict | None = None, timeout: float = 120):
    """`sdqos sync --config C -o json EXTRA` inside: (returncode, report or None, stderr)."""
    r = sdqos_in(sb, "sync", "--config", str(config), "-o", "json", *extra, env=env, timeout=timeout)
    report = json.loads(r.stdout) if r.stdout.strip() else None
    return r.returncode, report, r.stderr


def plan_in_process(config: Path | str, *extra: str) -> tuple[int, str]:
    """`sdqos plan -o json` (no D-Bus), the CLI run in this process (a subprocess costs ~0.5 s of
    interpreter start-up per case): (exit code, stderr)."""
    from typer.testing import CliRunner

    from sdqos.cli.app import app

    r = CliRunner().invoke(app, ["plan", "--config", str(config), "-o", "json", *extra])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stderr


# --- what the operator reads -------------------------------------------------------------------


def stderr_lines(stderr: str) -> list[str]:
    """stderr must be sdqos's own one-line messages: no traceback, no library noise."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    junk = [ln for ln in lines if not ln.startswith("sdqos: ")]
    assert not junk, "stderr holds more than sdqos' one-line messages:\n" + stderr[-3000:]
    return lines


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr_lines(stderr) if ln.startswith("sdqos: error: ")]


def assert_errors(stderr: str, patterns: list[str]) -> list[str]:
    """The error lines on stderr are exactly one per pattern (regex, fullmatch after the prefix)."""
    lines = error_lines(stderr)
    bodies = [ln[len("sdqos: error: "):] for ln in lines]
    assert len(bodies) == len(patterns), f"expected {len(patterns)} error line(s), got:\n" + "\n".join(lines)
    unmatched = list(bodies)
    for pat in patterns:
        hit = next((b for b in unmatched if re.fullmatch(pat, b)), None)
        assert hit is not None, f"no error line matches {pat!r}; got:\n" + "\n".join(lines)
        unmatched.remove(hit)
    return bodies


# --- the world as systemd and the kernel hold it -------------------------------------------------

SNAPSHOT_PATTERNS = ("kubepods*", "sdqos-pod*", "machine*", "init.scope")
SNAPSHOT_PROPS = ("Id", "LoadState", "ActiveState", "Description", "CPUShares", "CPUQuotaPerSecUSec",
                  "CPUQuotaPeriodUSec", "MemoryLimit", "TasksMax", "InvocationID")


def show_many(sb: sbx.Sandbox, units: list[str], props: tuple[str, ...] = SNAPSHOT_PROPS) -> dict[str, dict[str, str]]:
    """`systemctl show` of many units in one call: {unit: {prop: value}}."""
    if not units:
        return {}
    r = sbx.run(sb, ["systemctl", "show", "--property=" + ",".join(("Id",) + tuple(p for p in props if p != "Id")),
                     "--", *units], check=True, timeout=60)
    out: dict[str, dict[str, str]] = {}
    blocks = [b for b in r.stdout.split("\n\n") if b.strip()]
    assert len(blocks) == len(units), f"systemctl show: {len(blocks)} blocks for {len(units)} units"
    for name, block in zip(units, blocks):
        vals = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        assert vals.get("Id") in (name, None), (name, vals.get("Id"))
        out[name] = vals
    return out


def loaded_units(sb: sbx.Sandbox, patterns: tuple[str, ...] = SNAPSHOT_PATTERNS) -> list[str]:
    r = sbx.run(sb, ["systemctl", "list-units", "--all", "--plain", "--no-legend", "--", *patterns], check=True)
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.strip()]
    return sorted({row[0] for row in rows if len(row) >= 3 and row[1] != "not-found"})


def snapshot(sb: sbx.Sandbox) -> dict[str, dict[str, str]]:
    """Every unit of the kubepods tree, container scopes, machine.slice and its scopes, init.scope:
    state, owned properties and InvocationID (a unit stopped and started again gets a new one)."""
    return show_many(sb, loaded_units(sb))


def diff_snapshots(before: dict, after: dict) -> list[str]:
    out = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            b, a = before.get(name), after.get(name)
            if b is None or a is None:
                out.append(f"{name}: {'appeared' if b is None else 'vanished'}")
            else:
                out.append(f"{name}: " + ", ".join(f"{k} {b.get(k)!r} -> {a.get(k)!r}" for k in sorted(set(a) | set(b))
                                                   if a.get(k) != b.get(k)))
    return out


def active(snap: dict, unit: str) -> bool:
    return snap.get(unit, {}).get("ActiveState") == "active"


def cgroup_rel(unit: str) -> str:
    stem = unit[: -len(".slice")]
    parts = stem.split("-")
    return "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def _systemctl_value(prop: str, v: int) -> str:
    if v == INFINITY:
        return "[not set]" if prop == "CPUShares" else "infinity"
    return str(v)


def check_converged(sb: sbx.Sandbox, plan: dict) -> list[str]:
    """Where the world differs from `sdqos plan -o json`: planned slices active with their values
    in systemd and in the kernel, and no other kubepods slice left. Empty list: converged."""
    problems = []
    slices = {u["name"]: u["properties"] for u in plan["units"] if u["name"].endswith(".slice")}
    shown = show_many(sb, sorted(slices), ("Id", "ActiveState", "CPUShares", "MemoryLimit", "TasksMax"))
    active_live = {u for u, v in shown.items() if v.get("ActiveState") == "active"}
    stray = [u for u in loaded_units(sb, ("kubepods*",)) if u not in slices]
    stray_active = [u for u, v in show_many(sb, stray, ("Id", "ActiveState")).items() if v.get("ActiveState") == "active"]
    if stray_active:
        problems.append(f"active but not planned: {stray_active[:5]} ({len(stray_active)})")
    for name, props in slices.items():
        if name not in active_live:
            problems.append(f"{name}: not active ({shown.get(name, {}).get('ActiveState')})")
            continue
        for p in ("CPUShares", "MemoryLimit", "TasksMax"):
            if p in props and shown[name].get(p) != _systemctl_value(p, props[p]):
                problems.append(f"{name}: systemd {p}={shown[name].get(p)} planned {props[p]}")
        try:
            k = kernel_of(sb, cgroup_rel(name))
        except OSError as e:
            problems.append(f"{name}: no cgroup ({e})")
            continue
        want = expected_kernel(props)
        if k != want:
            problems.append(f"{name}: kernel {k} planned {want}")
    return problems


# --- processes ------------------------------------------------------------------------------------


def nsenter_child(p: subprocess.Popen, timeout: float = 10.0) -> int:
    """Host PID of the process nsenter forked inside the sandbox (the command itself)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        if p.poll() is not None:
            raise AssertionError(f"nsenter exited {p.returncode} before its child was seen")
        time.sleep(0.002)
    raise AssertionError("nsenter's child did not appear")


def inner_pid(host_pid: int) -> int:
    """The PID a host process has in the sandbox's PID namespace (last NSpid entry)."""
    for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    raise AssertionError(f"no NSpid for {host_pid}")


def wait_for_lock_holder(sb: sbx.Sandbox, pid_inside: int, p: subprocess.Popen, timeout: float = 30.0) -> bool:
    """Wait until the sync with PID `pid_inside` holds /run/sdqos/sync.lock (it writes its PID
    there once it has the flock). False if it exited first."""
    lock = sb.run_dir / "sdqos" / "sync.lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if lock.read_text().strip() == str(pid_inside):
                return True
        except OSError:
            pass
        if p.poll() is not None:
            return False
        time.sleep(0.002)
    raise AssertionError("sync never took the lock")


def wait_bus(sb: sbx.Sandbox, timeout: float = 30.0) -> None:
    """Until systemd answers on the sandbox's system bus again."""
    def up() -> bool:
        r = sbx.run(sb, ["busctl", "--timeout=2", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                         "org.freedesktop.DBus.Peer", "Ping"], timeout=10)
        return r.returncode == 0
    wait_for(up, "systemd back on the bus", timeout)


def plan_json_in_process(config: Path | str) -> dict:
    """`sdqos plan -o json` in this process, parsed (exit 0 or 2)."""
    from typer.testing import CliRunner

    from sdqos.cli.app import app

    r = CliRunner().invoke(app, ["plan", "--config", str(config), "-o", "json"])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert r.exit_code in (0, 2), r.stderr
    return json.loads(r.stdout)


# --- a config with enough pods that a sync takes a while (faults land mid-way) -------------------

LOAD_NODE = """\
capacity: {cpu: "64", memory: 64Gi, pids: "4194304"}
podPidsLimit: 1024
"""


def write_load(cfg: Path, variant: int, n: int = 150) -> Path:
    """The realistic pods (db, web, more) plus `n` load pods; each variant drops a different fifth
    of the load pods and changes the others' values, so a sync between two variants creates,
    updates and removes."""
    (cfg / "pods").mkdir(parents=True, exist_ok=True)
    for extra in (cfg / "pods").iterdir():
        extra.unlink()
    (cfg / "node.yaml").write_text(LOAD_NODE)
    (cfg / "pods" / "db.yaml").write_text(DB)
    (cfg / "pods" / "more.yaml").write_text(MORE)
    (cfg / "pods" / "web.yaml").write_text(WEB)
    docs = []
    for i in range(n):
        if (i + variant) % 5 == 0:
            continue
        c = 20 + (i % 7) * 10 + (variant % 3) * 10
        m = 16 + (i % 5) * 8 + (variant % 3) * 8
        docs.append(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: load}}
spec:
  containers:
  - name: c
    resources:
      requests: {{cpu: {c}m, memory: {m}Mi}}
      limits: {{cpu: {2 * c}m, memory: {2 * m}Mi}}
""")
    (cfg / "pods" / "load.yaml").write_text("---\n".join(docs))
    return cfg
