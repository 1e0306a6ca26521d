"""node.yaml: a KubeletConfiguration (kubelet's own field names) → :class:`NodeConfig`.

A real kubelet config works as-is: sdqos reads the fields it acts on and validates them the way
kubelet does; every other kubelet field has its row in sdqos.kube.dispositions (refused with a
reason, or said not to apply when set to anything but kubelet's default). A key that is neither a
kubelet field nor sdqos's own ``capacity`` is probably a typo and gets a warning naming it.
"""

from __future__ import annotations

from typing import Mapping

from sdqos import humanize
from sdqos.errors import CPUPolicyOptionError, CPUSetError, InvalidInput, QuantityError, TopologyPolicyOptionError
from sdqos.kube import cpuset
from sdqos.kube import dispositions as disp
from sdqos.kube.duration import parse_go_duration
from sdqos.kube.kubelet_fields import KUBELET_CONFIG_FIELDS, KUBELET_FEATURE_GATE_DEFAULTS_1_36
from sdqos.kube.manifests import closest
from sdqos.kube.model import CPU, MEMORY, PID, SWAP, NodeConfig
from sdqos.kube.naming import UNIT_NAME_MAX, cgroup_root_components, pod_slice, slice_name, valid_unit_name
from sdqos.kube.quantity import Quantity, parse_quantity
from sdqos.kube.thresholds import DEFAULT_EVICTION_HARD, SIGNALS, ThresholdValue, parse_threshold_statement

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"
SDQOS_FIELDS = frozenset({"capacity"})

# Kubernetes 1.36 defaults for the gates sdqos looks at (overridable with featureGates); each
# default's source is in kubelet_fields.
GATE_DEFAULTS: dict[str, bool] = {g: KUBELET_FEATURE_GATE_DEFAULTS_1_36[g] for g in (
    "PodLevelResources", "MemoryQoS", "QOSReserved", "CustomCPUCFSQuotaPeriod", "DisableCPUQuotaWithExclusiveCPUs")}

ENFORCEMENT_KEYS = frozenset(
    {"pods", "system-reserved", "kube-reserved", "system-reserved-compressible", "kube-reserved-compressible", "none"}
)
RESERVABLE = frozenset({CPU, MEMORY, PID, "ephemeral-storage"})
MIN_PERIOD_US = 1_000
MAX_PERIOD_US = 1_000_000


def _reserved_unit(path) -> str | None:
    """kubelet's systemReservedCgroup/kubeReservedCgroup ("/system.slice") as a unit name."""
    if not isinstance(path, str):
        return None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.endswith((".slice", ".service", ".scope")) and valid_unit_name(name):
        return name
    return None


def _reserved_cgroup(raw: Mapping, key: str, root: list[str], errors: list) -> str:
    """A reserved cgroup's unit, refused when it lies in sdqos's own tree: sdqos would set the
    reservation on a unit it also sets the pods' values on, and the two would flip every sync."""
    unit = _reserved_unit(raw.get(key)) or ""
    if unit:
        own = slice_name([*root, "kubepods"])
        stem = own[: -len(".slice")]
        if unit == own or unit.startswith(stem + "-"):
            errors.append(_err(key, f"{raw.get(key)} is inside the tree sdqos manages ({own}); point it at the "
                                    "slice the reserved daemons run in (e.g. /system.slice)"))
            return ""
    return unit


def _err(path: str, message: str) -> InvalidInput:
    return InvalidInput(message, where="node.yaml", field=path)


def _resource_map(raw, path: str, errors: list, *, allow_pids_alias: bool = False) -> dict[str, Quantity]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errors.append(_err(path, "must be a mapping of resource name to quantity"))
        return {}
    out = {}
    for name, value in raw.items():
        key = PID if allow_pids_alias and name == "pids" else name
        if key not in RESERVABLE:
            errors.append(_err(f"{path}.{name}", f'"{name}" is not one of cpu, memory, pid, ephemeral-storage'))
            continue
        try:
            q = parse_quantity(value)
        except QuantityError as exc:
            errors.append(_err(f"{path}.{name}", str(exc)))
            continue
        if q.sign() < 0:
            errors.append(_err(f"{path}.{name}", f'"{value}" must not be negative'))
            continue
        out[key] = q
    return out


def _bool(raw: Mapping, key: str, default: bool, errors: list) -> bool:
    if key not in raw or raw[key] is None:
        return default
    if not isinstance(raw[key], bool):
        errors.append(_err(key, f"must be true or false, not {raw[key]!r}"))
        return default
    return raw[key]


def parse_percentage(value) -> int:
    """kubelet's parsePercentage for qosReserved: "NN%" with 0 ≤ NN ≤ 100."""
    if not isinstance(value, str) or not value.endswith("%"):
        raise ValueError(f'percentage expected, got "{value}"')
    try:
        pct = int(value[:-1])
    except ValueError:
        raise ValueError(f'invalid number in percentage "{value}"') from None
    if not 0 <= pct <= 100:
        raise ValueError(f'"{value}": percentage must be between 0 and 100')
    return pct


EVICTION_SIGNALS = SIGNALS  # pkg/kubelet/eviction/api/types.go (sdqos.kube.thresholds)


def _eviction_hard(raw, errors: list) -> dict[str, ThresholdValue | None]:
    """evictionHard, every threshold checked as kubelet checks it at start-up. kubelet's default
    (memory.available 100Mi) applies only when the field is absent or null: a given evictionHard
    replaces it (KubeletConfiguration defaulting; mergeDefaultEvictionSettings is not read)."""
    if raw is None:
        raw = DEFAULT_EVICTION_HARD
    if not isinstance(raw, dict):
        errors.append(_err("evictionHard", "must be a mapping"))
        return {}
    out = {}
    for signal, value in raw.items():
        try:
            out[str(signal)] = parse_threshold_statement(str(signal), value)
        except ValueError as exc:
            errors.append(_err(f"evictionHard.{signal}", str(exc)))
    return out


def _eviction_memory(eviction: Mapping[str, ThresholdValue | None], capacity_memory: int) -> int:
    """Bytes the hard eviction threshold ``memory.available`` reserves (GetNodeAllocatableReservation:
    GetThresholdQuantity of capacity)."""
    t = eviction.get("memory.available")
    return 0 if t is None else t.amount(capacity_memory)


def parse_node_config(raw, detected: Mapping[str, Quantity], *, page_size: int = 4096,
                      online_cpus: frozenset[int] | None = None, numa_nodes: int = 1
                      ) -> tuple[NodeConfig, list[InvalidInput]]:
    """Parse node.yaml's document (``None`` when absent: all defaults). ``detected`` is the
    host's capacity (cpu, memory, pid); ``online_cpus`` the CPUs online (None: not known, not
    checked), ``numa_nodes`` how many NUMA nodes the host has. Returns the config and the errors;
    with errors the config must not be used. Each field's check is a function below, called in
    the order of the errors it reports."""
    errors: list[InvalidInput] = []
    warnings: list[str] = []
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return NodeConfig(capacity=dict(detected), capacity_source={}), [_err("", "must be a mapping (a KubeletConfiguration)")]
    _header(raw, errors, warnings)
    capacity, source, swap_q = _capacity(raw, detected, errors)
    kube = _resource_map(raw.get("kubeReserved"), "kubeReserved", errors)
    system = _resource_map(raw.get("systemReserved"), "systemReserved", errors)
    reserved_cpus = _reserved_system_cpus(raw, online_cpus, errors)
    if reserved_cpus:  # cmd/kubelet/app/server.go: the set's size overwrites the cpu of both reservations
        kube.pop(CPU, None)
        system[CPU] = parse_quantity(str(len(reserved_cpus)))
    warnings += disp.not_applied(raw)
    _refused_fields(raw, errors)
    warnings += _managers(raw, kube, system, capacity, numa_nodes, errors)
    max_pods = _count(raw, "maxPods", 110, errors)
    pods_per_core = _count(raw, "podsPerCore", 0, errors)
    enforce = _enforcement(raw, errors)
    root, cgroup_root_text = _cgroup_root(raw, errors)
    gates = _feature_gates(raw, errors)
    cfs_quota = _bool(raw, "cpuCFSQuota", True, errors)
    period_us = _cfs_quota_period(raw, gates, errors)
    qos_reserved = _qos_reserved(raw, gates, errors, warnings)
    pids_limit = _pod_pids_limit(raw, errors)
    factor, policy = _memory_qos(raw, gates, errors)
    eviction_raw = raw.get("evictionHard")
    eviction = _eviction_hard(eviction_raw, errors)
    eviction_fields = _eviction_fields(raw, enforce, errors)
    single_oom = _single_process_oom_kill(raw, errors)
    swap_behavior = _swap_behavior(raw.get("memorySwap"), errors)

    for r in (CPU, MEMORY, PID):
        if capacity.get(r) is None:
            errors.append(_err(f"capacity.{r}", "could not be detected on this host; set it in node.yaml"))
    if not errors:
        _check_reservation(capacity, kube, system, eviction, errors)

    cfg = NodeConfig(
        capacity={r: q for r, q in capacity.items() if q is not None},  # a missing one is an error above
        capacity_source=source,
        kube_reserved=kube,
        system_reserved=system,
        enforce_node_allocatable=frozenset(enforce),
        cgroup_root=tuple(root),
        cgroup_root_text=cgroup_root_text,
        cpu_cfs_quota=cfs_quota,
        cpu_cfs_quota_period_us=period_us,
        qos_reserved=qos_reserved,
        pod_pids_limit=pids_limit,
        memory_throttling_factor=factor,
        memory_reservation_policy=policy,
        feature_gates=gates,
        eviction_hard={str(k): str(v) for k, v in (eviction_raw if isinstance(eviction_raw, dict)
                                                   else DEFAULT_EVICTION_HARD).items() if k in eviction},
        **eviction_fields,
        system_reserved_cgroup=_reserved_cgroup(raw, "systemReservedCgroup", root, errors),
        kube_reserved_cgroup=_reserved_cgroup(raw, "kubeReservedCgroup", root, errors),
        page_size=page_size,
        single_process_oom_kill=single_oom,
        swap_behavior=swap_behavior,
        swap_capacity=swap_q.value() if swap_q is not None else 0,
        reserved_system_cpus=str(cpuset.CPUSet(reserved_cpus)),
        max_pods=max_pods,
        pods_per_core=pods_per_core,
        **_manager_fields(raw),
        warnings=tuple(warnings),
    )
    return cfg, errors


def _manager_fields(raw: Mapping) -> dict:
    """cpuManagerPolicy (+ options), topologyManagerPolicy, Scope and PolicyOptions as validated by
    `_managers`."""
    policy = raw.get("topologyManagerPolicy") or "none"
    options = raw.get("topologyManagerPolicyOptions")
    cpu_options = raw.get("cpuManagerPolicyOptions")
    return {"cpu_manager_policy": "static" if raw.get("cpuManagerPolicy") == "static" else "none",
            "cpu_manager_policy_options": {str(k): str(v) for k, v in cpu_options.items()}
            if isinstance(cpu_options, Mapping) else {},
            "topology_manager_policy": policy if policy in TOPOLOGY_POLICIES else "none",
            "topology_manager_scope": raw.get("topologyManagerScope") or "container",
            "topology_manager_policy_options": {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                                                for k, v in options.items()} if isinstance(options, Mapping) else {}}


def _header(raw: Mapping, errors: list, warnings: list[str]) -> None:
    """apiVersion and kind; a key that is no KubeletConfiguration field (nor sdqos's) is a warning."""
    if raw.get("apiVersion") not in (None, API_VERSION):
        errors.append(_err("apiVersion", f'must be "{API_VERSION}", not "{raw.get("apiVersion")}"'))
    if raw.get("kind") not in (None, KIND):
        errors.append(_err("kind", f'must be "{KIND}", not "{raw.get("kind")}"'))
    for key in raw:
        if key not in KUBELET_CONFIG_FIELDS and key not in SDQOS_FIELDS:
            close = closest(key, KUBELET_CONFIG_FIELDS | SDQOS_FIELDS) if isinstance(key, str) else None
            hint = f'; did you mean "{close}"?' if close else ""
            warnings.append(f'node.yaml: unknown field "{key}" (not a KubeletConfiguration field{hint}): ignored')


def _capacity(raw: Mapping, detected: Mapping[str, Quantity], errors: list
              ) -> tuple[dict[str, Quantity | None], dict[str, str], Quantity | None]:
    """sdqos's ``capacity`` over the detected one: (cpu, memory, pid capacity; where each came
    from; swap)."""
    cap_raw = raw.get("capacity")
    swap_raw = cap_raw.get(SWAP) if isinstance(cap_raw, dict) else None
    if isinstance(cap_raw, dict) and SWAP in cap_raw:
        cap_raw = {k: v for k, v in cap_raw.items() if k != SWAP}
    override = _resource_map(cap_raw, "capacity", errors, allow_pids_alias=True)
    for name in override:
        if name not in (CPU, MEMORY, PID):
            errors.append(_err(f"capacity.{name}", "only cpu, memory, pids and swap can be set"))
    swap_q = detected.get(SWAP)
    if swap_raw is not None:
        try:
            swap_q = parse_quantity(swap_raw)
            if swap_q.sign() < 0:
                raise QuantityError(f'"{swap_raw}" must not be negative')
        except QuantityError as exc:
            errors.append(_err("capacity.swap", str(exc)))
            swap_q = None
    capacity = {r: override.get(r, detected.get(r)) for r in (CPU, MEMORY, PID)}
    source = {r: ("node.yaml" if r in override else "detected") for r in (CPU, MEMORY, PID)}
    return capacity, source, swap_q


def _enforcement(raw: Mapping, errors: list) -> set[str]:
    """enforceNodeAllocatable, checked as kubelet's validation.go checks it ("none" dropped)."""
    enforce_raw = raw.get("enforceNodeAllocatable", ["pods"])
    enforce: set[str] = set()
    if not isinstance(enforce_raw, list) or not all(isinstance(x, str) for x in enforce_raw):
        errors.append(_err("enforceNodeAllocatable", "must be a list of strings"))
        return enforce
    for item in enforce_raw:
        if item not in ENFORCEMENT_KEYS:
            errors.append(_err("enforceNodeAllocatable", f'invalid option "{item}" (one of {", ".join(sorted(ENFORCEMENT_KEYS))})'))
        elif item in enforce:
            errors.append(_err("enforceNodeAllocatable", f'duplicated enforcement "{item}"'))
        enforce.add(item)
    if "none" in enforce and len(enforce) > 1:
        errors.append(_err("enforceNodeAllocatable", 'may not contain additional enforcements when "none" is specified'))
    enforce.discard("none")
    for who, cgroup_key in (("system", "systemReservedCgroup"), ("kube", "kubeReservedCgroup")):
        plain, comp = f"{who}-reserved", f"{who}-reserved-compressible"
        if plain in enforce and comp in enforce:
            errors.append(_err("enforceNodeAllocatable", f'both "{plain}" and "{comp}" cannot be specified together'))
        if (plain in enforce or comp in enforce) and not raw.get(cgroup_key):
            errors.append(_err(cgroup_key, f'must be specified when "{plain}" or "{comp}" is in enforceNodeAllocatable'))
        elif raw.get(cgroup_key) and not _reserved_unit(raw[cgroup_key]):
            errors.append(_err(cgroup_key, f'"{raw[cgroup_key]}" is not a systemd unit (e.g. /system.slice)'))
    return enforce


def _cgroup_root(raw: Mapping, errors: list) -> tuple[list[str], str]:
    """cgroupsPerQOS (only true) and cgroupRoot: (its components, its text)."""
    if not _bool(raw, "cgroupsPerQOS", True, errors):
        errors.append(_err("cgroupsPerQOS", "sdqos builds the QoS cgroup hierarchy; cgroupsPerQOS: false is not supported"))
    cgroup_root_text = raw.get("cgroupRoot") or "/"
    root: list[str] = []
    if not isinstance(cgroup_root_text, str):
        errors.append(_err("cgroupRoot", "must be a string"))
        return root, "/"
    try:
        root = cgroup_root_components(cgroup_root_text)
    except ValueError as exc:
        errors.append(_err("cgroupRoot", str(exc)))
    else:  # a pod slice of a UUID-sized uid in the deepest tier must still be a unit name
        longest = pod_slice(root, "besteffort", "0" * 36)
        if not valid_unit_name(longest):
            errors.append(_err("cgroupRoot", f"makes pod slice names {len(longest)} characters long; "
                                             f"systemd allows {UNIT_NAME_MAX}"))
    return root, cgroup_root_text


def _feature_gates(raw: Mapping, errors: list) -> dict[str, bool]:
    """The gates sdqos looks at, kubelet's defaults overridden by featureGates."""
    gates = dict(GATE_DEFAULTS)
    fg = raw.get("featureGates") or {}
    if not isinstance(fg, dict):
        errors.append(_err("featureGates", "must be a mapping of gate name to true/false"))
        return gates
    for name, val in fg.items():
        if not isinstance(val, bool):
            errors.append(_err(f"featureGates.{name}", f"must be true or false, not {val!r}"))
        else:
            gates[str(name)] = val
    return gates


def _cfs_quota_period(raw: Mapping, gates: Mapping[str, bool], errors: list) -> int:
    """cpuCFSQuotaPeriod in µs (1ms–1s; other than 100ms only with CustomCPUCFSQuotaPeriod)."""
    if raw.get("cpuCFSQuotaPeriod") is None:
        return 100_000
    try:
        ns = parse_go_duration(raw["cpuCFSQuotaPeriod"])
    except ValueError as exc:
        errors.append(_err("cpuCFSQuotaPeriod", str(exc)))
        return 100_000
    us = ns // 1000
    if not MIN_PERIOD_US <= us <= MAX_PERIOD_US:
        errors.append(_err("cpuCFSQuotaPeriod", f'"{raw["cpuCFSQuotaPeriod"]}" must be between 1ms and 1s, inclusive'))
    elif not gates.get("CustomCPUCFSQuotaPeriod", True) and us != 100_000:
        errors.append(_err("cpuCFSQuotaPeriod", f'"{raw["cpuCFSQuotaPeriod"]}" requires feature gate CustomCPUCFSQuotaPeriod'))
    else:
        return us
    return 100_000


def _qos_reserved(raw: Mapping, gates: Mapping[str, bool], errors: list, warnings: list[str]) -> dict[str, int]:
    """qosReserved: memory only, a percentage; said to be ignored without the QOSReserved gate."""
    qos_reserved: dict[str, int] = {}
    qr = raw.get("qosReserved")
    if qr is None:
        return qos_reserved
    if not isinstance(qr, dict):
        errors.append(_err("qosReserved", 'must be a mapping like {memory: "50%"}'))
        return qos_reserved
    for name, val in qr.items():
        if name != MEMORY:
            errors.append(_err(f"qosReserved.{name}", f'cannot reserve "{name}" resource (only memory)'))
            continue
        try:
            qos_reserved[MEMORY] = parse_percentage(val)
        except ValueError as exc:
            errors.append(_err(f"qosReserved.{name}", str(exc)))
    if qos_reserved and not gates.get("QOSReserved"):
        warnings.append("qosReserved is ignored: kubelet applies it only with featureGates.QOSReserved: true")
    return qos_reserved


def _pod_pids_limit(raw: Mapping, errors: list) -> int:
    """podPidsLimit: an int64, -1 (none) when unset or invalid."""
    pids_limit = raw.get("podPidsLimit", -1)
    if pids_limit is None:
        pids_limit = -1
    if isinstance(pids_limit, bool) or not isinstance(pids_limit, int):
        errors.append(_err("podPidsLimit", f"must be an integer, not {pids_limit!r}"))
        pids_limit = -1
    elif not -(2**63) <= pids_limit < 2**63:  # an int64 in KubeletConfiguration: decoding fails
        errors.append(_err("podPidsLimit", f"{pids_limit} does not fit a 64-bit integer"))
        pids_limit = -1
    return pids_limit


def _memory_qos(raw: Mapping, gates: Mapping[str, bool], errors: list) -> tuple[float | None, str]:
    """memoryThrottlingFactor and memoryReservationPolicy (MemoryQoS)."""
    factor = raw.get("memoryThrottlingFactor", 0.9)
    if factor is None and gates.get("MemoryQoS"):
        errors.append(_err("memoryThrottlingFactor", "is required when the MemoryQoS feature gate is enabled"))
    elif factor is not None:
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            errors.append(_err("memoryThrottlingFactor", f"{factor!r} must be greater than 0 and less than or equal to 1.0"))
            factor = 0.9
        factor = float(factor)
    policy = raw.get("memoryReservationPolicy", "None")
    if policy not in ("None", "TieredReservation"):
        errors.append(_err("memoryReservationPolicy", f'option {policy!r} is not valid: use "None" or "TieredReservation"'))
        policy = "None"
    elif policy == "TieredReservation" and not gates.get("MemoryQoS"):
        errors.append(_err("memoryReservationPolicy", '"TieredReservation" requires the MemoryQoS feature gate'))
    return factor, policy


def _single_process_oom_kill(raw: Mapping, errors: list) -> bool | None:
    single_oom = raw.get("singleProcessOOMKill")
    if single_oom is not None and not isinstance(single_oom, bool):
        errors.append(_err("singleProcessOOMKill", f"must be true or false, not {single_oom!r}"))
        single_oom = None
    return single_oom


SWAP_BEHAVIORS = ("NoSwap", "LimitedSwap")


def _reserved_system_cpus(raw: Mapping, online: frozenset[int] | None, errors: list) -> frozenset[int]:
    """reservedSystemCPUs as kubelet validates it (validation.go) and reads it at start-up
    (server.go getReservedCPUs: cpuset.Parse, a subset of the online CPUs)."""
    text = raw.get("reservedSystemCPUs")
    if text is None or text == "":
        return frozenset()
    if not isinstance(text, str):
        errors.append(_err("reservedSystemCPUs", f'must be a CPU list like "0-1,4", not {text!r}'))
        return frozenset()
    if raw.get("systemReservedCgroup") or raw.get("kubeReservedCgroup"):
        errors.append(_err("reservedSystemCPUs", "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup "
                                                 "(--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)"))
    try:
        cpus = cpuset.parse(text)
    except CPUSetError as exc:
        errors.append(_err("reservedSystemCPUs", f"unable to parse reservedSystemCPUs (--reserved-cpus) {text}, error: {exc}"))
        return frozenset()
    if online is not None and not cpus <= online:
        errors.append(_err("reservedSystemCPUs", f"reserved-cpus: {text} is not a subset of online-cpus: "
                                                 f"{str(cpuset.CPUSet(online))}"))
        return frozenset()
    return cpus


def _count(raw: Mapping, key: str, default: int, errors: list) -> int:
    """maxPods, podsPerCore: an int32, not negative (validation.go)."""
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        errors.append(_err(key, f"{value!r} must not be a negative number" if isinstance(value, int)
                                and not isinstance(value, bool) and value < 0 else f"must be a whole number, not {value!r}"))
        return default
    return value


def _refused_fields(raw: Mapping, errors: list) -> None:
    """Fields sdqos refuses (their row in sdqos.kube.dispositions), and the refused values of the
    fields it honours in part."""
    for key, row in disp.KUBELET_FIELDS.items():
        if row.kind == disp.REFUSED and key in raw and key != "cpuManagerPolicyOptions" and not disp.is_default(key, raw[key]):
            errors.append(_err(key, f"{raw[key]!r}: {row.note}"))
    driver = raw.get("cgroupDriver")
    if driver not in (None, "", "systemd"):
        errors.append(_err("cgroupDriver", f"{driver!r}: sdqos manages cgroups through systemd (the systemd driver); "
                                           "cgroupfs is not supported"))


CPU_POLICIES = ("none", "static")
MEMORY_POLICIES = ("None", "Static")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")


def _managers(raw: Mapping, kube: Mapping[str, Quantity], system: Mapping[str, Quantity],
              capacity: Mapping[str, Quantity | None],
              numa_nodes: int, errors: list) -> list[str]:
    """cpuManagerPolicy (+ options), memoryManagerPolicy with reservedMemory, topologyManagerPolicy
    (+ scope, options), seccompDefault: validated as kubelet validates them; what sdqos has not
    built refused; what one NUMA node meets trivially accepted and said. Returns the warnings."""
    warnings: list[str] = []
    cpu_policy = raw.get("cpuManagerPolicy") or "none"
    options = raw.get("cpuManagerPolicyOptions")
    if cpu_policy not in CPU_POLICIES:
        errors.append(_err("cpuManagerPolicy", f'unknown policy: "{cpu_policy}" (one of none, static)'))
    elif cpu_policy == "static":
        from sdqos.kube import cpumanager  # (only when set: policy none loads no CPU manager)

        try:  # cpu_manager.go NewManager: zero reserved CPU refused (reservedSystemCPUs already replaced the cpu of both)
            cpumanager.num_reserved_cpus(_milli(kube.get(CPU)), _milli(system.get(CPU)))
        except CPUPolicyOptionError as exc:
            errors.append(_err("cpuManagerPolicy", f"{exc.message} (or reservedSystemCPUs)"))
        if options is not None and not isinstance(options, Mapping):
            errors.append(_err("cpuManagerPolicyOptions", f"must be a map of option name to \"true\"/\"false\", not {options!r}"))
        else:
            try:  # policy_options.go NewStaticPolicyOptions; options sdqos does not implement refused by name
                cpumanager.parse_options(options, "node.yaml")
            except CPUPolicyOptionError as exc:
                errors.append(exc)
    elif options:  # policy_none.go NewNonePolicy
        errors.append(_err("cpuManagerPolicyOptions", f"None policy: received unsupported options={options!r} (options are "
                                                      "only for cpuManagerPolicy static)"))

    mem_policy = raw.get("memoryManagerPolicy") or "None"
    reserved_memory = raw.get("reservedMemory")
    if mem_policy not in MEMORY_POLICIES:
        errors.append(_err("memoryManagerPolicy", f'unknown policy: "{mem_policy}" (one of None, Static)'))
    total = _reserved_memory(reserved_memory, numa_nodes, errors)
    if mem_policy == "Static":
        if numa_nodes > 1:
            errors.append(_err("memoryManagerPolicy", f"Static: not built for a host with {numa_nodes} NUMA nodes: it "
                                                      "places each Guaranteed pod's memory on NUMA nodes (reservedMemory "
                                                      "per NUMA node, and systemd's AllowedMemoryNodes= on the pod's "
                                                      "units), which sdqos does not do; use None"))
        elif total is not None:
            node_res = _memory_reservation(raw, kube, system, capacity)
            if total != node_res:  # memory_manager.go validateReservedMemory
                errors.append(_err("reservedMemory", f'the total amount "{total}" of type "memory" is not equal to the value '
                                                     f'"{node_res}" determined by Node Allocatable feature (kubeReserved + '
                                                     "systemReserved + evictionHard memory)"))
            elif total == 0:  # policy_static.go NewPolicyStatic
                errors.append(_err("reservedMemory", "[memorymanager] you should specify the system reserved memory"))
            else:
                warnings.append("memoryManagerPolicy Static: this host has one NUMA node, so every pod's memory is on "
                                "it and the policy is met without doing anything")
    elif total:
        warnings.append("node.yaml: reservedMemory is not applied: kubelet uses it only with memoryManagerPolicy Static")

    warnings += _topology_manager(raw, cpu_policy, numa_nodes, errors)
    if raw.get("seccompDefault") is False:
        warnings.append("node.yaml: seccompDefault: false is not followed: containers get podman's default seccomp "
                        "profile (RuntimeDefault), never Unconfined")
    return warnings


def _topology_manager(raw: Mapping, cpu_policy: str, numa_nodes: int, errors: list) -> list[str]:
    """topologyManagerPolicy, Scope and PolicyOptions validated as kubelet's NewManager does (the
    options, max-allowable-numa-nodes against this host's NUMA nodes). Returns the warnings."""
    warnings: list[str] = []
    topo = raw.get("topologyManagerPolicy") or "none"
    scope = raw.get("topologyManagerScope") or "container"
    topo_options = raw.get("topologyManagerPolicyOptions")
    if topo not in TOPOLOGY_POLICIES:
        errors.append(_err("topologyManagerPolicy", f'topologyManagerPolicy (--topology-manager-policy) "{topo}" must be one '
                                                    f"of: {', '.join(TOPOLOGY_POLICIES)}"))
    if scope not in TOPOLOGY_SCOPES:
        errors.append(_err("topologyManagerScope", f'topologyManagerScope (--topology-manager-scope) "{scope}" must be one '
                                                   'of: "container", or "pod"'))
    if topo_options is not None and not isinstance(topo_options, dict):
        errors.append(_err("topologyManagerPolicyOptions", "must be a mapping of option name to value"))
    if topo in TOPOLOGY_POLICIES and topo != "none":
        from sdqos.kube import topologymanager  # (only when set, as the CPU manager)

        if isinstance(topo_options, dict):
            try:  # topology_manager.go NewManager: the options, then the NUMA nodes against max-allowable-numa-nodes
                topologymanager.new_manager(topo, scope if scope in TOPOLOGY_SCOPES else "container", topo_options,
                                            topologymanager.NUMAInfo(tuple(range(numa_nodes))), "node.yaml",
                                            distances=False)  # read with the topology (reconcile/cpus.py)
            except TopologyPolicyOptionError as exc:
                errors.append(exc)
        if numa_nodes > 1:
            warnings.append(f"topologyManagerPolicy {topo}: only exclusive CPUs are aligned to NUMA nodes (the static "
                            "CPU manager is sdqos's only hint provider: no devices, memoryManagerPolicy None)"
                            + ("" if cpu_policy == "static" else "; with cpuManagerPolicy none no pod has a hint, so "
                               "every pod is admitted unaligned"))
        else:
            warnings.append(f"topologyManagerPolicy {topo}: this host has one NUMA node, so every pod's resources are "
                            "aligned on it and the policy is met without doing anything")
    elif topo_options:
        warnings.append("node.yaml: topologyManagerPolicyOptions is not applied: topologyManagerPolicy is none")
    return warnings


def _milli(q: Quantity | None) -> int:
    return q.milli_value() if q is not None else 0


def _reserved_memory(value, numa_nodes: int, errors: list) -> int | None:
    """reservedMemory as kubelet validates it (validation_reserved_memory.go, memory_manager.go):
    a list of {numaNode, limits}; each NUMA node once and on this host; limits of memory or
    hugepages-<size>. Returns the memory total (None: invalid)."""
    if value is None:
        return 0
    if not isinstance(value, list):
        errors.append(_err("reservedMemory", "must be a list of {numaNode, limits}"))
        return None
    total, seen, ok = 0, set(), True
    for i, item in enumerate(value):
        path = f"reservedMemory[{i}]"
        if not isinstance(item, dict):
            errors.append(_err(path, "must be {numaNode, limits}"))
            ok = False
            continue
        node = item.get("numaNode")
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            errors.append(_err(f"{path}.numaNode", f"must be a NUMA node number, not {node!r}"))
            ok = False
            continue
        if node in seen:
            errors.append(_err(f"{path}.numaNode", f"the reservedMemory has duplicated value for NUMA node {node}"))
            ok = False
        seen.add(node)
        if node >= numa_nodes:
            errors.append(_err(f"{path}.numaNode", f"the reserved memory configuration references a NUMA node {node} that "
                                                   "does not exist on this machine"))
            ok = False
        limits = item.get("limits")
        if not isinstance(limits, dict) or not limits:
            errors.append(_err(f"{path}.limits", "the limits of the reserved memory must not be empty"))
            ok = False
            continue
        for name, q in limits.items():
            if name != MEMORY and not str(name).startswith("hugepages-"):
                errors.append(_err(f"{path}.limits.{name}", f'the limit type "{name}" for NUMA node {node} is not supported, '
                                                            "only [memory hugepages-<HugePageSize>] is accepted"))
                ok = False
                continue
            try:
                qq = parse_quantity(q)
            except QuantityError as exc:
                errors.append(_err(f"{path}.limits.{name}", str(exc)))
                ok = False
                continue
            if name == MEMORY:
                total += qq.value()
    return total if ok else None


def _memory_reservation(raw: Mapping, kube, system, capacity) -> int:
    """kubeReserved + systemReserved + evictionHard memory.available, in bytes (the node
    allocatable reservation the memory manager compares reservedMemory with)."""
    total = sum(q.value() for q in (kube.get(MEMORY), system.get(MEMORY)) if q is not None)
    cap = capacity.get(MEMORY)
    errs: list = []
    eviction = _eviction_hard(raw.get("evictionHard"), errs)
    return total + (_eviction_memory(eviction, cap.value()) if cap is not None and not errs else 0)


_EVICTION_FIELDS = ("evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim", "evictionMaxPodGracePeriod",
                    "evictionPressureTransitionPeriod")


def _none_given(raw: Mapping) -> bool:
    return all(raw.get(k) is None for k in _EVICTION_FIELDS)


def _eviction_fields(raw: Mapping, enforce: set[str], errors: list) -> dict:
    """evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim, evictionMaxPodGracePeriod and
    evictionPressureTransitionPeriod checked as kubelet's ParseThresholdConfig checks them
    (sdqos/kube/eviction.py); evictionHard's errors are _eviction_hard's, not repeated here.
    None of them given (or all null): NodeConfig's defaults, which are kubelet's, without importing
    the eviction module (~28 M instructions, on every sync that reads node.yaml)."""
    if _none_given(raw):
        return {}  # nothing of these to check, and evictionHard's errors are not reported here
    from sdqos.kube import eviction

    cfg, errs = eviction.parse_eviction_config(raw, enforce)
    errors.extend(e for e in errs if not (e.field or "").startswith("evictionHard"))
    if errs:
        return {}

    def strings(key: str) -> dict[str, str]:
        value = raw.get(key)
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    return {
        "eviction_soft": strings("evictionSoft"),
        "eviction_soft_grace_period": strings("evictionSoftGracePeriod"),
        "eviction_minimum_reclaim": strings("evictionMinimumReclaim"),
        "eviction_max_pod_grace_period": cfg.max_pod_grace_period,
        "eviction_pressure_transition_period": raw.get("evictionPressureTransitionPeriod") or "5m0s",
    }


def _swap_behavior(raw, errors: list) -> str:
    """memorySwap.swapBehavior as kubelet validates it: "" or absent is NoSwap."""
    if raw is None:
        return "NoSwap"
    if not isinstance(raw, dict):
        errors.append(_err("memorySwap", "must be a mapping like {swapBehavior: LimitedSwap}"))
        return "NoSwap"
    for key in raw:
        if key != "swapBehavior":
            errors.append(_err(f"memorySwap.{key}", "unknown field"))
    value = raw.get("swapBehavior") or "NoSwap"
    if value not in SWAP_BEHAVIORS:
        errors.append(_err("memorySwap.swapBehavior", f'{value!r} must be one of: "", "NoSwap" or "LimitedSwap"'))
        return "NoSwap"
    return value


def _check_reservation(capacity, kube, system, eviction, errors) -> None:
    """kubelet's validateNodeAllocatable: reservations (incl. the hard eviction threshold for
    memory) may not exceed capacity — kubelet refuses to start with such a config."""
    for r in (CPU, MEMORY, PID):
        cap = capacity[r]
        reserved = [q for q in (kube.get(r), system.get(r)) if q is not None]
        total = sum((q.milli_value() if r == CPU else q.value()) for q in reserved)
        cap_v = cap.milli_value() if r == CPU else cap.value()
        if r == MEMORY:
            total += _eviction_memory(eviction, cap_v)
        if total > cap_v:
            errors.append(
                _err(
                    f"kubeReserved/systemReserved.{r}",
                    f'Resource "{r}" has a reservation of {_fmt(r, total)} but capacity of {_fmt(r, cap_v)}.'
                    " Expected capacity >= reservation"
                    + (" (reservation includes evictionHard memory.available)" if r == MEMORY else ""),
                )
            )


def _fmt(resource: str, v: int) -> str:
    return humanize.cpu(v) if resource == CPU else humanize.size(v) if resource == MEMORY else str(v)
