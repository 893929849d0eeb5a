package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestTrackerRecordsAppearances(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	tr := NewTracker(clk)
	key := Key(SourceCluster, "", "member1")

	tr.Observe(key, []string{"present", "ready"})
	clk.SetTime(t0.Add(time.Second))
	tr.Observe(key, []string{"present", "ready"}) // a resync changes nothing
	clk.SetTime(t0.Add(2 * time.Second))
	tr.Observe(key, []string{"present", "notready"})
	clk.SetTime(t0.Add(3 * time.Second))
	tr.Observe(key, []string{"present", "notready", Tainted("k", "NoExecute")})
	clk.SetTime(t0.Add(4 * time.Second))
	tr.Observe(key, []string{"present", "ready"})
	clk.SetTime(t0.Add(5 * time.Second))
	tr.Observe(key, []string{"present", "notready"}) // a second outage

	cases := map[string]struct {
		mark   string
		after  time.Time
		want   time.Time
		wantOK bool
	}{
		"first ready":                    {mark: "ready", after: time.Time{}, want: t0, wantOK: true},
		"ready again after the outage":   {mark: "ready", after: t0.Add(time.Second), want: t0.Add(4 * time.Second), wantOK: true},
		"first notready":                 {mark: "notready", after: t0, want: t0.Add(2 * time.Second), wantOK: true},
		"second outage":                  {mark: "notready", after: t0.Add(3 * time.Second), want: t0.Add(5 * time.Second), wantOK: true},
		"present appeared once":          {mark: "present", after: t0.Add(time.Second), wantOK: false},
		"never seen":                     {mark: "evicting:member1", after: time.Time{}, wantOK: false},
		"after is inclusive of the time": {mark: "notready", after: t0.Add(2 * time.Second), want: t0.Add(2 * time.Second), wantOK: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := tr.FirstMark(key, tc.mark, tc.after)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("FirstMark(%s, %s) = %s, %v; want %s, %v", tc.mark, tc.after, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if a, ok := tr.First(key, time.Time{}, NoExecuteTaint); !ok || !a.At.Equal(t0.Add(3*time.Second)) {
		t.Errorf("First(NoExecuteTaint) = %+v, %v", a, ok)
	}
	if got := tr.Marks(key); strings.Join(got, ",") != "notready,present" {
		t.Errorf("Marks = %v", got)
	}
	// Every observation is a write, also one that changes no mark.
	if got := tr.Events(key); got != 6 {
		t.Errorf("Events = %d, want 6", got)
	}
	if got := tr.Events(Key(SourceCluster, "", "member9")); got != 0 {
		t.Errorf("Events of an object never seen = %d", got)
	}
}

func TestTrackerGone(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(100, 0))
	tr := NewTracker(clk)
	key := Key(MemberSource("member1"), "ns", "web")
	tr.Observe(key, []string{"present"})
	tr.Gone(key)
	if tr.Has(key, "present") {
		t.Error("a deleted object still has its marks")
	}
	clk.SetTime(time.Unix(200, 0))
	tr.Observe(key, []string{"present"})
	if at, ok := tr.FirstMark(key, "present", time.Unix(150, 0)); !ok || at.Unix() != 200 {
		t.Errorf("re-created object: FirstMark = %v, %v; want 200", at.Unix(), ok)
	}
}

func TestWaitForWakesOnChange(t *testing.T) {
	tr := NewTracker(clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	key := BindingKey("ns", "web")
	done := make(chan error, 1)
	go func() {
		done <- tr.WaitFor(context.Background(), time.Minute, "web Healthy", nil, func() (bool, string) {
			return tr.Has(key, Healthy("member1")), ""
		})
	}()
	tr.Observe(key, []string{Healthy("member1")})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitForTimesOut(t *testing.T) {
	tr := NewTracker(clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	err := tr.WaitFor(context.Background(), time.Millisecond, "never", nil, func() (bool, string) { return false, "3/50 Healthy" })
	if err == nil || !strings.Contains(err.Error(), "3/50 Healthy") {
		t.Errorf("WaitFor = %v, want a timeout naming what was seen", err)
	}
}
