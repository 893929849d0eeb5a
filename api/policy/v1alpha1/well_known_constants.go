package v1alpha1

// Labels and annotations that tie resource templates and bindings to the
// policy that claimed them.
const (
	PropagationPolicyPermanentIDLabel        = "propagationpolicy.karmada.io/permanent-id"
	PropagationPolicyNamespaceAnnotation     = "propagationpolicy.karmada.io/namespace"
	PropagationPolicyNameAnnotation          = "propagationpolicy.karmada.io/name"
	ClusterPropagationPolicyPermanentIDLabel = "clusterpropagationpolicy.karmada.io/permanent-id"
	ClusterPropagationPolicyAnnotation       = "clusterpropagationpolicy.karmada.io/name"

	// AppliedOverrides records on a Work the OverridePolicies applied.
	AppliedOverrides = "policy.karmada.io/applied-overrides"
	// AppliedClusterOverrides records on a Work the ClusterOverridePolicies
	// applied.
	AppliedClusterOverrides = "policy.karmada.io/applied-cluster-overrides"
)

// Finalizers of policies.
const (
	PropagationPolicyControllerFinalizer        = "karmada.io/propagation-policy-controller"
	ClusterPropagationPolicyControllerFinalizer = "karmada.io/cluster-propagation-policy-controller"
)

// Implicit priorities of a resource selector match, highest first.
const (
	PriorityMatchName          = 3
	PriorityMatchLabelSelector = 2
	PriorityMatchAll           = 1
	PriorityMisMatch           = 0
)
