package bootstrap

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// Reasons Decide gives. ReasonApproved is the Approved condition's reason;
// the Denied ones are the Denied condition's; the others come with no
// decision.
const (
	ReasonApproved = "LifeboatAgentAutoApproved"

	ReasonRequesterNotForCluster = "RequesterNotForCluster"
	ReasonInvalidRequest         = "InvalidRequest"
	ReasonSubjectNotAllowed      = "SubjectNotAllowed"
	ReasonSANsNotAllowed         = "SubjectAltNamesNotAllowed"
	ReasonUsagesNotAllowed       = "UsagesNotAllowed"
	ReasonClusterNotFound        = "ClusterNotFound"
	ReasonClusterNotPull         = "ClusterNotPull"
	ReasonClusterDeleting        = "ClusterDeleting"
	ReasonRenewalNotAllowed      = "RenewalNotAllowed"

	// ReasonNotAgentRequest: not for this approver (another signer, or a
	// requester that is neither a Lifeboat bootstrap token nor an agent).
	ReasonNotAgentRequest = "NotLifeboatAgentRequest"
	// ReasonAlreadyDecided: approved or denied already.
	ReasonAlreadyDecided = "AlreadyDecided"
	// ReasonClusterLookupFailed: the Cluster could not be read; decide
	// again later.
	ReasonClusterLookupFailed = "ClusterLookupFailed"
	// ReasonAuthorizationFailed: whether the requester may renew could not
	// be asked, or the authorizer could not decide; decide again later.
	ReasonAuthorizationFailed = "AuthorizationFailed"
)

// allowedUsages are what an agent's client certificate may be for; client
// auth is required.
var allowedUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
}

// renewal reports whether csr is asked by an agent with its current
// certificate (a renewal) rather than by a bootstrap token.
func renewal(csr *certificatesv1.CertificateSigningRequest) bool {
	_, agent := clusterOfAgentUser(csr.Spec.Username)
	return agent && slices.Contains(csr.Spec.Groups, AgentsGroup)
}

// pendingAgentRequest is rules 1 and 2 of Decide: ok when the request is a
// Lifeboat agent's and not decided yet, else why not.
func pendingAgentRequest(csr *certificatesv1.CertificateSigningRequest) (reason, message string, ok bool) {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || !(slices.Contains(csr.Spec.Groups, BootstrappersGroup) || renewal(csr)) {
		return ReasonNotAgentRequest, "not a Lifeboat agent's request", false
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return ReasonAlreadyDecided, fmt.Sprintf("already %s", c.Type), false
		}
	}
	return "", "", true
}

// ClusterLookup returns the Cluster of that name, or an error for which
// apierrors.IsNotFound is true when there is none.
type ClusterLookup func(name string) (*clusterv1alpha1.Cluster, error)

// RenewalSubresource is the subresource of certificatesigningrequests
// (certificates.k8s.io) an agent must be allowed to create to renew its
// certificate, as a kubelet needs certificatesigningrequests/selfnodeclient:
// the agent's own ClusterRole grants it, and unjoin removes it.
const RenewalSubresource = "selfagentclient"

// RenewalAuthorizer reports whether the requester of csr may create
// certificatesigningrequests/RenewalSubresource (a SubjectAccessReview with
// the requester's user, groups, UID and extra).
type RenewalAuthorizer func(csr *certificatesv1.CertificateSigningRequest) (bool, error)

// Decide says what to do with a CertificateSigningRequest: approve it, deny
// it, or neither (approve and deny both false: not this approver's, or
// decide later), with the reason and message of the condition to write. The
// rules, in order:
//
//  1. not for this approver: a signer other than
//     kubernetes.io/kube-apiserver-client, or a requester that is neither
//     in BootstrappersGroup (a registration) nor an agent, a user
//     AgentUser(NAME) in AgentsGroup (a renewal): no decision;
//  2. already Approved or Denied: no decision;
//  3. a request that does not parse as a PEM CERTIFICATE REQUEST with a
//     valid signature: deny;
//  4. a subject common name that is not system:lifeboat:agent:NAME for a
//     valid cluster NAME: deny;
//  5. a registration whose requester is outside
//     ClusterBootstrappersGroup(NAME), that is a token made for another
//     cluster, or a renewal asked by another cluster's agent: deny;
//  6. organizations other than exactly [AgentsGroup]: deny;
//  7. any subject alternative name (DNS, IP, email, URI): deny;
//  8. a usage other than digital signature, key encipherment and client
//     auth, or no client auth: deny;
//  9. no Cluster NAME, or one that is being deleted or not in Pull mode:
//     deny; the Cluster cannot be read: no decision (ReasonClusterLookupFailed);
//  10. a renewal whose requester may not create
//     certificatesigningrequests/RenewalSubresource: deny, so that a name
//     and group given by other credentials than the agent's certificate
//     (a token, impersonation) are not enough; the authorization cannot be
//     asked: no decision;
//  11. otherwise approve.
func Decide(csr *certificatesv1.CertificateSigningRequest, lookup ClusterLookup, authorize RenewalAuthorizer) (approve, deny bool, reason, message string) {
	// 1. and 2.
	if reason, message, ok := pendingAgentRequest(csr); !ok {
		return false, false, reason, message
	}
	denied := func(reason, format string, args ...any) (bool, bool, string, string) {
		return false, true, reason, fmt.Sprintf(format, args...)
	}
	// 3.
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return denied(ReasonInvalidRequest, "spec.request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return denied(ReasonInvalidRequest, "spec.request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return denied(ReasonInvalidRequest, "spec.request is not signed by its key: %v", err)
	}
	// 4.
	name, ok := clusterOfAgentUser(req.Subject.CommonName)
	if !ok || cluster.ValidateClusterName(name) != nil {
		return denied(ReasonSubjectNotAllowed, "the subject's common name is %q; an agent's must be %sNAME for a cluster NAME", req.Subject.CommonName, AgentUserPrefix)
	}
	// 5.
	renewing := renewal(csr)
	if renewing && csr.Spec.Username != AgentUser(name) {
		return denied(ReasonRequesterNotForCluster, "%s may renew only its own certificate, not one for cluster %s", csr.Spec.Username, name)
	}
	if !renewing && !slices.Contains(csr.Spec.Groups, ClusterBootstrappersGroup(name)) {
		return denied(ReasonRequesterNotForCluster, "the bootstrap token of %s was not made for cluster %s (it lacks the group %s); create one with `lifeboat token create --cluster %s`",
			csr.Spec.Username, name, ClusterBootstrappersGroup(name), name)
	}
	// 6.
	if !slices.Equal(req.Subject.Organization, []string{AgentsGroup}) {
		return denied(ReasonSubjectNotAllowed, "the subject's organizations are [%s]; an agent's must be exactly [%s]", strings.Join(req.Subject.Organization, ", "), AgentsGroup)
	}
	// 7.
	if n := len(req.DNSNames) + len(req.IPAddresses) + len(req.EmailAddresses) + len(req.URIs); n > 0 {
		return denied(ReasonSANsNotAllowed, "the request has %d subject alternative name(s); an agent's client certificate has none", n)
	}
	// 8.
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return denied(ReasonUsagesNotAllowed, "usage %q is not allowed; an agent's certificate is for digital signature, key encipherment and client auth only", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return denied(ReasonUsagesNotAllowed, "usage %q is missing", certificatesv1.UsageClientAuth)
	}
	// 9.
	c, err := lookup(name)
	switch {
	case apierrors.IsNotFound(err):
		return denied(ReasonClusterNotFound, "there is no Cluster %s; create the token with `lifeboat token create --cluster %s`, which creates it", name, name)
	case err != nil:
		return false, false, ReasonClusterLookupFailed, fmt.Sprintf("reading Cluster %s: %v", name, err)
	case c.DeletionTimestamp != nil:
		return denied(ReasonClusterDeleting, "Cluster %s is being deleted", name)
	case c.Spec.SyncMode != clusterv1alpha1.Pull:
		return denied(ReasonClusterNotPull, "cluster %s is joined in %s mode; unjoin it first or choose another name", name, c.Spec.SyncMode)
	}
	// 10. and 11.
	if renewing {
		allowed, err := authorize(csr)
		switch {
		case err != nil:
			return false, false, ReasonAuthorizationFailed, fmt.Sprintf("asking whether %s may renew its certificate: %v", csr.Spec.Username, err)
		case !allowed:
			return denied(ReasonRenewalNotAllowed, "%s may not create certificatesigningrequests/%s, which its role lifeboat:agent:%s grants (run `lifeboat token create --cluster %s` to restore it)",
				csr.Spec.Username, RenewalSubresource, name, name)
		}
		return true, false, ReasonApproved, fmt.Sprintf("agent of Pull cluster %s, renewing its certificate", name)
	}
	return true, false, ReasonApproved, fmt.Sprintf("agent of Pull cluster %s, bootstrapped by %s", name, csr.Spec.Username)
}
