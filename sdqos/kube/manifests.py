"""Pod and VirtualMachine manifests → model objects, validated and defaulted like the API server.

Pure: takes already-loaded YAML documents. Every problem becomes an :class:`InvalidInput` naming
the file, the document index and the field path, e.g.
``pods/web.yaml[2]: spec.containers[0].resources.limits.cpu: "12x" is not a quantity``.
A pod with problems is not returned; its identity (namespace/name, uid), when readable, is, so the
reconciler can leave its units alone instead of treating it as deleted.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Sequence

from sdqos.errors import InvalidInput, QuantityError
from sdqos.kube import priority as P
from sdqos.kube.dispositions import REFUSED, pod_resource
from sdqos.kube.model import CPU, MEMORY, Container, Pod, PodResources, Source, VirtualMachine
from sdqos.kube.naming import machine_scope, valid_unit_name
from sdqos.kube.priority import NO_CLASSES, PriorityClasses
from sdqos.kube.qos import CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION
from sdqos.kube.quantity import Quantity, parse_quantity

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# libvirt's own rule for a domain name: not empty, no '/' (it names files), no newline; it also
# keeps its status and pid files under it, so a name longer than a file name cannot run.
LIBVIRT_DOMAIN = re.compile(r"^[^/\x00-\x1f\x7f]{1,250}$")
UID_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,126}[A-Za-z0-9])?$")
UID_NAMESPACE = uuid.UUID("5b0a7a5e-3d1c-5f2e-9a57-7364716f7300")  # sdqos' own uuid5 namespace
INT64_MAX = 2**63 - 1

STANDARD_RESOURCES = frozenset({CPU, MEMORY, "ephemeral-storage"})
SIDECAR_POLICY = "Always"

# Field names kubectl's strict validation knows; anything else is a typo we refuse rather than
# silently ignore (a misspelt "resources" would quietly turn a pod into BestEffort).
WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob",
                            "ReplicationController"})  # kinds whose pod template a user may mean
POD_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
METADATA_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})
POD_SPEC_FIELDS = frozenset({
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName", "hostNetwork",
    "hostPID", "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
    "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases", "priorityClassName",
    "priority", "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks",
    "preemptionPolicy", "overhead", "topologySpreadConstraints", "setHostnameAsFQDN", "os",
    "hostUsers", "schedulingGates", "resourceClaims", "resources", "hostnameOverride",
    "workloadRef", "restartPolicyRules",
})
CONTAINER_FIELDS = frozenset({
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices",
    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
})
RESOURCES_FIELDS = frozenset({"requests", "limits", "claims"})
VM_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec"})
VM_SPEC_FIELDS = frozenset({"resources", "overhead", "libvirt", "scope", "pidFile", "priority", "eviction", "cpu"})
VM_CPU_FIELDS = frozenset({"dedicatedCpuPlacement"})  # KubeVirt's domain.cpu: the one field sdqos acts on
# A VM without metadata.uid gets one derived from its name as a pod's is from namespace/name
# (stable_uid), under this namespace, which no pod can have (a namespace is a lowercase DNS label).
VM_UID_NAMESPACE = "VirtualMachine"
VM_API_VERSION = "sdqos.io/v1alpha1"
# spec.eviction: whether node-pressure eviction may stop the VM (docs/eviction.md: Never by default).
VM_EVICTION_POLICIES = ("Never", "Allowed")
VM_EVICTION_DEFAULT = "Never"
SCOPES_ANNOTATION = "sdqos.io/scopes"  # "<container>=<scope glob>,…": see sdqos.reconcile.scopes

# Hypervisor overhead when a VM does not say (docs/vms.md): 100m CPU, and memory with the structure
# of KubeVirt's GetMemoryOverhead (pkg/virt-controller/services/renderresources.go), for the parts
# that live in the QEMU process, which is all a VM's scope holds here (virt-launcher, virtlogd and
# virtqemud are KubeVirt's per-VM processes; on a libvirt host its daemons run in system.slice):
# QemuOverhead 30 MiB, page tables guest RAM / 512, 8 MiB per vCPU, 8 MiB for an IO thread, 32 MiB
# of video RAM (KubeVirt attaches a graphics device by default).
VM_DEFAULT_OVERHEAD_CPU_MILLI = 100
VM_OVERHEAD_QEMU = 30 * 2**20
VM_OVERHEAD_PER_VCPU = 8 * 2**20
VM_OVERHEAD_IOTHREAD = 8 * 2**20
VM_OVERHEAD_VIDEO = 32 * 2**20
VM_PAGETABLE_DIVISOR = 512
MAX_VCPUS = 4096  # QEMU's own maximum (-smp maxcpus)


def vm_memory_overhead(guest_ram: int, vcpus: int) -> int:
    """QEMU's own memory beside a guest of ``guest_ram`` bytes with ``vcpus`` vCPUs (see above)."""
    return (VM_OVERHEAD_QEMU + VM_OVERHEAD_IOTHREAD + VM_OVERHEAD_VIDEO + VM_OVERHEAD_PER_VCPU * max(1, vcpus)
            + math.ceil(guest_ram / VM_PAGETABLE_DIVISOR))


@dataclass
class ParseResult:
    """What a set of documents yielded: valid objects, errors, and the identities of invalid ones."""

    pods: list[Pod] = field(default_factory=list)
    vms: list[VirtualMachine] = field(default_factory=list)
    errors: list[InvalidInput] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    invalid_keys: set[str] = field(default_factory=set)  # "pod:<ns>/<name>", "uid:<uid>", "vm:<name>"
    # Invalid documents whose identity could not be read: which pod or VM they are is unknown, so
    # no pod or VM may be treated as gone while they exist.
    unknown_identities: int = 0


class _Doc:
    """Error collector for one document: remembers the source and a field path prefix."""

    def __init__(self, source: Source, result: ParseResult, prefix: str = "", *, check_values: bool = True):
        self.check_values = check_values
        self.source = source
        self.result = result
        self.prefix = prefix
        self.failed = False

    def error(self, path: str, message: str) -> None:
        self.failed = True
        full = f"{self.prefix}{path}" if path else self.prefix.rstrip(".")
        self.result.errors.append(InvalidInput(message, where=str(self.source), field=full or None))

    def mapping(self, value, path: str, *, required: bool = False) -> dict | None:
        if value is None:
            if required:
                self.error(path, "Required value")
            return None
        if not isinstance(value, dict):
            self.error(path, f"must be a mapping, not {_type_name(value)}")
            return None
        for k in value:
            if not isinstance(k, str):
                self.error(path, f"key {k!r} must be a string")
                return None
        return value

    def unknown(self, value: dict, allowed: frozenset[str], path: str) -> None:
        for k in value:
            if k not in allowed:
                close = closest(k, allowed)
                self.error(f"{path}.{k}" if path else k,
                           "unknown field" + (f' (did you mean "{close}"?)' if close else ""))

    def string(self, value, path: str, *, required: bool = False) -> str | None:
        if value is None:
            if required:
                self.error(path, "Required value")
            return None
        if not isinstance(value, str):
            self.error(path, f"must be a string, not {_type_name(value)}")
            return None
        return value


def closest(name: str, known) -> str | None:
    """The known name a typo most likely meant ("resource" → "resources"), for a "did you mean"
    hint as kubectl gives; None when none is close."""
    import difflib  # only for a typo's hint: not loaded by a valid config's parse

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return close[0] if close else None


def _type_name(value) -> str:
    return {dict: "a mapping", list: "a list", bool: "a boolean", int: "a number", float: "a number",
            str: "a string"}.get(
        type(value), type(value).__name__
    )


def _quote(value) -> str:
    text = value if isinstance(value, str) else repr(value)
    if not text.isprintable():  # a NUL or line break shown as an escape: the error stays one line
        text = repr(text)[1:-1]
    if len(text) > 60:
        text = text[:57] + "..."
    return '"' + text.replace('"', '\\"') + '"'


def _check_name(doc: _Doc, value: str, path: str, *, subdomain: bool = False) -> bool:
    limit, pattern, what = (253, DNS_SUBDOMAIN, "DNS-1123 subdomain") if subdomain else (63, DNS_LABEL, "DNS-1123 label")
    if len(value) > limit:
        doc.error(path, f"{_quote(value)} must be no more than {limit} characters")
        return False
    if not pattern.match(value):
        doc.error(
            path,
            f"{_quote(value)} is not a valid {what} (lowercase letters, digits and '-'"
            + (", '.'" if subdomain else "")
            + ", starting and ending with a letter or digit)",
        )
        return False
    return True


def _resource_name_ok(name: str) -> bool:
    return name in STANDARD_RESOURCES or name.startswith("hugepages-") or "/" in name


def parse_resource_list(doc: _Doc, value, path: str, *, pod_level: bool = False) -> dict[str, Quantity]:
    """A ResourceList: resource name → non-negative quantity; memory a whole number of bytes."""
    m = doc.mapping(value, path)
    if not m:
        return {}
    out: dict[str, Quantity] = {}
    for name, raw in m.items():
        fpath = f"{path}.{name}"
        if not doc.check_values:
            try:
                out[name] = parse_quantity(raw)
            except QuantityError as exc:
                doc.error(fpath, str(exc))
            continue
        if not _resource_name_ok(name):
            doc.error(
                fpath,
                f"{_quote(name)} is not a resource name (cpu, memory, ephemeral-storage, hugepages-<size>,"
                " or a fully-qualified extended resource)",
            )
            continue
        row = pod_resource(name)[1]
        if row.kind == REFUSED:  # sdqos.kube.dispositions: nothing accepted that sdqos cannot do
            doc.error(fpath, f"{_quote(name)} is refused: {row.note}")
            continue
        if pod_level and not (name in (CPU, MEMORY) or name.startswith("hugepages-")):
            doc.error(fpath, f"{_quote(name)} is not supported in pod-level resources (cpu, memory, hugepages-<size>)")
            continue
        try:
            q = parse_quantity(raw)
        except QuantityError as exc:
            doc.error(fpath, str(exc))
            continue
        if q.sign() < 0:
            doc.error(fpath, f"{_quote(str(raw))} must be greater than or equal to 0")
            continue
        if name == CPU:
            if q.milli_value() > INT64_MAX:
                doc.error(fpath, f"{_quote(str(raw))} is too large")
                continue
        elif q.value() > INT64_MAX:
            doc.error(fpath, f"{_quote(str(raw))} is too large (more than 2^63-1)")
            continue
        if (name == MEMORY or name.startswith("hugepages-")) and q.as_fraction().denominator != 1:
            doc.error(
                fpath,
                f"{_quote(str(raw))} is a fractional number of bytes"
                + (" (did you mean Mi?)" if isinstance(raw, str) and raw.endswith("m") else ""),
            )
            continue
        out[name] = q
    return out


def _check_request_limit(doc: _Doc, reqs: dict, lims: dict, path: str) -> None:
    if not doc.check_values:
        return
    for name, req in reqs.items():
        lim = lims.get(name)
        if lim is not None and req > lim:
            doc.error(f"{path}.requests.{name}", f'"{req}" must be less than or equal to {name} limit of "{lim}"')


def parse_container(doc: _Doc, value, path: str, *, init: bool, apply_defaults: bool) -> Container | None:
    c = doc.mapping(value, path)
    if c is None:
        if value is None:
            doc.error(path, "must be a mapping, not null")
        return None
    doc.unknown(c, CONTAINER_FIELDS, path)
    name = doc.string(c.get("name"), f"{path}.name", required=True)
    if name is not None and not _check_name(doc, name, f"{path}.name"):
        name = None
    res = doc.mapping(c.get("resources"), f"{path}.resources") or {}
    if res:
        doc.unknown(res, RESOURCES_FIELDS, f"{path}.resources")
    reqs = parse_resource_list(doc, res.get("requests"), f"{path}.resources.requests")
    lims = parse_resource_list(doc, res.get("limits"), f"{path}.resources.limits")
    _check_request_limit(doc, reqs, lims, f"{path}.resources")
    written = frozenset(reqs)
    if apply_defaults:
        # API defaulting: a limit with no request gets request = limit.
        for rname, lim in lims.items():
            reqs.setdefault(rname, lim)
    policy = c.get("restartPolicy")
    restart_always = False
    if policy is not None:
        if not init:
            pass  # app-container restartPolicy belongs to newer API features; it does not affect QoS
        elif policy != SIDECAR_POLICY:
            doc.error(f"{path}.restartPolicy", f"Unsupported value: {_quote(policy)}: supported values: \"Always\"")
        else:
            restart_always = True
    if name is None:
        return None
    return Container(name=name, requests=reqs, limits=lims, init=init, restart_always=restart_always, request_set=written)


def parse_scopes_annotation(value: str) -> dict[str, str]:
    """``"nginx=libpod-*.scope, side=crio-abc.scope"`` → {container: glob}. ValueError if malformed."""
    out = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, glob = item.partition("=")
        if not sep or not name.strip() or not glob.strip().endswith(".scope"):
            raise ValueError(f"{item!r} is not <container>=<scope glob ending in .scope>")
        out[name.strip()] = glob.strip()
    return out


def stable_uid(namespace: str, name: str) -> str:
    """A UID derived from namespace/name: the same on every run and every machine."""
    return str(uuid.uuid5(UID_NAMESPACE, f"{namespace}/{name}"))


def parse_pod(
    raw, source: Source, result: ParseResult, *, prefix: str = "", apply_defaults: bool = True, check_values: bool = True,
    classes: PriorityClasses | None = None,
) -> Pod | None:
    """One Pod document. Errors go to ``result``; returns the Pod only if it is entirely valid.
    ``apply_defaults``/``check_values`` off = take the pod as Kubernetes' Go unit tests build it.
    ``classes``: the declared PriorityClasses (none: the system classes only)."""
    doc = _Doc(source, result, prefix, check_values=check_values)
    m = _pod_document(doc, raw, result)
    if m is None:
        return None
    doc.unknown(m, POD_FIELDS, "")
    meta = doc.mapping(m.get("metadata"), "metadata", required=True) or {}
    doc.unknown(meta, METADATA_FIELDS, "metadata")
    name, namespace, uid = _pod_identity(doc, meta, result)
    annotations = doc.mapping(meta.get("annotations"), "metadata.annotations") or {}
    for k, v in annotations.items():
        if not isinstance(v, str):
            doc.error(f"metadata.annotations.{k}", f"must be a string, not {_type_name(v)}")

    spec = doc.mapping(m.get("spec"), "spec", required=True) or {}
    doc.unknown(spec, POD_SPEC_FIELDS, "spec")
    containers = _container_list(doc, spec, "containers", init=False, apply_defaults=apply_defaults, required=True)
    inits = _container_list(doc, spec, "initContainers", init=True, apply_defaults=apply_defaults, required=False)
    _check_scopes_annotation(doc, annotations.get(SCOPES_ANNOTATION), containers + inits)
    _check_unique_names(doc, inits, containers)
    overhead = parse_resource_list(doc, spec.get("overhead"), "spec.overhead")
    pod_resources = _pod_resources(doc, spec, apply_defaults)
    priority = _pod_integer(doc, spec, "priority", -(2**31), 2**31, "{} is out of the int32 range")
    # ValidatePodSpec: ValidateNonnegativeField, int64
    grace = _pod_integer(doc, spec, "terminationGracePeriodSeconds", 0, 2**63, "{} must be between 0 and 2^63-1")
    pclass = doc.string(spec.get("priorityClassName"), "spec.priorityClassName") or ""
    if apply_defaults:
        pclass, priority, annotations = _admit(doc, spec, classes, pclass, priority, annotations)

    if doc.failed or not name or not namespace:
        return None
    if uid is None:
        uid = stable_uid(namespace, name)
        generated = True
    else:
        generated = False
    result.invalid_keys.discard(f"pod:{namespace}/{name}")
    result.invalid_keys.discard(f"uid:{uid}")
    return Pod(
        name=name,
        namespace=namespace,
        uid=uid,
        containers=tuple(c for c in containers if c),
        init_containers=tuple(c for c in inits if c),
        overhead=overhead,
        resources=pod_resources,
        priority=priority,
        priority_class_name=pclass,
        annotations=dict(annotations),
        uid_generated=generated,
        source=source,
        termination_grace_period=grace,
    )


def _pod_document(doc: _Doc, raw, result: ParseResult) -> dict | None:
    """The document as a mapping of kind Pod (apiVersion v1), else None: nothing more is read."""
    m = doc.mapping(raw, "", required=True)
    if m is None:
        result.unknown_identities += 1
        return None
    if m.get("kind") != "Pod":
        # Not a pod at all (or a typo): which pod it is cannot be known, and its other fields are
        # another kind's: one error, not one more for each field a Pod would not have.
        result.unknown_identities += 1
        kind = m.get("kind")
        hint = (f" (sdqos reads Pods: write the {kind}'s pod template as a Pod)" if kind in WORKLOAD_KINDS else "")
        doc.error("kind", f"must be \"Pod\", not {_quote(kind)}{hint}")
        return None
    if m.get("apiVersion") != "v1":
        # A pod with a typo: which pod it is cannot be known.
        result.unknown_identities += 1
        doc.error("apiVersion", f"must be \"v1\" for a Pod, not {_quote(m.get('apiVersion'))}")
    return m


def _pod_identity(doc: _Doc, meta: dict, result: ParseResult) -> tuple[str | None, str | None, str | None]:
    """metadata's name, namespace (default "default") and uid (None: not given or invalid); the
    keys the pod is known by are recorded as invalid until the whole pod proves valid."""
    name = doc.string(meta.get("name"), "metadata.name", required=True)
    if name is not None and not _check_name(doc, name, "metadata.name", subdomain=True):
        name = None
    namespace = doc.string(meta.get("namespace"), "metadata.namespace")
    if namespace is None and "namespace" not in meta:
        namespace = "default"
    if namespace is not None and not _check_name(doc, namespace, "metadata.namespace"):
        namespace = None
    uid_raw = meta.get("uid")
    uid = None
    if uid_raw is not None:
        uid = doc.string(uid_raw, "metadata.uid")
        if uid is not None and not UID_RE.match(uid):
            doc.error("metadata.uid", f"{_quote(uid)} must be letters, digits and '-' (at most 128), like a UUID")
            uid = None
    if not (name and namespace):
        result.unknown_identities += 1  # (such a pod is never valid: it is not returned by parse_pod)
    else:
        result.invalid_keys.add(f"pod:{namespace}/{name}")  # removed again if the pod is valid
        if uid_raw is None:
            result.invalid_keys.add(f"uid:{stable_uid(namespace, name)}")
    if uid:
        result.invalid_keys.add(f"uid:{uid}")
    return name, namespace, uid


def _check_scopes_annotation(doc: _Doc, value, containers: list) -> None:
    """``sdqos.io/scopes``: well formed, naming only containers of the pod."""
    if not isinstance(value, str):
        return
    try:
        mapping = parse_scopes_annotation(value)
    except ValueError as exc:
        doc.error(f"metadata.annotations.{SCOPES_ANNOTATION}", str(exc))
        return
    known = {c.name for c in containers if c is not None}
    for cname in mapping:
        if cname not in known:
            doc.error(f"metadata.annotations.{SCOPES_ANNOTATION}", f"no container named {_quote(cname)} in this pod")


def _check_unique_names(doc: _Doc, inits: list, containers: list) -> None:
    seen: dict[str, str] = {}
    for kind, lst in (("initContainers", inits), ("containers", containers)):
        for i, c in enumerate(lst):
            if c is None:
                continue
            if c.name in seen:
                doc.error(f"spec.{kind}[{i}].name", f"Duplicate value: {_quote(c.name)} (also {seen[c.name]})")
            else:
                seen[c.name] = f"spec.{kind}[{i}]"


def _pod_resources(doc: _Doc, spec: dict, apply_defaults: bool) -> PodResources | None:
    """spec.resources (pod-level resources); None when not given."""
    pres = doc.mapping(spec.get("resources"), "spec.resources")
    if pres:
        doc.unknown(pres, RESOURCES_FIELDS, "spec.resources")
        preqs = parse_resource_list(doc, pres.get("requests"), "spec.resources.requests", pod_level=True)
        plims = parse_resource_list(doc, pres.get("limits"), "spec.resources.limits", pod_level=True)
        _check_request_limit(doc, preqs, plims, "spec.resources")
        if apply_defaults:
            for rname, lim in plims.items():
                preqs.setdefault(rname, lim)
        return PodResources(requests=preqs, limits=plims)
    if pres is not None:
        return PodResources(requests={}, limits={})  # `resources: {}` is not "unset" in 1.36
    return None


def _pod_integer(doc: _Doc, spec: dict, key: str, low: int, high: int, out_of_range: str) -> int | None:
    """An integer field of the spec in [low, high); None when not given or invalid."""
    value = spec.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        doc.error(f"spec.{key}", f"must be an integer, not {_type_name(value)}")
        return None
    if value is not None and not low <= value < high:
        doc.error(f"spec.{key}", out_of_range.format(value))
        return None
    return value


def _admit(doc: _Doc, spec: dict, classes: PriorityClasses | None, pclass: str, priority: int | None,
           annotations: dict) -> tuple[str, int | None, dict]:
    """What the API server and kubelet make of a pod sdqos runs (kube/priority.py): the Priority
    admission plugin gives the priority of its class, refusing any other in spec.priority,
    and kubelet writes config.source from where it got the pod, the API server ("api"), so a
    manifest cannot make its pod static (critical, never evicted) by claiming "file"."""
    pclass, priority, why = (classes or NO_CLASSES).admit(pclass, priority if "priority" in spec else None)
    if why:
        doc.error("spec.priority" if why.startswith("the integer value") else "spec.priorityClassName", why)
    if CONFIG_SOURCE_ANNOTATION in annotations:
        annotations = {**annotations, CONFIG_SOURCE_ANNOTATION: "api"}
    if CONFIG_MIRROR_ANNOTATION in annotations:
        doc.error(f"metadata.annotations.{CONFIG_MIRROR_ANNOTATION}",
                  "kubelet sets this on the mirror of a static pod it runs from its own files; a pod with "
                  "it from the API server is such a mirror, which kubelet never runs (remove it)")
    return pclass, priority, annotations


def _container_list(doc: _Doc, spec: dict, key: str, *, init: bool, apply_defaults: bool, required: bool):
    raw = spec.get(key)
    path = f"spec.{key}"
    if raw is None:
        if required:
            doc.error(path, "Required value")
        return []
    if not isinstance(raw, list):
        doc.error(path, f"must be a list, not {_type_name(raw)}")
        return []
    if required and not raw and doc.check_values:
        doc.error(path, "Required value: a pod needs at least one container")
    return [parse_container(doc, c, f"{path}[{i}]", init=init, apply_defaults=apply_defaults) for i, c in enumerate(raw)]


MAX_LIST_ITEMS = 10_000  # a node runs at most a few hundred pods; a List of more is a mistake or an attack


def parse_pod_documents(docs: list, file: str, result: ParseResult, *, apply_defaults: bool = True,
                        classes: PriorityClasses | None = None) -> None:
    """Every Pod in a file's documents (``kind: List`` and ``kind: PodList`` unwrapped)."""
    for index, raw in enumerate(docs):
        source = Source(file, index)
        if isinstance(raw, dict) and raw.get("kind") in ("List", "PodList"):
            items = raw.get("items")
            if not isinstance(items, list) or len(items) > MAX_LIST_ITEMS:
                doc = _Doc(source, result)
                doc.error("items", "must be a list" if not isinstance(items, list)
                          else f"{len(items)} items; at most {MAX_LIST_ITEMS} in one List")
                result.unknown_identities += 1
                continue
            for i, item in enumerate(items):
                pod = parse_pod(item, source, result, prefix=f"items[{i}].", apply_defaults=apply_defaults,
                                classes=classes)
                if pod:
                    result.pods.append(pod)
            continue
        pod = parse_pod(raw, source, result, apply_defaults=apply_defaults, classes=classes)
        if pod:
            result.pods.append(pod)


class PodIdentity(NamedTuple):
    """What the duplicate check reads of a pod (a Pod has these attributes too): a pod whose plan
    came from the plan cache is checked without decoding it."""

    key: str
    uid: str
    uid_generated: bool
    source: Source | None


def duplicate_pods(pods: Sequence[Pod | PodIdentity]) -> tuple[list[InvalidInput], set[int], set[str]]:
    """Pods sharing a uid or namespace/name: (an error for each, their indices, their invalid keys)."""
    by_key: dict[str, list[int]] = {}
    by_uid: dict[str, list[int]] = {}
    for i, p in enumerate(pods):
        by_key.setdefault(p.key, []).append(i)
        by_uid.setdefault(p.uid, []).append(i)
    errors: list[InvalidInput] = []
    bad: set[int] = set()
    invalid: set[str] = set()
    for what, groups in (("namespace/name", by_key), ("uid", by_uid)):
        for value, idx in groups.items():
            if len(idx) < 2:
                continue
            if what == "uid" and all(pods[i].uid_generated for i in idx):
                continue  # derived from namespace/name: already reported as that duplicate
            places = ", ".join(str(pods[i].source) for i in idx)
            for i in idx:
                p = pods[i]
                field_name = "metadata.uid" if what == "uid" else "metadata.name"
                errors.append(
                    InvalidInput(f"Duplicate {what} {_quote(value)} (defined in {places})", where=str(p.source), field=field_name)
                )
                bad.add(i)
                invalid.add(f"pod:{p.key}")
                invalid.add(f"uid:{p.uid}")
    return errors, bad, invalid


def check_duplicates(result: ParseResult) -> None:
    """Two pods with the same uid or namespace/name (two VMs with one name) are all invalid: we
    cannot tell which one the operator means, so none is applied and no one's units are touched."""
    errors, bad, invalid = duplicate_pods(result.pods)
    result.errors.extend(errors)
    result.invalid_keys.update(invalid)
    if bad:
        result.pods = [p for i, p in enumerate(result.pods) if i not in bad]
    check_duplicate_vms(result)


def check_duplicate_vms(result: ParseResult) -> None:
    """Two VMs with one name, or naming one scope, libvirt domain or pid file, are all invalid (see
    check_duplicates): one scope holds one workload, so two definitions of it would each be ranked,
    tuned and stopped as the other (one ``eviction: Allowed`` would stop the VM declared ``Never``)."""
    bad: set[int] = set()
    for what, field_of, key_of in (
        ("VM name", lambda v: "metadata.name", lambda v: v.name),
        # the scope sync binds by name: spec.scope, else the machine-<name>.scope `run --vm` makes
        ("VM scope", lambda v: "spec.scope" if v.scope else "metadata.name",
         lambda v: v.scope or (None if v.libvirt_domain or v.pid_file else machine_scope(v.name))),
        ("libvirt domain", lambda v: "spec.libvirt.domain", lambda v: v.libvirt_domain),
        ("VM pid file", lambda v: "spec.pidFile", lambda v: v.pid_file),
        ("VM uid", lambda v: "metadata.uid", lambda v: v.uid or None),  # the CPU manager's key
    ):
        groups: dict[str, list[int]] = {}
        for i, vm in enumerate(result.vms):
            key = key_of(vm)
            if key is not None:
                groups.setdefault(key, []).append(i)
        for key, idx in groups.items():
            if len(idx) < 2 or all(i in bad for i in idx):  # already refused as a duplicate name
                continue
            places = ", ".join(str(result.vms[i].source) for i in idx)
            for i in idx:
                v = result.vms[i]
                result.errors.append(InvalidInput(f"Duplicate {what} {_quote(key)} (defined in {places})",
                                                  where=str(v.source), field=field_of(v)))
                result.invalid_keys.add(f"vm:{v.name}")
                bad.add(i)
    result.vms = [v for i, v in enumerate(result.vms) if i not in bad]


# --- VirtualMachine ------------------------------------------------------------------------------


def default_vm_overhead(limits: dict[str, Quantity], requests: dict[str, Quantity] | None = None
                        ) -> dict[str, Quantity]:
    """The overhead of a VM that declares none; its vCPUs are its CPU limit (else request), rounded up."""
    mem = limits.get(MEMORY)
    guest = mem.value() if mem is not None else 0
    cpu = limits.get(CPU) or (requests or {}).get(CPU)
    vcpus = min(MAX_VCPUS, -(-cpu.milli_value() // 1000)) if cpu is not None else 1
    overhead_mem = vm_memory_overhead(guest, vcpus)
    return {CPU: parse_quantity(f"{VM_DEFAULT_OVERHEAD_CPU_MILLI}m"), MEMORY: parse_quantity(str(overhead_mem))}


def vm_uid(meta: dict, name: str | None, doc: _Doc | None = None) -> str:
    """A VM's uid, the static CPU manager's key for it as a pod's is: ``metadata.uid`` (checked as
    a pod's), else derived from its name (stable_uid under VM_UID_NAMESPACE)."""
    raw = meta.get("uid")
    if raw is not None and doc is not None:
        uid = doc.string(raw, "metadata.uid")
        if uid is not None and not UID_RE.match(uid):
            doc.error("metadata.uid", f"{_quote(uid)} must be letters, digits and '-' (at most 128), like a UUID")
        elif uid:
            return uid
    return stable_uid(VM_UID_NAMESPACE, name or "")


def vm_cpu_placement(raw: dict, vm: VirtualMachine, result: ParseResult) -> VirtualMachine | None:
    """A VM parse_vm accepted, with what the static CPU manager needs of it: its uid and
    ``spec.cpu.dedicatedCpuPlacement`` (None, with the error in ``result``, when either is wrong)."""
    doc = _Doc(vm.source or Source("?"), result)
    uid = vm_uid(raw.get("metadata") or {}, vm.name, doc)  # (parse_vm checked both are mappings)
    dedicated = vm_dedicated_cpus(doc, raw.get("spec") or {}, dict(vm.requests), dict(vm.limits))
    if doc.failed:
        result.invalid_keys.add(f"vm:{vm.name}")
        return None
    return replace(vm, uid=uid, dedicated_cpu_placement=dedicated)


def vm_dedicated_cpus(doc: _Doc, spec: dict, reqs: dict[str, Quantity], lims: dict[str, Quantity]) -> bool:
    """``spec.cpu.dedicatedCpuPlacement`` (KubeVirt's ``domain.cpu.dedicatedCpuPlacement``) checked
    as KubeVirt's validateCpuPinning does (vmi-create-admitter.go): requests equal to limits for cpu
    and memory (a Guaranteed VM, so kubelet's static policy gives its virt-launcher exclusive CPUs)
    and a whole number of CPUs, at least one. ``reqs`` are already defaulted from ``lims``. One
    error, the first problem, naming the field."""
    cpu = doc.mapping(spec.get("cpu"), "spec.cpu")
    if cpu is None:
        return False
    doc.unknown(cpu, VM_CPU_FIELDS, "spec.cpu")
    value = cpu.get("dedicatedCpuPlacement", False)
    path = "spec.cpu.dedicatedCpuPlacement"
    if not isinstance(value, bool):
        doc.error(path, f"must be a boolean, not {_type_name(value)}")
        return False
    if not value or doc.failed:  # (a resource already refused: its own error says what)
        return value
    why = None
    for rname in (CPU, MEMORY):
        lim, req = lims.get(rname), reqs.get(rname)
        if lim is None:
            why = f"spec.resources.limits.{rname} is not set"
        elif req is not None and req != lim:
            why = f"spec.resources.requests.{rname} {req} is not spec.resources.limits.{rname} {lim}"
        if why:
            doc.error(path, f"needs a Guaranteed VM (requests equal to limits for cpu and memory): {why}")
            return False
    q = lims[CPU]
    if q.value() * 1000 != q.milli_value() or q.value() <= 0:  # kubelet's guaranteedCPUs test
        doc.error(path, f"needs a whole number of CPUs (at least 1): spec.resources.limits.cpu is {q}")
        return False
    return True


def parse_vm(raw, source: Source, result: ParseResult) -> VirtualMachine | None:
    doc = _Doc(source, result)
    m = _vm_document(doc, raw, result)
    if m is None:
        return None
    doc.unknown(m, VM_FIELDS, "")
    name = _vm_name(doc, m, result)
    spec = doc.mapping(m.get("spec"), "spec", required=True) or {}
    doc.unknown(spec, VM_SPEC_FIELDS, "spec")
    reqs, lims, overhead, defaulted = _vm_resources(doc, spec)
    domain, scope, pid_file = _vm_placement(doc, spec)
    vm_priority = spec.get("priority", 0)  # ranks the VM among pods under node pressure (kube/eviction.py)
    if isinstance(vm_priority, bool) or not isinstance(vm_priority, int):
        doc.error("spec.priority", f"must be an integer, not {_type_name(vm_priority)}")
        vm_priority = 0
    elif not -(2**31) <= vm_priority < 2**31:
        doc.error("spec.priority", f"{vm_priority} is out of the int32 range")
        vm_priority = 0
    eviction = doc.string(spec.get("eviction"), "spec.eviction") or VM_EVICTION_DEFAULT
    if eviction not in VM_EVICTION_POLICIES:
        doc.error("spec.eviction", f"{_quote(eviction)} must be one of {', '.join(VM_EVICTION_POLICIES)}")
    if doc.failed or not name:
        return None
    result.invalid_keys.discard(f"vm:{name}")
    return VirtualMachine(
        name=name,
        requests=reqs,
        limits=lims,
        overhead=overhead,
        overhead_defaulted=defaulted,
        libvirt_domain=domain,
        scope=scope,
        pid_file=pid_file,
        source=source,
        priority=vm_priority,
        eviction=eviction,
    )


def _vm_document(doc: _Doc, raw, result: ParseResult) -> dict | None:
    """The document as a mapping of kind VirtualMachine (its apiVersion checked), else None."""
    m = doc.mapping(raw, "", required=True)
    if m is None:
        result.unknown_identities += 1
        return None
    if m.get("kind") != "VirtualMachine":  # another kind's fields: one error, as for pods
        result.unknown_identities += 1
        doc.error("kind", f"must be \"VirtualMachine\", not {_quote(m.get('kind'))}")
        return None
    if m.get("apiVersion") != VM_API_VERSION:
        result.unknown_identities += 1
        doc.error("apiVersion", f"must be \"{VM_API_VERSION}\", not {_quote(m.get('apiVersion'))}")
    return m


def _vm_name(doc: _Doc, m: dict, result: ParseResult) -> str | None:
    """metadata.name (None: missing or invalid); recorded as invalid until the VM proves valid."""
    meta = doc.mapping(m.get("metadata"), "metadata", required=True) or {}
    name = doc.string(meta.get("name"), "metadata.name", required=True)
    if name is not None and not _check_name(doc, name, "metadata.name", subdomain=True):
        name = None
    if name:
        result.invalid_keys.add(f"vm:{name}")
    else:
        result.unknown_identities += 1
    return name


def _vm_resources(doc: _Doc, spec: dict) -> tuple[dict[str, Quantity], dict[str, Quantity], dict[str, Quantity], bool]:
    """(requests, limits, overhead, whether the overhead is the default): cpu and memory only, a
    memory limit (the guest's RAM) required, requests defaulted to limits."""
    res = doc.mapping(spec.get("resources"), "spec.resources", required=True) or {}
    doc.unknown(res, RESOURCES_FIELDS, "spec.resources")
    reqs = parse_resource_list(doc, res.get("requests"), "spec.resources.requests")
    lims = parse_resource_list(doc, res.get("limits"), "spec.resources.limits")
    for rname in list(reqs) + list(lims):
        if rname not in (CPU, MEMORY):
            doc.error(f"spec.resources.{rname}", "only cpu and memory are supported for VMs")
    if MEMORY not in lims and spec.get("resources") is not None:  # {} too: a VM has a RAM size
        doc.error("spec.resources.limits.memory", "Required value: the guest's RAM")
    _check_request_limit(doc, reqs, lims, "spec.resources")
    for rname, lim in lims.items():
        reqs.setdefault(rname, lim)
    overhead_raw = spec.get("overhead")
    if overhead_raw is None:
        return reqs, lims, default_vm_overhead(lims, reqs), True
    return reqs, lims, parse_resource_list(doc, overhead_raw, "spec.overhead"), False


def _vm_placement(doc: _Doc, spec: dict) -> tuple[str | None, str | None, str | None]:
    """Where the VM runs, at most one of: (spec.libvirt.domain, spec.scope, spec.pidFile)."""
    libvirt = doc.mapping(spec.get("libvirt"), "spec.libvirt")
    domain = None
    if libvirt is not None:
        domain = doc.string(libvirt.get("domain"), "spec.libvirt.domain", required=True)
        if domain is not None and (not LIBVIRT_DOMAIN.match(domain) or not domain.strip()
                                   or len(domain.encode()) > 250):
            doc.error("spec.libvirt.domain", f"{_quote(domain)} is not a libvirt domain name (libvirt refuses an "
                      "empty name, '/', control characters, and names too long for a file name)")
            domain = None
    scope = doc.string(spec.get("scope"), "spec.scope")
    if scope is not None and not (scope.endswith(".scope") and _unit_name_ok(scope)):
        doc.error("spec.scope", f"{_quote(scope)} is not a scope unit name")
        scope = None
    pid_file = doc.string(spec.get("pidFile"), "spec.pidFile")
    if pid_file is not None and not pid_file.startswith("/"):
        doc.error("spec.pidFile", f"{_quote(pid_file)} must be an absolute path")
    if sum(x is not None for x in (libvirt, spec.get("scope"), spec.get("pidFile"))) > 1:
        doc.error("spec", "give only one of libvirt.domain, scope, pidFile")
    return domain, scope, pid_file


def _unit_name_ok(name: str) -> bool:
    return valid_unit_name(name) and ".." not in name


def parse_vm_documents(docs: list, file: str, result: ParseResult) -> None:
    for index, raw in enumerate(docs):
        vm = parse_vm(raw, Source(file, index), result)
        vm = vm and vm_cpu_placement(raw, vm, result)
        if vm:
            result.vms.append(vm)


# --- PriorityClass -------------------------------------------------------------------------------

PRIORITY_CLASS_FIELDS = frozenset({"apiVersion", "kind", "metadata", "value", "globalDefault", "description",
                                   "preemptionPolicy"})


def parse_priority_class_documents(docs: list, file: str, result: ParseResult) -> PriorityClasses:
    """PriorityClass objects (``scheduling.k8s.io/v1``; ``kind: List`` unwrapped), checked as the
    API server checks them (sdqos.kube.priority); every problem an error in ``result`` naming file,
    document and field. ``preemptionPolicy`` is checked and has no effect (no scheduler here)."""
    values: dict[str, int] = {}
    default: str | None = None
    where: dict[str, str] = {}
    for index, raw in enumerate(docs):
        source = Source(file, index)
        items = [(raw, "")]
        if isinstance(raw, dict) and raw.get("kind") in ("List", "PriorityClassList"):
            listed = raw.get("items")
            if not isinstance(listed, list) or len(listed) > MAX_LIST_ITEMS:
                _Doc(source, result).error("items", "must be a list" if not isinstance(listed, list)
                                           else f"{len(listed)} items; at most {MAX_LIST_ITEMS} in one List")
                continue
            items = [(item, f"items[{i}].") for i, item in enumerate(listed)]
        for item, prefix in items:
            doc = _Doc(source, result, prefix)
            m = doc.mapping(item, "", required=True)
            if m is None:
                continue
            if m.get("kind") != P.KIND or m.get("apiVersion") != P.API_VERSION:
                field_name = "kind" if m.get("kind") != P.KIND else "apiVersion"
                doc.error(field_name, f'must be "{P.KIND if field_name == "kind" else P.API_VERSION}", '
                          f"not {_quote(m.get(field_name))}")
                continue
            doc.unknown(m, PRIORITY_CLASS_FIELDS, "")
            meta = doc.mapping(m.get("metadata"), "metadata", required=True) or {}
            doc.unknown(meta, METADATA_FIELDS, "metadata")
            name = doc.string(meta.get("name"), "metadata.name", required=True)
            if name is not None and not _check_name(doc, name, "metadata.name", subdomain=True):
                name = None
            reserved = name is not None and name.startswith(P.SYSTEM_PREFIX)
            if reserved:
                doc.error("metadata.name", f"priority class names with '{P.SYSTEM_PREFIX}' prefix are reserved for "
                          f"system use only ({', '.join(P.SYSTEM_CLASSES)} are built in)")
            value = m.get("value")
            if value is None:
                doc.error("value", "Required value")
            elif isinstance(value, bool) or not isinstance(value, int):
                doc.error("value", f"must be an integer, not {_type_name(value)}")
            elif not -(2**31) <= value < 2**31:
                doc.error("value", f"{value} is out of the int32 range")
            elif value > P.HIGHEST_USER_DEFINABLE_PRIORITY and not reserved:  # ValidatePriorityClass: one or the other
                doc.error("value", f"maximum allowed value of a user defined priority is "
                          f"{P.HIGHEST_USER_DEFINABLE_PRIORITY}")
            global_default = m.get("globalDefault", False)
            if not isinstance(global_default, bool):
                doc.error("globalDefault", f"must be a boolean, not {_type_name(global_default)}")
            doc.string(m.get("description"), "description")
            policy = doc.string(m.get("preemptionPolicy"), "preemptionPolicy")
            if policy is not None and policy not in P.PREEMPTION_POLICIES:
                doc.error("preemptionPolicy", f"Unsupported value: {_quote(policy)}: supported values: "
                          + ", ".join(f'"{x}"' for x in P.PREEMPTION_POLICIES))
            if name is not None and name in where:
                doc.error("metadata.name", f"Duplicate PriorityClass {_quote(name)} (also {where[name]})")
            if doc.failed or name is None:
                continue
            where[name] = f"{source}{'.' + prefix.rstrip('.') if prefix else ''}"
            if global_default is True:
                if default is not None:
                    doc.error("globalDefault", f"PriorityClass {default} is already marked as default. "
                              "Only one default can exist")
                    continue
                default = name
            assert isinstance(value, int)  # checked above: an int32 (doc.failed otherwise)
            values[name] = value
    return P.PriorityClasses(values, default)
