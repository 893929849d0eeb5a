// Package v1alpha1 holds the cluster.karmada.io/v1alpha1 API: the Cluster
// object that describes one member cluster, how to reach it and what the
// control plane last observed about it.
//
// Karmada serves this group from an aggregated API server; Lifeboat serves it
// as a CustomResourceDefinition with the same group, version, kind and JSON
// field names, so Karmada manifests and clients keep working.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.karmada.io
package v1alpha1
