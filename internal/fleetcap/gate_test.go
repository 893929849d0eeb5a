package fleetcap

import (
	"fmt"
	"testing"
	"time"
)

func TestNewGateRefusesNegativeLimits(t *testing.T) {
	for _, c := range []struct {
		max  int
		rate float64
	}{{-1, 1}, {1, -1}} {
		if _, err := NewGate("failbacks", c.max, c.rate, at(0)); err == nil {
			t.Errorf("NewGate(%d, %g) accepted", c.max, c.rate)
		}
	}
}

func TestGateCap(t *testing.T) {
	cases := map[string]struct {
		max     int
		open    int
		allowed bool
	}{
		"below the cap":           {max: 2, open: 1, allowed: true},
		"must not: at the cap":    {max: 2, open: 2},
		"must not: above the cap": {max: 2, open: 3},
		"must not: a cap of 0":    {max: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := NewGate("failbacks", tc.max, 0, at(0))
			if err != nil {
				t.Fatal(err)
			}
			open := map[string]bool{}
			for i := range tc.open {
				open[fmt.Sprint("b", i)] = true
			}
			a := g.Admit("x", open, at(0))
			if a.Allowed != tc.allowed {
				t.Fatalf("allowed %t (%s), want %t", a.Allowed, a.Reason, tc.allowed)
			}
			if !a.Allowed && a.RetryAfter != CapRetry {
				t.Errorf("retry after %s, want %s", a.RetryAfter, CapRetry)
			}
		})
	}
}

// A failback just started counts against the cap before the cache shows
// it, and stops counting twice once it does.
func TestGateCountsWhatTheCacheDoesNotShowYet(t *testing.T) {
	g, _ := NewGate("failbacks", 2, 0, at(0))
	if a := g.Admit("a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := g.Admit("b", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := g.Admit("c", nil, at(0)); a.Allowed {
		t.Fatal("a third failback while two just started and the cache shows none")
	}
	// The cache shows a and b: still two.
	if a := g.Admit("c", map[string]bool{"a": true, "b": true}, at(1)); a.Allowed {
		t.Fatal("a third failback with two open")
	}
	// a finished: one open.
	if a := g.Admit("c", map[string]bool{"b": true}, at(2)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	// A forgotten admission does not count.
	g.Forget("c")
	if a := g.Admit("d", map[string]bool{"b": true}, at(2)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	// An admission the cache never shows stops counting after recentTTL.
	g2, _ := NewGate("failbacks", 1, 0, at(0))
	g2.Admit("a", nil, at(0))
	if a := g2.Admit("b", nil, at(0).Add(recentTTL+time.Second)); !a.Allowed {
		t.Fatal(a.Reason)
	}
}

func TestGateRate(t *testing.T) {
	g, _ := NewGate("failbacks", 100, 1, at(0))
	if a := g.Admit("a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	a := g.Admit("b", nil, at(0))
	if a.Allowed || a.RetryAfter != time.Second {
		t.Fatalf("second failback in the same second: allowed %t, retry after %s; want held for 1s", a.Allowed, a.RetryAfter)
	}
	// The held one did not use a token: it goes a second later, the next
	// one waits again.
	if a := g.Admit("b", nil, at(1)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := g.Admit("c", nil, at(1).Add(500*time.Millisecond)); a.Allowed || a.RetryAfter != 500*time.Millisecond {
		t.Fatalf("allowed %t, retry after %s; want held for 500ms", a.Allowed, a.RetryAfter)
	}
}

// Bindings held back by the cap are woken one per freed place, longest
// held first; one that no longer waits is not woken.
func TestGateWakesHeldBackInOrder(t *testing.T) {
	g, _ := NewGate("failbacks", 1, 0, at(0))
	if a := g.Admit("a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	for _, k := range []string{"b", "c", "b", "d"} {
		if a := g.Admit(k, nil, at(1)); a.Allowed {
			t.Fatalf("%s admitted above the cap", k)
		}
	}
	g.Drop("c") // its binding no longer wants to move
	if next := g.Release("a", at(2)); next != "b" {
		t.Errorf("first woken %q, want b (held back first)", next)
	}
	if a := g.Admit("b", nil, at(2)); !a.Allowed {
		t.Fatalf("woken b not admitted: %s", a.Reason)
	}
	if next := g.Release("b", at(2)); next != "d" {
		t.Errorf("second woken %q, want d (c was dropped, b not held twice)", next)
	}
	if next := g.Release("d", at(2)); next != "" {
		t.Errorf("woken %q with nobody held back", next)
	}
}

// A failback that ended no longer counts, also while the cache still
// shows it open: the binding woken for its place is admitted at once.
func TestGateReleasedCountsNoMoreBeforeTheCacheCatchesUp(t *testing.T) {
	g, _ := NewGate("failbacks", 1, 0, at(0))
	g.Admit("a", nil, at(0))
	g.Admit("b", nil, at(1))
	if next := g.Release("a", at(2)); next != "b" {
		t.Fatalf("woken %q, want b", next)
	}
	stale := map[string]bool{"a": true} // the close is not in the cache yet
	if a := g.Admit("b", stale, at(2)); !a.Allowed {
		t.Fatalf("b refused while the cache lags: %s", a.Reason)
	}
	// Once the cache shows a closed, the gate forgets the close: a later
	// failback of a counts again.
	g.Admit("x", map[string]bool{"b": true}, at(3))
	if _, still := g.closed["a"]; still {
		t.Error("the close of a is still remembered after the cache showed it")
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }
