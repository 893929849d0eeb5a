// Package process starts the local environment's long-running processes
// detached from the caller, and stops them again by their recorded PID.
//
// A PID alone is not an identity: after a reboot or a long time the number can
// belong to an unrelated process. Every record therefore also carries the
// process's start time as the kernel reports it (/proc/PID/stat, field 22);
// a process is only signalled when both match. Nothing is ever found or killed
// by name.
package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Record identifies a started process.
type Record struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// Start runs path with args in its own session (so a terminal's Ctrl-C or the
// caller's exit does not reach it), with stdout and stderr appended to logFile.
func Start(path string, args []string, env []string, logFile string) (Record, error) {
	rec, _, err := StartWatched(path, args, env, logFile)
	return rec, err
}

// StartWatched is Start that also reports how the process ends, for as long
// as the caller runs: exited receives exec.Cmd.Wait's result once, after the
// process has exited and been reaped (nil for exit status 0, else an
// *exec.ExitError that reads "exit status 1" or "signal: killed").
//
// A process whose start time cannot be read is killed at once and not
// returned: without its start time it could never be told apart from a
// later process with the same PID, so it could not be stopped safely.
func StartWatched(path string, args []string, env []string, logFile string) (rec Record, exited <-chan error, err error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Record{}, nil, fmt.Errorf("opening log %s: %w", logFile, err)
	}
	defer log.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Record{}, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	pid := cmd.Process.Pid
	// Read before the child can be reaped: until then even a child that
	// has already exited keeps its /proc entry, as a zombie.
	st, err := startTime(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return Record{}, nil, fmt.Errorf("reading start time of pid %d: %w", pid, err)
	}
	// Reap the child when it exits while we are still running, so that a
	// crashed component shows as gone instead of as a zombie.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return Record{PID: pid, StartTime: st}, done, nil
}

// Alive reports whether the recorded process is still running (and is the
// same process: same PID and start time, not a zombie).
func (r Record) Alive() bool {
	if r.PID <= 0 {
		return false
	}
	st, state, err := stat(r.PID)
	if err != nil {
		return false
	}
	return st == r.StartTime && state != "Z" && state != "X"
}

// Stop sends SIGTERM to the recorded process's group, waits up to grace for it
// to exit, then sends SIGKILL. Stopping a process that is already gone is not
// an error.
func (r Record) Stop(grace time.Duration) error {
	if !r.Alive() {
		return nil
	}
	// The process was started with Setsid, so its PID is also its process
	// group ID; signalling the group also reaches any children it spawned.
	if err := syscall.Kill(-r.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling pid %d: %w", r.PID, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !r.Alive() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r.Kill()
}

// Kill sends SIGKILL to the recorded process's group at once, as a crash
// would end it: its connections are reset instead of drained. Killing a
// process that is already gone is not an error.
func (r Record) Kill() error {
	if !r.Alive() {
		return nil
	}
	if err := syscall.Kill(-r.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing pid %d: %w", r.PID, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !r.Alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pid %d did not exit after SIGKILL", r.PID)
}

func startTime(pid int) (uint64, error) {
	st, _, err := stat(pid)
	return st, err
}

// stat returns the start time (clock ticks after boot) and state letter of pid.
func stat(pid int) (uint64, string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) may contain spaces and parentheses; the
	// fields after it start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return 0, "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("parsing start time in /proc/%d/stat: %w", pid, err)
	}
	return st, fields[0], nil
}

// Self returns the record of the calling process.
func Self() (Record, error) {
	pid := os.Getpid()
	st, err := startTime(pid)
	if err != nil {
		return Record{}, fmt.Errorf("reading own start time: %w", err)
	}
	return Record{PID: pid, StartTime: st}, nil
}
