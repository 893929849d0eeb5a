package rebalancer

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// capped is a harness whose rebalancer names the given templates (each
// with a binding "<name>-deployment"), under a cap of max, plus other
// objects.
func capped(t *testing.T, max int, names []string, others ...client.Object) (*harness, *record.FakeRecorder) {
	t.Helper()
	rb := demo(nil)
	rb.Spec.Workloads = nil
	objs := []client.Object{rb}
	for _, n := range names {
		rb.Spec.Workloads = append(rb.Spec.Workloads, deploy(n))
		objs = append(objs, makeBinding(n+"-deployment", "Deployment", n, t0.Add(-time.Hour)))
	}
	h := newHarness(t, append(objs, others...)...)
	gate, err := fleetcap.NewGate("rebalances", max, 0, t0)
	if err != nil {
		t.Fatal(err)
	}
	gate.WithoutQueue()
	rec := record.NewFakeRecorder(100)
	h.r.Gate, h.r.Recorder = gate, rec
	return h, rec
}

func (h *harness) requested(t *testing.T, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		if b := h.binding(t, n+"-deployment"); b.Spec.RescheduleTriggeredAt != nil {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) update(t *testing.T, name string, mutate func(*workv1alpha2.ResourceBinding)) {
	t.Helper()
	b := h.binding(t, name)
	mutate(b)
	if err := h.c.Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func heldEvents(rec *record.FakeRecorder) []string { return eventsWith(rec, EventReasonHeld) }

// Under a cap of 2, a rebalancer of four workloads asks for two fresh
// schedules, says the third waits, and asks for it once a place frees:
// a fresh schedule that moved nothing frees its place when it is made, one
// that moved a workload when its Rebalance task closes.
func TestReconcileCapsRebalancesFleetWide(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	h, rec := capped(t, 2, all)

	res := h.reconcile(t)
	if got := h.requested(t, all...); strings.Join(got, ",") != "a,b" {
		t.Fatalf("requested %v, want a,b under a cap of 2", got)
	}
	if res.RequeueAfter != fleetcap.CapRetry {
		t.Errorf("requeue after %s, want %s while workloads wait", res.RequeueAfter, fleetcap.CapRetry)
	}
	want := "Normal RebalanceHeld 2 of 4 workloads wait for their turn (rebalances open: 2, at most 2; --rebalance-max-concurrent); each gets its fresh schedule as earlier rebalances finish."
	if got := heldEvents(rec); len(got) != 1 || got[0] != want {
		t.Errorf("Events %q, want one %q", got, want)
	}

	// Must not: the cache shows a and b moving now; a pass that frees
	// nothing asks for nothing more, and says nothing again.
	h.writes = map[string]int{}
	h.reconcile(t)
	if got := h.requested(t, all...); len(got) != 2 || h.writes["binding"] != 0 {
		t.Fatalf("requested %v with %d binding writes while both places are taken", got, h.writes["binding"])
	}
	if got := heldEvents(rec); len(got) != 0 {
		t.Errorf("Events %q on a later pass", got)
	}

	// a's schedule moved it: its Rebalance task keeps its place. b's
	// moved nothing: its place frees, c goes.
	h.scheduled(t, "a-deployment")
	h.update(t, "a-deployment", func(b *workv1alpha2.ResourceBinding) {
		b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member2", Reason: workv1alpha2.EvictionReasonRebalance}}
	})
	h.scheduled(t, "b-deployment")
	h.reconcile(t)
	if got := h.requested(t, all...); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("requested %v, want c asked for in b's place and d still waiting", got)
	}
	if ws := h.rebalancer(t).Status.ObservedWorkloads; ws[0].Result != appsv1alpha1.RebalanceSuccessful || ws[3].Result != "" {
		t.Errorf("results %+v: a's schedule was made, d waits without a result", ws)
	}

	// a's task closes: d goes.
	h.update(t, "a-deployment", func(b *workv1alpha2.ResourceBinding) { b.Spec.GracefulEvictionTasks = nil })
	h.reconcile(t)
	if got := h.requested(t, all...); len(got) != 4 {
		t.Fatalf("requested %v, want every workload once a's rebalance ended", got)
	}
	h.scheduled(t, "c-deployment")
	h.scheduled(t, "d-deployment")
	if res := h.reconcile(t); res.RequeueAfter != 0 || h.rebalancer(t).Status.FinishTime == nil {
		t.Errorf("after every schedule: %+v, status %+v", res, h.rebalancer(t).Status)
	}
}

// What counts against the cap is every rebalance in the fleet, whoever
// asked, and only rebalances.
func TestReconcileCapCountsTheFleetsRebalances(t *testing.T) {
	other := func(mutate func(*workv1alpha2.ResourceBinding)) *workv1alpha2.ResourceBinding {
		b := makeBinding("other-deployment", "Deployment", "other", t0.Add(-time.Hour))
		mutate(b)
		return b
	}
	later := mt(-60)
	cases := map[string]struct {
		other *workv1alpha2.ResourceBinding
		goes  bool
	}{
		"must not: another binding's Rebalance task takes the only place": {
			other: other(func(b *workv1alpha2.ResourceBinding) {
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonRebalance}}
			}),
		},
		"must not: another rebalancer's request not yet made takes it": {
			other: other(func(b *workv1alpha2.ResourceBinding) { b.Spec.RescheduleTriggeredAt = later }),
		},
		"a failover's task is not a rebalance": {
			other: other(func(b *workv1alpha2.ResourceBinding) {
				b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated}}
			}),
			goes: true,
		},
		"a failback's request counts under failback's own cap": {
			other: other(func(b *workv1alpha2.ResourceBinding) {
				b.Spec.RescheduleTriggeredAt = later
				b.Annotations = map[string]string{workv1alpha2.RescheduleReasonAnnotation: workv1alpha2.EvictionReasonFailback}
			}),
			goes: true,
		},
		"a request no scheduler takes moves nothing": {
			other: other(func(b *workv1alpha2.ResourceBinding) {
				b.Spec.RescheduleTriggeredAt = later
				b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
			}),
			goes: true,
		},
		"a request already made is over": {
			other: other(func(b *workv1alpha2.ResourceBinding) { b.Spec.RescheduleTriggeredAt = mt(-7200) }),
			goes:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, _ := capped(t, 1, []string{"a"}, tc.other)
			h.reconcile(t)
			if got := len(h.requested(t, "a")) == 1; got != tc.goes {
				t.Errorf("a's fresh schedule asked for: %t, want %t", got, tc.goes)
			}
		})
	}
}

// A workload whose binding is already being rebalanced (another
// rebalancer's request, or a Rebalance task still open) takes no second
// place: it is asked for even at the cap.
func TestReconcileCapAlreadyMovingTakesNoSecondPlace(t *testing.T) {
	h, _ := capped(t, 1, []string{"a"})
	h.update(t, "a-deployment", func(b *workv1alpha2.ResourceBinding) {
		b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonRebalance}}
	})
	h.reconcile(t)
	if got := h.requested(t, "a"); len(got) != 1 {
		t.Errorf("a, already moving, was held back by its own place")
	}
}

// Without a cap (--rebalance-max-concurrent=0), everything is asked for
// at once, as in Karmada.
func TestReconcileWithoutACapAsksForEverythingAtOnce(t *testing.T) {
	all := []string{"a", "b", "c"}
	h, rec := capped(t, 1, all)
	h.r.Gate = nil
	if res := h.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("requeue %+v", res)
	}
	if got := h.requested(t, all...); len(got) != 3 {
		t.Errorf("requested %v, want all", got)
	}
	if got := heldEvents(rec); len(got) != 0 {
		t.Errorf("Events %q", got)
	}
}

// A place freed wakes the rebalancers waiting for one; nothing else does.
func TestMovingEndedPassesAFreedPlace(t *testing.T) {
	r := &Reconciler{}
	still := makeBinding("a-deployment", "Deployment", "a", t0)
	still.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonRebalance}}
	done := still.DeepCopy()
	done.Spec.GracefulEvictionTasks = nil
	p := r.movingEnded()
	switch {
	case !p.Update(event.UpdateEvent{ObjectOld: still, ObjectNew: done}):
		t.Error("a Rebalance task closed: not passed")
	case p.Update(event.UpdateEvent{ObjectOld: still, ObjectNew: still.DeepCopy()}):
		t.Error("must not: a binding still moving passed")
	case p.Update(event.UpdateEvent{ObjectOld: done, ObjectNew: still}):
		t.Error("must not: a rebalance that starts passed")
	case !p.Delete(event.DeleteEvent{Object: still}):
		t.Error("a binding deleted while moving: not passed")
	case p.Delete(event.DeleteEvent{Object: done}):
		t.Error("must not: a binding deleted that was not moving passed")
	}
}

// A fresh schedule made before any pass saw it asked for (the scheduler
// was faster than the cache) frees its place as soon as its result is
// known, not after the gate stops counting it on its own.
func TestReconcileCapMadeBeforeSeenFreesItsPlace(t *testing.T) {
	all := []string{"a", "b", "c"}
	h, _ := capped(t, 2, all)
	h.reconcile(t)
	h.scheduled(t, "a-deployment") // nothing moved
	h.reconcile(t)
	if got := h.requested(t, all...); len(got) != 3 {
		t.Errorf("requested %v: a's place was not freed by its result", got)
	}
}

func rebalancerOf(name string, workloads ...string) *appsv1alpha1.WorkloadRebalancer {
	rb := &appsv1alpha1.WorkloadRebalancer{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, UID: types.UID(name)}}
	for _, w := range workloads {
		rb.Spec.Workloads = append(rb.Spec.Workloads, deploy(w))
	}
	return rb
}

func countMoving(t *testing.T, c client.Client) int {
	var list workv1alpha2.ResourceBindingList
	if err := c.List(context.Background(), &list, client.MatchingFields{IndexMoving: "true"}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// Must not: two rebalancers reconciled at once (--concurrent-syncs) move
// more than the cap. The second runs between the first one's writes,
// with a cache that already shows them; the first must still count them.
func TestReconcileCapHoldsWhileAnotherRebalancerAdmits(t *testing.T) {
	s, _ := lbscheme.New()
	objs := []client.Object{rebalancerOf("r1", "a", "b", "c", "d", "e"), rebalancerOf("r2", "g")}
	for _, n := range []string{"a", "b", "c", "d", "e", "g"} {
		objs = append(objs, makeBinding(n+"-deployment", "Deployment", n, t0.Add(-time.Hour)))
	}
	gate, _ := fleetcap.NewGate("rebalances", 2, 0, t0)
	var r *Reconciler
	patches := 0
	index := &Reconciler{}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexMoving, index.movingValues).
		WithIndex(&workv1alpha2.ClusterResourceBinding{}, IndexMoving, index.movingValues).
		WithStatusSubresource(&appsv1alpha1.WorkloadRebalancer{}, &workv1alpha2.ResourceBinding{}).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, p, opts...)
			patches++
			if patches == 2 { // r1 wrote a and b; r2 runs now, its cache shows them
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: "r2"}}); err != nil {
					panic(err)
				}
			}
			return err
		}}).Build()
	r = &Reconciler{Client: c, Templates: c, Recorder: record.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(t0), Gate: gate}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "r1"}}); err != nil {
		t.Fatal(err)
	}
	if n := countMoving(t, c); n > 2 {
		t.Errorf("%d bindings moving under a cap of 2", n)
	}
}

// Must not: a request written while no scheduler takes the binding would
// move, uncounted, once one does. Under a cap it is written only when
// admitted.
func TestReconcileCapWritesNoRequestNoSchedulerTakes(t *testing.T) {
	h, _ := capped(t, 1, []string{"a", "b", "c"})
	for _, n := range []string{"a", "b", "c"} {
		h.update(t, n+"-deployment", func(b *workv1alpha2.ResourceBinding) {
			b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
		})
	}
	rec := record.NewFakeRecorder(10)
	h.r.Recorder = rec
	if res := h.reconcile(t); res.RequeueAfter != fleetcap.CapRetry {
		t.Errorf("requeue after %s, want %s while workloads wait for a scheduler", res.RequeueAfter, fleetcap.CapRetry)
	}
	if got := h.requested(t, "a", "b", "c"); len(got) > 0 {
		t.Errorf("requests written while no scheduler takes them: %v", got)
	}
	if got := notTakenEvents(rec); len(got) != 1 || !strings.Contains(got[0], "3 workloads wait for a fresh schedule that no scheduler takes") {
		t.Errorf("Events %q, want one RescheduleNotTaken naming the three", got)
	}
	for _, n := range []string{"a", "b", "c"} {
		h.update(t, n+"-deployment", func(b *workv1alpha2.ResourceBinding) { b.Spec.Suspension = nil })
	}
	h.reconcile(t)
	if got := h.requested(t, "a", "b", "c"); len(got) != 1 {
		t.Errorf("requested %v once taken again, want one under a cap of 1", got)
	}
	if n := countMoving(t, h.c); n > 1 {
		t.Errorf("%d bindings moving under a cap of 1", n)
	}
}

// A conflict on one binding neither stops the others nor loses the
// RebalanceHeld Event: it is recorded on the first pass that holds a
// workload back, whichever pass that is.
func TestReconcileCapSaysHeldAfterAConflict(t *testing.T) {
	h, rec := capped(t, 1, []string{"a", "b", "c"})
	inner := h.c
	first := true
	h.c = interceptor.NewClient(inner.(client.WithWatch), interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if first {
			first = false
			return apierrors.NewConflict(schema.GroupResource{Resource: "resourcebindings"}, obj.GetName(), nil)
		}
		return c.Patch(ctx, obj, p, opts...)
	}})
	h.r.Client = h.c
	if res := h.reconcile(t); res.RequeueAfter != conflictRetry {
		t.Errorf("requeue after %s, want %s to decide a again soon", res.RequeueAfter, conflictRetry)
	}
	if got := h.requested(t, "a", "b", "c"); strings.Join(got, ",") != "b" {
		t.Fatalf("requested %v, want b in the place a's conflict left", got)
	}
	want := "Normal RebalanceHeld 1 of 3 workloads wait for their turn (rebalances open: 1, at most 1; --rebalance-max-concurrent); each gets its fresh schedule as earlier rebalances finish."
	if got := heldEvents(rec); len(got) != 1 || got[0] != want {
		t.Errorf("Events %q, want one %q", got, want)
	}
}

// Must not: a binding being deleted holds a place (graceful eviction no
// longer closes its tasks).
func TestMovingIgnoresABindingBeingDeleted(t *testing.T) {
	b := makeBinding("a-deployment", "Deployment", "a", t0)
	b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1", Reason: workv1alpha2.EvictionReasonRebalance}}
	r := &Reconciler{}
	if !r.moving(b) {
		t.Fatal("a binding with a Rebalance task does not count")
	}
	b.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	if r.moving(b) {
		t.Error("a binding being deleted counts against the cap")
	}
}
