"""bench/pressure.py --v2, the guest's side: the same tries against the installed sdqos-pressure.service
in a cgroup v2 guest (real kernel, real pressure). Run as root in the guest, with sdqos installed:

    python3 _pressure_guest.py TRIES

Prints one JSON document: per try the crossing (memory.available as sdqos computes it on v2 —
MemTotal − the root's anon + file − inactive_file — below the threshold, read every SAMPLE_S), the
service's record of when it sent the first stop (begunMonotonic: this guest's CLOCK_MONOTONIC, the
same clock), the hog's process gone; then the service's idle CPU and RSS over 30 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

CFG = Path("/root/prbench")
Mi = 2**20
SAMPLE_S = 0.02  # a single vCPU under TCG: a 10 ms sampler would take the CPU the service needs
HOLD = "import sys, time; b = b'\\x01' * (int(sys.argv[1]) << 20); print('ready', flush=True); time.sleep(600)"
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: b}}
spec:
  containers:
  - name: app
    {res}
"""


def sh(cmd: str) -> str:
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True).stdout


def available() -> int:
    total = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    st = dict(ln.split() for ln in Path("/sys/fs/cgroup/memory.stat").read_text().splitlines())
    return total - (int(st["anon"]) + int(st["file"]) - int(st["inactive_file"]))


def settled() -> int:
    last = None
    while True:
        now = json.loads(sh(f"sdqos pressure --once --config {CFG} -o json"))["signals"][0]["available"]
        if last is not None and abs(now - last) < 8 * Mi:
            return now
        last = now
        time.sleep(2)


def main_pid() -> int:
    return int(sh("systemctl show -P MainPID sdqos-pressure").strip())


def journal() -> str:
    inv = sh("systemctl show -P InvocationID sdqos-pressure").strip()
    return sh(f"journalctl -o cat _SYSTEMD_INVOCATION_ID={inv}")


def main() -> int:
    tries = int(sys.argv[1])
    sh(f"rm -rf {CFG} /run/sdqos/evicted.json && mkdir -p {CFG}/pods")
    (CFG / "pods" / "b.yaml").write_text(POD.format(name="be", res="") + "---\n"
                                         + POD.format(name="guar", res="resources: {limits: {cpu: 100m, memory: 64Mi}}"))
    (CFG / "node.yaml").write_text("{}\n")
    sh(f"sdqos sync --config {CFG} -q")
    a0 = settled()
    threshold = a0 - 120 * Mi
    (CFG / "node.yaml").write_text(f"evictionHard: {{memory.available: {threshold // Mi}Mi}}\n")
    sh(f"sdqos install-units --config {CFG} --now >/dev/null && systemctl stop sdqos-sync.timer sdqos-sync.path")
    deadline = time.monotonic() + 300
    while "node conditions: none" not in journal():
        assert time.monotonic() < deadline, journal()
        time.sleep(1)
    out: dict = {"threshold": threshold, "available": a0, "tries": []}
    try:
        for _ in range(tries):
            time.sleep(3)  # the last eviction's memory back
            t0 = time.monotonic()
            h = subprocess.Popen(["sdqos", "run", "--config", str(CFG), "b/be", "app", "--", "python3", "-c", HOLD, "300"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            crossed = gone = None
            while gone is None:
                now = time.monotonic()
                if crossed is None and available() < threshold:
                    crossed = now
                if h.poll() is not None:
                    gone = now
                assert now - t0 < 300, "the hog was not evicted within 300 s"
                time.sleep(SAMPLE_S)
            rec = None
            while rec is None or rec.get("begunMonotonic", 0) < t0:
                assert time.monotonic() - t0 < 300, rec
                try:
                    rec = json.loads(Path("/run/sdqos/evicted.json").read_text())["evicted"].get("pod:b/be")
                except (OSError, ValueError):
                    pass
                time.sleep(0.1)
            out["tries"].append({"start": t0, "crossed": crossed, "begun": rec["begunMonotonic"], "gone": gone})
        time.sleep(10)
        pid, tick = main_pid(), os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / tick

        c0, t0 = cpu(), time.monotonic()
        time.sleep(30)
        c1, t1 = cpu(), time.monotonic()
        rss = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if x.startswith("VmRSS"))
        out["idle"] = {"cpu_percent": 100 * (c1 - c0) / (t1 - t0), "rss": rss * 1024,
                       "memory_current": int(sh("systemctl show -P MemoryCurrent sdqos-pressure").strip()),
                       "interval": 10}
        out["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    finally:
        subprocess.run("systemctl disable --now sdqos-sync.timer sdqos-sync.path sdqos-pressure.service; "
                       "rm -f /etc/systemd/system/sdqos-*; systemctl daemon-reload", shell=True, capture_output=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
