package controllermanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lifeboat-dev/lifeboat/internal/metricsauth"
)

// parsedOptions returns the options as `lifeboat controller-manager args...`
// leaves them.
func parsedOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// Without flags, /healthz, /readyz and /metrics listen on a loopback
// address only: unauthenticated endpoints are not reachable from other
// machines unless an operator asks for it.
func TestDefaultServingAddressesAreLoopback(t *testing.T) {
	o := parsedOptions(t)
	m, err := o.metricsServerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if m.SecureServing || m.FilterProvider != nil {
		t.Errorf("metrics are secured by default (SecureServing %t, filter %t); loopback plain HTTP is the default", m.SecureServing, m.FilterProvider != nil)
	}
	for what, addr := range map[string]string{"metrics": m.BindAddress, "health probes": o.HealthProbeBindAddress} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s address %q: %v", what, addr, err)
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("%s listen on %q by default, want a loopback IP", what, addr)
		}
	}
}

func TestMetricsServerOptionsRefusesCertDirWithoutSecure(t *testing.T) {
	o := parsedOptions(t, "--metrics-cert-dir", t.TempDir())
	if _, err := o.metricsServerOptions(); err == nil {
		t.Fatal("--metrics-cert-dir without --metrics-secure was accepted; the directory would be silently ignored")
	}
}

// A --metrics-cert-dir without a certificate in it is an error: controller-
// runtime would otherwise fall back to a self-signed certificate unnoticed.
func TestMetricsServerOptionsRefusesEmptyCertDir(t *testing.T) {
	o := parsedOptions(t, "--metrics-secure", "--metrics-cert-dir", t.TempDir())
	if _, err := o.metricsServerOptions(); err == nil {
		t.Fatal("an empty --metrics-cert-dir was accepted")
	}
}

// fakeReviewer plays the control plane's API server for the metrics filter:
// it authenticates two tokens (TokenReview) and allows only reader to get
// /metrics (SubjectAccessReview).
type fakeReviewer struct {
	tokenReviews, accessReviews int
}

const (
	readerToken   = "reader-token"
	strangerToken = "stranger-token"
)

func (f *fakeReviewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		f.tokenReviews++
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch tr.Spec.Token {
		case readerToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "reader"}}
		case strangerToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "stranger"}}
		}
		writeJSON(w, &tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		f.accessReviews++
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "reader" && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		writeJSON(w, &sar)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// startMetricsServer runs the metrics server with o's options on a free
// loopback port, against the fake control plane at apiServer, and returns
// its address.
func startMetricsServer(t *testing.T, o *Options, apiServer string) string {
	t.Helper()
	opts, err := o.metricsServerOptions()
	if err != nil {
		t.Fatal(err)
	}
	opts.BindAddress = "127.0.0.1:0"
	cfg := &rest.Config{Host: apiServer}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(opts, cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	bound, ok := srv.(interface{ GetBindAddr() string })
	if !ok {
		t.Fatal("the metrics server does not tell its address")
	}
	var addr string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		addr = bound.GetBindAddr()
		return addr != "", nil
	}); err != nil {
		t.Fatalf("metrics server not listening: %v", err)
	}
	return addr
}

// scrape gets url with token ("" for none) and returns the status code and
// body.
func scrape(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// With --metrics-secure, /metrics answers only over TLS and only to a token
// the control plane authenticates for a user allowed to get /metrics.
func TestSecureMetricsRequireAnAuthorizedToken(t *testing.T) {
	reviewer := &fakeReviewer{}
	api := httptest.NewServer(reviewer)
	defer api.Close()
	addr := startMetricsServer(t, parsedOptions(t, "--metrics-secure"), api.URL)
	// The certificate is self-signed: only encryption is under test here.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test certificate
	}}
	url := "https://" + addr + "/metrics"

	cases := []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the control plane does not know", "forged", http.StatusUnauthorized},
		{"a known user without access to /metrics", strangerToken, http.StatusForbidden},
		{"a user allowed to get /metrics", readerToken, http.StatusOK},
	}
	for _, tc := range cases {
		code, body := scrape(t, c, url, tc.token)
		if code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, firstLine(body), tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(body, "# TYPE ") {
			t.Errorf("%s: the answer is not Prometheus metrics: %q", tc.name, firstLine(body))
		}
		if tc.want != http.StatusOK && strings.Contains(body, "# TYPE ") {
			t.Errorf("%s: metrics were served", tc.name)
		}
	}
	if reviewer.tokenReviews == 0 || reviewer.accessReviews == 0 {
		t.Errorf("the control plane was asked %d TokenReviews and %d SubjectAccessReviews; want both", reviewer.tokenReviews, reviewer.accessReviews)
	}

	// Plain HTTP gets nothing.
	if code, body := scrape(t, &http.Client{Timeout: 10 * time.Second}, "http://"+addr+"/metrics", readerToken); code == http.StatusOK {
		t.Errorf("plain HTTP was served: %q", firstLine(body))
	}
}

// With --metrics-cert-dir, the server presents that certificate.
func TestSecureMetricsServeTheGivenCertificate(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := selfSignedPEM()
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(
		os.WriteFile(filepath.Join(dir, metricsauth.CertName), certPEM, 0o600),
		os.WriteFile(filepath.Join(dir, metricsauth.KeyName), keyPEM, 0o600),
	); err != nil {
		t.Fatal(err)
	}
	want, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(&fakeReviewer{})
	defer api.Close()
	addr := startMetricsServer(t, parsedOptions(t, "--metrics-secure", "--metrics-cert-dir", dir), api.URL)
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the certificate is compared below
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := conn.ConnectionState().PeerCertificates
	if len(got) == 0 || !got[0].Equal(mustLeaf(t, want)) {
		t.Fatal("the metrics server does not present the certificate of --metrics-cert-dir")
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func selfSignedPEM() ([]byte, []byte, error) {
	return certutil.GenerateSelfSignedCertKey("metrics.test", nil, nil)
}

func mustLeaf(t *testing.T, c tls.Certificate) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}
