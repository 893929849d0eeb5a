package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// waitingProbes answers the health probes while the agent waits for the
// control plane to confirm its Cluster, before its manager (which serves
// them afterwards) runs: /healthz says the process is alive, which it is,
// fencing meanwhile; /readyz says what it waits for. Without it a
// liveness probe would kill an agent started behind a partition every
// half minute, and leave it in its back-off for minutes after the
// partition heals.
type waitingProbes struct {
	server   *http.Server
	listener net.Listener
	done     chan struct{}
	// waiting is what /readyz says the agent waits for.
	waiting atomic.Pointer[string]
}

// serveWaitingProbes serves the probes on addr ("" or "0": none).
func serveWaitingProbes(addr, cluster string) (*waitingProbes, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the health probes on %s: %w", addr, err)
	}
	p := &waitingProbes{listener: l, done: make(chan struct{})}
	p.Waiting(fmt.Sprintf("waiting for the control plane to confirm Cluster %s", cluster))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, *p.waiting.Load(), http.StatusServiceUnavailable)
	})
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.server.Serve(l)
	}()
	return p, nil
}

// Waiting sets what /readyz says the agent waits for.
func (p *waitingProbes) Waiting(why string) {
	if p != nil {
		p.waiting.Store(&why)
	}
}

// Addr is the address served.
func (p *waitingProbes) Addr() string { return p.listener.Addr().String() }

// Close stops serving and frees the address for the manager.
func (p *waitingProbes) Close() error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := p.server.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.server.Close()
	}
	<-p.done
	return err
}
