"""Reference data about the kubelet's configuration surface, for validating KubeletConfiguration files.

KUBELET_CONFIG_FIELDS holds every top-level JSON field name of
``kubelet.config.k8s.io/v1beta1`` ``KubeletConfiguration`` (plus ``apiVersion`` and
``kind`` from the inlined TypeMeta). KUBELET_FEATURE_GATE_DEFAULTS_1_36 holds the
Kubernetes 1.36 default of the few feature gates sdqos's computations depend on.
Pure data: no behaviour lives here.
"""

# Read from the kubernetes/kubelet staging mirror, config/v1beta1/types.go, struct
# KubeletConfiguration, json tags in declaration order:
#   commit 63b3249724f7d89a8aa48f9acb3811f193c9aa68 (2026-07-23, main, 1.37-dev).
# The only difference from the 1.36.3 release (kubelet tag v0.36.3,
# bbb4f8f0907ace5f317f33e06413a55a5f4636f6, Kubernetes-commit 45b76a34) is
# "defaultPodSysctls" (KEP-5996, kubelet a5a32909 / k8s cee13f67, 2026-06-26), unknown to a
# 1.36 kubelet, and accepted here as the newer kubelet accepts it. (A kubelet does not refuse unknown
# fields: DecodeKubeletConfiguration retries leniently and only logs "Using lenient decoding as
# strict decoding failed".)
KUBELET_CONFIG_FIELDS: frozenset[str] = frozenset(
    {
        "apiVersion",
        "kind",
        "enableServer",
        "staticPodPath",
        "podLogsDir",
        "syncFrequency",
        "fileCheckFrequency",
        "httpCheckFrequency",
        "staticPodURL",
        "staticPodURLHeader",
        "address",
        "port",
        "readOnlyPort",
        "tlsCertFile",
        "tlsPrivateKeyFile",
        "tlsCipherSuites",
        "tlsCurvePreferences",
        "tlsMinVersion",
        "rotateCertificates",
        "serverTLSBootstrap",
        "authentication",
        "authorization",
        "registryPullQPS",
        "registryBurst",
        "imagePullCredentialsVerificationPolicy",
        "preloadedImagesVerificationAllowlist",
        "eventRecordQPS",
        "eventBurst",
        "enableDebuggingHandlers",
        "enableContentionProfiling",
        "healthzPort",
        "healthzBindAddress",
        "oomScoreAdj",
        "clusterDomain",
        "clusterDNS",
        "streamingConnectionIdleTimeout",
        "nodeStatusUpdateFrequency",
        "nodeStatusReportFrequency",
        "nodeLeaseDurationSeconds",
        "imageMinimumGCAge",
        "imageMaximumGCAge",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "volumeStatsAggPeriod",
        "kubeletCgroups",
        "systemCgroups",
        "cgroupRoot",
        "cgroupsPerQOS",
        "cgroupDriver",
        "cpuManagerPolicy",
        "singleProcessOOMKill",
        "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod",
        "memoryManagerPolicy",
        "topologyManagerPolicy",
        "topologyManagerScope",
        "topologyManagerPolicyOptions",
        "qosReserved",
        "runtimeRequestTimeout",
        "hairpinMode",
        "maxPods",
        "podCIDR",
        "podPidsLimit",
        "resolvConf",
        "runOnce",
        "cpuCFSQuota",
        "cpuCFSQuotaPeriod",
        "nodeStatusMaxImages",
        "maxOpenFiles",
        "contentType",
        "kubeAPIQPS",
        "kubeAPIBurst",
        "serializeImagePulls",
        "maxParallelImagePulls",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionPressureTransitionPeriod",
        "evictionMaxPodGracePeriod",
        "evictionMinimumReclaim",
        "mergeDefaultEvictionSettings",
        "podsPerCore",
        "enableControllerAttachDetach",
        "protectKernelDefaults",
        "makeIPTablesUtilChains",
        "iptablesMasqueradeBit",
        "iptablesDropBit",
        "featureGates",
        "failSwapOn",
        "memorySwap",
        "containerLogMaxSize",
        "containerLogMaxFiles",
        "containerLogMaxWorkers",
        "containerLogMonitorInterval",
        "configMapAndSecretChangeDetectionStrategy",
        "systemReserved",
        "kubeReserved",
        "reservedSystemCPUs",
        "showHiddenMetricsForVersion",
        "systemReservedCgroup",
        "kubeReservedCgroup",
        "enforceNodeAllocatable",
        "allowedUnsafeSysctls",
        "defaultPodSysctls",
        "volumePluginDir",
        "providerID",
        "kernelMemcgNotification",
        "logging",
        "enableSystemLogHandler",
        "enableSystemLogQuery",
        "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods",
        "shutdownGracePeriodByPodPriority",
        "crashLoopBackOff",
        "reservedMemory",
        "enableProfilingHandler",
        "enableDebugFlagsHandler",
        "seccompDefault",
        "memoryThrottlingFactor",
        "memoryReservationPolicy",
        "registerWithTaints",
        "registerNode",
        "tracing",
        "localStorageCapacityIsolation",
        "containerRuntimeEndpoint",
        "imageServiceEndpoint",
        "failCgroupV1",
        "userNamespaces",
    }
)

# Defaults in Kubernetes 1.36 (keys are the gate names as written in featureGates / --feature-gates).
# Sources (kubernetes/website content/en/docs/reference/command-line-tools-reference/feature-gates/*.md,
# which is generated from k/k pkg/features; k/k versioned_kube_features.go itself was not readable
# for the 1.36 tag):
KUBELET_FEATURE_GATE_DEFAULTS_1_36: dict[str, bool] = {
    # PodLevelResources.md @website 09a121e5: alpha 1.32-1.33 (false), beta from 1.34 (true).
    "PodLevelResources": True,
    # MemoryQoS.md @website 09a121e5: alpha from 1.22, default false (the same page documents the
    # 1.36 memoryReservationPolicy=TieredReservation behaviour). Beta/on only in 1.37
    # (kubelet d3d0dac, k8s 69b42b46).
    "MemoryQoS": False,
    # QOSReserved.md @website 2ba93e04: alpha from 1.11, default false.
    "QOSReserved": False,
    # CustomCPUCFSQuotaPeriod.md (index id 68449741216): alpha 1.12-1.35 (false), stable from 1.36
    # (true). The Go identifier is features.CPUCFSQuotaPeriod but the gate's NAME is
    # "CustomCPUCFSQuotaPeriod" (k/k pkg/features/kube_features.go:
    # `CPUCFSQuotaPeriod featuregate.Feature = "CustomCPUCFSQuotaPeriod"`); "CPUCFSQuotaPeriod" is
    # not a valid featureGates key. Whether 1.36 locks it to its default was not verified.
    "CustomCPUCFSQuotaPeriod": True,
    # SidecarContainers.md @website 24143c87: alpha 1.28, beta 1.29-1.32, stable from 1.33 (true).
    "SidecarContainers": True,
    # DisableCPUQuotaWithExclusiveCPUs.md @website 0637786b: beta from 1.33, default true
    # (also k/k test/compatibility_lifecycle/reference/versioned_feature_list.yaml).
    "DisableCPUQuotaWithExclusiveCPUs": True,
    # PodLevelResourcesFixKubeletQOSClass is deliberately absent: it does not exist in 1.36. Its fix
    # (k8s PR #137150, eff86735, merged 2026-07-15) is 1.37-dev; kubectl v0.36.3 still has the old
    # ComputePodQOS. (KEP-2837 text says "Beta in 1.36", but that was the plan, not what shipped.)
}
