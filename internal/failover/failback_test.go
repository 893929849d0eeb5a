package failover

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// failbackTask is the task a failback from member2 back to member1
// writes: created at second 0, grace period 600s.
func failbackTask() workv1alpha2.GracefulEvictionTask {
	t := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	t.Reason, t.Producer = workv1alpha2.EvictionReasonFailback, workv1alpha2.EvictionProducerScheduler
	t.Replicas = ptr.To[int32](2)
	return t
}

// The copy a failback leaves (member2) is the one that runs: it goes only
// once the copy moved back (member1) is Healthy. A grace period that runs
// out gives the failback up instead.
func TestFailbackTaskMustNotDeleteTheRunningCopy(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
		unknown   = workv1alpha2.ResourceUnknown
	)
	for name, tc := range map[string]struct {
		binding       *bindingWrapper
		now           int
		wantRemoved   bool
		wantAbandoned bool
		wantClusters  []string
	}{
		"the copy moved back is healthy: the task is done": {
			binding:      makeBinding("a").clusters("member1").health("member1", healthy).health("member2", healthy),
			now:          30,
			wantRemoved:  true,
			wantClusters: []string{"member1"},
		},
		"must not: the copy moved back is unhealthy within the grace period": {
			binding:      makeBinding("a").clusters("member1").health("member1", unhealthy).health("member2", healthy),
			now:          30,
			wantClusters: []string{"member1"},
		},
		"must not: the copy moved back is Unknown within the grace period": {
			binding:      makeBinding("a").clusters("member1").health("member1", unknown).health("member2", healthy),
			now:          599,
			wantClusters: []string{"member1"},
		},
		"must not: the copy moved back has no status yet": {
			binding:      makeBinding("a").clusters("member1").health("member2", healthy),
			now:          30,
			wantClusters: []string{"member1"},
		},
		"must not: healthy, but the scheduler has not placed the failback yet": {
			binding:      makeBinding("a").clusters("member1").health("member1", healthy).unscheduled(),
			now:          30,
			wantClusters: []string{"member1"},
		},
		"must not: the grace period passed with the copy moved back unhealthy: abandoned, member2 comes back": {
			binding:       makeBinding("a").clusters("member1").health("member1", unhealthy).health("member2", healthy),
			now:           600,
			wantAbandoned: true,
			wantClusters:  []string{"member2"},
		},
		"must not: the grace period passed with no status from the copy moved back: abandoned": {
			binding:       makeBinding("a").clusters("member1").health("member2", healthy),
			now:           5000,
			wantAbandoned: true,
			wantClusters:  []string{"member2"},
		},
		"must not: the grace period passed healthy but unscheduled: abandoned, nothing deleted": {
			binding:       makeBinding("a").clusters("member1").health("member1", healthy).unscheduled(),
			now:           700,
			wantAbandoned: true,
			wantClusters:  []string{"member1", "member2"},
		},
		"the grace period passed but the copy moved back is healthy: done": {
			binding:      makeBinding("a").clusters("member1").health("member1", healthy),
			now:          700,
			wantRemoved:  true,
			wantClusters: []string{"member1"},
		},
		"must not: the cluster moved back to was lost and member2 is unknown: kept, never deleted": {
			binding: makeBinding("a").health("member2", healthy),
			now:     700,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.task(failbackTask()).obj()
			p := planTasks(observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(tc.now))
			removed := len(p.removed) > 0
			if removed != tc.wantRemoved {
				t.Errorf("removed (the copy in member2 may be deleted): got %t, want %t (%+v)", removed, tc.wantRemoved, p.removed)
			}
			if got := len(p.abandoned) > 0; got != tc.wantAbandoned {
				t.Errorf("abandoned: got %t, want %t", got, tc.wantAbandoned)
			}
			if !removed && !tc.wantAbandoned && len(p.kept) != 1 {
				t.Errorf("the task was not kept: %+v", p.kept)
			}
			var clusters []string
			for _, c := range afterAbandon(b.Spec.Clusters, p) {
				clusters = append(clusters, c.Name)
			}
			if !slices.Equal(clusters, tc.wantClusters) {
				t.Errorf("spec.clusters after: got %v, want %v", clusters, tc.wantClusters)
			}
		})
	}
}

// A failback moved the workload from member2 to member1 and member3; its
// grace period has passed and not all of the new placement is Healthy.
// Whatever becomes of it, a copy that reports Healthy never leaves
// spec.clusters, the copy member2 kept goes only while another Healthy copy
// stays or it is not Healthy itself, and member2 comes back only if it can
// take the workload (Ready, no untolerated NoExecute taint) or its copy is
// the only Healthy one.
func TestOverdueFailbackKeepsEveryHealthyCopy(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
	)
	split := func() *bindingWrapper { return makeBinding("a").clusters("member1", "member3") }
	member2 := func(c *clusterWrapper) map[string]*clusterv1alpha1.Cluster {
		return map[string]*clusterv1alpha1.Cluster{"member2": c.obj()}
	}
	for name, tc := range map[string]struct {
		binding *bindingWrapper
		task    *workv1alpha2.GracefulEvictionTask
		// clusters are the Clusters known to the controller; nil: unknown.
		clusters      map[string]*clusterv1alpha1.Cluster
		wantAbandoned bool
		wantClosed    bool
		wantClusters  []string
		wantReason    string
	}{
		"must not drop member1, the only Healthy copy: member2 failed meanwhile, its copy is Unhealthy": {
			binding:      split().health("member1", healthy).health("member3", unhealthy).health("member2", unhealthy),
			wantClosed:   true,
			wantClusters: []string{"member1", "member3"},
			wantReason:   "the copy in member2 is not Healthy",
		},
		"must not restore member2, not Ready, whose copy still reports Healthy; member1 is Healthy": {
			binding:      split().health("member1", healthy).health("member3", unhealthy).health("member2", healthy),
			clusters:     member2(makeCluster("member2").down().notReadyNoExecute(100)),
			wantClosed:   true,
			wantClusters: []string{"member1", "member3"},
			wantReason:   "cluster member2 is not Ready",
		},
		"must not restore member2 with an untolerated NoExecute taint; member1 is Healthy": {
			binding:      split().health("member1", healthy).health("member3", unhealthy).health("member2", healthy),
			clusters:     member2(makeCluster("member2").taint("maintenance", corev1.TaintEffectNoExecute, 100)),
			wantClosed:   true,
			wantClusters: []string{"member1", "member3"},
			wantReason:   "NoExecute taint maintenance",
		},
		"must not restore member2 when its Cluster is gone; member1 is Healthy": {
			binding:      split().health("member1", healthy).health("member3", unhealthy).health("member2", healthy),
			clusters:     map[string]*clusterv1alpha1.Cluster{},
			wantClosed:   true,
			wantClusters: []string{"member1", "member3"},
			wantReason:   "cluster member2 was not found",
		},
		"must not drop member1: member2 is Ready and Healthy, it comes back and member1 stays; member3 goes": {
			binding:       split().health("member1", healthy).health("member3", unhealthy).health("member2", healthy),
			clusters:      member2(makeCluster("member2")),
			wantAbandoned: true,
			wantClusters:  []string{"member1", "member2"},
		},
		"must not drop member1: the scheduler has not placed the current generation, so it is given up, keeping member1": {
			binding:       split().health("member1", healthy).health("member3", unhealthy).health("member2", unhealthy).unscheduled(),
			wantAbandoned: true,
			wantClusters:  []string{"member1", "member2"},
		},
		"nothing moved back is Healthy and member2 can take it back: given up, member2 comes back": {
			binding:       split().health("member1", unhealthy).health("member2", healthy),
			clusters:      member2(makeCluster("member2")),
			wantAbandoned: true,
			wantClusters:  []string{"member2"},
		},
		"nothing moved back is Healthy, member2 is not known: given up as before": {
			binding:       split().health("member1", unhealthy).health("member2", unhealthy),
			wantAbandoned: true,
			wantClusters:  []string{"member2"},
		},
		"must not close the task: member2 is not Ready but its copy is the only Healthy one, so it is the workload again": {
			binding:       split().health("member1", unhealthy).health("member2", healthy),
			clusters:      member2(makeCluster("member2").down()),
			wantAbandoned: true,
			wantClusters:  []string{"member2"},
		},
		"nothing is Healthy and member2 is not Ready: the new placement stays rather than a dead cluster": {
			binding:      split().health("member1", unhealthy).health("member2", unhealthy),
			clusters:     member2(makeCluster("member2").down()),
			wantClosed:   true,
			wantClusters: []string{"member1", "member3"},
			wantReason:   "cluster member2 is not Ready and its copy there is not Healthy either",
		},
		"every copy moved back is Healthy, only a cluster that stayed is not: the failback ends there": {
			binding: makeBinding("a").clusters("member1", "member4").health("member1", healthy).health("member4", unhealthy).health("member2", healthy),
			task: func() *workv1alpha2.GracefulEvictionTask {
				t := failbackTask()
				t.ClustersBeforeFailover = []string{"member2", "member4"}
				return &t
			}(),
			clusters:     member2(makeCluster("member2")),
			wantClosed:   true,
			wantClusters: []string{"member1", "member4"},
			wantReason:   "every copy moved back (to member1) is Healthy",
		},
	} {
		t.Run(name, func(t *testing.T) {
			task := failbackTask()
			if tc.task != nil {
				task = *tc.task
			}
			b := tc.binding.task(task).obj()
			p := planTasks(observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod, clusters: tc.clusters}, at(700))
			if got := len(p.abandoned) > 0; got != tc.wantAbandoned {
				t.Errorf("abandoned: got %t, want %t", got, tc.wantAbandoned)
			}
			closed := len(p.removed) > 0
			if closed != tc.wantClosed {
				t.Errorf("task closed with the new placement kept: got %t, want %t (%+v)", closed, tc.wantClosed, p.removed)
			}
			if closed && !strings.Contains(p.removed[0].reason, tc.wantReason) {
				t.Errorf("reason %q, want it to say %q", p.removed[0].reason, tc.wantReason)
			}
			if len(p.kept) != 0 {
				t.Errorf("the task is still open: %+v", p.kept)
			}
			after := clusterNames(afterAbandon(b.Spec.Clusters, p))
			if !slices.Equal(after, tc.wantClusters) {
				t.Errorf("spec.clusters after: got %v, want %v", after, tc.wantClusters)
			}
			// The promise, whatever the case: no Healthy copy goes unless
			// another Healthy copy stays.
			healthyBefore, healthyAfter := 0, 0
			for _, c := range append(clusterNames(b.Spec.Clusters), task.FromCluster) {
				if item := aggregatedItem(&b.Status, c); item != nil && item.Health == healthy {
					healthyBefore++
					if slices.Contains(after, c) || (c == task.FromCluster && !closed) {
						healthyAfter++
					} else if slices.Contains(clusterNames(b.Spec.Clusters), c) {
						t.Errorf("the Healthy copy in %s leaves spec.clusters", c)
					}
				}
			}
			if healthyBefore > 0 && healthyAfter == 0 {
				t.Errorf("no Healthy copy is left (spec.clusters %v, task closed %t)", after, closed)
			}
		})
	}
}

// The graceful-eviction controller ends a failback whose copy moved back
// to member1 is Healthy while the one to member3 is not, and whose copy
// left in member2 is not Healthy any more: the placement stays, the task
// goes, and the Event says why. Nothing records it as given up.
func TestReconcileEndsFailbackOnItsHealthyPlacement(t *testing.T) {
	b := makeBinding("nginx").clusters("member1", "member3").
		health("member1", workv1alpha2.ResourceHealthy).health("member3", workv1alpha2.ResourceUnhealthy).
		health("member2", workv1alpha2.ResourceUnhealthy).task(failbackTask()).obj()
	e := newEnv(t, nil, b)
	e.clock.SetTime(at(601))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	got := e.rb(b.Name)
	if len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v, want none", got.Spec.GracefulEvictionTasks)
	}
	if names := clusterNames(got.Spec.Clusters); !slices.Equal(names, []string{"member1", "member3"}) {
		t.Errorf("spec.clusters: %v, want member1 and member3 kept", names)
	}
	for _, h := range got.Status.FailoverHistory {
		if h.Reason == workv1alpha2.EvictionReasonFailbackAbandoned {
			t.Errorf("recorded as given up: %+v", h)
		}
	}
	if !eventSeen(e, "the workload stays on member1,member3 instead of going back") {
		t.Error("no Event says the workload stays on its new placement")
	}
}

// Other tasks keep their time-out: only a failback is given up instead.
func TestFailbackAbandonIsOnlyForFailbacks(t *testing.T) {
	for _, reason := range []string{workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionReasonApplicationFailure} {
		task := failbackTask()
		task.Reason = reason
		b := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(task).obj()
		if end, ok := failbackOverdue(&task, observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(700)); ok {
			t.Errorf("%s: ended %+v", reason, end)
		}
	}
	task := withSuppress(failbackTask(), ptr.To(false))
	b := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(task).obj()
	if _, ok := failbackOverdue(&task, observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(700)); ok {
		t.Error("a user's suppressDeletion: false is the user's to decide, not abandoned")
	}
}

func TestAbandonedHistory(t *testing.T) {
	b := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(failbackTask()).obj()
	p := planTasks(observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(900))
	h := abandonedHistory(nil, p.abandoned, []string{"member1"}, []string{"member2"})
	if len(h) != 1 {
		t.Fatalf("history: %+v", h)
	}
	got := h[0]
	if got.Reason != workv1alpha2.EvictionReasonFailbackAbandoned || got.FromCluster != "member1" || !got.Time.Time.Equal(at(600)) ||
		!slices.Equal(got.ClustersBefore, []string{"member1"}) || !slices.Equal(got.ClustersAfter, []string{"member2"}) {
		t.Errorf("entry: %+v (want FailbackAbandoned from member1 at the deadline, member1 → member2)", got)
	}
	if again := abandonedHistory(h, p.abandoned, []string{"member1"}, []string{"member2"}); len(again) != 1 {
		t.Errorf("derived twice: %d entries, want 1", len(again))
	}
}

// The graceful-eviction controller gives up a failback whose copy moved
// back stays unhealthy: member2 (the copy that runs) returns to
// spec.clusters, member1 leaves, the task goes, and the history and an
// Event say so. The failback entry itself is never marked healthy.
func TestReconcileAbandonsFailback(t *testing.T) {
	b := makeBinding("nginx").clusters("member1").
		health("member1", workv1alpha2.ResourceUnhealthy).health("member2", workv1alpha2.ResourceHealthy).
		task(failbackTask()).obj()
	e := newEnv(t, nil, b)
	e.clock.SetTime(at(601))
	r := e.gracefulEviction()
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	got := e.rb(b.Name)
	if len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v, want none", got.Spec.GracefulEvictionTasks)
	}
	if names := clusterNames(got.Spec.Clusters); !slices.Equal(names, []string{"member2"}) {
		t.Errorf("spec.clusters: %+v, want member2 back", got.Spec.Clusters)
	}
	var reasons []string
	for _, h := range got.Status.FailoverHistory {
		reasons = append(reasons, h.Reason+":"+h.FromCluster)
	}
	if want := []string{"Failback:member2", "FailbackAbandoned:member1"}; !slices.Equal(reasons, want) {
		t.Errorf("history: %v, want %v", reasons, want)
	}
	if !eventSeen(e, EventReasonFailbackAbandoned) {
		t.Error("no FailbackAbandoned Event")
	}

	// The restored placement is Healthy: the failback entry stays without
	// a healthy time, and the next pass writes nothing.
	got.Status.SchedulerObservedGeneration = got.Generation
	got.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{{ClusterName: "member2", Applied: true, Health: workv1alpha2.ResourceHealthy}}
	e.updateStatus(got)
	if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	got = e.rb(b.Name)
	if h := got.Status.FailoverHistory[0]; h.ReplacementHealthyTime != nil {
		t.Errorf("the abandoned failback is marked healthy: %+v", h)
	}
	if historyOpen(&got.Status) {
		t.Error("the history stays open after an abandoned failback")
	}
}

func eventSeen(e *env, reason string) bool {
	for {
		select {
		case ev := <-e.recorder.Events:
			if strings.Contains(ev, reason) {
				return true
			}
		default:
			return false
		}
	}
}

// A failback's task carries the state of the copy it leaves, captured by
// the policy's statePreservation rules as a failover's would be.
func TestFailbackState(t *testing.T) {
	off := features.New()
	if err := off.Set("StatefulFailoverInjection=false"); err != nil {
		t.Fatal(err)
	}
	withRules := func(b *bindingWrapper, cluster bool) *bindingWrapper {
		sp := &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{rule("job", "{ .jobID }")}}
		if cluster {
			b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{StatePreservation: sp}}
		} else {
			b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{StatePreservation: sp}}
		}
		return b
	}
	running := func() *bindingWrapper {
		return makeBinding("a").clusters("member1").reflected("member2", map[string]interface{}{"jobID": "j-7"})
	}
	cases := map[string]struct {
		binding *bindingWrapper
		gates   *features.Gates
		want    map[string]string
		note    string
	}{
		"cluster failover rules":                   {binding: withRules(running(), true), want: map[string]string{"job": "j-7"}},
		"application failover rules":               {binding: withRules(running(), false), want: map[string]string{"job": "j-7"}},
		"no rules":                                 {binding: running()},
		"the gate off":                             {binding: withRules(running(), true), gates: off},
		"no value: the failback goes on, and says": {binding: withRules(makeBinding("a").clusters("member1").health("member2", workv1alpha2.ResourceHealthy), true), note: "state not preserved"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			gates := tc.gates
			if gates == nil {
				gates = features.New()
			}
			state, note := FailbackState(&b.Spec, &b.Status, "member2", gates)
			if len(state) != len(tc.want) || state["job"] != tc.want["job"] {
				t.Errorf("state %v, want %v", state, tc.want)
			}
			if !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want it to say %q", note, tc.note)
			}
		})
	}
}

// The graceful-eviction controller reads the Cluster a failback left: an
// overdue failback does not restore member2, which is not Ready, although
// its copy still reports Healthy, while the copy moved back to member1 is
// Healthy. The new placement stays and the task closes.
func TestReconcileOverdueFailbackDoesNotRestoreNotReadyCluster(t *testing.T) {
	b := makeBinding("nginx").clusters("member1", "member3").
		health("member1", workv1alpha2.ResourceHealthy).health("member3", workv1alpha2.ResourceUnhealthy).
		health("member2", workv1alpha2.ResourceHealthy).task(failbackTask()).obj()
	e := newEnv(t, nil, b, makeCluster("member2").down().obj())
	e.clock.SetTime(at(700))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	got := e.rb(b.Name)
	if names := clusterNames(got.Spec.Clusters); !slices.Equal(names, []string{"member1", "member3"}) {
		t.Errorf("spec.clusters: %v, want member1 and member3 (member2 is not Ready)", names)
	}
	if len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v, want none", got.Spec.GracefulEvictionTasks)
	}
	if !eventSeen(e, "cluster member2 is not Ready") {
		t.Error("no Event says member2 is not Ready")
	}
}

// A failback given up with no copy to remove (the scheduler has not placed
// the current generation, every copy moved back is Healthy) says so
// without an empty cluster name.
func TestAbandonedFailbackEventWithNothingDropped(t *testing.T) {
	b := makeBinding("nginx").clusters("member1").
		health("member1", workv1alpha2.ResourceHealthy).health("member2", workv1alpha2.ResourceHealthy).
		unscheduled().task(failbackTask()).obj()
	e := newEnv(t, nil, b, makeCluster("member2").obj())
	e.clock.SetTime(at(700))
	if _, err := e.gracefulEviction().reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
		t.Fatal(err)
	}
	var abandoned []string
	for _, ev := range e.events() {
		if strings.Contains(ev, EventReasonFailbackAbandoned) {
			abandoned = append(abandoned, ev)
		}
	}
	if len(abandoned) == 0 {
		t.Fatal("no FailbackAbandoned Event")
	}
	for _, ev := range abandoned {
		if strings.Contains(ev, "to  ") || !strings.Contains(ev, "member1") || !strings.Contains(ev, "member2") {
			t.Errorf("Event %q: want it to name where the workload stays, without an empty cluster name", ev)
		}
	}
}
