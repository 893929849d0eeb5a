package rebalancer

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The WorkloadRebalancer controller selects templates (a metadata list of
// any kind), marks their bindings and deletes finished rebalancers after
// their TTL.
//
// +kubebuilder:rbac:groups=apps.karmada.io,resources=workloadrebalancers,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=apps.karmada.io,resources=workloadrebalancers/status,verbs=update
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update
