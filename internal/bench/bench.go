package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/version"
)

// Scenario names.
const (
	ScenarioPropagation     = "propagation"
	ScenarioAppFailover     = "app-failover"
	ScenarioClusterFailover = "cluster-failover"
	ScenarioFailback        = "failback"
	ScenarioFootprint       = "footprint"
)

// AllScenarios are the scenarios in the order they run.
var AllScenarios = []string{ScenarioPropagation, ScenarioAppFailover, ScenarioClusterFailover, ScenarioFailback, ScenarioFootprint}

// Options are the bench's parameters.
type Options struct {
	Scenarios []string
	// Runs of each scenario.
	Runs int
	// ScenarioRuns overrides Runs per scenario (name -> runs).
	ScenarioRuns map[string]int
	// NoTargets leaves Lifeboat's targets, and whether they are met, out
	// of the report: for a report on another control plane.
	NoTargets bool
	// PlaneVersion names what is measured (for example "karmada v1.16.0"),
	// for the report.
	PlaneVersion string
	// N Deployments of the propagation scenario.
	N int
	// PropagationMember pins the propagation scenario's Deployments to one
	// member ("" = wherever the scheduler puts each, one member each): to
	// compare a Pull member with a Push one in the same environment.
	PropagationMember string
	// ClusterFailoverN Deployments pinned to the stopped member.
	ClusterFailoverN int
	// ClusterFailoverMember is the member stopped ("" = the first), also
	// by failback.
	ClusterFailoverMember string
	// FailbackN Deployments fail over and come back.
	FailbackN int
	// FailbackWindow is the failback policy's stabilizationSeconds.
	FailbackWindow time.Duration
	// ControllerMetricsURL is the controller manager's metrics endpoint
	// (http://host:port/metrics); failback reads its reconcile counts
	// there, "" skips that figure.
	ControllerMetricsURL string
	// Toleration is app-failover's tolerationSeconds.
	Toleration int32
	// Timeout bounds each wait of a run (scaled up for large N).
	Timeout time.Duration
	// IdleWindow is how long footprint watches the controllers idle.
	IdleWindow time.Duration
	// SteadyBindings > 0 adds footprint's steady state at that many
	// bindings over the members.
	SteadyBindings int
	// Controllers are the controller processes footprint measures
	// (name -> PID); none skips the process figures.
	Controllers map[string]int
	// ExtraProcesses are more processes footprint reports each on its own
	// but leaves out of the totals (a webhook, an aggregated API server).
	ExtraProcesses map[string]int
	// EnvProcesses returns the other processes of the environment now
	// (the local environment's API servers, etcd, the members'
	// components), whose CPU the cluster-failover scenario accounts with
	// the controllers', the extra processes' and its own; nil accounts
	// none.
	EnvProcesses func() map[string]int
	// Flags are the command line, for the report.
	Flags map[string]string
}

// DefaultOptions are the benchmark's standard settings, those the
// targets in docs/performance.md are measured with.
func DefaultOptions() Options {
	return Options{
		Scenarios:        slices.Clone(AllScenarios),
		Runs:             3,
		N:                50,
		ClusterFailoverN: 50,
		FailbackN:        20,
		FailbackWindow:   20 * time.Second,
		Toleration:       10,
		Timeout:          5 * time.Minute,
		IdleWindow:       time.Minute,
	}
}

// Validate reports options that cannot work, before the bench connects to
// anything: unknown or no scenarios, and a count or duration that the
// selected scenarios need positive. The member names are checked by Run,
// against the environment's members.
func (o Options) Validate() error {
	if len(o.Scenarios) == 0 {
		return fmt.Errorf("--scenarios is empty: give at least one of %s", strings.Join(AllScenarios, ", "))
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			return fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(AllScenarios, ", "))
		}
	}
	if o.Runs < 1 {
		return errors.New("--runs must be at least 1")
	}
	selected := func(s string) bool { return slices.Contains(o.Scenarios, s) }
	for name, n := range o.ScenarioRuns {
		if !slices.Contains(AllScenarios, name) {
			return fmt.Errorf("--scenario-runs: unknown scenario %q (known: %s)", name, strings.Join(AllScenarios, ", "))
		}
		// Runs of a scenario that does not run are a mistyped --scenarios
		// or --scenario-runs, not something to ignore.
		if !selected(name) {
			return fmt.Errorf("--scenario-runs: %s is not among the selected scenarios (%s)", name, strings.Join(o.Scenarios, ", "))
		}
		if n < 1 {
			return fmt.Errorf("--scenario-runs: %s must run at least once, got %d", name, n)
		}
	}
	if selected(ScenarioPropagation) {
		if err := checkObjects("-n", o.N, 1); err != nil {
			return err
		}
	}
	if selected(ScenarioAppFailover) {
		// The policy's tolerationSeconds is an int32 from 0 up: a negative
		// one would be refused by the API server in every run.
		if o.Toleration < 0 {
			return fmt.Errorf("--toleration-seconds must be between 0 and %d, got %d", math.MaxInt32, o.Toleration)
		}
	}
	if selected(ScenarioClusterFailover) {
		if err := checkObjects("--cluster-failover-n", o.ClusterFailoverN, 1); err != nil {
			return err
		}
	}
	if selected(ScenarioFailback) {
		if err := checkObjects("--failback-n", o.FailbackN, 1); err != nil {
			return err
		}
		if w := o.FailbackWindow; w < time.Second || w%time.Second != 0 || w > math.MaxInt32*time.Second {
			return fmt.Errorf("--failback-window must be whole seconds between 1s and %ds, got %s", math.MaxInt32, w)
		}
	}
	if selected(ScenarioFootprint) {
		if o.IdleWindow < MinIdleWindow {
			return fmt.Errorf("--idle-window must be at least %s, got %s", MinIdleWindow, o.IdleWindow)
		}
		if err := checkObjects("--steady-bindings", o.SteadyBindings, 0); err != nil {
			return err
		}
	}
	// Every scenario but footprint without its steady state waits with
	// the timeout.
	waits := o.SteadyBindings > 0 || slices.ContainsFunc(o.Scenarios, func(s string) bool { return s != ScenarioFootprint })
	if waits && o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s", o.Timeout)
	}
	return nil
}

// MinIdleWindow is the shortest --idle-window. The idle CPU is the CPU time
// used over the window, per minute, and /proc counts CPU time in clock ticks
// (1/clockTicks s): over 10s one tick is already 0.06 CPU-seconds a minute,
// about a quarter of the idle targets, and over a shorter window the figure
// counts ticks rather than measures anything (a window of 0 would make it
// NaN, which report.json cannot hold).
const MinIdleWindow = 10 * time.Second

// MaxObjects bounds the objects one scenario creates: ten times the
// largest run the bench is meant for, and far below where a wait of
// --timeout plus a second per object would overflow.
const MaxObjects = 100_000

// checkObjects refuses a count of objects below least or above MaxObjects.
func checkObjects(flag string, n, least int) error {
	if n < least || n > MaxObjects {
		return fmt.Errorf("%s must be between %d and %d, got %d", flag, least, MaxObjects, n)
	}
	return nil
}

// Bench runs the scenarios on one environment.
type Bench struct {
	Env     *Env
	Members MemberControl
	Options Options
	// Progress receives one line per step; the bench runs for minutes.
	Progress io.Writer
	// Versions are extra versions for the report (lifeboat's, ...).
	Versions map[string]string
	Clock    clock.Clock

	tracker *Tracker
	mu      sync.Mutex
}

// Run runs the selected scenarios and returns the report. A failed run is
// recorded in the report, not returned: the other runs still count.
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	if b.Clock == nil {
		b.Clock = clock.RealClock{}
	}
	if b.Progress == nil {
		b.Progress = io.Discard
	}
	if err := b.Options.Validate(); err != nil {
		return nil, err
	}
	for name := range b.Options.ExtraProcesses {
		if _, ok := b.Options.Controllers[name]; ok {
			return nil, fmt.Errorf("--extra-pids: %s is also a controller process; give it one name", name)
		}
	}
	var members []string
	if b.Env != nil {
		members = b.Env.Members
	}
	for _, m := range []struct{ flag, name string }{
		{"--propagation-member", b.Options.PropagationMember},
		{"--cluster-failover-member", b.Options.ClusterFailoverMember},
	} {
		if m.name != "" && !slices.Contains(members, m.name) {
			return nil, fmt.Errorf("%s %q is not a member (members: %s)", m.flag, m.name, strings.Join(members, ", "))
		}
	}
	b.tracker = NewTracker(b.Clock)
	rep := &Report{Started: b.Clock.Now(), Machine: ReadMachine(), Versions: b.versions(), Flags: b.Options.Flags}
	loadAtStart, loadKnown := readLoad(rep.Started)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := watchClusters(watchCtx, b.Env, b.tracker); err != nil {
		return nil, fmt.Errorf("watching Clusters: %w", err)
	}
	for _, name := range AllScenarios {
		if !slices.Contains(b.Options.Scenarios, name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			finish(rep, loadAtStart, loadKnown, b.Clock.Now())
			return rep, err
		}
		b.logf("== %s", name)
		var res *ScenarioResult
		switch name {
		case ScenarioPropagation:
			res = b.runScenario(ctx, name, b.propagationSettings(), propagationFigures(), b.propagationRun)
		case ScenarioAppFailover:
			res = b.runScenario(ctx, name, b.appFailoverSettings(), appFailoverFigures(b.Options.Toleration), b.appFailoverRun)
		case ScenarioClusterFailover:
			res = b.clusterFailover(ctx)
		case ScenarioFailback:
			res = b.failback(ctx)
		case ScenarioFootprint:
			res = b.footprint(ctx)
		}
		if b.Options.NoTargets {
			for _, f := range res.Figures {
				f.Target, f.Met = nil, nil
			}
		}
		rep.Scenarios = append(rep.Scenarios, res)
	}
	finish(rep, loadAtStart, loadKnown, b.Clock.Now())
	return rep, nil
}

// finish records the end of the bench and, when the machine's counters were
// read at the start, what the machine did meanwhile.
func finish(rep *Report, start loadSample, known bool, now time.Time) {
	rep.Finished = now
	if !known {
		return
	}
	if end, ok := readLoad(now); ok {
		rep.Machine.Load = loadBetween(start, end)
	}
}

// runScenario runs one scenario Options.Runs times and pools the figures.
func (b *Bench) runScenario(ctx context.Context, name string, settings map[string]string, specs []FigureSpec,
	run func(ctx context.Context, r *RunResult) error) *ScenarioResult {
	res := &ScenarioResult{Name: name, Settings: settings}
	runs := b.runsOf(name)
	for i := 1; i <= runs; i++ {
		if ctx.Err() != nil {
			break
		}
		r := &RunResult{Index: i, Started: b.Clock.Now(), Values: map[string][]Value{}}
		b.logf("%s run %d/%d", name, i, runs)
		err := run(ctx, r)
		r.Duration = b.Clock.Since(r.Started)
		if err != nil {
			r.Error = err.Error()
			b.logf("%s run %d FAILED: %v", name, i, err)
		} else {
			b.logf("%s run %d done in %s", name, i, r.Duration.Round(100*time.Millisecond))
		}
		res.Runs = append(res.Runs, r)
	}
	res.Figures = Pool(specs, res.Runs)
	return res
}

// runsOf is how many times scenario runs: --scenario-runs, else --runs.
func (b *Bench) runsOf(scenario string) int {
	if n, ok := b.Options.ScenarioRuns[scenario]; ok {
		return n
	}
	return b.Options.Runs
}

func (b *Bench) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.Progress, "[%s] %s\n", b.Clock.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// timeout is Options.Timeout, longer for many objects: one second more
// per object, so that a control plane that evicts at about one binding a
// second (Karmada's defaults evacuate 1,000 in about 11 minutes) finishes
// within it.
func (b *Bench) timeout(n int) time.Duration {
	return b.Options.Timeout + time.Duration(n)*time.Second
}

// newNamespace creates a fresh namespace for one run of scenario and
// starts watching it. The returned cleanup stops the watch and deletes the
// namespace (waiting a bounded time for it to go); call it deferred.
func (b *Bench) newNamespace(ctx context.Context, scenario string, r *RunResult) (string, func(), error) {
	name := "bench-" + scenario + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelRun: scenario}}}
	if err := b.Env.ControlPlane.Create(ctx, ns); err != nil {
		return "", func() {}, fmt.Errorf("creating namespace %s: %w", name, err)
	}
	r.Namespace = name
	watchCtx, stop := context.WithCancel(ctx)
	cleanup := func() {
		stop()
		b.deleteNamespace(name)
	}
	if err := watchNamespace(watchCtx, b.Env, b.tracker, name); err != nil {
		cleanup()
		return "", func() {}, err
	}
	return name, cleanup, nil
}

// deleteNamespace deletes a run's namespace from the control plane (the
// control plane removes the members' copies) and waits up to three minutes
// for it to go, so that runs do not overlap. It runs on its own context:
// cleanup happens even when the bench is interrupted.
func (b *Bench) deleteNamespace(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := b.Env.ControlPlane.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		b.logf("cleanup: deleting namespace %s: %v", name, err)
		return
	}
	for {
		err := b.Env.ControlPlane.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		if apierrors.IsNotFound(err) {
			break
		}
		select {
		case <-ctx.Done():
			b.logf("cleanup: namespace %s still terminating after 3m; going on", name)
			return
		case <-time.After(time.Second):
		}
	}
	// The members' copies are deleted by now, and the members' own
	// controllers remove their pods a moment later: the next run should not
	// share the CPU with that.
	if !waitMembersEmpty(ctx, b.Env.MemberClients, name, time.Second) {
		b.logf("cleanup: pods of %s still in a member after 3m; going on", name)
	}
}

// waitMembersEmpty waits until no member holds a pod in namespace, polling
// every interval. A member that cannot be asked is not waited for. It
// reports false when ctx ends first.
func waitMembersEmpty(ctx context.Context, members map[string]client.Client, namespace string, interval time.Duration) bool {
	for _, c := range members {
		for {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(namespace), client.Limit(1)); err != nil || len(pods.Items) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(interval):
			}
		}
	}
	return true
}

// createAll creates objs concurrently (at once, as a user's `kubectl apply`
// of many files would) and returns the first error.
func createAll(ctx context.Context, c client.Client, objs []client.Object) error {
	const workers = 32
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	work := make(chan client.Object)
	for range min(workers, len(objs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if err := c.Create(ctx, o); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s: %w", o.GetName(), err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	return firstErr
}

// countBindings counts the Deployments of names whose binding satisfies ok.
func countBindings(namespace string, names []string, ok func(key string) bool) int {
	n := 0
	for _, name := range names {
		if ok(BindingKey(namespace, name)) {
			n++
		}
	}
	return n
}

// healthyAnywhere reports whether the binding under key is Healthy in a
// scheduled cluster other than not ("" = any).
func (b *Bench) healthyElsewhere(not string) func(key string) bool {
	return func(key string) bool {
		for _, m := range b.tracker.Marks(key) {
			if c := HealthyCluster(m); c != "" && c != not {
				return true
			}
		}
		return false
	}
}

// seconds is d in seconds, at the millisecond resolution of the watch
// timestamps.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

func (b *Bench) versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	for k, x := range b.Versions {
		v[k] = x
	}
	build := version.Get()
	v["lifeboat"] = build.Version
	if build.Revision != "" {
		v["lifeboat-revision"] = build.Revision
	}
	if b.Options.PlaneVersion != "" {
		v["measured"] = b.Options.PlaneVersion
	}
	if dc, err := discovery.NewDiscoveryClientForConfig(b.Env.ControlPlaneConfig); err == nil {
		if sv, err := dc.ServerVersion(); err == nil {
			v["control-plane-apiserver"] = sv.GitVersion
		}
	}
	for _, m := range b.Env.Members {
		if dc, err := discovery.NewDiscoveryClientForConfig(b.Env.MemberConfigs[m]); err == nil {
			if sv, err := dc.ServerVersion(); err == nil {
				v["member-apiserver"] = sv.GitVersion
			}
		}
	}
	return v
}
