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
			evict, timers, requeue := decide(at(tc.now), &b.Spec, &b.Status, toleration)
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
