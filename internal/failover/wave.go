package failover

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

const (
	// DefaultGracefulEvictionHold is the default of
	// --graceful-eviction-hold.
	DefaultGracefulEvictionHold = time.Minute
	// waveRetry is how often a held binding is looked at again, at least.
	waveRetry = 5 * time.Second
	// waveRetryPerHeld stretches waveRetry with the number of bindings
	// held, so that thousands of held bindings do not keep the
	// controller's workers busy looking at them again.
	waveRetryPerHeld = 5 * time.Millisecond
	// waveHoldPerUnscheduled lengthens the hold by this much per other
	// failover still waiting for the scheduler: about what placing one
	// takes when thousands queue on a busy control plane (ten a second).
	waveHoldPerUnscheduled = 100 * time.Millisecond
	// waveHoldCap bounds a binding's hold, in units of maxHold, however
	// many others still wait for the scheduler.
	waveHoldCap = 10
)

// Wave is what the graceful-eviction controller knows of the failovers in
// flight: bindings with an eviction task whose replacement is not Healthy
// yet (see inFlight).
//
// While other workloads still wait for their replacement, the controller
// holds back a binding's clean-up: the failover history, the
// FailoverTargetAvailable condition, closing a Gracefully task and,
// through that, the deletion of the old copy and the status writes that
// follow it. None of it lets a workload run sooner, and in a mass failover
// it is about half of the control plane's writes, which otherwise compete
// with placing the replacements. Writes that do matter are never held (see
// holdable).
//
// How long: each binding is held at most maxHold, and a failover in flight
// for longer than maxHold no longer holds others back, so a workload that
// cannot be placed, or whose replacement never turns Healthy, delays
// nobody's clean-up for long. While other failovers still wait for the
// scheduler's answer the wave is still being placed: both bounds grow by
// waveHoldPerUnscheduled for each of them, up to waveHoldCap × maxHold.
// Thousands of evictions take the scheduler minutes, and clean-up let go
// after maxHold would compete with the placements still to come; a few
// waiting, or one the scheduler never answers, add next to nothing.
//
// A Wave is shared by the controller's workers. A nil *Wave holds nothing.
type Wave struct {
	maxHold time.Duration

	mu sync.Mutex
	// inFlight: binding key → its failover in flight.
	inFlight map[string]flight
	// unscheduled counts the flights waiting for the scheduler.
	unscheduled int
	// held: binding key → when its clean-up was first held.
	held map[string]time.Time
}

// flight is one failover in flight.
type flight struct {
	// since is when it was first seen in flight.
	since time.Time
	// unscheduled: the scheduler has yet to answer its eviction.
	unscheduled bool
}

// NewWave returns a Wave holding each binding's clean-up at most maxHold
// (longer while others wait for the scheduler); nil (nothing is held) when
// maxHold is not positive.
func NewWave(maxHold time.Duration) *Wave {
	if maxHold <= 0 {
		return nil
	}
	return &Wave{
		maxHold:  maxHold,
		inFlight: map[string]flight{},
		held:     map[string]time.Time{},
	}
}

// Observe records whether the binding under key is in flight, and whether
// the scheduler has yet to answer its eviction.
func (w *Wave) Observe(key string, inFlight, unscheduled bool, now time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !inFlight {
		w.drop(key)
		return
	}
	f, ok := w.inFlight[key]
	if !ok {
		f.since = now
	}
	if f.unscheduled != unscheduled {
		if unscheduled {
			w.unscheduled++
		} else {
			w.unscheduled--
		}
	}
	f.unscheduled = unscheduled
	w.inFlight[key] = f
}

// drop forgets key's flight. Called with mu held.
func (w *Wave) drop(key string) {
	if f, ok := w.inFlight[key]; ok {
		if f.unscheduled {
			w.unscheduled--
		}
		delete(w.inFlight, key)
	}
}

// Forget drops everything known of the binding under key (it is gone).
func (w *Wave) Forget(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(key)
	delete(w.held, key)
}

// Hold reports whether the clean-up of the binding under key waits, and
// when to look again: while another binding has been in flight for less
// than the bound, until key has been held for the bound. The bound is
// maxHold, lengthened while others wait for the scheduler (limit).
func (w *Wave) Hold(key string, now time.Time) (time.Duration, bool) {
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	since, ok := w.held[key]
	if !ok {
		since = now
	}
	limit := w.limit(key)
	left := since.Add(limit).Sub(now)
	if left <= 0 || !w.othersInFlight(key, now, limit) {
		return 0, false
	}
	w.held[key] = since
	retry := max(waveRetry, time.Duration(len(w.held))*waveRetryPerHeld)
	return min(left, retry), true
}

// limit is the bound of holds for key: maxHold plus
// waveHoldPerUnscheduled for each other failover waiting for the
// scheduler, at most waveHoldCap × maxHold. Called with mu held.
func (w *Wave) limit(key string) time.Duration {
	waiting := w.unscheduled
	if w.inFlight[key].unscheduled {
		waiting--
	}
	return min(w.maxHold+time.Duration(waiting)*waveHoldPerUnscheduled, waveHoldCap*w.maxHold)
}

// othersInFlight reports whether a binding other than key has been in
// flight for less than limit. Called with mu held.
func (w *Wave) othersInFlight(key string, now time.Time, limit time.Duration) bool {
	for k, f := range w.inFlight {
		if k != key && now.Sub(f.since) < limit {
			return true
		}
	}
	return false
}

// Release ends the hold of the binding under key: it has nothing left to
// write. A later clean-up may be held afresh.
func (w *Wave) Release(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.held, key)
}

// inFlight reports whether the binding's failover is still on its way: an
// eviction task waits for the replacement (Directly tasks wait for the old
// copy instead, which no hold speeds up), a target exists or the scheduler
// has yet to answer (see schedulerSaidNo), and the replacement is not
// Healthy yet. A move by choice (a Rebalance or a Failback) is no
// failover: its old copy serves until the new one is Healthy, so nobody's
// clean-up waits for it, and holding back one failback's clean-up for
// another only keeps both copies running and the failback cap full.
func inFlight(o observed) bool {
	waits := false
	for _, t := range o.spec.GracefulEvictionTasks {
		if t.Reason == workv1alpha2.EvictionReasonRebalance || t.Reason == workv1alpha2.EvictionReasonFailback {
			continue
		}
		if policyv1alpha1.NormalizePurgeMode(t.PurgeMode) != policyv1alpha1.PurgeModeDirectly {
			waits = true
			break
		}
	}
	if !waits {
		return false
	}
	if !scheduled(o.generation, o.status) {
		return !schedulerSaidNo(o.generation, o.status)
	}
	return len(o.spec.Clusters) > 0 && !placementHealthy(o.spec, o.status)
}

// schedulerSaidNo reports whether the scheduler answered this generation
// of the binding with no cluster: nothing fits, or nothing has room. The
// scheduler leaves schedulerObservedGeneration behind then, but no
// replacement is being placed: until a cluster changes, the binding is no
// part of a wave, and holding others' clean-up for it only delays them.
// A scheduler error is no answer; the scheduler tries again.
func schedulerSaidNo(generation int64, status *workv1alpha2.ResourceBindingStatus) bool {
	c := meta.FindStatusCondition(status.Conditions, workv1alpha2.Scheduled)
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration >= generation &&
		(c.Reason == workv1alpha2.BindingReasonNoClusterFit || c.Reason == workv1alpha2.BindingReasonUnschedulable)
}

// holdable reports whether every write the plan and the condition ask for
// can wait for the failovers in flight. Not when a task gets its creation
// time (its grace period starts then), a Directly task is closed (the new
// copy waits for that), or the binding is about to say for the first time
// that no cluster can take the workload (a user must learn that at once).
func holdable(plan taskPlan, cond *metav1.Condition, wasNoTarget bool) bool {
	if plan.stamped {
		return false
	}
	for _, rm := range plan.removed {
		if policyv1alpha1.NormalizePurgeMode(rm.task.PurgeMode) == policyv1alpha1.PurgeModeDirectly {
			return false
		}
	}
	return !(cond != nil && cond.Status == metav1.ConditionFalse && !wasNoTarget)
}
