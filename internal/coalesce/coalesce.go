// Package coalesce keeps status writes to the ones that carry news.
//
// A member Deployment's status changes four or five times while its pods
// start (observedGeneration, replicas, updated, ready, available). Copying
// each change into the Work and then into the binding costs two status
// writes per change on the control plane, and on a busy control plane those
// writes are what everything else waits for. Health is what failover and
// users act on, so a change of health is written at once. Four helpers
// decide the rest:
//   - Writes: a change of the reflected figures alone is written at most
//     once per window per object, the last one always (the caller requeues
//     for Wait);
//   - Quiet: the first reports of an object that is still starting wait a
//     grace for news (Healthy, a failure);
//   - Recent: a write the informer cache has not caught up with yet is not
//     made again;
//   - Handoff: one controller leaves its write to another controller's
//     imminent write of the same object (a new object's Applied condition
//     goes with its first status report).
package coalesce

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultWindow is the shortest time between two status writes of one
// object when the second one has no news.
const DefaultWindow = 300 * time.Millisecond

// sweepAt is the number of remembered objects above which old entries are
// dropped on the next write.
const sweepAt = 1024

// Writes remembers when each object's status was last written. Use New; a
// nil *Writes spaces nothing out.
type Writes struct {
	window time.Duration
	clock  clock.PassiveClock

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// New returns Writes with the window (DefaultWindow when zero or less) and
// clock (the real one when nil).
func New(window time.Duration, c clock.PassiveClock) *Writes {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Writes{window: window, clock: orReal(c), last: map[types.NamespacedName]time.Time{}}
}

// Wait is how long a write without news to key must wait: zero when key's
// last write is at least a window ago (or unknown).
func (w *Writes) Wait(key types.NamespacedName) time.Duration {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.last[key]
	if !ok {
		return 0
	}
	if d := w.window - w.clock.Since(t); d > 0 {
		return d
	}
	return 0
}

// Wrote records a write of key now.
func (w *Writes) Wrote(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	sweep(w.last, now, w.window, func(t time.Time) time.Time { return t })
	w.last[key] = now
}

// sweep drops the entries of m at least age old (at says when an entry was
// made), once m holds sweepAt entries: objects that are deleted are never
// forgotten otherwise.
func sweep[K comparable, V any](m map[K]V, now time.Time, age time.Duration, at func(V) time.Time) {
	if len(m) < sweepAt {
		return
	}
	for k, v := range m {
		if now.Sub(at(v)) >= age {
			delete(m, k)
		}
	}
}

// orReal is c, or the real clock when c is nil.
func orReal(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

// Len is the number of objects remembered (for tests).
func (w *Writes) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.last)
}
