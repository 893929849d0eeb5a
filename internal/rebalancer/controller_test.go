package rebalancer

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

type harness struct {
	r      *Reconciler
	c      client.Client
	clock  *clocktesting.FakePassiveClock
	writes map[string]int
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{clock: clocktesting.NewFakePassiveClock(t0), writes: map[string]int{}}
	index := &Reconciler{} // the index's view: the default scheduler's
	h.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexMoving, index.movingValues).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexMoving, index.movingValues).
		WithStatusSubresource(&appsv1alpha1.WorkloadRebalancer{}, &workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}).
		WithInterceptorFuncs(clienttest.CountWrites(func(_ string, obj client.Object) {
			switch obj.(type) {
			case *appsv1alpha1.WorkloadRebalancer:
				h.writes["rebalancer"]++
			default:
				h.writes["binding"]++
			}
		})).Build()
	h.r = &Reconciler{Client: h.c, Templates: h.c, Recorder: record.NewFakeRecorder(100), Clock: h.clock}
	return h
}

func (h *harness) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "demo"}})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (h *harness) rebalancer(t *testing.T) *appsv1alpha1.WorkloadRebalancer {
	t.Helper()
	rb := &appsv1alpha1.WorkloadRebalancer{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Name: "demo"}, rb); err != nil {
		t.Fatal(err)
	}
	return rb
}

func (h *harness) binding(t *testing.T, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	b := &workv1alpha2.ResourceBinding{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// scheduled plays the scheduler: it consumes the binding's request.
func (h *harness) scheduled(t *testing.T, name string) {
	t.Helper()
	b := h.binding(t, name)
	b.Status.LastScheduledTime = ptr.To(metav1.NewTime(h.clock.Now()).Rfc3339Copy())
	if b.Spec.RescheduleTriggeredAt != nil && b.Spec.RescheduleTriggeredAt.After(h.clock.Now()) {
		b.Status.LastScheduledTime = b.Spec.RescheduleTriggeredAt.DeepCopy()
	}
	if err := h.c.Status().Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func makeBinding(name, kind, template string, lastScheduled time.Time) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Labels: map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-id"}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:  workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: "default", Name: template},
			Placement: &policyv1alpha1.Placement{},
			Clusters:  []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}},
		},
		Status: workv1alpha2.ResourceBindingStatus{LastScheduledTime: ptr.To(metav1.NewTime(lastScheduled))},
	}
}

// Karmada's example: the demo rebalancer names a Deployment that exists
// and one that does not.
func demo(ttl *int32) *appsv1alpha1.WorkloadRebalancer {
	return &appsv1alpha1.WorkloadRebalancer{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1, UID: "u1"},
		Spec: appsv1alpha1.WorkloadRebalancerSpec{
			Workloads:               []appsv1alpha1.ObjectReference{deploy("nginx"), deploy("missing")},
			TTLSecondsAfterFinished: ttl,
		},
	}
}

func TestReconcileWalkthrough(t *testing.T) {
	h := newHarness(t, demo(ptr.To[int32](60)), makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour)))

	// 1. The generation is recorded, the request written, the missing
	// workload fails.
	h.reconcile(t)
	rb := h.rebalancer(t)
	if rb.Status.ObservedGeneration != 1 || rb.Status.RescheduleTriggeredAt == nil || !rb.Status.RescheduleTriggeredAt.Time.Equal(t0) {
		t.Fatalf("status: %+v", rb.Status)
	}
	if got := rb.Status.ObservedWorkloads; len(got) != 2 || got[0].Result != "" ||
		got[1].Result != appsv1alpha1.RebalanceFailed || got[1].Reason != appsv1alpha1.RebalanceObjectNotFound {
		t.Fatalf("observed workloads: %+v", got)
	}
	if rb.Status.FinishTime != nil {
		t.Errorf("finished early: %v", rb.Status.FinishTime)
	}
	if b := h.binding(t, "nginx-deployment"); b.Spec.RescheduleTriggeredAt == nil || !b.Spec.RescheduleTriggeredAt.Time.Equal(t0) {
		t.Errorf("rescheduleTriggeredAt: %v", b.Spec.RescheduleTriggeredAt)
	}
	if h.writes["binding"] != 1 {
		t.Errorf("binding writes: %d", h.writes["binding"])
	}

	// 2. Before the scheduler: nothing to do, nothing written (also what
	// a restarted controller finds).
	h.writes = map[string]int{}
	h.clock.SetTime(t0.Add(2 * time.Second))
	h.r = &Reconciler{Client: h.c, Templates: h.c, Recorder: record.NewFakeRecorder(10), Clock: h.clock}
	if res := h.reconcile(t); res.RequeueAfter != 0 || len(h.writes) != 0 {
		t.Errorf("waiting for the scheduler: %+v, writes %v", res, h.writes)
	}

	// 3. The scheduler consumed it: Successful, finished, deleted 60s on.
	h.scheduled(t, "nginx-deployment")
	res := h.reconcile(t)
	rb = h.rebalancer(t)
	if rb.Status.ObservedWorkloads[0].Result != appsv1alpha1.RebalanceSuccessful || rb.Status.FinishTime == nil ||
		!rb.Status.FinishTime.Time.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("status: %+v", rb.Status)
	}
	if res.RequeueAfter != 60*time.Second {
		t.Errorf("requeue after %v, want 60s", res.RequeueAfter)
	}

	// 4. Must not delete before the TTL, and writes nothing meanwhile.
	h.writes = map[string]int{}
	h.clock.SetTime(t0.Add(61 * time.Second))
	if res := h.reconcile(t); res.RequeueAfter != time.Second || len(h.writes) != 0 {
		t.Errorf("before the TTL: %+v, writes %v", res, h.writes)
	}

	// 5. Deleted after it.
	h.clock.SetTime(t0.Add(62 * time.Second))
	h.reconcile(t)
	err := h.c.Get(context.Background(), types.NamespacedName{Name: "demo"}, &appsv1alpha1.WorkloadRebalancer{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("rebalancer not deleted after its TTL: %v", err)
	}
}

func TestReconcileMustNotDeleteWithoutTTL(t *testing.T) {
	h := newHarness(t, demo(nil), makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour)))
	h.reconcile(t)
	h.scheduled(t, "nginx-deployment")
	h.reconcile(t)
	h.clock.SetTime(t0.Add(1000 * time.Hour))
	if res := h.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("requeue: %+v", res)
	}
	if rb := h.rebalancer(t); rb.Status.FinishTime == nil {
		t.Errorf("not finished: %+v", rb.Status)
	}
}

func TestReconcileAddedWorkloadIsProcessed(t *testing.T) {
	h := newHarness(t, demo(nil), makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour)),
		makeBinding("web-deployment", "Deployment", "web", t0.Add(-time.Hour)))
	h.reconcile(t)
	h.scheduled(t, "nginx-deployment")
	h.reconcile(t)

	// The spec gains a workload: it is requested; the others keep their
	// results and their bindings are not requested again.
	h.clock.SetTime(t0.Add(time.Minute))
	rb := h.rebalancer(t)
	rb.Spec.Workloads = append(rb.Spec.Workloads, deploy("web"))
	rb.Generation = 2
	if err := h.c.Update(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	h.writes = map[string]int{}
	h.reconcile(t)
	rb = h.rebalancer(t)
	if rb.Status.ObservedGeneration != 2 || rb.Status.FinishTime != nil || len(rb.Status.ObservedWorkloads) != 3 ||
		rb.Status.ObservedWorkloads[0].Result != appsv1alpha1.RebalanceSuccessful || rb.Status.ObservedWorkloads[2].Result != "" {
		t.Fatalf("status: %+v", rb.Status)
	}
	if h.writes["binding"] != 1 {
		t.Errorf("binding writes: %d, want 1 (web only)", h.writes["binding"])
	}
	if b := h.binding(t, "nginx-deployment"); !b.Spec.RescheduleTriggeredAt.Time.Equal(t0) {
		t.Errorf("nginx requested again: %v", b.Spec.RescheduleTriggeredAt)
	}
	if b := h.binding(t, "web-deployment"); b.Spec.RescheduleTriggeredAt == nil || !b.Spec.RescheduleTriggeredAt.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("web: %v", b.Spec.RescheduleTriggeredAt)
	}
}

func TestReconcileBindingOfAnotherTemplateIsNotFound(t *testing.T) {
	// nginx-deployment binds a Deployment of another group.
	b := makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour))
	b.Spec.Resource.APIVersion = "example.com/v1"
	h := newHarness(t, demo(nil), b)
	h.reconcile(t)
	if got := h.rebalancer(t).Status.ObservedWorkloads[0]; got.Result != appsv1alpha1.RebalanceFailed {
		t.Errorf("got %+v", got)
	}
	if h.writes["binding"] != 0 {
		t.Errorf("another template's binding was written")
	}
}

func TestReconcileFailedOverFrom(t *testing.T) {
	moved := makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour))
	moved.Status.FailoverHistory = []workv1alpha2.FailoverHistoryItem{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated}}
	stayed := makeBinding("web-deployment", "Deployment", "web", t0.Add(-time.Hour))
	rb := &appsv1alpha1.WorkloadRebalancer{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1},
		Spec:       appsv1alpha1.WorkloadRebalancerSpec{FailedOverFrom: "member1"},
	}
	h := newHarness(t, rb, moved, stayed)
	h.reconcile(t)
	got := h.rebalancer(t).Status.ObservedWorkloads
	if len(got) != 1 || got[0].Workload != deploy("nginx") {
		t.Errorf("observed workloads: %+v", got)
	}
	if h.binding(t, "web-deployment").Spec.RescheduleTriggeredAt != nil {
		t.Errorf("a workload that never failed over was requested")
	}
}

func TestReconcileWorkloadSelector(t *testing.T) {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"tier": "web"}}}
	db := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Labels: map[string]string{"tier": "db"}}}
	rb := &appsv1alpha1.WorkloadRebalancer{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1},
		Spec: appsv1alpha1.WorkloadRebalancerSpec{
			Workloads: []appsv1alpha1.ObjectReference{deploy("nginx")},
			WorkloadSelector: &appsv1alpha1.WorkloadSelector{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default",
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
		},
	}
	h := newHarness(t, rb, web, db, makeBinding("web-deployment", "Deployment", "web", t0.Add(-time.Hour)))
	h.reconcile(t)
	got := h.rebalancer(t).Status.ObservedWorkloads
	if len(got) != 2 || got[0].Workload != deploy("nginx") || got[1].Workload != deploy("web") {
		t.Errorf("observed workloads: %+v", got)
	}
	if h.binding(t, "web-deployment").Spec.RescheduleTriggeredAt == nil {
		t.Errorf("the selected workload was not requested")
	}
}

func TestReconcileNamesAWorkloadNoSchedulerTakes(t *testing.T) {
	cases := map[string]struct {
		mutate func(*workv1alpha2.ResourceBinding)
		want   string // "": no RescheduleNotTaken Event
	}{
		"must not: the scheduler takes it, it only has not yet": {},
		"scheduling suspended": {
			mutate: func(b *workv1alpha2.ResourceBinding) {
				b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			},
			want: "Warning RescheduleNotTaken A workload waits for a fresh schedule that no scheduler takes; it gets its result once one does: apps/v1 Deployment default/nginx: its scheduling is suspended (spec.suspension.scheduling)",
		},
		"another scheduler's": {
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Spec.SchedulerName = "edge" },
			want:   `Warning RescheduleNotTaken A workload waits for a fresh schedule that no scheduler takes; it gets its result once one does: apps/v1 Deployment default/nginx: spec.schedulerName "edge" is not the scheduler "default-scheduler", which would take the request`,
		},
		"no policy claims it": {
			mutate: func(b *workv1alpha2.ResourceBinding) { b.Labels = nil },
			want:   "Warning RescheduleNotTaken A workload waits for a fresh schedule that no scheduler takes; it gets its result once one does: apps/v1 Deployment default/nginx: no policy claims it any more",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := makeBinding("nginx-deployment", "Deployment", "nginx", t0.Add(-time.Hour))
			if tc.mutate != nil {
				tc.mutate(b)
			}
			rb := demo(nil)
			rb.Spec.Workloads = rb.Spec.Workloads[:1]
			h := newHarness(t, rb, b)
			rec := record.NewFakeRecorder(10)
			h.r.Recorder = rec
			// The request is written, then the binding's change brings
			// the rebalancer back while the scheduler has not answered.
			h.reconcile(t)
			h.reconcile(t)
			got := notTakenEvents(rec)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("Events %q for a binding the scheduler takes", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("Events %q, want one %q", got, tc.want)
			}
			if b := h.binding(t, "nginx-deployment"); b.Spec.RescheduleTriggeredAt == nil {
				t.Errorf("the request was not written; a scheduler that takes the binding later would not see it")
			}
			status := h.rebalancer(t).Status
			if r := status.ObservedWorkloads[0].Result; r != "" || status.FinishTime != nil {
				t.Errorf("result %q, finished %v: the workload was not rebalanced, so it has no result", r, status.FinishTime)
			}
		})
	}
}

func TestNotTakenMessageNamesTheFirstFew(t *testing.T) {
	cases := map[string]struct {
		untaken []string
		want    string
	}{
		"one": {untaken: []string{"a: why"},
			want: "A workload waits for a fresh schedule that no scheduler takes; it gets its result once one does: a: why"},
		"three, all named": {untaken: []string{"a: x", "b: y", "c: z"},
			want: "3 workloads wait for a fresh schedule that no scheduler takes; each gets its result once one does: a: x; b: y; c: z"},
		"five, three named": {untaken: []string{"a: x", "b: y", "c: z", "d: w", "e: v"},
			want: "5 workloads wait for a fresh schedule that no scheduler takes; each gets its result once one does: a: x; b: y; c: z; and 2 more"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := notTakenMessage(tc.untaken); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestReconcileNamesEveryUntakenWorkloadInOneEvent(t *testing.T) {
	suspended := func(name, template string) *workv1alpha2.ResourceBinding {
		b := makeBinding(name, "Deployment", template, t0.Add(-time.Hour))
		b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
		return b
	}
	rb := demo(nil)
	rb.Spec.Workloads = []appsv1alpha1.ObjectReference{deploy("nginx"), deploy("web")}
	h := newHarness(t, rb, suspended("nginx-deployment", "nginx"), suspended("web-deployment", "web"))
	rec := record.NewFakeRecorder(10)
	h.r.Recorder = rec
	h.reconcile(t)
	h.reconcile(t)
	got := notTakenEvents(rec)
	if len(got) != 1 || !strings.Contains(got[0], "2 workloads wait") ||
		!strings.Contains(got[0], "default/nginx") || !strings.Contains(got[0], "default/web") {
		t.Errorf("Events %q, want one naming both workloads", got)
	}
}

// notTakenEvents drains rec and returns its RescheduleNotTaken Events.
func notTakenEvents(rec *record.FakeRecorder) []string { return eventsWith(rec, EventReasonNotTaken) }

// eventsWith drains rec and returns its Events with this reason.
func eventsWith(rec *record.FakeRecorder, reason string) []string {
	var out []string
	for _, e := range eventstest.Drain(rec) {
		if strings.Contains(e, " "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}
