package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

const testToken = "abcdef.0123456789abcdef"

// fakeAPIServer is the part of a control plane register talks to: it
// takes a CertificateSigningRequest with the bootstrap token, answers its
// reads as decide says, signing with ca, and serves the Cluster to the
// agent's certificate.
type fakeAPIServer struct {
	t        *testing.T
	ca       *testCA
	requests atomic.Int32
	// createStatus, when not 0, is the answer to the create.
	createStatus int
	// decide sets the status of the stored request before each read.
	decide func(csr *certificatesv1.CertificateSigningRequest)
	// reads counts the reads of the request.
	reads atomic.Int32

	mu  sync.Mutex
	csr *certificatesv1.CertificateSigningRequest
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	status := func(code int, reason metav1.StatusReason) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: string(reason)})
	}
	reply := func(code int, obj any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(obj)
	}
	switch {
	case r.URL.Path == csrs && r.Method == http.MethodPost:
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
			return
		}
		switch f.createStatus {
		case http.StatusUnauthorized:
			status(f.createStatus, metav1.StatusReasonUnauthorized)
			return
		case http.StatusForbidden:
			status(f.createStatus, metav1.StatusReasonForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var csr certificatesv1.CertificateSigningRequest
		if _, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, &csr); err != nil {
			f.t.Errorf("decoding the request (%s): %v", r.Header.Get("Content-Type"), err)
			status(http.StatusBadRequest, metav1.StatusReasonBadRequest)
			return
		}
		csr.Name = csr.GenerateName + "x7k2p"
		f.mu.Lock()
		f.csr = &csr
		f.mu.Unlock()
		reply(http.StatusCreated, &csr)
	case strings.HasPrefix(r.URL.Path, csrs+"/") && r.Method == http.MethodGet:
		f.reads.Add(1)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.decide != nil {
			f.decide(f.csr)
		}
		reply(http.StatusOK, f.csr)
	case r.URL.Path == "/apis/cluster.karmada.io/v1alpha1/clusters/member1" && r.Method == http.MethodGet:
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != AgentUser("member1") {
			status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
			return
		}
		reply(http.StatusOK, makeCluster("member1", clusterv1alpha1.Pull))
	default:
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	}
}

// approveAfter approves the request at the n-th read and signs it at the
// next one.
func (f *fakeAPIServer) approveAfter(n int32) func(*certificatesv1.CertificateSigningRequest) {
	return func(csr *certificatesv1.CertificateSigningRequest) {
		switch reads := f.reads.Load(); {
		case reads == n:
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved, Message: "ok"}}
		case reads > n && len(csr.Status.Certificate) == 0:
			block, _ := pem.Decode(csr.Spec.Request)
			req, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				f.t.Error(err)
				return
			}
			cert := f.ca.sign(f.t, &x509.Certificate{Subject: req.Subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, req.PublicKey)
			csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		}
	}
}

func startFakeAPIServer(t *testing.T, f *fakeAPIServer) (url string) {
	t.Helper()
	f.t = t
	if f.ca == nil {
		f.ca = newTestCA(t, "lifeboat-ca")
	}
	srv := tlsServer(t, f.ca.servingCert(t, true), f)
	// Ask for a client certificate so the agent's identity check can
	// present one; the bootstrap requests have none.
	srv.TLS.ClientAuth = tls.RequestClientCert
	return srv.URL
}

func registerOptions(url string, f *fakeAPIServer, dir string) RegisterOptions {
	return RegisterOptions{
		ControlPlaneURL: url,
		Token:           testToken,
		CAHashes:        []string{CAHash(f.ca.cert)},
		ClusterName:     "member1",
		KubeconfigPath:  filepath.Join(dir, "agent", "kubeconfig"),
		Timeout:         5 * time.Second,
		PollInterval:    5 * time.Millisecond,
	}
}

func TestRegister(t *testing.T) {
	f := &fakeAPIServer{}
	url := startFakeAPIServer(t, f)
	f.decide = f.approveAfter(2)
	o := registerOptions(url, f, t.TempDir())
	var lines []string
	o.Progress = func(l string) { lines = append(lines, l) }
	res, err := Register(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.CSR != "lifeboat-agent-member1-x7k2p" || !slices.Equal(res.CAHashes, []string{CAHash(f.ca.cert)}) || res.NotAfter.IsZero() {
		t.Errorf("result %+v", res)
	}
	if want := fmt.Sprintf("Pinned the control plane's CA %q (%s).", "lifeboat-ca", CAHash(f.ca.cert)); len(lines) == 0 || lines[0] != want {
		t.Errorf("progress %q, want it to start with %q", lines, want)
	}
	if len(lines) < 4 || !strings.Contains(lines[2], "Approved") {
		t.Errorf("progress %q", lines)
	}
	st, err := os.Stat(o.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", st.Mode().Perm())
	}
	cfg, err := clientcmd.LoadFromFile(o.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "member1" {
		t.Errorf("current context %q", cfg.CurrentContext)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != url || string(rc.CAData) != string(f.ca.pem()) || len(rc.CertData) == 0 || len(rc.KeyData) == 0 || rc.BearerToken != "" {
		t.Errorf("kubeconfig: host %s, CA %d bytes, cert %d, key %d, token %q", rc.Host, len(rc.CAData), len(rc.CertData), len(rc.KeyData), rc.BearerToken)
	}
	if entries, _ := os.ReadDir(filepath.Dir(o.KubeconfigPath)); len(entries) != 1 {
		t.Errorf("left temporary files: %v", entries)
	}
}

func TestRegisterErrors(t *testing.T) {
	cases := map[string]struct {
		server   *fakeAPIServer
		options  func(*RegisterOptions)
		noServer bool
		wantErr  error
		want     string
	}{
		"a malformed token never leaves the machine": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.Token = "abcdef0123456789abcdef" },
			noServer: true, wantErr: ErrMalformedToken,
		},
		"no pin and no CA file": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.CAHashes = nil },
			noServer: true, want: "--discovery-token-ca-cert-hash",
		},
		"a malformed pin": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.CAHashes = []string{"sha256:abc"} },
			noServer: true, want: "64 hexadecimal digits",
		},
		"a token the control plane refuses (401)": {
			server:  &fakeAPIServer{createStatus: http.StatusUnauthorized},
			wantErr: ErrTokenRefused, want: "the control plane refused the bootstrap token (expired, revoked or mistyped); create a new one with `lifeboat token create --cluster member1`",
		},
		"a wrong secret": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.Token = "abcdef.ffffffffffffffff" }, wantErr: ErrTokenRefused,
		},
		"a token without the bootstrapper role (403)": {
			server: &fakeAPIServer{createStatus: http.StatusForbidden}, want: "ClusterRole lifeboat:agent-bootstrapper",
		},
		"a hash that is not the control plane's": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.CAHashes = []string{CAHash(newTestCA(t, "x").cert)} },
			wantErr: ErrCAHashMismatch,
		},
		"a CA file without the pinned CA": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) {
				o.CAFile = filepath.Join(t.TempDir(), "ca.crt")
				if err := os.WriteFile(o.CAFile, newTestCA(t, "x").pem(), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			noServer: true, wantErr: ErrCAHashMismatch, want: `the CA file holds CA "x"`,
		},
		"denied: the cluster is in Push mode": {
			server: &fakeAPIServer{decide: func(csr *certificatesv1.CertificateSigningRequest) {
				csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue,
					Reason: ReasonClusterNotPull, Message: "cluster member1 is joined in Push mode; unjoin it first or choose another name"}}
			}},
			want: "Denied: ClusterNotPull: cluster member1 is joined in Push mode",
		},
		"never approved": {
			server: &fakeAPIServer{}, options: func(o *RegisterOptions) { o.Timeout = 50 * time.Millisecond },
			want: "was not approved within 50ms: is the Lifeboat controller manager running its agent-csr-approving controller?",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			url := startFakeAPIServer(t, tc.server)
			o := registerOptions(url, tc.server, t.TempDir())
			if tc.options != nil {
				tc.options(&o)
			}
			_, err := Register(context.Background(), o)
			if err == nil {
				t.Fatal("registered")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
			if n := tc.server.requests.Load(); tc.noServer && n != 0 {
				t.Errorf("%d requests reached the server", n)
			}
			if _, err := os.Stat(o.KubeconfigPath); !os.IsNotExist(err) {
				t.Errorf("kubeconfig written: %v", err)
			}
		})
	}
}

// A kubeconfig path that cannot be written is refused before anything is
// asked of the control plane: found after the certificate is issued, it
// would lose the key and leave an approved request unused.
func TestRegisterRefusesUnwritableKubeconfig(t *testing.T) {
	cases := map[string]struct {
		// path is the kubeconfig's path in the temporary directory dir.
		path func(t *testing.T, dir string) string
		want string
	}{
		"a directory": {
			path: func(t *testing.T, dir string) string { return dir },
			want: "is a directory; give the path of the file to write",
		},
		"a directory, with a trailing slash": {
			path: func(t *testing.T, dir string) string { return dir + "/" },
			want: "is a directory",
		},
		"under a file": {
			path: func(t *testing.T, dir string) string { return filepath.Join(writeFile(t, dir, "file"), "kubeconfig") },
			want: "file is not a directory",
		},
		"under a missing directory under a file": {
			path: func(t *testing.T, dir string) string {
				return filepath.Join(writeFile(t, dir, "file"), "agent", "kubeconfig")
			},
			want: "file is not a directory",
		},
		"in a directory that cannot be written": {
			path: func(t *testing.T, dir string) string {
				if os.Geteuid() == 0 {
					t.Skip("root writes in a read-only directory")
				}
				ro := filepath.Join(dir, "ro")
				if err := os.Mkdir(ro, 0o500); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(ro, "kubeconfig")
			},
			want: "permission denied",
		},
		"in a missing directory of a file system that cannot be written": {
			path: func(t *testing.T, dir string) string {
				if st, err := os.Stat("/proc/self"); err != nil || !st.IsDir() {
					t.Skip("no /proc")
				}
				return "/proc/lifeboat-no-such-dir/kubeconfig"
			},
			want: "cannot write /proc/lifeboat-no-such-dir/kubeconfig",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPIServer{}
			url := startFakeAPIServer(t, f)
			f.decide = f.approveAfter(1)
			dir := t.TempDir()
			o := registerOptions(url, f, dir)
			o.KubeconfigPath = tc.path(t, dir)
			_, err := Register(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "--agent-kubeconfig: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Register = %v, want an --agent-kubeconfig error saying %q", err, tc.want)
			}
			if n := f.requests.Load(); n != 0 {
				t.Errorf("%d requests reached the control plane", n)
			}
		})
	}
}

// The check that the kubeconfig can be written writes nothing: the missing
// directories are left to the write, and the test file is removed.
func TestValidateLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	o := RegisterOptions{
		ControlPlaneURL: "https://10.0.0.5:6443",
		Token:           testToken,
		CAHashes:        []string{"sha256:" + strings.Repeat("ab", 32)},
		ClusterName:     "member1",
		KubeconfigPath:  filepath.Join(dir, "etc", "lifeboat", "agent.kubeconfig"),
	}
	if _, err := o.Validate(); err != nil {
		t.Fatalf("a path in missing directories under a writable one: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("left in %s: %v, %v", dir, entries, err)
	}
	// An existing file is replaced, not refused.
	o.KubeconfigPath = writeFile(t, dir, "agent.kubeconfig")
	if _, err := o.Validate(); err != nil {
		t.Errorf("an existing file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in %s: %v", dir, entries)
	}
}

// writeFile writes a small file name in dir and returns its path.
func writeFile(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRegisterWithCAFile: the kubeconfig trusts what the progress line
// names. With a pin, that is only the pinned CA of the file, as when the
// CA is discovered from the server; without, every CA of the file.
func TestRegisterWithCAFile(t *testing.T) {
	other, third := newTestCA(t, "other-ca"), newTestCA(t, "third-ca")
	cases := map[string]struct {
		// file is the CA file, of the server's CA ca and the others.
		file   func(ca *testCA) []*testCA
		pinned func(ca *testCA) []*testCA
		// trusted are the CAs the kubeconfig must hold, in order.
		trusted func(ca *testCA) []*testCA
		// says is the progress line, FILE for the file's path.
		says func(ca *testCA) string
	}{
		"the CA alone, no pin": {
			file:    func(ca *testCA) []*testCA { return []*testCA{ca} },
			trusted: func(ca *testCA) []*testCA { return []*testCA{ca} },
			says: func(ca *testCA) string {
				return fmt.Sprintf("Trusting 1 CA from FILE: %q (%s).", "lifeboat-ca", CAHash(ca.cert))
			},
		},
		"a bundle, no pin: all of it": {
			file:    func(ca *testCA) []*testCA { return []*testCA{other, ca} },
			trusted: func(ca *testCA) []*testCA { return []*testCA{other, ca} },
			says: func(ca *testCA) string {
				return fmt.Sprintf("Trusting 2 CAs from FILE: %q (%s), %q (%s).", "other-ca", CAHash(other.cert), "lifeboat-ca", CAHash(ca.cert))
			},
		},
		"the CA alone, pinned": {
			file:    func(ca *testCA) []*testCA { return []*testCA{ca} },
			pinned:  func(ca *testCA) []*testCA { return []*testCA{ca} },
			trusted: func(ca *testCA) []*testCA { return []*testCA{ca} },
			says: func(ca *testCA) string {
				return fmt.Sprintf("Pinned the control plane's CA %q (%s) from FILE.", "lifeboat-ca", CAHash(ca.cert))
			},
		},
		"a bundle, the CA after another pinned: only it": {
			file:    func(ca *testCA) []*testCA { return []*testCA{other, ca, third} },
			pinned:  func(ca *testCA) []*testCA { return []*testCA{ca} },
			trusted: func(ca *testCA) []*testCA { return []*testCA{ca} },
			says: func(ca *testCA) string {
				return fmt.Sprintf("Pinned the control plane's CA %q (%s) from FILE. Its 2 other certificates, which no --discovery-token-ca-cert-hash names, are not trusted.", "lifeboat-ca", CAHash(ca.cert))
			},
		},
		"a bundle, two pinned": {
			file:    func(ca *testCA) []*testCA { return []*testCA{other, ca, third} },
			pinned:  func(ca *testCA) []*testCA { return []*testCA{ca, other} },
			trusted: func(ca *testCA) []*testCA { return []*testCA{other, ca} },
			says: func(ca *testCA) string {
				return fmt.Sprintf("Pinned the control plane's CAs %q (%s), %q (%s) from FILE. Its 1 other certificate, which no --discovery-token-ca-cert-hash names, is not trusted.", "other-ca", CAHash(other.cert), "lifeboat-ca", CAHash(ca.cert))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPIServer{}
			url := startFakeAPIServer(t, f)
			f.decide = f.approveAfter(1)
			dir := t.TempDir()
			o := registerOptions(url, f, dir)
			o.CAHashes = nil
			if tc.pinned != nil {
				for _, c := range tc.pinned(f.ca) {
					o.CAHashes = append(o.CAHashes, CAHash(c.cert))
				}
			}
			o.CAFile = filepath.Join(dir, "ca.crt")
			var file, trusted []byte
			var hashes []string
			for _, c := range tc.file(f.ca) {
				file = append(file, c.pem()...)
			}
			for _, c := range tc.trusted(f.ca) {
				trusted = append(trusted, c.pem()...)
				hashes = append(hashes, CAHash(c.cert))
			}
			if err := os.WriteFile(o.CAFile, file, 0o600); err != nil {
				t.Fatal(err)
			}
			var lines []string
			o.Progress = func(l string) { lines = append(lines, l) }
			res, err := Register(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(tc.says(f.ca), "FILE", o.CAFile); len(lines) == 0 || lines[0] != want {
				t.Errorf("progress %q, want it to start with\n%q", lines, want)
			}
			if !slices.Equal(res.CAHashes, hashes) {
				t.Errorf("result trusts %q, want %q", res.CAHashes, hashes)
			}
			cfg, err := clientcmd.LoadFromFile(o.KubeconfigPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].CertificateAuthorityData; string(got) != string(trusted) {
				got, _ := CAHashesOfPEM(got)
				t.Errorf("the kubeconfig trusts %q, want %q", got, hashes)
			}
		})
	}
}

// TestValidateDurations: 0 is the default, a negative duration is refused
// rather than replaced by the default, and the certificate duration must
// fit the request's expirationSeconds (an int32, at least 600).
func TestValidateDurations(t *testing.T) {
	cases := map[string]struct {
		timeout, duration         time.Duration
		wantTimeout, wantDuration time.Duration
		want                      string // a part of the error; empty: accepted
	}{
		"zeros are the defaults":            {wantTimeout: DefaultRegisterTimeout, wantDuration: DefaultCertificateDuration},
		"given":                             {timeout: time.Minute, duration: time.Hour, wantTimeout: time.Minute, wantDuration: time.Hour},
		"negative timeout":                  {timeout: -time.Second, want: "--timeout -1s must not be negative"},
		"negative certificate duration":     {duration: -time.Hour, want: "--certificate-duration -1h0m0s must not be negative"},
		"under 10m":                         {duration: 9 * time.Minute, want: "the API server accepts 10m0s to"},
		"10m":                               {duration: 10 * time.Minute, wantTimeout: DefaultRegisterTimeout, wantDuration: 10 * time.Minute},
		"the most an int32 of seconds":      {duration: math.MaxInt32 * time.Second, wantTimeout: DefaultRegisterTimeout, wantDuration: math.MaxInt32 * time.Second},
		"one second past int32":             {duration: (math.MaxInt32 + 1) * time.Second, want: "the API server accepts"},
		"1193047h, which wraps to negative": {duration: 1193047 * time.Hour, want: "the API server accepts"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := RegisterOptions{
				ControlPlaneURL:     "https://10.0.0.5:6443",
				Token:               testToken,
				CAHashes:            []string{"sha256:" + strings.Repeat("ab", 32)},
				ClusterName:         "member1",
				KubeconfigPath:      filepath.Join(t.TempDir(), "agent.kubeconfig"),
				Timeout:             tc.timeout,
				CertificateDuration: tc.duration,
			}
			_, err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want one saying %q", err, tc.want)
			case tc.want == "" && (o.Timeout != tc.wantTimeout || o.CertificateDuration != tc.wantDuration):
				t.Errorf("timeout %s, certificate duration %s; want %s, %s", o.Timeout, o.CertificateDuration, tc.wantTimeout, tc.wantDuration)
			}
		})
	}
}
