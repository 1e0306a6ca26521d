"""Files of the run dir planted as FIFOs: ``status`` and ``sync`` return instead of hanging, against
the sandbox systemd (a FIFO opened for reading waits for a writer that never comes)."""

from __future__ import annotations

import subprocess

from sdqos.errors import SandboxError

from .sbhelpers import copy_config, sdqos_in

RUN = "/run/sdqos-fifos"
NAMES = ("oom-kills.json", "evicted.json", "observed.json")
LEFTOVERS = ("dataclass-code.cpython-311.marshal", "parsed.delta.json")  # earlier versions' files: sync removes them


def test_fifos_in_the_run_dir_hang_no_command(clean_sandbox, tmp_path):
    sb = clean_sandbox
    cfg = copy_config(tmp_path)
    from sdqos import sandbox as sbx

    env = {**sbx.inner_env(), "SDQOS_RUN_DIR": RUN}
    fifos = " ".join(f"{RUN}/{n}" for n in NAMES + LEFTOVERS)
    sb.run(["sh", "-c", f"rm -rf {RUN} && mkdir -m 755 {RUN} && mkfifo -m 600 {fifos}"], check=True)
    try:
        for args in (["status", "--config", str(cfg), "--interval", "0"], ["sync", "--config", str(cfg)]):
            try:
                r = sdqos_in(sb, *args, env=env, timeout=90)
            except (subprocess.TimeoutExpired, SandboxError):
                raise AssertionError(f"sdqos {args[0]} hung on FIFOs in the run dir") from None
            assert "Traceback" not in r.stdout + r.stderr
            assert r.returncode == 0, r.stderr
        for n in LEFTOVERS:
            assert sb.run(["test", "-e", f"{RUN}/{n}"]).returncode == 1, f"sync left {n}"
    finally:  # a reader still waiting on a FIFO (the test failed) gets its end of file
        sb.run(["sh", "-c", f"for f in {fifos}; do [ -p $f ] && timeout 5 sh -c \": > $f\"; done; rm -rf {RUN}"])
