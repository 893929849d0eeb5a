package metricsauth

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Names of the serving certificate and key in a certificate directory
// (controller-runtime's defaults, and what a kubernetes.io/tls Secret
// mounted as a volume holds).
const (
	CertName = "tls.crt"
	KeyName  = "tls.key"
)

// Serving says how a process serves /metrics.
type Serving struct {
	// BindAddress is where; "0" disables it.
	BindAddress string
	// Secure serves HTTPS, and only to bearer tokens that ReviewAt's API
	// server authenticates for a user allowed to get the path.
	Secure bool
	// CertDir holds tls.crt and tls.key (reloaded when they change); empty
	// makes a self-signed certificate at start. Only with Secure.
	CertDir string
	// ReviewAt is the API server that reviews tokens; nil is the manager's
	// own.
	ReviewAt *rest.Config
	// SecureFlag and CertDirFlag name the flags, for the errors;
	// --metrics-secure and --metrics-cert-dir when empty.
	SecureFlag, CertDirFlag string
}

// ServerOptions returns how /metrics is served.
//
// By default it is plain HTTP without authentication, meant for a loopback
// address. Secure makes it HTTPS, and every request must carry a bearer
// token that the API server accepts (TokenReview) for a user allowed to get
// the non-resource URL (SubjectAccessReview); others are answered 401 or
// 403. The certificate is CertDir's tls.crt and tls.key, reloaded when they
// change, or, without a directory, a self-signed one made at start, so that
// no certificate lying in a shared temporary directory is ever picked up
// instead.
func ServerOptions(s Serving) (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: s.BindAddress}
	if err := s.Validate(); err != nil {
		return m, err
	}
	if !s.Secure {
		return m, nil
	}
	m.SecureServing = true
	m.FilterProvider = Provider
	if s.ReviewAt != nil {
		reviewAt := s.ReviewAt
		m.FilterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
			httpClient, err := rest.HTTPClientFor(reviewAt)
			if err != nil {
				return nil, fmt.Errorf("creating the client that reviews metrics requests: %w", err)
			}
			return Provider(reviewAt, httpClient)
		}
	}
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		// HTTP/2 off: its stream handling has been the way into
		// denial-of-service attacks (CVE-2023-44487, CVE-2023-39325) and a
		// scraper gains nothing from it.
		c.NextProtos = []string{"http/1.1"}
	}}
	if s.CertDir != "" {
		m.CertDir, m.CertName, m.KeyName = s.CertDir, CertName, KeyName
		return m, nil
	}
	cert, err := selfSignedCertificate()
	if err != nil {
		return m, err
	}
	m.TLSOpts = append(m.TLSOpts, func(c *tls.Config) {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	})
	return m, nil
}

// Validate reports a certificate directory given without Secure, or
// without its certificate and key, so that a process can refuse its flags
// before it starts anything.
func (s Serving) Validate() error {
	secureFlag, certDirFlag := s.SecureFlag, s.CertDirFlag
	if secureFlag == "" {
		secureFlag = "--metrics-secure"
	}
	if certDirFlag == "" {
		certDirFlag = "--metrics-cert-dir"
	}
	if s.CertDir == "" {
		return nil
	}
	if !s.Secure {
		return fmt.Errorf("%s needs %s", certDirFlag, secureFlag)
	}
	for _, f := range []string{CertName, KeyName} {
		if _, err := os.Stat(filepath.Join(s.CertDir, f)); err != nil {
			return fmt.Errorf("%s %s: %w", certDirFlag, s.CertDir, err)
		}
	}
	return nil
}

// selfSignedCertificate makes a serving certificate for localhost and
// 127.0.0.1, signed by a throwaway CA made with it: traffic is encrypted, and a scraper
// that cannot verify it (in a cluster, by Pod IP) skips verification, as
// for kube-controller-manager's own self-signed port.
func selfSignedCertificate() (tls.Certificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a self-signed metrics certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the self-signed metrics certificate: %w", err)
	}
	return cert, nil
}
