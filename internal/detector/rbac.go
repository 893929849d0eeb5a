package detector

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The detector watches every kind a policy may select (templates), claims
// them with labels and annotations (an update), and creates, updates and
// deletes their bindings; it labels and holds a finalizer on the policies.
//
// +kubebuilder:rbac:groups="*",resources="*",verbs=get;list;watch;update
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch;update
