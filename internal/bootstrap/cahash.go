package bootstrap

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// CAHashPrefix starts a CA hash: kubeadm's --discovery-token-ca-cert-hash
// format, sha256 of the DER SubjectPublicKeyInfo.
const CAHashPrefix = "sha256:"

var (
	// ErrCANotSent says the control plane's TLS handshake carried only its
	// serving certificate, so the CA cannot be pinned from it.
	ErrCANotSent = errors.New("the control plane did not send its CA certificate")
	// ErrCAHashMismatch says no certificate matched the expected hash.
	ErrCAHashMismatch = errors.New("no CA certificate matches the expected hash")
)

// CAHash is the pin of cert: sha256:HEX of its public key.
func CAHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return CAHashPrefix + hex.EncodeToString(sum[:])
}

// ParseCAHash checks a pin and returns it in lower case.
func ParseCAHash(s string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(s))
	hexPart, ok := strings.CutPrefix(h, CAHashPrefix)
	if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("CA hash %q: want %s followed by 64 hexadecimal digits (the sha256 of the CA's public key, as `lifeboat token create` prints it)", s, CAHashPrefix)
	}
	return h, nil
}

// ParseCertificates parses every CERTIFICATE block of a PEM bundle.
func ParseCertificates(pemData []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing a certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// CAHashesOfPEM returns the pin of each certificate in a CA bundle (a
// kubeconfig's certificate-authority-data).
func CAHashesOfPEM(pemData []byte) ([]string, error) {
	certs, err := ParseCertificates(pemData)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, CAHash(c))
	}
	return out, nil
}

// encodeCerts is certs as a PEM bundle.
func encodeCerts(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// PinCAFile returns the certificates of a CA bundle given by file that are
// to be trusted. With pins, only those whose CAHash is one of them: as
// DiscoverCA trusts only the CA it pinned, another CA in the same bundle
// must not widen the trust; none matching is ErrCAHashMismatch. Without
// pins, every certificate of the bundle.
func PinCAFile(pemData []byte, hashes []string) ([]*x509.Certificate, error) {
	certs, err := ParseCertificates(pemData)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	if len(hashes) == 0 {
		return certs, nil
	}
	var pinned []*x509.Certificate
	for _, c := range certs {
		if slices.Contains(hashes, CAHash(c)) {
			pinned = append(pinned, c)
		}
	}
	if len(pinned) == 0 {
		return nil, fmt.Errorf("%w: the CA file holds %s, expected %s", ErrCAHashMismatch, describeCerts(certs), strings.Join(hashes, " or "))
	}
	return pinned, nil
}

// DiscoverCA finds the control plane's CA by its pin: it opens one TLS
// connection to serverURL without verifying it, takes the certificates the
// server sent, picks the one whose CAHash is in hashes, and then checks,
// as every later connection will, that the serving certificate is valid for
// the URL's host under that CA. The server must send its CA after its
// serving certificate (a --tls-cert-file holding the chain); when it sends
// the serving certificate alone, the error wraps ErrCANotSent and the CA has
// to be given as a file instead.
func DiscoverCA(ctx context.Context, serverURL string, hashes []string) (*x509.Certificate, error) {
	return discoverCA(ctx, serverURL, hashes, CADiscoveryTimeout)
}

// CADiscoveryTimeout bounds DiscoverCA's connection and TLS handshake: an
// address that accepts connections and never answers is an error, not a
// wait without end.
const CADiscoveryTimeout = 30 * time.Second

func discoverCA(ctx context.Context, serverURL string, hashes []string, within time.Duration) (*x509.Certificate, error) {
	u, err := parseServerURL(serverURL)
	if err != nil {
		return nil, err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	d := tls.Dialer{Config: &tls.Config{
		// Only to read the certificates the server presents; they are
		// verified below, against the pinned CA, before anything is sent.
		InsecureSkipVerify: true, //nolint:gosec // pinned by hash below
		ServerName:         u.Hostname(),
		MinVersion:         tls.VersionTLS12,
	}}
	dialCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	conn, err := d.DialContext(dialCtx, "tcp", addr)
	if err != nil {
		if dialCtx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("connecting to the control plane at %s: no TLS answer within %s (is it the API server's address and port?): %w", serverURL, within, err)
		}
		return nil, fmt.Errorf("connecting to the control plane at %s: %w", serverURL, err)
	}
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	_ = conn.Close()
	return pinCA(u, chain, hashes)
}

// pinCA is DiscoverCA's decision on the certificates the server sent.
func pinCA(u *url.URL, chain []*x509.Certificate, hashes []string) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("the control plane at %s sent no certificate", u.Host)
	}
	var ca *x509.Certificate
	for _, c := range chain {
		if slices.Contains(hashes, CAHash(c)) {
			ca = c
			break
		}
	}
	if ca == nil {
		if !slices.ContainsFunc(chain, func(c *x509.Certificate) bool { return c.IsCA }) {
			return nil, fmt.Errorf("%w: %s sent only its serving certificate (%s); give the CA with --ca-file (the control plane's kubeconfig has it as certificate-authority-data), or make its API server send the chain (serving certificate then CA in --tls-cert-file)", ErrCANotSent, u.Host, describeCerts(chain))
		}
		return nil, fmt.Errorf("%w: the control plane at %s sent %s, expected %s; check the hash `lifeboat token create` printed, or give the CA with --ca-file", ErrCAHashMismatch, u.Host, describeCerts(chain), strings.Join(hashes, " or "))
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		if c != ca {
			intermediates.AddCert(c)
		}
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: intermediates, DNSName: u.Hostname(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, fmt.Errorf("the serving certificate of %s is not valid under the pinned CA %s: %w", u.Host, CAHash(ca), err)
	}
	return ca, nil
}

// describeCerts names certificates by pin and subject, for errors.
func describeCerts(certs []*x509.Certificate) string {
	parts := make([]string, 0, len(certs))
	for _, c := range certs {
		kind := "certificate"
		if c.IsCA {
			kind = "CA"
		}
		parts = append(parts, fmt.Sprintf("%s %q %s", kind, c.Subject.CommonName, CAHash(c)))
	}
	return strings.Join(parts, ", ")
}

// parseServerURL accepts an https URL with a host and nothing after it but
// an optional path.
func parseServerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("control plane URL %q: want https://HOST[:PORT]", s)
	}
	return u, nil
}
