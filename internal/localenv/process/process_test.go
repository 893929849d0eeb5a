package process

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStartAliveStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sleep.log")
	r, err := Start("/bin/sleep", []string{"300"}, nil, log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = r.Stop(time.Second) })
	if !r.Alive() {
		t.Fatalf("process %d not alive right after start", r.PID)
	}
	if err := r.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if r.Alive() {
		t.Fatalf("process %d still alive after Stop", r.PID)
	}
	// Stopping again is a no-op.
	if err := r.Stop(time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// A record whose start time does not match the running process must never be
// signalled: the PID has been reused by something else.
func TestStopSparesReusedPID(t *testing.T) {
	self := Record{PID: os.Getpid()}
	st, err := startTime(self.PID)
	if err != nil {
		t.Fatal(err)
	}
	if !(Record{PID: self.PID, StartTime: st}).Alive() {
		t.Fatal("own process not reported alive with the right start time")
	}
	stale := Record{PID: self.PID, StartTime: st + 1}
	if stale.Alive() {
		t.Fatal("record with wrong start time reported alive")
	}
	if err := stale.Stop(time.Second); err != nil {
		t.Fatalf("Stop on stale record: %v", err)
	}
	if err := stale.Kill(); err != nil {
		t.Fatalf("Kill on stale record: %v", err)
	}
	// We are still here, so nothing was signalled.
}

// Kill does not wait for a process that ignores SIGTERM: a shell trapping
// it would make Stop wait its whole grace period.
func TestKillEndsAtOnce(t *testing.T) {
	log := filepath.Join(t.TempDir(), "trap.log")
	r, err := Start("/bin/sh", []string{"-c", "trap '' TERM; while :; do sleep 1; done"}, nil, log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = r.Stop(time.Second) })
	if err := r.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if r.Alive() {
		t.Fatalf("process %d alive after Kill", r.PID)
	}
	if err := r.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
}

func TestAliveZeroRecord(t *testing.T) {
	if (Record{}).Alive() {
		t.Fatal("zero record reported alive")
	}
}

// StartWatched reports how the process ended: its exit status, or the
// signal that killed it.
func TestStartWatchedReportsTheExit(t *testing.T) {
	dir := t.TempDir()
	_, exited, err := StartWatched("/bin/sh", []string{"-c", "exit 3"}, nil, filepath.Join(dir, "exit.log"))
	if err != nil {
		t.Fatalf("StartWatched: %v", err)
	}
	select {
	case err := <-exited:
		if err == nil || err.Error() != "exit status 3" {
			t.Errorf("exit reported as %v, want exit status 3", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit reported within 10s")
	}

	r, exited, err := StartWatched("/bin/sleep", []string{"300"}, nil, filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatalf("StartWatched: %v", err)
	}
	t.Cleanup(func() { _ = r.Stop(time.Second) })
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil || err.Error() != "signal: killed" {
			t.Errorf("exit reported as %v, want signal: killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit reported within 10s")
	}
}
