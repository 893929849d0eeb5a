package cluster

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The Cluster controllers: finalizers, taints and status of Clusters, and the
// execution namespace karmada-es-<name> of each with its Works, deleted
// together when the Cluster goes; ClusterTaintPolicies read. The lease
// monitor reads the Leases of Pull clusters in karmada-cluster (their agents
// renew them; the manager's own rule for its leader Lease has no list or
// watch).
//
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/status,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=list;deletecollection
// +kubebuilder:rbac:groups=policy.karmada.io,resources=clustertaintpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
