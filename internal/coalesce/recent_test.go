package coalesce

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestRecent(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecent(time.Second, clk)
	if r.Has("uid", "gen 2") {
		t.Error("Has before anything was written")
	}
	r.Wrote("uid", "gen 2")
	if !r.Has("uid", "gen 2") {
		t.Error("the write is not remembered")
	}
	if r.Has("uid", "gen 3") || r.Has("other", "gen 2") {
		t.Error("another value or key is taken for the write")
	}
	r.Wrote("uid", "gen 3")
	if r.Has("uid", "gen 2") {
		t.Error("an older write is still taken for the last one")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if r.Has("uid", "gen 3") {
		t.Error("the write is remembered after the window")
	}
}

func TestRecentForgetsOldEntries(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecent(time.Second, clk)
	for i := range sweepAt {
		r.Wrote(fmt.Sprint(i), "v")
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	r.Wrote("fresh", "v")
	r.mu.Lock()
	n := len(r.wrote)
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("%d entries after the sweep, want 1", n)
	}
}

func TestNilRecentRemembersNothing(t *testing.T) {
	var r *Recent
	r.Wrote("uid", "v")
	if r.Has("uid", "v") {
		t.Error("a nil Recent remembered a write")
	}
}
