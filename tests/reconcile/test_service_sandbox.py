"""The shipped units are the product: `sdqos install-units --now` inside the sandbox, then every
feature through them alone (the path unit and the timer, never a manual sync) — a podman
container's edited limit reaches the container's own cgroup, a pod that leaves the config has its
containers removed through podman, the metrics textfile is written — and systemd is left as
`systemctl enable --now` leaves it. (A libvirt VM started under the path unit alone:
test_vms_sandbox.py::test_the_path_unit_limits_a_libvirt_vm_within_seconds_without_the_timer.)

The hardening is measured on the shipped file: `systemd-analyze security --offline=yes`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sdqos import sandbox as sbx
from sdqos.host import unitfiles

from ..sbhelpers import active_state, remove_sync_units, sdqos_in, show, wait_for
from .test_podman_sandbox import cgroup_file, inspect, podman, podman_env  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parent.parent.parent
UNITS = ("sdqos-sync.service", "sdqos-sync.timer", "sdqos-sync.path", "sdqos-pressure.service")
# Measured on units/sdqos-sync.service with systemd 252: 4.6 (7.1 before the capability bounding set
# and syscall filter). docs/service.md gives the figure and what the rest would cost.
EXPOSURE_LIMIT = 4.6
NO_NETWORK_LIMIT = 3.5  # with docs/service.md's drop-in for hosts whose containers have no network


def no_network_dropin() -> str:
    """docs/service.md's drop-in, as the operator copies it."""
    text = (ROOT / "docs" / "service.md").read_text()
    block = re.search(r"```\n# /etc/systemd/system/sdqos-sync.service.d/no-network.conf\n(.*?)```", text, re.S)
    assert block, "docs/service.md lost its drop-in"
    return block.group(1)


OTHER_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: idle, namespace: shop}
spec:
  containers:
  - name: idle
    resources: {requests: {cpu: 10m, memory: 8Mi}}
"""


def test_install_units_now_leaves_no_unit_changed_on_disk(clean_sandbox, tmp_path):
    """As `systemctl enable --now`: afterwards no unit needs a daemon-reload (systemctl status would
    warn that it changed on disk), and the timer and the path unit run, enabled."""
    sb = clean_sandbox
    config = tmp_path / "cfg"
    (config / "pods").mkdir(parents=True)
    (config / "pods" / "idle.yaml").write_text(OTHER_POD)
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now")
    assert r.returncode == 0, r.stderr
    try:
        for unit in UNITS:
            assert show(sb, unit, "NeedDaemonReload")["NeedDaemonReload"] == "no", unit
        for unit in ("sdqos-sync.timer", "sdqos-sync.path", "sdqos-pressure.service"):
            assert show(sb, unit, "ActiveState", "UnitFileState") == {"ActiveState": "active", "UnitFileState": "enabled"}
        st = sbx.run(sb, ["systemctl", "status", "--no-pager", *UNITS])
        assert "changed on disk" not in st.stdout + st.stderr
    finally:
        remove_sync_units(sb)


def _wait_idle(sb, what: str, timeout: float = 40) -> None:
    """Until the service is not running and its last run succeeded."""
    wait_for(lambda: active_state(sb, "sdqos-sync.service") == "inactive"
             and show(sb, "sdqos-sync.service", "Result")["Result"] == "success", what, timeout=timeout)


@pytest.mark.parametrize("dropin", [False, True], ids=["shipped", "no-network-dropin"])
def test_the_installed_units_keep_podman_pods_in_step(podman_env, tmp_path, dropin):  # noqa: F811
    sb, env, config = podman_env
    dropin_dir = "/run/systemd/system/sdqos-sync.service.d"
    if dropin:
        sbx.run(sb, ["sh", "-c", f"mkdir -p {dropin_dir} && cat > {dropin_dir}/no-network.conf"],
                input=no_network_dropin(), check=True)
    # The operator's podman settings, for the service as for this shell.
    (config / "environment").write_text("".join(f'{k}="{v}"\n' for k, v in env.items()))
    (config / "pods" / "idle.yaml").write_text(OTHER_POD)
    # nginx runs as another user: the service signals it (CAP_KILL) and writes its OOM score
    # (CAP_DAC_OVERRIDE: /proc/PID/oom_score_adj is its owner's).
    pod_file = config / "pods" / "shop.yaml"
    text = pod_file.read_text()
    nginx = "  - name: nginx\n    image: localhost/bb\n"
    assert nginx in text
    pod_file.write_text(text.replace(nginx, nginx + "    securityContext: {runAsUser: 1000}\n"))
    r = sdqos_in(sb, "podman", "start", "shop/web", "--config", str(config), env=env)
    assert r.returncode == 0, r.stderr
    metrics = tmp_path / "textfile" / "sdqos.prom"
    metrics.parent.mkdir()
    r = sdqos_in(sb, "install-units", "--dir", "/run/systemd/system", "--config", str(config), "--now",
                 "--metrics-textfile", str(metrics))
    assert r.returncode == 0, r.stderr
    try:
        assert f"--metrics-textfile {metrics}" in show(sb, "sdqos-sync.service", "ExecStart")["ExecStart"]
        # The timer's first sync: every podman container is sdqos's own (podman could be asked), and
        # the metrics textfile is written.
        wait_for(lambda: metrics.exists(), "the metrics textfile", timeout=40)
        _wait_idle(sb, "the timer's first sync")
        text = metrics.read_text()
        assert "\nsdqos_sync_success 1\n" in text and "\nsdqos_sync_errors 0\n" in text, text
        assert "shop_web_nginx" in text or 'container="nginx"' in text, text
        pid = inspect(sb, env, "shop_web_nginx")["State"]["Pid"]
        assert sbx.run(sb, ["stat", "-c", "%u", f"/proc/{pid}/oom_score_adj"], check=True).stdout.strip() == "1000"
        assert int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 256 * 2**20

        # An edit, picked up by the path unit alone: the container's own cgroup gets the new limit
        # (podman update run by the service), and its process's OOM score, changed behind sdqos's
        # back, is kubelet's again (written by the service).
        sbx.run(sb, ["systemctl", "stop", "sdqos-sync.timer"], check=True)
        plan = json.loads(sdqos_in(sb, "plan", "--config", str(config), "-o", "json").stdout)
        oom = next(c["oomScoreAdj"] for p in plan["pods"] if p["name"] == "web" for c in p["containers"]
                   if c["name"] == "nginx")

        def oom_now() -> int:
            return int(sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"], check=True).stdout)
        assert oom_now() == oom
        sbx.run(sb, ["sh", "-c", f"echo 1000 > /proc/{pid}/oom_score_adj"], check=True)
        assert oom_now() == 1000
        pod_file.write_text(pod_file.read_text().replace("limits: {cpu: 500m, memory: 256Mi}",
                                                         "limits: {cpu: 300m, memory: 200Mi}"))
        wait_for(lambda: int(cgroup_file(sb, pid, "memory", "memory.limit_in_bytes")) == 200 * 2**20,
                 "the edited limit in the container's cgroup (path unit)", timeout=20)
        assert int(cgroup_file(sb, pid, "cpu", "cpu.cfs_quota_us")) == 30_000
        _wait_idle(sb, "the path unit's sync")
        assert oom_now() == oom
        # The edit is what sdqos was asked to do: the container's scope is updated, never drift.
        scope = f"libpod-{inspect(sb, env, 'shop_web_nginx')['Id']}.scope"
        log = sbx.run(sb, ["journalctl", "-u", "sdqos-sync.service", "--no-pager", "-o", "cat"]).stdout
        assert f"updated  {scope}" in log or "updated  shop/web/nginx" in log, log
        assert "drift " not in log and "changed outside sdqos" not in log, log

        # A pod that leaves the config, picked up by the timer alone: its containers go through podman.
        sbx.run(sb, ["systemctl", "stop", "sdqos-sync.path"], check=True)
        sbx.run(sb, ["systemctl", "start", "sdqos-sync.timer"], check=True)
        pod_file.unlink()
        wait_for(lambda: podman(sb, env, "ps", "--all", "--format", "{{.Names}}").strip() == "",
                 "the pod's containers removed (timer)", timeout=60)
        _wait_idle(sb, "the timer's sync")
        assert show(sb, "sdqos-sync.service", "ExecMainStatus")["ExecMainStatus"] == "0"
        root = env["SDQOS_PODMAN"].split("--root ")[1].split()[0]
        left = [ln for ln in sbx.run(sb, ["cat", "/proc/self/mountinfo"]).stdout.splitlines()
                if ln.split()[4].startswith(root + "/")]
        assert left == []  # the containers' mounts went with them
        if dropin:
            assert show(sb, "sdqos-sync.service", "PrivateNetwork")["PrivateNetwork"] == "yes"
    finally:
        remove_sync_units(sb)
        sbx.run(sb, ["rm", "-rf", dropin_dir])
        sbx.run(sb, ["systemctl", "daemon-reload"])


def _exposure(unit_file: Path) -> float:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not found (Debian package systemd)")
    r = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", str(unit_file)],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    return float(m.group(1))


def test_the_shipped_service_stays_hardened(tmp_path):
    """The shipped unit's exposure (systemd-analyze security) stays at what was measured with every
    feature working; the same settings with the sandbox removed score far worse, so the check bites."""
    shipped = ROOT / "units" / unitfiles.SERVICE
    assert _exposure(shipped) <= EXPOSURE_LIMIT
    bare = tmp_path / unitfiles.SERVICE
    bare.write_text("\n".join(ln for ln in shipped.read_text().splitlines()
                              if not ln.startswith(("CapabilityBoundingSet=", "SystemCallFilter="))) + "\n")
    assert _exposure(bare) > EXPOSURE_LIMIT + 1
    with_dropin = tmp_path / "with-dropin" / unitfiles.SERVICE
    with_dropin.parent.mkdir()
    with_dropin.write_text(shipped.read_text() + no_network_dropin().replace("[Service]\n", ""))
    assert _exposure(with_dropin) <= NO_NETWORK_LIMIT


def test_install_units_names_podman_settings_the_service_would_miss(tmp_path):
    """Set in the operator's shell but not in CONFIG/environment: said, once (the units are still
    written). A relative --metrics-textfile is refused in one line, nothing written."""
    import os
    import sys

    config = tmp_path / "cfg"
    config.mkdir()
    env = {**os.environ, "SDQOS_PODMAN": "podman --root /srv/c"}
    env.pop("CONTAINERS_CONF", None)
    env.pop("CONTAINERS_STORAGE_CONF", None)

    def install(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sdqos", "install-units", "--dir", str(tmp_path / "units"),
                               "--config", str(config), *extra], capture_output=True, text=True, env=env)
    r = install()
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == (f"warning: SDQOS_PODMAN set here but not for the service: put it in "
                                f"{config / 'environment'} (VAR=value lines)")
    (config / "environment").write_text('SDQOS_PODMAN="podman --root /srv/c"\n')
    r = install("--metrics-textfile", str(tmp_path / "m.prom"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    service = (tmp_path / "units" / unitfiles.SERVICE).read_text()
    assert f"--metrics-textfile {tmp_path / 'm.prom'}\n" in service
    assert f"EnvironmentFile=-{config}/environment\n" in service
    (tmp_path / "units2").mkdir()
    r = subprocess.run([sys.executable, "-m", "sdqos", "install-units", "--dir", str(tmp_path / "units2"),
                        "--config", str(config), "--metrics-textfile", "has space.prom"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--metrics-textfile" in r.stderr, r.stderr
    assert list((tmp_path / "units2").iterdir()) == []
