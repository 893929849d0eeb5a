package served

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The served kinds follow the CustomResourceDefinitions (metadata only).
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
