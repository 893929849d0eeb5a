package bootstrap

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// lookupOf answers from clusters, NotFound for the others.
func lookupOf(clusters ...*clusterv1alpha1.Cluster) ClusterLookup {
	return func(name string) (*clusterv1alpha1.Cluster, error) {
		for _, c := range clusters {
			if c.Name == name {
				return c, nil
			}
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: clusterv1alpha1.GroupName, Resource: "clusters"}, name)
	}
}

// allowRenewals and refuseRenewals answer every renewal's authorization.
func allowRenewals(*certificatesv1.CertificateSigningRequest) (bool, error)  { return true, nil }
func refuseRenewals(*certificatesv1.CertificateSigningRequest) (bool, error) { return false, nil }

func TestDecide(t *testing.T) {
	pull := makeCluster("member1", clusterv1alpha1.Pull)
	deleting := makeCluster("member1", clusterv1alpha1.Pull)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	// A request whose signature was changed after signing.
	forged := func() []byte {
		block, _ := pem.Decode(requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, nil))
		block.Bytes[len(block.Bytes)-1] ^= 0x01
		return pem.EncodeToMemory(block)
	}()
	cases := map[string]struct {
		csr        *certificatesv1.CertificateSigningRequest
		lookup     ClusterLookup
		authorize  RenewalAuthorizer
		wantReason string
		approve    bool
		deny       bool
		msg        string
	}{
		"approve: a Pull cluster's agent with its own token": {
			csr: makeCSR(t, "ok").Obj(), approve: true, wantReason: ReasonApproved, msg: "member1",
		},
		"approve: key encipherment is allowed": {
			csr:     makeCSR(t, "ke").Usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth).Obj(),
			approve: true, wantReason: ReasonApproved,
		},
		"approve: a Pull cluster's agent renewing with its current certificate": {
			csr: makeCSR(t, "renew").Renewal("member1").Obj(), approve: true, wantReason: ReasonApproved, msg: "renewing",
		},
		"1. ignore: an agent's name without the agents' group": {
			csr: makeCSR(t, "nogroup").AskedBy(AgentUser("member1"), "system:authenticated").Obj(), wantReason: ReasonNotAgentRequest,
		},
		"1. ignore: the agents' group without an agent's name": {
			csr: makeCSR(t, "noname").AskedBy("alice", AgentsGroup, "system:authenticated").Obj(), wantReason: ReasonNotAgentRequest,
		},
		"1. ignore: another signer": {
			csr: makeCSR(t, "kubelet").Signer(certificatesv1.KubeAPIServerClientKubeletSignerName).Obj(), wantReason: ReasonNotAgentRequest,
		},
		"1. ignore: a requester that is no Lifeboat bootstrap token": {
			csr: makeCSR(t, "user").Groups("system:authenticated", "system:bootstrappers").Obj(), wantReason: ReasonNotAgentRequest,
		},
		"2. ignore: already approved": {
			csr: makeCSR(t, "a").Condition(certificatesv1.CertificateApproved).Obj(), wantReason: ReasonAlreadyDecided,
		},
		"2. ignore: already denied, even if it would pass": {
			csr: makeCSR(t, "d").Condition(certificatesv1.CertificateDenied).Obj(), wantReason: ReasonAlreadyDecided,
		},
		"3. deny: not PEM": {
			csr: makeCSR(t, "garbage").Request([]byte("hello")).Obj(), deny: true, wantReason: ReasonInvalidRequest,
		},
		"3. deny: a signature that does not verify": {
			csr: makeCSR(t, "forged").Request(forged).Obj(), deny: true, wantReason: ReasonInvalidRequest, msg: "not signed by its key",
		},
		"4. deny: a common name that is not an agent's": {
			csr:  makeCSR(t, "admin").Request(requestPEM(t, "admin", []string{AgentsGroup}, nil)).Obj(),
			deny: true, wantReason: ReasonSubjectNotAllowed, msg: `"admin"`,
		},
		"4. deny: an agent name that is no cluster name": {
			csr:  makeCSR(t, "bad").Request(requestPEM(t, AgentUser("Member_1"), []string{AgentsGroup}, nil)).Obj(),
			deny: true, wantReason: ReasonSubjectNotAllowed,
		},
		"5. deny: a token made for another cluster": {
			csr:  makeCSR(t, "other").Request(requestPEM(t, AgentUser("member2"), []string{AgentsGroup}, nil)).Obj(),
			deny: true, wantReason: ReasonRequesterNotForCluster, msg: ClusterBootstrappersGroup("member2"),
		},
		"5. deny: an agent renewing another cluster's certificate": {
			csr:  makeCSR(t, "steal").Renewal("member2").Obj(),
			deny: true, wantReason: ReasonRequesterNotForCluster, msg: "may renew only its own",
		},
		"6. deny: a renewal asking for system:masters": {
			csr:  makeCSR(t, "renew-masters").Renewal("member1").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup, "system:masters"}, nil)).Obj(),
			deny: true, wantReason: ReasonSubjectNotAllowed, msg: "system:masters",
		},
		"6. deny: system:masters asked for": {
			csr:  makeCSR(t, "masters").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup, "system:masters"}, nil)).Obj(),
			deny: true, wantReason: ReasonSubjectNotAllowed, msg: "system:masters",
		},
		"6. deny: no organization": {
			csr:  makeCSR(t, "noorg").Request(requestPEM(t, AgentUser("member1"), nil, nil)).Obj(),
			deny: true, wantReason: ReasonSubjectNotAllowed,
		},
		"7. deny: a DNS name": {
			csr: makeCSR(t, "dns").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, func(r *x509.CertificateRequest) {
				r.DNSNames = []string{"kubernetes.default"}
			})).Obj(),
			deny: true, wantReason: ReasonSANsNotAllowed,
		},
		"7. deny: an IP address": {
			csr: makeCSR(t, "ip").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, func(r *x509.CertificateRequest) {
				r.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")}
			})).Obj(),
			deny: true, wantReason: ReasonSANsNotAllowed,
		},
		"7. deny: an email address": {
			csr: makeCSR(t, "email").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, func(r *x509.CertificateRequest) {
				r.EmailAddresses = []string{"a@example.com"}
			})).Obj(),
			deny: true, wantReason: ReasonSANsNotAllowed,
		},
		"7. deny: a URI": {
			csr: makeCSR(t, "uri").Request(requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, func(r *x509.CertificateRequest) {
				r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}}
			})).Obj(),
			deny: true, wantReason: ReasonSANsNotAllowed,
		},
		"8. deny: server auth": {
			csr:  makeCSR(t, "server").Usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth).Obj(),
			deny: true, wantReason: ReasonUsagesNotAllowed, msg: "server auth",
		},
		"8. deny: no client auth": {
			csr:  makeCSR(t, "noclient").Usages(certificatesv1.UsageDigitalSignature).Obj(),
			deny: true, wantReason: ReasonUsagesNotAllowed, msg: "client auth",
		},
		"9. deny: no such Cluster": {
			csr: makeCSR(t, "gone").Obj(), lookup: lookupOf(), deny: true, wantReason: ReasonClusterNotFound,
		},
		"9. deny: a Push cluster": {
			csr: makeCSR(t, "push").Obj(), lookup: lookupOf(makeCluster("member1", clusterv1alpha1.Push)),
			deny: true, wantReason: ReasonClusterNotPull, msg: "cluster member1 is joined in Push mode; unjoin it first or choose another name",
		},
		"9. deny: a renewal for a cluster since joined in Push mode": {
			csr: makeCSR(t, "renew-push").Renewal("member1").Obj(), lookup: lookupOf(makeCluster("member1", clusterv1alpha1.Push)),
			deny: true, wantReason: ReasonClusterNotPull,
		},
		"9. deny: a renewal for a Cluster that is gone": {
			csr: makeCSR(t, "renew-gone").Renewal("member1").Obj(), lookup: lookupOf(), deny: true, wantReason: ReasonClusterNotFound,
		},
		"9. deny: a Cluster being deleted": {
			csr: makeCSR(t, "deleting").Obj(), lookup: lookupOf(deleting), deny: true, wantReason: ReasonClusterDeleting,
		},
		"10. deny: a renewal whose requester may not renew (a name and group from other credentials)": {
			csr: makeCSR(t, "renew-forbidden").Renewal("member1").Obj(), authorize: refuseRenewals,
			deny: true, wantReason: ReasonRenewalNotAllowed, msg: "certificatesigningrequests/selfagentclient",
		},
		"10. no decision: the renewal's authorization cannot be asked": {
			csr: makeCSR(t, "renew-later").Renewal("member1").Obj(),
			authorize: func(*certificatesv1.CertificateSigningRequest) (bool, error) {
				return false, errors.New("connection refused")
			},
			wantReason: ReasonAuthorizationFailed,
		},
		"10. a registration asks no authorization": {
			csr: makeCSR(t, "register").Obj(), authorize: refuseRenewals, approve: true, wantReason: ReasonApproved,
		},
		"9. no decision: the Cluster cannot be read": {
			csr: makeCSR(t, "later").Obj(),
			lookup: func(string) (*clusterv1alpha1.Cluster, error) {
				return nil, errors.New("connection refused")
			},
			wantReason: ReasonClusterLookupFailed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lookup := tc.lookup
			if lookup == nil {
				lookup = lookupOf(pull)
			}
			authorize := tc.authorize
			if authorize == nil {
				authorize = allowRenewals
			}
			approve, deny, reason, msg := Decide(tc.csr, lookup, authorize)
			if approve != tc.approve || deny != tc.deny || reason != tc.wantReason {
				t.Fatalf("Decide = approve %v, deny %v, %s (%s); want approve %v, deny %v, %s", approve, deny, reason, msg, tc.approve, tc.deny, tc.wantReason)
			}
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q lacks %q", msg, tc.msg)
			}
		})
	}
}

// The request register sends is one Decide approves.
func TestDecideApprovesWhatRegisterSends(t *testing.T) {
	csr, err := agentCSR("member1", newKey(t), DefaultCertificateDuration)
	if err != nil {
		t.Fatal(err)
	}
	csr.Spec.Groups = []string{"system:bootstrappers", BootstrappersGroup, ClusterBootstrappersGroup("member1")}
	if approve, _, reason, msg := Decide(csr, lookupOf(makeCluster("member1", clusterv1alpha1.Pull)), refuseRenewals); !approve {
		t.Fatalf("not approved: %s: %s", reason, msg)
	}
	if got := *csr.Spec.ExpirationSeconds; got != 365*24*3600 {
		t.Errorf("expirationSeconds = %d, want a year", got)
	}
	if !strings.HasPrefix(csr.GenerateName, "lifeboat-agent-member1-") {
		t.Errorf("generateName = %q", csr.GenerateName)
	}
}
