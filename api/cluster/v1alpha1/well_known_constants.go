package v1alpha1

// Condition types of a Cluster.
const (
	// ClusterConditionReady says whether the member's API server is healthy
	// and reachable.
	ClusterConditionReady = "Ready"
	// ClusterConditionCompleteAPIEnablements says whether status.apiEnablements
	// lists every resource the member serves.
	ClusterConditionCompleteAPIEnablements = "CompleteAPIEnablements"
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
)
