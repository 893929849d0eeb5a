package bootstrap

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

// Defaults of RegisterOptions.
const (
	DefaultRegisterTimeout     = 2 * time.Minute
	DefaultCertificateDuration = 365 * 24 * time.Hour
	defaultPollInterval        = time.Second
	// progressEvery is how often a wait says it is still waiting.
	progressEvery = 10 * time.Second
	// MinCertificateDuration and MaxCertificateDuration bound what a
	// CertificateSigningRequest's expirationSeconds (an int32) can ask.
	MinCertificateDuration = 10 * time.Minute
	MaxCertificateDuration = math.MaxInt32 * time.Second
)

// ErrTokenRefused says the API server did not authenticate the bootstrap
// token (401).
var ErrTokenRefused = errors.New("the control plane refused the bootstrap token (expired, revoked or mistyped)")

// DeniedError is a certificate request the control plane denied or failed.
type DeniedError struct {
	CSR string
	// Type is Denied or Failed.
	Type            certificatesv1.RequestConditionType
	Reason, Message string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("CertificateSigningRequest %s %s: %s: %s", e.CSR, e.Type, e.Reason, e.Message)
}

// RegisterOptions are what `lifeboat register` is given in the member.
type RegisterOptions struct {
	// ControlPlaneURL is the control plane's API server, https://HOST:PORT.
	ControlPlaneURL string
	// Token is the bootstrap token, ID.SECRET.
	Token string
	// CAHashes pin the control plane's CA (sha256:HEX); one must match.
	CAHashes []string
	// CAFile is the control plane's CA bundle, when the server does not
	// send its CA (or instead of a pin). With CAHashes, only its
	// certificates that match one are trusted.
	CAFile string
	// ClusterName is the Pull cluster the agent is for.
	ClusterName string
	// KubeconfigPath is where the agent's kubeconfig is written (0600).
	KubeconfigPath string
	// Timeout bounds the wait for the certificate (0: the default, 2m).
	Timeout time.Duration
	// CertificateDuration is the validity asked for (default one year;
	// the signer may cap it).
	CertificateDuration time.Duration
	// PollInterval is how often the request is read back (default 1s).
	PollInterval time.Duration
	// Progress receives one line per step; may be nil.
	Progress func(line string)
}

// Validate checks the options without any network I/O and returns the
// parsed token. It creates and removes a file next to KubeconfigPath, to
// check that the kubeconfig can be written there.
func (o *RegisterOptions) Validate() (Token, error) {
	tok, err := ParseToken(o.Token)
	if err != nil {
		return Token{}, err
	}
	if _, err := parseServerURL(o.ControlPlaneURL); err != nil {
		return Token{}, err
	}
	if err := cluster.ValidateClusterName(o.ClusterName); err != nil {
		return Token{}, err
	}
	if len(o.CAHashes) == 0 && o.CAFile == "" {
		return Token{}, errors.New("the control plane's CA must be pinned: give --discovery-token-ca-cert-hash (printed by `lifeboat token create`) or --ca-file")
	}
	for i, h := range o.CAHashes {
		if o.CAHashes[i], err = ParseCAHash(h); err != nil {
			return Token{}, err
		}
	}
	if o.KubeconfigPath == "" {
		return Token{}, errors.New("no path for the agent's kubeconfig (--agent-kubeconfig)")
	}
	// The kubeconfig is written last, with the key that exists only in
	// memory: a path it cannot be written to would be found only after the
	// request is approved, and leave that certificate unusable.
	if err := checkWritable(o.KubeconfigPath); err != nil {
		return Token{}, fmt.Errorf("--agent-kubeconfig: %w", err)
	}
	// 0 is the default; a negative value is a mistake, not a request for it.
	switch {
	case o.Timeout < 0:
		return Token{}, fmt.Errorf("--timeout %s must not be negative", o.Timeout)
	case o.Timeout == 0:
		o.Timeout = DefaultRegisterTimeout
	}
	switch {
	case o.CertificateDuration < 0:
		return Token{}, fmt.Errorf("--certificate-duration %s must not be negative", o.CertificateDuration)
	case o.CertificateDuration == 0:
		o.CertificateDuration = DefaultCertificateDuration
	}
	if err := ValidateCertificateDuration(o.CertificateDuration); err != nil {
		return Token{}, fmt.Errorf("--certificate-duration %w", err)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = defaultPollInterval
	}
	return tok, nil
}

// Registered is what Register did.
type Registered struct {
	// CAHashes are the pins of the CAs the agent's kubeconfig trusts: the
	// one pinned, or those of a CA file given without a pin.
	CAHashes []string
	// CSR is the name of the CertificateSigningRequest.
	CSR string
	// NotAfter is when the agent's certificate expires.
	NotAfter time.Time
}

// Register gets the agent of o.ClusterName its client certificate:
//  1. validates the options (a malformed token never leaves the machine)
//     and checks that o.KubeconfigPath can be written;
//  2. pins the control plane's CA, by DiscoverCA or from o.CAFile (with
//     pins, only the file's certificates that match one; see trustedCAs);
//     every connection after this one, and the kubeconfig, trust it alone;
//  3. makes an ECDSA P-256 key and creates, authenticated by the bootstrap
//     token, a CertificateSigningRequest for AgentUser(NAME) in AgentsGroup;
//  4. waits for it to be approved and signed (or denied) within o.Timeout;
//  5. writes the agent's kubeconfig atomically, mode 0600;
//  6. checks the new identity by reading the Cluster NAME with it.
func Register(ctx context.Context, o RegisterOptions) (Registered, error) {
	var res Registered
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	// 1.
	tok, err := o.Validate()
	if err != nil {
		return res, err
	}
	// 2.
	cas, said, err := trustedCAs(ctx, o)
	if err != nil {
		return res, err
	}
	for _, c := range cas {
		res.CAHashes = append(res.CAHashes, CAHash(c))
	}
	progress(said)
	caPEM := encodeCerts(cas...)
	cfg := &rest.Config{
		Host:            o.ControlPlaneURL,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		BearerToken:     tok.String(),
		UserAgent:       "lifeboat-register",
		Timeout:         30 * time.Second,
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, fmt.Errorf("building a client for the control plane: %w", err)
	}
	// 3. and 4.
	issued, err := requestCertificate(ctx, cs, o.ClusterName, o.CertificateDuration, certificateWait{
		poll: o.PollInterval, timeout: o.Timeout, progress: progress,
		explain: func(err error, what string) error { return requestError(err, o.ClusterName, what) },
	})
	res.CSR = issued.CSR
	if err != nil {
		return res, err
	}
	certPEM, keyPEM, cert := issued.CertPEM, issued.KeyPEM, issued.Cert
	res.NotAfter = cert.NotAfter
	// 5.
	kubeconfig, err := AgentKubeconfig(o.ControlPlaneURL, caPEM, certPEM, keyPEM, o.ClusterName)
	if err != nil {
		return res, err
	}
	if err := WriteFileAtomic(o.KubeconfigPath, kubeconfig, 0o600); err != nil {
		return res, err
	}
	progress(fmt.Sprintf("Wrote the agent's kubeconfig %s (certificate valid until %s).", o.KubeconfigPath, cert.NotAfter.UTC().Format(time.RFC3339)))
	// 6.
	if err := checkAgentIdentity(ctx, cfg, caPEM, certPEM, keyPEM, o.ClusterName); err != nil {
		return res, fmt.Errorf("the certificate was issued and %s written, but reading Cluster %s with it failed (was the token made by `lifeboat token create`, which grants the agent its roles?): %w", o.KubeconfigPath, o.ClusterName, err)
	}
	return res, nil
}

// trustedCAs returns the control plane's CAs that every later connection
// verifies it against, and a line that says which and why:
//   - with o.CAFile and pins, the certificates of the file that match a
//     pin, and no other;
//   - with o.CAFile alone, every certificate of the file;
//   - else the certificate the server sent that matches a pin.
func trustedCAs(ctx context.Context, o RegisterOptions) ([]*x509.Certificate, string, error) {
	if o.CAFile == "" {
		ca, err := DiscoverCA(ctx, o.ControlPlaneURL, o.CAHashes)
		if err != nil {
			return nil, "", err
		}
		return []*x509.Certificate{ca}, fmt.Sprintf("Pinned the control plane's CA %s.", nameCerts([]*x509.Certificate{ca})), nil
	}
	data, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, "", fmt.Errorf("reading the CA file: %w", err)
	}
	cas, err := PinCAFile(data, o.CAHashes)
	if err != nil {
		return nil, "", err
	}
	if len(o.CAHashes) == 0 {
		return cas, fmt.Sprintf("Trusting %d %s from %s: %s.", len(cas), plural(len(cas), "CA", "CAs"), o.CAFile, nameCerts(cas)), nil
	}
	said := fmt.Sprintf("Pinned the control plane's %s %s from %s.", plural(len(cas), "CA", "CAs"), nameCerts(cas), o.CAFile)
	if all, err := ParseCertificates(data); err == nil && len(all) > len(cas) {
		others := len(all) - len(cas)
		said += fmt.Sprintf(" Its %d other %s, which no --discovery-token-ca-cert-hash names, %s not trusted.", others, plural(others, "certificate", "certificates"), plural(others, "is", "are"))
	}
	return cas, said, nil
}

// nameCerts names certificates by subject and pin, for progress lines:
// "lifeboat-ca" (sha256:...); the whole subject when it has no common name.
func nameCerts(certs []*x509.Certificate) string {
	parts := make([]string, 0, len(certs))
	for _, c := range certs {
		name := c.Subject.CommonName
		if name == "" {
			name = c.Subject.String()
		}
		parts = append(parts, fmt.Sprintf("%q (%s)", name, CAHash(c)))
	}
	return strings.Join(parts, ", ")
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Issued is a client certificate the control plane signed for a new key.
type Issued struct {
	// CSR is the name of the CertificateSigningRequest.
	CSR string
	// CertPEM and KeyPEM are the certificate and its key, PEM.
	CertPEM, KeyPEM []byte
	// Cert is the certificate, parsed.
	Cert *x509.Certificate
}

// certificateWait is how requestCertificate waits for the signed
// certificate.
type certificateWait struct {
	poll, timeout time.Duration
	progress      func(string)
	// explain words an error the control plane answered, for what was
	// being done.
	explain func(err error, what string) error
}

// requestCertificate makes an ECDSA P-256 key, creates with cs a
// CertificateSigningRequest for the agent of clusterName in AgentsGroup,
// valid for duration, and waits for it to be approved and signed (or denied)
// within w.timeout. The issued certificate is checked to be for that key
// and that agent.
func requestCertificate(ctx context.Context, cs kubernetes.Interface, clusterName string, duration time.Duration, w certificateWait) (Issued, error) {
	var res Issued
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return res, fmt.Errorf("generating the agent's key: %w", err)
	}
	csr, err := agentCSR(clusterName, key, duration)
	if err != nil {
		return res, err
	}
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return res, w.explain(err, "creating the CertificateSigningRequest")
	}
	res.CSR = created.Name
	w.progress(fmt.Sprintf("Created CertificateSigningRequest %s for %s; waiting for its approval.", created.Name, AgentUser(clusterName)))
	certPEM, err := waitForCertificate(ctx, cs, created.Name, w)
	if err != nil {
		return res, err
	}
	cert, err := checkIssued(certPEM, key, clusterName)
	if err != nil {
		return res, fmt.Errorf("CertificateSigningRequest %s: %w", created.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return res, fmt.Errorf("encoding the agent's key: %w", err)
	}
	res.CertPEM, res.Cert = certPEM, cert
	res.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return res, nil
}

// agentCSR builds the request of cluster's agent for key.
func agentCSR(clusterName string, key crypto.Signer, duration time.Duration) (*certificatesv1.CertificateSigningRequest, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: AgentUser(clusterName), Organization: []string{AgentsGroup}},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("creating the certificate request: %w", err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lifeboat-agent-" + clusterName + "-", Labels: labels(clusterName)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To(int32(duration / time.Second)),
		},
	}, nil
}

// requestError explains a failed call made with the bootstrap token.
func requestError(err error, clusterName, what string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w; create a new one with `lifeboat token create --cluster %s`", ErrTokenRefused, clusterName)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: the bootstrap token may not do this (was it made by `lifeboat token create`, which binds ClusterRole %s to its group?): %w", what, BootstrapperRoleName, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// waitForCertificate polls the request until it has a certificate, is
// denied or failed, or o.Timeout passes, saying every progressEvery that it
// still waits.
func waitForCertificate(ctx context.Context, cs kubernetes.Interface, name string, w certificateWait) ([]byte, error) {
	start := time.Now()
	lastSaid := start
	approved := false
	var cert []byte
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, w.poll, w.timeout, true, func(ctx context.Context) (bool, error) {
		csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		var status apierrors.APIStatus
		switch {
		case errors.As(err, &status):
			// The server answered: a revoked token, a deleted request.
			return false, w.explain(err, "reading CertificateSigningRequest "+name)
		case err != nil:
			// The connection failed, or the wait is over: try again
			// until the timeout.
			lastErr = err
			return false, nil
		}
		for _, c := range csr.Status.Conditions {
			switch c.Type {
			case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
				return false, &DeniedError{CSR: name, Type: c.Type, Reason: c.Reason, Message: c.Message}
			case certificatesv1.CertificateApproved:
				if !approved {
					approved = true
					w.progress(fmt.Sprintf("Approved (%s: %s); waiting for the certificate.", c.Reason, c.Message))
				}
			}
		}
		if len(csr.Status.Certificate) > 0 {
			cert = csr.Status.Certificate
			return true, nil
		}
		if time.Since(lastSaid) >= progressEvery {
			lastSaid = time.Now()
			state := "approval"
			if approved {
				state = "the certificate"
			}
			w.progress(fmt.Sprintf("Still waiting for %s (%s of %s).", state, time.Since(start).Round(time.Second), w.timeout))
		}
		return false, nil
	})
	switch {
	case err == nil:
		return cert, nil
	case wait.Interrupted(err) && ctx.Err() == nil && !approved:
		return nil, fmt.Errorf("CertificateSigningRequest %s was not approved within %s: is the Lifeboat controller manager running its agent-csr-approving controller? (kubectl describe csr %s)%s", name, w.timeout, name, lastError(lastErr))
	case wait.Interrupted(err) && ctx.Err() == nil:
		return nil, fmt.Errorf("CertificateSigningRequest %s was approved but not signed within %s: does the control plane's kube-controller-manager run the certificatesigningrequest-signing-controller with --cluster-signing-kube-apiserver-client-cert-file and -key-file?%s", name, w.timeout, lastError(lastErr))
	}
	return nil, err
}

// lastError is the last failed read of a wait, for its timeout message.
func lastError(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (last read failed: %v)", err)
}

// checkIssued checks that the issued certificate is for key and for the
// agent of clusterName, and returns it.
func checkIssued(certPEM []byte, key *ecdsa.PrivateKey, clusterName string) (*x509.Certificate, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("the issued certificate: %w", err)
	}
	leaf := certs[0]
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("the issued certificate is not for the key the request was made with")
	}
	if leaf.Subject.CommonName != AgentUser(clusterName) {
		return nil, fmt.Errorf("the issued certificate is for %q, not %q", leaf.Subject.CommonName, AgentUser(clusterName))
	}
	return leaf, nil
}

// AgentKubeconfig is the agent's kubeconfig: the control plane at server,
// verified with caPEM, and the agent's client certificate and key, in a
// context named after the cluster (its current context).
func AgentKubeconfig(server string, caPEM, certPEM, keyPEM []byte, clusterName string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lifeboat"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	user := "lifeboat-agent-" + clusterName
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: "lifeboat", AuthInfo: user}
	cfg.CurrentContext = clusterName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the agent's kubeconfig: %w", err)
	}
	return data, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, so that a reader sees the old file or the new one, never a
// part.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// checkWritable checks, without writing path, that WriteFileAtomic can
// write it: path is not a directory, and the nearest of its parent
// directories that exists, where WriteFileAtomic writes or creates the
// missing ones, is a directory this process can create a file in.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; give the path of the file to write", path)
	}
	dir := filepath.Dir(path)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
			}
			break
		}
		// A missing directory is created when the file is written; a
		// file on the way up is found by the loop.
		if (!errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR)) || filepath.Dir(dir) == dir {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
		dir = filepath.Dir(dir)
	}
	f, err := os.CreateTemp(dir, ".lifeboat-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot write %s: removing the test file: %w", path, err)
	}
	return nil
}

// checkAgentIdentity reads the Cluster clusterName as the agent, with the
// configuration of the kubeconfig just written.
func checkAgentIdentity(ctx context.Context, bootstrap *rest.Config, caPEM, certPEM, keyPEM []byte, clusterName string) error {
	cfg := &rest.Config{
		Host: bootstrap.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: caPEM, CertData: certPEM, KeyData: keyPEM,
		},
		UserAgent: bootstrap.UserAgent,
		Timeout:   bootstrap.Timeout,
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().
		AbsPath("/apis", clusterv1alpha1.GroupName, clusterv1alpha1.SchemeGroupVersion.Version, "clusters", clusterName).
		DoRaw(ctx)
	if err != nil {
		return err
	}
	var c clusterv1alpha1.Cluster
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("decoding Cluster %s: %w", clusterName, err)
	}
	if c.Spec.SyncMode != clusterv1alpha1.Pull {
		return fmt.Errorf("cluster %s is in %s mode, not Pull", clusterName, c.Spec.SyncMode)
	}
	return nil
}
