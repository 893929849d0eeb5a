package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Figures of the app-failover scenario. t0 pods deleted, t1 binding shows
// the cluster Unhealthy, t2 eviction task written, t3 object created in
// the new member, t4 new copy Healthy.
const (
	FigAppDetect   = "t1-t0"
	FigAppEvict    = "t2-t1"
	FigAppRecreate = "t3-t2"
	FigAppResched  = "eviction-to-scheduled"
	FigAppHealthy  = "t4-t3"
	FigAppTotal    = "t4-t0"
	FigAppOverhead = "overhead"
	FigAppPipeline = "pipeline"
	// FigAppMemberDown, FigAppMemberUp and FigAppControlPlane split the
	// overhead between the members' own controllers and the control plane.
	FigAppMemberDown   = "member-down"
	FigAppMemberUp     = "member-up"
	FigAppControlPlane = "control-plane"
	appFailoverName    = "nginx"
)

func appFailoverFigures(toleration int32) []FigureSpec {
	return []FigureSpec{
		{ID: FigAppDetect, Name: "t1 − t0: pods deleted → binding shows the cluster Unhealthy", Unit: UnitSeconds},
		{ID: FigAppMemberDown, Name: "of which: pods deleted → the member's Deployment counts them unavailable (the member)", Unit: UnitSeconds},
		{ID: FigAppEvict, Name: fmt.Sprintf("t2 − t1: Unhealthy → eviction task (includes the %d s toleration)", toleration), Unit: UnitSeconds},
		{ID: FigAppRecreate, Name: "t3 − t2: eviction task → object in the new member", Unit: UnitSeconds},
		{ID: FigAppResched, Name: "of which: eviction task → scheduled to the new member (scheduler)", Unit: UnitSeconds},
		{ID: FigAppHealthy, Name: "t4 − t3: object in the new member → binding Healthy there", Unit: UnitSeconds},
		{ID: FigAppMemberUp, Name: "of which: object in the new member → available there (the member)", Unit: UnitSeconds},
		{ID: FigAppTotal, Name: "t4 − t0: pods deleted → new copy Healthy", Unit: UnitSeconds},
		{ID: FigAppOverhead, Name: "overhead: t4 − t0 − tolerationSeconds", Unit: UnitSeconds,
			Target: &Target{Stat: "max", Limit: 0.2, Reference: "Karmada 0.335–0.385 s"}},
		{ID: FigAppPipeline, Name: "pipeline: t4 − t0 − (t2 − t1), the overhead with the toleration as applied", Unit: UnitSeconds},
		{ID: FigAppControlPlane, Name: "control plane's part of the overhead: the overhead without the members' two figures above", Unit: UnitSeconds},
	}
}

func (b *Bench) appFailoverSettings() map[string]string {
	return map[string]string{"tolerationSeconds": strconv.Itoa(int(b.Options.Toleration)), "purgeMode": "Never", "replicas": "2"}
}

// appFailoverRun is the seed's nginx scenario: the Deployment runs in one
// member x; its nodes are cordoned and its pods deleted (t0), so the
// replacement pods cannot run; application failover moves it to another
// member after tolerationSeconds.
func (b *Bench) appFailoverRun(ctx context.Context, r *RunResult) error {
	ns, cleanup, err := b.newNamespace(ctx, "appfo", r)
	if err != nil {
		return err
	}
	defer cleanup()
	policy, err := decodePolicy(appFailoverPolicyYAML("nginx-propagation", appFailoverName, b.Env.Members, b.Options.Toleration), ns)
	if err != nil {
		return err
	}
	d, err := decodeDeployment(deploymentYAML(appFailoverName, "appfo", 2), ns)
	if err != nil {
		return err
	}
	if err := b.Env.ControlPlane.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating the policy: %w", err)
	}
	b.Clock.Sleep(time.Second)
	if err := b.Env.ControlPlane.Create(ctx, d); err != nil {
		return fmt.Errorf("creating the Deployment: %w", err)
	}
	key := BindingKey(ns, appFailoverName)
	var x string
	err = b.tracker.WaitFor(ctx, b.timeout(1), "nginx Healthy in a member", b.progressLine, func() (bool, string) {
		for _, m := range b.tracker.Marks(key) {
			if c := HealthyCluster(m); c != "" {
				x = c
				return true, ""
			}
		}
		return false, fmt.Sprint(b.tracker.Marks(key))
	})
	if err != nil {
		return err
	}
	// Wait until the member's copy is fully available, so that t1 is
	// the reaction to the deleted pods and nothing else.
	memberKey := Key(MemberSource(x), ns, appFailoverName)
	if err := b.tracker.WaitFor(ctx, b.timeout(1), "nginx available in "+x, b.progressLine, func() (bool, string) {
		return b.tracker.Has(memberKey, MarkAvailable), fmt.Sprint(b.tracker.Marks(memberKey))
	}); err != nil {
		return err
	}
	r.Notes = append(r.Notes, "failed member "+x)
	b.logf("nginx runs in %s; cordoning its nodes and deleting its pods", x)

	mc := b.Env.MemberClients[x]
	cordoned, err := cordonNodes(ctx, mc)
	defer func() {
		if err := uncordonNodes(context.Background(), mc, cordoned); err != nil {
			b.logf("cleanup: uncordoning %v in %s: %v", cordoned, x, err)
		}
	}()
	if err != nil {
		return fmt.Errorf("cordoning %s: %w", x, err)
	}
	t0 := b.Clock.Now()
	if err := mc.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{"app": appFailoverName}); err != nil {
		return fmt.Errorf("deleting nginx's pods in %s: %w", x, err)
	}
	var y string
	timeout := b.timeout(1) + time.Duration(b.Options.Toleration)*time.Second
	err = b.tracker.WaitFor(ctx, timeout, "nginx Healthy in another member", b.progressLine, func() (bool, string) {
		a, ok := b.tracker.First(key, t0, func(m string) bool { c := HealthyCluster(m); return c != "" && c != x })
		if ok {
			y = HealthyCluster(a.Mark)
		}
		return ok, fmt.Sprint(b.tracker.Marks(key))
	})
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, "moved to "+y)
	var m appFailoverMarks
	m.t0 = t0
	m.unhealthy, _ = b.tracker.FirstMark(key, Unhealthy(x), t0)
	m.evicted, _ = b.tracker.FirstMark(key, Evicting(x), t0)
	m.scheduled, _ = b.tracker.FirstMark(key, Scheduled(y), t0)
	m.created, _ = b.tracker.FirstMark(Key(MemberSource(y), ns, appFailoverName), MarkPresent, t0)
	m.healthy, _ = b.tracker.FirstMark(key, Healthy(y), t0)
	m.downInMember, _ = b.tracker.FirstMark(memberKey, MarkUnavailable, t0)
	if !m.created.IsZero() {
		m.upInMember, _ = b.tracker.FirstMark(Key(MemberSource(y), ns, appFailoverName), MarkAvailable, m.created)
	}
	return m.add(r, time.Duration(b.Options.Toleration)*time.Second)
}

// appFailoverMarks are the moments of one app-failover run after t0, as
// the watches saw them; zero when not seen.
type appFailoverMarks struct {
	t0 time.Time
	// unhealthy (t1): the binding shows the failed member Unhealthy.
	unhealthy time.Time
	// evicted (t2): the binding has an eviction task from it.
	evicted time.Time
	// scheduled: the binding is scheduled to the new member.
	scheduled time.Time
	// created (t3): the object exists in the new member.
	created time.Time
	// healthy (t4): the binding shows the new member Healthy.
	healthy time.Time
	// downInMember: the failed member's Deployment counts fewer available
	// replicas than desired; upInMember: the new member's counts them all.
	downInMember, upInMember time.Time
}

// add records the run's figures in r and returns an error naming the
// steps that were not seen. The members' own time is what their
// controllers take to report the pods gone and to make the new copy
// available; the control plane's part of the overhead is the rest.
func (m appFailoverMarks) add(r *RunResult, toleration time.Duration) error {
	seen := func(ts ...time.Time) bool {
		for _, t := range ts {
			if t.IsZero() {
				return false
			}
		}
		return true
	}
	if seen(m.unhealthy, m.evicted) && m.evicted.Sub(m.unhealthy) < toleration {
		r.Notes = append(r.Notes, fmt.Sprintf("evicted %s after Unhealthy, before tolerationSeconds %d", m.evicted.Sub(m.unhealthy).Round(time.Millisecond), int(toleration.Seconds())))
	}
	if seen(m.unhealthy) {
		r.Add(FigAppDetect, "", seconds(m.unhealthy.Sub(m.t0)))
	}
	if seen(m.downInMember) {
		r.Add(FigAppMemberDown, "", seconds(m.downInMember.Sub(m.t0)))
	}
	if seen(m.unhealthy, m.evicted, m.healthy) {
		r.Add(FigAppEvict, "", seconds(m.evicted.Sub(m.unhealthy)))
		// The controller may apply the toleration a little shorter or
		// longer than configured; this figure is the time spent outside it.
		r.Add(FigAppPipeline, "", seconds(m.healthy.Sub(m.t0)-m.evicted.Sub(m.unhealthy)))
	}
	if seen(m.evicted, m.created) {
		r.Add(FigAppRecreate, "", seconds(m.created.Sub(m.evicted)))
	}
	if seen(m.evicted, m.scheduled) {
		r.Add(FigAppResched, "", seconds(m.scheduled.Sub(m.evicted)))
	}
	if seen(m.created, m.healthy) {
		r.Add(FigAppHealthy, "", seconds(m.healthy.Sub(m.created)))
	}
	if seen(m.created, m.upInMember) {
		r.Add(FigAppMemberUp, "", seconds(m.upInMember.Sub(m.created)))
	}
	if !seen(m.healthy) {
		return errors.New("missed a step: the new copy was not seen Healthy")
	}
	overhead := m.healthy.Sub(m.t0) - toleration
	r.Add(FigAppTotal, "", seconds(m.healthy.Sub(m.t0)))
	r.Add(FigAppOverhead, "", seconds(overhead))
	if seen(m.downInMember, m.created, m.upInMember) {
		members := m.downInMember.Sub(m.t0) + m.upInMember.Sub(m.created)
		r.Add(FigAppControlPlane, "", seconds(overhead-members))
	}
	if !seen(m.unhealthy, m.evicted, m.created) {
		return fmt.Errorf("missed a step: Unhealthy seen %v, eviction task seen %v, new copy seen %v", seen(m.unhealthy), seen(m.evicted), seen(m.created))
	}
	return nil
}

// cordonNodes marks every schedulable node of a member unschedulable and
// returns their names, for uncordonNodes.
func cordonNodes(ctx context.Context, c client.Client) ([]string, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var cordoned []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.Unschedulable {
			continue
		}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`))
		if err := c.Patch(ctx, n, patch); err != nil {
			return cordoned, fmt.Errorf("cordoning node %s: %w", n.Name, err)
		}
		cordoned = append(cordoned, n.Name)
	}
	return cordoned, nil
}

// uncordonNodes makes the named nodes schedulable again.
func uncordonNodes(ctx context.Context, c client.Client, names []string) error {
	for _, name := range names {
		n := &corev1.Node{}
		n.Name = name
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"unschedulable":null}}`))
		if err := c.Patch(ctx, n, patch); err != nil {
			return fmt.Errorf("uncordoning node %s: %w", name, err)
		}
	}
	return nil
}
