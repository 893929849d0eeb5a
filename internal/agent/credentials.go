package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// Credentials hold the agent's client certificate for the control plane
// and let it be swapped while the agent runs: every TLS handshake after a
// swap presents the new certificate, and the connections made with the old
// one are closed, so that watches and requests move to the new one at once
// rather than when the old one lapses.
type Credentials struct {
	cert   atomic.Pointer[tls.Certificate]
	dialer *connrotation.Dialer
	// transport is the one Config made, whose pool of idle connections a
	// swap empties.
	transport atomic.Pointer[http.Transport]
}

// NewCredentials holds certPEM and keyPEM.
func NewCredentials(certPEM, keyPEM []byte) (*Credentials, error) {
	c := &Credentials{dialer: connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	if err := c.set(certPEM, keyPEM); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Credentials) set(certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the agent's client certificate and key: %w", err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("the agent's client certificate: %w", err)
		}
	}
	c.cert.Store(&pair)
	return nil
}

// Certificate is the certificate held now.
func (c *Credentials) Certificate() *x509.Certificate { return c.cert.Load().Leaf }

// Swap holds certPEM and keyPEM from now on and closes the connections
// made with the certificate held before.
func (c *Credentials) Swap(certPEM, keyPEM []byte) error {
	if err := c.set(certPEM, keyPEM); err != nil {
		return err
	}
	// Idle connections leave the pool first, so that the next request
	// dials with the new certificate rather than picking a connection
	// being closed; then every connection made before goes.
	if t := c.transport.Load(); t != nil {
		t.CloseIdleConnections()
	}
	c.dialer.CloseAll()
	return nil
}

// Config returns a copy of cfg that authenticates with the certificate
// held: cfg's TLS settings (the CA, the server name) move into a transport
// of the copy's own, which asks the Credentials for the certificate at each
// handshake. cfg must not set a Transport or Dial of its own. A request in
// flight when the certificate is swapped fails (its connection is closed);
// clients try again, as after any dropped connection.
func (c *Credentials) Config(cfg *rest.Config) (*rest.Config, error) {
	if cfg.Transport != nil || cfg.WrapTransport != nil || cfg.Dial != nil {
		return nil, errors.New("the control-plane configuration has its own transport; its certificate cannot be renewed in place")
	}
	server := rest.CopyConfig(cfg)
	server.CertData, server.CertFile, server.KeyData, server.KeyFile = nil, "", nil, ""
	tlsConfig, err := rest.TLSConfigFor(server)
	if err != nil {
		return nil, fmt.Errorf("the control plane's TLS settings: %w", err)
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("the control plane at %s is not reached over TLS; a client certificate needs it", cfg.Host)
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return c.cert.Load(), nil
	}
	proxy := http.ProxyFromEnvironment
	if cfg.Proxy != nil {
		proxy = cfg.Proxy
	}
	out := rest.CopyConfig(cfg)
	out.TLSClientConfig, out.Proxy = rest.TLSClientConfig{}, nil
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         c.dialer.DialContext,
	})
	c.transport.Store(transport)
	out.Transport = transport
	return out, nil
}
