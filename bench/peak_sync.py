"""`sdqos sync` run as the console script runs it, reporting its peak RSS (VmHWM) — run by
`micro.py peak`. With SDQOS_PEAK_TRACE=1 it also traces allocations (tracemalloc, 8 frames) and
keeps a snapshot each time the traced total grows by 0.5 MiB, so the report shows what is alive
at the sync's traced peak, by call stack. Writes the report to $SDQOS_PEAK_OUT."""

import gc
import os
import sys
import tracemalloc

TRACE = os.environ.get("SDQOS_PEAK_TRACE") == "1"
if TRACE:
    tracemalloc.start(8)

import sdqos.cli.app as cli  # noqa: E402

best: list = [0, None, ""]


def _on_return(frame, event, arg) -> None:
    if event != "return":
        return
    cur = tracemalloc.get_traced_memory()[0]
    if cur > best[0] + 512 * 1024:
        names, f = [], frame
        while f is not None and len(names) < 8:
            names.append(f.f_code.co_name)
            f = f.f_back
        best[:] = [cur, tracemalloc.take_snapshot(), " <- ".join(names)]


def main() -> int:
    gc.set_threshold(*getattr(cli, "GC_THRESHOLD", gc.get_threshold()))  # as main() sets it
    if TRACE:
        sys.setprofile(_on_return)
    try:
        rc = cli.app(sys.argv[1:], standalone_mode=False, prog_name="sdqos")
    except SystemExit as e:
        rc = e.code
    sys.setprofile(None)
    with open("/proc/self/status") as fh:
        hwm = next(int(ln.split()[1]) / 1024 for ln in fh if ln.startswith("VmHWM:"))
    lines = [f"exit {rc or 0}, peak RSS {hwm:.1f} MB" + (" (traced: tracemalloc's own memory counts too)" if TRACE else "")]
    if TRACE and best[1] is not None:
        lines.append(f"  traced peak {best[0] / 2**20:.2f} MiB, in {best[2]}")
        stats = best[1].statistics("traceback")
        code = [st for st in stats if st.traceback[-1].filename.startswith("<frozen importlib")]
        lines.append(f"  {sum(st.size for st in code) / 2**10:8.1f} KiB {sum(st.count for st in code):6d}  "
                     "module code and globals (imports)")
        for st in [st for st in stats if st not in code][:15]:
            where = " <- ".join(f"{fr.filename.rsplit('/', 1)[-1]}:{fr.lineno}" for fr in reversed(st.traceback))
            lines.append(f"  {st.size / 2**10:8.1f} KiB {st.count:6d}  {where}")
    with open(os.environ["SDQOS_PEAK_OUT"], "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return int(rc or 0)


if __name__ == "__main__":
    code = main()
    os._exit(code)  # as main() leaves: no interpreter teardown
