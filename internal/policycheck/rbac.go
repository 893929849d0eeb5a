package policycheck

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies;clusterpropagationpolicies;overridepolicies;clusteroverridepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies/status;clusterpropagationpolicies/status;overridepolicies/status;clusteroverridepolicies/status,verbs=patch
