package failback

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// env is a fake control plane for the failback controller.
type env struct {
	t        *testing.T
	client   client.Client
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	metrics  *Metrics
	writes   int
	r        *Reconciler
}

func newEnv(t *testing.T, maxConcurrent int, objs ...client.Object) *env {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: clocktesting.NewFakeClock(at(0)), recorder: record.NewFakeRecorder(100)}
	e.client = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexFailedOverFrom, failedOverFromValues).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexOpen, openValues).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexFailedOverFrom, failedOverFromValues).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexOpen, openValues).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				e.writes++
				return c.Patch(ctx, obj, patch, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				e.writes++
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	if e.metrics, err = NewMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	gate, err := fleetcap.NewGate("failbacks", maxConcurrent, 0, at(0))
	if err != nil {
		t.Fatal(err)
	}
	e.r = &Reconciler{Client: e.client, Recorder: e.recorder, Clock: e.clock, Gate: gate, Metrics: e.metrics}
	return e
}

func (e *env) reconcile(name string) ctrl.Result {
	e.t.Helper()
	res, err := e.r.reconcile(context.Background(), kinds[0], ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) rb(name string) *workv1alpha2.ResourceBinding {
	e.t.Helper()
	b := &workv1alpha2.ResourceBinding{}
	if err := e.client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, b); err != nil {
		e.t.Fatal(err)
	}
	return b
}

func members(member1ReadyAt int) []client.Object {
	return []client.Object{readySince("member1", member1ReadyAt), readySince("member2", -7200)}
}

func TestReconcileStartsFailback(t *testing.T) {
	b := makeBinding("a").obj()
	e := newEnv(t, 10, append(members(-600), b)...)

	if res := e.reconcile(b.Name); res.RequeueAfter != 0 {
		t.Errorf("requeue %s, want none", res.RequeueAfter)
	}
	got := e.rb(b.Name)
	if got.Spec.RescheduleTriggeredAt == nil || !got.Spec.RescheduleTriggeredAt.Time.Equal(at(0)) {
		t.Errorf("rescheduleTriggeredAt %v, want %s", got.Spec.RescheduleTriggeredAt, at(0))
	}
	if v := got.Annotations[workv1alpha2.RescheduleReasonAnnotation]; v != workv1alpha2.EvictionReasonFailback {
		t.Errorf("reason annotation %q", v)
	}
	if v := got.Annotations[FailbackAnnotation]; v != "member1,"+at(-600).Format(time.RFC3339) {
		t.Errorf("failback annotation %q", v)
	}
	if e.writes != 1 {
		t.Errorf("writes %d, want 1", e.writes)
	}
	if ev := eventstest.Drain(e.recorder); len(ev) != 1 || !strings.Contains(ev[0], EventReasonFailbackStarted) {
		t.Errorf("events %v", ev)
	}
	if n := counter(e.metrics.started); n != 1 {
		t.Errorf("started %g", n)
	}

	// The request is in flight: a second pass writes nothing.
	e.writes = 0
	e.reconcile(b.Name)
	if e.writes != 0 {
		t.Errorf("second pass wrote %d times", e.writes)
	}
}

func TestReconcileMustNotStart(t *testing.T) {
	cases := map[string]struct {
		binding     *workv1alpha2.ResourceBinding
		readyAt     int
		others      []client.Object
		max         int
		wantRequeue time.Duration
	}{
		"no failback configured": {binding: makeBinding("a").noFailback().obj(), readyAt: -600, max: 10},
		"its scheduling is suspended: no scheduler would take the request": {
			binding: func() *workv1alpha2.ResourceBinding {
				b := makeBinding("a").obj()
				b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
				return b
			}(), readyAt: -600, max: 10,
		},
		"another scheduler schedules it": {
			binding: func() *workv1alpha2.ResourceBinding {
				b := makeBinding("a").obj()
				b.Spec.SchedulerName = "other-scheduler"
				return b
			}(), readyAt: -600, max: 10,
		},
		"member1 not Ready for the whole window: look again when it ends": {
			binding: makeBinding("a").obj(), readyAt: -590, max: 10, wantRequeue: 10 * time.Second,
		},
		"the fleet-wide cap is reached": {
			binding: makeBinding("a").obj(), readyAt: -600, max: 1, wantRequeue: fleetcap.CapRetry,
			others: []client.Object{func() client.Object {
				o := makeBinding("b").obj()
				o.Annotations = map[string]string{FailbackAnnotation: "member1," + at(-600).Format(time.RFC3339)}
				return o
			}()},
		},
		"a cap of 0 starts none": {binding: makeBinding("a").obj(), readyAt: -600, max: 0, wantRequeue: fleetcap.CapRetry},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.max, append(append(members(tc.readyAt), tc.binding), tc.others...)...)
			res := e.reconcile(tc.binding.Name)
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			if e.writes != 0 {
				t.Errorf("%d writes, want none", e.writes)
			}
			if got := e.rb(tc.binding.Name); got.Spec.RescheduleTriggeredAt != nil {
				t.Error("a reschedule was requested")
			}
		})
	}
}

// follows builds a binding whose failback to member1 was asked for at
// second 0 and has reached the given state.
func following(mutate func(b *workv1alpha2.ResourceBinding)) *workv1alpha2.ResourceBinding {
	b := makeBinding("a").obj()
	req := metav1.NewTime(at(0))
	b.Spec.RescheduleTriggeredAt = &req
	b.Annotations = map[string]string{
		FailbackAnnotation:                      "member1," + at(-600).Format(time.RFC3339),
		workv1alpha2.RescheduleReasonAnnotation: workv1alpha2.EvictionReasonFailback,
	}
	mutate(b)
	return b
}

func TestReconcileFollowsFailback(t *testing.T) {
	failbackEntry := func(healthy bool) workv1alpha2.FailoverHistoryItem {
		h := workv1alpha2.FailoverHistoryItem{Time: metav1.NewTime(at(1)), Reason: workv1alpha2.EvictionReasonFailback,
			FromCluster: "member2", ClustersBefore: []string{"member2"}, ClustersAfter: []string{"member1"}}
		if healthy {
			h.ReplacementHealthyTime = &metav1.Time{Time: at(60)}
		}
		return h
	}
	scheduled := func(b *workv1alpha2.ResourceBinding) {
		last := metav1.NewTime(at(1))
		b.Status.LastScheduledTime = &last
	}
	failbackTask := workv1alpha2.GracefulEvictionTask{FromCluster: "member2", Reason: workv1alpha2.EvictionReasonFailback}
	cases := map[string]struct {
		binding    *workv1alpha2.ResourceBinding
		wantClosed bool
		wantEvent  string
		completed  float64
		abandoned  float64
		incomplete float64
	}{
		"must not close: the scheduler has not taken the request": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {}),
		},
		"must not close: the copy moved back is not Healthy yet": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{failbackTask}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, failbackEntry(false))
			}),
		},
		"must not close: Healthy, but the task is still open": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{failbackTask}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, failbackEntry(true))
			}),
		},
		"completed": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, failbackEntry(true))
			}),
			wantClosed: true, wantEvent: EventReasonFailbackCompleted, completed: 1,
		},
		"abandoned": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, failbackEntry(false), workv1alpha2.FailoverHistoryItem{
					Time: metav1.NewTime(at(601)), Reason: workv1alpha2.EvictionReasonFailbackAbandoned, FromCluster: "member1",
				})
			}),
			wantClosed: true, abandoned: 1,
		},
		"the schedule kept the placement": {
			binding:    following(scheduled),
			wantClosed: true,
		},
		"ended elsewhere: member1 failed before the scheduler took the request, which placed the workload on member3": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}}
				h := failbackEntry(true)
				h.ClustersAfter = []string{"member3"}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, h)
			}),
			wantClosed: true, wantEvent: EventReasonFailbackIncomplete, incomplete: 1,
		},
		"ended: member1 failed again before its copy was Healthy, and the copy kept on member2 is the workload again": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated}}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, failbackEntry(true), workv1alpha2.FailoverHistoryItem{
					Time: metav1.NewTime(at(10)), Reason: workv1alpha2.EvictionReasonTaintUntolerated, FromCluster: "member1",
					ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"},
				})
			}),
			wantClosed: true, wantEvent: EventReasonFailbackIncomplete, incomplete: 1,
		},
		"ended: the policy was deleted before the scheduler took the request, which none ever will": {
			binding:    following(func(b *workv1alpha2.ResourceBinding) { b.Labels = nil }),
			wantClosed: true, wantEvent: EventReasonFailbackIncomplete, incomplete: 1,
		},
		"ended: scheduling suspended before the scheduler took the request": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			}),
			wantClosed: true, wantEvent: EventReasonFailbackIncomplete, incomplete: 1,
		},
		"ended: the task closed before the placement moved back to was all Healthy": {
			binding: following(func(b *workv1alpha2.ResourceBinding) {
				scheduled(b)
				b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member3", Replicas: 1}}
				h := failbackEntry(false)
				h.ClustersAfter = []string{"member1", "member3"}
				b.Status.FailoverHistory = append(b.Status.FailoverHistory, h)
			}),
			wantClosed: true, wantEvent: EventReasonFailbackIncomplete, incomplete: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 10, append(members(-600), tc.binding)...)
			e.reconcile(tc.binding.Name)
			got := e.rb(tc.binding.Name)
			_, open := got.Annotations[FailbackAnnotation]
			_, reason := got.Annotations[workv1alpha2.RescheduleReasonAnnotation]
			if open == tc.wantClosed || reason == tc.wantClosed {
				t.Errorf("annotations %v; want closed %t", got.Annotations, tc.wantClosed)
			}
			if !tc.wantClosed && e.writes != 0 {
				t.Errorf("an open failback wrote %d times", e.writes)
			}
			if tc.wantClosed && got.Spec.RescheduleTriggeredAt != nil && (got.Status.LastScheduledTime == nil || got.Status.LastScheduledTime.Before(got.Spec.RescheduleTriggeredAt)) {
				t.Errorf("closed with its request still pending (rescheduleTriggeredAt %v): a scheduler taking it later would move the workload", got.Spec.RescheduleTriggeredAt)
			}
			ev := eventstest.Drain(e.recorder)
			if tc.wantEvent != "" && (len(ev) != 1 || !strings.Contains(ev[0], tc.wantEvent)) {
				t.Errorf("events %v, want %s", ev, tc.wantEvent)
			}
			if tc.wantEvent == "" && len(ev) != 0 {
				t.Errorf("events %v, want none", ev)
			}
			if n := counter(e.metrics.completed); n != tc.completed {
				t.Errorf("completed %g, want %g", n, tc.completed)
			}
			if n := counter(e.metrics.abandoned); n != tc.abandoned {
				t.Errorf("abandoned %g, want %g", n, tc.abandoned)
			}
			if n := counter(e.metrics.incomplete); n != tc.incomplete {
				t.Errorf("incomplete %g, want %g", n, tc.incomplete)
			}
			if tc.completed > 0 && observations(e.metrics.duration) != 1 {
				t.Error("no duration observed")
			}
		})
	}
}

// A failback that ended frees its place under the cap at once, also when
// it ended before any other decision saw it open: with a cap of one, the
// next binding starts as soon as the first is closed.
func TestEndedFailbackFreesItsPlace(t *testing.T) {
	a, b := makeBinding("a").obj(), makeBinding("b").obj()
	e := newEnv(t, 1, append(members(-600), a, b)...)
	e.reconcile(a.Name)
	if _, open := e.rb(a.Name).Annotations[FailbackAnnotation]; !open {
		t.Fatal("the first failback did not start")
	}

	// The scheduler moved it back and the copy there is Healthy.
	completeFailback(t, e, a.Name)
	e.reconcile(a.Name)
	if _, open := e.rb(a.Name).Annotations[FailbackAnnotation]; open {
		t.Fatal("the completed failback was not closed")
	}

	if res := e.reconcile(b.Name); res.RequeueAfter != 0 {
		t.Errorf("the second failback was held back for %s after the first ended", res.RequeueAfter)
	}
	if _, open := e.rb(b.Name).Annotations[FailbackAnnotation]; !open {
		t.Error("the second failback did not start")
	}
}

// A failback whose schedule moved the workload elsewhere (member1 failed
// again before the scheduler took the request) is over once its task
// closed: it must not stay open and hold its place under the cap for
// good, which with a cap of one would stop every other failback.
func TestFailbackThatEndedElsewhereFreesItsPlace(t *testing.T) {
	b := following(func(b *workv1alpha2.ResourceBinding) {
		last := metav1.NewTime(at(1))
		b.Status.LastScheduledTime = &last
		b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}}
		b.Status.FailoverHistory = append(b.Status.FailoverHistory, workv1alpha2.FailoverHistoryItem{
			Time: metav1.NewTime(at(1)), Reason: workv1alpha2.EvictionReasonFailback, FromCluster: "member2",
			ClustersBefore: []string{"member2"}, ClustersAfter: []string{"member3"},
			ReplacementHealthyTime: &metav1.Time{Time: at(30)},
		})
	})
	other := makeBinding("other").obj()
	e := newEnv(t, 1, append(members(-600), b, other)...)
	e.clock.SetTime(at(3600))
	e.reconcile(b.Name)
	if _, open := e.rb(b.Name).Annotations[FailbackAnnotation]; open {
		t.Fatal("the failback is still open after its schedule moved the workload elsewhere and its task closed")
	}
	if res := e.reconcile(other.Name); res.RequeueAfter != 0 {
		t.Errorf("another binding is held back for %s", res.RequeueAfter)
	}
	if _, open := e.rb(other.Name).Annotations[FailbackAnnotation]; !open {
		t.Error("another binding's failback did not start")
	}
}

// A binding held back by the cap is woken as soon as a failback ends,
// instead of waiting for its retry.
func TestHeldBackFailbackIsWokenWhenAPlaceFrees(t *testing.T) {
	a, b := makeBinding("a").obj(), makeBinding("b").obj()
	e := newEnv(t, 1, append(members(-600), a, b)...)
	ch := make(chan event.GenericEvent, 4)
	e.r.wake = map[string]chan event.GenericEvent{"rb": ch}
	e.reconcile(a.Name)
	if res := e.reconcile(b.Name); res.RequeueAfter != fleetcap.CapRetry {
		t.Fatalf("the second failback: requeue %s, want held back for %s", res.RequeueAfter, fleetcap.CapRetry)
	}
	if len(ch) != 0 {
		t.Fatal("woken before any place freed")
	}
	completeFailback(t, e, a.Name)
	e.reconcile(a.Name)
	select {
	case ev := <-ch:
		if ev.Object.GetName() != b.Name || ev.Object.GetNamespace() != b.Namespace {
			t.Errorf("woke %s/%s, want %s/%s", ev.Object.GetNamespace(), ev.Object.GetName(), b.Namespace, b.Name)
		}
	default:
		t.Fatal("the held-back binding was not woken when the failback ended")
	}
}

// completeFailback makes the failback of binding name look done: the
// scheduler moved it back and the copy there is Healthy.
func completeFailback(t *testing.T, e *env, name string) {
	t.Helper()
	done := e.rb(name)
	last := metav1.NewTime(at(1))
	done.Status.LastScheduledTime = &last
	done.Status.FailoverHistory = append(done.Status.FailoverHistory, workv1alpha2.FailoverHistoryItem{
		Time: metav1.NewTime(at(1)), Reason: workv1alpha2.EvictionReasonFailback, FromCluster: "member2",
		ClustersBefore: []string{"member2"}, ClustersAfter: []string{"member1"}, ReplacementHealthyTime: &metav1.Time{Time: at(2)},
	})
	if err := e.client.Status().Update(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	done = e.rb(name)
	done.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
	if err := e.client.Update(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	e.clock.SetTime(at(3))
}

func TestRequestTimeIsAfterTheLastSchedule(t *testing.T) {
	now := at(0).Add(300 * time.Millisecond)
	last := metav1.NewTime(at(0))
	if got := requestTime(now, &workv1alpha2.ResourceBindingStatus{LastScheduledTime: &last}); !got.Time.Equal(at(1)) {
		t.Errorf("got %s, want %s", got, at(1))
	}
	if got := requestTime(at(5), &workv1alpha2.ResourceBindingStatus{LastScheduledTime: &last}); !got.Time.Equal(at(5)) {
		t.Errorf("got %s, want %s", got, at(5))
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := NewOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, o := range []Options{{MaxConcurrent: -1, Rate: 1}, {MaxConcurrent: 1, Rate: -0.5}, {MaxConcurrent: 1, Rate: math.NaN()}, {MaxConcurrent: 1, Rate: math.Inf(1)}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// The wiring the controller manager does, without starting anything.
func TestSetupWithManager(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	mapper := func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ResourceBinding"), meta.RESTScopeNamespace)
		m.Add(workv1alpha2.SchemeGroupVersion.WithKind("ClusterResourceBinding"), meta.RESTScopeRoot)
		m.Add(clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster"), meta.RESTScopeRoot)
		return m, nil
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{Scheme: s, MapperProvider: mapper, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	gate, _ := fleetcap.NewGate("failbacks", 10, 1, at(0))
	if err := (&Reconciler{Client: mgr.GetClient(), Recorder: record.NewFakeRecorder(1), Clock: clocktesting.NewFakeClock(at(0)), Gate: gate}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
}

func TestRelevantIsCheap(t *testing.T) {
	if relevant(makeBinding("a").noFailback().obj()) {
		t.Error("a binding without failback is relevant")
	}
	if !relevant(makeBinding("a").obj()) {
		t.Error("a binding with failback is not relevant")
	}
	open := makeBinding("a").noFailback().obj()
	open.Annotations = map[string]string{FailbackAnnotation: "x"}
	if !relevant(open) {
		t.Error("a binding with an open failback is not relevant")
	}
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func observations(h prometheus.Histogram) uint64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		panic(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// ClusterResourceBindings (ClusterPropagationPolicies) move back the same
// way.
func TestReconcileStartsFailbackOfClusterResourceBinding(t *testing.T) {
	rb := makeBinding("a").obj()
	crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "a-deployment", Generation: rb.Generation,
		Labels: map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cpp-id"}}, Spec: rb.Spec, Status: rb.Status}
	e := newEnv(t, 10, append(members(-600), crb)...)
	if _, err := e.r.reconcile(context.Background(), kinds[1], ctrl.Request{NamespacedName: types.NamespacedName{Name: crb.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &workv1alpha2.ClusterResourceBinding{}
	if err := e.client.Get(context.Background(), types.NamespacedName{Name: crb.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.RescheduleTriggeredAt == nil || got.Annotations[FailbackAnnotation] == "" {
		t.Errorf("no failback asked for: %+v %v", got.Spec.RescheduleTriggeredAt, got.Annotations)
	}
	open, err := e.r.openFailbacks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !open["crb//a-deployment"] || len(open) != 1 {
		t.Errorf("open failbacks %v, want the ClusterResourceBinding", open)
	}
}
