// Package v1alpha1 holds the apps.karmada.io/v1alpha1 API:
// WorkloadRebalancer, a one-shot request to schedule workloads afresh (for
// example to bring them back to a preferred cluster after a failover).
//
// The Karmada fields are accepted unchanged. Lifeboat adds two optional
// ways to name workloads (spec.workloadSelector, spec.failedOverFrom) and
// one status field (status.rescheduleTriggeredAt); validation lives in the
// CRD schema.
//
// +kubebuilder:object:generate=true
// +groupName=apps.karmada.io
package v1alpha1
