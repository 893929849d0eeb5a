package coalesce

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Handoff lets one controller leave a status write to another controller
// of the same process that is about to write the same object's status
// anyway, so that one write says what both had to say.
//
// The execution controller creates a Work's objects in a member and would
// then write the Work's Applied condition; a moment later the work status
// controller writes the objects' status and health. Nothing acts on a new
// object's "applied" before its health arrives, so the execution
// controller offers its conditions instead, and the work status controller
// takes them into its next write of the Work: one status write of the Work
// instead of two, and the execution worker moves on to the next Work
// without waiting for a write. An offer nobody takes within the wait is
// written by the controller that made it.
//
// Use NewHandoff; a nil *Handoff holds nothing back.
type Handoff[T any] struct {
	wait   time.Duration
	echoes *Recent
	clock  clock.PassiveClock

	mu       sync.Mutex
	offers   map[string]offer[T]
	reported map[string]time.Time
}

type offer[T any] struct {
	value T
	said  string
	until time.Time
}

// NewHandoff returns a Handoff whose offers wait up to wait for a taker.
// echoes is the offering controller's Recent: a delivered offer is
// recorded there as if that controller had written it (nil: not recorded).
// clock: the real one when nil.
func NewHandoff[T any](wait time.Duration, echoes *Recent, c clock.PassiveClock) *Handoff[T] {
	return &Handoff[T]{wait: wait, echoes: echoes, clock: orReal(c),
		offers: map[string]offer[T]{}, reported: map[string]time.Time{}}
}

// Offer leaves value, fingerprinted by said, for the taker's next write of
// key (usually the object's UID). start says that a new offer may be made
// now: the caller has just created something the taker is about to report
// on. An offer already pending is updated whatever start says.
//
// It returns how long the caller should wait before writing value itself;
// zero means write now, and then no offer is pending for key. news is false
// when said is what key's pending offer already said, so that the caller
// announces a change once.
func (h *Handoff[T]) Offer(key string, value T, said string, start bool) (wait time.Duration, news bool) {
	if h == nil || h.wait <= 0 {
		return 0, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	o, pending := h.offers[key]
	news = !pending || o.said != said
	if !pending {
		if !start {
			return 0, news
		}
		if at, ok := h.reported[key]; ok && now.Sub(at) < h.wait {
			// The taker has reported already, before this offer: its
			// next write may be far away.
			return 0, news
		}
		sweep(h.offers, now, 2*h.wait, func(o offer[T]) time.Time { return o.until })
		o.until = now.Add(h.wait)
	}
	if !now.Before(o.until) {
		delete(h.offers, key)
		return 0, news
	}
	o.value, o.said = value, said
	h.offers[key] = o
	return o.until.Sub(now), news
}

// Withdraw drops key's pending offer: the caller writes itself.
func (h *Handoff[T]) Withdraw(key string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.offers, key)
}

// Take is called by the taker just before it writes key's status. It
// removes key's pending offer and returns it for the same write. Without
// one it notes that key was reported on now, so that an offer made right
// after (its controller a moment behind the taker) is not left waiting for
// a report that has come already.
func (h *Handoff[T]) Take(key string) (value T, said string, ok bool) {
	if h == nil {
		return value, "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	o, ok := h.offers[key]
	if !ok {
		sweep(h.reported, now, h.wait, func(t time.Time) time.Time { return t })
		h.reported[key] = now
		return value, "", false
	}
	delete(h.offers, key)
	return o.value, o.said, true
}

// Delivered records that the taker wrote the offer it took for key, in the
// offering controller's echoes.
func (h *Handoff[T]) Delivered(key, said string) {
	if h == nil {
		return
	}
	h.echoes.Wrote(key, said)
}

// Pending is the number of offers waiting (for tests).
func (h *Handoff[T]) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.offers)
}
