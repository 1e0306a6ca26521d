"""sdqos: kubelet's QoS cgroup model, enforced as systemd units over D-Bus."""

__version__ = "0.1.0"
