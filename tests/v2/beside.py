"""The cgroup v2 tests run beside the rest of the suite, not after it.

Their time is the guests' (TCG emulation: one vCPU each, mostly waited on), the rest of the suite's
is the host's, so on a 2-core machine the two overlap well. When a session has selected v2 tests
and other tests, ``pytest_collection_finish`` starts a second pytest for the v2 tests alone (its
own process group, its output in a log file) while this one runs the others. Each v2 item here then
waits for its reports from that run and hands them to this session's reporting through pytest's
public report hooks (``pytest_report_to_serializable`` / ``pytest_report_from_serializable``, as
pytest-xdist carries reports between processes): failures, skips (``-rs``), reruns and durations
read as if the test had run here.

``SDQOS_V2_BESIDE=0`` runs them in this process instead (e.g. for ``--pdb`` or ``-s``); a session
that selected only v2 tests runs them here too (nothing to overlap). The child is always ended with
the session: SIGINT first (its fixtures shut their guests down), SIGKILL of its group after."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

CHILD_ENV = "SDQOS_V2_CHILD"  # set in the child: it runs its tests itself and writes their reports
REPORTS_ENV = "SDQOS_V2_REPORTS"
HERE = Path(__file__).resolve().parent
STOP_GRACE_S = 120.0  # a child asked to stop shuts its guests down first (qemu is killed, not shut down)


def is_v2(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).resolve().parents


class Beside:
    """The second pytest and the reports it has written so far."""

    def __init__(self, config: pytest.Config, nodeids: list[str]):
        self.config = config
        self.dir = Path(tempfile.mkdtemp(prefix="sdqos-v2-beside-"))
        self.reports_path = self.dir / "reports.jsonl"
        self.reports_path.touch()
        self.log_path = self.dir / "pytest.log"
        self._offset = 0
        self._buf = b""
        self.reports: dict[str, list[dict]] = {}
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(config.rootpath),
                "-c", str(config.inipath) if config.inipath else os.devnull, *nodeids]
        env = {**os.environ, CHILD_ENV: "1", REPORTS_ENV: str(self.reports_path)}
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, cwd=str(config.rootpath), env=env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def _read(self) -> None:
        with open(self.reports_path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        self._offset += len(data)
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            rec = json.loads(line)
            self.reports.setdefault(rec["nodeid"], []).append(rec["report"])

    def wait_for(self, nodeid: str) -> tuple[list[dict], bool]:
        """The reports of ``nodeid`` once its teardown report is in (True), or what there was when
        the child ended without it (False)."""
        while True:
            self._read()
            got = self.reports.get(nodeid, [])
            if any(r.get("when") == "teardown" and r.get("outcome") != "rerun" for r in got):
                return got, True
            if self.proc.poll() is not None:
                self._read()
                got = self.reports.get(nodeid, [])
                return got, any(r.get("when") == "teardown" for r in got)
            time.sleep(0.2)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(timeout=STOP_GRACE_S)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the group is left (qemu included)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()
        if self.proc.returncode in (0, 1, 5):  # its reports told everything; else its log stays for the reader
            shutil.rmtree(self.dir, ignore_errors=True)


_beside: Beside | None = None


def collection_finish(session: pytest.Session) -> None:
    global _beside
    if os.environ.get(CHILD_ENV) or os.environ.get("SDQOS_V2_BESIDE", "1") == "0":
        return
    if session.config.option.collectonly or session.config.getoption("usepdb", False):
        return
    v2 = [i.nodeid for i in session.items if is_v2(i)]
    if v2 and len(v2) < len(session.items):
        _beside = Beside(session.config, v2)
        atexit.register(sessionfinish)  # also when this session dies without finishing


def runtest_protocol(item: pytest.Item) -> bool | None:
    """Hand the child's reports of a v2 item to this session's reporting; None: run it here."""
    if _beside is None or not is_v2(item):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    got, complete = _beside.wait_for(item.nodeid)
    hook = item.config.hook
    for data in got:
        report = hook.pytest_report_from_serializable(config=item.config, data=data)
        item.ihook.pytest_runtest_logreport(report=report)
    if not complete:
        report = pytest.TestReport(item.nodeid, item.location, {}, "failed",
                                   f"the v2 tests' pytest (beside this one) ended (exit {_beside.proc.returncode}) "
                                   f"before this test did; its log {_beside.log_path}:\n{_beside.log_tail()}",
                                   "teardown" if got else "setup")
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def sessionfinish() -> None:
    global _beside
    if _beside is not None:
        _beside.stop()
        _beside = None


def child_logreport(config: pytest.Config, report: pytest.TestReport) -> None:
    """In the child: append each report for the parent to read."""
    path = os.environ.get(REPORTS_ENV)
    if not path or not os.environ.get(CHILD_ENV):
        return
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    with open(path, "a") as fh:
        fh.write(json.dumps({"nodeid": report.nodeid, "report": data}) + "\n")
