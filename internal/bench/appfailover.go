package bench

import (
	"context"
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
	FigAppDetect    = "t1-t0"
	FigAppEvict     = "t2-t1"
	FigAppRecreate  = "t3-t2"
	FigAppResched   = "eviction-to-scheduled"
	FigAppHealthy   = "t4-t3"
	FigAppTotal     = "t4-t0"
	FigAppOverhead  = "overhead"
	FigAppPipeline  = "pipeline"
	appFailoverName = "nginx"
)

func appFailoverFigures(toleration int32) []FigureSpec {
	return []FigureSpec{
		{ID: FigAppDetect, Name: "t1 − t0: pods deleted → binding shows the cluster Unhealthy", Unit: UnitSeconds},
		{ID: FigAppEvict, Name: fmt.Sprintf("t2 − t1: Unhealthy → eviction task (includes the %d s toleration)", toleration), Unit: UnitSeconds},
		{ID: FigAppRecreate, Name: "t3 − t2: eviction task → object in the new member", Unit: UnitSeconds},
		{ID: FigAppResched, Name: "of which: eviction task → scheduled to the new member (scheduler)", Unit: UnitSeconds},
		{ID: FigAppHealthy, Name: "t4 − t3: object in the new member → binding Healthy there", Unit: UnitSeconds},
		{ID: FigAppTotal, Name: "t4 − t0: pods deleted → new copy Healthy", Unit: UnitSeconds},
		{ID: FigAppOverhead, Name: "overhead: t4 − t0 − tolerationSeconds", Unit: UnitSeconds,
			Target: &Target{Stat: "max", Limit: 0.2, Reference: "Karmada 0.335–0.385 s"}},
		{ID: FigAppPipeline, Name: "pipeline: t4 − t0 − (t2 − t1), the overhead with the toleration as applied", Unit: UnitSeconds},
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
	t1, ok1 := b.tracker.FirstMark(key, Unhealthy(x), t0)
	t2, ok2 := b.tracker.FirstMark(key, Evicting(x), t0)
	t3, ok3 := b.tracker.FirstMark(Key(MemberSource(y), ns, appFailoverName), MarkPresent, t0)
	t4, _ := b.tracker.FirstMark(key, Healthy(y), t0)
	if ok1 && ok2 && t2.Sub(t1) < time.Duration(b.Options.Toleration)*time.Second {
		r.Notes = append(r.Notes, fmt.Sprintf("evicted %s after Unhealthy, before tolerationSeconds %d", t2.Sub(t1).Round(time.Millisecond), b.Options.Toleration))
	}
	if ok1 {
		r.Add(FigAppDetect, "", seconds(t1.Sub(t0)))
	}
	if ok1 && ok2 {
		r.Add(FigAppEvict, "", seconds(t2.Sub(t1)))
		// The controller may apply the toleration a little shorter or
		// longer than configured; this figure is the time spent outside it.
		r.Add(FigAppPipeline, "", seconds(t4.Sub(t0)-t2.Sub(t1)))
	}
	if ok2 && ok3 {
		r.Add(FigAppRecreate, "", seconds(t3.Sub(t2)))
	}
	if sched, ok := b.tracker.FirstMark(key, Scheduled(y), t0); ok && ok2 {
		r.Add(FigAppResched, "", seconds(sched.Sub(t2)))
	}
	if ok3 {
		r.Add(FigAppHealthy, "", seconds(t4.Sub(t3)))
	}
	total := t4.Sub(t0)
	r.Add(FigAppTotal, "", seconds(total))
	r.Add(FigAppOverhead, "", seconds(total-time.Duration(b.Options.Toleration)*time.Second))
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("missed a step: Unhealthy seen %v, eviction task seen %v, new copy seen %v", ok1, ok2, ok3)
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
