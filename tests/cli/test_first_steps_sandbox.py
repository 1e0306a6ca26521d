"""A newcomer's first commands: without a bus, as a non-root user. Each fails with one line that
says what to do, and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from ..sbhelpers import EXAMPLES, sdqos_in


def test_sync_without_a_bus_leaves_nothing_behind_and_says_what_to_do(tmp_path):
    """A host without systemd as PID 1 (a container, or a newcomer skipping the sandbox): no
    /run/sdqos, no lock, no parse cache, and one line pointing at the sandbox."""
    run = tmp_path / "run"
    cfg = tmp_path / "cfg"
    shutil.copytree(EXAMPLES, cfg)
    r = subprocess.run([sys.executable, "-m", "sdqos", "sync", "--config", str(cfg),
                        "--bus-address", f"unix:path={tmp_path}/no-bus"],
                       capture_output=True, text=True, env={**os.environ, "SDQOS_RUN_DIR": str(run)}, timeout=60)
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"sdqos: error: cannot connect to the bus at unix:path={tmp_path}/no-bus")
    assert "is systemd PID 1 here" in lines[0] and "`sdqos sandbox up`" in lines[0]
    assert not run.exists()


@pytest.fixture
def shared_config():
    """A config dir a non-root user can read (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="sdqos-nonroot-"))
    os.chmod(d, 0o755)
    shutil.copytree(EXAMPLES, d / "cfg")
    yield d / "cfg"
    shutil.rmtree(d)


@pytest.mark.parametrize("existing", [False, True], ids=["no-run-dir", "root-run-dir"])
def test_sync_as_a_user_says_run_as_root(clean_sandbox, shared_config, existing):
    sb = clean_sandbox
    run = "/run/sdqos-nonroot"
    sbx.run(sb, ["sh", "-c", f"rm -rf {run}" + (f" && mkdir -m 755 {run}" if existing else "")], check=True)
    try:
        env = dict(sbx.inner_env(), SDQOS_RUN_DIR=run)
        r = sbx.run(sb, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "sdqos",
                         "sync", "--config", str(shared_config)], env=env, timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        assert len(r.stderr.splitlines()) == 1 and r.stderr.strip().endswith("run sdqos as root"), r.stderr
        listed = sbx.run(sb, ["ls", "-A", run]).stdout.split()
        assert listed == [], listed
    finally:
        sbx.run(sb, ["rm", "-rf", run])
