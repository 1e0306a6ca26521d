"""Eviction measures what a pod really holds: the slice it runs in when sync refused its move, and
the shared memory it wrote (`sdqos run` gives a pod's process its own /dev/shm, as kubelet's
runtime gives a pod's sandbox, so an evicted pod's shared memory goes with it)."""

from __future__ import annotations

import json
import subprocess
import sys

from sdqos import sandbox as sbx
from sdqos.kube.manifests import stable_uid

from ..sbhelpers import cgroup_rel, kernel, sdqos_in, sync_json, wait_for
from .test_evict_faults_service_sandbox import BURSTY, config_with, start
from .test_pressure_sandbox import NODE, readline

Mi = 2**20
GUARANTEED = "resources: {limits: {cpu: 100m, memory: 256Mi}}"
SMALL_GUARANTEED = "resources: {limits: {cpu: 100m, memory: 128Mi}}"


def pressure(sb, config, *extra: str) -> dict:
    r = sdqos_in(sb, "pressure", "--once", "--config", str(config), "-o", "json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_pod_kept_in_its_old_slice_is_ranked_and_evicted_there(clean_sandbox, tmp_path):
    """Pod k runs Guaranteed; its file turns Burstable while it runs: sync refuses the move and keeps
    its slice. Eviction ranks k where it runs, as the Guaranteed pod it still is (its usage above
    request is less short than g's), and stops it there; g keeps running."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])
    config = config_with(tmp_path, {"k": GUARANTEED, "g": SMALL_GUARANTEED})
    sync_json(sb, config)
    procs: dict = {}
    try:
        start(sb, config, "k", 200, procs)
        start(sb, config, "g", 0, procs)
        (config / "pods" / "k.yaml").write_text(BURSTY % ("k", "resources: {requests: {memory: 64Mi}, "
                                                                "limits: {memory: 256Mi}}"))
        rep = sync_json(sb, config, expect=2)
        kept = f"kubepods-pod{stable_uid('t', 'k').replace('-', '_')}.slice"
        assert "refused" in rep["keptWhy"][kept], rep["keptWhy"]
        (config / "node.yaml").write_text(NODE % "4095Mi")
        a = pressure(sb, config)
        ranking = {r["name"]: r for r in a["ranking"]}
        assert set(ranking) == {"t/k", "t/g"}, a["ranking"]
        assert ranking["t/k"]["qosClass"] == "Guaranteed" and ranking["t/k"]["memoryRequest"] == 256 * Mi
        assert ranking["t/k"]["memoryUsage"] >= 200 * Mi
        assert a["victim"] == "t/k"
        out = pressure(sb, config, "--evict")
        assert out["evicted"]["name"] == "t/k" and out["evicted"]["leftRunning"] == [], out["evicted"]
        assert procs["k"].wait(timeout=30) == -15
        assert procs["g"].poll() is None
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
        sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json"])


SHM = ("import json, os, time\n"
       "st = os.statvfs('/dev/shm')\n"
       "line = next(ln for ln in open('/proc/self/mountinfo') if ln.split()[4] == '/dev/shm')\n"
       "open('/dev/shm/sdqos-test-shm', 'wb').write(b'\\x01' * (48 << 20))\n"
       "try:\n"
       "    open('/dev/shm/sdqos-test-more', 'wb').write(b'\\x01' * (32 << 20))\n"
       "    full = False\n"
       "except OSError:\n"
       "    full = True\n"
       "print(json.dumps([st.f_blocks * st.f_frsize, line.split(' - ')[1].split()[0], full]), flush=True)\n"
       "time.sleep(600)\n")


def usage(sb, rel: str) -> int:
    if sb.cgroup_mode == "unified":
        return kernel(sb, "memory", rel, "memory.current")
    return kernel(sb, "memory", rel, "memory.usage_in_bytes")


def test_a_pods_shared_memory_is_its_own_and_goes_with_its_eviction(clean_sandbox, tmp_path):
    """`sdqos run` gives the pod's process a /dev/shm of its own: a tmpfs of containerd's 64 MiB
    (writing past it fails), not the host's. 48 MiB written there are charged to the pod and given
    back when it is evicted: its slice holds next to nothing after, and the host's /dev/shm never
    saw the file (on the host's /dev/shm they stayed charged after the eviction)."""
    sb = clean_sandbox
    sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json", "/dev/shm/sdqos-test-shm", "/dev/shm/sdqos-test-more"])
    config = config_with(tmp_path, {"s": ""})
    sync_json(sb, config)
    pod_slice = f"kubepods-besteffort-pod{stable_uid('t', 's').replace('-', '_')}.slice"
    p = sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(config), "t/s", "app", "--",
                       sys.executable, "-c", SHM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        size, fstype, full = json.loads(readline(p))
        assert (size, fstype, full) == (64 * Mi, "tmpfs", True)
        assert sbx.run(sb, ["test", "-e", "/dev/shm/sdqos-test-shm"]).returncode == 1  # not the host's
        held = usage(sb, cgroup_rel(pod_slice))
        assert held >= 48 * Mi, held
        (config / "node.yaml").write_text(NODE % "4095Mi")
        out = pressure(sb, config, "--evict")
        assert out["evicted"]["name"] == "t/s"
        assert p.wait(timeout=30) == -15
        left = wait_for(lambda: (lambda n: n if n < 8 * Mi else None)(usage(sb, cgroup_rel(pod_slice))),
                        "the pod's shared memory given back", timeout=30)
        print(f"pod slice: {held / Mi:.1f} MiB while it ran, {left / Mi:.1f} MiB after its eviction")
    finally:
        p.kill()
        p.wait()
        sbx.run(sb, ["rm", "-f", "/run/sdqos/evicted.json", "/dev/shm/sdqos-test-shm", "/dev/shm/sdqos-test-more"])
