package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Figures of the failback scenario. The member is stopped, everything
// fails over, the member is started again: tr is when its Cluster turns
// Ready, tw = tr + the stabilization window, then each binding is moved
// back (an eviction task from the backup member), its copy turns Healthy
// on the member and the backup's copy goes (the task closes).
const (
	FigFBReadyFirstMove = "ready-to-first-move"
	FigFBWindowAllBack  = "window-to-all-back"
	FigFBReadyAllBack   = "ready-to-all-back"
	FigFBMoveBack       = "move-to-back"
	FigFBWrites         = "binding-writes-per-failback"
	FigFBIdleReconciles = "idle-failback-reconciles-per-minute"
	FigFBNoHealthyCopy  = "failback-without-a-healthy-copy"
)

// How the failback scenario measures the failback and rebalancer
// controllers once everything is back: after fbQuiet without a reconcile
// (waiting at most fbSettleMax for it), over fbIdleWindow.
const (
	fbQuiet      = 10 * time.Second
	fbSettleMax  = time.Minute
	fbIdleWindow = 30 * time.Second
)

func failbackFigures(n int, window time.Duration) []FigureSpec {
	return []FigureSpec{
		{ID: FigFBReadyFirstMove, Name: fmt.Sprintf("member Ready → first moved back (window %s)", window), Unit: UnitSeconds},
		{ID: FigFBMoveBack, Name: "moved back → Healthy on the member, backup copy gone (per binding)", Unit: UnitSeconds},
		{ID: FigFBWindowAllBack, Name: fmt.Sprintf("window over → all %d back", n), Unit: UnitSeconds},
		{ID: FigFBReadyAllBack, Name: fmt.Sprintf("member Ready → all %d back", n), Unit: UnitSeconds},
		{ID: FigFBWrites, Name: "binding writes from member Ready to back (per binding)", Unit: UnitWrites},
		{ID: FigFBNoHealthyCopy, Name: "without a Healthy copy anywhere from member Ready to back, as the binding's status shows (per binding)", Unit: UnitSeconds,
			Target: &Target{Stat: "max", Limit: 0, Reference: "a failback keeps the running copy until the moved one is Healthy"}},
		{ID: FigFBIdleReconciles, Name: fmt.Sprintf("failback and rebalancer reconciles per minute once all %d are back, nothing pending (window %s)", n, fbIdleWindow), Unit: UnitPerMinute},
	}
}

func (b *Bench) failbackSettings() map[string]string {
	return map[string]string{
		"n":             strconv.Itoa(b.Options.FailbackN),
		"stoppedMember": b.stoppedMemberSetting(),
		"window":        b.Options.FailbackWindow.String(),
		"extension":     "spec.failover.failback is a Lifeboat extension: on Karmada nothing moves back",
	}
}

func (b *Bench) failback(ctx context.Context) *ScenarioResult {
	settings := b.failbackSettings()
	if b.Members == nil {
		return &ScenarioResult{Name: ScenarioFailback, Settings: settings,
			Skipped: "no way to stop a member: give --state-dir of a local environment or --member-stop-cmd and --member-start-cmd"}
	}
	settings["memberControl"] = b.Members.Describe()
	return b.runScenario(ctx, ScenarioFailback, settings, failbackFigures(b.Options.FailbackN, b.Options.FailbackWindow), b.failbackRun)
}

// failbackRun pins N Deployments to one member with a backup (as
// cluster-failover does) and automatic failback, stops the member until
// everything is Healthy elsewhere, starts it again and measures the way
// back. The member is started again even on failure.
func (b *Bench) failbackRun(ctx context.Context, r *RunResult) error {
	member := b.stoppedMember(r.Index)
	r.Notes = append(r.Notes, "stopped "+member)
	clusterKey := Key(SourceCluster, "", member)
	ns, cleanup, err := b.newNamespace(ctx, "fb", r)
	if err != nil {
		return err
	}
	defer cleanup()
	n := b.Options.FailbackN
	names, err := b.pinDeployments(ctx, ns, failbackPolicyYAML("bench", "fb", member, others(b.Env.Members, member), b.Options.FailbackWindow), "fb", member, n)
	if err != nil {
		return err
	}

	b.logf("stopping %s's API server", member)
	stopped := make(chan error, 1)
	go func() { stopped <- b.Members.Stop(ctx, member) }()
	err = b.tracker.WaitFor(ctx, b.timeout(n), fmt.Sprintf("%d bindings Healthy outside %s", n, member), b.progressLine, func() (bool, string) {
		c := countBindings(ns, names, b.healthyElsewhere(member))
		return c == n, fmt.Sprintf("%d/%d Healthy elsewhere", c, n)
	})
	if err != nil {
		b.restoreMember(member, stopped)
		return err
	}

	started := b.Clock.Now()
	b.restoreMember(member, stopped)
	tr, ok := b.tracker.FirstMark(clusterKey, MarkReady, started)
	if !ok {
		return fmt.Errorf("%s did not turn Ready after its start", member)
	}
	writesBefore := b.bindingWrites(ns, names)
	back := func(key string) bool {
		if !b.tracker.Has(key, Healthy(member)) {
			return false
		}
		for _, m := range b.tracker.Marks(key) {
			if clusterOf(m, markScheduled) != "" && clusterOf(m, markScheduled) != member || clusterOf(m, markEvicting) != "" {
				return false
			}
		}
		return true
	}
	// A binding is back when the tracker first sees it so: the condition
	// runs at every watch event.
	backAt := map[string]time.Time{}
	err = b.tracker.WaitFor(ctx, b.Options.FailbackWindow+b.timeout(n)+time.Duration(n)*time.Second, fmt.Sprintf("%d bindings back on %s", n, member), b.progressLine, func() (bool, string) {
		now := b.Clock.Now()
		for _, name := range names {
			if _, ok := backAt[name]; !ok && back(BindingKey(ns, name)) {
				backAt[name] = now
			}
		}
		return len(backAt) == n, fmt.Sprintf("%d/%d back on %s", len(backAt), n, member)
	})

	var first, last time.Time
	for _, name := range names {
		key := BindingKey(ns, name)
		moved, okMove := b.tracker.First(key, tr, func(m string) bool {
			c := clusterOf(m, markEvicting)
			return c != "" && c != member
		})
		if !okMove {
			continue
		}
		if first.IsZero() || moved.At.Before(first) {
			first = moved.At
		}
		if at, ok := backAt[name]; ok {
			r.Add(FigFBMoveBack, name, seconds(at.Sub(moved.At)))
			last = maxTime(last, at)
		}
	}
	now := b.Clock.Now()
	for _, name := range names {
		var without time.Duration
		for _, g := range b.tracker.Gaps(BindingKey(ns, name), tr) {
			if g.From.Before(tr) {
				g.From = tr
			}
			without += g.Duration(now)
		}
		r.Add(FigFBNoHealthyCopy, name, seconds(without))
	}
	done := len(backAt)
	if !first.IsZero() {
		r.Add(FigFBReadyFirstMove, "", seconds(first.Sub(tr)))
	}
	if done == n {
		r.Add(FigFBReadyAllBack, "", seconds(last.Sub(tr)))
		r.Add(FigFBWindowAllBack, "", seconds(last.Sub(tr.Add(b.Options.FailbackWindow))))
		writes := b.bindingWrites(ns, names) - writesBefore
		r.Add(FigFBWrites, "", float64(writes)/float64(n))
	}
	if err != nil {
		return err
	}
	if b.Options.ControllerMetricsURL != "" {
		if err := b.idleReconciles(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// idleReconciles counts the failback and rebalancer controllers'
// reconciles over fbIdleWindow, once nothing is pending. It first waits
// until they have been quiet for fbQuiet (at most fbSettleMax): the last
// failbacks are closed, and their closing writes seen, a moment after the
// bindings are back, and a window over that tail would measure the tail.
func (b *Bench) idleReconciles(ctx context.Context, r *RunResult) error {
	last, err := b.scrapeReconciles(ctx)
	if err != nil {
		return err
	}
	start := b.Clock.Now()
	for {
		if err := b.wait(ctx, fbQuiet); err != nil {
			return err
		}
		now, err := b.scrapeReconciles(ctx)
		if err != nil {
			return err
		}
		if now == last || b.Clock.Since(start) >= fbSettleMax {
			break
		}
		last = now
	}
	before := last
	if err := b.wait(ctx, fbIdleWindow); err != nil {
		return err
	}
	after, err := b.scrapeReconciles(ctx)
	if err != nil {
		return err
	}
	r.Add(FigFBIdleReconciles, "", (after-before)/fbIdleWindow.Minutes())
	return nil
}

// bindingWrites is the number of watch events (creations and updates) seen
// for the bindings of names.
func (b *Bench) bindingWrites(ns string, names []string) int {
	total := 0
	for _, name := range names {
		total += b.tracker.Events(BindingKey(ns, name))
	}
	return total
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// idleControllers are the controllers whose idle cost the failback
// scenario measures: failback and the WorkloadRebalancer.
var idleControllers = []string{"rb-failback", "crb-failback", "workload-rebalancer"}

// reconcileTotal sums controller_runtime_reconcile_total over the given
// controllers (every result) in a Prometheus text exposition.
func reconcileTotal(exposition string, controllers []string) (float64, error) {
	byController, err := sumByLabel(exposition, "controller_runtime_reconcile_total", "controller")
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, c := range controllers {
		total += byController[c]
	}
	return total, nil
}

// scrapeReconciles reads the controller manager's metrics and returns the
// reconciles of idleControllers so far.
func (b *Bench) scrapeReconciles(ctx context.Context) (float64, error) {
	body, err := b.scrapeMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return reconcileTotal(body, idleControllers)
}
