package binding

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The binding controller turns bindings into Works, applying OverridePolicies,
// and aggregates the members' status into the binding and the template (any
// kind: status written with an update).
//
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=patch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=overridepolicies;clusteroverridepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="*",resources="*/status",verbs=update
