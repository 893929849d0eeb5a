package bootstrap

// What this package needs in the control plane, gathered by `make generate`
// into the controller manager's ClusterRole (config/rbac/role.yaml).
//
// The agent-csr-approving controller: it reads CertificateSigningRequests
// and the Clusters they name, and writes the approval of those for the
// kube-apiserver-client signer (the API server also checks the approve
// verb on that signer). Before it approves an agent's renewal it asks
// whether the requester may create certificatesigningrequests/selfagentclient.
//
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client,verbs=approve
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
