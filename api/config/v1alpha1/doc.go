// Package v1alpha1 holds the config.karmada.io/v1alpha1 API:
// ResourceInterpreterCustomization, Lua scripts that teach the control plane
// how to read replicas, status, health and dependencies of a kind it does
// not know.
//
// +kubebuilder:object:generate=true
// +groupName=config.karmada.io
package v1alpha1
