"""Deterministic pod workload for the sync benchmark.

`generate(n, seed)` returns N pod manifests (one YAML file each, as a kubelet static-pod dir or a
GitOps checkout holds them) plus a node.yaml whose capacity fits their requests with head room,
so the plan carries no overcommit warning.

Mix (exact counts, shuffled with the seed): 20 % Guaranteed, 50 % Burstable, 30 % BestEffort;
1-3 app containers; ~25 % of pods with a regular init container, ~15 % with a sidecar
(restartable init container); quantities drawn from what real clusters request (50m-2 CPUs,
64Mi-4Gi). Manifests carry the usual non-resource fields (labels, image, ports, env, probes,
volumes) so YAML loading costs what it costs on a real node (~1-2 KiB per pod).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

GUARANTEED, BURSTABLE, BESTEFFORT = "Guaranteed", "Burstable", "BestEffort"
NAMESPACES = ["default", "shop", "payments", "search", "batch", "monitoring", "logging", "ingress", "data", "ml"]
APPS = ["api", "web", "worker", "cache", "db", "queue", "auth", "search", "report", "gateway", "indexer", "cron"]
IMAGES = ["nginx:1.27", "registry.example/{app}:{v}", "postgres:17", "redis:7.4", "envoyproxy/envoy:v1.31",
          "busybox:1.36", "python:3.12-slim", "golang:1.23"]
CPU_M = [50, 100, 100, 200, 250, 250, 500, 500, 750, 1000, 1500, 2000]
MEM_MI = [64, 128, 128, 256, 256, 512, 512, 768, 1024, 2048, 4096]


@dataclass
class PodFile:
    name: str  # file name under pods/
    qos: str
    doc: dict
    # the pod used for the one-change measurement: Burstable with a memory limit on every container
    changeable: bool = False


@dataclass
class Workload:
    pods: list[PodFile]
    node_yaml: str
    cpu_request_m: int  # Σ of every container's cpu request (upper bound of the pods' requests)
    memory_request: int
    counts: dict[str, int] = field(default_factory=dict)

    def write(self, config_dir: Path) -> None:
        (config_dir / "pods").mkdir(parents=True, exist_ok=True)
        (config_dir / "node.yaml").write_text(self.node_yaml)
        for p in self.pods:
            (config_dir / "pods" / p.name).write_text(dump(p.doc))

    def one_change_pod(self) -> PodFile:
        return next(p for p in self.pods if p.changeable)


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def cpu(m: int) -> str:
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def mem(mi: int) -> str:
    return f"{mi // 1024}Gi" if mi % 1024 == 0 else f"{mi}Mi"


def _container(rng: random.Random, name: str, app: str, qos: str, *, sidecar: bool = False,
               all_mem_limits: bool = False) -> tuple[dict, int, int]:
    """One container; returns (manifest, cpu request m, memory request Mi)."""
    c: dict = {"name": name, "image": rng.choice(IMAGES).format(app=app, v=f"{rng.randint(1, 9)}.{rng.randint(0, 20)}")}
    if rng.random() < 0.6:
        c["ports"] = [{"containerPort": rng.choice([80, 8080, 8443, 9090, 5432, 6379]), "protocol": "TCP"}]
    c["env"] = [{"name": "APP_NAME", "value": app}, {"name": "LOG_LEVEL", "value": rng.choice(["info", "debug", "warn"])}]
    if rng.random() < 0.5:
        c["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
    c["volumeMounts"] = [{"name": "config", "mountPath": "/etc/app", "readOnly": True}]
    if sidecar:
        c["restartPolicy"] = "Always"
    cm, mm = rng.choice(CPU_M), rng.choice(MEM_MI)
    if sidecar:
        cm, mm = min(cm, 200), min(mm, 256)
    req_c = req_m = 0
    if qos == GUARANTEED:
        lim = {"cpu": cpu(cm), "memory": mem(mm)}
        # half spell out requests, half rely on API defaulting (request = limit)
        c["resources"] = {"limits": lim, "requests": dict(lim)} if rng.random() < 0.5 else {"limits": lim}
        req_c, req_m = cm, mm
    elif qos == BURSTABLE:
        style = "mem-limit" if all_mem_limits else rng.choice(["requests", "requests", "both", "mem-limit", "none"])
        if style == "requests":
            c["resources"] = {"requests": {"cpu": cpu(cm), "memory": mem(mm)}}
            req_c, req_m = cm, mm
        elif style == "both":
            c["resources"] = {"requests": {"cpu": cpu(cm), "memory": mem(mm)},
                              "limits": {"cpu": cpu(cm * 2), "memory": mem(mm * 2)}}
            req_c, req_m = cm, mm
        elif style == "mem-limit":
            c["resources"] = {"requests": {"cpu": cpu(cm), "memory": mem(mm)}, "limits": {"memory": mem(mm * 2)}}
            req_c, req_m = cm, mm
        # "none": a container without resources in a Burstable pod
    return c, req_c, req_m


def generate(n: int, seed: int = 20250101) -> Workload:
    rng = random.Random(f"{seed}/{n}")
    g = round(n * 0.2)
    b = round(n * 0.5)
    classes = [GUARANTEED] * g + [BURSTABLE] * b + [BESTEFFORT] * (n - g - b)
    rng.shuffle(classes)
    pods: list[PodFile] = []
    tot_c = tot_m = 0
    changeable_done = False
    for i, qos in enumerate(classes):
        ns = NAMESPACES[i % len(NAMESPACES)]
        app = rng.choice(APPS)
        name = f"{app}-{i:05d}-{rng.getrandbits(20):05x}"
        uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        # the first Burstable pod gets memory limits everywhere: its limit change is "one change"
        changeable = qos == BURSTABLE and not changeable_done
        changeable_done = changeable_done or changeable
        containers = []
        burstable_has_request = False
        for j in range(rng.choice([1, 1, 1, 2, 2, 3])):
            c, rc, rm = _container(rng, app if j == 0 else f"{app}-aux{j}", app, qos, all_mem_limits=changeable)
            burstable_has_request |= bool(rc or rm)
            containers.append(c)
            tot_c, tot_m = tot_c + rc, tot_m + rm
        if qos == BURSTABLE and not burstable_has_request:  # keep it Burstable
            containers[0]["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
            tot_c, tot_m = tot_c + 100, tot_m + 128
        inits = []
        # (not for the one-change pod: a bigger init container limit would hide the change)
        if rng.random() < 0.25 and not changeable:
            c, rc, rm = _container(rng, "init-migrate", app, qos, all_mem_limits=changeable)
            c.pop("ports", None)
            c.pop("readinessProbe", None)
            inits.append(c)
            tot_c, tot_m = tot_c + rc, tot_m + rm
        if rng.random() < 0.15:
            c, rc, rm = _container(rng, "log-shipper", app, qos, sidecar=True, all_mem_limits=changeable)
            c.pop("readinessProbe", None)
            inits.append(c)
            tot_c, tot_m = tot_c + rc, tot_m + rm
        spec: dict = {}
        if inits:
            spec["initContainers"] = inits
        spec["containers"] = containers
        spec["volumes"] = [{"name": "config", "configMap": {"name": f"{app}-config"}}]
        spec["restartPolicy"] = "Always"
        spec["terminationGracePeriodSeconds"] = 30
        spec["serviceAccountName"] = app
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": uid,
                "labels": {"app": app, "pod-template-hash": f"{rng.getrandbits(40):010x}", "qos": qos.lower()},
            },
            "spec": spec,
        }
        pods.append(PodFile(name=f"{ns}_{name}.yaml", qos=qos, doc=doc, changeable=changeable))
    # capacity: every request fits with 25 % head room over kube+system reserved (1 CPU, 2Gi)
    cap_cpu = -(-(tot_c * 5 // 4 + 2000) // 1000)
    cap_mem_gi = -(-(tot_m * 5 // 4 + 4096) // 1024)
    node = f"""\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
kubeReserved: {{cpu: 500m, memory: 1Gi}}
systemReserved: {{cpu: 500m, memory: 1Gi}}
evictionHard: {{memory.available: 100Mi}}
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
podPidsLimit: 4096
maxPods: {max(110, n)}  # kubelet admits at most maxPods (default 110)
featureGates: {{QOSReserved: true}}
qosReserved: {{memory: 50%}}
# sized by the benchmark generator: Σ requests + 25 % + reserved ({n} pods)
capacity: {{cpu: "{cap_cpu}", memory: {cap_mem_gi}Gi, pids: "4194304"}}
"""
    counts = {q: sum(p.qos == q for p in pods) for q in (GUARANTEED, BURSTABLE, BESTEFFORT)}
    return Workload(pods=pods, node_yaml=node, cpu_request_m=tot_c, memory_request=tot_m * 2**20, counts=counts)


def with_changed_limit(doc: dict, step: int) -> dict:
    """A copy of a changeable pod whose first container's memory limit is raised by 64Mi × step."""
    import copy

    d = copy.deepcopy(doc)
    c = d["spec"]["containers"][0]
    lim = c["resources"]["limits"]["memory"]
    mi = int(lim[:-2]) * (1024 if lim.endswith("Gi") else 1)
    c["resources"]["limits"]["memory"] = mem(mi + 64 * step)
    return d
