package components

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The pause program (modules/pause, built as the cache builds it) keeps
// running until SIGINT or SIGTERM, and then exits 0.
func TestPauseStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the pause module with the go tool")
	}
	var pause module
	for _, m := range modules {
		if m.dir == Pause {
			pause = m
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bins := Binaries{}
	if err := ensureSet(ctx, filepath.Join(t.TempDir(), "pause"), []module{pause}, bins, io.Discard); err != nil {
		t.Fatal(err)
	}
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bins.Path(Pause))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Fatalf("pause exited on its own: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			// A SIGCHLD (no child to reap) must not stop it either.
			_ = cmd.Process.Signal(syscall.SIGCHLD)
			select {
			case err := <-done:
				t.Fatalf("pause exited on SIGCHLD: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("pause exited with %v on %s, want 0", err, name)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("pause did not exit on %s", name)
			}
		})
	}
}
