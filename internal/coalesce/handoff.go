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
// without waiting for a write. An offer that is not delivered within the
// wait is written by the controller that made it.
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
	// taken: the taker is writing it; it stays, for its maker to see,
	// until it is delivered or its wait ends.
	taken bool
}

// NewHandoff returns a Handoff whose offers wait up to wait for a taker.
// echoes is the offering controller's Recent: a delivered offer is
// recorded there as if that controller had written it (nil: not recorded).
// clock: the real one when nil.
func NewHandoff[T any](wait time.Duration, echoes *Recent, c clock.PassiveClock) *Handoff[T] {
	return &Handoff[T]{wait: wait, echoes: echoes, clock: orReal(c),
		offers: map[string]offer[T]{}, reported: map[string]time.Time{}}
}

// Echoes is the Recent delivered offers are recorded in.
func (h *Handoff[T]) Echoes() *Recent {
	if h == nil {
		return nil
	}
	return h.echoes
}

// Offer leaves value, fingerprinted by said, for the taker's next write of
// key (usually the object's UID), and returns how long the caller should
// wait before writing value itself. Zero means write now; no offer is then
// pending for key.
//
// start says that a new offer may be made: the caller has just created
// something the taker is about to report on. An offer pending with the
// same said keeps its deadline whatever start says. One that says
// something else is replaced when start is set and the taker has not taken
// it yet; otherwise (an update of what was offered, or news while the
// taker writes the old value) the caller writes now.
func (h *Handoff[T]) Offer(key string, value T, said string, start bool) time.Duration {
	if h == nil || h.wait <= 0 {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	o, pending := h.offers[key]
	switch {
	case pending && !now.Before(o.until):
		delete(h.offers, key)
		return 0
	case pending && o.said == said:
		return o.until.Sub(now)
	case pending && (o.taken || !start):
		delete(h.offers, key)
		return 0
	case pending:
		o.value, o.said = value, said
		h.offers[key] = o
		return o.until.Sub(now)
	case !start:
		return 0
	}
	if at, ok := h.reported[key]; ok && now.Sub(at) < h.wait {
		// The taker has reported already, before this offer: its next
		// write may be far away.
		return 0
	}
	sweep(h.offers, now, h.wait, func(o offer[T]) time.Time { return o.until })
	h.offers[key] = offer[T]{value: value, said: said, until: now.Add(h.wait)}
	return h.wait
}

// Peek returns key's offer, taken or not, until it is delivered, withdrawn
// or replaced: what the maker has said and may not find written yet.
func (h *Handoff[T]) Peek(key string) (value T, ok bool) {
	if h == nil {
		return value, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.offers[key]
	return o.value, ok
}

// Withdraw drops key's offer and returns it: the caller writes itself.
func (h *Handoff[T]) Withdraw(key string) (value T, ok bool) {
	if h == nil {
		return value, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.offers[key]
	delete(h.offers, key)
	return o.value, ok
}

// Take is called by the taker just before it writes key's status. It
// returns key's offer for the same write, unless it was taken already or
// its wait is over. Without an offer it notes that key was reported on
// now, so that an offer made right after (its controller a moment behind
// the taker) is not left waiting for a report that has come already.
func (h *Handoff[T]) Take(key string) (value T, said string, ok bool) {
	if h == nil {
		return value, "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	o, pending := h.offers[key]
	if !pending {
		sweep(h.reported, now, h.wait, func(t time.Time) time.Time { return t })
		h.reported[key] = now
		return value, "", false
	}
	if o.taken || !now.Before(o.until) {
		return value, "", false
	}
	o.taken = true
	h.offers[key] = o
	return o.value, o.said, true
}

// Delivered records that the taker wrote the offer it took for key: the
// offer is done, and the write is remembered in the maker's echoes. A
// taker whose write failed does not call it; the maker writes when the
// wait ends.
func (h *Handoff[T]) Delivered(key, said string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if o, ok := h.offers[key]; ok && o.said == said {
		delete(h.offers, key)
	}
	h.mu.Unlock()
	h.echoes.Wrote(key, said)
}

// Pending is the number of offers not delivered or withdrawn (for tests).
func (h *Handoff[T]) Pending() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.offers)
}
