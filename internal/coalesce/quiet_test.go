package coalesce

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestQuiet(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	q := NewQuiet(time.Second, clk)
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}

	if got := q.Hold(a); got != time.Second {
		t.Fatalf("first Hold = %v, want the whole grace", got)
	}
	clk.SetTime(clk.Now().Add(400 * time.Millisecond))
	if got := q.Hold(a); got != 600*time.Millisecond {
		t.Errorf("Hold 400ms later = %v, want 600ms (counted from the first Hold)", got)
	}
	if got := q.Hold(b); got != time.Second {
		t.Errorf("another object's first Hold = %v, want the whole grace", got)
	}
	clk.SetTime(clk.Now().Add(600 * time.Millisecond))
	if got := q.Hold(a); got != 0 {
		t.Errorf("Hold after the grace = %v, want 0", got)
	}
	if got := q.Hold(a); got != 0 {
		t.Errorf("Hold after the grace, again = %v, want 0 (the wait does not restart by itself)", got)
	}
	q.Done(a)
	if q.Holding(a) {
		t.Error("a is still held after Done")
	}
	if got := q.Hold(a); got != time.Second {
		t.Errorf("Hold after Done = %v, want a new grace", got)
	}
}

func TestQuietForgetsOldEntries(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	q := NewQuiet(time.Second, clk)
	for i := range sweepAt {
		q.Hold(types.NamespacedName{Name: string(rune('a' + i%26)), Namespace: string(rune(i))})
	}
	clk.SetTime(clk.Now().Add(3 * time.Second))
	fresh := types.NamespacedName{Name: "fresh"}
	q.Hold(fresh)
	q.mu.Lock()
	n := len(q.since)
	q.mu.Unlock()
	if n != 1 || !q.Holding(fresh) {
		t.Errorf("%d entries after the sweep, want only the fresh one", n)
	}
}

func TestNilQuietHoldsNothing(t *testing.T) {
	var q *Quiet
	if got := q.Hold(types.NamespacedName{Name: "a"}); got != 0 {
		t.Errorf("nil Quiet Hold = %v, want 0", got)
	}
	q.Done(types.NamespacedName{Name: "a"})
}
