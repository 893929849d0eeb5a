package localenv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// RestartComponent starts a component that has exited, and restarts one
// that runs, each time under a new PID.
func TestRestartComponent(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	healthy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer healthy.Close()
	s := &State{Dir: dir, Components: []Component{{
		Name: "sleeper", Binary: "/bin/sleep", Args: []string{"30"},
		Log: filepath.Join(dir, "logs", "sleeper.log"), Health: healthy.URL,
	}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = StopComponent(dir, "sleeper") })
	pid := func() int {
		t.Helper()
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Components[0].Process.Alive() {
			t.Fatal("sleeper is not running")
		}
		return s.Components[0].Process.PID
	}

	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a component that never ran: %v", err)
	}
	first := pid()
	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a running component: %v", err)
	}
	second := pid()
	if second == first {
		t.Errorf("still pid %d after a restart", first)
	}
	if err := StopComponent(dir, "sleeper"); err != nil {
		t.Fatal(err)
	}
	if err := RestartComponent(ctx, dir, "sleeper"); err != nil {
		t.Fatalf("restarting a component that exited: %v", err)
	}
	if third := pid(); third == second {
		t.Errorf("still pid %d after starting it again", second)
	}
	if err := RestartComponent(ctx, dir, "nosuch"); err == nil {
		t.Error("restarting an unknown component did not fail")
	}
}
