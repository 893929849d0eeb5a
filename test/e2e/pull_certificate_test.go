//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// pullCertificateDuration is the validity of the certificate the pull
// member's agent is registered with again, the least a request can ask;
// the agent renews it (and asks the same) after about 38 % of its
// validity, which kube-controller-manager backdates by 5 minutes: the
// first renewal 8 to 76 s after registration, then one every 1.5 minutes
// (a tenth of the validity, the least between two renewals).
const pullCertificateDuration = 10 * time.Minute

// pullCertificateArgs are the agent's renewal flags in TestPullMode.
var pullCertificateArgs = []string{
	"--certificate-renew-fraction=0.38", "--certificate-duration=" + pullCertificateDuration.String(),
}

// pullAgentKubeconfig is where the environment registered the pull
// member's agent, the file its agent runs with.
func (e *cfEnv) pullAgentKubeconfig() string {
	return filepath.Join(e.dir, pullMember, "agent-kubeconfig")
}

// agentCertificate is the client certificate of the agent's kubeconfig at
// path.
func agentCertificate(t *testing.T, path string) (*x509.Certificate, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cert, err := kubeconfigCertificate(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cert, nil
}

// kubeconfigCertificate is the client certificate of the current context's
// user of a kubeconfig.
func kubeconfigCertificate(kubeconfig []byte) (*x509.Certificate, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return nil, fmt.Errorf("no user for its current context %q", cfg.CurrentContext)
	}
	certs, err := bootstrap.ParseCertificates(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// pullShortCertificate registers the pull member's agent again, over the
// same path to the control plane, with a ten-minute certificate, and
// restarts it on it. It returns that certificate: the scenarios that follow
// run while the agent renews it, and pullCertificateRenewed checks the
// agent outlives it.
func pullShortCertificate(t *testing.T, e *cfEnv) *x509.Certificate {
	path := e.pullAgentKubeconfig()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	server := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
	token, hash := e.createToken(t, pullMember)
	if out, err := lifeboat(t, "register", server, "--token", token, "--discovery-token-ca-cert-hash", hash,
		"--cluster-name", pullMember, "--agent-kubeconfig", path, "--certificate-duration", pullCertificateDuration.String(), "--timeout", "60s"); err != nil {
		t.Fatalf("register with a %s certificate: %v\n%s", pullCertificateDuration, err, out)
	}
	registered, err := agentCertificate(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(registered.NotAfter); left > pullCertificateDuration+time.Minute {
		t.Fatalf("the registered certificate expires in %s, want about %s", left.Round(time.Second), pullCertificateDuration)
	}
	e.run(t, "env", "restart", pullMember+"-agent", "--state-dir", e.dir)
	e.waitReady(t, pullMember, metav1.ConditionTrue)
	return registered
}

// pullCertificateRenewed: the agent outlives the certificate it was
// registered with. By the time that certificate has expired, the agent has
// renewed its certificate with requests of its own identity (approved as
// renewals), kept the renewed one in its kubeconfig, and through the
// earlier scenarios' restarts and partitions still renews the cluster's
// Lease and applies a new workload, which the control plane would refuse
// from the expired certificate.
func pullCertificateRenewed(t *testing.T, e *cfEnv, registered *x509.Certificate) {
	if registered == nil {
		t.Skip("the agent was not registered with a short certificate")
	}
	cfEventually(t, pullCertificateDuration+2*time.Minute, describe("the registered certificate to expire (%s)", registered.NotAfter.UTC().Format(time.RFC3339)),
		func(context.Context) (bool, string, error) {
			return time.Now().After(registered.NotAfter.Add(5 * time.Second)), "expires " + registered.NotAfter.UTC().Format(time.RFC3339), nil
		})
	expired := time.Now()

	// The renewals: requests of the agent itself, approved as renewals.
	ctx := context.Background()
	csrs, err := e.cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var renewals []string
	for _, csr := range csrs.Items {
		if csr.Spec.Username != bootstrap.AgentUser(pullMember) || csr.CreationTimestamp.Time.Before(registered.NotBefore) {
			continue
		}
		approved := false
		for _, c := range csr.Status.Conditions {
			approved = approved || (c.Type == certificatesv1.CertificateApproved && c.Reason == bootstrap.ReasonApproved && strings.Contains(c.Message, "renewing"))
		}
		if !approved || len(csr.Status.Certificate) == 0 {
			t.Errorf("renewal request %s was not approved as a renewal and signed: %+v", csr.Name, csr.Status.Conditions)
		}
		renewals = append(renewals, csr.Name)
	}
	if len(renewals) < 2 {
		t.Fatalf("%d renewal requests from the agent since %s, want several", len(renewals), registered.NotBefore)
	}
	kept, err := agentCertificate(t, e.pullAgentKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if kept.SerialNumber.Cmp(registered.SerialNumber) == 0 || !kept.NotAfter.After(time.Now()) || kept.Subject.CommonName != bootstrap.AgentUser(pullMember) {
		t.Fatalf("the agent's kubeconfig holds serial %s for %q until %s; want a renewed, valid certificate for the agent", kept.SerialNumber, kept.Subject.CommonName, kept.NotAfter)
	}
	t.Logf("%d renewals while the registered certificate was valid; the kubeconfig's certificate is valid until %s", len(renewals), kept.NotAfter.UTC().Format(time.RFC3339))

	// The agent still renews the Lease and applies, with the certificate
	// it renewed.
	cfEventually(t, cfTimeout, "the cluster's Lease renewed after the registered certificate expired", func(ctx context.Context) (bool, string, error) {
		lease, err := e.cs.CoordinationV1().Leases(bootstrap.LeaseNamespace).Get(ctx, pullMember, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil {
			return false, "no renewal", err
		}
		return lease.Spec.RenewTime.After(expired), "renewed " + lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano), nil
	})
	ns := e.namespace(t, "pull-cert")
	e.apply(t, ns, cfDeployment("renewed", 1)+"\n---\n"+cfPinnedPolicy("renewed", byName("renewed"), pullMember, "", ""))
	if got := e.waitPlaced(t, ns, "renewed", 1, ""); got != pullMember {
		t.Fatalf("renewed placed on %s, want %s", got, pullMember)
	}
	if work := e.pullWork(t, ns, "renewed"); !meta.IsStatusConditionTrue(work.Status.Conditions, workv1alpha1.WorkApplied) {
		t.Errorf("Work %s: Applied is not True: %+v", work.Name, work.Status.Conditions)
	}
}
