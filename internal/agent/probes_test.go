package agent

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// While the agent waits for the control plane, /healthz answers 200 and
// /readyz 503 saying why; closed, the address is free for the manager.
func TestWaitingProbes(t *testing.T) {
	p, err := serveWaitingProbes("127.0.0.1:0", "member3")
	if err != nil {
		t.Fatal(err)
	}
	addr := p.Addr()
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, "waiting for the control plane to confirm Cluster member3"},
	} {
		resp, err := http.Get("http://" + addr + tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
	}
	p.Waiting("the control plane refused the credentials")
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "refused the credentials") {
		t.Errorf("/readyz after Waiting: %d %q", resp.StatusCode, b)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the address after Close: %v", err)
	}
	l.Close()
}

func TestWaitingProbesDisabledOrTaken(t *testing.T) {
	for _, addr := range []string{"", "0"} {
		if p, err := serveWaitingProbes(addr, "member3"); p != nil || err != nil {
			t.Errorf("%q: %v, %v; want nothing served", addr, p, err)
		}
	}
	var none *waitingProbes
	if err := none.Close(); err != nil {
		t.Errorf("Close of nothing served: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := serveWaitingProbes(l.Addr().String(), "member3"); err == nil || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("an address in use: %v, want an error naming it", err)
	}
}
