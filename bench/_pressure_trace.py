"""bench/pressure.py --trace: ``python -m sdqos pressure`` with the watching loop's steps timed.

Wraps the loop's steps (the wake, the config load, the measurement and assessment, the eviction)
and appends one line per step to the file named by SDQOS_BENCH_TRACE: ``STEP START END``
(CLOCK_MONOTONIC, shared with the bench). A bench tool only: sdqos itself times nothing.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from sdqos.host import pressure as hp
from sdqos.reconcile import evict as E

_out = open(os.environ["SDQOS_BENCH_TRACE"], "a", buffering=1)


def _log(step: str, t0: float, t1: float) -> None:
    _out.write(f"{step} {t0:.4f} {t1:.4f}\n")


def _timed(mod, name: str, only_true: bool = False) -> None:
    f = getattr(mod, name)

    if name == "evict":
        @functools.wraps(f)
        async def aw(*a, **k):
            t0 = time.monotonic()
            r = await f(*a, **k)
            _log(name, t0, time.monotonic())
            return r
        setattr(mod, name, aw)
        return

    @functools.wraps(f)
    def w(*a, **k):
        t0 = time.monotonic()
        r = f(*a, **k)
        if r or not only_true:
            _log(name, t0, time.monotonic())
        return r
    setattr(mod, name, w)


for _name in ("collect", "forget_running", "wait_cleanup", "_notifier_targets"):
    _timed(E, _name)
_timed(E, "evict")
_timed(E, "_newly_met", only_true=True)
_timed(hp, "wait", only_true=True)

_serve = E.serve


def _serve_timed(load_plan, *a, **k):
    def load():
        t0 = time.monotonic()
        r = load_plan()
        _log("load_plan", t0, time.monotonic())
        return r
    return _serve(load, *a, **k)


E.serve = _serve_timed

if __name__ == "__main__":
    from sdqos.cli.app import main

    sys.argv[0] = "sdqos"
    sys.exit(main())
