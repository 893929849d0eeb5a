package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
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

func TestTrackerGapsWithoutAHealthyCopy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	clk := clocktesting.NewFakePassiveClock(t0)
	tr := NewTracker(clk)
	key := BindingKey("ns", "web")
	observe := func(s int, marks ...string) {
		clk.SetTime(at(s))
		tr.Observe(key, append([]string{MarkPresent}, marks...))
	}
	observe(0, Scheduled("member1"))                     // not yet Healthy: no gap
	observe(1, Scheduled("member1"), Healthy("member1")) // Healthy
	observe(2, Scheduled("member1"), Healthy("member1"), Unhealthy("member2"))
	observe(3, Scheduled("member2"), Evicting("member1")) // the copy went: a gap opens
	observe(4, Scheduled("member2"))                      // still none
	observe(6, Scheduled("member2"), Healthy("member2"))  // closed after 3 s
	observe(7, Scheduled("member2"), Scheduled("member1"), Healthy("member1"), Healthy("member2"))
	observe(8, Scheduled("member1"), Healthy("member1"))                          // moved with a Healthy copy throughout: no gap
	observe(8, Scheduled("member2"), Evicting("member1"), KeptHealthy("member1")) // moving: the kept copy counts
	observe(8, Scheduled("member2"), Healthy("member2"), Evicting("member1"))
	observe(8, Scheduled("member1"), Healthy("member1"))
	observe(9, Scheduled("member1")) // a second gap, open

	got := tr.Gaps(key, time.Time{})
	want := []Gap{{From: at(3), To: at(6)}, {From: at(9)}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("gaps = %+v, want %+v", got, want)
	}
	if got := tr.Gaps(key, at(7)); len(got) != 1 || got[0] != want[1] {
		t.Errorf("gaps lasting at or after 7 s = %+v, want only the open one", got)
	}
	if d := got[1].Duration(at(12)); d != 3*time.Second {
		t.Errorf("the open gap lasts %s at 12 s, want 3s", d)
	}
	if got := tr.Gaps(BindingKey("ns", "other"), time.Time{}); got != nil {
		t.Errorf("gaps of an unseen key = %+v", got)
	}
}

func TestLostAgain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for name, tc := range map[string]struct {
		gaps      []Gap
		healthyAt time.Time
		want      bool
	}{
		"no gap: a Healthy copy throughout":              {nil, at(40), false},
		"the failure's gap only":                         {[]Gap{{From: at(35), To: at(40)}}, at(40), false},
		"still without a Healthy copy, never moved":      {[]Gap{{From: at(35)}}, time.Time{}, false},
		"lost again after Healthy elsewhere":             {[]Gap{{From: at(35), To: at(40)}, {From: at(60), To: at(61)}}, at(40), true},
		"lost at the very moment it was Healthy again":   {[]Gap{{From: at(40)}}, at(40), true},
		"a gap that began before the member was stopped": {[]Gap{{From: at(-5), To: at(2)}}, at(40), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := lostAgain(tc.gaps, t0, tc.healthyAt); got != tc.want {
				t.Errorf("lostAgain = %v, want %v", got, tc.want)
			}
		})
	}
}

// A burst of changes is checked a few times, not once per change: a
// condition over thousands of bindings checked at every change would take
// the bench a large share of the machine it measures.
func TestWaitForChecksABurstOfChangesAFewTimes(t *testing.T) {
	tr := NewTracker(clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	const n = 200
	var checks atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- tr.WaitFor(context.Background(), time.Minute, "all Healthy", nil, func() (bool, string) {
			checks.Add(1)
			return tr.Has(BindingKey("ns", fmt.Sprintf("web-%d", n-1)), Healthy("member1")), ""
		})
	}()
	// The changes come over about 0.4 s, as watch events do, not all at
	// once.
	for i := 0; i < n; i++ {
		tr.Observe(BindingKey("ns", fmt.Sprintf("web-%d", i)), []string{Healthy("member1")})
		time.Sleep(2 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := checks.Load(); got > 20 {
		t.Errorf("%d changes were checked %d times, want a few", n, got)
	}
}
