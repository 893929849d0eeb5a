package coalesce

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Quiet holds back reports that would only say "still starting".
//
// A new workload's status passes through states nobody acts on (created,
// not yet observed, replicas starting) on its way to Healthy, usually
// within a second. Each one written costs a status write of the Work and
// then of the binding, on the busiest writes the control plane has. A
// caller that sees such a report asks Hold how much longer it may wait,
// counted from the first time it asked for that object; a report with news
// (Healthy, a failure) is written at once and ends the wait with Done.
type Quiet struct {
	grace time.Duration
	clock clock.PassiveClock

	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// NewQuiet returns a Quiet that holds reports for up to grace (clock: the
// real one when nil).
func NewQuiet(grace time.Duration, c clock.PassiveClock) *Quiet {
	return &Quiet{grace: grace, clock: orReal(c), since: map[types.NamespacedName]time.Time{}}
}

// Hold returns how much longer key's starting report may wait: the grace,
// counted from the first Hold of key since its last Done; zero once it has
// passed.
func (q *Quiet) Hold(key types.NamespacedName) time.Duration {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	since, ok := q.since[key]
	if !ok {
		// Objects deleted while held are never Done: drop the ones whose
		// grace is long over.
		sweep(q.since, now, 2*q.grace, func(t time.Time) time.Time { return t })
		since = now
		q.since[key] = now
	}
	return max(since.Add(q.grace).Sub(now), 0)
}

// Done ends key's wait: its report was written, or has news.
func (q *Quiet) Done(key types.NamespacedName) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.since, key)
}

// Holding reports whether key is being held (for tests).
func (q *Quiet) Holding(key types.NamespacedName) bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.since[key]
	return ok
}
