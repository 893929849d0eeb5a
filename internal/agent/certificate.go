package agent

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
)

// CertificateWarning is how long before its client certificate expires the
// agent warns at start: the agent does not renew it, and once the control
// plane refuses it the agent fences its copies when the Lease lapses.
const CertificateWarning = 30 * 24 * time.Hour

// ClientCertificateExpiry returns when the client certificate of cfg expires,
// and false when cfg authenticates otherwise (a token, an exec plugin).
func ClientCertificateExpiry(cfg *rest.Config) (time.Time, bool, error) {
	data := cfg.TLSClientConfig.CertData
	if len(data) == 0 && cfg.TLSClientConfig.CertFile != "" {
		b, err := os.ReadFile(cfg.TLSClientConfig.CertFile)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("reading the client certificate: %w", err)
		}
		data = b
	}
	if len(data) == 0 {
		return time.Time{}, false, nil
	}
	certs, err := bootstrap.ParseCertificates(data)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("the client certificate: %w", err)
	}
	// The client's own certificate comes first; a chain may follow.
	return certs[0].NotAfter, true, nil
}

// CertificateExpiryGauge is lifeboat_agent_client_certificate_expiration_timestamp_seconds,
// set to expiry, for an alert well before the agent's certificate lapses.
func CertificateExpiryGauge(reg prometheus.Registerer, expiry time.Time) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lifeboat_agent_client_certificate_expiration_timestamp_seconds",
		Help: "When the agent's client certificate for the control plane expires (Unix seconds). The agent does not renew it: register again before then.",
	})
	g.Set(float64(expiry.Unix()))
	return reg.Register(g)
}
