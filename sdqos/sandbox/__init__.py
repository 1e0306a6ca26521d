"""A private, throwaway systemd to try sdqos on — and to run its integration tests against.

sdqos drives systemd over D-Bus. Trying it on a real host means creating slices and scopes in the
host's own systemd; a test suite that did that would leak units into the machine it runs on, and
on a host whose PID 1 is not systemd there is nothing to talk to at all. A *sandbox* is a systemd
booted as PID 1 of its own pid, mount, cgroup and uts namespaces (docs/testing.md), with its own
system bus and only the handful of units it needs, so that:

- everything sdqos does lands in cgroups named for the sandbox, readable from the host
  (`Sandbox.cgroup_path`), and disappears with `down()`;
- the host's init, units and services are never touched: the instance gets a private ``/run``
  and a copy-on-write ``/etc`` (an overlay whose upper dir is in the state dir, with an empty
  ``/etc/systemd/system``, so ``systemctl enable`` and ``sdqos install-units`` work inside and
  write nothing to the host), its unit path holds only its own dirs (never ``/lib/systemd/system``),
  ``/proc/sys`` is read-only inside (systemd would otherwise raise the host's ``fs.nr_open`` at
  boot), and its console is a pty whose output lands in a log file.

Cgroups: on a cgroup v1/hybrid host (the layout the sandbox was first measured on) the instance gets
``sdqos-sandbox-<name>`` in every hierarchy mounted under /sys/fs/cgroup, memory below the
caller's own memory cgroup; inside, a read-only tmpfs on /sys/fs/cgroup with each hierarchy
remounted. On a cgroup2-only host it gets /sys/fs/cgroup/sdqos-sandbox-<name> and cgroup2 is
mounted on /sys/fs/cgroup inside.

Layout on the host (``/run`` is a tmpfs: the state lives exactly as long as the processes and
cgroups it describes, i.e. until reboot — state in ``/var/tmp`` would outlive them and describe
PIDs and cgroups that no longer exist)::

    /run/sdqos-sandbox/<name>/      ($SDQOS_SANDBOX_ROOT overrides /run/sdqos-sandbox)
        state.json      everything `down` needs, written before anything is created
        pid             host PID of the instance's PID 1 (and its start time)
        supervisor.pid  the supervisor's
        console.log     systemd's console output (a pty is its /dev/console), capped at 4 MiB
        machine-id      the instance's own, bound over /etc/machine-id
        etc/upper       what the instance wrote to its /etc (etc/work: the overlay's work dir)
        exited          why PID 1 exited, if it did while the supervisor watched
        run/            the instance's private /run (bus socket: run/dbus/system_bus_socket;
                        run/systemd/system is on its unit path: tests may install units there)
        run/sdqos/units the unit dir (inside: /run/sdqos/units)
        run/sdqos/libvirt  only with up(..., libvirt=True): libvirtd's qemu.conf, state and logs

Process tree: supervisor (python, holds the console pty, logs it, reaps; nobody's child) →
``unshare --pid --fork --mount --uts --propagation private`` → PID 1 = ``python -m
sdqos.sandbox _init``, which joins the instance cgroups, unshares its cgroup namespace, mounts
(/proc with a read-only /proc/sys, /etc, /run, /sys/fs/cgroup, /dev/console, /etc/machine-id) and
execs systemd. Where the host's /run is a mount of its own (every systemd host) the instance's /run
(a dir under it) is cloned as a detached mount before the host's /run is detached, then attached. PID 1 unsharing the cgroup namespace itself (rather than ``unshare --cgroup``) keeps the
unshare process out of the instance cgroups: only PID 1 and its descendants ever live there.

The parts: ``units`` (the instance's unit files), ``state`` (what a sandbox is, its state dir and
PIDs), ``cgroups`` (its cgroup dirs on the host), ``prereqs`` (what the host must have), ``nsenter``
(host tools; a program run in the namespaces of a PID 1), ``exec`` (running things inside), ``pid1`` (the stage that becomes systemd), ``boot`` (up, down, status,
the supervisor) and ``cli`` (``sdqos sandbox up|exec|status|list|down``: the typer sub-app `app`,
built lazily, so the internal stages started with ``python -m sdqos.sandbox`` do not pay for
importing typer). It imports nothing of sdqos but ``sdqos.errors``: it must run as PID 1 of a
namespace and must not depend on the code it tests.
"""

from __future__ import annotations

from typing import Any

from sdqos.errors import SandboxError
from sdqos.sandbox.boot import down, list_sandboxes, status, up
from sdqos.sandbox.exec import exec_in, inner_env, nsenter_argv, popen, reset_units, run
from sdqos.sandbox.prereqs import missing_prerequisites, missing_vm_prerequisites
from sdqos.sandbox.state import Sandbox, SandboxStatus, check_name, get, state_dir
from sdqos.sandbox.units import (
    BOOT_TIMEOUT,
    CGROUP_PREFIX,
    CGROUP_ROOT,
    DEFAULT_NAME,
    DOWN_TIMEOUT,
    MACHINED_UNIT,
    STATE_ROOT,
    TARGET,
    UNIT_PATH,
)


def __getattr__(attr: str) -> Any:
    if attr == "app":  # the typer sub-app, built on first access
        from sdqos.sandbox.cli import make_app

        globals()["app"] = make_app()
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["BOOT_TIMEOUT", "CGROUP_PREFIX", "CGROUP_ROOT", "DEFAULT_NAME", "DOWN_TIMEOUT", "MACHINED_UNIT", "STATE_ROOT",
           "TARGET", "UNIT_PATH", "Sandbox", "SandboxError", "SandboxStatus", "check_name", "down", "exec_in", "get",
           "inner_env", "list_sandboxes", "missing_prerequisites", "missing_vm_prerequisites", "nsenter_argv", "popen",
           "reset_units", "run", "state_dir", "status", "up"]
