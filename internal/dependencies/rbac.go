package dependencies

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The dependencies distributor reads the objects a workload refers to and
// creates, updates and deletes their bindings.
//
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;create;update;patch;delete
