package rebalancer

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
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

func heldEvents(rec *record.FakeRecorder) []string {
	var out []string
	for _, e := range eventstest.Drain(rec) {
		if strings.Contains(e, EventReasonHeld) {
			out = append(out, e)
		}
	}
	return out
}

// Under a cap of 2, a rebalancer of three workloads asks for two fresh
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
	want := "Normal RebalanceHeld 2 of 4 workloads wait for their turn: 2 rebalances are open (at most 2), --rebalance-max-concurrent; each gets its fresh schedule as earlier rebalances finish."
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
