package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// Names of the components other code refers to.
const (
	// SupervisorComponent restarts the others when they exit.
	SupervisorComponent = "lifeboat-supervisor"
	// ControllerManagerComponent is Lifeboat's controller manager.
	ControllerManagerComponent = "lifeboat-controller-manager"
)

// step is what the supervisor does with one component in one pass.
type step int

const (
	stepNone step = iota
	// stepRecordExit records that a run ended, and when to start the
	// component again.
	stepRecordExit
	// stepStart starts the component again.
	stepStart
)

// decide is the supervisor's decision for component c, whose recorded
// process is alive or not, at now:
//  1. a component that is not supervised, or was stopped on purpose
//     (Stopped), is left alone;
//  2. a running one is left alone;
//  3. a run that ended and is not recorded yet is recorded, with the wait
//     before the next start (Backoff.Next; the run lasted since c.Started);
//  4. once that wait is over, the component is started again.
//
// It reads only the recorded state, so a supervisor that restarts carries
// on where the last one stopped, waits included.
func decide(c Component, alive bool, now time.Time, b Backoff) (step, *Exit) {
	switch {
	case !c.Supervised || c.Stopped: // 1
		return stepNone, nil
	case alive: // 2
		return stepNone, nil
	case c.LastExit == nil || c.LastExit.Process != c.Process: // 3
		previous := 0
		if c.LastExit != nil {
			previous = c.LastExit.Failures
		}
		var ran time.Duration
		if !c.Started.IsZero() {
			ran = now.Sub(c.Started)
		}
		wait, failures := b.Next(previous, ran)
		return stepRecordExit, &Exit{Process: c.Process, Time: now, Failures: failures, RetryAt: now.Add(wait)}
	case !now.Before(c.LastExit.RetryAt): // 4
		return stepStart, nil
	}
	return stepNone, nil
}

// Supervisor starts the supervised components of the environment in Dir
// again when they exit, with a back-off, and records each start (PID and
// start time, as every start is recorded) and each exit in the state.
//
// It leaves alone what was stopped on purpose: lifeboat env stop, env
// restart and down mark a component Stopped before they signal it, and the
// supervisor decides and starts only under the same state lock, on a fresh
// read. It never signals anything. It ends when ctx is done, when the
// environment is gone, or when its own record is marked Stopped or names
// another process.
type Supervisor struct {
	Dir     string
	Backoff Backoff
	// Interval is how often the processes are checked.
	Interval time.Duration
	Log      logr.Logger

	self process.Record
	// exits are how the processes this supervisor started end, by record.
	exits map[process.Record]<-chan error
}

// NewSupervisor returns a supervisor of the environment in dir that checks
// every second and backs off with DefaultBackoff.
func NewSupervisor(dir string, log logr.Logger) *Supervisor {
	return &Supervisor{Dir: dir, Backoff: DefaultBackoff(), Interval: time.Second, Log: log}
}

// errNotSupervisor ends a supervisor that is not, or no longer, the
// environment's.
var errNotSupervisor = errors.New("not the environment's supervisor")

// Run supervises until ctx is done, the environment is removed or the
// supervisor is stopped (see Supervisor). It returns an error only when
// this process is not the supervisor recorded in the state at its start.
func (sv *Supervisor) Run(ctx context.Context) error {
	self, err := process.Self()
	if err != nil {
		return err
	}
	sv.self = self
	// The process that starts a supervisor records it in the same locked
	// write; waiting for the lock once is enough to find that record.
	if err := withStateLock(sv.Dir, func(s *State) error {
		if !sv.current(s) {
			return fmt.Errorf("%w: pid %d is not recorded as %s in %s", errNotSupervisor, self.PID, SupervisorComponent, sv.Dir)
		}
		return nil
	}); err != nil {
		return err
	}
	sv.Log.Info("supervising", "dir", sv.Dir, "interval", sv.Interval.String())
	tick := time.NewTicker(sv.Interval)
	defer tick.Stop()
	for {
		err := sv.pass(time.Now())
		switch {
		case errors.Is(err, ErrNotFound):
			sv.Log.Info("the environment is gone; stopping")
			return nil
		case errors.Is(err, errNotSupervisor):
			sv.Log.Info("stopped on purpose or replaced; stopping")
			return nil
		case err != nil:
			sv.Log.Error(err, "supervising")
		}
		select {
		case <-ctx.Done():
			sv.Log.Info("signalled; stopping")
			return nil
		case <-tick.C:
		}
	}
}

// current reports whether s records this process as its supervisor, not
// stopped.
func (sv *Supervisor) current(s *State) bool {
	for _, c := range s.Components {
		if c.Name == SupervisorComponent && c.Process == sv.self && !c.Stopped {
			return true
		}
	}
	return false
}

// pass looks at every component once. Reading needs no lock: the state is
// replaced whole. Only when something is to be done is it read again, and
// decided and changed, under the lock.
func (sv *Supervisor) pass(now time.Time) error {
	s, err := Load(sv.Dir)
	if err != nil {
		return err
	}
	if !sv.current(s) {
		return errNotSupervisor
	}
	if !sv.anythingToDo(s, now) {
		return nil
	}
	return withStateLock(sv.Dir, func(s *State) error {
		if !sv.current(s) {
			return errNotSupervisor
		}
		sv.forgetOthers(s)
		for i := range s.Components {
			sv.apply(&s.Components[i], now)
		}
		return nil
	})
}

func (sv *Supervisor) anythingToDo(s *State, now time.Time) bool {
	for _, c := range s.Components {
		if st, _ := decide(c, c.Process.Alive(), now, sv.Backoff); st != stepNone {
			return true
		}
	}
	return false
}

// apply carries out decide's step for c, under the state lock.
func (sv *Supervisor) apply(c *Component, now time.Time) {
	st, exit := decide(*c, c.Process.Alive(), now, sv.Backoff)
	log := sv.Log.WithValues("component", c.Name)
	switch st {
	case stepRecordExit:
		exit.Reason = sv.exitReason(*c)
		c.LastExit = exit
		log.Info("exited; starting it again after a back-off", "pid", c.Process.PID, "reason", exit.Reason,
			"failures", exit.Failures, "retryAt", exit.RetryAt.Format(time.RFC3339))
	case stepStart:
		rec, exited, err := process.StartWatched(c.Binary, c.Args, c.Env, c.Log)
		if err != nil {
			// As a run that ended at once: the wait grows.
			wait, failures := sv.Backoff.Next(c.LastExit.Failures, 0)
			c.LastExit.Reason = "starting: " + err.Error()
			c.LastExit.Failures, c.LastExit.RetryAt = failures, now.Add(wait)
			log.Error(err, "starting again", "retryAt", c.LastExit.RetryAt.Format(time.RFC3339))
			return
		}
		c.Process, c.Started = rec, now
		c.Restarts++
		if sv.exits == nil {
			sv.exits = map[process.Record]<-chan error{}
		}
		sv.exits[rec] = exited
		log.Info("started again", "pid", rec.PID, "restarts", c.Restarts)
	}
}

// forgetOthers drops the exits of processes no component records any more
// (stopped and started again by someone else).
func (sv *Supervisor) forgetOthers(s *State) {
	recorded := map[process.Record]bool{}
	for _, c := range s.Components {
		recorded[c.Process] = true
	}
	for rec := range sv.exits {
		if !recorded[rec] {
			delete(sv.exits, rec)
		}
	}
}

// exitReason says how c's recorded process ended: its exit status when this
// supervisor started it (and so could wait for it), and the last line of its
// log, where a component usually says why it gave up.
func (sv *Supervisor) exitReason(c Component) string {
	status := "exited"
	if ch, ok := sv.exits[c.Process]; ok {
		delete(sv.exits, c.Process)
		// The process is gone or a zombie: it is being reaped now.
		select {
		case err := <-ch:
			status = "exit status 0"
			if err != nil {
				status = err.Error()
			}
		case <-time.After(2 * time.Second):
		}
	}
	if line := lastLogLine(c.Log); line != "" {
		return status + ": " + line
	}
	return status
}

// How much of a log exitReason reads, and how much of its last line it keeps.
const (
	logTailBytes    = 4096
	lastLineMaxSize = 240
)

// lastLogLine returns the last non-empty line of the log at path, cut to
// lastLineMaxSize bytes, or "" when there is none.
func lastLogLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTailBytes {
		if _, err := f.Seek(fi.Size()-logTailBytes, io.SeekStart); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, logTailBytes))
	if err != nil {
		return ""
	}
	data = bytes.TrimRight(data, "\r\n\t ")
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	line := strings.TrimSpace(strings.ToValidUTF8(string(data), "?"))
	if len(line) <= lastLineMaxSize {
		return line
	}
	cut := lastLineMaxSize
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "…"
}
