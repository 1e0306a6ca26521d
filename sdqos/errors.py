"""Typed errors.

Every failure sdqos reports is one of these. Each carries its context (file, document, field;
unit and D-Bus error name) and an exit code, so the CLI can print one readable line and exit
with a documented status:

    0  ok
    1  error talking to systemd or the host (nothing invalid in the config)
    2  invalid input (config file, field, command-line argument)
    3  another sdqos sync holds the lock and --lock-timeout expired
    4  `sync --dry-run` / `diff`: changes are pending (0: none), as terraform plan -detailed-exitcode
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INVALID = 2
EXIT_LOCKED = 3
EXIT_PENDING = 4

# The one list of exit codes: `sdqos -h`, the man page and README say exactly these (tests/cli).
EXIT_CODES = (
    (EXIT_OK, "ok"),
    (EXIT_ERROR, "error (systemd refused something, no bus, a host problem, a unit of another manager, "
                 "removals held back)"),
    (EXIT_INVALID, "invalid input (a file, a field, an argument, an edit Kubernetes refuses); the valid rest is synced"),
    (EXIT_LOCKED, "another sync holds the lock"),
    (EXIT_PENDING, "diff / sync --dry-run: changes are pending"),
)
EXIT_CODES_LINE = "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES) + "."


class SdqosError(Exception):
    """Base of every error sdqos raises on purpose."""

    exit_code = EXIT_ERROR

    def __str__(self) -> str:  # one line, always
        return " ".join(super().__str__().split())


# --- invalid input ---------------------------------------------------------------------------


class InvalidInput(SdqosError):
    """Something an operator wrote is wrong. `where` names the file (and document index), `field`
    the path inside it, e.g. ``pods/web.yaml[2]`` and ``spec.containers[0].resources.limits.cpu``."""

    exit_code = EXIT_INVALID

    def __init__(self, message: str, where: str | None = None, field: str | None = None):
        self.message = message
        self.where = where
        self.field = field
        super().__init__(self.line())

    def line(self) -> str:
        parts = [p for p in (self.where, self.field) if p]
        return ": ".join(parts + [self.message])


class QuantityError(ValueError):
    """A string is not a Kubernetes resource quantity. Raised by `sdqos.kube.quantity`; the config
    loader wraps it into InvalidInput with the file and field."""


class ConfigDirError(InvalidInput):
    """The config directory itself is unusable (missing, empty, unsafe permissions)."""


class ConfigInvalid(InvalidInput):
    """Fatal config errors (node.yaml): nothing can be computed. ``errors`` holds every line."""

    def __init__(self, errors: list[InvalidInput]):
        self.errors = errors
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(first.message + more, where=first.where, field=first.field)


class YamlError(ValueError):
    """Not loadable YAML; the message says where (line:column) and why. Raised by
    `sdqos.kube.yamlsafe`; the config loader wraps it into InvalidInput with the file."""


# --- runtime ---------------------------------------------------------------------------------


class LockTimeout(SdqosError):
    """Another sync holds the lock."""

    exit_code = EXIT_LOCKED


class HostError(SdqosError):
    """Reading or writing the host (procfs, cgroupfs, namespaces) failed."""


class SignalReadError(SdqosError):
    """A file behind an eviction signal could not be read (no memory controller, /proc not mounted)."""


class SandboxError(SdqosError):
    """The private test systemd could not be brought up, entered or torn down."""


class ToolMissing(SandboxError):
    """A program the sandbox needs (busctl, nsenter) is not installed."""


class SystemdError(SdqosError):
    """A D-Bus call to systemd failed. `name` is the D-Bus error name when there is one: context for
    the message; callers match the subclasses below (host/systemd.py maps each name to one)."""

    def __init__(self, message: str, name: str | None = None, unit: str | None = None):
        self.name = name
        self.unit = unit
        self.message = message
        text = message
        if unit and unit not in message:
            text = f"{unit}: {text}"
        if name:
            text = f"{text} ({name})"
        super().__init__(text)


class UnitExists(SystemdError):
    """org.freedesktop.systemd1.UnitExists"""


class NoSuchUnit(SystemdError):
    """org.freedesktop.systemd1.NoSuchUnit"""


class InvalidProperty(SystemdError):
    """PropertyReadOnly / InvalidArgs / UnknownProperty: systemd refused a property or value."""


class AccessDenied(SystemdError):
    """AccessDenied / InteractiveAuthorizationRequired."""


class BusDisconnected(SystemdError):
    """NoReply, a closed connection, or systemd gone from the bus: safe to retry."""


class ServiceNotRunning(BusDisconnected):
    """ServiceUnknown / NameHasNoOwner: the service called is not on the bus. For systemd itself
    that is a disconnect (retried until it is back); for systemd-machined, that it does not run."""


class BusUnavailable(SystemdError):
    """The bus cannot be reached at all (no socket, connection refused). ``transient``: the
    connection was made and then reset, as when the bus daemon restarts under us."""

    transient: bool = False


class JobFailed(SystemdError):
    """A job finished with a result other than ``done``."""

    def __init__(self, unit: str, result: str, job: str | None = None):
        self.result = result
        self.job = job
        super().__init__(f"job for {unit} finished with result '{result}'", unit=unit)


class CallTimeout(SystemdError):
    """A D-Bus call or a job did not finish in time."""


class ScopeBusy(SdqosError):
    """The container already runs in its scope (use --replace)."""


class NotAdmitted(InvalidInput):
    """kubelet would not admit the pod: maxPods/podsPerCore, or its requests do not fit what the
    running pods leave of node allocatable (OutOfpods, OutOfcpu, OutOfmemory)."""


class PodRunning(SdqosError):
    """The pod's containers already run (use --replace)."""


# --- CPU manager (sdqos/kube/cpuset.py, sdqos/kube/cpumanager.py, sdqos/host/topology.py) -------


class CPUSetError(ValueError):
    """A string is not a Linux CPU list ("0-3,7"). Raised by `sdqos.kube.cpuset.parse` with
    k8s.io/utils/cpuset's message; callers wrap it with the file and field."""


class CPUManagerError(SdqosError):
    """The static CPU manager cannot do what was asked (kubelet's policy_static.go errors)."""


class CPUAllocationError(CPUManagerError):
    """Not enough CPUs for an exclusive allocation; the message is kubelet's
    ("not enough cpus available to satisfy request: requested=N, available=M")."""


class SMTAlignmentError(CPUAllocationError):
    """`full-pcpus-only`: the request is not a multiple of the threads per core, or not enough
    free whole cores are left (kubelet's SMTAlignmentError, same two messages)."""

    def __init__(self, requested_cpus: int, cpus_per_core: int, available_physical_cpus: int = 0,
                 caused_by_physical_cpus: bool = False):
        self.requested_cpus = requested_cpus
        self.cpus_per_core = cpus_per_core
        self.available_physical_cpus = available_physical_cpus
        self.caused_by_physical_cpus = caused_by_physical_cpus
        if caused_by_physical_cpus:
            text = (f"SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                    f"{available_physical_cpus}, requested CPUs = {requested_cpus}, CPUs per core = {cpus_per_core}")
        else:
            text = f"SMT Alignment Error: requested {requested_cpus} cpus not multiple cpus per core = {cpus_per_core}"
        super().__init__(text)

    def __eq__(self, other: object) -> bool:  # a value, as kubelet's struct is (its tests compare with DeepEqual)
        return isinstance(other, SMTAlignmentError) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


class CPUsUnavailable(InvalidInput):
    """A container of a pod about to start cannot have the exclusive CPUs the static policy owes
    it (kubelet's admission fails the pod with UnexpectedAdmissionError): one line naming the pod,
    the container, the CPUs it needs and the CPUs free. Nothing running is moved or stopped."""


class CPUManagerStateError(CPUManagerError):
    """The CPU manager's state does not fit this node (kubelet's validateState, or the state
    file's checksum/format): kubelet refuses to start and says to drain the node and remove it."""


class CPUPolicyOptionError(InvalidInput):
    """cpuManagerPolicyOptions / reserved CPUs that the static policy refuses (unknown option,
    bad boolean, an option sdqos does not implement, a reservation it cannot make)."""


class TopologyPolicyOptionError(InvalidInput):
    """topologyManagerPolicy / Scope / PolicyOptions that kubelet's topology manager refuses to
    start with (unknown option, bad value, more NUMA nodes than max-allowable-numa-nodes), with
    kubelet's message."""


class TopologyAffinityError(CPUsUnavailable):
    """The topology manager does not admit a pod (restricted / single-numa-node and no preferred
    NUMA affinity): kubelet's Reason TopologyAffinityError, Message "Resources cannot be allocated
    with Topology locality"; one line naming the pod and the container(s)."""


class EvictionFailed(SdqosError):
    """A workload could not be evicted (nothing of it is sdqos's to stop, or its runtime could not
    be asked): the eviction manager moves on to the next in the ranking."""
