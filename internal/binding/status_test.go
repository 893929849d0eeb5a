package binding

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
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
	if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "nginx"}, tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Status.ReadyReplicas != 3 {
		t.Errorf("template readyReplicas = %d, want 3", tmpl.Status.ReadyReplicas)
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
