package coalesce

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestWrites(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	w := New(300*time.Millisecond, clk)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}

	if got := w.Wait(a); got != 0 {
		t.Fatalf("never written: Wait = %v, want 0", got)
	}
	w.Wrote(a)
	clk.SetTime(clk.Now().Add(100 * time.Millisecond))
	if got := w.Wait(a); got != 200*time.Millisecond {
		t.Errorf("100ms after a write: Wait = %v, want 200ms", got)
	}
	if got := w.Wait(b); got != 0 {
		t.Errorf("another object: Wait = %v, want 0", got)
	}
	clk.SetTime(clk.Now().Add(200 * time.Millisecond))
	if got := w.Wait(a); got != 0 {
		t.Errorf("a window after the write: Wait = %v, want 0", got)
	}
}

func TestWritesForgetsOldEntries(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	w := New(time.Second, clk)
	for i := 0; i < sweepAt; i++ {
		w.Wrote(types.NamespacedName{Name: fmt.Sprint(i)})
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	w.Wrote(types.NamespacedName{Name: "new"})
	if got := w.Len(); got != 1 {
		t.Errorf("after a sweep %d objects are remembered, want 1", got)
	}
}

func TestNewDefaults(t *testing.T) {
	w := New(0, nil)
	if w.window != DefaultWindow || w.clock == nil {
		t.Errorf("New(0, nil) = window %v clock %v", w.window, w.clock)
	}
}

func TestNilWritesSpacesNothingOut(t *testing.T) {
	var w *Writes
	k := types.NamespacedName{Name: "a"}
	w.Wrote(k)
	if got := w.Wait(k); got != 0 {
		t.Errorf("nil Writes: Wait = %v, want 0", got)
	}
}
