"""sdqos: kubelet's QoS cgroup model, enforced as systemd units over D-Bus.

The package is layered; each layer imports only those above it in this list (a test enforces it,
tests/test_layers.py; docs/architecture.md draws the data flow):

- ``errors``, ``humanize`` — typed errors with exit codes; numbers for people. Leaves.
- ``kube`` — pure: quantities, manifests, KubeletConfiguration, kubelet's QoS rules, unit names.
- ``plan`` — pure: the engine (the unit tree with every value), unit properties, explanations.
- ``host`` — adapters: systemd over D-Bus, the kernel's cgroup files, /proc, /run/sdqos.
- ``loading`` — the config dir → Config and Plan, with the parse cache behind one entry point.
- ``reconcile`` — live state, diff rules, apply order, one sync; run/adopt.
- ``cli`` — the ``sdqos`` command and its output.
- ``sandbox`` — a private throwaway systemd to try sdqos on and to test against (stdlib only).
"""

__version__ = "0.1.0"
