// Package fleetcap bounds how many workloads move at once over the whole
// fleet: a Gate admits a move while fewer than a cap are open, counting
// the open ones from the bindings (as the cache shows them) and the ones
// this process just started (which the cache may not show yet). Failback
// and the WorkloadRebalancer each have one.
package fleetcap

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// CapRetry is how soon a move held back by the fleet-wide cap looks again
// at the latest. A caller that learns of a move ending wakes the next one
// sooner (Release); the retry covers the others (a move another replica
// started, a binding deleted while it moved).
const CapRetry = 30 * time.Second

// recentTTL is how long a move this process started counts as open
// without the cache showing it yet (the write and the watch event race the
// next decision).
const recentTTL = 30 * time.Second

// Gate admits moves fleet-wide: at most max open at once, started at most
// a rate per second. One gate serves every controller that starts such
// moves (both binding kinds). What it remembers only bridges the cache's
// lag and paces the rate: a restart forgets nothing that matters for
// safety, because the open moves are counted from the bindings.
type Gate struct {
	// what names the moves in reasons ("failbacks").
	what    string
	max     int
	limiter *rate.Limiter

	mu     sync.Mutex
	recent map[string]admitted
	// queue: the keys held back are remembered, to be woken in turn
	// (Release). A caller that wakes its own waiters turns it off.
	queue bool
	// waiting are the keys held back by the cap, in the order they were
	// first held back, to be woken as places free.
	waiting []string
	held    map[string]bool
	// closed are moves this process ended that the cache may still
	// show open; they no longer count.
	closed map[string]time.Time
}

// NewGate returns a gate for at most max open moves (0 starts none)
// started at perSecond (0: no rate limit; the burst is one second of
// moves, at least one); what names the moves in reasons ("failbacks").
func NewGate(what string, max int, perSecond float64, now time.Time) (*Gate, error) {
	if max < 0 || perSecond < 0 {
		return nil, fmt.Errorf("limits of %s must not be negative (max concurrent %d, rate %g)", what, max, perSecond)
	}
	limit, burst := rate.Inf, 1
	if perSecond > 0 {
		limit, burst = rate.Limit(perSecond), max1(int(perSecond))
	}
	l := rate.NewLimiter(limit, burst)
	// Start full at the injected clock's time.
	l.SetLimitAt(now, limit)
	return &Gate{what: what, max: max, limiter: l, queue: true, recent: map[string]admitted{}, held: map[string]bool{}, closed: map[string]time.Time{}}, nil
}

// WithoutQueue makes the gate remember no held-back keys: its caller
// wakes them by other means, and Release returns "".
func (g *Gate) WithoutQueue() *Gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = false
	return g
}

// admitted is a move this process started that the cache may not show
// yet: when, and for whom (see Forget).
type admitted struct {
	at time.Time
	by string
}

// Lister returns the keys of the bindings whose move is open, as the
// cache shows them now.
type Lister func() (map[string]bool, error)

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// Admission is the gate's answer.
type Admission struct {
	Allowed bool
	// RetryAfter is when to ask again when not allowed.
	RetryAfter time.Duration
	// Reason says why not, for logs.
	Reason string
}

// Admit decides whether binding key may start a move now, for by (who
// asks; see Forget). list gives the open moves as the cache shows them; it
// is called under the gate's lock, so that every admission counts from a
// view at least as new as the one that let an earlier admission stop
// counting on its own. A key already open is admitted without taking a
// second place. An admitted move counts as open at once.
func (g *Gate) Admit(key, by string, list Lister, now time.Time) (Admission, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	open, err := list()
	if err != nil {
		return Admission{}, err
	}
	if open[key] {
		if _, done := g.closed[key]; !done {
			g.unhold(key)
			return Admission{Allowed: true}, nil
		}
	}
	n := 0
	for k := range open {
		if _, done := g.closed[k]; !done {
			n++
		}
	}
	for k, t := range g.closed {
		if !open[k] || now.Sub(t) > recentTTL {
			delete(g.closed, k) // the cache has caught up, or it never will
		}
	}
	for k, a := range g.recent {
		switch {
		case open[k] || now.Sub(a.at) > recentTTL:
			delete(g.recent, k) // the cache has caught up, or it never will
		default:
			n++
		}
	}
	if n >= g.max {
		if g.queue && !g.held[key] {
			g.held[key] = true
			g.waiting = append(g.waiting, key)
		}
		return Admission{RetryAfter: CapRetry, Reason: fmt.Sprintf("%s open: %d, at most %d", g.what, n, g.max)}, nil
	}
	r := g.limiter.ReserveN(now, 1)
	if !r.OK() {
		return Admission{RetryAfter: CapRetry, Reason: fmt.Sprintf("the rate of %s admits none", g.what)}, nil
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Admission{RetryAfter: d, Reason: fmt.Sprintf("the rate of %s is reached", g.what)}, nil
	}
	g.recent[key] = admitted{at: now, by: by}
	delete(g.closed, key)
	g.unhold(key)
	return Admission{Allowed: true}, nil
}

// Forget takes back by's admission of key: its move was not written, or
// by saw it end before the cache showed it open. An admission of the same
// key for someone else since stays.
func (g *Gate) Forget(key, by string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a, ok := g.recent[key]; ok && a.by == by {
		delete(g.recent, key)
	}
}

// Release frees the place of the move of key, which ended at now (also
// while the cache still shows it open), and returns the key held back the
// longest by the cap, to wake (or "" when none waits). The woken move
// still goes through Admit.
func (g *Gate) Release(key string, now time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.recent, key)
	g.closed[key] = now
	g.unhold(key)
	if len(g.waiting) == 0 {
		return ""
	}
	next := g.waiting[0]
	g.waiting = g.waiting[1:]
	delete(g.held, next)
	return next
}

// Drop forgets key as held back: its binding is gone, or no longer wants
// to move.
func (g *Gate) Drop(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unhold(key)
}

// unhold removes key from the held-back queue. Called with mu held.
func (g *Gate) unhold(key string) {
	if !g.held[key] {
		return
	}
	delete(g.held, key)
	g.waiting = slices.DeleteFunc(g.waiting, func(k string) bool { return k == key })
}
