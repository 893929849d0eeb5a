// Package bootstrap registers member clusters in pull mode: how the agent
// that runs inside a member gets a client certificate for the control plane,
// and the least-privilege permissions that certificate's identity has there.
//
// The flow, in the order it happens:
//
//  1. An administrator runs `lifeboat token create --cluster NAME`
//     (CreateToken): the Pull Cluster NAME, the agent's RBAC (AgentObjects)
//     and its Lease are ensured in the control plane, then a Kubernetes
//     bootstrap token Secret (TokenSecret) is created in kube-system whose
//     extra groups are system:bootstrappers:lifeboat and
//     system:bootstrappers:lifeboat:cluster:NAME.
//  2. In the member, `lifeboat register` (Register) pins the control plane's
//     CA by the hash of its public key (DiscoverCA), then, authenticated by
//     the bootstrap token, creates a CertificateSigningRequest for the user
//     system:lifeboat:agent:NAME in the group system:lifeboat:agents, waits
//     for its certificate and writes the agent's kubeconfig.
//  3. In the control plane, the agent-csr-approving controller
//     (ApproverReconciler) approves that request when Decide finds it is
//     what a bootstrap token of cluster NAME may ask for; kube-controller-
//     manager's signing controller then issues the certificate.
//
// Fields written by the controller: ApproverReconciler writes only the
// Approved or Denied condition of a CertificateSigningRequest (its /approval
// subresource), once; it never touches a request that is not a Lifeboat
// agent's or that is already decided.
//
// The CLI (internal/cli) only parses flags and prints; every object built and
// every decision taken is a plain function here, table-tested without a
// server.
package bootstrap
