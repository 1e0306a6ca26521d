"""`sdqos sync` with its config and plan handed over: everything a sync does except reading the
config and computing the plan. Run by sync_bench.py like a sync (same interpreter, same nsenter):

    SDQOS_BENCH_HANDOVER=/tmp/h.txt python bench/given_plan.py PLAN.pickle sync --config DIR -o json

PLAN.pickle holds (Config, Plan) as the bench built them with sdqos' own load_config and
build_plan. This script imports the CLI, unpickles them, makes `load_planned` (older sdqos:
`load_cached` and `build_plan`) return them, and runs the console script's `main()`, so the rest of the sync (lock, D-Bus
connect, live read, scopes, diff, apply, applied.json, metrics, report) is the code an operator
runs. It writes the seconds the unpickling took to $SDQOS_BENCH_HANDOVER; the bench subtracts
them from the wall time.

It answers one question: how fast could a sync be if loading the config and planning cost
nothing (a perfect incremental sync)? The gap between this and the recheck floor is sdqos' fixed
cost per sync; the gap between a real sync and this is the config and the plan.
"""

import os
import pickle
import sys
import time

from sdqos.cli import app as cli
from sdqos.plan import engine  # the console script imports sdqos.cli too


def handover(path: str) -> float:
    t = time.perf_counter()
    with open(path, "rb") as fh:
        cfg, plan = pickle.load(fh)
    took = time.perf_counter() - t
    cli.load_planned = lambda config, insecure, cgroup, **kw: (cfg, plan)
    cli.load_cached = lambda config, insecure, **kw: cfg
    engine.build_plan = lambda *args, **kwargs: plan  # cli.sync imports it from sdqos.plan.engine when called
    return took


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    took = handover(sys.argv.pop(1))
    out = os.environ.get("SDQOS_BENCH_HANDOVER")
    if out:
        with open(out, "w") as fh:
            fh.write(f"{took:.6f}\n")
    cli.main()
