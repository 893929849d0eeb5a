package v1alpha1

// Condition types of a Cluster.
const (
	// ClusterConditionReady says whether the member's API server is healthy
	// and reachable.
	ClusterConditionReady = "Ready"
	// ClusterConditionCompleteAPIEnablements says whether status.apiEnablements
	// lists every resource the member serves.
	ClusterConditionCompleteAPIEnablements = "CompleteAPIEnablements"
	// ClusterConditionProbeSucceeded (Lifeboat's) is the result of the
	// latest health probe before smoothing: True when it passed, False when
	// it failed, with the reason and message Ready would get. Its
	// lastTransitionTime is when the probes started passing or failing, so
	// a cluster that is still Ready but whose probes fail is visible (the
	// storm guard counts it as not Ready) and the failure window survives a
	// restart.
	ClusterConditionProbeSucceeded = "ProbeSucceeded"
)

// Reasons of the Ready condition.
const (
	ClusterReasonReady                = "ClusterReady"
	ClusterReasonNotReady             = "ClusterNotReady"
	ClusterReasonNotReachable         = "ClusterNotReachable"
	ClusterReasonStatusCollectionFail = "StatusCollectionFailed"
	ClusterReasonStatusUnknown        = "ClusterStatusUnknown"
	ClusterReasonStatusNeverUpdated   = "ClusterStatusNeverUpdated"
)

// Reasons of the CompleteAPIEnablements condition.
const (
	APIEnablementsComplete = "Complete"
	APIEnablementsPartial  = "Partial"
	APIEnablementsEmpty    = "Empty"
)

// Well-known taint keys.
const (
	// TaintClusterNotReady is added (NoSchedule) while Ready is False or
	// missing.
	TaintClusterNotReady = "cluster.karmada.io/not-ready"
	// TaintClusterUnreachable is added (NoSchedule) while Ready is Unknown.
	TaintClusterUnreachable = "cluster.karmada.io/unreachable"
	// TaintClusterUnscheduler is added (NoSchedule) by cordon. The name keeps
	// Karmada's spelling of the Go identifier.
	TaintClusterUnscheduler = "cluster.karmada.io/unschedulable"
	// TaintClusterUnschedulable is an alias of TaintClusterUnscheduler.
	TaintClusterUnschedulable = TaintClusterUnscheduler
	// TaintClusterFlapping (Lifeboat's) is added (NoSchedule) to a cluster
	// that became Ready again after failing repeatedly in a short time, so
	// that it receives no new placements until it has stayed Ready for the
	// damping hold.
	TaintClusterFlapping = "cluster.lifeboat.dev/flapping"
)

// Well-known keys on and around Cluster objects.
const (
	// ClusterControllerFinalizer is set on every Cluster by the cluster
	// controller.
	ClusterControllerFinalizer = "karmada.io/cluster-controller"
	// ExecutionSpacePrefix prefixes the per-cluster namespace that holds the
	// cluster's Works: karmada-es-<cluster>.
	ExecutionSpacePrefix = "karmada-es-"
	// SecretTokenKey is the key of the bearer token in SecretRef's Secret.
	SecretTokenKey = "token"
	// SecretCADataKey is the key of the CA bundle in SecretRef's Secret.
	SecretCADataKey = "caBundle"
	// AnnotationReadyFailures (Lifeboat's) lists, comma-separated in
	// RFC 3339, when the cluster's Ready condition last turned not True
	// (bounded, recent ones only). The cluster-taint controller keeps it to
	// damp a flapping cluster; removing it forgives the cluster.
	AnnotationReadyFailures = "cluster.lifeboat.dev/ready-failures"
	// AnnotationNoExecuteCleared (Lifeboat's) says when the cluster's last
	// NoExecute taint was removed, in RFC 3339, or NoExecutePending while
	// it has one. The cluster-taint controller keeps it; failback waits a
	// stabilization window after that time, as it does after Ready turns
	// True, so that a taint taken off does not bring workloads back at once.
	AnnotationNoExecuteCleared = "cluster.lifeboat.dev/no-execute-cleared"
	// NoExecutePending is AnnotationNoExecuteCleared's value while the
	// cluster has a NoExecute taint.
	NoExecutePending = "pending"
)
