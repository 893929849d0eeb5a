package bootstrap

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// testCA is a CA that signs serving and client certificates in tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// sign issues a certificate for pub from tmpl.
func (ca *testCA) sign(t *testing.T, tmpl *x509.Certificate, pub crypto.PublicKey) *x509.Certificate {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// servingCert is a serving certificate for 127.0.0.1 signed by ca, with
// the chain the server sends: the leaf, then the CA when withCA.
func (ca *testCA) servingCert(t *testing.T, withCA bool) tls.Certificate {
	t.Helper()
	key := newKey(t)
	leaf := ca.sign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "test-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}, &key.PublicKey)
	chain := [][]byte{leaf.Raw}
	if withCA {
		chain = append(chain, ca.cert.Raw)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// tlsServer serves handler over TLS with cert; it is closed with the test.
func tlsServer(t *testing.T, cert tls.Certificate, handler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	// DiscoverCA hangs up after the handshake; that is no error here.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// requestPEM is a PEM certificate request for subject, changed by mutate.
func requestPEM(t *testing.T, cn string, orgs []string, mutate func(*x509.CertificateRequest)) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}
	if mutate != nil {
		mutate(tmpl)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// csrWrapper builds CertificateSigningRequests for tests; by default one
// an agent of member1 sends with a token made for member1.
type csrWrapper struct {
	certificatesv1.CertificateSigningRequest
}

func makeCSR(t *testing.T, name string) *csrWrapper {
	return &csrWrapper{certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t, AgentUser("member1"), []string{AgentsGroup}, nil),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   "system:bootstrap:abcdef",
			Groups:     []string{"system:bootstrappers", BootstrappersGroup, ClusterBootstrappersGroup("member1"), "system:authenticated"},
		},
	}}
}

func (w *csrWrapper) Request(pemData []byte) *csrWrapper { w.Spec.Request = pemData; return w }
func (w *csrWrapper) Signer(s string) *csrWrapper        { w.Spec.SignerName = s; return w }
func (w *csrWrapper) Groups(g ...string) *csrWrapper     { w.Spec.Groups = g; return w }

// AskedBy sets the requester: user in groups.
func (w *csrWrapper) AskedBy(user string, groups ...string) *csrWrapper {
	w.Spec.Username, w.Spec.Groups = user, groups
	return w
}

// Renewal makes the request one asked by cluster's agent with its
// current certificate.
func (w *csrWrapper) Renewal(cluster string) *csrWrapper {
	return w.AskedBy(AgentUser(cluster), AgentsGroup, "system:authenticated")
}
func (w *csrWrapper) Usages(u ...certificatesv1.KeyUsage) *csrWrapper {
	w.Spec.Usages = u
	return w
}
func (w *csrWrapper) Condition(c certificatesv1.RequestConditionType) *csrWrapper {
	w.Status.Conditions = append(w.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
	return w
}
func (w *csrWrapper) Obj() *certificatesv1.CertificateSigningRequest {
	return &w.CertificateSigningRequest
}

// makeCluster is a Cluster in mode.
func makeCluster(name string, mode clusterv1alpha1.ClusterSyncMode) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: mode}}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeClient is a fake control plane holding objs.
func fakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&certificatesv1.CertificateSigningRequest{}, &clusterv1alpha1.Cluster{}).Build()
}
