// Package v1alpha1 holds the policy.karmada.io/v1alpha1 API: where resources
// go (PropagationPolicy, ClusterPropagationPolicy), how they are changed per
// cluster (OverridePolicy, ClusterOverridePolicy), how they fail over
// (PropagationSpec.Failover) and when clusters are tainted
// (ClusterTaintPolicy).
//
// Defaults and validation live in the CRD schemas (kubebuilder markers and
// CEL rules), so no admission webhook is needed. Defaults that depend on
// another field (the grace period of Gracefully) cannot be expressed there;
// the helpers in defaults.go give their effective values.
//
// +kubebuilder:object:generate=true
// +groupName=policy.karmada.io
package v1alpha1
