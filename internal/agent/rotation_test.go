package agent

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// testCA signs client certificates.
type testCA struct {
	cert   *x509.Certificate
	key    crypto.Signer
	serial atomic.Int64
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lifeboat-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key}
	ca.serial.Store(1)
	return ca
}

// sign signs a client certificate for pub.
func (ca *testCA) sign(t *testing.T, cn string, pub crypto.PublicKey, notBefore time.Time, validity time.Duration) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: []string{bootstrap.AgentsGroup}},
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// issue makes a key and a certificate for it.
func (ca *testCA) issue(t *testing.T, cn string, notBefore time.Time, validity time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ca.sign(t, cn, &key.PublicKey, notBefore, validity), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

func TestRenewalTime(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	year := 365 * 24 * time.Hour
	cases := map[string]struct {
		validity         time.Duration
		fraction, jitter float64
		want             time.Duration // after from
	}{
		"the default, no jitter drawn low":  {validity: year, fraction: 0.8, jitter: 0, want: time.Duration(float64(year) * 0.72)},
		"the default, the middle":           {validity: year, fraction: 0.8, jitter: 0.5, want: time.Duration(float64(year) * 0.8)},
		"the default, jitter drawn high":    {validity: year, fraction: 0.8, jitter: 0.999999, want: time.Duration(float64(year) * 0.8 * (0.9 + 0.2*0.999999))},
		"the most, an eighth before expiry": {validity: time.Hour, fraction: MaxRenewFraction, jitter: 0.999999, want: time.Duration(float64(time.Hour) * 0.8 * (0.9 + 0.2*0.999999))},
		"a small fraction of ten minutes":   {validity: 10 * time.Minute, fraction: 0.05, jitter: 0.5, want: 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := RenewalTime(from, from.Add(tc.validity), tc.fraction, tc.jitter)
			if d := got.Sub(from); d != tc.want.Truncate(time.Second) {
				t.Errorf("renewed %s after issue, want %s", d, tc.want)
			}
			if !got.Before(from.Add(tc.validity)) {
				t.Errorf("renewed at %s, not before expiry %s", got, from.Add(tc.validity))
			}
		})
	}
}

func TestRenewalDuration(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := func(validity time.Duration) *x509.Certificate {
		return &x509.Certificate{NotBefore: from, NotAfter: from.Add(validity)}
	}
	cases := map[string]struct {
		cert       *x509.Certificate
		configured time.Duration
		want       time.Duration
	}{
		"configured":                      {cert: cert(time.Hour), configured: 48 * time.Hour, want: 48 * time.Hour},
		"the current validity":            {cert: cert(365 * 24 * time.Hour), want: 365 * 24 * time.Hour},
		"whole minutes":                   {cert: cert(15*time.Minute + 30*time.Second), want: 15 * time.Minute},
		"at least what a request can ask": {cert: cert(5 * time.Minute), want: 10 * time.Minute},
		"at most what a request can ask":  {cert: cert(200 * 365 * 24 * time.Hour), want: bootstrap.MaxCertificateDuration},
	}
	for name, tc := range cases {
		if got := RenewalDuration(tc.cert, tc.configured); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
}

// agentKubeconfig is a kubeconfig like register's, with a second context
// whose user must be left alone.
func agentKubeconfig(t *testing.T, server string, caPEM, certPEM, keyPEM []byte) []byte {
	t.Helper()
	data, err := bootstrap.AgentKubeconfig(server, caPEM, certPEM, keyPEM, "edge1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	other := *cfg.AuthInfos["lifeboat-agent-edge1"]
	cfg.AuthInfos["other"] = &other
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "lifeboat", AuthInfo: "other"}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWithCertificate(t *testing.T) {
	ca := newTestCA(t)
	oldCert, oldKey := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	newCert, newKey := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	kubeconfig := agentKubeconfig(t, "https://127.0.0.1:6443", ca.pem(), oldCert, oldKey)
	out, err := WithCertificate(kubeconfig, "", newCert, newKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.AuthInfos["lifeboat-agent-edge1"]; string(u.ClientCertificateData) != string(newCert) || string(u.ClientKeyData) != string(newKey) {
		t.Errorf("the current context's user was not given the new certificate")
	}
	if u := cfg.AuthInfos["other"]; string(u.ClientCertificateData) != string(oldCert) {
		t.Errorf("another context's user was changed")
	}
	if c := cfg.Clusters["lifeboat"]; c.Server != "https://127.0.0.1:6443" || string(c.CertificateAuthorityData) != string(ca.pem()) || cfg.CurrentContext != "edge1" {
		t.Errorf("the server, CA or current context changed: %+v, current %q", c, cfg.CurrentContext)
	}
	if out, err := WithCertificate(kubeconfig, "other", newCert, newKey); err != nil {
		t.Fatal(err)
	} else if cfg, _ := clientcmd.Load(out); string(cfg.AuthInfos["other"].ClientCertificateData) != string(newCert) ||
		string(cfg.AuthInfos["lifeboat-agent-edge1"].ClientCertificateData) != string(oldCert) {
		t.Errorf("--context other: the wrong user was given the certificate")
	}
	for name, tc := range map[string]struct {
		kubeconfig []byte
		context    string
		want       string
	}{
		"no such context":  {kubeconfig: kubeconfig, context: "gone", want: `no context "gone"`},
		"not a kubeconfig": {kubeconfig: []byte("{"), want: "reading the kubeconfig"},
	} {
		if _, err := WithCertificate(tc.kubeconfig, tc.context, newCert, newKey); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
}

// A swap moves the next request, on a connection opened before it, to the
// new certificate: the connections made with the old one are closed.
func TestCredentialsSwapMovesConnections(t *testing.T) {
	ca := newTestCA(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/watch" {
			// A watch: open until the client goes.
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		mu.Lock()
		seen = append(seen, r.TLS.PeerCertificates[0].SerialNumber.String())
		mu.Unlock()
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	first, firstKey := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	second, secondKey := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	creds, err := NewCredentials(first, firstKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := creds.Config(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA, CertData: first, KeyData: firstKey}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A request racing the swap may find its connection closed, as after
	// any dropped connection: clients try again.
	get := func() {
		t.Helper()
		var err error
		for range 3 {
			var resp *http.Response
			if resp, err = client.Get(srv.URL + "/version"); err == nil {
				_ = resp.Body.Close()
				return
			}
		}
		t.Fatal(err)
	}
	get()
	get()
	watch, err := client.Get(srv.URL + "/watch")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	watchEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, watch.Body)
		watchEnded <- err
	}()
	firstSerial := creds.Certificate().SerialNumber.String()
	if err := creds.Swap(second, secondKey); err != nil {
		t.Fatal(err)
	}
	// The watch, on a connection made with the old certificate, ends, so
	// that it is made again with the new one.
	select {
	case <-watchEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("a watch opened before the swap is still open 10 s after it")
	}
	get()
	secondSerial := creds.Certificate().SerialNumber.String()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{firstSerial, firstSerial, secondSerial}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("the server saw certificates %v, want %v", seen, want)
	}
	if _, err := creds.Config(&rest.Config{Host: srv.URL, Transport: http.DefaultTransport}); err == nil {
		t.Errorf("a configuration with its own transport was accepted")
	}
}

var csrResource = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}

// signingClient is a control plane's CSR API that approves and signs each
// request with ca at its first read, valid from now() for the validity asked,
// recording the requests. With backdate, a certificate starts that much
// before now() and ends the validity asked after it, as Kubernetes' signer
// issues certificates shorter than 8 hours.
func signingClient(t *testing.T, ca *testCA, now func() time.Time, backdate time.Duration) (*kubefake.Clientset, *[]*certificatesv1.CertificateSigningRequest) {
	t.Helper()
	cs := kubefake.NewClientset()
	var created []*certificatesv1.CertificateSigningRequest
	cs.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		csr.Name = csr.GenerateName + "x" + big.NewInt(int64(len(created))).String()
		created = append(created, csr.DeepCopy())
		return false, nil, nil
	})
	cs.PrependReactor("get", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := cs.Tracker().Get(csrResource, "", a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		csr := obj.(*certificatesv1.CertificateSigningRequest).DeepCopy()
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = ca.sign(t, req.Subject.CommonName, req.PublicKey, now().Add(-backdate), time.Duration(*csr.Spec.ExpirationSeconds)*time.Second+backdate)
		return true, csr, nil
	})
	return cs, &created
}

// flakyStore fails every save before failUntil by clock.
type flakyStore struct {
	clock     *clocktesting.FakeClock
	failUntil time.Time
	tries     int
	saved     [][]byte
}

func (s *flakyStore) Save(_ context.Context, certPEM, _ []byte) error {
	s.tries++
	if s.clock.Now().Before(s.failUntil) {
		return errors.New("disk full")
	}
	s.saved = append(s.saved, certPEM)
	return nil
}
func (s *flakyStore) String() string { return "flaky" }

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func TestRotatorRenew(t *testing.T) {
	ca := newTestCA(t)
	oldCert, oldKey := ca.issue(t, bootstrap.AgentUser("edge1"), time.Now().Add(-time.Hour), 2*time.Hour)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent-kubeconfig")
	if err := os.WriteFile(path, agentKubeconfig(t, "https://127.0.0.1:6443", ca.pem(), oldCert, oldKey), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := NewCredentials(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	oldSerial := creds.Certificate().SerialNumber.String()
	cs, created := signingClient(t, ca, time.Now, 0)
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "expiry"})
	r := &Rotator{Credentials: creds, Client: cs, Cluster: "edge1", Fraction: DefaultRenewFraction,
		Expiry: gauge, Clock: clocktesting.NewFakeClock(time.Now()), Timeout: 10 * time.Second}
	issued, err := r.Renew(context.Background(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	store := &KubeconfigFile{Path: path}
	if err := store.Save(context.Background(), issued.CertPEM, issued.KeyPEM); err != nil {
		t.Fatal(err)
	}
	got := creds.Certificate()
	if got.SerialNumber.String() == oldSerial || got.Subject.CommonName != bootstrap.AgentUser("edge1") {
		t.Fatalf("holds serial %s for %q, want a new certificate for the agent", got.SerialNumber, got.Subject.CommonName)
	}
	if len(*created) != 1 || *(*created)[0].Spec.ExpirationSeconds != int32((2*time.Hour)/time.Second) {
		t.Errorf("requests %v, want one asking for the current validity, 2h", *created)
	}
	if v := gaugeValue(t, gauge); v != float64(got.NotAfter.Unix()) {
		t.Errorf("expiry gauge %v, want %d", v, got.NotAfter.Unix())
	}
	loaded, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := bootstrap.ParseCertificates(loaded.AuthInfos["lifeboat-agent-edge1"].ClientCertificateData)
	if err != nil || kept[0].SerialNumber.Cmp(got.SerialNumber) != 0 {
		t.Errorf("the kubeconfig holds %v (%v), want serial %s", kept, err, got.SerialNumber)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the kubeconfig's mode: %v, %v", info, err)
	}

	// A failed renewal leaves the current certificate in place.
	denied := kubefake.NewClientset()
	denied.PrependReactor("create", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "", errors.New("no"))
	})
	r.Client = denied
	_, err = r.Renew(context.Background(), logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "lifeboat token create --cluster edge1") || !strings.Contains(err.Error(), "unjoined") {
		t.Errorf("a forbidden request: %v, want the error to say how to grant it", err)
	}
	if creds.Certificate().SerialNumber.Cmp(got.SerialNumber) != 0 {
		t.Errorf("a failed renewal changed the certificate")
	}
}

// rotatorRun runs r.Start on a fake clock for span, a step at a time, and
// checks at each step that the certificate held has not expired.
func rotatorRun(t *testing.T, r *Rotator, clk *clocktesting.FakeClock, span, step time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for end := clk.Now().Add(span); clk.Now().Before(end); {
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatalf("the rotator did not sleep again at %s", clk.Now())
			}
			time.Sleep(time.Millisecond)
		}
		if c := r.Credentials.Certificate(); !c.NotAfter.After(clk.Now()) {
			t.Fatalf("at %s the certificate held expired at %s", clk.Now(), c.NotAfter)
		}
		clk.Step(step)
	}
}

// fakeClockRotator is a Rotator on clk holding a one-hour certificate issued
// age ago, whose requests are signed valid from signerNow(), backdated by
// backdate.
func fakeClockRotator(t *testing.T, clk *clocktesting.FakeClock, age time.Duration, signerNow func() time.Time, backdate time.Duration) (*Rotator, *[]*certificatesv1.CertificateSigningRequest) {
	t.Helper()
	ca := newTestCA(t)
	cert, key := ca.issue(t, bootstrap.AgentUser("edge1"), clk.Now().Add(-age), time.Hour)
	creds, err := NewCredentials(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	cs, created := signingClient(t, ca, signerNow, backdate)
	return &Rotator{Credentials: creds, Client: cs, Cluster: "edge1", Fraction: DefaultRenewFraction,
		Clock: clk, Jitter: func() float64 { return 0.5 }, Timeout: 10 * time.Second}, created
}

// A store that keeps failing holds no renewal back: the certificates go on
// being renewed and used, and saving is tried again meanwhile; once the
// store works, the certificate held is kept.
func TestRotatorRenewsWhileTheStoreFails(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, created := fakeClockRotator(t, clk, 50*time.Minute, clk.Now, 0)
	store := &flakyStore{clock: clk, failUntil: clk.Now().Add(4 * time.Hour)}
	r.Store = store
	creds := r.Credentials
	rotatorRun(t, r, clk, 4*time.Hour+10*time.Minute, time.Minute)
	// Due at once, then every 48 minutes of a one-hour certificate.
	if n := len(*created); n < 5 || n > 6 {
		t.Errorf("%d renewals in 4 hours 10 minutes, want 5 or 6 (one at once, then every 48 minutes)", n)
	}
	if store.tries-len(store.saved) < 10 {
		t.Errorf("the store failed %d times in 4 hours, want it tried again while it fails", store.tries-len(store.saved))
	}
	if len(store.saved) == 0 || string(store.saved[len(store.saved)-1]) != string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: creds.Certificate().Raw})) {
		t.Errorf("the certificate held was not kept once the store worked (%d saves)", len(store.saved))
	}
}

// A signer whose clock is behind the agent's issues certificates the agent
// finds due at once: the next renewal still waits a tenth of the validity.
func TestRotatorPausesAfterARenewal(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	behind := func() time.Time { return clk.Now().Add(-50 * time.Minute) }
	r, created := fakeClockRotator(t, clk, 55*time.Minute, behind, 0)
	rotatorRun(t, r, clk, 30*time.Minute, time.Minute)
	if n := len(*created); n < 4 || n > 6 {
		t.Errorf("%d renewals in 30 minutes, want one every 6 minutes (a tenth of the validity)", n)
	}
}

// A signer that backdates short certificates returns each one 5 minutes
// longer than asked: renewals keep asking for the validity the first one
// did, so that the certificates do not grow by 5 minutes each time.
func TestRotatorAsksTheSameValidityEachTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, created := fakeClockRotator(t, clk, 50*time.Minute, clk.Now, 5*time.Minute)
	rotatorRun(t, r, clk, 4*time.Hour, time.Minute)
	if len(*created) < 3 {
		t.Fatalf("%d renewals in 4 hours of a one-hour certificate, want several", len(*created))
	}
	for i, csr := range *created {
		if got := time.Duration(*csr.Spec.ExpirationSeconds) * time.Second; got != time.Hour {
			t.Errorf("renewal %d asked for %s, want 1h0m0s, the validity of the certificate held at the first", i+1, got)
		}
	}
	if c := r.Credentials.Certificate(); c.NotAfter.Sub(c.NotBefore) != time.Hour+5*time.Minute {
		t.Errorf("the certificate held is valid for %s, want 1h5m0s (an hour, backdated 5 minutes)", c.NotAfter.Sub(c.NotBefore))
	}
}

func TestKubeconfigSecret(t *testing.T) {
	ca := newTestCA(t)
	oldCert, oldKey := ca.issue(t, bootstrap.AgentUser("edge1"), time.Now(), time.Hour)
	newCert, newKey := ca.issue(t, bootstrap.AgentUser("edge1"), time.Now(), 2*time.Hour)
	cs := kubefake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lifeboat-system", Name: "lifeboat-agent-kubeconfig"},
		Data:       map[string][]byte{KubeconfigSecretKey: agentKubeconfig(t, "https://cp:6443", ca.pem(), oldCert, oldKey), "other": []byte("kept")},
	})
	s := &KubeconfigSecret{Secrets: cs.CoreV1(), Namespace: "lifeboat-system", Name: "lifeboat-agent-kubeconfig"}
	if rc, err := s.Load(context.Background()); err != nil || string(rc.CertData) != string(oldCert) || string(rc.KeyData) != string(oldKey) || rc.Host != "https://cp:6443" {
		t.Fatalf("Load before saving: %v, not the registered kubeconfig", err)
	}
	if err := s.Save(context.Background(), newCert, newKey); err != nil {
		t.Fatal(err)
	}
	if rc, err := s.Load(context.Background()); err != nil || string(rc.CertData) != string(newCert) || string(rc.KeyData) != string(newKey) {
		t.Fatalf("Load after saving: %v, not the renewed certificate", err)
	}
	secret, err := cs.CoreV1().Secrets("lifeboat-system").Get(context.Background(), "lifeboat-agent-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["other"]) != "kept" {
		t.Errorf("another key of the Secret was changed")
	}
	gone := &KubeconfigSecret{Secrets: cs.CoreV1(), Namespace: "lifeboat-system", Name: "gone"}
	if err := gone.Save(context.Background(), newCert, newKey); err == nil || !strings.Contains(err.Error(), "Secret lifeboat-system/gone") {
		t.Errorf("saving to a missing Secret: %v", err)
	}
}

func TestKubeconfigFileWritable(t *testing.T) {
	dir := t.TempDir()
	f := &KubeconfigFile{Path: filepath.Join(dir, "kubeconfig")}
	if err := f.Writable(); err != nil {
		t.Errorf("a writable directory: %v", err)
	}
	if os.Getuid() == 0 {
		t.Skip("root writes to read-only directories")
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	if err := f.Writable(); err == nil {
		t.Errorf("a read-only directory was found writable")
	}
}

func TestLaterCertificate(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	fileCert, fileKey := ca.issue(t, bootstrap.AgentUser("edge1"), now.Add(-time.Hour), 2*time.Hour)
	creds, err := NewCredentials(fileCert, fileKey)
	if err != nil {
		t.Fatal(err)
	}
	cp := &rest.Config{Host: "https://cp:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem(), CertData: fileCert, KeyData: fileKey}}
	kept := func(edit func(*rest.Config), cn string, from time.Time, validity time.Duration) *rest.Config {
		c, k := ca.issue(t, cn, from, validity)
		rc := &rest.Config{Host: cp.Host, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem(), CertData: c, KeyData: k}}
		if edit != nil {
			edit(rc)
		}
		return rc
	}
	agent := bootstrap.AgentUser("edge1")
	cases := map[string]struct {
		kept    *rest.Config
		used    bool
		because string
	}{
		"renewed, later":            {kept: kept(nil, agent, now, 2*time.Hour), used: true},
		"the same or earlier":       {kept: kept(nil, agent, now.Add(-90*time.Minute), 2*time.Hour)},
		"another cluster's agent":   {kept: kept(nil, bootstrap.AgentUser("edge2"), now, 2*time.Hour), because: `not "system:lifeboat:agent:edge1"`},
		"expired":                   {kept: kept(nil, agent, now.Add(-3*time.Hour), time.Hour), because: "valid from"},
		"not valid yet":             {kept: kept(nil, agent, now.Add(time.Hour), 2*time.Hour), because: "valid from"},
		"another control plane":     {kept: kept(func(c *rest.Config) { c.Host = "https://other:6443" }, agent, now, 2*time.Hour), because: "another control plane"},
		"another CA":                {kept: kept(func(c *rest.Config) { c.CAData = newTestCA(t).pem() }, agent, now, 2*time.Hour), because: "another control plane"},
		"no client certificate":     {kept: kept(func(c *rest.Config) { c.CertData, c.KeyData, c.BearerToken = nil, nil, "t" }, agent, now, 2*time.Hour), because: "no usable client certificate"},
		"a key that does not match": {kept: kept(func(c *rest.Config) { c.KeyData = fileKey }, agent, now, 2*time.Hour), because: "certificate and key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, why := laterCertificate("edge1", cp, creds, tc.kept, now)
			if (got != nil) != tc.used || !strings.Contains(why, tc.because) || (tc.because == "" && why != "") {
				t.Errorf("used %v (%q), want used %v because %q", got != nil, why, tc.used, tc.because)
			}
		})
	}
}
