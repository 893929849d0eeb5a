package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Keys of tracked objects: their source and namespace/name.
const (
	SourceControlPlaneDeployment = "deployment"
	SourceBinding                = "binding"
	SourceCluster                = "cluster"
	sourceMember                 = "member/"
)

// Key is the tracker key of an object of source.
func Key(source, namespace, name string) string {
	return source + "/" + namespace + "/" + name
}

// MemberSource is the source of Deployments seen in member cluster.
func MemberSource(cluster string) string { return sourceMember + cluster }

// Appearance is when a mark appeared on an object.
type Appearance struct {
	Mark string
	At   time.Time
}

type history struct {
	current  map[string]bool
	appeared []Appearance
	// healthy says a Healthy mark is on the object now; gaps are the
	// intervals, after the first one appeared, in which none was.
	healthy bool
	gaps    []Gap
	// events counts the observations: one per watch event (a creation or
	// an update, each a write of the object).
	events int
}

// Tracker records, for every observed object, when each of its marks
// appeared (was present after an observation without it). The time is the
// clock's at the observation: call Observe from the watch event handler.
type Tracker struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	objects map[string]*history
	changed chan struct{}
}

// NewTracker returns an empty tracker reading time from clk.
func NewTracker(clk clock.PassiveClock) *Tracker {
	return &Tracker{clock: clk, objects: map[string]*history{}, changed: make(chan struct{})}
}

// Observe records the marks object key has now.
func (t *Tracker) Observe(key string, marks []string) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objects[key]
	if h == nil {
		h = &history{}
		t.objects[key] = h
	}
	h.events++
	next := make(map[string]bool, len(marks))
	changed := len(marks) != len(h.current)
	for _, m := range marks {
		next[m] = true
		if !h.current[m] {
			h.appeared = append(h.appeared, Appearance{Mark: m, At: now})
			changed = true
		}
	}
	h.current = next
	h.noteHealth(now)
	if changed {
		t.notifyLocked()
	}
}

// Gap is an interval in which an object that had a Healthy mark had none,
// nor a KeptHealthy one: a binding without a Healthy copy anywhere. To is
// zero while it lasts.
type Gap struct {
	From, To time.Time
}

// Duration is the gap's length, up to now for one that lasts.
func (g Gap) Duration(now time.Time) time.Duration {
	if g.To.IsZero() {
		return now.Sub(g.From)
	}
	return g.To.Sub(g.From)
}

// noteHealth opens a gap when the last Healthy or KeptHealthy mark goes and
// closes it when one comes back.
func (h *history) noteHealth(now time.Time) {
	healthy := false
	for m := range h.current {
		if HealthyCluster(m) != "" || clusterOf(m, markKept) != "" {
			healthy = true
			break
		}
	}
	switch {
	case healthy && !h.healthy && len(h.gaps) > 0 && h.gaps[len(h.gaps)-1].To.IsZero():
		h.gaps[len(h.gaps)-1].To = now
	case !healthy && h.healthy:
		h.gaps = append(h.gaps, Gap{From: now})
	}
	h.healthy = healthy
}

// Gaps returns the gaps of key (see Gap) that last at or after after.
func (t *Tracker) Gaps(key string, after time.Time) []Gap {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objects[key]
	if h == nil {
		return nil
	}
	var out []Gap
	for _, g := range h.gaps {
		if g.To.IsZero() || !g.To.Before(after) {
			out = append(out, g)
		}
	}
	return out
}

// Gone records that object key was deleted: it has no marks any more.
func (t *Tracker) Gone(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.objects[key]; h != nil && len(h.current) > 0 {
		h.current = nil
		t.notifyLocked()
	}
}

func (t *Tracker) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (t *Tracker) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// First returns the first appearance, at or after after, of a mark of key
// that match accepts.
func (t *Tracker) First(key string, after time.Time, match func(mark string) bool) (Appearance, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objects[key]
	if h == nil {
		return Appearance{}, false
	}
	for _, a := range h.appeared {
		if !a.At.Before(after) && match(a.Mark) {
			return a, true
		}
	}
	return Appearance{}, false
}

// FirstMark returns when mark first appeared on key at or after after.
func (t *Tracker) FirstMark(key, mark string, after time.Time) (time.Time, bool) {
	a, ok := t.First(key, after, func(m string) bool { return m == mark })
	return a.At, ok
}

// Events returns how many times key was observed (see Observe).
func (t *Tracker) Events(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.objects[key]; h != nil {
		return h.events
	}
	return 0
}

// Has reports whether key has mark now.
func (t *Tracker) Has(key, mark string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objects[key]
	return h != nil && h.current[mark]
}

// Marks returns the marks key has now, sorted.
func (t *Tracker) Marks(key string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objects[key]
	if h == nil {
		return nil
	}
	out := make([]string, 0, len(h.current))
	for m := range h.current {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Is returns is(key) -> bool for mark, handy for counting.
func (t *Tracker) Is(mark string) func(key string) bool {
	return func(key string) bool { return t.Has(key, mark) }
}

// waitForSpacing is the least time between two checks of a WaitFor
// condition. A condition over thousands of objects checked at every one
// of thousands of changes would take the bench a large share of the CPU
// it measures; the figures come from the watch events' own timestamps, so
// checking less often changes none of them, only when the wait ends.
const waitForSpacing = 200 * time.Millisecond

// WaitFor waits until cond holds, re-checking at changes (at most every
// waitForSpacing) and every second, for conditions on time. Every 10 s it
// calls progress with cond's description of what it sees. It fails after
// timeout.
func (t *Tracker) WaitFor(ctx context.Context, timeout time.Duration, what string, progress func(string), cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastReport := time.Now()
	var lastCheck time.Time
	seen := "nothing yet"
	for {
		if wait := waitForSpacing - time.Since(lastCheck); wait > 0 {
			pause := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				pause.Stop()
				return fmt.Errorf("waiting for %s: %w (last seen: %s)", what, ctx.Err(), seen)
			case <-deadline.C:
				pause.Stop()
				return fmt.Errorf("timed out after %s waiting for %s (last seen: %s)", timeout, what, seen)
			case <-pause.C:
			}
		}
		lastCheck = time.Now()
		changed := t.Changed()
		var ok bool
		ok, seen = cond()
		if ok {
			return nil
		}
		if progress != nil && time.Since(lastReport) >= 10*time.Second {
			progress(fmt.Sprintf("waiting for %s: %s", what, seen))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last seen: %s)", what, ctx.Err(), seen)
		case <-deadline.C:
			return fmt.Errorf("timed out after %s waiting for %s (last seen: %s)", timeout, what, seen)
		case <-changed:
		case <-tick.C:
		}
	}
}

// BindingKey is the tracker key of the binding of Deployment namespace/name.
func BindingKey(namespace, name string) string {
	return Key(SourceBinding, namespace, "Deployment/"+name)
}
