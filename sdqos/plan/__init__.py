"""The planner, pure: from a validated config to the desired unit tree with every value.

Owns the engine (``engine``: node allocatable → QoS tiers → pods → containers, and VMs in
machine.slice; kubelet's formulas applied per tier), the systemd properties each value becomes on
cgroup v1 and v2 (``properties``), and the reasons behind each value (``explain``). It knows
nothing of caches, files, D-Bus or the kernel: the same inputs always give the same plan.

May import: the standard library, ``sdqos.errors``, ``sdqos.humanize``, ``sdqos.kube``.
"""
