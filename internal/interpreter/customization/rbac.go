package customization

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpretercustomizations,verbs=get;list;watch
