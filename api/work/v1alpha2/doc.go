// Package v1alpha2 holds the work.karmada.io/v1alpha2 API: ResourceBinding
// and ClusterResourceBinding, which join one resource template with the
// policy that claimed it, record where it is scheduled, carry the eviction
// tasks of a failover in progress, and aggregate the member statuses.
//
// Lifeboat extends the binding status with fields Karmada does not have:
// failoverHistory (what was evicted, when and why) and unhealthyClusters
// (the application-failover timers). Keeping them in the status, not in
// controller memory, is what lets failover survive a restart.
//
// +kubebuilder:object:generate=true
// +groupName=work.karmada.io
package v1alpha2
