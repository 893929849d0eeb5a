package localenv

import (
	"testing"
	"time"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

func TestNotRunning(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	run := process.Record{PID: 10, StartTime: 1}
	cases := map[string]struct {
		c    Component
		want string
	}{
		"stopped on purpose": {Component{Supervised: true, Stopped: true, Process: run,
			LastExit: &Exit{Process: run, RetryAt: now}}, "not running (stopped on request)"},
		"not supervised": {Component{Process: run}, "not running"},
		"exited, not seen by the supervisor yet": {Component{Supervised: true, Process: run,
			LastExit: &Exit{Process: process.Record{PID: 9}}}, "not running (exited)"},
		"waiting out the back-off": {Component{Supervised: true, Process: run,
			LastExit: &Exit{Process: run, RetryAt: now.Add(8 * time.Second)}}, "not running (exited; the supervisor starts it again in 8s)"},
		"the back-off is over": {Component{Supervised: true, Process: run,
			LastExit: &Exit{Process: run, RetryAt: now.Add(-time.Second)}}, "not running (exited; the supervisor starts it again now)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := notRunning(tc.c, now); got != tc.want {
				t.Errorf("notRunning = %q, want %q", got, tc.want)
			}
		})
	}
}
