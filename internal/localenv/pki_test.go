package localenv

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// The API servers send their CA after their serving certificate, so that
// `lifeboat register` can pin it by hash.
func TestServingCertificateFileHoldsTheChain(t *testing.T) {
	p, err := writePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(p.ServingCert, p.ServeKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Fatalf("serving chain of %d certificates, want the serving certificate and the CA", len(pair.Certificate))
	}
	caPEM, err := os.ReadFile(p.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil || !bytes.Equal(block.Bytes, pair.Certificate[1]) {
		t.Errorf("the second certificate of the chain is not the environment's CA")
	}
}
