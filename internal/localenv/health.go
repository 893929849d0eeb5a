package localenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthCheck says how to call a component's health URL.
type healthCheck struct {
	caFile   string // verify the server with this CA
	token    string // bearer token
	insecure bool   // the component serves a self-signed certificate
}

func (h healthCheck) client() (*http.Client, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	switch {
	case h.caFile != "":
		pem, err := os.ReadFile(h.caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig.RootCAs = pool
	case h.insecure:
		// kube-controller-manager and kube-scheduler sign their own serving
		// certificates; only liveness is asked of them, over loopback.
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // loopback health probe of a self-signed component
	}
	return &http.Client{Transport: tr, Timeout: 3 * time.Second}, nil
}

// probe calls the URL once and returns nil on 200. A component without a
// URL is healthy while it runs.
func (h healthCheck) probe(ctx context.Context, url string) error {
	if url == "" {
		return nil
	}
	cl, err := h.client()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, body)
	}
	return nil
}

// waitHealthy polls the component's health URL until it answers 200, the
// process exits, or the timeout passes.
// errExited: the process exited before it answered healthy.
var errExited = errors.New("exited")

func waitHealthy(ctx context.Context, c Component, h healthCheck, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if !c.Process.Alive() {
			return fmt.Errorf("process %d %w", c.Process.PID, errExited)
		}
		if last = h.probe(ctx, c.Health); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no healthy answer within %s (last: %v)", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkFor returns how a recorded component's health URL is called.
func checkFor(s *State, c Component) healthCheck {
	switch {
	case c.Cluster != "" && c.Name == c.Cluster+"-apiserver":
		info, _ := s.Cluster(c.Cluster)
		return healthCheck{caFile: s.CAPath(), token: info.Token}
	case len(c.Health) > 5 && c.Health[:5] == "https":
		return healthCheck{insecure: true}
	default:
		return healthCheck{}
	}
}

func allAlive(s *State) bool {
	for _, c := range s.Components {
		if !c.Process.Alive() {
			return false
		}
	}
	return len(s.Components) > 0
}
