"""A container's effective securityContext, as kubelet works it out, in the terms podman can
express. Pure.

kubelet's rules: the container's fields override the pod's for runAsUser, runAsGroup,
runAsNonRoot, seccompProfile, appArmorProfile, seLinuxOptions, windowsOptions
(securitycontext.DetermineEffectiveSecurityContext); privileged, readOnlyRootFilesystem,
allowPrivilegeEscalation, capabilities and procMount are the container's; fsGroup,
supplementalGroups and sysctls the pod's (fsGroup joins the supplemental groups). What podman
cannot do as the manifest asks is refused, one ``InvalidInput`` naming the field: a container never
starts with weaker isolation than its manifest asks for.

Defaults are podman's where the manifest says nothing: its seccomp profile (kubelet's with
``seccompDefault: true``; kubelet's own default is Unconfined, which is weaker), AppArmor
RuntimeDefault where the kernel has AppArmor, no_new_privs off (kubelet: off unless
``allowPrivilegeEscalation: false``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from sdqos.errors import InvalidInput

DEFAULT_SECCOMP_ROOT = "/var/lib/kubelet/seccomp"  # kubelet's <root-dir>/seccomp
MAX_ID = 2**31 - 1  # IsValidUserID / IsValidGroupID: 0..2147483647

# Linux capability names (capability.h up to CAP_CHECKPOINT_RESTORE), as containerd/podman take them.
CAPABILITIES = frozenset("""CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO
SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
CHECKPOINT_RESTORE""".split())

# kubelet's safe sysctls (pkg/kubelet/sysctl/safe_sysctls.go, 1.36); others need
# --allowed-unsafe-sysctls, which sdqos does not have.
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"})
_SYSCTL_NAME = re.compile(r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?", re.ASCII)

POD_FIELDS = frozenset({"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "supplementalGroups", "sysctls",
                        "seccompProfile", "appArmorProfile", "seLinuxOptions", "windowsOptions",
                        "fsGroupChangePolicy", "supplementalGroupsPolicy", "seLinuxChangePolicy"})
CONTAINER_FIELDS = frozenset({"runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "appArmorProfile",
                              "seLinuxOptions", "windowsOptions", "privileged", "readOnlyRootFilesystem",
                              "allowPrivilegeEscalation", "capabilities", "procMount"})
_OVERRIDABLE = ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "appArmorProfile")


@dataclass(frozen=True, slots=True)
class HostSecurity:
    """What the host offers, read at the edge (sdqos.host.lsm)."""

    apparmor: bool = False  # AppArmor enabled in the kernel
    seccomp_root: str = DEFAULT_SECCOMP_ROOT  # where Localhost seccomp profiles live


@dataclass(frozen=True, slots=True)
class Security:
    """One container's effective securityContext, as podman will be told it."""

    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool = False
    groups: tuple[int, ...] = ()  # fsGroup, then supplementalGroups
    privileged: bool = False
    read_only_root: bool = False
    no_new_privileges: bool = False
    cap_add: tuple[str, ...] = ()  # CAP_X or ALL
    cap_drop: tuple[str, ...] = ()
    seccomp: str | None = None  # None: podman's default profile; "unconfined"; or an absolute profile path
    apparmor: str | None = None  # None: the runtime's default; "unconfined"; or a loaded profile's name
    sysctls: tuple[tuple[str, str], ...] = ()

    @property
    def needs_image_user(self) -> bool:
        """runAsNonRoot without runAsUser: only the image's user can tell (kubelet's verifyRunAsNonRoot)."""
        return self.run_as_non_root and self.run_as_user is None


class _Reader:
    def __init__(self, where: str, path: str):
        self.where, self.path = where, path

    def fail(self, field: str, message: str) -> NoReturn:
        raise InvalidInput(message, where=self.where, field=f"{self.path}.{field}")

    def mapping(self, value, field: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(field, "must be a mapping")
        return value

    def boolean(self, value, field: str) -> bool | None:
        if value is not None and not isinstance(value, bool):
            self.fail(field, f"must be true or false, not {type(value).__name__}")
        return value

    def ident(self, value, field: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
            self.fail(field, f"must be an integer between 0 and {MAX_ID}")
        return value

    def required_ident(self, value, field: str) -> int:
        """An id that must be there (a list item): null is refused, not passed on as None."""
        n = self.ident(value, field)
        if n is None:
            self.fail(field, f"must be an integer between 0 and {MAX_ID}")
        return n

    def text(self, value, field: str) -> str:
        if not isinstance(value, str):
            self.fail(field, f"must be a string, not {type(value).__name__}")
        if not value.isprintable():
            self.fail(field, "must not contain control characters (NUL, line breaks)")
        return value

    def unknown(self, value: dict, known: frozenset, field: str) -> None:
        for key in value:
            if key not in known:
                self.fail(f"{field}.{key}" if field else str(key), "is not a securityContext field sdqos knows; refused "
                          "rather than ignored")


class _WholeField(_Reader):
    """Errors name the field itself, never a part of it (an annotation is one string)."""

    def fail(self, field: str, message: str) -> NoReturn:
        raise InvalidInput(message, where=self.where, field=self.path)


def pod_context(spec: dict, where: str) -> dict:
    """The pod's securityContext, checked for fields sdqos cannot honour at all (once per pod)."""
    r = _Reader(where, "spec.securityContext")
    psc = r.mapping(spec.get("securityContext"), "")
    r.unknown(psc, POD_FIELDS, "")
    _refuse_unexpressible(r, psc)
    policy = psc.get("supplementalGroupsPolicy")
    if policy not in (None, "Merge"):
        r.fail("supplementalGroupsPolicy", f"{policy!r}: podman always merges the image's groups (only Merge)")
    if spec.get("hostUsers") is False:
        raise InvalidInput("user namespaces (hostUsers: false) are not supported by sdqos podman; refused rather than "
                           "run in the host's user namespace", where=where, field="spec.hostUsers")
    return psc


def _refuse_unexpressible(r: _Reader, sc: dict) -> None:
    if sc.get("seLinuxOptions") is not None:
        r.fail("seLinuxOptions", "SELinux labels are not supported by sdqos podman; refused rather than ignored")
    if sc.get("windowsOptions") is not None:
        r.fail("windowsOptions", "Windows options cannot apply to a Linux container")


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"  # + container name (deprecated, honoured)


def _apparmor_annotation(annotations: dict, name: str, where: str) -> dict | None:
    """The deprecated per-container AppArmor annotation as a profile (kubelet's
    getProfileFromPodAnnotations); it comes after the container's field, before the pod's."""
    key = APPARMOR_ANNOTATION + name
    value = annotations.get(key)
    if value is None:
        return None
    if value == "runtime/default":
        return {"type": "RuntimeDefault"}
    if value == "unconfined":
        return {"type": "Unconfined"}
    if isinstance(value, str) and value.startswith("localhost/") and len(value) > len("localhost/"):
        return {"type": "Localhost", "localhostProfile": value.removeprefix("localhost/")}
    raise InvalidInput(f"{value!r}: invalid AppArmor profile (runtime/default, unconfined or localhost/<name>)",
                       where=where, field=f"metadata.annotations.{key}")


def effective(pod_sc: dict, container: dict, where: str, path: str, host: HostSecurity,
              annotations: dict | None = None) -> Security:
    """The container's effective securityContext (kubelet's merge), checked and translated."""
    r = _Reader(where, f"{path}.securityContext")
    csc = r.mapping(container.get("securityContext"), "")
    r.unknown(csc, CONTAINER_FIELDS, "")
    _refuse_unexpressible(r, csc)
    merged = {k: csc[k] if csc.get(k) is not None else pod_sc.get(k) for k in _OVERRIDABLE}
    # a field's error names where it was written: the container's, else the pod's
    rp = _Reader(where, "spec.securityContext")
    from_annotation = None
    if csc.get("appArmorProfile") is None:
        from_annotation = _apparmor_annotation(annotations or {}, container.get("name", ""), where)
        if from_annotation is not None:
            merged["appArmorProfile"] = from_annotation

    def reader(key: str) -> _Reader:
        if key == "appArmorProfile" and from_annotation is not None:
            return _WholeField(where, f"metadata.annotations.{APPARMOR_ANNOTATION}{container.get('name', '')}")
        return r if csc.get(key) is not None else rp

    user = reader("runAsUser").ident(merged["runAsUser"], "runAsUser")
    group = reader("runAsGroup").ident(merged["runAsGroup"], "runAsGroup")
    if group is not None and user is None:
        reader("runAsGroup").fail("runAsGroup", "podman needs runAsUser with runAsGroup (it cannot take the "
                                                "image's user with another group); set runAsUser too")
    non_root = bool(reader("runAsNonRoot").boolean(merged["runAsNonRoot"], "runAsNonRoot"))
    if non_root and user == 0:
        reader("runAsUser").fail("runAsUser", "container's runAsUser breaks non-root policy (runAsNonRoot: true, "
                                              "runAsUser: 0)")
    groups: list[int] = []
    fs_group = rp.ident(pod_sc.get("fsGroup"), "fsGroup")
    if fs_group is not None:
        groups.append(fs_group)
    sup = pod_sc.get("supplementalGroups")
    if sup is not None and not isinstance(sup, list):
        rp.fail("supplementalGroups", "must be a list of integers")
    groups += [rp.required_ident(g, f"supplementalGroups[{i}]") for i, g in enumerate(sup or [])]
    privileged = bool(r.boolean(csc.get("privileged"), "privileged"))
    read_only = bool(r.boolean(csc.get("readOnlyRootFilesystem"), "readOnlyRootFilesystem"))
    escalation = r.boolean(csc.get("allowPrivilegeEscalation"), "allowPrivilegeEscalation")
    caps = r.mapping(csc.get("capabilities"), "capabilities")
    r.unknown(caps, frozenset({"add", "drop"}), "capabilities")
    add = _capabilities(r, caps.get("add"), "capabilities.add")
    drop = _capabilities(r, caps.get("drop"), "capabilities.drop")
    if escalation is False and privileged:  # ValidateSecurityContext
        r.fail("allowPrivilegeEscalation", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true")
    if escalation is False and "CAP_SYS_ADMIN" in add:
        r.fail("allowPrivilegeEscalation", "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                                           "CAP_SYS_ADMIN")
    proc = csc.get("procMount")
    if proc not in (None, "Default"):
        r.fail("procMount", f"{proc!r}: an unmasked /proc needs a user namespace (hostUsers: false), which sdqos "
                            "podman does not support; only Default")
    seccomp = _seccomp(reader("seccompProfile"), merged["seccompProfile"], host)
    apparmor = _apparmor(reader("appArmorProfile"), merged["appArmorProfile"], host)
    return Security(user, group, non_root, tuple(groups), privileged, read_only, escalation is False, add, drop,
                    seccomp, apparmor, _sysctls(rp, pod_sc.get("sysctls")))


def _capabilities(r: _Reader, value, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        r.fail(field, "must be a list of capability names")
    out = []
    for i, name in enumerate(value):
        text = r.text(name, f"{field}[{i}]").upper()
        bare = text.removeprefix("CAP_")
        if text == "ALL":
            out.append("ALL")
        elif bare in CAPABILITIES:
            out.append(f"CAP_{bare}")
        else:
            r.fail(f"{field}[{i}]", f"{name!r} is not a Linux capability name (e.g. NET_ADMIN, CAP_SYS_TIME, ALL)")
    return tuple(out)


def _profile(r: _Reader, value, field: str) -> tuple[str, str]:
    """(type, localhostProfile); the profile is "" unless the type is Localhost."""
    p = r.mapping(value, field)
    r.unknown(p, frozenset({"type", "localhostProfile"}), field)
    kind = p.get("type")
    if kind not in ("RuntimeDefault", "Unconfined", "Localhost"):
        r.fail(f"{field}.type", f"{kind!r} is not one of RuntimeDefault, Unconfined, Localhost")
    local = p.get("localhostProfile")
    if kind == "Localhost":
        if local is None or local == "":
            r.fail(f"{field}.localhostProfile", "Required value: must be set when type is Localhost")
        return kind, r.text(local, f"{field}.localhostProfile")
    if local is not None:
        r.fail(f"{field}.localhostProfile", "can only be set when type is Localhost")
    return kind, ""


def _seccomp(r: _Reader, value, host: HostSecurity) -> str | None:
    if value is None:
        return None
    kind, local = _profile(r, value, "seccompProfile")
    if kind == "RuntimeDefault":
        return None
    if kind == "Unconfined":
        return "unconfined"
    parts = local.split("/")
    if local.startswith("/") or ".." in parts or "" in parts:  # validateLocalDescendingPath
        r.fail("seccompProfile.localhostProfile", f"{local!r} must be a relative path below the seccomp root "
                                                  f"({host.seccomp_root}) without '..'")
    return f"{host.seccomp_root.rstrip('/')}/{local}"


def _apparmor(r: _Reader, value, host: HostSecurity) -> str | None:
    if value is None:
        return None
    kind, local = _profile(r, value, "appArmorProfile")
    if kind == "Unconfined":
        return "unconfined" if host.apparmor else None
    if not host.apparmor:  # kubelet's admission: "Cannot enforce AppArmor: AppArmor is not enabled on the host"
        r.fail("appArmorProfile.type", f"{kind}: cannot enforce AppArmor: AppArmor is not enabled on the host")
    if kind == "RuntimeDefault":
        return None
    if not re.fullmatch(r"[A-Za-z0-9_./-][A-Za-z0-9_./@+-]*", local, re.ASCII) or local.startswith("-"):
        r.fail("appArmorProfile.localhostProfile", f"{local!r} is not an AppArmor profile name")
    return local


def _sysctls(r: _Reader, value) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        r.fail("sysctls", "must be a list of {name, value}")
    out = []
    for i, s in enumerate(value):
        if not isinstance(s, dict):
            r.fail(f"sysctls[{i}]", "must be {name, value}")
        name = r.text(s.get("name"), f"sysctls[{i}].name")
        if len(name) > 253 or not _SYSCTL_NAME.fullmatch(name):
            r.fail(f"sysctls[{i}].name", f"{name!r} is not a sysctl name (e.g. kernel.shm_rmid_forced)")
        dotted = _normalize_sysctl(name)
        if dotted not in SAFE_SYSCTLS:
            r.fail(f"sysctls[{i}].name", f"{name!r} is not one of kubelet's safe sysctls (an unsafe sysctl needs "
                                         "kubelet's --allowed-unsafe-sysctls, which sdqos does not have)")
        val = r.text(s.get("value"), f"sysctls[{i}].value")
        if "," in val or '"' in val:  # podman's --sysctl is a comma-separated list
            r.fail(f"sysctls[{i}].value", f"{val!r}: podman cannot carry ',' or '\"' in a sysctl value")
        out.append((dotted, val))
    return tuple(out)


def _normalize_sysctl(name: str) -> str:
    """kubelet's sysctl NormalizeName: ``net/ipv4/x`` (a '/' first) is ``net.ipv4.x``."""
    first = next((ch for ch in name if ch in "./"), ".")
    return name.translate(str.maketrans("./", "/.")) if first == "/" else name


def non_root_error(user: str | None) -> str | None:
    """kubelet's verifyRunAsNonRoot for a container without runAsUser, from the image's user
    (``podman image inspect``'s Config.User: ``uid[:gid]``, ``name[:group]``, or empty for root)."""
    if user is None:
        return "cannot verify runAsNonRoot: the image is not in podman's store (pull it first)"
    name = user.split(":", 1)[0]
    if name == "":
        return "container has runAsNonRoot and image will run as root"
    if not name.isdigit() or not name.isascii():
        return f"container has runAsNonRoot and image has non-numeric user ({name}), cannot verify user is non-root"
    uid = int(name)
    if uid == 0:
        return "container has runAsNonRoot and image will run as root"
    if uid > MAX_ID:
        return f"container has runAsNonRoot and image has an invalid user id ({uid}). (Must be 1-({MAX_ID}))"
    return None
