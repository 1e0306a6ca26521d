"""Which live scope belongs to which container or VM. Pure.

sdqos finds scopes by their processes: one ``GetUnitProcesses`` on ``kubepods.slice`` (and on
``machine.slice``) lists every process of the tree with its cgroup path, which names the pod slice
and the scope it runs in. A scope sdqos made itself (``sdqos-pod<uid>-<container>.scope``) is
matched by name. A scope made by something else inside a pod slice — podman, containerd or runc
with the systemd cgroup driver and ``--cgroup-parent=<pod slice>`` — is matched to a container by
this rule, first match wins:

0. what the runtime itself records (sdqos/reconcile/runtimes/): a workload whose record names the
   pod (its uid) and the container — a podman container's labels, as ``sdqos podman start`` and
   kubelet's CRI runtimes set them; a runtime's own scopes (podman's ``libpod-conmon-<id>.scope``,
   a podman pod's infra container) never get container values;
1. the pod annotation ``sdqos.io/scopes``: ``"<container>=<scope glob>,…"``
   (e.g. ``"nginx=libpod-*.scope"``); where several globs match, the most specific wins (most
   literal characters), whatever their order;
2. the scope's name contains the container's name as a whole word (``-``, ``_``, ``.`` separated);
3. the scope's Description contains the container's name as a whole word.

Rules 2 and 3 only count when exactly one container of the pod matches. An unmatched scope is
reported and never stopped.

A VM's scope: ``spec.scope`` names it; ``spec.libvirt.domain`` matches libvirt's
``machine-qemu\\x2d<id>\\x2d<domain>.scope`` (any id); ``spec.pidFile`` is the scope holding that
PID; otherwise ``machine-<name>.scope``, which ``sdqos run --vm`` creates.
"""

from __future__ import annotations

import fnmatch
import re

from sdqos.kube.manifests import SCOPES_ANNOTATION, parse_scopes_annotation
from sdqos.kube.naming import machine_scope, parse_libvirt_scope, systemd_unescape
from sdqos.plan.engine import Plan, PodPlan, VMPlan
from sdqos.reconcile.runtimes.base import LiveScope, Workload


def scopes_from_processes(rows: list[tuple[str, int, str]]) -> dict[str, LiveScope]:
    """GetUnitProcesses rows (cgroup, pid, cmdline) → the scopes they run in. A process in a
    sub-cgroup of a delegated scope (``…/x.scope/payload``) counts for ``x.scope``."""
    out: dict[str, LiveScope] = {}
    for cgroup, pid, _cmd in rows:
        parts = [p for p in cgroup.split("/") if p]
        for i, part in enumerate(parts):
            if part.endswith(".scope") and i > 0 and parts[i - 1].endswith(".slice"):
                scope = out.get(part)
                if scope is None:
                    scope = out[part] = LiveScope(part, parts[i - 1], "/" + "/".join(parts[: i + 1]))
                scope.pids.append(int(pid))
                break
    return out


def _has_word(text: str, word: str) -> bool:
    """``word`` appears in ``text`` delimited by anything but a letter or digit."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def _specificity(glob: str) -> tuple[int, int]:
    """More literal characters, then fewer wildcards: ``libpod-3f2a*.scope`` beats ``libpod-*.scope``."""
    wild = sum(glob.count(ch) for ch in "*?[")
    return (len(glob) - wild, -wild)


def annotation_hits(scope_name: str, pod: PodPlan) -> list[tuple[str, str]]:
    """(container, glob) of every ``sdqos.io/scopes`` entry of ``pod`` matching the scope, the most
    specific first (the one that decides)."""
    raw = pod.pod.annotations.get(SCOPES_ANNOTATION)
    if not raw:
        return []
    try:
        entries = parse_scopes_annotation(raw).items()
    except ValueError:
        return []  # validated at load time; a bad value just matches nothing
    names = {c.name for c in pod.containers}
    hits = [(c, g) for c, g in entries if c in names and fnmatch.fnmatchcase(scope_name, g)]
    return sorted(hits, key=lambda h: _specificity(h[1]), reverse=True)


def match_container(scope: LiveScope, pod: PodPlan, workload: Workload | None = None) -> str | None:
    """The container of ``pod`` a foreign scope in its slice belongs to, by the rule above.
    ``workload``: what the scope runs, by its runtime's record."""
    names = [c.name for c in pod.containers]
    if workload is not None and workload.pod_uid == pod.uid and workload.container in names:
        return workload.container
    hits = annotation_hits(scope.name, pod)
    if hits:
        return hits[0][0]
    for text in (systemd_unescape(scope.name[: -len(".scope")]), scope.description):
        named = [n for n in names if _has_word(text, n)]
        if len(named) == 1:
            return named[0]
    return None


def vm_scope_for(vm: VMPlan, live: dict[str, LiveScope], pid: int | None = None) -> str | None:
    """The live scope of a declared VM, or None when it is not running. ``pid``: the VM's process
    as its pid file or libvirt's record names it (which finds a libvirt scope whatever machined
    made of the domain's name, and in any partition)."""
    spec = vm.vm
    if spec.scope:
        return spec.scope if spec.scope in live else None
    if pid is not None and (spec.libvirt_domain or spec.pid_file):
        for name, scope in live.items():
            if pid in scope.pids:
                return name
        return None
    if spec.libvirt_domain:  # no record from libvirt (another pid namespace): its usual scope name
        for name in live:
            lv = parse_libvirt_scope(name)
            if lv is not None and lv[1] == spec.libvirt_domain:
                return name
        return None
    if spec.pid_file:
        return None
    own = machine_scope(spec.name)
    return own if own in live else None


def pods_by_slice(plan: Plan) -> dict[str, PodPlan]:
    return {p.slice: p for p in plan.pods}
