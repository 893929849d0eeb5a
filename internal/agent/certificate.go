package agent

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// CertificateWarning is how long before its client certificate expires the
// agent warns at start when it does not renew the certificate itself: once
// the control plane refuses the certificate, the agent fences its copies
// when the Lease lapses.
const CertificateWarning = 30 * 24 * time.Hour

// CredentialsOf returns the client certificate and key cfg authenticates
// with (data or files), and false when it authenticates otherwise (a token,
// an exec plugin).
func CredentialsOf(cfg *rest.Config) (certPEM, keyPEM []byte, ok bool, err error) {
	read := func(data []byte, file, what string) ([]byte, error) {
		if len(data) > 0 || file == "" {
			return data, nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the client %s: %w", what, err)
		}
		return b, nil
	}
	if certPEM, err = read(cfg.CertData, cfg.CertFile, "certificate"); err != nil {
		return nil, nil, false, err
	}
	if keyPEM, err = read(cfg.KeyData, cfg.KeyFile, "key"); err != nil {
		return nil, nil, false, err
	}
	return certPEM, keyPEM, len(certPEM) > 0 && len(keyPEM) > 0, nil
}

// CertificateExpiryGauge registers lifeboat_agent_client_certificate_expiration_timestamp_seconds,
// for an alert well before the agent's certificate lapses; the agent sets
// it at start and at each renewal.
func CertificateExpiryGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lifeboat_agent_client_certificate_expiration_timestamp_seconds",
		Help: "When the agent's current client certificate for the control plane expires (Unix seconds). With --rotate-certificates the agent renews it before then; without, register again before then.",
	})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return g, nil
}
