package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

var testDamping = FlapDamping{Window: 10 * time.Minute, Hold: time.Minute, MaxHold: 10 * time.Minute}

// sec is t0 + n seconds.
func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func readyAt(status metav1.ConditionStatus, at time.Time) *metav1.Condition {
	return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, LastTransitionTime: metav1.NewTime(at)}
}

func TestDecideFlapDamping(t *testing.T) {
	cases := map[string]struct {
		recorded []time.Time
		ready    *metav1.Condition
		down     bool
		now      time.Time
		cfg      FlapDamping
		want     flapDecision
	}{
		"a new cluster without Ready: nothing": {
			now: sec(0), want: flapDecision{failures: []time.Time{}},
		},
		"healthy, never failed: nothing": {
			ready: readyAt(metav1.ConditionTrue, sec(0)), now: sec(100), want: flapDecision{failures: []time.Time{}},
		},
		"first failure is recorded, not damped": {
			ready: readyAt(metav1.ConditionFalse, sec(10)), now: sec(12),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"the same failure seen again is recorded once": {
			recorded: []time.Time{sec(10)}, ready: readyAt(metav1.ConditionFalse, sec(10)), now: sec(50),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"Unknown is a failure too": {
			ready: readyAt(metav1.ConditionUnknown, sec(10)), now: sec(12),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"False turning Unknown is the same outage, not a second failure": {
			recorded: []time.Time{sec(10)}, ready: readyAt(metav1.ConditionUnknown, sec(50)), down: true, now: sec(51),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"Unknown turning False is the same outage too": {
			recorded: []time.Time{sec(10)}, ready: readyAt(metav1.ConditionFalse, sec(50)), down: true, now: sec(51),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"a failure the record lost while the cluster was down stays unrecorded": {
			ready: readyAt(metav1.ConditionFalse, sec(50)), down: true, now: sec(51),
			want: flapDecision{failures: []time.Time{}},
		},
		"recovered from a single failure: trusted at once": {
			recorded: []time.Time{sec(10)}, ready: readyAt(metav1.ConditionTrue, sec(40)), now: sec(41),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"second failure within the window: damped while down": {
			recorded: []time.Time{sec(10)}, ready: readyAt(metav1.ConditionFalse, sec(70)), now: sec(71),
			want: flapDecision{failures: []time.Time{sec(10), sec(70)}, recent: 2, hold: time.Minute, damped: true},
		},
		"recovered from the second failure: held for Hold after the recovery": {
			recorded: []time.Time{sec(10), sec(70)}, ready: readyAt(metav1.ConditionTrue, sec(100)), now: sec(159),
			want: flapDecision{failures: []time.Time{sec(10), sec(70)}, recent: 2, hold: time.Minute, until: sec(160), damped: true},
		},
		"the hold is over": {
			recorded: []time.Time{sec(10), sec(70)}, ready: readyAt(metav1.ConditionTrue, sec(100)), now: sec(160),
			want: flapDecision{failures: []time.Time{sec(10), sec(70)}, recent: 2, hold: time.Minute, until: sec(160)},
		},
		"third failure doubles the hold": {
			recorded: []time.Time{sec(10), sec(70), sec(130)}, ready: readyAt(metav1.ConditionTrue, sec(150)), now: sec(150),
			want: flapDecision{failures: []time.Time{sec(10), sec(70), sec(130)}, recent: 3, hold: 2 * time.Minute, until: sec(270), damped: true},
		},
		"many failures: the hold stops at MaxHold": {
			recorded: []time.Time{sec(0), sec(30), sec(60), sec(90), sec(120), sec(150), sec(180), sec(210)},
			ready:    readyAt(metav1.ConditionTrue, sec(240)), now: sec(240),
			want: flapDecision{failures: []time.Time{sec(0), sec(30), sec(60), sec(90), sec(120), sec(150), sec(180), sec(210)},
				recent: 8, hold: 10 * time.Minute, until: sec(840), damped: true},
		},
		"failures further apart than the window are not flapping": {
			recorded: []time.Time{sec(0)}, ready: readyAt(metav1.ConditionFalse, sec(601)), now: sec(602),
			want: flapDecision{failures: []time.Time{sec(0), sec(601)}, recent: 1},
		},
		"failures too old to matter are dropped": {
			recorded: []time.Time{sec(0), sec(30)}, ready: readyAt(metav1.ConditionTrue, sec(60)), now: sec(60 + 1201),
			want: flapDecision{failures: []time.Time{}},
		},
		"failures in the future (a hand edit, clock skew) are ignored": {
			recorded: []time.Time{sec(10), sec(5000)}, ready: readyAt(metav1.ConditionTrue, sec(40)), now: sec(41),
			want: flapDecision{failures: []time.Time{sec(10)}, recent: 1},
		},
		"damping off: nothing recorded, nothing damped": {
			recorded: []time.Time{sec(10), sec(70)}, ready: readyAt(metav1.ConditionFalse, sec(130)), now: sec(131),
			cfg:  FlapDamping{},
			want: flapDecision{failures: []time.Time{sec(10), sec(70)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == (FlapDamping{}) && !strings.HasPrefix(name, "damping off") {
				cfg = testDamping
			}
			got := decideFlapDamping(tc.recorded, tc.ready, tc.down, tc.now, cfg)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(flapDecision{})); diff != "" {
				t.Errorf("decideFlapDamping (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFlapDampingTimeline flaps a cluster every 30s, five times in 150s,
// and checks when it would get new placements: after the first recovery
// at once, after later ones only once the growing hold is over.
func TestFlapDampingTimeline(t *testing.T) {
	var recorded []time.Time
	schedulable := map[int]bool{}
	for i := 0; i < 5; i++ {
		down, up := sec(i*30), sec(i*30+15)
		d := decideFlapDamping(recorded, readyAt(metav1.ConditionFalse, down), false, down.Add(time.Second), testDamping)
		recorded = d.failures
		d = decideFlapDamping(recorded, readyAt(metav1.ConditionTrue, up), true, up.Add(time.Second), testDamping)
		recorded = d.failures
		schedulable[i] = !d.damped
	}
	want := map[int]bool{0: true, 1: false, 2: false, 3: false, 4: false}
	if diff := cmp.Diff(want, schedulable); diff != "" {
		t.Errorf("schedulable after each recovery (-want +got):\n%s", diff)
	}
	if len(recorded) != 5 {
		t.Errorf("recorded %d failures, want 5: %v", len(recorded), recorded)
	}
}

func TestFlapHoldBounds(t *testing.T) {
	huge := FlapDamping{Window: time.Hour, Hold: time.Duration(1 << 62), MaxHold: time.Duration(1<<63 - 1)}
	if got := flapHold(64, huge); got != huge.MaxHold {
		t.Errorf("flapHold with a huge Hold = %s, want MaxHold", got)
	}
	if got := flapHold(1000, testDamping); got != testDamping.MaxHold {
		t.Errorf("flapHold(1000) = %s, want %s", got, testDamping.MaxHold)
	}
	if got := flapHold(2, testDamping); got != testDamping.Hold {
		t.Errorf("flapHold(2) = %s, want %s", got, testDamping.Hold)
	}
}

func TestParseFailures(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []time.Time
	}{
		"empty":                        {in: "", want: nil},
		"sorted and deduplicated":      {in: "2026-03-01T12:01:00Z,2026-03-01T12:00:10Z,2026-03-01T12:01:00Z", want: []time.Time{sec(10), sec(60)}},
		"garbage entries are dropped":  {in: "yesterday, 2026-03-01T12:00:10Z ,,12", want: []time.Time{sec(10)}},
		"offsets are read as instants": {in: "2026-03-01T13:00:10+01:00", want: []time.Time{sec(10)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseFailures(tc.in)); diff != "" {
				t.Errorf("parseFailures (-want +got):\n%s", diff)
			}
		})
	}
	// The record stays bounded whatever the annotation holds.
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, sec(i).Format(time.RFC3339))
	}
	d := decideFlapDamping(parseFailures(strings.Join(many, ",")), readyAt(metav1.ConditionFalse, sec(100)), false, sec(101), testDamping)
	if len(d.failures) != maxRecordedFailures || !d.failures[len(d.failures)-1].Equal(sec(100)) {
		t.Errorf("kept %d failures ending %v, want the latest %d", len(d.failures), d.failures[len(d.failures)-1], maxRecordedFailures)
	}
	if got := formatFailures([]time.Time{sec(10), sec(60)}); got != fmt.Sprintf("%s,%s", sec(10).Format(time.RFC3339), sec(60).Format(time.RFC3339)) {
		t.Errorf("formatFailures = %q", got)
	}
}
