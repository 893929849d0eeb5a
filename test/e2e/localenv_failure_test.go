//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalEnvironmentFailedStartLeavesNothing makes the last component (the
// controller manager) fail to start and checks that `up` reports it with the
// tail of its log, stops everything it had started and removes its state.
func TestLocalEnvironmentFailedStartLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "env")
	out, err := lifeboat(t, "up", "--members", "1", "--state-dir", dir, "--cache-dir", suite.cacheDir,
		"--controller-manager-arg=--no-such-flag")
	if err == nil {
		_, _ = lifeboat(t, "down", "--state-dir", dir)
		t.Fatalf("up succeeded with a controller manager that cannot start:\n%s", out)
	}
	for _, want := range []string{"lifeboat-controller-manager did not become healthy", "unknown flag: --no-such-flag"} {
		if !strings.Contains(out, want) {
			t.Errorf("up output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s left behind after a failed start (stat: %v)", dir, err)
	}
	// Every component is started with the state directory in its arguments,
	// so any survivor would show it in its command line.
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes still running after a failed start: %v", pids)
	}
}

// processesMentioning lists the PIDs whose command line contains s. It only
// looks; nothing is signalled.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(s)) {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if strings.Contains(string(stat), ") Z ") {
				continue // a zombie is not running
			}
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return pids
}
