package localenv

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
)

// pki holds the paths of the environment's certificates and keys. One CA signs
// the serving certificate of every API server, so a single CA bundle in the
// kubeconfig verifies them all.
type pki struct {
	CACert, CAKey         string
	ServingCert, ServeKey string
	ServiceAccountKey     string
}

func writePKI(dir string) (pki, error) {
	p := pki{
		CACert:            filepath.Join(dir, "ca.crt"),
		CAKey:             filepath.Join(dir, "ca.key"),
		ServingCert:       filepath.Join(dir, "serving.crt"),
		ServeKey:          filepath.Join(dir, "serving.key"),
		ServiceAccountKey: filepath.Join(dir, "sa.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, fmt.Errorf("creating %s: %w", dir, err)
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lifeboat-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return p, fmt.Errorf("signing CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return p, err
	}
	servingKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, fmt.Errorf("generating serving key: %w", err)
	}
	servingTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "lifeboat-local-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		// Loopback, the members' `kubernetes` Service, and with a host
		// cluster the node's address and its `kubernetes` Service.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1"),
			net.ParseIP(hostnode.NodeIP), net.ParseIP(hostnode.KubernetesServiceIP)},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTmpl, caCert, &servingKey.PublicKey, caKey)
	if err != nil {
		return p, fmt.Errorf("signing serving certificate: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, fmt.Errorf("generating service account key: %w", err)
	}
	// The serving certificate file holds the chain, the CA after the
	// serving certificate, so that the API servers send their CA in the
	// handshake: `lifeboat register` pins it by the hash of its key.
	files := []struct {
		path, kind string
		ders       [][]byte
	}{
		{p.CACert, "CERTIFICATE", [][]byte{caDER}},
		{p.CAKey, "RSA PRIVATE KEY", [][]byte{x509.MarshalPKCS1PrivateKey(caKey)}},
		{p.ServingCert, "CERTIFICATE", [][]byte{servingDER, caDER}},
		{p.ServeKey, "RSA PRIVATE KEY", [][]byte{x509.MarshalPKCS1PrivateKey(servingKey)}},
		{p.ServiceAccountKey, "RSA PRIVATE KEY", [][]byte{x509.MarshalPKCS1PrivateKey(saKey)}},
	}
	for _, f := range files {
		var data []byte
		for _, der := range f.ders {
			data = append(data, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: der})...)
		}
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return p, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return p, nil
}

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
