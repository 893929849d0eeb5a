package workstatus

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works/status,verbs=patch
