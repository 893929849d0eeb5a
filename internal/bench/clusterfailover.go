package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Figures of the cluster-failover scenario. t0 the member's API server is
// stopped, t1 its Cluster's Ready is no longer True, t2 a NoExecute taint
// is on it, then each binding gets an eviction task and becomes Healthy
// elsewhere.
const (
	FigCFDetect           = "t1-t0"
	FigCFTaint            = "t2-t1"
	FigCFEviction         = "taint-to-eviction"
	FigCFFirstEviction    = "taint-to-first-eviction"
	FigCFLastEviction     = "taint-to-last-eviction"
	FigCFHealthy          = "kill-to-healthy"
	FigCFEvictionMember   = "eviction-to-member"
	FigCFEvictionSched    = "eviction-to-scheduled"
	FigCFMemberAvailable  = "member-to-available"
	FigCFAvailableHealthy = "available-to-healthy"
	FigCFKillAllHealthy   = "kill-to-all-healthy"
	FigCFTaintAllHealthy  = "taint-to-all-healthy"
	FigCFMoveAllHealthy   = "first-eviction-to-all-healthy"
	FigCFCPU              = "cpu-stop-to-all-healthy"
	FigCFCPUPerBinding    = "cpu-per-moved-binding"
	FigCFCPUMembers       = "cpu-members"
	FigCFLostAgain        = "lost-healthy-copy-again"
	FigCFRequests         = "requests-per-moved-binding"
)

func clusterFailoverFigures(n int) []FigureSpec {
	specs := []FigureSpec{
		{ID: FigCFDetect, Name: "t1 − t0: API server stopped → Cluster Ready not True", Unit: UnitSeconds},
		{ID: FigCFTaint, Name: "t2 − t1: not Ready → NoExecute taint", Unit: UnitSeconds},
		{ID: FigCFEviction, Name: "taint → eviction task (per binding)", Unit: UnitSeconds},
		{ID: FigCFFirstEviction, Name: "taint → first eviction", Unit: UnitSeconds},
		{ID: FigCFLastEviction, Name: fmt.Sprintf("taint → last eviction (%d bindings)", n), Unit: UnitSeconds},
		{ID: FigCFEvictionSched, Name: "eviction task → scheduled to the new member (per binding; scheduler)", Unit: UnitSeconds},
		{ID: FigCFEvictionMember, Name: "eviction task → object in the new member (per binding)", Unit: UnitSeconds},
		{ID: FigCFMemberAvailable, Name: "object in the new member → available there (the member's own controllers)", Unit: UnitSeconds},
		{ID: FigCFAvailableHealthy, Name: "available in the new member → binding Healthy (status collection)", Unit: UnitSeconds},
		{ID: FigCFHealthy, Name: "API server stopped → Healthy elsewhere (per binding)", Unit: UnitSeconds},
		{ID: FigCFKillAllHealthy, Name: fmt.Sprintf("API server stopped → all %d Healthy elsewhere", n), Unit: UnitSeconds},
		{ID: FigCFTaintAllHealthy, Name: fmt.Sprintf("taint → all %d Healthy elsewhere", n), Unit: UnitSeconds},
		{ID: FigCFMoveAllHealthy, Name: fmt.Sprintf("first eviction → all %d Healthy elsewhere (the move, after the storm guard's settling window)", n), Unit: UnitSeconds},
		{ID: FigCFCPU, Name: "CPU of every process accounted, stop → all Healthy (each process's share in the run's notes)", Unit: UnitCPU},
		{ID: FigCFCPUPerBinding, Name: "of which per binding moved", Unit: UnitCPU},
		{ID: FigCFCPUMembers, Name: "of which the members' own processes (API server, controller manager, scheduler, kwok; the stopped one's API server left out)", Unit: UnitCPU},
		{ID: FigCFRequests, Name: "control-plane API requests (watches left out), stop → all Healthy, per binding moved (the kinds in the run's notes)", Unit: UnitRequests},
		{ID: FigCFLostAgain, Name: "bindings without a Healthy copy again after Healthy elsewhere, or before the stop (per run)", Unit: UnitBindings,
			Target: &Target{Stat: "max", Limit: 0, Reference: "the last Healthy copy is kept: no gap but the failure's"}},
	}
	fig := func(id string) int {
		return slices.IndexFunc(specs, func(s FigureSpec) bool { return s.ID == id })
	}
	// The targets, for the sizes they were set at.
	if n == 50 {
		specs[fig(FigCFLastEviction)].Target = &Target{Stat: "max", Limit: 2, Reference: "50 evicted within 2 s of the taint"}
		specs[fig(FigCFKillAllHealthy)].Target = &Target{Stat: "max", Limit: 40, Reference: "Karmada 68 s (probe 10 s, threshold 30 s)"}
	}
	switch {
	case n == 1000:
		specs[fig(FigCFTaintAllHealthy)].Target = &Target{Stat: "p50", Limit: 25, Reference: "Karmada ~670 s at its default eviction rate"}
	case n >= 5000:
		specs[fig(FigCFTaintAllHealthy)].Target = &Target{Stat: "max", Limit: 120}
	}
	return specs
}

// stoppedMember is the member run (1-based) stops: --cluster-failover-member,
// else the members in turn, so that no member fails twice within a few
// minutes (a member that does gets the flapping taint, and the next run
// would measure its hold).
func (b *Bench) stoppedMember(run int) string {
	if b.Options.ClusterFailoverMember != "" {
		return b.Options.ClusterFailoverMember
	}
	return b.Env.Members[(run-1)%len(b.Env.Members)]
}

// stoppedMemberSetting describes the stopped member for the report.
func (b *Bench) stoppedMemberSetting() string {
	if b.Options.ClusterFailoverMember != "" {
		return b.Options.ClusterFailoverMember
	}
	return "each run the next of " + strings.Join(b.Env.Members, ", ")
}

func (b *Bench) clusterFailover(ctx context.Context) *ScenarioResult {
	n := b.Options.ClusterFailoverN
	settings := map[string]string{
		"n":             strconv.Itoa(n),
		"stoppedMember": b.stoppedMemberSetting(),
		"tolerations":   "none",
	}
	if b.Members == nil {
		return &ScenarioResult{Name: ScenarioClusterFailover, Settings: settings,
			Skipped: "no way to stop a member: give --state-dir of a local environment or --member-stop-cmd and --member-start-cmd"}
	}
	settings["memberControl"] = b.Members.Describe()
	return b.runScenario(ctx, ScenarioClusterFailover, settings, clusterFailoverFigures(n), b.clusterFailoverRun)
}

// clusterFailoverRun pins N Deployments to one member (ordered
// clusterAffinities, that member first, maxGroups 1, no tolerations),
// stops the member's API server and measures detection, the taint, the
// evictions and the moves. The member is started again and Ready before
// the run ends, even on failure.
func (b *Bench) clusterFailoverRun(ctx context.Context, r *RunResult) error {
	member := b.stoppedMember(r.Index)
	r.Notes = append(r.Notes, "stopped "+member)
	clusterKey := Key(SourceCluster, "", member)
	ns, cleanup, err := b.newNamespace(ctx, "cf", r)
	if err != nil {
		return err
	}
	defer cleanup()
	n := b.Options.ClusterFailoverN
	names, err := b.pinDeployments(ctx, ns, pinnedPolicyYAML("bench", "cf", member, others(b.Env.Members, member)), "cf", member, n)
	if err != nil {
		return err
	}

	cpuBefore, queuesBefore, requestsBefore := b.sampleCPU(), b.scrapeQueues(ctx), b.scrapeRequests(ctx)
	b.logf("stopping %s's API server", member)
	t0 := b.Clock.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- b.Members.Stop(ctx, member) }()
	defer b.restoreMember(member, stopped)

	err = b.tracker.WaitFor(ctx, b.timeout(n), fmt.Sprintf("%d bindings Healthy outside %s", n, member), b.progressLine, func() (bool, string) {
		c := countBindings(ns, names, b.healthyElsewhere(member))
		// Evicted so far, also those whose task has closed.
		e := countBindings(ns, names, func(key string) bool {
			_, ok := b.tracker.FirstMark(key, Evicting(member), t0)
			return ok
		})
		return c == n, fmt.Sprintf("cluster %v; %d/%d evicted, %d/%d Healthy elsewhere", b.tracker.Marks(clusterKey), e, n, c, n)
	})

	// Where the time went, until all were Healthy or the wait ended.
	uses, cpu := cpuBetween(cpuBefore, b.sampleCPU())
	r.Add(FigCFCPU, "", cpu)
	if members, ok := membersCPU(uses, b.Env.Members); ok {
		r.Add(FigCFCPUMembers, "", members)
	}
	r.Notes = append(r.Notes, describeCPU("CPU from the stop to the end of the wait", uses, cpu))
	if queuesBefore != nil {
		if q := b.scrapeQueues(ctx); q != nil {
			r.Notes = append(r.Notes, describeQueues("controller work queues from the stop to the end of the wait", queuesBefore, q, 6))
		}
	}
	requests := b.requestsSince(ctx, requestsBefore, r, "control-plane API requests from the stop to the end of the wait", n)

	// Whatever was seen counts, also after a timeout.
	t1, ok1 := b.tracker.FirstMark(clusterKey, MarkNotReady, t0)
	taint, ok2 := b.tracker.First(clusterKey, t0, NoExecuteTaint)
	t2 := taint.At
	if ok1 {
		r.Add(FigCFDetect, "", seconds(t1.Sub(t0)))
	}
	if ok1 && ok2 {
		r.Add(FigCFTaint, "", seconds(t2.Sub(t1)))
		r.Notes = append(r.Notes, "taint "+taint.Mark[len("taint:"):])
	}
	var firstEv, lastEv, lastHealthy time.Time
	evicted, healthy, relost := 0, 0, 0
	for _, name := range names {
		key := BindingKey(ns, name)
		ev, evOK := b.tracker.FirstMark(key, Evicting(member), t0)
		if ok2 {
			if evOK {
				evicted++
				r.Add(FigCFEviction, name, seconds(ev.Sub(t2)))
				if firstEv.IsZero() || ev.Before(firstEv) {
					firstEv = ev
				}
				if ev.After(lastEv) {
					lastEv = ev
				}
			}
		}
		var healthyAt time.Time
		if h, ok := b.tracker.First(key, t0, func(m string) bool { c := HealthyCluster(m); return c != "" && c != member }); ok {
			healthy++
			healthyAt = h.At
			to := HealthyCluster(h.Mark)
			if sched, ok := b.tracker.FirstMark(key, Scheduled(to), t0); ok && evOK {
				r.Add(FigCFEvictionSched, name, seconds(sched.Sub(ev)))
			}
			if at, ok := b.tracker.FirstMark(Key(MemberSource(to), ns, name), MarkPresent, t0); ok && evOK {
				r.Add(FigCFEvictionMember, name, seconds(at.Sub(ev)))
			}
			b.addMemberSteps(r, ns, name, to, t0, h.At, FigCFMemberAvailable, FigCFAvailableHealthy)
			r.Add(FigCFHealthy, name, seconds(h.At.Sub(t0)))
			if h.At.After(lastHealthy) {
				lastHealthy = h.At
			}
		}
		if lostAgain(b.tracker.Gaps(key, t0), t0, healthyAt) {
			relost++
			r.Notes = append(r.Notes, fmt.Sprintf("%s had no Healthy copy apart from the failure's gap: %v", name, b.tracker.Gaps(key, time.Time{})))
		}
	}
	r.Add(FigCFLostAgain, "", float64(relost))
	if evicted > 0 {
		r.Add(FigCFFirstEviction, "", seconds(firstEv.Sub(t2)))
	}
	if evicted == n {
		r.Add(FigCFLastEviction, "", seconds(lastEv.Sub(t2)))
	}
	if healthy == n {
		r.Add(FigCFKillAllHealthy, "", seconds(lastHealthy.Sub(t0)))
		if ok2 {
			r.Add(FigCFTaintAllHealthy, "", seconds(lastHealthy.Sub(t2)))
		}
		if evicted > 0 {
			r.Add(FigCFMoveAllHealthy, "", seconds(lastHealthy.Sub(firstEv)))
		}
		r.Add(FigCFCPUPerBinding, "", cpu/float64(n))
		if requests != nil {
			r.Add(FigCFRequests, "", requests.Total/float64(n))
		}
	}
	if err != nil {
		return err
	}
	if !ok1 || !ok2 || evicted != n {
		return fmt.Errorf("missed a step: not-Ready seen %v, NoExecute taint seen %v, %d/%d eviction tasks seen", ok1, ok2, evicted, n)
	}
	return nil
}

// restoreMember waits for the stop of member to finish, starts it again and
// waits until its Cluster is Ready without NoExecute taints, so that the
// next run starts with every member healthy. It runs on its own context:
// the member comes back even when the bench is interrupted.
func (b *Bench) restoreMember(member string, stopped <-chan error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := <-stopped; err != nil {
		b.logf("stopping %s reported: %v", member, err)
	}
	b.logf("starting %s's API server again", member)
	if err := b.Members.Start(ctx, member); err != nil {
		b.logf("cleanup: starting %s: %v", member, err)
		return
	}
	key := Key(SourceCluster, "", member)
	err := b.tracker.WaitFor(ctx, 5*time.Minute, member+" Ready without NoExecute taints", b.progressLine, func() (bool, string) {
		if !b.tracker.Has(key, MarkReady) {
			return false, fmt.Sprint(b.tracker.Marks(key))
		}
		for _, m := range b.tracker.Marks(key) {
			if NoExecuteTaint(m) {
				return false, fmt.Sprint(b.tracker.Marks(key))
			}
		}
		return true, ""
	})
	if err != nil {
		b.logf("cleanup: %v", err)
	}
}

// memberUsable says whether a Cluster with these marks can take the
// scenario's Deployments: Ready and without any taint (they have no
// tolerations).
func memberUsable(marks []string) bool {
	ready := false
	for _, m := range marks {
		switch {
		case m == MarkReady:
			ready = true
		case strings.HasPrefix(m, markTaint):
			return false
		}
	}
	return ready
}

// pinDeployments creates the policy of policyYAML in ns and n
// single-replica Deployments of group (named group-0000, ...) that it
// places on member, and waits until every binding is Healthy there. It
// returns the Deployments' names. A member still recovering from an
// earlier outage (or tainted by someone) would not get them: it waits for
// member to be Ready and untainted first.
func (b *Bench) pinDeployments(ctx context.Context, ns, policyYAML, group, member string, n int) ([]string, error) {
	clusterKey := Key(SourceCluster, "", member)
	if err := b.tracker.WaitFor(ctx, 5*time.Minute, member+" Ready and untainted", b.progressLine, func() (bool, string) {
		return memberUsable(b.tracker.Marks(clusterKey)), fmt.Sprint(b.tracker.Marks(clusterKey))
	}); err != nil {
		return nil, err
	}
	policy, err := decodePolicy(policyYAML, ns)
	if err != nil {
		return nil, err
	}
	if err := b.Env.ControlPlane.Create(ctx, policy); err != nil {
		return nil, fmt.Errorf("creating the policy: %w", err)
	}
	b.Clock.Sleep(time.Second)
	names := make([]string, n)
	objs := make([]client.Object, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", group, i)
		d, err := decodeDeployment(deploymentYAML(names[i], group, 1), ns)
		if err != nil {
			return nil, err
		}
		objs[i] = d
	}
	b.logf("creating %d Deployments pinned to %s", n, member)
	if err := createAll(ctx, b.Env.ControlPlane, objs); err != nil {
		return nil, err
	}
	err = b.tracker.WaitFor(ctx, b.timeout(n), fmt.Sprintf("%d bindings Healthy in %s", n, member), b.progressLine, func() (bool, string) {
		c := countBindings(ns, names, b.tracker.Is(Healthy(member)))
		return c == n, fmt.Sprintf("%d/%d Healthy in %s", c, n, member)
	})
	return names, err
}

// lostAgain reports whether a binding was without a Healthy copy (its
// gaps, see Gap) other than for the failure at t0: a gap that began before
// t0, or one that began once it was Healthy elsewhere (healthyAt; zero when
// it never was). A gap between the two is the failure's own, measured as
// "API server stopped → Healthy elsewhere".
func lostAgain(gaps []Gap, t0, healthyAt time.Time) bool {
	for _, g := range gaps {
		if g.From.Before(t0) || (!healthyAt.IsZero() && !g.From.Before(healthyAt)) {
			return true
		}
	}
	return false
}
