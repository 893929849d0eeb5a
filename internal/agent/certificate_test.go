package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

func TestClientCertificateExpiry(t *testing.T) {
	notAfter := time.Date(2027, 12, 7, 9, 0, 0, 0, time.UTC)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:lifeboat:agent:edge1"},
		NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	file := filepath.Join(t.TempDir(), "agent.crt")
	if err := os.WriteFile(file, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		tls       rest.TLSClientConfig
		certified bool
		err       string
	}{
		"certificate data":           {tls: rest.TLSClientConfig{CertData: certPEM}, certified: true},
		"certificate file":           {tls: rest.TLSClientConfig{CertFile: file}, certified: true},
		"no certificate (a token)":   {},
		"a file that is not there":   {tls: rest.TLSClientConfig{CertFile: filepath.Join(t.TempDir(), "gone.crt")}, err: "reading the client certificate"},
		"data that is not PEM":       {tls: rest.TLSClientConfig{CertData: []byte("not a certificate")}, err: "no PEM certificate found"},
		"a PEM key, not certificate": {tls: rest.TLSClientConfig{CertData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}})}, err: "no PEM certificate found"},
		"a PEM certificate that does not parse": {tls: rest.TLSClientConfig{CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})},
			err: "the client certificate: parsing a certificate"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, certified, err := ClientCertificateExpiry(&rest.Config{BearerToken: "t", TLSClientConfig: tc.tls})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || certified != tc.certified {
				t.Fatalf("= %v, %v, %v; want certified %v", got, certified, err, tc.certified)
			}
			if certified && !got.Equal(notAfter) {
				t.Errorf("expiry %v, want %v", got, notAfter)
			}
		})
	}

	reg := prometheus.NewRegistry()
	if err := CertificateExpiryGauge(reg, notAfter); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "lifeboat_agent_client_certificate_expiration_timestamp_seconds" ||
		families[0].GetMetric()[0].GetGauge().GetValue() != float64(notAfter.Unix()) {
		t.Errorf("gathered %v, want the expiry %d", families, notAfter.Unix())
	}
}
