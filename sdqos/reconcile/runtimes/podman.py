"""podman as a runtime row. Each container runs in ``libpod-<id>.scope`` (in a pod slice, a podman
pod's ``<slice stem>-libpod_pod_<id>.slice``, or machine.slice), beside its monitor's
``libpod-conmon-<id>.scope``; a podman pod's infra (pause) container is podman's own. Who a
container is comes from podman's record (``podman ps``: labels, infra flag), never from the scope
name alone: sdqos's own carry ``sdqos.io/managed=true`` and the pod's uid label. Stopped with
``podman rm`` (every pod's side by side, each with its grace period), updated with ``podman update``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Callable

from sdqos.errors import SdqosError
from sdqos.kube.naming import parse_podman_conmon_scope, parse_podman_scope, podman_conmon_scope, podman_scope
from sdqos.plan.podman import CONTAINER_LABEL, MANAGED_LABEL, UID_LABEL, grace_seconds, owned_by, update_args
from sdqos.reconcile.runtimes.base import LiveScope, Workload

if TYPE_CHECKING:  # podman's adapter is imported when a libpod scope runs, not on every sync
    from sdqos.host.podman import PodmanContainer
    from sdqos.host.systemd import SystemdAPI
    from sdqos.plan.engine import ContainerPlan
    from sdqos.reconcile.memo import Memo

ENV = ("SDQOS_PODMAN", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")  # which podman, which storage

Known = dict[str, "PodmanContainer"]  # podman's containers by id


class Podman:
    name = "podman"
    inner_cgroup: str | None = "container"  # crun's cgroup below the scope, where its limits live
    misplaced: str | None = "run it in a pod slice with `sdqos podman start`, or podman's --cgroup-parent"

    def claims(self, scope: str) -> bool:
        return self.named_by(scope) is not None

    def named_by(self, scope: str) -> str | None:
        return parse_podman_scope(scope) or parse_podman_conmon_scope(scope)

    async def observe(self, sd: SystemdAPI, scopes: dict[str, LiveScope], machine: bool, memo: Memo | None,
                      warnings: list[str], errors: list[str]) -> Known | None:
        return self.containers(scopes, memo, lambda: self.ask(scopes, errors))

    def ask(self, scopes: dict[str, LiveScope], errors: list[str]) -> Known | None:
        """podman's containers by id, asked only when a podman container runs in the tree; None when
        podman could not be asked. That is an error, not a warning: sdqos cannot tell its own
        containers from others', so it neither tunes nor stops them until podman answers again."""
        if not any(parse_podman_scope(n) for n in scopes):
            return {}
        try:
            from sdqos.host import podman

            return {c.id: c for c in podman.containers()}
        except SdqosError as exc:  # podman missing or broken: the other matching rules still apply
            errors.append(f"cannot ask podman which containers run in pod slices: {exc}; their containers are "
                          "left as they are")
            return None

    def containers(self, scopes: dict[str, LiveScope], memo: Memo | None,
                   ask: Callable[[], Known | None]) -> Known | None:
        """``ask``'s answer, reused (``memo``) while exactly the same libpod scopes run (a container's
        id is in its scope's name; its labels and infra flag never change) and the same podman is
        asked (:data:`ENV`)."""
        names = sorted(n for n in scopes if self.claims(n))
        if memo is None or not any(parse_podman_scope(n) for n in names):
            return ask()  # no container scope: podman is not asked at all
        from sdqos.host.podman import PodmanContainer

        key = [[os.environ.get(v) for v in ENV], names]
        got = memo.reuse(self.name, key)
        if got is not None:
            try:
                return {c["id"]: PodmanContainer(str(c["id"]), str(c["name"]), dict(c["labels"]), str(c["state"]),
                                                 bool(c["infra"])) for c in got["containers"]}
            except (KeyError, TypeError, ValueError):
                pass
        containers = ask()
        if containers is not None:  # None: podman failed (an error says so); ask next time
            memo.keep(self.name, key, {"containers": [dataclasses.asdict(c) for c in containers.values()]})
        return containers

    def _container(self, scope: str, known: Known | None) -> PodmanContainer | None:
        cid = self.named_by(scope)
        return (known or {}).get(cid) if cid else None

    def workload(self, scope: LiveScope, known: Known | None) -> Workload | None:
        c = self._container(scope.name, known)
        return _workload(c) if c is not None else None

    def describe(self, scope: LiveScope, known: Known | None) -> str | None:
        c = self._container(scope.name, known)
        if c is not None:
            return f"podman {'conmon of ' if parse_podman_conmon_scope(scope.name) else ''}container {c.name}"
        return "a podman container" if self.claims(scope.name) else None

    def by_name(self, name: str, known: Known | None) -> Workload | None:
        c = next((c for c in (known or {}).values() if c.name == name), None)
        return _workload(c) if c is not None else None

    def helper(self, scope: str, known: Known | None) -> bool:
        if parse_podman_conmon_scope(scope):
            return True
        c = self._container(scope, known)
        return c is not None and c.infra

    def pod_workloads(self, uids: set[str], seen: bool) -> dict[str, list[Workload]]:
        from sdqos.host import podman

        out: dict[str, list[Workload]] = {}
        if not uids or (not seen and not podman.installed()):
            return out  # no podman on this host: no containers of it either
        for c in podman.containers(f"{MANAGED_LABEL}=true"):
            uid = c.labels.get(UID_LABEL)
            if uid in uids and owned_by(c.labels, uid):
                out.setdefault(uid, []).append(_workload(c, grace_s=grace_seconds(labels=c.labels)))
        return out

    async def stop(self, sd: SystemdAPI, groups: list[tuple[list[Workload], int]],
                   said: list[str] | None = None) -> list[Exception | None]:
        from sdqos.host import podman

        return list(podman.remove_side_by_side([([w.name for w in ws], grace) for ws, grace in groups]))

    def update(self, workload: Workload, container: ContainerPlan, cgroup: str) -> None:
        from sdqos.host import podman

        podman.check(update_args(container, cgroup) + [workload.name])


def _workload(c: PodmanContainer, grace_s: int | None = None) -> Workload:
    return Workload("podman", c.name, podman_scope(c.id), (podman_conmon_scope(c.id),),
                    pod_uid=c.labels.get(UID_LABEL), container=c.labels.get(CONTAINER_LABEL),
                    managed=c.labels.get(MANAGED_LABEL) == "true", grace_s=grace_s,
                    what=f"podman container {c.name}")


ROW = Podman()
