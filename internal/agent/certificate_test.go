package agent

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

func TestCredentialsOf(t *testing.T) {
	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key")
	for f, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		tls       rest.TLSClientConfig
		certified bool
		err       string
	}{
		"data":                          {tls: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM}, certified: true},
		"files":                         {tls: rest.TLSClientConfig{CertFile: certFile, KeyFile: keyFile}, certified: true},
		"no certificate (a token)":      {},
		"a certificate without its key": {tls: rest.TLSClientConfig{CertData: certPEM}},
		"a file that is not there":      {tls: rest.TLSClientConfig{CertFile: filepath.Join(dir, "gone.crt"), KeyData: keyPEM}, err: "reading the client certificate"},
		"a key file that is not there":  {tls: rest.TLSClientConfig{CertData: certPEM, KeyFile: filepath.Join(dir, "gone.key")}, err: "reading the client key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotCert, gotKey, certified, err := CredentialsOf(&rest.Config{BearerToken: "t", TLSClientConfig: tc.tls})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || certified != tc.certified {
				t.Fatalf("= certified %v, %v; want certified %v", certified, err, tc.certified)
			}
			if certified && (string(gotCert) != string(certPEM) || string(gotKey) != string(keyPEM)) {
				t.Errorf("returned another certificate or key")
			}
		})
	}
}

func TestNewCredentialsRefusesWhatIsNoKeyPair(t *testing.T) {
	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	_, otherKey := ca.issue(t, "system:lifeboat:agent:edge1", time.Now(), time.Hour)
	for name, pair := range map[string][2][]byte{
		"not PEM":                           {[]byte("not a certificate"), keyPEM},
		"a key for another":                 {certPEM, otherKey},
		"a key, no certificate":             {keyPEM, keyPEM},
		"a certificate that does not parse": {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}}), keyPEM},
	} {
		if _, err := NewCredentials(pair[0], pair[1]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCertificateExpiryGauge(t *testing.T) {
	notAfter := time.Date(2027, 12, 7, 9, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	g, err := CertificateExpiryGauge(reg)
	if err != nil {
		t.Fatal(err)
	}
	g.Set(float64(notAfter.Unix()))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "lifeboat_agent_client_certificate_expiration_timestamp_seconds" ||
		families[0].GetMetric()[0].GetGauge().GetValue() != float64(notAfter.Unix()) {
		t.Errorf("gathered %v, want the expiry %d", families, notAfter.Unix())
	}
}
