// Package netproxy is a TCP proxy that can be cut like a network path: the
// local environment puts one in front of each member's API server, on the
// control plane's way to it, so that `lifeboat env partition` makes the
// member unreachable while it keeps running, and `env heal` makes it
// reachable again.
//
// A cut path drops traffic instead of refusing it, as a partition does:
// a new connection is accepted by the kernel but nothing is forwarded, and
// an open one stops carrying bytes in either direction; clients see
// timeouts, not resets. When the path heals, open connections carry on.
package netproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Cut says whether the path is cut now.
type Cut func() bool

// FileCut is cut while the file exists: the state lives outside the proxy,
// so a proxy started again keeps it.
func FileCut(path string) Cut {
	return func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
}

// pollEvery is how often a held connection looks whether the path healed.
const pollEvery = 100 * time.Millisecond

// Serve forwards every connection accepted on ln to target until ctx is
// done. While cut() is true, no byte is forwarded.
func Serve(ctx context.Context, ln net.Listener, target string, cut Cut) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(ctx, c, target, cut)
		}()
	}
}

// forward carries one connection. It dials the target only once the path
// is not cut, as a SYN would only arrive then.
func forward(ctx context.Context, client net.Conn, target string, cut Cut) {
	defer client.Close()
	if !waitOpen(ctx, cut) {
		return
	}
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { pipe(ctx, server, client, cut); done <- struct{}{} }()
	go func() { pipe(ctx, client, server, cut); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// waitOpen blocks while the path is cut; false when ctx ended first.
func waitOpen(ctx context.Context, cut Cut) bool {
	for cut() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pollEvery):
		}
	}
	return true
}

// pipe copies from src to dst, holding each chunk while the path is cut.
func pipe(ctx context.Context, dst io.Writer, src io.Reader, cut Cut) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !waitOpen(ctx, cut) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if c, ok := dst.(interface{ CloseWrite() error }); ok {
				_ = c.CloseWrite()
			}
			return
		}
	}
}
