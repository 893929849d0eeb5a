package failover

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestDecide(t *testing.T) {
	const tol = 120 * time.Second
	uc := func(c string, s int) workv1alpha2.UnhealthyCluster {
		return workv1alpha2.UnhealthyCluster{ClusterName: c, UnhealthySince: *mt(s)}
	}
	for name, tc := range map[string]struct {
		binding     *bindingWrapper
		now         int
		toleration  *time.Duration
		wantEvict   []string
		wantTimers  []workv1alpha2.UnhealthyCluster
		wantRequeue time.Duration
	}{
		"healthy: nothing": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy),
			now:     500,
		},
		"first unhealthy observation starts the timer, requeue at the deadline": {
			binding:     makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy),
			now:         10,
			wantTimers:  []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
			wantRequeue: tol,
		},
		"restart: the persisted timer keeps the original deadline": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				unhealthySince("member1", 10),
			now:         100,
			wantTimers:  []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
			wantRequeue: 30 * time.Second,
		},
		"deadline reached: evict": {
			binding: makeBinding("a").clusters("member1", "member2").health("member1", workv1alpha2.ResourceUnhealthy).
				health("member2", workv1alpha2.ResourceHealthy).unhealthySince("member1", 10),
			now:        130,
			wantEvict:  []string{"member1"},
			wantTimers: []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
		},
		"restart after the deadline: evict at once, not a new window": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).
				unhealthySince("member1", 10),
			now:        4000,
			wantEvict:  []string{"member1"},
			wantTimers: []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
		},
		"Unknown does not reset the timer, and still fails over": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnknown).
				unhealthySince("member1", 10),
			now:        131,
			wantEvict:  []string{"member1"},
			wantTimers: []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
		},
		"Unknown does not start a timer": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnknown),
			now:     10,
		},
		"no report keeps a running timer": {
			binding:     makeBinding("a").clusters("member1").unhealthySince("member1", 10),
			now:         20,
			wantTimers:  []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
			wantRequeue: 110 * time.Second,
		},
		"Healthy resets the timer": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).
				unhealthySince("member1", 10),
			now: 500,
		},
		"cluster no longer scheduled drops its timer": {
			binding: makeBinding("a").clusters("member2").health("member1", workv1alpha2.ResourceUnhealthy).
				unhealthySince("member1", 10),
			now: 500,
		},
		"earliest deadline wins": {
			binding: makeBinding("a").clusters("member1", "member2").
				health("member1", workv1alpha2.ResourceUnhealthy).health("member2", workv1alpha2.ResourceUnhealthy).
				unhealthySince("member2", 50),
			now:         60,
			wantTimers:  []workv1alpha2.UnhealthyCluster{uc("member1", 60), uc("member2", 50)},
			wantRequeue: 110 * time.Second,
		},
		"toleration 0 evicts on the first observation": {
			binding:    makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy),
			now:        10,
			toleration: new(time.Duration),
			wantEvict:  []string{"member1"},
			wantTimers: []workv1alpha2.UnhealthyCluster{uc("member1", 10)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			toleration := tol
			if tc.toleration != nil {
				toleration = *tc.toleration
			}
			evict, timers, _, requeue := decide(at(tc.now), &b.Spec, &b.Status, toleration, nil)
			if diff := cmp.Diff(tc.wantEvict, evict); diff != "" {
				t.Errorf("toEvict (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTimers, timers); diff != "" {
				t.Errorf("timers (-want +got):\n%s", diff)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", requeue, tc.wantRequeue)
			}
		})
	}
}

// The status keeps a timer's start to the second. A timer this process
// started runs from its exact start, so the eviction is never early; a
// timer it did not start (a restart) runs from the stored second.
func TestDecideExactStart(t *testing.T) {
	const tol = 10 * time.Second
	start := at(10).Add(700 * time.Millisecond) // stored as second 10
	unhealthy := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy)

	// The first observation: stored truncated, exact kept.
	b := unhealthy.obj()
	_, timers, exact, requeue := decide(start, &b.Spec, &b.Status, tol, nil)
	if len(timers) != 1 || !timers[0].UnhealthySince.Time.Equal(at(10)) {
		t.Fatalf("timers = %+v, want one from second 10", timers)
	}
	if !exact["member1"].Equal(start) || requeue != tol {
		t.Fatalf("exact = %v, requeue = %v; want %v and %v", exact, requeue, start, tol)
	}

	stored := unhealthy.unhealthySince("member1", 10).obj()
	for name, tc := range map[string]struct {
		exact     map[string]time.Time
		now       time.Time
		wantEvict bool
	}{
		"exact start: not yet at stored second + toleration": {exact: exact, now: at(20), wantEvict: false},
		"exact start: at exact + toleration":                 {exact: exact, now: start.Add(tol), wantEvict: true},
		"restart, no exact start: the stored second counts":  {exact: nil, now: at(20), wantEvict: true},
		"exact start of an older timer is ignored": {
			exact: map[string]time.Time{"member1": at(5).Add(500 * time.Millisecond)}, now: at(20), wantEvict: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			evict, _, _, _ := decide(tc.now, &stored.Spec, &stored.Status, tol, tc.exact)
			if got := len(evict) == 1; got != tc.wantEvict {
				t.Errorf("evict = %v, want eviction %v", evict, tc.wantEvict)
			}
		})
	}
}
