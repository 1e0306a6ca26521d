"""The Kubernetes side, pure: what Kubernetes and kubelet define, read from the files operators have.

Owns resource quantities (``quantity``: apimachinery's ``resource.Quantity``), the objects sdqos
reasons about (``model``), Pod and VM manifests with the API server's validation (``manifests``),
the KubeletConfiguration (``nodeconfig``, ``kubelet_fields``), YAML read as Kubernetes reads it
(``yamlsafe``), kubelet's QoS rules — class, CPU shares, CFS quota, OOM score (``qos``) — and the
names kubelet's systemd cgroup driver gives its slices (``naming``).

May import: the standard library, PyYAML, ``sdqos.errors``, ``sdqos.humanize``. Nothing here does
I/O beyond what it is handed.
"""
