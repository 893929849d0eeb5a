package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Figures of the propagation scenario.
const (
	FigPropCreateToMember   = "create-to-member"
	FigPropCreateToHealthy  = "create-to-healthy"
	FigPropCreateToBinding  = "create-to-binding"
	FigPropBindingScheduled = "binding-to-scheduled"
	FigPropScheduledMember  = "scheduled-to-member"
	FigPropMemberAvailable  = "member-to-available"
	FigPropAvailableHealthy = "available-to-healthy"
	FigPropWallLastHealthy  = "wall-to-last-healthy"
	FigPropRequests         = "requests-per-object"
	FigPropCPU              = "cpu-create-to-all-healthy"
	FigPropCPUMembers       = "cpu-members"
)

func propagationFigures() []FigureSpec {
	return []FigureSpec{
		{ID: FigPropCreateToMember, Name: "create → object in its member (per object)", Unit: UnitSeconds,
			Target: &Target{Stat: "p99", Limit: 1, Reference: "Karmada p99 10.05 s"}},
		{ID: FigPropCreateToBinding, Name: "create → binding exists (detector)", Unit: UnitSeconds},
		{ID: FigPropBindingScheduled, Name: "binding exists → scheduled (scheduler)", Unit: UnitSeconds},
		{ID: FigPropScheduledMember, Name: "scheduled → object in member (binding controller, Work, execution)", Unit: UnitSeconds},
		{ID: FigPropMemberAvailable, Name: "object in member → available there (the member's own controllers)", Unit: UnitSeconds},
		{ID: FigPropAvailableHealthy, Name: "available in member → binding Healthy (status collection)", Unit: UnitSeconds},
		{ID: FigPropCreateToHealthy, Name: "create → binding Healthy (per object)", Unit: UnitSeconds},
		{ID: FigPropWallLastHealthy, Name: "first create call → last binding Healthy (per run)", Unit: UnitSeconds,
			Target: &Target{Stat: "max", Limit: 3, Reference: "Karmada 14.5 s"}},
		{ID: FigPropRequests, Name: "control-plane API requests (watches left out), first create call → last binding Healthy, per object (the kinds in the run's notes)", Unit: UnitRequests},
		{ID: FigPropCPU, Name: "CPU of every process accounted, first create call → last binding Healthy (each process's share and the controllers' queue waits in the run's notes)", Unit: UnitCPU},
		{ID: FigPropCPUMembers, Name: "of which the members' own processes (API server, controller manager, scheduler, kwok)", Unit: UnitCPU},
	}
}

func (b *Bench) propagationSettings() map[string]string {
	settings := map[string]string{"n": strconv.Itoa(b.Options.N), "members": fmt.Sprint(b.Env.Members)}
	if m := b.Options.PropagationMember; m != "" {
		settings["member"] = m
	}
	return settings
}

// propagationRun creates N single-replica Deployments at once under one
// policy and measures, per object, the time from its creation (the control
// plane's watch event) to its copy in a member (that member's watch event)
// and to its binding Healthy.
func (b *Bench) propagationRun(ctx context.Context, r *RunResult) error {
	ns, cleanup, err := b.newNamespace(ctx, "prop", r)
	if err != nil {
		return err
	}
	defer cleanup()
	members := b.Env.Members
	if m := b.Options.PropagationMember; m != "" {
		members = []string{m}
	}
	policy, err := decodePolicy(spreadPolicyYAML("bench", "prop", members), ns)
	if err != nil {
		return err
	}
	if err := b.Env.ControlPlane.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating the policy: %w", err)
	}
	// Let the controllers see the policy before the templates arrive, as
	// they would have for a policy applied earlier.
	b.Clock.Sleep(time.Second)

	names := make([]string, b.Options.N)
	objs := make([]client.Object, b.Options.N)
	for i := range names {
		names[i] = fmt.Sprintf("prop-%04d", i)
		d, err := decodeDeployment(deploymentYAML(names[i], "prop", 1), ns)
		if err != nil {
			return err
		}
		objs[i] = d
	}
	// The CPU is sampled last, so that parsing the two expositions is not
	// counted in the batch's window.
	queuesBefore, requestsBefore := b.scrapeQueues(ctx), b.scrapeRequests(ctx)
	cpuBefore := b.sampleCPU()
	start := b.Clock.Now()
	b.logf("creating %d Deployments in %s", len(objs), ns)
	if err := createAll(ctx, b.Env.ControlPlane, objs); err != nil {
		return err
	}
	err = b.tracker.WaitFor(ctx, b.timeout(len(names)), fmt.Sprintf("%d bindings Healthy", len(names)), b.progressLine,
		func() (bool, string) {
			n := countBindings(ns, names, b.healthyElsewhere(""))
			return n == len(names), fmt.Sprintf("%d/%d Healthy", n, len(names))
		})
	// Where the time went: the batch keeps the machine busy from the first
	// create to the last Healthy, and the members' own components take
	// their share of it.
	uses, cpu := cpuBetween(cpuBefore, b.sampleCPU())
	r.Notes = append(r.Notes, describeCPU("CPU from the first create call to the end of the wait", uses, cpu))
	if queuesBefore != nil {
		if q := b.scrapeQueues(ctx); q != nil {
			r.Notes = append(r.Notes, describeQueues("controller work queues from the first create call to the end of the wait", queuesBefore, q, 6))
		}
	}
	requests := b.requestsSince(ctx, requestsBefore, r, "control-plane API requests from the first create call to the end of the wait", len(names))
	// Whatever was seen counts, also after a timeout.
	var last time.Time
	for _, name := range names {
		created, ok := b.tracker.FirstMark(Key(SourceControlPlaneDeployment, ns, name), MarkPresent, time.Time{})
		if !ok {
			continue
		}
		inMember, ok := b.firstInMember(ns, name, start, "")
		if ok {
			r.Add(FigPropCreateToMember, name, seconds(inMember.Sub(created)))
		}
		bkey := BindingKey(ns, name)
		if bound, ok := b.tracker.FirstMark(bkey, MarkPresent, start); ok {
			r.Add(FigPropCreateToBinding, name, seconds(bound.Sub(created)))
			if sched, ok := b.tracker.First(bkey, start, isScheduled); ok {
				r.Add(FigPropBindingScheduled, name, seconds(sched.At.Sub(bound)))
				if !inMember.IsZero() {
					r.Add(FigPropScheduledMember, name, seconds(inMember.Sub(sched.At)))
				}
			}
		}
		if h, ok := b.tracker.First(BindingKey(ns, name), start, func(m string) bool { return HealthyCluster(m) != "" }); ok {
			b.addMemberSteps(r, ns, name, HealthyCluster(h.Mark), start, h.At, FigPropMemberAvailable, FigPropAvailableHealthy)
			r.Add(FigPropCreateToHealthy, name, seconds(h.At.Sub(created)))
			if h.At.After(last) {
				last = h.At
			}
		}
	}
	if err != nil {
		return err
	}
	r.Add(FigPropWallLastHealthy, "", seconds(last.Sub(start)))
	r.Add(FigPropCPU, "", cpu)
	if members, ok := membersCPU(uses, b.Env.Members); ok {
		r.Add(FigPropCPUMembers, "", members)
	}
	if requests != nil {
		r.Add(FigPropRequests, "", requests.Total/float64(len(names)))
	}
	return nil
}

// firstInMember returns when Deployment ns/name first appeared, at or
// after after, in a member other than not.
func (b *Bench) firstInMember(ns, name string, after time.Time, not string) (time.Time, bool) {
	var first time.Time
	for _, m := range b.Env.Members {
		if m == not {
			continue
		}
		at, ok := b.tracker.FirstMark(Key(MemberSource(m), ns, name), MarkPresent, after)
		if ok && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

func isScheduled(mark string) bool { return clusterOf(mark, markScheduled) != "" }

// addMemberSteps splits the time from a Deployment's copy appearing in
// member to its binding turning Healthy there (at healthy) into the member's
// own part (until the copy is available) and the status collection's part.
func (b *Bench) addMemberSteps(r *RunResult, ns, name, member string, after, healthy time.Time, availableID, healthyID string) {
	key := Key(MemberSource(member), ns, name)
	present, ok1 := b.tracker.FirstMark(key, MarkPresent, after)
	available, ok2 := b.tracker.FirstMark(key, MarkAvailable, after)
	if ok1 && ok2 {
		r.Add(availableID, name, seconds(available.Sub(present)))
		r.Add(healthyID, name, seconds(healthy.Sub(available)))
	}
}

func (b *Bench) progressLine(s string) { b.logf("%s", s) }
