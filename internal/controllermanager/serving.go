package controllermanager

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lifeboat-dev/lifeboat/internal/metricsauth"
)

// The default addresses of /healthz, /readyz and /metrics are on loopback
// only, as Kubernetes components serve their unauthenticated ports: nothing
// off the machine (or outside the Pod) reads them unless an operator chooses
// an address that is reachable. In a cluster, the kubelet's probes need
// --health-probe-bind-address=:10357, and a scraper needs --metrics-secure
// with a reachable --metrics-bind-address.
const (
	defaultHealthProbeBindAddress = "127.0.0.1:10357"
	defaultMetricsBindAddress     = "127.0.0.1:8080"
)

// Names of the serving certificate and key in --metrics-cert-dir
// (controller-runtime's defaults, and what a kubernetes.io/tls Secret
// mounted as a volume holds).
const (
	metricsCertName = "tls.crt"
	metricsKeyName  = "tls.key"
)

// metricsServerOptions returns how /metrics is served.
//
// By default it is plain HTTP without authentication, meant for a loopback
// address. With --metrics-secure it is HTTPS, and every request must carry a
// bearer token that the control plane's API server accepts (TokenReview) for
// a user allowed to get the non-resource URL /metrics (SubjectAccessReview);
// others are answered 401 or 403. The certificate is --metrics-cert-dir's
// tls.crt and tls.key, reloaded when they change, or, without a directory, a
// self-signed one made at start, so that no certificate lying in a shared
// temporary directory is ever picked up instead.
func (o *Options) metricsServerOptions() (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if !o.MetricsSecure {
		if o.MetricsCertDir != "" {
			return m, errors.New("--metrics-cert-dir needs --metrics-secure")
		}
		return m, nil
	}
	m.SecureServing = true
	m.FilterProvider = metricsauth.Provider
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		// HTTP/2 off: its stream handling has been the way into
		// denial-of-service attacks (CVE-2023-44487, CVE-2023-39325) and a
		// scraper gains nothing from it.
		c.NextProtos = []string{"http/1.1"}
	}}
	if o.MetricsCertDir != "" {
		for _, f := range []string{metricsCertName, metricsKeyName} {
			if _, err := os.Stat(filepath.Join(o.MetricsCertDir, f)); err != nil {
				return m, fmt.Errorf("--metrics-cert-dir %s: %w", o.MetricsCertDir, err)
			}
		}
		m.CertDir, m.CertName, m.KeyName = o.MetricsCertDir, metricsCertName, metricsKeyName
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
