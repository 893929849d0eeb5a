package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestWaveHold(t *testing.T) {
	const maxHold = 30 * time.Second
	type step struct {
		at       int    // seconds
		observe  string // "key=true|false" before the Hold
		forget   string
		release  string
		hold     string
		wantHeld bool
		wantNext time.Duration
	}
	for name, steps := range map[string][]step{
		"nothing else in flight": {
			{at: 0, observe: "a=true", hold: "a"},
		},
		"held while another is in flight, looked at again every few seconds": {
			{at: 0, observe: "b=true", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 5, hold: "a", wantHeld: true, wantNext: waveRetry},
		},
		"released when the other is no longer in flight": {
			{at: 0, observe: "b=true", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 3, observe: "b=false", hold: "a"},
		},
		"released when the other is gone": {
			{at: 0, observe: "b=true", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 3, forget: "b", hold: "a"},
		},
		"held at most maxHold": {
			{at: 0, observe: "b=true", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 28, observe: "c=true", hold: "a", wantHeld: true, wantNext: 2 * time.Second},
			{at: 30, hold: "a"},
		},
		"a failover in flight for maxHold holds nobody back": {
			{at: 0, observe: "b=true"},
			{at: 29, hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 30, hold: "a"},
		},
		"its own failover does not hold a binding": {
			{at: 0, observe: "a=true", hold: "a"},
		},
		"its own wait for the scheduler does not hold a binding": {
			{at: 0, observe: "a=unscheduled", hold: "a"},
		},
		"one failover the scheduler never answers adds next to nothing": {
			{at: 0, observe: "b=unscheduled", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 30, hold: "a", wantHeld: true, wantNext: waveHoldPerUnscheduled},
			{at: 31, hold: "a"},
		},
		"after a release a later clean-up is held afresh": {
			{at: 0, observe: "b=true", hold: "a", wantHeld: true, wantNext: waveRetry},
			{at: 30, observe: "c=true", hold: "a"},
			{at: 31, release: "a", hold: "a", wantHeld: true, wantNext: waveRetry},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := NewWave(maxHold)
			for i, s := range steps {
				now := at(s.at)
				if s.observe != "" {
					key, val, _ := strings.Cut(s.observe, "=")
					w.Observe(key, val != "false", val == "unscheduled", now)
				}
				if s.forget != "" {
					w.Forget(s.forget)
				}
				if s.release != "" {
					w.Release(s.release)
				}
				if s.hold == "" {
					continue
				}
				next, held := w.Hold(s.hold, now)
				if held != s.wantHeld || next != s.wantNext {
					t.Errorf("step %d (t=%ds): Hold(%s) = %s, %t; want %s, %t", i, s.at, s.hold, next, held, s.wantNext, s.wantHeld)
				}
			}
		})
	}
}

// While many failovers wait for the scheduler the wave is still being
// placed: holds last longer, in proportion, up to waveHoldCap × maxHold.
func TestWaveHoldWhileTheWaveIsPlaced(t *testing.T) {
	const maxHold = 30 * time.Second
	observe := func(w *Wave, n int, inFlight, unscheduled bool, now time.Time) {
		for i := 0; i < n; i++ {
			w.Observe(fmt.Sprintf("u%d", i), inFlight, unscheduled, now)
		}
	}
	hold := func(t *testing.T, w *Wave, s int, wantHeld bool) {
		t.Helper()
		if _, held := w.Hold("a", at(s)); held != wantHeld {
			t.Errorf("t=%ds: held %t, want %t", s, held, wantHeld)
		}
	}
	t.Run("200 waiting lengthen the hold by 20 s", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 200, true, true, at(0))
		hold(t, w, 0, true)
		hold(t, w, 49, true)
		hold(t, w, 50, false)
	})
	t.Run("at most ten times maxHold", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 10000, true, true, at(0))
		hold(t, w, 0, true)
		hold(t, w, 299, true)
		hold(t, w, 300, false)
	})
	t.Run("placed, they lengthen it no more", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 200, true, true, at(0))
		hold(t, w, 0, true)
		observe(w, 200, true, false, at(1))
		hold(t, w, 30, false)
	})
	t.Run("forgotten, they lengthen it no more", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 200, true, true, at(0))
		hold(t, w, 0, true)
		for i := 1; i < 200; i++ {
			w.Forget(fmt.Sprintf("u%d", i))
		}
		hold(t, w, 31, false)
	})
	t.Run("no longer in flight, they hold nothing", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 200, true, true, at(0))
		observe(w, 200, false, false, at(1))
		hold(t, w, 2, false)
	})
	t.Run("thousands held are looked at less often", func(t *testing.T) {
		w := NewWave(maxHold)
		observe(w, 5000, true, true, at(0))
		var next time.Duration
		for i := 0; i < 2000; i++ {
			next, _ = w.Hold(fmt.Sprintf("h%d", i), at(0))
		}
		if want := 2000 * waveRetryPerHeld; next != want {
			t.Errorf("the 2,000th held binding is looked at again after %s, want %s", next, want)
		}
	})
}

func TestWaveOff(t *testing.T) {
	for _, hold := range []time.Duration{0, -time.Second} {
		w := NewWave(hold)
		if w != nil {
			t.Fatalf("NewWave(%s) = %+v, want nil (holds nothing)", hold, w)
		}
		w.Observe("b", true, false, at(0))
		if _, held := w.Hold("a", at(1)); held {
			t.Errorf("a nil Wave held a clean-up")
		}
		w.Release("a")
		w.Forget("a")
	}
}

func TestInFlight(t *testing.T) {
	gracefully := makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")
	for name, tc := range map[string]struct {
		b    *workv1alpha2.ResourceBinding
		want bool
	}{
		"no task": {
			b: makeBinding("nginx").clusters("member1").obj(),
		},
		"evicted, not scheduled yet": {
			b:    makeBinding("nginx").unscheduled().task(gracefully).obj(),
			want: true,
		},
		"placed, replacement not Healthy yet": {
			b:    makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(gracefully).obj(),
			want: true,
		},
		"placed, replacement not reported yet": {
			b:    makeBinding("nginx").clusters("member1").task(gracefully).obj(),
			want: true,
		},
		"replacement Healthy": {
			b: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).task(gracefully).obj(),
		},
		"Never, replacement Healthy": {
			b: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
				task(makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")).obj(),
		},
		"no cluster can take it": {
			b: makeBinding("nginx").task(gracefully).obj(),
		},
		"the scheduler found no cluster for this generation (it leaves the observed generation behind)": {
			b: makeBinding("nginx").unscheduled().noClusterFit("0/2 clusters are available").task(gracefully).obj(),
		},
		"no cluster has room for this generation": {
			b: makeBinding("nginx").unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonUnschedulable, 0).task(gracefully).obj(),
		},
		"the scheduler found no cluster for an earlier generation: it has yet to answer this one": {
			b:    makeBinding("nginx").unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonNoClusterFit, -1).task(gracefully).obj(),
			want: true,
		},
		"a scheduler error is no answer": {
			b:    makeBinding("nginx").unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonSchedulerError, 0).task(gracefully).obj(),
			want: true,
		},
		"a failback, replacement not Healthy yet: a move by choice, no failover": {
			b: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				task(withReason(gracefully, workv1alpha2.EvictionReasonFailback)).obj(),
		},
		"a rebalance, not scheduled yet: no failover": {
			b: makeBinding("nginx").unscheduled().task(withReason(gracefully, workv1alpha2.EvictionReasonRebalance)).obj(),
		},
		"a failback beside a failover still waiting: in flight": {
			b: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				task(withReason(makeTask("member3", policyv1alpha1.PurgeModeGracefully, 0, "member3"), workv1alpha2.EvictionReasonFailback)).
				task(gracefully).obj(),
			want: true,
		},
		"Directly only: waits for the old copy, not for capacity": {
			b: makeBinding("nginx").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")).obj(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := observed{generation: tc.b.Generation, spec: &tc.b.Spec, status: &tc.b.Status}
			if got := inFlight(o); got != tc.want {
				t.Errorf("inFlight = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestHoldable(t *testing.T) {
	gracefully := makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")
	noTarget := &metav1.Condition{Type: ConditionFailoverTargetAvailable, Status: metav1.ConditionFalse, Reason: ReasonNoFailoverTarget}
	placed := &metav1.Condition{Type: ConditionFailoverTargetAvailable, Status: metav1.ConditionTrue, Reason: ReasonFailoverTargetPlaced}
	for name, tc := range map[string]struct {
		plan        taskPlan
		cond        *metav1.Condition
		wasNoTarget bool
		want        bool
	}{
		"history and the placed condition": {cond: placed, want: true},
		"a Gracefully task closed (the old copy goes later)": {
			plan: taskPlan{changed: true, removed: []removedTask{{task: gracefully}}}, want: true,
		},
		"a task stamped: its grace period starts": {
			plan: taskPlan{changed: true, stamped: true},
		},
		"a Directly task closed: the new copy waits for it": {
			plan: taskPlan{changed: true, removed: []removedTask{{task: makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0)}}},
		},
		"no failover target, said for the first time": {cond: noTarget},
		"no failover target, said before":             {cond: noTarget, wasNoTarget: true, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := holdable(tc.plan, tc.cond, tc.wasNoTarget); got != tc.want {
				t.Errorf("holdable = %t, want %t", got, tc.want)
			}
		})
	}
}

// A mass failover: the clean-up of a binding whose replacement is Healthy
// waits while another binding's replacement is still on its way, and then
// records when the replacement became Healthy (the binding's
// PlacementHealthy condition), not when the wait ended, even after a
// restart of the controller in between.
func TestGracefulEvictionHoldsCleanUpWhileOthersInFlight(t *testing.T) {
	task := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	done := makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
		health("member2", workv1alpha2.ResourceUnhealthy).placementHealthySince(97).task(task).obj()
	waiting := makeBinding("web").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
		health("member2", workv1alpha2.ResourceUnhealthy).task(task).obj()
	e := newEnv(t, nil, done, waiting)
	r := e.gracefulEviction()
	r.Wave = NewWave(time.Minute)
	ctx := context.Background()

	e.clock.SetTime(at(100))
	if _, err := r.reconcile(ctx, resourceBindingKind, reqFor("web-deployment")); err != nil {
		t.Fatal(err)
	}
	rv := e.rb(nginx).ResourceVersion
	res, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx))
	if err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if b.ResourceVersion != rv || len(b.Spec.GracefulEvictionTasks) != 1 || len(b.Status.FailoverHistory) != 0 {
		t.Fatalf("clean-up written while web's failover is in flight: tasks %+v, history %+v", b.Spec.GracefulEvictionTasks, b.Status.FailoverHistory)
	}
	if res.RequeueAfter != waveRetry {
		t.Errorf("requeueAfter = %s, want %s", res.RequeueAfter, waveRetry)
	}
	// The binding in flight records its own eviction at once: nothing
	// else is in flight from its point of view.
	if w := e.rb("web-deployment"); len(w.Status.FailoverHistory) != 1 || len(w.Spec.GracefulEvictionTasks) != 1 {
		t.Errorf("web: history %+v, tasks %+v; want the eviction recorded and the task kept", w.Status.FailoverHistory, w.Spec.GracefulEvictionTasks)
	}

	// The controller restarts; web's replacement turns Healthy: its own
	// clean-up goes through, and so does nginx's, stamped with when
	// nginx's replacement became Healthy.
	r = e.gracefulEviction()
	r.Wave = NewWave(time.Minute)
	w := e.rb("web-deployment")
	w.Status.AggregatedStatus[0].Health = workv1alpha2.ResourceHealthy
	reportPlacement(&w.Spec, &w.Status)
	e.updateStatus(w)
	e.clock.SetTime(at(110))
	if _, err := r.reconcile(ctx, resourceBindingKind, reqFor("web-deployment")); err != nil {
		t.Fatal(err)
	}
	if w := e.rb("web-deployment"); len(w.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("web's task kept with nothing else in flight: %+v", w.Spec.GracefulEvictionTasks)
	}
	if _, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b = e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 0 {
		t.Fatalf("nginx's task kept after the wave: %+v", b.Spec.GracefulEvictionTasks)
	}
	if len(b.Status.FailoverHistory) != 1 || b.Status.FailoverHistory[0].ReplacementHealthyTime == nil ||
		!b.Status.FailoverHistory[0].ReplacementHealthyTime.Time.Equal(at(97)) {
		t.Errorf("history = %+v, want the replacement Healthy at %s", b.Status.FailoverHistory, at(97))
	}
}

// A workload that no cluster can take (the scheduler said so for its
// evicted generation, leaving schedulerObservedGeneration behind) holds no
// other workload's clean-up: no replacement of it is being placed.
func TestGracefulEvictionNoFitHoldsNobody(t *testing.T) {
	task := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	done := makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
		health("member2", workv1alpha2.ResourceUnhealthy).placementHealthySince(97).task(task).obj()
	var stuck []client.Object
	for _, name := range []string{"pinned-a", "pinned-b", "pinned-c"} {
		stuck = append(stuck, makeBinding(name).unscheduled().noClusterFit("0/3 clusters are available: 3 cluster(s) did not match the placement cluster affinity constraint.").
			health("member2", workv1alpha2.ResourceUnhealthy).task(task).obj())
	}
	e := newEnv(t, nil, append(stuck, done)...)
	r := e.gracefulEviction()
	r.Wave = NewWave(time.Minute)
	ctx := context.Background()

	e.clock.SetTime(at(100))
	for _, s := range stuck {
		if _, err := r.reconcile(ctx, resourceBindingKind, reqFor(s.GetName())); err != nil {
			t.Fatal(err)
		}
		// The copy is still its last one: kept.
		if b := e.rb(s.GetName()); len(b.Spec.GracefulEvictionTasks) != 1 {
			t.Fatalf("%s: tasks %+v, want its task kept (no cluster can take it)", s.GetName(), b.Spec.GracefulEvictionTasks)
		}
	}
	if _, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx)); err != nil {
		t.Fatal(err)
	}
	b := e.rb(nginx)
	if len(b.Spec.GracefulEvictionTasks) != 0 || len(b.Status.FailoverHistory) != 1 {
		t.Errorf("nginx's clean-up held by workloads no cluster can take: tasks %+v, history %+v", b.Spec.GracefulEvictionTasks, b.Status.FailoverHistory)
	}
}

// The hold never delays what a workload or a user waits for, and never
// lasts longer than its bound.
func TestGracefulEvictionHoldMustNotDelay(t *testing.T) {
	inFlightElsewhere := makeBinding("web").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
		task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")).obj()
	for name, tc := range map[string]struct {
		b     *workv1alpha2.ResourceBinding
		now   int
		check func(t *testing.T, b *workv1alpha2.ResourceBinding)
	}{
		"a Directly task closes: the new copy waits for it": {
			b: makeBinding("nginx").clusters("member1").
				task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")).obj(),
			now: 100,
			check: func(t *testing.T, b *workv1alpha2.ResourceBinding) {
				if len(b.Spec.GracefulEvictionTasks) != 0 {
					t.Errorf("Directly task held: %+v", b.Spec.GracefulEvictionTasks)
				}
			},
		},
		"no failover target is said at once": {
			b: makeBinding("nginx").noClusterFit("0/2 clusters are available").
				task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")).obj(),
			now: 100,
			check: func(t *testing.T, b *workv1alpha2.ResourceBinding) {
				if c := meta.FindStatusCondition(b.Status.Conditions, ConditionFailoverTargetAvailable); c == nil || c.Status != metav1.ConditionFalse {
					t.Errorf("condition = %+v, want NoFailoverTarget written at once", c)
				}
			},
		},
		"a task without a creation time is stamped: its grace period starts": {
			b: makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				task(withoutCreation(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"))).obj(),
			now: 100,
			check: func(t *testing.T, b *workv1alpha2.ResourceBinding) {
				if len(b.Spec.GracefulEvictionTasks) != 1 || b.Spec.GracefulEvictionTasks[0].CreationTimestamp == nil {
					t.Errorf("task not stamped: %+v", b.Spec.GracefulEvictionTasks)
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, tc.b, inFlightElsewhere.DeepCopy())
			r := e.gracefulEviction()
			r.Wave = NewWave(time.Minute)
			e.clock.SetTime(at(tc.now))
			r.Wave.Observe("rb/default/web-deployment", true, false, at(tc.now))
			if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(nginx)); err != nil {
				t.Fatal(err)
			}
			tc.check(t, e.rb(nginx))
		})
	}

	t.Run("held at most the bound", func(t *testing.T) {
		done := makeBinding("nginx").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
			task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2")).obj()
		e := newEnv(t, nil, done, inFlightElsewhere.DeepCopy())
		r := e.gracefulEviction()
		r.Wave = NewWave(time.Minute)
		ctx := context.Background()
		for _, s := range []int{100, 130, 155, 160} {
			e.clock.SetTime(at(s))
			// The other binding counts as newly in flight each time: only
			// the bound on nginx's own hold ends it.
			r.Wave.Forget("rb/default/web-deployment")
			r.Wave.Observe("rb/default/web-deployment", true, false, at(s))
			res, err := r.reconcile(ctx, resourceBindingKind, reqFor(nginx))
			if err != nil {
				t.Fatal(err)
			}
			tasks := len(e.rb(nginx).Spec.GracefulEvictionTasks)
			switch {
			case s < 160 && tasks != 1:
				t.Fatalf("t=%d: task closed within the hold", s)
			case s < 160 && res.RequeueAfter != min(waveRetry, at(160).Sub(at(s))):
				t.Errorf("t=%d: requeueAfter = %s", s, res.RequeueAfter)
			case s == 160 && tasks != 0:
				t.Errorf("t=%d: task still held after a minute", s)
			}
		}
	})
}

func withoutCreation(t workv1alpha2.GracefulEvictionTask) workv1alpha2.GracefulEvictionTask {
	t.CreationTimestamp = nil
	return t
}
