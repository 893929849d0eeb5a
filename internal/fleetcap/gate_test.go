package fleetcap

import (
	"errors"
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
			a := admit(t, g, "x", open, at(0))
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
	if a := admit(t, g, "a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := admit(t, g, "b", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := admit(t, g, "c", nil, at(0)); a.Allowed {
		t.Fatal("a third failback while two just started and the cache shows none")
	}
	// The cache shows a and b: still two.
	if a := admit(t, g, "c", map[string]bool{"a": true, "b": true}, at(1)); a.Allowed {
		t.Fatal("a third failback with two open")
	}
	// a finished: one open.
	if a := admit(t, g, "c", map[string]bool{"b": true}, at(2)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	// A forgotten admission does not count.
	g.Forget("c", "")
	if a := admit(t, g, "d", map[string]bool{"b": true}, at(2)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	// An admission the cache never shows stops counting after recentTTL.
	g2, _ := NewGate("failbacks", 1, 0, at(0))
	admit(t, g2, "a", nil, at(0))
	if a := admit(t, g2, "b", nil, at(0).Add(recentTTL+time.Second)); !a.Allowed {
		t.Fatal(a.Reason)
	}
}

func TestGateRate(t *testing.T) {
	g, _ := NewGate("failbacks", 100, 1, at(0))
	if a := admit(t, g, "a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	a := admit(t, g, "b", nil, at(0))
	if a.Allowed || a.RetryAfter != time.Second {
		t.Fatalf("second failback in the same second: allowed %t, retry after %s; want held for 1s", a.Allowed, a.RetryAfter)
	}
	// The held one did not use a token: it goes a second later, the next
	// one waits again.
	if a := admit(t, g, "b", nil, at(1)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	if a := admit(t, g, "c", nil, at(1).Add(500*time.Millisecond)); a.Allowed || a.RetryAfter != 500*time.Millisecond {
		t.Fatalf("allowed %t, retry after %s; want held for 500ms", a.Allowed, a.RetryAfter)
	}
}

// Bindings held back by the cap are woken one per freed place, longest
// held first; one that no longer waits is not woken.
func TestGateWakesHeldBackInOrder(t *testing.T) {
	g, _ := NewGate("failbacks", 1, 0, at(0))
	if a := admit(t, g, "a", nil, at(0)); !a.Allowed {
		t.Fatal(a.Reason)
	}
	for _, k := range []string{"b", "c", "b", "d"} {
		if a := admit(t, g, k, nil, at(1)); a.Allowed {
			t.Fatalf("%s admitted above the cap", k)
		}
	}
	g.Drop("c") // its binding no longer wants to move
	if next := g.Release("a", at(2)); next != "b" {
		t.Errorf("first woken %q, want b (held back first)", next)
	}
	if a := admit(t, g, "b", nil, at(2)); !a.Allowed {
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
	admit(t, g, "a", nil, at(0))
	admit(t, g, "b", nil, at(1))
	if next := g.Release("a", at(2)); next != "b" {
		t.Fatalf("woken %q, want b", next)
	}
	stale := map[string]bool{"a": true} // the close is not in the cache yet
	if a := admit(t, g, "b", stale, at(2)); !a.Allowed {
		t.Fatalf("b refused while the cache lags: %s", a.Reason)
	}
	// Once the cache shows a closed, the gate forgets the close: a later
	// failback of a counts again.
	admit(t, g, "x", map[string]bool{"b": true}, at(3))
	if _, still := g.closed["a"]; still {
		t.Error("the close of a is still remembered after the cache showed it")
	}
}

// admit asks g with open as the cache's view, for nobody in particular.
func admit(t *testing.T, g *Gate, key string, open map[string]bool, now time.Time) Admission {
	t.Helper()
	a, err := g.Admit(key, "", func() (map[string]bool, error) { return open, nil }, now)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// Each admission counts from the cache's view as it is then: a view taken
// once and reused while others admit would miss the moves their newer
// views let stop counting on their own.
func TestGateListsUnderItsLock(t *testing.T) {
	g, _ := NewGate("rebalances", 2, 0, at(0))
	view := map[string]bool{}
	lists := 0
	list := func() (map[string]bool, error) { lists++; return view, nil }
	for _, k := range []string{"a", "b"} {
		if a, _ := g.Admit(k, "r1", list, at(0)); !a.Allowed {
			t.Fatalf("%s refused: %s", k, a.Reason)
		}
	}
	view = map[string]bool{"a": true, "b": true} // the cache caught up
	if a, _ := g.Admit("c", "r2", list, at(1)); a.Allowed {
		t.Fatal("must not: c admitted with a and b open")
	}
	if lists != 3 {
		t.Errorf("listed %d times for 3 admissions", lists)
	}
	if _, err := g.Admit("c", "r2", func() (map[string]bool, error) { return nil, errors.New("no index") }, at(1)); err == nil {
		t.Error("a failed list admitted or refused nothing without an error")
	}
}

// A key already open takes no second place; it is admitted at the cap.
func TestGateAdmitsAKeyAlreadyOpen(t *testing.T) {
	g, _ := NewGate("rebalances", 1, 0, at(0))
	if a := admit(t, g, "a", map[string]bool{"a": true}, at(0)); !a.Allowed {
		t.Fatalf("a, already open, refused: %s", a.Reason)
	}
	if a := admit(t, g, "b", map[string]bool{"a": true}, at(0)); a.Allowed {
		t.Fatal("must not: b admitted beside a under a cap of 1")
	}
}

// Forget takes back only the caller's own admission: another's admission
// of the same key since keeps counting.
func TestGateForgetsOnlyItsOwnAdmission(t *testing.T) {
	g, _ := NewGate("rebalances", 1, 0, at(0))
	admitFor := func(key, by string) Admission {
		a, _ := g.Admit(key, by, func() (map[string]bool, error) { return nil, nil }, at(0))
		return a
	}
	admitFor("a", "r1")
	g.Forget("a", "r1")
	if a := admitFor("a", "r2"); !a.Allowed {
		t.Fatal(a.Reason)
	}
	g.Forget("a", "r1") // r1 saw its own, older request made
	if a := admitFor("b", "r1"); a.Allowed {
		t.Fatal("must not: r2's admission of a was forgotten by r1")
	}
}

// Without a queue, held-back keys are not remembered.
func TestGateWithoutQueueRemembersNoWaiters(t *testing.T) {
	g, _ := NewGate("rebalances", 1, 0, at(0))
	g.WithoutQueue()
	admit(t, g, "a", nil, at(0))
	for _, k := range []string{"b", "c"} {
		admit(t, g, k, nil, at(0))
	}
	if len(g.waiting) != 0 || len(g.held) != 0 {
		t.Errorf("waiting %v, held %v", g.waiting, g.held)
	}
	if next := g.Release("a", at(1)); next != "" {
		t.Errorf("woke %q", next)
	}
}
