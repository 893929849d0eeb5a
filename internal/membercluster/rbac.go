package membercluster

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// Member connections read each Cluster's credentials Secret.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
