package coalesce

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestHandoff(t *testing.T) {
	const wait = 3 * time.Second
	type step struct {
		name string
		// do is one of offer, take, withdraw, advance.
		do    string
		value string // offered value, or the value a take must return
		start bool
		by    time.Duration // advance

		wantWait time.Duration
		wantNews bool
		wantOK   bool // take
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"an offer nobody started is written at once", []step{
			{do: "offer", value: "a", start: false, wantWait: 0, wantNews: true},
			{do: "take", wantOK: false},
		}},
		{"a started offer waits, and the taker gets the last value", []step{
			{do: "offer", value: "a", start: true, wantWait: wait, wantNews: true},
			{do: "advance", by: time.Second},
			{do: "offer", value: "a", start: false, wantWait: wait - time.Second, wantNews: false},
			{do: "offer", value: "b", start: false, wantWait: wait - time.Second, wantNews: true},
			{do: "take", value: "b", wantOK: true},
			{do: "take", wantOK: false},
		}},
		{"a pending offer keeps its first deadline", []step{
			{do: "offer", value: "a", start: true, wantWait: wait, wantNews: true},
			{do: "advance", by: 2 * time.Second},
			{do: "offer", value: "a", start: true, wantWait: time.Second, wantNews: false},
		}},
		{"an offer not taken in time goes back to its maker", []step{
			{do: "offer", value: "a", start: true, wantWait: wait, wantNews: true},
			{do: "advance", by: wait},
			{do: "offer", value: "a", start: false, wantWait: 0, wantNews: false},
			{do: "take", wantOK: false},
		}},
		{"withdrawn, the offer is not taken", []step{
			{do: "offer", value: "a", start: true, wantWait: wait, wantNews: true},
			{do: "withdraw"},
			{do: "take", wantOK: false},
		}},
		{"a report that came first is not waited for", []step{
			{do: "take", wantOK: false},
			{do: "advance", by: time.Second},
			{do: "offer", value: "a", start: true, wantWait: 0, wantNews: true},
			{do: "advance", by: wait},
			{do: "offer", value: "a", start: true, wantWait: wait, wantNews: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			echoes := NewRecent(time.Minute, clk)
			h := NewHandoff[string](wait, echoes, clk)
			for i, s := range tc.steps {
				switch s.do {
				case "offer":
					w, news := h.Offer("uid", s.value, "said "+s.value, s.start)
					if w != s.wantWait || news != s.wantNews {
						t.Fatalf("step %d: Offer(%q, start %v) = %v, news %v; want %v, news %v", i, s.value, s.start, w, news, s.wantWait, s.wantNews)
					}
				case "take":
					v, said, ok := h.Take("uid")
					if ok != s.wantOK || (ok && (v != s.value || said != "said "+s.value)) {
						t.Fatalf("step %d: Take = %q, %q, %v; want %q, %v", i, v, said, ok, s.value, s.wantOK)
					}
				case "withdraw":
					h.Withdraw("uid")
				case "advance":
					clk.SetTime(clk.Now().Add(s.by))
				}
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
	if w, _ := h.Offer("b", "for b", "b", true); w != 0 {
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
}

func TestHandoffOffHoldsNothing(t *testing.T) {
	var nilHandoff *Handoff[string]
	zero := NewHandoff[string](0, nil, nil)
	for name, h := range map[string]*Handoff[string]{"nil": nilHandoff, "zero wait": zero} {
		if w, news := h.Offer("uid", "v", "v", true); w != 0 || !news {
			t.Errorf("%s: Offer = %v, news %v; want 0, true", name, w, news)
		}
		if _, _, ok := h.Take("uid"); ok {
			t.Errorf("%s: Take found an offer", name)
		}
		h.Withdraw("uid")
		h.Delivered("uid", "v")
	}
}
