package orphans

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The orphan checks read Works and bindings afresh from the API server.
//
// +kubebuilder:rbac:groups=work.karmada.io,resources=works;resourcebindings;clusterresourcebindings,verbs=get;list
