package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

func TestObservedReadyCondition(t *testing.T) {
	cases := map[string]struct {
		probe      ProbeResult
		clientErr  error
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		"healthy": {
			probe:      ProbeResult{Online: true, Healthy: true, Path: "/readyz", StatusCode: 200},
			wantStatus: metav1.ConditionTrue, wantReason: clusterv1alpha1.ClusterReasonReady,
		},
		"answers but unhealthy": {
			probe:      ProbeResult{Online: true, Path: "/readyz", StatusCode: 500},
			wantStatus: metav1.ConditionFalse, wantReason: clusterv1alpha1.ClusterReasonNotReady,
		},
		"unreachable": {
			probe:      ProbeResult{Err: errors.New("dial tcp: connection refused")},
			wantStatus: metav1.ConditionFalse, wantReason: clusterv1alpha1.ClusterReasonNotReachable,
		},
		"no client": {
			clientErr:  errors.New("secret not found"),
			wantStatus: metav1.ConditionFalse, wantReason: clusterv1alpha1.ClusterReasonStatusCollectionFail,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := observedReadyCondition(tc.probe, tc.clientErr)
			if got.Type != clusterv1alpha1.ClusterConditionReady || got.Status != tc.wantStatus || got.Reason != tc.wantReason {
				t.Errorf("got %s=%s (%s), want %s (%s)", got.Type, got.Status, got.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestObservedReadyConditionMessageIsStable(t *testing.T) {
	a := observedReadyCondition(ProbeResult{Err: errors.New("dial tcp 10.0.0.1:41234: i/o timeout")}, nil)
	b := observedReadyCondition(ProbeResult{Err: errors.New("context deadline exceeded")}, nil)
	if a.Message != b.Message {
		t.Errorf("messages differ between probes (%q, %q): every probe would write the status", a.Message, b.Message)
	}
}

func readyCond(status metav1.ConditionStatus, since time.Time) *metav1.Condition {
	return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Stored", LastTransitionTime: metav1.NewTime(since)}
}

func observed(status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Observed"}
}

func TestAdjustReady(t *testing.T) {
	th := thresholds{failure: 30 * time.Second, success: 20 * time.Second}
	probe := func(status metav1.ConditionStatus, since time.Time) *metav1.Condition {
		return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: status, LastTransitionTime: metav1.NewTime(since)}
	}
	cases := map[string]struct {
		stored     *metav1.Condition
		probe      *metav1.Condition
		observed   metav1.Condition
		prev       *readySince
		wantReason string // "Stored" kept, "Observed" taken
		wantSince  readySince
	}{
		"first observation of a new cluster is taken as it is": {
			observed:   observed(metav1.ConditionFalse),
			wantReason: "Observed", wantSince: readySince{isTrue: false, since: t0},
		},
		"agreeing observation passes": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionTrue),
			prev:       &readySince{isTrue: true, since: t0.Add(-time.Hour)},
			wantReason: "Observed", wantSince: readySince{isTrue: true, since: t0.Add(-time.Hour)},
		},
		"first failure keeps True": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionFalse),
			prev:       &readySince{isTrue: true, since: t0.Add(-time.Hour)},
			wantReason: "Stored", wantSince: readySince{isTrue: false, since: t0},
		},
		"failing for less than the failure threshold keeps True": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionFalse),
			prev:       &readySince{isTrue: false, since: t0.Add(-29 * time.Second)},
			wantReason: "Stored", wantSince: readySince{isTrue: false, since: t0.Add(-29 * time.Second)},
		},
		"failing for the failure threshold turns False": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionFalse),
			prev:       &readySince{isTrue: false, since: t0.Add(-30 * time.Second)},
			wantReason: "Observed", wantSince: readySince{isTrue: false, since: t0.Add(-30 * time.Second)},
		},
		"recovering uses the success threshold": {
			stored: readyCond(metav1.ConditionFalse, t0.Add(-time.Hour)), observed: observed(metav1.ConditionTrue),
			prev:       &readySince{isTrue: true, since: t0.Add(-20 * time.Second)},
			wantReason: "Observed", wantSince: readySince{isTrue: true, since: t0.Add(-20 * time.Second)},
		},
		"recovering for less than the success threshold keeps False": {
			stored: readyCond(metav1.ConditionFalse, t0.Add(-time.Hour)), observed: observed(metav1.ConditionTrue),
			prev:       &readySince{isTrue: true, since: t0.Add(-19 * time.Second)},
			wantReason: "Stored", wantSince: readySince{isTrue: true, since: t0.Add(-19 * time.Second)},
		},
		"a single good probe restarts the failure window": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionTrue),
			prev:       &readySince{isTrue: false, since: t0.Add(-25 * time.Second)},
			wantReason: "Observed", wantSince: readySince{isTrue: true, since: t0},
		},
		"Unknown to False is not smoothed": {
			stored: readyCond(metav1.ConditionUnknown, t0.Add(-time.Minute)), observed: observed(metav1.ConditionFalse),
			prev:       &readySince{isTrue: false, since: t0.Add(-time.Minute)},
			wantReason: "Observed", wantSince: readySince{isTrue: false, since: t0.Add(-time.Minute)},
		},
		"after a restart, an agreeing observation is seeded from lastTransitionTime": {
			stored: readyCond(metav1.ConditionFalse, t0.Add(-time.Hour)), observed: observed(metav1.ConditionFalse),
			wantReason: "Observed", wantSince: readySince{isTrue: false, since: t0.Add(-time.Hour)},
		},
		"after a restart, a disagreeing observation waits a full threshold": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), observed: observed(metav1.ConditionFalse),
			wantReason: "Stored", wantSince: readySince{isTrue: false, since: t0},
		},
		"after a restart, failing probes recorded before it continue their window": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), probe: probe(metav1.ConditionFalse, t0.Add(-30*time.Second)),
			observed:   observed(metav1.ConditionFalse),
			wantReason: "Observed", wantSince: readySince{isTrue: false, since: t0.Add(-30 * time.Second)},
		},
		"after a restart, passing probes recorded before it continue the recovery window": {
			stored: readyCond(metav1.ConditionFalse, t0.Add(-time.Hour)), probe: probe(metav1.ConditionTrue, t0.Add(-10*time.Second)),
			observed:   observed(metav1.ConditionTrue),
			wantReason: "Stored", wantSince: readySince{isTrue: true, since: t0.Add(-10 * time.Second)},
		},
		"after a restart, a recorded probe result that disagrees seeds nothing": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), probe: probe(metav1.ConditionTrue, t0.Add(-time.Hour)),
			observed:   observed(metav1.ConditionFalse),
			wantReason: "Stored", wantSince: readySince{isTrue: false, since: t0},
		},
		"a recorded probe result from the future (clock skew) seeds nothing": {
			stored: readyCond(metav1.ConditionTrue, t0.Add(-time.Hour)), probe: probe(metav1.ConditionFalse, t0.Add(time.Hour)),
			observed:   observed(metav1.ConditionFalse),
			wantReason: "Stored", wantSince: readySince{isTrue: false, since: t0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, since := adjustReady(tc.stored, tc.probe, tc.observed, tc.prev, t0, th)
			if got.Reason != tc.wantReason {
				t.Errorf("reason = %q, want %q", got.Reason, tc.wantReason)
			}
			if diff := cmp.Diff(tc.wantSince, since, cmp.AllowUnexported(readySince{})); diff != "" {
				t.Errorf("since (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadyTrackerFailureTimeline walks an outage through probes 10s apart.
func TestReadyTrackerFailureTimeline(t *testing.T) {
	tr := newReadyTracker(thresholds{failure: 30 * time.Second, success: 30 * time.Second})
	c := makeCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj()
	down := observedReadyCondition(ProbeResult{Err: errors.New("refused")}, nil)
	want := map[time.Duration]metav1.ConditionStatus{
		0: metav1.ConditionTrue, 10 * time.Second: metav1.ConditionTrue, 20 * time.Second: metav1.ConditionTrue,
		30 * time.Second: metav1.ConditionFalse,
	}
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second} {
		got, held := tr.adjust(c, down, t0.Add(at))
		if got.Status != want[at] {
			t.Errorf("at +%s: Ready %s, want %s", at, got.Status, want[at])
		}
		// While the change is held back, it is due when the failure
		// threshold since the first failed probe ends.
		wantHeld := t0.Add(30 * time.Second)
		if got.Status != metav1.ConditionTrue {
			wantHeld = time.Time{}
		}
		if !held.Equal(wantHeld) {
			t.Errorf("at +%s: held until %s, want %s", at, held, wantHeld)
		}
	}
}

func TestHeldUntil(t *testing.T) {
	th := thresholds{failure: 30 * time.Second, success: 20 * time.Second}
	trueC := metav1.Condition{Status: metav1.ConditionTrue}
	falseC := metav1.Condition{Status: metav1.ConditionFalse}
	unknownC := metav1.Condition{Status: metav1.ConditionUnknown}
	cases := map[string]struct {
		adjusted, observed metav1.Condition
		next               readySince
		want               time.Time
	}{
		"failure held back":        {adjusted: trueC, observed: falseC, next: readySince{since: t0}, want: t0.Add(30 * time.Second)},
		"recovery held back":       {adjusted: falseC, observed: trueC, next: readySince{isTrue: true, since: t0}, want: t0.Add(20 * time.Second)},
		"failure passed":           {adjusted: falseC, observed: falseC, next: readySince{since: t0}},
		"healthy":                  {adjusted: trueC, observed: trueC, next: readySince{isTrue: true, since: t0}},
		"False to Unknown is free": {adjusted: unknownC, observed: unknownC, next: readySince{since: t0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := heldUntil(tc.adjusted, tc.observed, tc.next, th); !got.Equal(tc.want) {
				t.Errorf("heldUntil = %s, want %s", got, tc.want)
			}
		})
	}
}

// conditionHolds decides whether a probe writes nothing; it must agree with
// meta.SetStatusCondition, which writes the status when it does not hold.
func TestConditionHoldsAgreesWithSetStatusCondition(t *testing.T) {
	then := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	stored := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterReady", Message: "ok", LastTransitionTime: then}
	other := metav1.Condition{Type: "ProbeSucceeded", Status: metav1.ConditionTrue, Reason: "ClusterReady", Message: "ok", LastTransitionTime: then}
	change := func(fn func(*metav1.Condition)) metav1.Condition {
		c := stored
		fn(&c)
		return c
	}
	cases := map[string]struct {
		conditions []metav1.Condition
		set        metav1.Condition
		want       bool
	}{
		"the same":                           {conditions: []metav1.Condition{other, stored}, set: stored, want: true},
		"only lastTransitionTime differs":    {conditions: []metav1.Condition{stored}, set: change(func(c *metav1.Condition) { c.LastTransitionTime = metav1.Now() }), want: true},
		"absent":                             {conditions: []metav1.Condition{other}, set: stored},
		"no conditions":                      {set: stored},
		"status differs":                     {conditions: []metav1.Condition{stored}, set: change(func(c *metav1.Condition) { c.Status = metav1.ConditionFalse })},
		"reason differs":                     {conditions: []metav1.Condition{stored}, set: change(func(c *metav1.Condition) { c.Reason = "ClusterNotReachable" })},
		"message differs":                    {conditions: []metav1.Condition{stored}, set: change(func(c *metav1.Condition) { c.Message = "not ok" })},
		"observedGeneration differs":         {conditions: []metav1.Condition{stored}, set: change(func(c *metav1.Condition) { c.ObservedGeneration = 2 })},
		"another type with the same content": {conditions: []metav1.Condition{other}, set: change(func(c *metav1.Condition) { c.Type = "Other" })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := conditionHolds(tc.conditions, tc.set)
			conditions := append([]metav1.Condition(nil), tc.conditions...)
			changed := meta.SetStatusCondition(&conditions, tc.set)
			if got != tc.want || got == changed {
				t.Errorf("conditionHolds = %t, want %t; SetStatusCondition changed = %t", got, tc.want, changed)
			}
		})
	}
}
