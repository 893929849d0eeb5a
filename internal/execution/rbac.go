package execution

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The execution controller holds a finalizer on each Work it applied and
// writes its Applied condition.
//
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=works/status,verbs=patch
