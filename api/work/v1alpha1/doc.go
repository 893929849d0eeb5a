// Package v1alpha1 holds the work.karmada.io/v1alpha1 API: the Work, the
// manifests to apply to one member cluster (it lives in the cluster's
// execution namespace karmada-es-<cluster>) and their observed status.
//
// +kubebuilder:object:generate=true
// +groupName=work.karmada.io
package v1alpha1
