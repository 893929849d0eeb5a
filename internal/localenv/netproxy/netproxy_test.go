package netproxy

import (
	"bufio"
	"context"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func startProxy(t *testing.T, target string, cut *atomic.Bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, target, cut.Load) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// roundTrip sends a line and waits up to wait for the echo; "" when none came.
func roundTrip(t *testing.T, c net.Conn, line string, wait time.Duration) string {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return ""
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return got[:len(got)-1]
}

func TestCutHoldsOpenConnectionsAndHealResumesThem(t *testing.T) {
	var cut atomic.Bool
	addr := startProxy(t, echoServer(t), &cut)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, "one", 2*time.Second); got != "one" {
		t.Fatalf("before the cut: got %q", got)
	}
	cut.Store(true)
	if got := roundTrip(t, c, "two", 300*time.Millisecond); got != "" {
		t.Fatalf("through a cut path: got %q, want nothing", got)
	}
	cut.Store(false)
	// The held line arrives once the path heals; the connection was not reset.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "two\n" {
		t.Fatalf("after heal: got %q, %v; want the held line", line, err)
	}
}

func TestCutNewConnectionsHangInsteadOfFailing(t *testing.T) {
	var cut atomic.Bool
	cut.Store(true)
	addr := startProxy(t, echoServer(t), &cut)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a cut path refused the connection (%v); it must drop traffic, as a partition does", err)
	}
	defer c.Close()
	if got := roundTrip(t, c, "x", 300*time.Millisecond); got != "" {
		t.Fatalf("through a cut path: got %q", got)
	}
	cut.Store(false)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "x\n" {
		t.Fatalf("after heal: got %q, %v", line, err)
	}
}

func TestFileCut(t *testing.T) {
	p := t.TempDir() + "/cut"
	cut := FileCut(p)
	if cut() {
		t.Fatal("cut without the file")
	}
	if err := writeFile(p); err != nil {
		t.Fatal(err)
	}
	if !cut() {
		t.Fatal("not cut with the file")
	}
}

func writeFile(p string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	return f.Close()
}
