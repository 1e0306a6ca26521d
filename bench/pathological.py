"""What a pathological config file costs next to a valid one of the same size.

The input bounds (README "Input bounds") promise that sdqos's time and memory on any config dir
follow its size: a file that expands into a flood of documents, List items or errors is cut off at
the caps. This measures `sdqos plan` (load, validate, plan; no D-Bus) on ~8 MiB of input, each
case in a fresh process, and prints wall time and peak RSS as ratios to 8 MiB of valid pods (in
files of 1000 pods) measured in the same run:

    python bench/pathological.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 2**20
NODE = 'capacity: {cpu: "64", memory: 256Gi, pids: "4194304"}\n'
POD = """---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: bench}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
      limits: {{cpu: 200m, memory: 128Mi}}
"""


def fill(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def cases(size: int) -> dict[str, dict[str, str]]:
    """Case name → {file name: text}."""
    pods, files, i = [], {}, 0
    while sum(map(len, pods)) + sum(map(len, files.values())) < size:
        pods.append(POD.format(i=i))
        i += 1
        if len(pods) == 1000:
            files[f"valid{len(files)}.yaml"] = "".join(pods)
            pods = []
    if pods:
        files[f"valid{len(files)}.yaml"] = "".join(pods)
    return {
        "valid pods (files of 1000)": files,
        "--- {} documents": {"a.yaml": fill("--- {}\n", size)},
        "kind: List of {} items": {"a.yaml": "kind: List\nitems:\n" + fill("- {}\n", size)},
        "pods with 9 bad fields each": {"a.yaml": fill(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: A, namespace: B}\nspec: {containers: "
            "[{name: C, resources: {limits: {cpu: x, memory: y}, requests: {cpu: z, memory: w}}}], bogus: 1}\n", size)},
        "one long scalar": {"a.yaml": "x: " + "a" * (size - 4) + "\n"},
    }


def measure(files: dict[str, str], repeat: int) -> tuple[float, float]:
    d = Path(tempfile.mkdtemp(prefix="sdqos-patho-"))
    try:
        (d / "pods").mkdir()
        (d / "node.yaml").write_text(NODE)
        for name, text in files.items():
            (d / "pods" / name).write_text(text)
        times, rss = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-m", "sdqos", "plan", "--config", str(d), "--insecure"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            times.append(time.perf_counter() - t0)
            rss.append(ru.ru_maxrss / 1024)
        return statistics.median(times), statistics.median(rss)
    finally:
        shutil.rmtree(d)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mib", type=float, default=8.0)
    args = ap.parse_args()
    all_cases = cases(int(args.mib * MIB))
    base_t = base_m = None
    print(f"{'case':36} {'MiB':>5} {'time s':>8} {'× valid':>8} {'RSS MB':>8} {'× valid':>8}")
    for name, files in all_cases.items():
        t, m = measure(files, args.repeat)
        if base_t is None:
            base_t, base_m = t, m
        size = sum(map(len, files.values())) / MIB
        print(f"{name:36} {size:5.1f} {t:8.2f} {t / base_t:8.2f} {m:8.1f} {m / base_m:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
