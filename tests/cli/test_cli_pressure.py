"""`sdqos pressure`: its exit codes and node.yaml's eviction errors, one line each (no D-Bus)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

NODE = 'capacity: {cpu: "2", memory: 4Gi, pids: "1000"}\n'


def sdqos(*args):
    return subprocess.run([sys.executable, "-m", "sdqos", *args], capture_output=True, text=True, check=False)


def config(tmp_path: Path, node: str) -> Path:
    d = tmp_path / "cfg"
    (d / "pods").mkdir(parents=True)
    (d / "node.yaml").write_text(node)
    d.chmod(0o755)
    return d


def test_watching_needs_a_positive_interval(tmp_path):
    r = sdqos("pressure", "--interval", "0", "--config", str(config(tmp_path, NODE)))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "sdqos: error: --interval must be positive, not 0.0\n"


def test_bad_eviction_settings_exit_2_one_line_each(tmp_path):
    d = config(tmp_path, NODE + "evictionSoft: {memory.available: 1Gi, pid.available: '-1'}\n"
                                "evictionMaxPodGracePeriod: x\nevictionMinimumReclaim: {memory.available: 0%}\n")
    for cmd in (["pressure", "--once"], ["plan"]):
        r = sdqos(*cmd, "--config", str(d), "--insecure")
        assert r.returncode == 2
        assert sorted(r.stderr.splitlines()) == [
            "sdqos: error: node.yaml: evictionMaxPodGracePeriod: must be an integer (seconds), not 'x'",
            "sdqos: error: node.yaml: evictionMinimumReclaim.memory.available: eviction percentage minimum reclaim "
            "memory.available must be positive: 0%",
            "sdqos: error: node.yaml: evictionSoft.pid.available: eviction threshold pid.available must be positive: -1",
            "sdqos: error: node.yaml: evictionSoftGracePeriod.memory.available: grace period must be specified for "
            "the soft eviction threshold memory.available",
        ], r.stderr


def test_an_invalid_pod_file_is_named_and_the_valid_rest_assessed(tmp_path):
    """As sync: the bad file is one line on stderr and exit 2, and the rest is still assessed."""
    d = config(tmp_path, NODE)
    (d / "pods" / "ok.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: t}\n"
                                        "spec:\n  containers:\n  - name: app\n")
    (d / "pods" / "typo.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: typo, namespace: t}\n"
                                          "spec:\n  containers:\n  - name: app\n"
                                          "    resources: {limits: {memory: 12Q}}\n")
    r = sdqos("pressure", "--once", "-o", "json", "--config", str(d), "--insecure")
    assert r.returncode == 2
    assert r.stderr.splitlines() == ['sdqos: error: pods/typo.yaml[0]: spec.containers[0].resources.limits.memory: '
                                     '"12Q" is not a quantity'], r.stderr
    import json

    assert json.loads(r.stdout)["signals"][0]["signal"] == "memory.available"
