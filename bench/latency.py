#!/usr/bin/env python3
"""How long until the kernel holds sdqos's values after something changes — measured, in one run.

    sudo .venv/bin/python bench/latency.py [--tries 20] [--no-timer] [--keep]

Boots a throw-away sandbox with libvirtd and machined (`sdqos sandbox up --libvirt`, named
sdqlat-<pid>), installs the shipped units (`sdqos install-units --now`: service, 30 s timer, path
unit) into its /run/systemd/system, and measures two things, each --tries times, first with the
path unit and the timer, then --timer-tries times with the timer alone (path unit stopped; each change at
a random moment of the timer's 30 s):

  vm      QEMU's scope appears (machined makes it with QEMU in it; `virsh create` is still going)
          → the scope's memory.limit_in_bytes is the declared limit (the VM ran unlimited until
          then). The domain is destroyed between tries.
  pod     a pod file edited (its cpu request alternates; 0-2 s after the previous try, so also while
          a sync runs) → the pod slice's cpu.shares in the kernel.

Prints median and max per row, and the ratio of the timer-alone median to the path-unit median
(both measured in this run). The timer alone waits on average half its 30 s interval: 10 tries of
each take about 10 minutes; --no-timer skips those rows.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdqos import sandbox as sbx  # noqa: E402
from tests import vmtools as vm  # noqa: E402  (the tests' real-qemu helpers: halt kernel, domain XML)

NODE = 'capacity: {cpu: "4", memory: 4Gi, pids: "100000"}\n'
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: web, namespace: bench}}
spec:
  containers:
  - name: c
    resources:
      requests: {{cpu: {cpu}m, memory: 64Mi}}
      limits: {{cpu: "1", memory: 128Mi}}
"""
VM = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: lat}
spec:
  resources:
    limits: {cpu: "1", memory: 64Mi}
  overhead: {cpu: 100m, memory: 64Mi}
  libvirt: {domain: lat}
"""
VM_LIMIT = 128 * 2**20
POLL_S = 0.01


def sdqos(sb: sbx.Sandbox, *args: str):
    return sbx.run(sb, [sys.executable, "-m", "sdqos", *args], timeout=120)


def read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def wait_until(cond, timeout: float) -> float | None:
    """Seconds until cond() holds (polled every 10 ms), None on timeout."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(POLL_S)
    return None


def vm_try(sb: sbx.Sandbox, timeout: float) -> float | None:
    """From the moment QEMU's scope appears (machined makes it with QEMU in it while `virsh create`
    is still going) to its limit in the kernel, polled every 10 ms from before `virsh create`."""
    import threading

    d = vm.vm_dir(sb)
    (d / "lat.xml").write_text(vm.domain_xml("lat"))
    machine = sb.cgroup_path("memory") / "machine.slice"
    seen: dict[str, float] = {}
    stop = threading.Event()

    def poll() -> None:
        t_end = time.monotonic() + timeout + 30
        while not stop.is_set() and time.monotonic() < t_end:
            for p in machine.glob("machine-qemu*lat.scope"):
                if "scope" not in seen:  # machined made it with QEMU in it (libvirt then moves QEMU one level down)
                    seen["scope"] = time.monotonic()
                if "scope" in seen and read_int(p / "memory.limit_in_bytes") == VM_LIMIT:
                    seen["limit"] = time.monotonic()
                    return
            time.sleep(POLL_S)

    t = threading.Thread(target=poll)
    t.start()
    try:
        vm.virsh(sb, "create", f"{vm.INNER_DIR}/lat.xml")
        t.join(timeout)
        if "limit" not in seen:
            found = [(p.name, read_int(p / "memory.limit_in_bytes")) for p in machine.glob("machine-qemu*lat.scope")]
            print(f"  (a try timed out: scope seen {'scope' in seen}, now {found})", file=sys.stderr)
        return seen["limit"] - seen["scope"] if "limit" in seen else None
    finally:
        stop.set()
        t.join()
        vm.libvirt_destroy_domain(sb, "lat")
        time.sleep(0.5)  # let the sync its stop triggered finish


def pod_try(sb: sbx.Sandbox, config: Path, i: int, timeout: float) -> float | None:
    cpu = 200 if i % 2 else 300  # the file starts at 200m: every try is a change
    want = cpu * 1024 // 1000
    slice_dir = next((sb.cgroup_path("cpu") / "kubepods.slice" / "kubepods-burstable.slice").glob("*.slice"))
    (config / "pods" / "web.yaml").write_text(POD.format(cpu=cpu))
    return wait_until(lambda: read_int(slice_dir / "cpu.shares") == want, timeout)


def summary(xs: list[float | None]) -> tuple[str, str, float | None]:
    got = [x for x in xs if x is not None]
    if not got:
        return "-", "-", None
    med = statistics.median(got)
    missed = len(xs) - len(got)
    return f"{med:.2f} s", f"{max(got):.2f} s" + (f" ({missed} timed out)" if missed else ""), med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=20)
    ap.add_argument("--timer-tries", type=int, default=10, help="tries with the timer alone (each up to 30 s)")
    ap.add_argument("--no-timer", action="store_true", help="skip the timer-alone rows (about 10 minutes)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (it boots a sandbox)", file=sys.stderr)
        return 2
    name = f"sdqlat-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="sdqos-lat-"))
    config = tmp / "cfg"
    (config / "pods").mkdir(parents=True)
    (config / "vms").mkdir()
    (config / "node.yaml").write_text(NODE)
    (config / "pods" / "web.yaml").write_text(POD.format(cpu=200))
    (config / "vms" / "lat.yaml").write_text(VM)
    sb = sbx.up(name, libvirt=True)
    rows: dict[str, list[float | None]] = {}
    try:
        r = sdqos(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        wait_until(lambda: (sb.cgroup_path("cpu") / "kubepods.slice").is_dir(), 30)
        modes = [("path unit + timer", 10.0, args.tries)]
        if not args.no_timer:
            modes.append(("timer alone", 45.0, args.timer_tries))
        rng = random.Random(1)
        for mode, timeout, tries in modes:
            if mode == "timer alone":
                sbx.run(sb, ["systemctl", "stop", "sdqos-sync.path"])

            def pause() -> None:  # the change comes at a random moment of the timer's 30 s, as in life
                if mode == "timer alone":
                    time.sleep(rng.uniform(0, 30))
            vm_rows, pod_rows = [], []
            for _ in range(tries):
                pause()
                vm_rows.append(vm_try(sb, timeout))
            for i in range(tries):
                pause()
                time.sleep(rng.uniform(0, 2))  # an edit at any moment, also while a sync runs
                pod_rows.append(pod_try(sb, config, i, timeout))
            rows[f"VM started → limits in the kernel, {mode}"] = vm_rows
            rows[f"pod file edited → values in the kernel, {mode}"] = pod_rows
    finally:
        if not args.keep:
            sbx.down(name)
    print(f"latency (median, max; {args.tries} tries with the path unit, {args.timer_tries} with the timer alone); "
          f"sdqos {ROOT}")
    meds = {}
    for label, xs in rows.items():
        med, mx, meds[label] = summary(xs)
        print(f"  {label:<58} {med:>9} {mx:>10}")
    for what in ("VM started → limits in the kernel", "pod file edited → values in the kernel"):
        a, b = meds.get(f"{what}, path unit + timer"), meds.get(f"{what}, timer alone")
        if a and b:
            print(f"  {what}: timer alone / path unit = {b / a:.0f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
