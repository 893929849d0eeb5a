package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

func TestDecide(t *testing.T) {
	b := DefaultBackoff()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	run := process.Record{PID: 100, StartTime: 7}
	earlier := process.Record{PID: 90, StartTime: 5}
	comp := func(mod func(*Component)) Component {
		c := Component{Name: "c", Supervised: true, Process: run, Started: now.Add(-5 * time.Second)}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	cases := map[string]struct {
		c        Component
		alive    bool
		want     step
		wantExit *Exit
	}{
		"rule 1: not supervised, exited": {c: comp(func(c *Component) { c.Supervised = false }), want: stepNone},
		"rule 1: stopped on purpose":     {c: comp(func(c *Component) { c.Stopped = true }), want: stepNone},
		"rule 1: stopped on purpose, even with a restart due": {c: comp(func(c *Component) {
			c.Stopped = true
			c.LastExit = &Exit{Process: run, RetryAt: now.Add(-time.Hour)}
		}), want: stepNone},
		"rule 2: running":                       {c: comp(nil), alive: true, want: stepNone},
		"rule 2: running with an exit recorded": {c: comp(func(c *Component) { c.LastExit = &Exit{Process: earlier, RetryAt: now.Add(-time.Hour)} }), alive: true, want: stepNone},
		"rule 3: a first exit waits Initial": {c: comp(nil), want: stepRecordExit,
			wantExit: &Exit{Process: run, Time: now, Failures: 1, RetryAt: now.Add(time.Second)}},
		"rule 3: another short run waits longer": {c: comp(func(c *Component) { c.LastExit = &Exit{Process: earlier, Failures: 3} }), want: stepRecordExit,
			wantExit: &Exit{Process: run, Time: now, Failures: 4, RetryAt: now.Add(8 * time.Second)}},
		"rule 3: after a stable run, the series starts again": {c: comp(func(c *Component) {
			c.LastExit = &Exit{Process: earlier, Failures: 3}
			c.Started = now.Add(-2 * time.Minute)
		}), want: stepRecordExit, wantExit: &Exit{Process: run, Time: now, Failures: 1, RetryAt: now.Add(time.Second)}},
		"rule 3: no start time recorded counts as a short run": {c: comp(func(c *Component) {
			c.Started = time.Time{}
			c.LastExit = &Exit{Process: earlier, Failures: 1}
		}), want: stepRecordExit, wantExit: &Exit{Process: run, Time: now, Failures: 2, RetryAt: now.Add(2 * time.Second)}},
		"rule 4: waiting":       {c: comp(func(c *Component) { c.LastExit = &Exit{Process: run, RetryAt: now.Add(time.Millisecond)} }), want: stepNone},
		"rule 4: the wait ends": {c: comp(func(c *Component) { c.LastExit = &Exit{Process: run, RetryAt: now} }), want: stepStart},
		"rule 4: overdue":       {c: comp(func(c *Component) { c.LastExit = &Exit{Process: run, RetryAt: now.Add(-time.Minute)} }), want: stepStart},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, exit := decide(tc.c, tc.alive, now, b)
			if got != tc.want {
				t.Fatalf("step %d, want %d", got, tc.want)
			}
			if (exit == nil) != (tc.wantExit == nil) || (exit != nil && *exit != *tc.wantExit) {
				t.Errorf("exit %+v, want %+v", exit, tc.wantExit)
			}
		})
	}
}

// supervisedEnv is a state directory with components run by the test and a
// supervisor whose passes the test drives. The supervisor's record is a
// stand-in process (Down stops it), never the test process.
type supervisedEnv struct {
	dir string
	sv  *Supervisor
}

func newSupervisedEnv(t *testing.T, comps ...Component) *supervisedEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := process.Start("/bin/sleep", []string{"300"}, nil, filepath.Join(dir, "logs", SupervisorComponent+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = self.Kill() })
	s := &State{Dir: dir, Ready: true}
	for _, c := range comps {
		c.Log = filepath.Join(dir, "logs", c.Name+".log")
		c.Supervised = true
		s.Components = append(s.Components, c)
	}
	s.Components = append(s.Components, Component{Name: SupervisorComponent, Process: self})
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	e := &supervisedEnv{dir: dir, sv: NewSupervisor(dir, logr.Discard())}
	e.sv.self = self
	t.Cleanup(func() {
		s, err := Load(dir)
		if err != nil {
			return
		}
		for _, c := range s.Components {
			if c.Name != SupervisorComponent {
				_ = c.Process.Kill()
			}
		}
		for rec := range e.sv.exits {
			_ = rec.Kill()
		}
	})
	return e
}

// get returns component name's record.
func (e *supervisedEnv) get(t *testing.T, name string) Component {
	t.Helper()
	return mustComponent(t, e.dir, name)
}

// start runs component name's command as `lifeboat up` would, and records
// it, started at.
func (e *supervisedEnv) start(t *testing.T, name string, at time.Time) process.Record {
	t.Helper()
	var rec process.Record
	if err := updateComponent(e.dir, name, func(c *Component) {
		r, err := process.Start(c.Binary, c.Args, c.Env, c.Log)
		if err != nil {
			t.Fatal(err)
		}
		c.Process, c.Started, rec = r, at, r
	}); err != nil {
		t.Fatal(err)
	}
	return rec
}

func (e *supervisedEnv) pass(t *testing.T, now time.Time) {
	t.Helper()
	if err := e.sv.pass(now); err != nil {
		t.Fatalf("pass: %v", err)
	}
}

// waitGone polls until rec has exited.
func waitGone(t *testing.T, rec process.Record) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for rec.Alive() {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still running after 10s", rec.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A supervised component that exits is recorded with its reason, waited
// for with a growing back-off, and started again under a new PID.
func TestSupervisorStartsAnExitedComponentAgain(t *testing.T) {
	e := newSupervisedEnv(t, Component{Name: "crasher", Binary: "/bin/sh", Args: []string{"-c", "echo 'giving up: lease lost'; exit 3"}})
	t0 := time.Now()
	first := e.start(t, "crasher", t0)
	waitGone(t, first)

	// Rule 3: the exit is recorded; nothing starts before the back-off.
	e.pass(t, t0.Add(time.Second))
	c := e.get(t, "crasher")
	if c.LastExit == nil || c.LastExit.Process != first || c.LastExit.Failures != 1 || !c.LastExit.RetryAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("first exit recorded as %+v, want run %v, 1 failure, retry at +2s", c.LastExit, first)
	}
	// Not started by the supervisor: the status is unknown, the log says why.
	if c.LastExit.Reason != "exited: giving up: lease lost" {
		t.Errorf("reason %q, want the log's last line", c.LastExit.Reason)
	}
	e.pass(t, t0.Add(1500*time.Millisecond))
	if c := e.get(t, "crasher"); c.Process != first || c.Restarts != 0 {
		t.Fatalf("started again before the back-off ended: %+v", c)
	}

	// Rule 4: started again once the wait is over.
	e.pass(t, t0.Add(2*time.Second))
	c = e.get(t, "crasher")
	if c.Process == first || c.Process.PID == 0 || c.Restarts != 1 || c.Stopped {
		t.Fatalf("after the back-off: %+v, want a new process and 1 restart", c)
	}
	second := c.Process

	// The supervisor's own child: its exit status is known. It ran 1s, a
	// short run: the wait doubles.
	waitGone(t, second)
	e.pass(t, t0.Add(3*time.Second))
	c = e.get(t, "crasher")
	if c.LastExit == nil || c.LastExit.Process != second || c.LastExit.Reason != "exit status 3: giving up: lease lost" {
		t.Fatalf("second exit recorded as %+v, want exit status 3 and the log line", c.LastExit)
	}
	if c.LastExit.Failures != 2 || !c.LastExit.RetryAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("second exit: %d failures, retry at %s; want 2 and +5s", c.LastExit.Failures, c.LastExit.RetryAt.Sub(t0))
	}
}

// What was stopped on purpose stays stopped, however long the supervisor
// runs, and a pass with nothing to do writes nothing; once started again,
// the component is supervised again.
func TestSupervisorLeavesStoppedComponentsAlone(t *testing.T) {
	e := newSupervisedEnv(t,
		Component{Name: "server", Binary: "/bin/sleep", Args: []string{"300"}},
		Component{Name: "other", Binary: "/bin/sleep", Args: []string{"300"}},
	)
	t0 := time.Now()
	server := e.start(t, "server", t0)
	other := e.start(t, "other", t0)
	if err := StopComponent(e.dir, "server"); err != nil {
		t.Fatal(err)
	}
	if server.Alive() {
		t.Fatal("StopComponent left the process running")
	}
	before, err := os.ReadFile(filepath.Join(e.dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= 5; h++ {
		e.pass(t, t0.Add(time.Duration(h)*time.Hour))
	}
	after, err := os.ReadFile(filepath.Join(e.dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("passes with nothing to do changed the state:\nbefore %s\nafter  %s", before, after)
	}
	if c := e.get(t, "server"); c.Process != server || c.Restarts != 0 || c.LastExit != nil || !c.Stopped {
		t.Fatalf("the supervisor touched a component stopped on purpose: %+v", c)
	}

	// The same passes do act on a component that exits on its own.
	if err := other.Kill(); err != nil {
		t.Fatal(err)
	}
	e.pass(t, t0.Add(6*time.Hour))
	e.pass(t, t0.Add(7*time.Hour))
	if c := e.get(t, "other"); c.Restarts != 1 || !c.Process.Alive() {
		t.Fatalf("a crashed component was not started again: %+v", c)
	}

	// Started again by hand, the stopped one is supervised again.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := StartComponent(ctx, e.dir, "server"); err != nil {
		t.Fatal(err)
	}
	c := e.get(t, "server")
	if c.Stopped || !c.Process.Alive() {
		t.Fatalf("after StartComponent: %+v", c)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	e.pass(t, t0.Add(8*time.Hour))
	e.pass(t, t0.Add(9*time.Hour))
	if c := e.get(t, "server"); c.Restarts != 1 || !c.Process.Alive() {
		t.Fatalf("after a crash, a component started again by hand was not restarted: %+v", c)
	}
}

// runPasses runs supervisor passes back to back, without back-off, until
// stop is called, and counts them.
func runPasses(e *supervisedEnv) (passes *atomic.Int64, stop func()) {
	e.sv.Backoff = Backoff{Stable: time.Minute}
	passes = &atomic.Int64{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = e.sv.pass(time.Now())
			passes.Add(1)
		}
	}()
	return passes, func() { close(done); wg.Wait() }
}

// waitPasses waits until the supervisor has run n more passes.
func waitPasses(t *testing.T, passes *atomic.Int64, n int64) {
	t.Helper()
	target := passes.Load() + n
	deadline := time.Now().Add(10 * time.Second)
	for passes.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor ran %d of %d passes in 10s", passes.Load(), target)
		}
		time.Sleep(time.Millisecond)
	}
}

// `lifeboat env stop` while the supervisor runs flat out: the component
// stays down every time. It is marked before it is signalled, so the
// supervisor never sees it gone and unmarked.
func TestStopComponentIsNotUndoneByARunningSupervisor(t *testing.T) {
	e := newSupervisedEnv(t, Component{Name: "apiserver", Binary: "/bin/sleep", Args: []string{"300"}})
	e.start(t, "apiserver", time.Now())
	passes, stop := runPasses(e)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 15; i++ {
		stopped := e.get(t, "apiserver").Process
		if err := StopComponent(e.dir, "apiserver"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		waitPasses(t, passes, 5)
		c := e.get(t, "apiserver")
		if c.Process != stopped || c.Process.Alive() || !c.Stopped {
			t.Fatalf("round %d: the supervisor undid env stop: %+v (stopped pid %d)", i, c, stopped.PID)
		}
		if err := StartComponent(ctx, e.dir, "apiserver"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if c := e.get(t, "apiserver"); c.Restarts != 0 {
		t.Errorf("the supervisor started the component %d times", c.Restarts)
	}
}

// `lifeboat down` while the supervisor runs flat out and components crash
// and restart: afterwards no process of the environment runs, neither one
// Down read in the state nor one the supervisor started meanwhile. Every
// process carries a marker argument, so that the test can look for them in
// /proc; it only looks, and signals nothing there.
func TestDownLeavesNothingRunningWhileSupervised(t *testing.T) {
	for round := 0; round < 3; round++ {
		marker := fmt.Sprintf("lifeboat-down-test-%d-%d", os.Getpid(), round)
		e := newSupervisedEnv(t,
			Component{Name: "flaky", Binary: "/bin/sh", Args: []string{"-c", "sleep 0.05; exit 1", marker}},
			Component{Name: "steady", Binary: "/bin/sh", Args: []string{"-c", "sleep 30; :", marker}},
		)
		now := time.Now()
		e.start(t, "flaky", now)
		e.start(t, "steady", now)
		passes, stop := runPasses(e)
		waitPasses(t, passes, 20)
		if err := Down(e.dir, io.Discard); err != nil {
			stop()
			t.Fatalf("Down: %v", err)
		}
		waitPasses(t, passes, 20)
		stop()
		if pids := withArg(t, marker); len(pids) > 0 {
			t.Fatalf("round %d: pids %v still run after Down (unrecorded: they end within 30s)", round, pids)
		}
		if _, err := os.Stat(e.dir); !os.IsNotExist(err) {
			t.Errorf("state directory left behind: %v", err)
		}
	}
}

// withArg returns the PIDs of running processes with arg in their command
// line.
func withArg(t *testing.T, arg string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(cmdline, []byte{0}) {
			if string(a) == arg {
				if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !bytes.Contains(st, []byte(") Z ")) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// The supervisor ends when its record is stopped (lifeboat down) and
// refuses to run when the state does not record it.
func TestSupervisorRunEndsWhenStopped(t *testing.T) {
	dir := t.TempDir()
	self, err := process.Self()
	if err != nil {
		t.Fatal(err)
	}
	// The test process is recorded as the supervisor: nothing here may
	// stop it by that record.
	s := &State{Dir: dir, Components: []Component{{Name: SupervisorComponent, Process: self}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, `"dir"`) {
			once.Do(func() { close(started) })
		}
	}, funcr.Options{})
	sv := NewSupervisor(dir, log)
	sv.Interval = 5 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- sv.Run(context.Background()) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Run ended at once: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor did not start within 10s")
	}
	if err := updateComponent(dir, SupervisorComponent, func(c *Component) { c.Stopped = true }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor still runs 10s after its record was stopped")
	}

	if err := updateComponent(dir, SupervisorComponent, func(c *Component) { c.Stopped, c.Process.PID = false, self.PID+1 }); err != nil {
		t.Fatal(err)
	}
	if err := NewSupervisor(dir, logr.Discard()).Run(context.Background()); !errors.Is(err, errNotSupervisor) {
		t.Errorf("a supervisor the state does not record ran: %v", err)
	}
}

func TestLastLogLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("é", 300)
	cases := map[string]struct{ content, want string }{
		"last of several lines":    {"one\ntwo\nError: leader election lost\n", "Error: leader election lost"},
		"trailing blank lines":     {"first\nlast\n\n\n", "last"},
		"no newline at the end":    {"a\nb", "b"},
		"empty":                    {"", ""},
		"a long line is cut":       {"x\n" + long + "\n", long[:lastLineMaxSize] + "…"},
		"a line longer than read":  {strings.Repeat("y", 3*logTailBytes) + "\n", strings.Repeat("y", lastLineMaxSize) + "…"},
		"invalid UTF-8 is escaped": {"ok\nbad \xff byte\n", "bad ? byte"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := lastLogLine(p); got != tc.want {
				t.Errorf("lastLogLine = %q, want %q", got, tc.want)
			}
		})
	}
	if got := lastLogLine(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("a missing log gave %q", got)
	}
}
