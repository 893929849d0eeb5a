package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// lifeboat status shows each component's restarts and how it last ended.
func TestPrintStatus(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	rows := []localenv.ComponentStatus{
		{Name: "lifeboat-apiserver", PID: 10, Supervised: true, Detail: "not running (stopped on request)"},
		{Name: localenv.ControllerManagerComponent, PID: 20, Running: true, Healthy: true, Supervised: true, Restarts: 2,
			LastExit: &localenv.Exit{Time: now.Add(-125 * time.Second), Reason: "exited: Error: running manager: leader election lost"}},
		{Name: "member1-kwok", PID: 30, Supervised: true, Restarts: 1, Detail: "not running (exited; the supervisor starts it again in 4s)",
			LastExit: &localenv.Exit{Time: now.Add(-2 * time.Second), Reason: "signal: killed"}},
		{Name: localenv.SupervisorComponent, PID: 40, Running: true, Healthy: true},
	}
	var b strings.Builder
	unhealthy, err := printStatus(&b, rows, now)
	if err != nil {
		t.Fatal(err)
	}
	if unhealthy != 2 {
		t.Errorf("%d unhealthy, want 2", unhealthy)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := [][]string{
		{"COMPONENT", "PID", "STATUS", "RESTARTS", "DETAIL"},
		{"lifeboat-apiserver", "10", "Unhealthy", "0", "not running (stopped on request)"},
		{"lifeboat-controller-manager", "20", "Healthy", "2", "last exit 2m5s ago: exited: Error: running manager: leader election lost"},
		{"member1-kwok", "30", "Unhealthy", "1", "not running (exited; the supervisor starts it again in 4s); last exit 2s ago: signal: killed"},
		{"lifeboat-supervisor", "40", "Healthy", "-"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, fields := range want {
		got := strings.Join(strings.Fields(lines[i]), " ")
		if w := strings.Join(fields, " "); got != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, w)
		}
	}
}
