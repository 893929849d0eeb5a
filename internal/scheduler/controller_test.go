package scheduler

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

var testNow = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// seedPlacement is the seeds' nginx policy: member1..3, exactly one cluster.
func seedPlacement() *policyv1alpha1.Placement {
	return st.MakePlacement().ClusterNames("member1", "member2", "member3").Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).Obj()
}

func appliedJSON(t *testing.T, p *policyv1alpha1.Placement) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func scheduledCondition() metav1.Condition {
	return metav1.Condition{
		Type: workv1alpha2.Scheduled, Status: metav1.ConditionTrue, Reason: workv1alpha2.BindingReasonSuccess,
		Message: scheduledMessage, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
	}
}

// harness is a reconciler on a fake client that counts writes.
type harness struct {
	r      *Reconciler
	c      client.Client
	events *record.FakeRecorder
	writes int
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{events: record.NewFakeRecorder(100)}
	h.c = fake.NewClientBuilder().WithScheme(s).
		WithObjects(objs...).
		WithStatusSubresource(&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}, &clusterv1alpha1.Cluster{}).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexScheduled, ScheduledIndexValue).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexScheduled, ScheduledIndexValue).
		WithInterceptorFuncs(clienttest.CountWrites(func(string, client.Object) { h.writes++ })).Build()
	h.r = &Reconciler{Client: h.c, Recorder: h.events, Clock: clocktesting.NewFakePassiveClock(testNow)}
	return h
}

func (h *harness) reconcileRB(t *testing.T, name string) (ctrl.Result, *workv1alpha2.ResourceBinding) {
	t.Helper()
	key := types.NamespacedName{Namespace: "default", Name: name}
	res, err := h.r.ReconcileResourceBinding(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var rb workv1alpha2.ResourceBinding
	if err := h.c.Get(context.Background(), key, &rb); err != nil {
		t.Fatal(err)
	}
	return res, &rb
}

func (h *harness) drainEvents() []string {
	return eventstest.Drain(h.events)
}

func threeMembers() []client.Object {
	return []client.Object{st.MakeCluster("member1").Obj(), st.MakeCluster("member2").Obj(), st.MakeCluster("member3").Obj()}
}

func TestReconcileSeedPolicySchedulesOneCluster(t *testing.T) {
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if a := got.Annotations[workv1alpha2.AppliedPlacementAnnotation]; a != appliedJSON(t, seedPlacement()) {
		t.Errorf("applied placement: got %q", a)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.Scheduled)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != workv1alpha2.BindingReasonSuccess {
		t.Errorf("Scheduled condition: %+v", cond)
	}
	if got.Status.SchedulerObservedGeneration != got.Generation {
		t.Errorf("observed generation %d, generation %d", got.Status.SchedulerObservedGeneration, got.Generation)
	}
	if got.Status.LastScheduledTime == nil || !got.Status.LastScheduledTime.Time.Equal(testNow) {
		t.Errorf("lastScheduledTime: %v", got.Status.LastScheduledTime)
	}
	wantEvent := "Normal ScheduleBindingSucceed Binding has been scheduled successfully. Result: {member1:2}"
	if events := h.drainEvents(); !reflect.DeepEqual(events, []string{wantEvent, wantEvent}) {
		t.Errorf("events (binding, template): %q", events)
	}
	if h.writes != 2 {
		t.Errorf("writes: got %d, want 2 (spec patch, status patch)", h.writes)
	}

	// Reconciling again finds nothing to do and writes nothing.
	h.writes = 0
	_, again := h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 {
		t.Errorf("second reconcile wrote %d times", h.writes)
	}
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("resourceVersion changed: %s -> %s", got.ResourceVersion, again.ResourceVersion)
	}
	if events := h.drainEvents(); len(events) != 0 {
		t.Errorf("second reconcile recorded events: %q", events)
	}
}

func TestReconcileNoFit(t *testing.T) {
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Obj()
	h := newHarness(t,
		st.MakeCluster("member1").Taint(clusterv1alpha1.TaintClusterUnschedulable, "", corev1.TaintEffectNoSchedule).Obj(),
		st.MakeCluster("member4").Obj(), st.MakeCluster("member5").Obj(), rb)

	res, got := h.reconcileRB(t, "nginx-deployment")

	wantMsg := "0/3 clusters are available: 1 cluster(s) had untolerated taint {cluster.karmada.io/unschedulable: }, 2 cluster(s) did not match the placement cluster affinity constraint."
	cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.Scheduled)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != workv1alpha2.BindingReasonNoClusterFit || cond.Message != wantMsg {
		t.Fatalf("Scheduled condition: %+v", cond)
	}
	if len(got.Spec.Clusters) != 0 {
		t.Errorf("spec.clusters: %v", got.Spec.Clusters)
	}
	if got.Status.SchedulerObservedGeneration != 0 || got.Status.LastScheduledTime != nil {
		t.Errorf("a failed schedule must not advance observedGeneration or lastScheduledTime: %+v", got.Status)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("a fit error waits for an event, got requeue %v", res.RequeueAfter)
	}
	wantEvent := "Warning ScheduleBindingFailed " + wantMsg
	if events := h.drainEvents(); !reflect.DeepEqual(events, []string{wantEvent, wantEvent}) {
		t.Errorf("events: %q", events)
	}

	// The same failure again: no write, no event.
	h.writes = 0
	h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 || len(h.drainEvents()) != 0 {
		t.Errorf("repeated failure wrote %d times", h.writes)
	}
}

func TestReconcileNothingToDo(t *testing.T) {
	static := st.MakePlacement().StaticWeights(map[string]int64{"member1": 1, "member2": 2}).Obj()
	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
	}{
		"scheduled and unchanged": {
			binding: st.MakeBinding("default", "nginx").Replicas(3).Placement(static).
				Cluster("member1", 1).Cluster("member2", 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, static)).
				SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
				Condition(scheduledCondition()).Obj(),
		},
		"Duplicated, re-run gives the same result": {
			binding: st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Cluster("member2", 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).
				SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
				Condition(scheduledCondition()).Obj(),
		},
		"attached dependency binding without placement": {
			binding: st.MakeBinding("default", "nginx").Obj(),
		},
		"another scheduler's binding": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(seedPlacement()).SchedulerName("other").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, append(threeMembers(), tc.binding)...)
			res, got := h.reconcileRB(t, "nginx-deployment")
			if h.writes != 0 {
				t.Errorf("wrote %d times", h.writes)
			}
			if got.ResourceVersion != tc.binding.ResourceVersion && tc.binding.ResourceVersion != "" {
				t.Errorf("resourceVersion changed")
			}
			if res.RequeueAfter != 0 {
				t.Errorf("requeue %v", res.RequeueAfter)
			}
			if events := h.drainEvents(); len(events) != 0 {
				t.Errorf("events: %q", events)
			}
		})
	}
}

// A later generation that schedules to the same clusters (an eviction
// task closed, say) records it in the status but tells the user nothing
// new: no Event.
func TestReconcileSameResultForANewGenerationRecordsNoEvent(t *testing.T) {
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Generation(3).Cluster("member1", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).
		SchedulerStatus(2, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
		Condition(scheduledCondition()).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if got.Status.SchedulerObservedGeneration != 3 {
		t.Errorf("schedulerObservedGeneration %d, want 3", got.Status.SchedulerObservedGeneration)
	}
	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if events := h.drainEvents(); len(events) != 0 {
		t.Errorf("events for an unchanged result: %q", events)
	}
}

func TestReconcileEvictionTaskClusterExcluded(t *testing.T) {
	// member2 was evicted: failover moved it from spec.clusters into a task.
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Generation(2).
		EvictionTask("member2").
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).
		SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
		Condition(scheduledCondition()).Obj()
	h := newHarness(t,
		st.MakeCluster("member1").Free(1, "").Obj(), st.MakeCluster("member2").Free(100, "").Obj(), st.MakeCluster("member3").Free(10, "").Obj(), rb)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if len(got.Spec.GracefulEvictionTasks) != 1 {
		t.Errorf("the scheduler must not touch eviction tasks: %v", got.Spec.GracefulEvictionTasks)
	}
	if got.Status.SchedulerObservedGeneration != 2 {
		t.Errorf("observed generation: %d", got.Status.SchedulerObservedGeneration)
	}
}

func TestReconcileTaintedClusterKeptWhenScheduled(t *testing.T) {
	// Replicas went from 2 to 3 (generation 2); member1 has since been
	// cordoned. Duplicated keeps member1, the taint only blocks newcomers.
	rb := st.MakeBinding("default", "nginx").Replicas(3).Placement(seedPlacement()).Generation(2).
		Cluster("member1", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).
		SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
		Condition(scheduledCondition()).Obj()
	h := newHarness(t,
		st.MakeCluster("member1").Taint(clusterv1alpha1.TaintClusterNotReady, "", corev1.TaintEffectNoSchedule).Ready(metav1.ConditionFalse).Obj(),
		st.MakeCluster("member2").Obj(), st.MakeCluster("member3").Obj(), rb)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
}

func TestReconcileOnlyObservedGeneration(t *testing.T) {
	// A spec change that does not call for scheduling (e.g. the template's
	// resourceVersion) only advances schedulerObservedGeneration.
	static := st.MakePlacement().StaticWeights(map[string]int64{"member1": 1}).Obj()
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(static).Generation(5).Cluster("member1", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, static)).
		SchedulerStatus(4, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
		Condition(scheduledCondition()).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if got.Status.SchedulerObservedGeneration != 5 || h.writes != 1 {
		t.Errorf("observed generation %d after %d writes", got.Status.SchedulerObservedGeneration, h.writes)
	}
	if !got.Status.LastScheduledTime.Time.Equal(testNow.Add(-time.Hour)) {
		t.Errorf("lastScheduledTime moved: %v", got.Status.LastScheduledTime)
	}
}

// A binding no policy claims any more (its policy was deleted, or no
// longer selects the template) stays where it is: its placement, which
// no longer fits (member1 left the affinity), moves nothing, and a
// binding claimed again is scheduled as before.
func TestReconcileReleasedBindingStaysWhereItIs(t *testing.T) {
	placement := st.MakePlacement().ClusterNames("member2").Obj()
	b := st.MakeBinding("default", "nginx").Replicas(2).Placement(placement).Generation(3).Cluster("member1", 2).
		SchedulerStatus(2, &metav1.Time{Time: testNow.Add(-time.Hour)}, "")
	h := newHarness(t, append(threeMembers(), b.Released().Obj())...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if h.writes != 0 || len(got.Spec.Clusters) != 1 || got.Spec.Clusters[0].Name != "member1" {
		t.Fatalf("a released binding was scheduled: %d writes, spec.clusters %v", h.writes, got.Spec.Clusters)
	}
	if Claimed(got.Labels) || !Claimed(st.MakeBinding("default", "nginx").Obj().Labels) {
		t.Error("Claimed does not follow the policy's permanent-id label")
	}
	for _, l := range []string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel, workv1alpha2.BindingManagedByLabel} {
		if !Claimed(map[string]string{l: "x"}) {
			t.Errorf("a binding labelled %s is not scheduled", l)
		}
	}
}

func TestReconcileUnschedulableRetries(t *testing.T) {
	rb := st.MakeBinding("default", "nginx").Replicas(50).Placement(st.MakePlacement().DynamicWeight().Obj()).Obj()
	h := newHarness(t, st.MakeCluster("member1").Free(2, "").Obj(), st.MakeCluster("member2").Free(3, "").Obj(), rb)

	res, got := h.reconcileRB(t, "nginx-deployment")

	cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.Scheduled)
	if cond == nil || cond.Reason != workv1alpha2.BindingReasonUnschedulable || cond.Message != "Clusters available replicas 5 are not enough to schedule." {
		t.Errorf("Scheduled condition: %+v", cond)
	}
	if res.RequeueAfter != defaultUnschedulableRetry {
		t.Errorf("requeue: %v", res.RequeueAfter)
	}
	if _, ok := got.Annotations[workv1alpha2.AppliedPlacementAnnotation]; ok || len(got.Spec.Clusters) != 0 {
		t.Errorf("an unschedulable binding keeps its spec: %v %v", got.Annotations, got.Spec.Clusters)
	}
}

func TestReconcileRescheduleTriggered(t *testing.T) {
	dynamic := st.MakePlacement().DynamicWeight().Obj()
	triggered := metav1.NewTime(testNow.Add(-time.Minute))
	rb := st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic).Generation(2).Cluster("member1", 4).
		RescheduleTriggeredAt(triggered).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, dynamic)).
		SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
		Condition(scheduledCondition()).Obj()
	h := newHarness(t, st.MakeCluster("member1").Free(0, "").Obj(), st.MakeCluster("member2").Free(4, "").Obj(), rb)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if !got.Status.LastScheduledTime.Time.Equal(testNow) {
		t.Errorf("lastScheduledTime: %v", got.Status.LastScheduledTime)
	}
	// Consumed: the next pass does nothing.
	h.writes = 0
	h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 {
		t.Errorf("reschedule request not consumed: %d writes", h.writes)
	}
}

func TestReconcileClusterAffinitiesRecordsTerm(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	rb := st.MakeBinding("default", "nginx").Replicas(1).Placement(groups).EvictionTask("member1").Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if got.Status.SchedulerObservedAffinityName != "backup" {
		t.Errorf("observed affinity: %q", got.Status.SchedulerObservedAffinityName)
	}
	if want := []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 1}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
}

func TestReconcileClusterResourceBinding(t *testing.T) {
	crb := &workv1alpha2.ClusterResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-namespace", Generation: 1,
			Labels: map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-id"}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:  workv1alpha2.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "team"},
			Placement: st.MakePlacement().Exclude("member3").Obj(),
		},
	}
	h := newHarness(t, append(threeMembers(), crb)...)

	if _, err := h.r.ReconcileClusterResourceBinding(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "team-namespace"}}); err != nil {
		t.Fatal(err)
	}
	var got workv1alpha2.ClusterResourceBinding
	if err := h.c.Get(context.Background(), types.NamespacedName{Name: "team-namespace"}, &got); err != nil {
		t.Fatal(err)
	}
	if want := []workv1alpha2.TargetCluster{{Name: "member1"}, {Name: "member2"}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, workv1alpha2.Scheduled) {
		t.Errorf("conditions: %+v", got.Status.Conditions)
	}
}

func TestClusterEventsEnqueue(t *testing.T) {
	scheduled := st.MakeBinding("default", "done").Replicas(1).Placement(seedPlacement()).Condition(scheduledCondition()).Obj()
	pending := st.MakeBinding("default", "pending").Replicas(1).Placement(seedPlacement()).Obj()
	attached := st.MakeBinding("default", "attached").Obj()
	h := newHarness(t, scheduled, pending, attached)

	all, err := h.r.listResourceBindings(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []types.NamespacedName{{Namespace: "default", Name: "done-deployment"}, {Namespace: "default", Name: "pending-deployment"}}; !reflect.DeepEqual(all, want) {
		t.Errorf("all: got %v, want %v", all, want)
	}
	onlyPending, err := h.r.listResourceBindings(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []types.NamespacedName{{Namespace: "default", Name: "pending-deployment"}}; !reflect.DeepEqual(onlyPending, want) {
		t.Errorf("pending: got %v, want %v", onlyPending, want)
	}
}

func TestClassifyClusterUpdate(t *testing.T) {
	base := func() *st.ClusterWrapper { return st.MakeCluster("member1").Label("env", "prod").Free(10, "") }
	cases := map[string]struct {
		cur  *clusterv1alpha1.Cluster
		want clusterChange
	}{
		"unchanged":          {cur: base().Obj(), want: changeNone},
		"label changed":      {cur: base().Label("env", "dev").Obj(), want: changeScheduling},
		"taint added":        {cur: base().Taint("k", "", corev1.TaintEffectNoSchedule).Obj(), want: changeScheduling},
		"region changed":     {cur: base().Region("eu").Obj(), want: changeScheduling},
		"not ready":          {cur: base().Ready(metav1.ConditionFalse).Obj(), want: changeScheduling},
		"deleting":           {cur: base().Deleting().Obj(), want: changeScheduling},
		"APIs changed":       {cur: base().APIs("apps/v1", "Deployment").Obj(), want: changeScheduling},
		"capacity changed":   {cur: base().Free(3, "").Obj(), want: changeCapacity},
		"kubernetes version": {cur: func() *clusterv1alpha1.Cluster { c := base().Obj(); c.Status.KubernetesVersion = "v1.35"; return c }(), want: changeNone},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := classifyClusterUpdate(base().Obj(), tc.cur); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// staleReader serves one object as the cache held it a moment ago.
type staleReader struct {
	client.Client
	stale client.Object
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == client.ObjectKeyFromObject(s.stale) {
		s.stale.(*workv1alpha2.ResourceBinding).DeepCopyInto(obj.(*workv1alpha2.ResourceBinding))
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestOwnStatusWriteNotCachedYet: the scheduler's spec write brings the
// binding back while the cache still lacks the status write that followed
// it. That reconcile neither schedules again nor writes (the write would
// lose its race with the first one); it looks again shortly.
func TestOwnStatusWriteNotCachedYet(t *testing.T) {
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)
	h.r.Echoes = coalesce.NewRecent(0, clocktesting.NewFakePassiveClock(testNow))
	_, scheduled := h.reconcileRB(t, "nginx-deployment")

	// The cache: the spec write, not the status write.
	stale := scheduled.DeepCopy()
	stale.Status = workv1alpha2.ResourceBindingStatus{}
	h.r.Client = staleReader{Client: h.c, stale: stale}
	h.writes = 0
	h.drainEvents()
	res, got := h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 {
		t.Errorf("a reconcile on the stale cache wrote %d times", h.writes)
	}
	if res.RequeueAfter != echoRecheck {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, echoRecheck)
	}
	if got.ResourceVersion != scheduled.ResourceVersion {
		t.Errorf("the binding changed: resourceVersion %s -> %s", scheduled.ResourceVersion, got.ResourceVersion)
	}
	if events := h.drainEvents(); len(events) != 0 {
		t.Errorf("events: %q", events)
	}

	// Without the memory of its own write the scheduler would write again.
	h.r.Echoes = nil
	h.writes = 0
	h.reconcileRB(t, "nginx-deployment")
	if h.writes == 0 {
		t.Error("the stale cache alone caused no write: the test does not show what Echoes saves")
	}
}

// A placement that fits nowhere any more never removes the clusters the
// workload runs on: the copy stays, Scheduled=False says why, a Warning
// Event tells the user. Only clusters that are gone are dropped, and a
// placement that fits elsewhere still moves the workload.
func TestReconcileNoFitKeepsCurrentPlacement(t *testing.T) {
	tier := st.MakePlacement().LabelSelector(map[string]string{"tier": "gold"}).Obj()
	onlyMember9 := st.MakePlacement().ClusterNames("member9").Obj()
	scheduledOn3 := func(p *policyv1alpha1.Placement, applied *policyv1alpha1.Placement) *workv1alpha2.ResourceBinding {
		return st.MakeBinding("default", "nginx").Replicas(2).Placement(p).Cluster("member3", 2).
			Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, applied)).
			SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").Condition(scheduledCondition()).Obj()
	}
	gold := func(name string) client.Object { return st.MakeCluster(name).Label("tier", "gold").Obj() }
	plain := func(name string) client.Object { return st.MakeCluster(name).Obj() }

	cases := map[string]struct {
		clusters     []client.Object
		binding      *workv1alpha2.ResourceBinding
		wantClusters []workv1alpha2.TargetCluster
		wantReason   string
		wantKeptMsg  bool
	}{
		"the label that selected the cluster is removed": {
			clusters:     []client.Object{plain("member1"), plain("member2"), plain("member3")},
			binding:      scheduledOn3(tier, tier),
			wantClusters: []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}},
			wantReason:   workv1alpha2.BindingReasonNoClusterFit,
			wantKeptMsg:  true,
		},
		"the policy names only a cluster that does not exist": {
			clusters:     []client.Object{plain("member1"), plain("member2"), plain("member3")},
			binding:      scheduledOn3(onlyMember9, st.MakePlacement().ClusterNames("member3").Obj()),
			wantClusters: []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}},
			wantReason:   workv1alpha2.BindingReasonNoClusterFit,
			wantKeptMsg:  true,
		},
		"a new placement that excludes every cluster": {
			clusters: []client.Object{plain("member1"),
				st.MakeCluster("member3").Label("tier", "gold").Taint("maintenance", "", corev1.TaintEffectNoSchedule).Obj()},
			binding:      scheduledOn3(st.MakePlacement().ClusterNames("member1").Exclude("member1").Obj(), tier),
			wantClusters: []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}},
			wantReason:   workv1alpha2.BindingReasonNoClusterFit,
			wantKeptMsg:  true,
		},
		"the scheduled cluster was unjoined: the user removed it": {
			clusters:   []client.Object{plain("member1"), plain("member2")},
			binding:    scheduledOn3(tier, tier),
			wantReason: workv1alpha2.BindingReasonNoClusterFit,
		},
		"a placement that fits elsewhere moves the workload": {
			clusters:     []client.Object{plain("member1"), gold("member2"), plain("member3")},
			binding:      scheduledOn3(tier, tier),
			wantClusters: []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}},
			wantReason:   workv1alpha2.BindingReasonSuccess,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, append(tc.clusters, tc.binding)...)
			_, got := h.reconcileRB(t, "nginx-deployment")

			if !reflect.DeepEqual(normalize(got.Spec.Clusters), normalize(tc.wantClusters)) {
				t.Errorf("spec.clusters = %v, want %v", got.Spec.Clusters, tc.wantClusters)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, workv1alpha2.Scheduled)
			if cond == nil || cond.Reason != tc.wantReason {
				t.Fatalf("Scheduled condition %+v, want reason %s", cond, tc.wantReason)
			}
			if tc.wantReason == workv1alpha2.BindingReasonSuccess {
				return
			}
			if cond.Status != metav1.ConditionFalse {
				t.Errorf("Scheduled status %s, want False", cond.Status)
			}
			const kept = "The current placement {member3:2} is kept."
			if got := strings.Contains(cond.Message, kept); got != tc.wantKeptMsg {
				t.Errorf("condition message %q: mentions the kept placement %v, want %v", cond.Message, got, tc.wantKeptMsg)
			}
			events := h.drainEvents()
			if len(events) == 0 || !strings.HasPrefix(events[0], "Warning "+EventReasonScheduleFailed) {
				t.Errorf("events %q, want a Warning %s", events, EventReasonScheduleFailed)
			}

			// Nothing changes while nothing fits: no write, no event.
			h.writes = 0
			_, again := h.reconcileRB(t, "nginx-deployment")
			if h.writes != 0 || len(h.drainEvents()) != 0 {
				t.Errorf("the same failure again wrote %d times", h.writes)
			}
			if !reflect.DeepEqual(normalize(again.Spec.Clusters), normalize(tc.wantClusters)) {
				t.Errorf("spec.clusters after a second pass = %v", again.Spec.Clusters)
			}
		})
	}
}

// A Cluster that is stored but cannot be decoded is missing from the cache
// without being gone: a binding placed on it is left alone, so that its
// copy there is not removed. A cluster that is really gone is dropped.
func TestReconcileLeavesBindingsOnUnreadableClusters(t *testing.T) {
	for name, tc := range map[string]struct {
		unreadable bool
		want       []workv1alpha2.TargetCluster
	}{
		"stored but unreadable: left alone": {unreadable: true, want: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member3", Replicas: 2}}},
		"gone: dropped":                     {want: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 2}}},
	} {
		t.Run(name, func(t *testing.T) {
			p := st.MakePlacement().Duplicated().Obj()
			rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(p).Cluster("member1", 2).Cluster("member3", 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, p)).
				SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").Condition(scheduledCondition()).Obj()
			h := newHarness(t, st.MakeCluster("member1").Obj(), st.MakeCluster("member2").Obj(), rb)
			h.r.Unreadable = func(name string) bool { return tc.unreadable && name == "member3" }
			_, got := h.reconcileRB(t, "nginx-deployment")
			if !reflect.DeepEqual(got.Spec.Clusters, tc.want) {
				t.Errorf("spec.clusters = %v, want %v", got.Spec.Clusters, tc.want)
			}
		})
	}
}

// A new placement after an eviction counts against the budget of the
// evicted cluster's failover, another against its policy's (a rollout);
// one without either (no task, no claim), and a success after a failure,
// are always announced.
func TestScheduleEventsOfAMassFailoverOrRolloutAreBudgeted(t *testing.T) {
	evicted := func(name string) *workv1alpha2.ResourceBinding {
		return st.MakeBinding("default", name).Replicas(2).Placement(seedPlacement()).Generation(2).
			EvictionTask("member2").
			Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).
			SchedulerStatus(1, &metav1.Time{Time: testNow.Add(-time.Hour)}, "").
			Condition(scheduledCondition()).Obj()
	}
	rolledOut := func(name string, conds ...metav1.Condition) *workv1alpha2.ResourceBinding {
		w := st.MakeBinding("default", name).Replicas(2).Placement(seedPlacement()).
			Annotation(policyv1alpha1.PropagationPolicyNamespaceAnnotation, "default").
			Annotation(policyv1alpha1.PropagationPolicyNameAnnotation, "web")
		for _, c := range conds {
			w = w.Condition(c)
		}
		rb := w.Obj()
		rb.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "pp-web"}
		return rb
	}
	// web3 could not be placed before: its success is never held back.
	failed := metav1.Condition{Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse, Reason: workv1alpha2.BindingReasonNoClusterFit,
		Message: "0/3 clusters are available", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Minute))}
	h := newHarness(t, st.MakeCluster("member1").Free(10, "").Obj(), st.MakeCluster("member2").Free(100, "").Obj(),
		st.MakeCluster("member3").Free(10, "").Obj(), evicted("a"), evicted("b"),
		st.MakeBinding("default", "fresh").Replicas(2).Placement(seedPlacement()).Obj(),
		rolledOut("web1"), rolledOut("web2"), rolledOut("web3", failed))
	budget, err := eventbudget.New(eventbudget.Options{Burst: 1, Clock: clocktesting.NewFakePassiveClock(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	h.r.Events = budget
	for _, name := range []string{"a-deployment", "b-deployment", "fresh-deployment", "web1-deployment", "web2-deployment", "web3-deployment"} {
		if _, got := h.reconcileRB(t, name); len(got.Spec.Clusters) == 0 {
			t.Fatalf("%s not placed", name)
		}
	}
	var succeeded int
	for _, ev := range h.drainEvents() {
		if strings.Contains(ev, EventReasonScheduleSucceed) {
			succeeded++
		}
	}
	// Binding and template of four workloads: the failover's first, the
	// unclaimed one, the rollout's first and the one placed after a
	// failure (the summaries below name the two held back).
	if succeeded != 8 {
		t.Errorf("%d ScheduleBindingSucceed Events, want 8", succeeded)
	}
	sums := budget.Due(true)
	var said []string
	for _, s := range sums {
		said = append(said, s.Subject.String()+": "+s.Message)
	}
	if len(sums) != 2 || !strings.HasPrefix(said[0], "PropagationPolicy default/web: 1 more") || !strings.Contains(said[0], "web2") ||
		!strings.HasPrefix(said[1], "cluster member2: 1 more") || !strings.Contains(said[1], "default/b") {
		t.Errorf("summaries = %q, want one for the policy's rollout naming web2, one for member2's failover naming b", said)
	}
}
