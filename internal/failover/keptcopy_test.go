package failover

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// taintTask is the task a failover from member1 to member2 writes:
// Gracefully, created at second 0, grace period 600s.
func taintTask() workv1alpha2.GracefulEvictionTask {
	t := withGrace(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 0, "member1"), 600)
	t.Reason, t.Producer, t.Replicas = workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionProducerTaintManager, ptr.To[int32](2)
	return t
}

// At the end of the grace period the copy kept in the evicted cluster is
// deleted, unless that cluster is usable again and its copy is the only
// Healthy one: then the task stays open until the replacement is Healthy.
func TestGraceExpiryKeepsTheOnlyHealthyCopy(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
	)
	member1 := func(c *clusterWrapper) map[string]*clusterv1alpha1.Cluster {
		return map[string]*clusterv1alpha1.Cluster{"member1": c.obj()}
	}
	for name, tc := range map[string]struct {
		binding  *bindingWrapper
		clusters map[string]*clusterv1alpha1.Cluster
		at       int
		wantDone bool
		wantHeld bool
	}{
		"must not delete: member1 is back, its copy is the only Healthy one": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", unhealthy),
			clusters: member1(makeCluster("member1")),
			at:       601,
			wantHeld: true,
		},
		"must not delete: member1 is back, the replacement has not reported": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy),
			clusters: member1(makeCluster("member1")),
			at:       601,
			wantHeld: true,
		},
		"member1 is still not Ready: deleted at the deadline": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", unhealthy),
			clusters: member1(makeCluster("member1").down()),
			at:       601,
			wantDone: true,
		},
		"member1 keeps an untolerated NoExecute taint: deleted at the deadline": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", unhealthy),
			clusters: member1(makeCluster("member1").taint("maintenance", corev1.TaintEffectNoExecute, 100)),
			at:       601,
			wantDone: true,
		},
		"member1 is gone: deleted at the deadline": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", unhealthy),
			clusters: map[string]*clusterv1alpha1.Cluster{},
			at:       601,
			wantDone: true,
		},
		"the copy in member1 is not Healthy: deleted at the deadline": {
			binding:  makeBinding("a").clusters("member2").health("member1", unhealthy).health("member2", unhealthy),
			clusters: member1(makeCluster("member1")),
			at:       601,
			wantDone: true,
		},
		"the replacement is Healthy: closes": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", healthy),
			clusters: member1(makeCluster("member1")),
			at:       601,
			wantDone: true,
		},
		"before the deadline nothing is held": {
			binding:  makeBinding("a").clusters("member2").health("member1", healthy).health("member2", unhealthy),
			clusters: member1(makeCluster("member1")),
			at:       300,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.task(taintTask()).obj()
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod, clusters: tc.clusters}
			p := planTasks(o, at(tc.at))
			if done := len(p.removed) > 0; done != tc.wantDone {
				t.Errorf("closed: got %t, want %t (%+v)", done, tc.wantDone, p.removed)
			}
			if held := len(p.held) > 0; held != tc.wantHeld {
				t.Errorf("held: got %t, want %t", held, tc.wantHeld)
			}
		})
	}
}

// Through the controller: it reads member1's Cluster for the overdue task,
// keeps the task open, says so once (condition and Event), and closes it
// when the replacement turns Healthy.
func TestReconcileKeepsTheOnlyHealthyCopyPastGrace(t *testing.T) {
	b := makeBinding("nginx").clusters("member2").
		health("member1", workv1alpha2.ResourceHealthy).health("member2", workv1alpha2.ResourceUnhealthy).
		task(taintTask()).obj()
	b.Status.LastScheduledTime = mt(1) // the replacement was placed at second 1
	e := newEnv(t, nil, b, makeCluster("member1").obj())
	r := e.gracefulEviction()
	e.clock.SetTime(at(602))
	for range 2 {
		if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
			t.Fatal(err)
		}
	}
	got := e.rb(b.Name)
	if len(got.Spec.GracefulEvictionTasks) != 1 {
		t.Fatalf("tasks: %+v, want the task kept: the copy in member1 is the only Healthy one", got.Spec.GracefulEvictionTasks)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionFailoverTargetAvailable)
	if c == nil || !strings.Contains(c.Message, "member1 is usable again and its copy is the only Healthy one") {
		t.Errorf("condition: %+v, want it to say the copy in member1 is kept", c)
	}
	var kept int
	for _, ev := range e.events() {
		if strings.Contains(ev, EventReasonEvictedCopyKept) {
			kept++
		}
	}
	if kept != 2 { // one on the binding, one on the template
		t.Errorf("%d %s Events over two passes, want one on the binding and one on its template", kept, EventReasonEvictedCopyKept)
	}

	got.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{
		{ClusterName: "member1", Applied: true, Health: workv1alpha2.ResourceHealthy},
		{ClusterName: "member2", Applied: true, Health: workv1alpha2.ResourceHealthy},
	}
	e.updateStatus(got)
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	if got = e.rb(b.Name); len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v, want none once the replacement is Healthy", got.Spec.GracefulEvictionTasks)
	}
}

// A cluster still down: the copy goes at the deadline, as documented.
func TestReconcileDeletesCopyOfDownClusterAtDeadline(t *testing.T) {
	b := makeBinding("nginx").clusters("member2").
		health("member1", workv1alpha2.ResourceHealthy).health("member2", workv1alpha2.ResourceUnhealthy).
		task(taintTask()).obj()
	b.Status.LastScheduledTime = mt(1)
	e := newEnv(t, nil, b, makeCluster("member1").down().obj())
	e.clock.SetTime(at(602))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	if got := e.rb(b.Name); len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v, want none: member1 is not Ready", got.Spec.GracefulEvictionTasks)
	}
	if slices.ContainsFunc(e.events(), func(ev string) bool { return strings.Contains(ev, EventReasonEvictedCopyKept) }) {
		t.Error("an Event says the copy is kept")
	}
}
