package binding

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

func (e *env) binding(rb *workv1alpha2.ResourceBinding) *workv1alpha2.ResourceBinding {
	e.t.Helper()
	got := &workv1alpha2.ResourceBinding{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(rb), got); err != nil {
		e.t.Fatal(err)
	}
	return got
}

func TestAggregatedStatusAndFullyApplied(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member2", 1).Cluster("member1", 2).EvictionTask("member3", policyv1alpha1.PurgeModeGracefully).Obj()
	orphan := makeWork("member9", rb)
	e := newEnv(t, rb, makeDeployment("nginx", 3),
		applied(makeWork("member1", rb), true, 2, workv1alpha1.ResourceHealthy),
		applied(makeWork("member2", rb), false, 0, ""),
		applied(makeWork("member3", rb), true, 0, workv1alpha1.ResourceUnhealthy),
		applied(orphan, true, 5, workv1alpha1.ResourceHealthy))
	fakeClock := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e.status.Clock = fakeClock

	e.reconcileStatus(rb)
	got := e.binding(rb)
	want := []struct {
		cluster string
		applied bool
		message string
		health  workv1alpha2.ResourceHealth
		status  string
	}{
		{"member1", true, "", workv1alpha2.ResourceHealthy, `{"readyReplicas":2}`},
		{"member2", false, "quota exceeded", workv1alpha2.ResourceUnknown, ""},
		{"member3", true, "", workv1alpha2.ResourceUnhealthy, `{"readyReplicas":0}`},
	}
	if len(got.Status.AggregatedStatus) != len(want) {
		t.Fatalf("aggregatedStatus = %+v", got.Status.AggregatedStatus)
	}
	for i, w := range want {
		item := got.Status.AggregatedStatus[i]
		status := ""
		if item.Status != nil {
			status = string(item.Status.Raw)
		}
		if item.ClusterName != w.cluster || item.Applied != w.applied || item.AppliedMessage != w.message || item.Health != w.health || status != w.status {
			t.Errorf("item %d = %+v (status %s), want %+v", i, item, status, w)
		}
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.FullyApplied)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != workv1alpha2.FullyAppliedFailedReason {
		t.Errorf("FullyApplied = %+v, want False", cond)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.PlacementHealthy); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("PlacementHealthy = %+v, want False (member2 has no health)", c)
	}

	tmpl := &appsv1.Deployment{}
	if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "nginx"}, tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Status.ReadyReplicas != 2 {
		t.Errorf("template readyReplicas = %d, want 2 (orphans are not aggregated)", tmpl.Status.ReadyReplicas)
	}

	// Nothing changed: nothing is written.
	e.writes = nil
	e.reconcileStatus(rb)
	if len(e.writes) != 0 {
		t.Errorf("second pass wrote %v", e.writes)
	}

	// member2 applies: FullyApplied turns True at the clock's time.
	w2 := &workv1alpha1.Work{}
	if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: ExecutionNamespace("member2"), Name: orphan.Name}, w2); err != nil {
		t.Fatal(err)
	}
	applied(w2, true, 1, workv1alpha1.ResourceHealthy)
	if err := e.client.Status().Update(context.Background(), w2); err != nil {
		t.Fatal(err)
	}
	fakeClock.SetTime(fakeClock.Now().Add(time.Minute))
	e.reconcileStatus(rb)
	got = e.binding(rb)
	cond = meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.FullyApplied)
	if cond == nil || cond.Status != metav1.ConditionTrue || !cond.LastTransitionTime.Time.Equal(fakeClock.Now()) {
		t.Errorf("FullyApplied = %+v, want True at %v", cond, fakeClock.Now())
	}
	healthyAt := fakeClock.Now()
	if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.PlacementHealthy); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(healthyAt) {
		t.Errorf("PlacementHealthy = %+v, want True since %v (member3 is only kept, not placed)", c, healthyAt)
	}

	if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "nginx"}, tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Status.ReadyReplicas != 3 {
		t.Errorf("template readyReplicas = %d, want 3", tmpl.Status.ReadyReplicas)
	}

	// The workload moves to member1 alone (say member2 was evicted), and
	// member1 is Healthy at the first look: a new placement is a
	// transition of its own, so its time is now, never the time the
	// placement before it became Healthy (a failover would read 0 s).
	got.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
	if err := e.client.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	fakeClock.SetTime(fakeClock.Now().Add(time.Minute))
	e.reconcileStatus(rb)
	if c := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.PlacementHealthy); c == nil || c.Status != metav1.ConditionTrue ||
		!c.LastTransitionTime.Time.Equal(fakeClock.Now()) || !strings.Contains(c.Message, "member1") {
		t.Errorf("PlacementHealthy = %+v, want True since %v (not %v, when the placement before became Healthy), naming member1", c, fakeClock.Now(), healthyAt)
	}

	// The same placement, looked at again: nothing to write.
	e.writes = nil
	fakeClock.SetTime(fakeClock.Now().Add(time.Minute))
	e.reconcileStatus(rb)
	if len(e.writes) != 0 {
		t.Errorf("an unchanged placement wrote %v", e.writes)
	}

	// member1's share changes, nothing else: the condition is rewritten to
	// name the new share, so that the failover controller never reads the
	// report before it as the new share's.
	got = e.binding(rb)
	got.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}}
	if err := e.client.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	e.reconcileStatus(rb)
	if c := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.PlacementHealthy); c == nil ||
		c.Status != metav1.ConditionTrue || c.Message != workv1alpha2.PlacementHealthyMessage(got.Spec.Clusters) {
		t.Errorf("PlacementHealthy = %+v after member1's share changed, want it to name member1 (3 replicas)", c)
	}
}

func TestFullyAppliedWhenEveryTargetApplied(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 2).RequiredBy("x", "member2").Obj()
	e := newEnv(t, rb, makeDeployment("nginx", 3),
		applied(makeWork("member1", rb), true, 2, workv1alpha1.ResourceHealthy),
		applied(makeWork("member2", rb), true, 1, workv1alpha1.ResourceHealthy))
	e.reconcileStatus(rb)
	cond := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.FullyApplied)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != workv1alpha2.FullyAppliedSuccessReason {
		t.Errorf("FullyApplied = %+v, want True", cond)
	}
}

func TestAggregatedNews(t *testing.T) {
	healthy := func(cluster string, ready string) workv1alpha2.AggregatedStatusItem {
		return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Health: workv1alpha2.ResourceHealthy,
			Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":` + ready + `}`)}}
	}
	unhealthy := healthy("m1", "1")
	unhealthy.Health = workv1alpha2.ResourceUnhealthy
	notApplied := healthy("m1", "1")
	notApplied.Applied, notApplied.AppliedMessage = false, "quota"
	tests := map[string]struct {
		a, b []workv1alpha2.AggregatedStatusItem
		want bool
	}{
		"reflected status only":  {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{healthy("m1", "2")}, false},
		"health":                 {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{unhealthy}, true},
		"applied and message":    {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{notApplied}, true},
		"a cluster added":        {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{healthy("m1", "1"), healthy("m2", "1")}, true},
		"a cluster replaced":     {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{healthy("m2", "1")}, true},
		"first items":            {nil, []workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, true},
		"nothing at all changed": {[]workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, []workv1alpha2.AggregatedStatusItem{healthy("m1", "1")}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := aggregatedNews(tc.a, tc.b); got != tc.want {
				t.Errorf("aggregatedNews = %v, want %v", got, tc.want)
			}
		})
	}
}

// A change of the reflected figures alone waits for the binding's window;
// a change of health is written at once, whatever the window.
func TestStatusWritesWithoutNewsAreSpacedOut(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 2).Obj()
	work := applied(makeWork("member1", rb), true, 1, workv1alpha1.ResourceUnhealthy)
	e := newEnv(t, rb, makeDeployment("nginx", 2), work)
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e.status.Writes = coalesce.New(time.Second, clk)

	e.reconcileStatus(rb) // the first items: news, written
	if got := e.binding(rb).Status.AggregatedStatus; len(got) != 1 || got[0].Health != workv1alpha2.ResourceUnhealthy {
		t.Fatalf("aggregatedStatus = %+v", got)
	}

	setWork := func(ready int, health workv1alpha1.ResourceHealth) {
		t.Helper()
		w := &workv1alpha1.Work{}
		if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(work), w); err != nil {
			t.Fatal(err)
		}
		applied(w, true, ready, health)
		if err := e.client.Status().Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}

	setWork(2, workv1alpha1.ResourceUnhealthy)
	clk.SetTime(clk.Now().Add(200 * time.Millisecond))
	res, err := e.status.Reconcile(context.Background(), reqFor(rb))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 800*time.Millisecond {
		t.Errorf("figures only, 200ms after a write: requeue after %v, want 800ms", res.RequeueAfter)
	}
	if got := string(e.binding(rb).Status.AggregatedStatus[0].Status.Raw); got != `{"readyReplicas":1}` {
		t.Errorf("written within the window: status %s", got)
	}

	setWork(2, workv1alpha1.ResourceHealthy)
	e.reconcileStatus(rb)
	if got := e.binding(rb).Status.AggregatedStatus[0]; got.Health != workv1alpha2.ResourceHealthy || string(got.Status.Raw) != `{"readyReplicas":2}` {
		t.Errorf("health changed within the window: item %+v (status %s), want Healthy with the latest figures", got, got.Status.Raw)
	}
}

// TestFirstStatusWaitsForTheFirstApply: a new binding whose Work has not
// been applied yet gets no status write for up to StartingGrace; an
// apply within it is the first write, a Work still pending after it is
// reported, and a failed apply is never held back.
func TestFirstStatusWaitsForTheFirstApply(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	pending := func(t *testing.T, works ...client.Object) (*env, *workv1alpha2.ResourceBinding) {
		rb := makeBinding("nginx").Cluster("member1", 2).Obj()
		objs := append([]client.Object{rb, makeDeployment("nginx", 2)}, works...)
		e := newEnv(t, objs...)
		e.status.Clock = clk
		e.status.Starting = coalesce.NewQuiet(StartingGrace, clk)
		return e, rb
	}
	quiet := func(t *testing.T, e *env, rb *workv1alpha2.ResourceBinding, wantWait time.Duration) {
		t.Helper()
		e.writes = nil
		res, err := e.status.Reconcile(context.Background(), reqFor(rb))
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != wantWait {
			t.Errorf("requeue after %v, want %v", res.RequeueAfter, wantWait)
		}
		if len(e.writes) != 0 || len(e.binding(rb).Status.Conditions) != 0 {
			t.Errorf("wrote %v within the grace", e.writes)
		}
	}

	t.Run("applied within the grace", func(t *testing.T) {
		rb := makeBinding("nginx").Cluster("member1", 2).Obj()
		work := makeWork("member1", rb)
		e, rb := pending(t, work)
		quiet(t, e, rb, StartingGrace)
		clk.SetTime(clk.Now().Add(300 * time.Millisecond))
		quiet(t, e, rb, StartingGrace-300*time.Millisecond)

		w := &workv1alpha1.Work{}
		if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(work), w); err != nil {
			t.Fatal(err)
		}
		applied(w, true, 2, workv1alpha1.ResourceHealthy)
		if err := e.client.Status().Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		e.reconcileStatus(rb)
		got := e.binding(rb)
		if len(got.Status.AggregatedStatus) != 1 || !got.Status.AggregatedStatus[0].Applied {
			t.Errorf("after the apply: aggregatedStatus = %+v", got.Status.AggregatedStatus)
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.FullyApplied); cond == nil || cond.Status != metav1.ConditionTrue {
			t.Errorf("after the apply: FullyApplied = %+v, want True", cond)
		}
	})

	t.Run("still pending after the grace", func(t *testing.T) {
		rb := makeBinding("nginx").Cluster("member1", 2).Obj()
		e, rb := pending(t, makeWork("member1", rb))
		quiet(t, e, rb, StartingGrace)
		clk.SetTime(clk.Now().Add(StartingGrace))
		e.reconcileStatus(rb)
		got := e.binding(rb)
		if len(got.Status.AggregatedStatus) != 1 || got.Status.AggregatedStatus[0].Applied || got.Status.AggregatedStatus[0].Health != workv1alpha2.ResourceUnknown {
			t.Errorf("aggregatedStatus = %+v, want one pending item", got.Status.AggregatedStatus)
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.FullyApplied); cond == nil || cond.Status != metav1.ConditionFalse {
			t.Errorf("FullyApplied = %+v, want False", cond)
		}
		if e.status.Starting.Holding(client.ObjectKeyFromObject(rb)) {
			t.Error("the binding is still remembered as quiet after its first status was written")
		}
	})

	t.Run("no Work yet, after the grace", func(t *testing.T) {
		e, rb := pending(t)
		quiet(t, e, rb, StartingGrace)
		clk.SetTime(clk.Now().Add(2 * StartingGrace))
		e.reconcileStatus(rb)
		if cond := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.FullyApplied); cond == nil || cond.Status != metav1.ConditionFalse {
			t.Errorf("FullyApplied = %+v, want False", cond)
		}
	})

	t.Run("a failed apply is written at once", func(t *testing.T) {
		rb := makeBinding("nginx").Cluster("member1", 2).Obj()
		e, rb := pending(t, applied(makeWork("member1", rb), false, 0, ""))
		e.reconcileStatus(rb)
		got := e.binding(rb)
		if len(got.Status.AggregatedStatus) != 1 || got.Status.AggregatedStatus[0].AppliedMessage != "quota exceeded" {
			t.Errorf("aggregatedStatus = %+v, want the failure", got.Status.AggregatedStatus)
		}
	})
}

func TestOnlyStarting(t *testing.T) {
	pending := workv1alpha2.AggregatedStatusItem{ClusterName: "m2", Health: workv1alpha2.ResourceUnknown}
	appliedUnknown := workv1alpha2.AggregatedStatusItem{ClusterName: "m2", Applied: true, Health: workv1alpha2.ResourceUnknown}
	failed := workv1alpha2.AggregatedStatusItem{ClusterName: "m2", AppliedMessage: "quota exceeded", Health: workv1alpha2.ResourceUnknown}
	status := &runtime.RawExtension{Raw: []byte(`{"readyReplicas":0}`)}
	healthy := func(cluster string, ready int) workv1alpha2.AggregatedStatusItem {
		return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Health: workv1alpha2.ResourceHealthy,
			Status: &runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"readyReplicas":%d}`, ready))}}
	}
	unhealthyM2 := workv1alpha2.AggregatedStatusItem{ClusterName: "m2", Applied: true, Health: workv1alpha2.ResourceUnhealthy, Status: status}
	unknownWithStatus := workv1alpha2.AggregatedStatusItem{ClusterName: "m2", Applied: true, Health: workv1alpha2.ResourceUnknown, Status: status}
	items := func(is ...workv1alpha2.AggregatedStatusItem) []workv1alpha2.AggregatedStatusItem { return is }

	for _, tc := range []struct {
		name          string
		written, now  []workv1alpha2.AggregatedStatusItem
		expected      []string
		want          bool
		becauseOfWhat string
	}{
		{name: "first status, no Work yet", expected: []string{"m2"}, want: true},
		{name: "first status, Work not applied", now: items(pending), expected: []string{"m2"}, want: true},
		{name: "first status, applied, no health yet", now: items(appliedUnknown), expected: []string{"m2"}, want: true},
		{name: "pending to applied, no health yet", written: items(pending), now: items(appliedUnknown), expected: []string{"m2"}, want: true},
		{name: "a failed apply", now: items(failed), expected: []string{"m2"}, want: false},
		{name: "Healthy", written: items(appliedUnknown), now: items(healthy("m2", 1)), expected: []string{"m2"}, want: false},
		{name: "Unhealthy", written: items(appliedUnknown), now: items(unhealthyM2), expected: []string{"m2"}, want: false},
		{name: "a reflected status without health", now: items(unknownWithStatus), expected: []string{"m2"}, want: false},
		{name: "failover: the new cluster starts, the old one unchanged",
			written: items(healthy("m1", 1)), now: items(healthy("m1", 1), pending), expected: []string{"m1", "m2"}, want: true},
		{name: "failover: the old cluster's figures change too",
			written: items(healthy("m1", 1)), now: items(healthy("m1", 0), pending), expected: []string{"m1", "m2"}, want: false},
		{name: "a cluster's item removed", written: items(healthy("m1", 1), pending), now: items(pending), expected: []string{"m2"}, want: false},
		{name: "a Healthy cluster loses its health", written: items(healthy("m2", 1)), now: items(appliedUnknown), expected: []string{"m2"}, want: false},
		{name: "a starting item of a cluster no longer expected", written: items(healthy("m1", 1)), now: items(healthy("m1", 1), pending), expected: []string{"m1"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyStarting(tc.written, sets.New(tc.expected...), tc.now); got != tc.want {
				t.Errorf("onlyStarting = %v, want %v", got, tc.want)
			}
		})
	}
}

// healthyOnMember1 is a binding of nginx placed on member1 with 2 replicas,
// its status written with member1 Healthy, on a fake clock.
func healthyOnMember1(t *testing.T) (*env, *clocktesting.FakePassiveClock, *workv1alpha2.ResourceBinding) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	rb := makeBinding("nginx").Cluster("member1", 2).Obj()
	old := applied(makeWork("member1", rb), true, 2, workv1alpha1.ResourceHealthy)
	e := newEnv(t, rb, makeDeployment("nginx", 2), old)
	e.status.Clock = clk
	e.status.Starting = coalesce.NewQuiet(StartingGrace, clk)
	e.reconcileStatus(rb)
	return e, clk, rb
}

// TestNewClusterStartsQuietly: a failover's new cluster is reported once it
// has news. Its Work appearing and being applied are held back for up to
// StartingGrace; its health is written at once.
func TestNewClusterStartsQuietly(t *testing.T) {
	e, clk, rb := healthyOnMember1(t)
	if got := e.binding(rb).Status.AggregatedStatus; len(got) != 1 || got[0].Health != workv1alpha2.ResourceHealthy {
		t.Fatalf("before the failover: aggregatedStatus = %+v", got)
	}

	// The binding moves to member2 and keeps member1 by an eviction task.
	moved := e.binding(rb)
	moved.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}
	moved.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeGracefully}}
	if err := e.client.Update(context.Background(), moved); err != nil {
		t.Fatal(err)
	}
	held := func(step string, want time.Duration) {
		t.Helper()
		e.writes = nil
		res, err := e.status.Reconcile(context.Background(), reqFor(rb))
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != want || len(e.writes) != 0 {
			t.Errorf("%s: requeue after %v and writes %v, want %v and none", step, res.RequeueAfter, e.writes, want)
		}
	}
	held("no Work in member2 yet", StartingGrace)
	newWork := makeWork("member2", rb)
	if err := e.client.Create(context.Background(), newWork); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	held("member2's Work not applied", StartingGrace-500*time.Millisecond)
	w := e.work("member2", "Deployment", "default", "nginx")
	w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: metav1.Now()}}
	if err := e.client.Status().Update(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	held("member2's Work applied, no health yet", StartingGrace-500*time.Millisecond)

	applied(w, true, 2, workv1alpha1.ResourceHealthy)
	if err := e.client.Status().Update(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	e.reconcileStatus(rb)
	got := e.binding(rb).Status.AggregatedStatus
	if len(got) != 2 || got[1].ClusterName != "member2" || got[1].Health != workv1alpha2.ResourceHealthy {
		t.Errorf("after member2 turned Healthy: aggregatedStatus = %+v, want member1 and member2 Healthy", got)
	}
	if e.status.Starting.Holding(client.ObjectKeyFromObject(rb)) {
		t.Error("the binding is still held after its status was written")
	}
}

// liveReads counts the reads that reach the API server.
type liveReads struct {
	client.Reader
	n int
}

func (l *liveReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.n++
	return l.Reader.Get(ctx, key, obj, opts...)
}

// TestTemplateFromTheCacheAfterItsStatusWrites: once the binding-status
// controller has written the template's status, the template's
// resourceVersion is no longer the binding's; the binding controller still
// takes the cached copy, which differs only by that status.
func TestTemplateFromTheCacheAfterItsStatusWrites(t *testing.T) {
	deploy := makeDeployment("nginx", 2)
	rb := makeBinding("nginx").Cluster("member1", 2).Obj()
	e := newEnv(t, deploy, rb, makeCluster("member1"), applied(makeWork("member1", rb), true, 2, workv1alpha1.ResourceHealthy))
	tmpl := &appsv1.Deployment{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(deploy), tmpl); err != nil {
		t.Fatal(err)
	}
	stored := e.binding(rb)
	stored.Spec.Resource.ResourceVersion = tmpl.ResourceVersion
	if err := e.client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	kinds := &templates.Kinds{}
	kinds.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	live := &liveReads{Reader: e.client}
	reader := &templates.Reader{Cache: e.client, Kinds: kinds, Live: live, Statuses: &templates.Statuses{}}
	e.sync.Templates, e.status.Templates = reader, reader

	e.reconcileStatus(rb)
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(deploy), tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.ResourceVersion == stored.Spec.Resource.ResourceVersion {
		t.Fatal("the template's status was not written: the test shows nothing")
	}
	live.n = 0
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if live.n != 0 {
		t.Errorf("%d template reads from the API server after a status write of this process", live.n)
	}

	// Without the memory of the status writes the read goes live.
	reader.Statuses = nil
	if err := e.reconcile(rb); err != nil {
		t.Fatal(err)
	}
	if live.n == 0 {
		t.Error("no read from the API server even without Statuses")
	}
}

// Health counts only when the report describes what the binding wants of
// the cluster now: the Work's current generation applied and observed in
// the member, rendered for the cluster's current replicas.
func TestAggregatedHealthOnlyFromCurrentReports(t *testing.T) {
	rb := makeBinding("nginx").Cluster("member1", 4).EvictionTask("member2", policyv1alpha1.PurgeModeGracefully).Obj()
	work := func(cluster string, generation, appliedGen, observedGen int64, replicas string) workv1alpha1.Work {
		w := applied(makeWork(cluster, rb), true, 2, workv1alpha1.ResourceHealthy)
		w.Generation = generation
		w.Status.Conditions[0].ObservedGeneration = appliedGen
		w.Status.ManifestStatuses[0].ObservedGeneration = observedGen
		if replicas != "" {
			w.Annotations[workv1alpha1.WorkReplicasAnnotation] = replicas
		}
		return *w
	}
	for name, tc := range map[string]struct {
		work workv1alpha1.Work
		want workv1alpha2.ResourceHealth
	}{
		"current: Healthy":                       {work: work("member1", 3, 3, 3, "4"), want: workv1alpha2.ResourceHealthy},
		"no replica count rendered: Healthy":     {work: work("member1", 3, 3, 3, ""), want: workv1alpha2.ResourceHealthy},
		"the Work's new generation not applied":  {work: work("member1", 3, 2, 2, "4"), want: workv1alpha2.ResourceUnknown},
		"applied, but the report is of the last": {work: work("member1", 3, 3, 2, "4"), want: workv1alpha2.ResourceUnknown},
		"rendered for another share (2, not 4)":  {work: work("member1", 3, 3, 3, "2"), want: workv1alpha2.ResourceUnknown},
		"a kept copy is not held to a share":     {work: work("member2", 3, 3, 3, "2"), want: workv1alpha2.ResourceHealthy},
	} {
		t.Run(name, func(t *testing.T) {
			cluster, _ := ClusterOfNamespace(tc.work.Namespace)
			items := aggregateStatus([]workv1alpha1.Work{tc.work}, sets.New("member1", "member2"), &rb.Spec)
			if len(items) != 1 || items[0].ClusterName != cluster {
				t.Fatalf("items = %+v", items)
			}
			if items[0].Health != tc.want {
				t.Errorf("health = %s, want %s", items[0].Health, tc.want)
			}
			if !items[0].Applied || items[0].Status == nil {
				t.Errorf("applied %t, status %v: the reflected status is kept whatever its age", items[0].Applied, items[0].Status)
			}
		})
	}
}

func TestPlacementAnswerWait(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 30, 0, time.UTC)
	task := func(ago time.Duration) workv1alpha2.GracefulEvictionTask {
		return workv1alpha2.GracefulEvictionTask{FromCluster: "member1", CreationTimestamp: ptr.To(metav1.NewTime(now.Add(-ago)))}
	}
	cases := map[string]struct {
		spec workv1alpha2.ResourceBindingSpec
		want time.Duration
	}{
		"evicted 3 s ago, not placed yet":           {workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{task(3 * time.Second)}}, 7 * time.Second},
		"the newest of two tasks counts":            {workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{task(time.Minute), task(time.Second)}}, 9 * time.Second},
		"evicted longer ago than the grace":         {workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{task(11 * time.Second)}}, 0},
		"placed":                                    {workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member2"}}, GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{task(time.Second)}}, 0},
		"no eviction: the placement was taken away": {workv1alpha2.ResourceBindingSpec{}, 0},
		"a task without a creation time yet":        {workv1alpha2.ResourceBindingSpec{GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1"}}}, 0},
	}
	for name, tc := range cases {
		if got := placementAnswerWait(&tc.spec, now); got != tc.want {
			t.Errorf("%s: wait %v, want %v", name, got, tc.want)
		}
	}
}

// An eviction empties spec.clusters until the scheduler places the
// replacement. Taking PlacementHealthy away in between is a status write of
// its own per failed-over binding; it waits for the scheduler's answer, and
// goes when the scheduler has found nothing within the grace.
func TestPlacementHealthyWaitsForTheSchedulersAnswer(t *testing.T) {
	e, clk, rb := healthyOnMember1(t)
	if c := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.PlacementHealthy); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("before the failover: PlacementHealthy = %+v", c)
	}

	evicted := e.binding(rb)
	evicted.Spec.Clusters = nil
	evicted.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", PurgeMode: policyv1alpha1.PurgeModeGracefully,
		CreationTimestamp: ptr.To(metav1.NewTime(clk.Now()))}}
	if err := e.client.Update(context.Background(), evicted); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	e.writes = nil
	res, err := e.status.Reconcile(context.Background(), reqFor(rb))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != core.EvictionAnswerWait-2*time.Second || len(e.writes) != 0 {
		t.Errorf("evicted, not placed yet: requeue after %v and writes %v, want %v and none", res.RequeueAfter, e.writes, core.EvictionAnswerWait-2*time.Second)
	}

	// Nothing fits: once the grace is over the condition goes.
	clk.SetTime(clk.Now().Add(core.EvictionAnswerWait))
	e.writes = nil
	res, err = e.status.Reconcile(context.Background(), reqFor(rb))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 0 || len(e.writes) == 0 {
		t.Errorf("after the grace: requeue after %v and writes %v, want the status written", res.RequeueAfter, e.writes)
	}
	if c := meta.FindStatusCondition(e.binding(rb).Status.Conditions, workv1alpha2.PlacementHealthy); c != nil {
		t.Errorf("nothing placed after the grace: PlacementHealthy = %+v, want none", c)
	}
}

// templateMemory keeps both facts of a binding in one entry and drops the
// entry once it holds neither.
func TestTemplateMemory(t *testing.T) {
	var m templateMemory
	a := types.NamespacedName{Namespace: "default", Name: "a"}
	if m.synced(a) {
		t.Fatal("synced before anything was recorded")
	}
	if _, ok := m.written(a); ok {
		t.Fatal("written before anything was recorded")
	}
	m.setSynced(a, true)
	m.wrote(a, "12")
	if rv, ok := m.written(a); !m.synced(a) || !ok || rv != "12" {
		t.Fatalf("synced %v, written %q %v; want true, \"12\" true", m.synced(a), rv, ok)
	}
	m.setSynced(a, false)
	if rv, ok := m.written(a); m.synced(a) || !ok || rv != "12" {
		t.Fatalf("after unsync: synced %v, written %q %v; want false, \"12\" true", m.synced(a), rv, ok)
	}
	m.forget(a)
	if _, ok := m.written(a); ok || len(m.m) != 0 {
		t.Fatalf("forget left %v", m.m)
	}
	m.setSynced(a, true)
	m.setSynced(a, false)
	if len(m.m) != 0 {
		t.Fatalf("an entry holding nothing was kept: %v", m.m)
	}
}

// A PlacementHealthy condition written before messages named replicas is
// the same placement's: rewritten, its transition time stays, so that a
// failover's replacementHealthyTime is not moved to the upgrade.
func TestOlderWording(t *testing.T) {
	two := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}}
	cases := map[string]struct {
		old  string
		want bool
	}{
		"the same clusters, without replicas":   {old: "Every cluster of the placement reports Healthy: member1, member2.", want: true},
		"another placement, without replicas":   {old: "Every cluster of the placement reports Healthy: member1.", want: false},
		"the same clusters, other replicas":     {old: "Every cluster of the placement reports Healthy: member1 (3 replicas), member2 (1 replica).", want: false},
		"not Healthy before, the same clusters": {old: "Not every cluster of the placement (member1, member2) reports Healthy; see status.aggregatedStatus.", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := olderWording(tc.old, workv1alpha2.PlacementHealthyMessage(two)); got != tc.want {
				t.Errorf("olderWording = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestTemplateWriteWaitsBehindABacklog: while at least as many bindings wait
// as the controller has workers, a pass writes the binding's status and
// puts the template's off to a low-priority pass; that pass writes it even
// if the backlog is still there, so a template is put off once at most.
// Without a backlog, one pass writes both.
func TestTemplateWriteWaitsBehindABacklog(t *testing.T) {
	deploy := makeDeployment("nginx", 2)
	rb := makeBinding("nginx").Cluster("member1", 2).Obj()
	w := applied(makeWork("member1", rb), true, 2, workv1alpha1.ResourceHealthy)
	templateKey := "status *unstructured.Unstructured " + client.ObjectKeyFromObject(deploy).String()
	bindingKey := fmt.Sprintf("%T %s", &workv1alpha2.ResourceBinding{}, client.ObjectKeyFromObject(rb))
	wrote := func(e *env, key string) bool {
		for _, s := range e.writes {
			if strings.HasSuffix(s, key) {
				return true
			}
		}
		return false
	}
	pass := func(e *env) ctrl.Result {
		t.Helper()
		e.writes = nil
		res, err := e.status.Reconcile(context.Background(), reqFor(rb))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("backlog", func(t *testing.T) {
		e := newEnv(t, deploy.DeepCopy(), rb.DeepCopy(), w.DeepCopy())
		backlog := 5
		e.status.MaxConcurrentReconciles = 5
		e.status.Backlog = func() int { return backlog }

		res := pass(e)
		if !wrote(e, bindingKey) || wrote(e, templateKey) {
			t.Fatalf("first pass wrote %v; want the binding's status and not the template's", e.writes)
		}
		if res.RequeueAfter <= 0 || res.Priority == nil || *res.Priority != handler.LowPriority {
			t.Fatalf("first pass asked for %+v; want a requeue at low priority", res)
		}
		res = pass(e)
		if !wrote(e, templateKey) || wrote(e, bindingKey) {
			t.Fatalf("second pass, backlog still %d, wrote %v; want the template's status alone", backlog, e.writes)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("second pass asked for a requeue: %+v", res)
		}
		var got appsv1.Deployment
		if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(deploy), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.ReadyReplicas != 2 {
			t.Errorf("template readyReplicas = %d, want 2", got.Status.ReadyReplicas)
		}

		// The next change is put off again, once.
		changed := e.work("member1", "Deployment", "default", "nginx")
		applied(changed, true, 1, workv1alpha1.ResourceUnhealthy)
		if err := e.client.Status().Update(context.Background(), changed); err != nil {
			t.Fatal(err)
		}
		if pass(e); !wrote(e, bindingKey) || wrote(e, templateKey) {
			t.Fatalf("after a change: wrote %v; want the binding's status alone", e.writes)
		}
		if pass(e); !wrote(e, templateKey) {
			t.Fatalf("the pass after the deferral wrote %v; want the template's status", e.writes)
		}
	})

	t.Run("no backlog", func(t *testing.T) {
		e := newEnv(t, deploy.DeepCopy(), rb.DeepCopy(), w.DeepCopy())
		e.status.MaxConcurrentReconciles = 5
		e.status.Backlog = func() int { return 4 }
		res := pass(e)
		if !wrote(e, bindingKey) || !wrote(e, templateKey) {
			t.Fatalf("wrote %v; want the binding's and the template's status in one pass", e.writes)
		}
		if res.RequeueAfter != 0 || res.Priority == nil || *res.Priority != 0 {
			t.Errorf("asked for %+v; want no requeue, normal priority", res)
		}
	})

	t.Run("held pass keeps normal priority", func(t *testing.T) {
		// A binding put off at low priority that is then held for its own
		// status asks to come back at normal priority.
		e := newEnv(t, deploy.DeepCopy(), rb.DeepCopy(), w.DeepCopy())
		e.status.Backlog = func() int { return 100 }
		e.status.Writes = coalesce.New(0, nil)
		if pass(e); wrote(e, templateKey) {
			t.Fatalf("wrote %v; want the template put off", e.writes)
		}
		changed := e.work("member1", "Deployment", "default", "nginx")
		changed.Status.ManifestStatuses[0].Status = &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2,"observedGeneration":9}`)}
		if err := e.client.Status().Update(context.Background(), changed); err != nil {
			t.Fatal(err)
		}
		res := pass(e)
		if res.RequeueAfter == 0 || res.Priority == nil || *res.Priority != 0 {
			t.Errorf("a pass held for its own status asked for %+v (writes %v); want a requeue at normal priority", res, e.writes)
		}
	})
}
