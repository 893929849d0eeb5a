package controllermanager

import (
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

// metricsServerOptions returns how /metrics is served: plain HTTP by
// default, meant for loopback; with --metrics-secure HTTPS to bearer tokens
// the control plane's API server accepts for a user allowed to get
// /metrics (metricsauth.ServerOptions).
func (o *Options) metricsServerOptions() (metricsserver.Options, error) {
	return metricsauth.ServerOptions(metricsauth.Serving{
		BindAddress: o.MetricsBindAddress, Secure: o.MetricsSecure, CertDir: o.MetricsCertDir,
		SecureFlag: "--metrics-secure", CertDirFlag: "--metrics-cert-dir",
	})
}
