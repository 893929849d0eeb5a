package coalesce

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestHandoff(t *testing.T) {
	const wait = 3 * time.Second
	type step struct {
		// do is one of offer, take, peek, withdraw, deliver, advance.
		do    string
		value string // offered or delivered value, or the one take, peek or withdraw must return
		start bool
		by    time.Duration // advance

		wantWait time.Duration // offer
		wantOK   bool          // take, peek, withdraw
	}
	cases := []struct {
		name        string
		steps       []step
		wantPending int
	}{
		{"an offer nobody started is written at once", []step{
			{do: "offer", value: "a", start: false, wantWait: 0},
			{do: "take", wantOK: false},
		}, 0},
		{"a started offer waits, taken it stays until delivered", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "advance", by: time.Second},
			{do: "offer", value: "a", start: false, wantWait: wait - time.Second},
			{do: "take", value: "a", wantOK: true},
			{do: "take", wantOK: false},
			{do: "peek", value: "a", wantOK: true},
			{do: "offer", value: "a", start: false, wantWait: wait - time.Second},
			{do: "deliver", value: "a"},
			{do: "peek", wantOK: false},
		}, 0},
		{"an update of what was offered is written at once", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "offer", value: "b", start: false, wantWait: 0},
			{do: "peek", wantOK: false},
		}, 0},
		{"new objects again replace an offer not taken, with its deadline", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "advance", by: time.Second},
			{do: "offer", value: "b", start: true, wantWait: wait - time.Second},
			{do: "take", value: "b", wantOK: true},
		}, 1},
		{"news while the taker writes the old value is written at once", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "take", value: "a", wantOK: true},
			{do: "offer", value: "b", start: true, wantWait: 0},
			{do: "peek", wantOK: false},
		}, 0},
		{"an offer not delivered in time goes back to its maker", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "take", value: "a", wantOK: true},
			{do: "advance", by: wait},
			{do: "peek", value: "a", wantOK: true},
			{do: "offer", value: "a", start: false, wantWait: 0},
		}, 0},
		{"an offer whose wait is over is not taken", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "advance", by: wait},
			{do: "take", wantOK: false},
			{do: "offer", value: "a", start: true, wantWait: 0},
		}, 0},
		{"withdrawn, the offer is handed back and not taken", []step{
			{do: "offer", value: "a", start: true, wantWait: wait},
			{do: "withdraw", value: "a", wantOK: true},
			{do: "take", wantOK: false},
			{do: "withdraw", wantOK: false},
		}, 0},
		{"a report that came first is not waited for", []step{
			{do: "take", wantOK: false},
			{do: "advance", by: time.Second},
			{do: "offer", value: "a", start: true, wantWait: 0},
			{do: "advance", by: wait},
			{do: "offer", value: "a", start: true, wantWait: wait},
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			h := NewHandoff[string](wait, NewRecent(time.Minute, clk), clk)
			for i, s := range tc.steps {
				var got string
				var ok bool
				switch s.do {
				case "offer":
					if w := h.Offer("uid", s.value, "said "+s.value, s.start); w != s.wantWait {
						t.Fatalf("step %d: Offer(%q, start %v) = %v, want %v", i, s.value, s.start, w, s.wantWait)
					}
					continue
				case "take":
					var said string
					got, said, ok = h.Take("uid")
					if ok && said != "said "+got {
						t.Fatalf("step %d: Take said %q for %q", i, said, got)
					}
				case "peek":
					got, ok = h.Peek("uid")
				case "withdraw":
					got, ok = h.Withdraw("uid")
				case "deliver":
					h.Delivered("uid", "said "+s.value)
					continue
				case "advance":
					clk.SetTime(clk.Now().Add(s.by))
					continue
				}
				if ok != s.wantOK || (ok && got != s.value) {
					t.Fatalf("step %d: %s = %q, %v; want %q, %v", i, s.do, got, ok, s.value, s.wantOK)
				}
			}
			if n := h.Pending(); n != tc.wantPending {
				t.Errorf("%d offers pending at the end, want %d", n, tc.wantPending)
			}
		})
	}
}

func TestHandoffKeysAreSeparate(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	h := NewHandoff[string](time.Second, nil, clk)
	h.Offer("a", "for a", "a", true)
	if _, _, ok := h.Take("b"); ok {
		t.Fatal("b took a's offer")
	}
	if w := h.Offer("b", "for b", "b", true); w != 0 {
		t.Errorf("b's offer waits %v after b was reported on; want 0", w)
	}
	if v, _, ok := h.Take("a"); !ok || v != "for a" {
		t.Errorf("Take(a) = %q, %v", v, ok)
	}
}

func TestHandoffDeliveredIsAnEcho(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	echoes := NewRecent(time.Minute, clk)
	h := NewHandoff[string](time.Second, echoes, clk)
	h.Offer("uid", "v", "said v", true)
	_, said, _ := h.Take("uid")
	if echoes.Has("uid", "said v") {
		t.Fatal("taken but not delivered, and already an echo")
	}
	h.Delivered("uid", said)
	if !echoes.Has("uid", "said v") {
		t.Error("a delivered offer is not remembered as its maker's write")
	}
	if h.Pending() != 0 {
		t.Error("a delivered offer is still pending")
	}
}

func TestHandoffOffHoldsNothing(t *testing.T) {
	var nilHandoff *Handoff[string]
	zero := NewHandoff[string](0, nil, nil)
	for name, h := range map[string]*Handoff[string]{"nil": nilHandoff, "zero wait": zero} {
		if w := h.Offer("uid", "v", "v", true); w != 0 {
			t.Errorf("%s: Offer = %v, want 0", name, w)
		}
		if _, _, ok := h.Take("uid"); ok {
			t.Errorf("%s: Take found an offer", name)
		}
		if _, ok := h.Withdraw("uid"); ok {
			t.Errorf("%s: Withdraw found an offer", name)
		}
		h.Delivered("uid", "v")
		if h.Pending() != 0 {
			t.Errorf("%s: offers pending", name)
		}
	}
}
