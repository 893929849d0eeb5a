package coalesce

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultEchoWindow is how long Recent remembers a write: far longer than
// an informer normally lags behind the API server, far shorter than
// anything a user would notice.
const DefaultEchoWindow = 5 * time.Second

// Recent remembers what this process wrote lately, per object, so that a
// reconcile that reads a cache not yet caught up with that write does not
// make it again. A controller's own write comes back as a watch event and
// often runs the reconcile again before the cache holds the write's
// result; the second write would repeat the first, or lose an
// optimistic-concurrency race with it, and either way cost the API server
// a write. Use it only for fields the caller alone writes (or another
// controller writes for it, see Handoff.Delivered).
type Recent struct {
	window time.Duration
	clock  clock.PassiveClock

	mu    sync.Mutex
	wrote map[string]written
}

type written struct {
	value string
	at    time.Time
}

// NewRecent returns a Recent that remembers writes for window
// (DefaultEchoWindow when zero or less; clock: the real one when nil).
func NewRecent(window time.Duration, c clock.PassiveClock) *Recent {
	if window <= 0 {
		window = DefaultEchoWindow
	}
	return &Recent{window: window, clock: orReal(c), wrote: map[string]written{}}
}

// Wrote records that value (a fingerprint of what was written) was written
// for key, usually the object's UID.
func (r *Recent) Wrote(key, value string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	sweep(r.wrote, now, r.window, func(w written) time.Time { return w.at })
	r.wrote[key] = written{value: value, at: now}
}

// Has reports whether value is the last thing written for key, within the
// window.
func (r *Recent) Has(key, value string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.wrote[key]
	return ok && w.value == value && r.clock.Since(w.at) < r.window
}
