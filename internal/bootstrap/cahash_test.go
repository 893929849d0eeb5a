package bootstrap

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCAHashIsKubeadms(t *testing.T) {
	ca := newTestCA(t, "ca")
	h := CAHash(ca.cert)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("hash %q", h)
	}
	got, err := ParseCAHash(strings.ToUpper(h[:7]) + strings.ToUpper(h[7:]))
	if err != nil || got != h {
		t.Errorf("ParseCAHash of the upper-case form = %q, %v", got, err)
	}
	for _, bad := range []string{"", h[7:], "sha1:" + h[7:], h[:len(h)-2], h + "00", "sha256:" + strings.Repeat("g", 64)} {
		if _, err := ParseCAHash(bad); err == nil {
			t.Errorf("ParseCAHash(%q) accepted", bad)
		}
	}
	hashes, err := CAHashesOfPEM(append(ca.pem(), newTestCA(t, "other").pem()...))
	if err != nil || len(hashes) != 2 || hashes[0] != h {
		t.Errorf("CAHashesOfPEM = %v, %v", hashes, err)
	}
}

func TestDiscoverCA(t *testing.T) {
	ca := newTestCA(t, "lifeboat-ca")
	other := newTestCA(t, "other-ca")
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	chained := tlsServer(t, ca.servingCert(t, true), ok)
	leafOnly := tlsServer(t, ca.servingCert(t, false), ok)
	// A server whose chain holds a CA that matches the pin but did not
	// sign its serving certificate.
	wrongChain := ca.servingCert(t, false)
	wrongChain.Certificate = append(wrongChain.Certificate, other.cert.Raw)
	impostor := tlsServer(t, wrongChain, ok)

	cases := map[string]struct {
		url     string
		hashes  []string
		wantErr error
		want    string
	}{
		"the pinned CA is in the chain":      {url: chained.URL, hashes: []string{CAHash(ca.cert)}},
		"one of several pins matches":        {url: chained.URL, hashes: []string{CAHash(other.cert), CAHash(ca.cert)}},
		"another CA's hash":                  {url: chained.URL, hashes: []string{CAHash(other.cert)}, wantErr: ErrCAHashMismatch, want: CAHash(ca.cert)},
		"only the serving certificate sent":  {url: leafOnly.URL, hashes: []string{CAHash(ca.cert)}, wantErr: ErrCANotSent, want: "--ca-file"},
		"a pinned CA that did not sign it":   {url: impostor.URL, hashes: []string{CAHash(other.cert)}, want: "not valid under the pinned CA"},
		"a host the serving cert is not for": {url: strings.Replace(chained.URL, "127.0.0.1", "localhost", 1), hashes: []string{CAHash(ca.cert)}, want: "not valid under the pinned CA"},
		"not https":                          {url: strings.Replace(chained.URL, "https", "http", 1), hashes: []string{CAHash(ca.cert)}, want: "want https://"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DiscoverCA(context.Background(), tc.url, tc.hashes)
			if tc.wantErr == nil && tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(ca.cert) {
					t.Errorf("pinned %q", got.Subject.CommonName)
				}
				return
			}
			if err == nil {
				t.Fatalf("pinned %q, want an error", got.Subject.CommonName)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestPinCAFile: with pins, only the certificates of the file that match
// one are trusted, as DiscoverCA trusts only the CA it pinned; without,
// all of them.
func TestPinCAFile(t *testing.T) {
	ca := newTestCA(t, "ca")
	other := newTestCA(t, "other")
	third := newTestCA(t, "third")
	bundle := func(cas ...*testCA) []byte {
		var out []byte
		for _, c := range cas {
			out = append(out, c.pem()...)
		}
		return out
	}
	cases := map[string]struct {
		file    []byte
		hashes  []string
		want    []*testCA // the certificates trusted, in the file's order
		wantErr error
		errSays string
	}{
		"one CA, pinned":                  {file: bundle(ca), hashes: []string{CAHash(ca.cert)}, want: []*testCA{ca}},
		"one CA, no pin":                  {file: bundle(ca), want: []*testCA{ca}},
		"one CA, another's pin":           {file: bundle(ca), hashes: []string{CAHash(other.cert)}, wantErr: ErrCAHashMismatch},
		"a bundle, no pin: all of it":     {file: bundle(other, ca), want: []*testCA{other, ca}},
		"a bundle, the second pinned":     {file: bundle(other, ca), hashes: []string{CAHash(ca.cert)}, want: []*testCA{ca}},
		"a bundle, the first pinned":      {file: bundle(ca, other, third), hashes: []string{CAHash(ca.cert)}, want: []*testCA{ca}},
		"a bundle, two of three pinned":   {file: bundle(ca, other, third), hashes: []string{CAHash(third.cert), CAHash(ca.cert)}, want: []*testCA{ca, third}},
		"a bundle, a pin and a stray one": {file: bundle(ca, other), hashes: []string{CAHash(third.cert), CAHash(other.cert)}, want: []*testCA{other}},
		"a bundle, no pin matches":        {file: bundle(ca, other), hashes: []string{CAHash(third.cert)}, wantErr: ErrCAHashMismatch, errSays: `CA "ca" ` + CAHash(ca.cert) + `, CA "other" ` + CAHash(other.cert)},
		"no certificate":                  {file: []byte("not a certificate"), errSays: "no PEM certificate found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PinCAFile(tc.file, tc.hashes)
			if tc.wantErr != nil || tc.errSays != "" {
				if err == nil {
					t.Fatalf("trusted %d certificates, want an error", len(got))
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("err = %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.errSays) {
					t.Errorf("err = %v, want it to say %q", err, tc.errSays)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names, want []string
			for _, c := range got {
				names = append(names, c.Subject.CommonName)
			}
			for _, c := range tc.want {
				want = append(want, c.cert.Subject.CommonName)
			}
			if !slices.Equal(names, want) {
				t.Errorf("trusted %q, want %q", names, want)
			}
		})
	}
}

// An address that accepts the connection and never answers the TLS
// handshake ends discovery within its bound, saying so, rather than
// waiting for good.
func TestDiscoverCAGivesUpOnASilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			held <- c // kept open, never answered
		}
	}()
	defer func() {
		select {
		case c := <-held:
			c.Close()
		default:
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := discoverCA(context.Background(), "https://"+l.Addr().String(), []string{"sha256:00"}, 300*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no TLS answer within 300ms") {
			t.Fatalf("discoverCA = %v, want the bound named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("discoverCA still waits on a server that never answers")
	}
}
