// Package queue gives controllers controller-runtime's priority queue with
// the usual workqueue metrics and no timer of its own.
//
// controller-runtime's queue keeps two metrics of work in progress
// (workqueue_unfinished_work_seconds and
// workqueue_longest_running_processor_seconds) fresh by waking every
// 500 ms, in every queue, whether it holds anything or not. With thirty
// controllers that is sixty wakeups a second of an otherwise idle process,
// and on a small machine each one costs more than the work it does: about
// half of the idle controller manager's CPU on two cores. Here the queue runs unnamed (so
// with neither metrics nor that timer) inside a wrapper that records the
// same metrics as work arrives and leaves, and computes the two gauges and
// the depth when they are scraped.
package queue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue is a controller-runtime priority queue that records the workqueue
// metrics of its name itself. Use New.
type Queue[T comparable] struct {
	inner       priorityqueue.PriorityQueue[T]
	rateLimiter workqueue.TypedRateLimiter[T]
	clock       clock.PassiveClock
	metrics     *series
	registry    *Registry

	mu sync.Mutex
	// pending holds what was added and not handed out yet: the earliest
	// time each item is (or was) due and its highest priority.
	pending map[T]due
	// processing holds when each handed-out item, not yet Done, was
	// handed out.
	processing map[T]time.Time
}

type due struct {
	at       time.Time
	priority int
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = &Queue[reconcile.Request]{}

// New is controller-runtime's NewQueue for a controller: a priority queue
// using rateLimiter whose metrics are those of a queue named
// controllerName, registered with controller-runtime's metrics registry.
func New(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return Typed(controllerName, rateLimiter)
}

// Typed is New for a controller whose requests are of type T.
func Typed[T comparable](controllerName string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return newWithClock(controllerName, rateLimiter, clock.RealClock{}, defaultRegistry())
}

// newWithClock is New with the clock the metrics are timed with and the
// set of queues they are collected from.
func newWithClock[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], c clock.PassiveClock, reg *Registry) *Queue[T] {
	if rateLimiter == nil {
		rateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second)
	}
	q := &Queue[T]{
		inner: priorityqueue.New("", func(o *priorityqueue.Opts[T]) {
			o.RateLimiter = rateLimiter
		}),
		rateLimiter: rateLimiter,
		clock:       c,
		metrics:     newSeries(name),
		registry:    reg,
		pending:     map[T]due{},
		processing:  map[T]time.Time{},
	}
	reg.add(q)
	return q
}

// AddWithOpts adds items as the priority queue does, the rate limiter
// asked here, so that the time each item is due is known.
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	if q.inner.ShuttingDown() {
		return
	}
	now := q.clock.Now()
	priority := ptr.Deref(o.Priority, 0)
	for _, item := range items {
		after := o.After
		if o.RateLimited {
			if limited := q.rateLimiter.When(item); after == 0 || limited < after {
				after = limited
			}
		}
		if after > 0 {
			q.metrics.retries.Inc()
		}
		q.mu.Lock()
		d, ok := q.pending[item]
		switch {
		case !ok:
			d = due{at: now.Add(after), priority: priority}
			q.metrics.adds.Inc()
		default:
			if at := now.Add(after); at.Before(d.at) {
				d.at = at
			}
			d.priority = max(d.priority, priority)
		}
		q.pending[item] = d
		q.mu.Unlock()
		q.inner.AddWithOpts(priorityqueue.AddOpts{After: after, Priority: o.Priority}, item)
	}
}

// Add adds item now at priority 0.
func (q *Queue[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter adds item once after has passed.
func (q *Queue[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited adds item once the rate limiter allows it.
func (q *Queue[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// GetWithPriority waits for the next item and returns it with its
// priority.
func (q *Queue[T]) GetWithPriority() (T, int, bool) {
	item, priority, shutdown := q.inner.GetWithPriority()
	if shutdown {
		return item, priority, shutdown
	}
	now := q.clock.Now()
	q.mu.Lock()
	if d, ok := q.pending[item]; ok {
		delete(q.pending, item)
		q.metrics.latency.Observe(max(now.Sub(d.at), 0).Seconds())
	}
	q.processing[item] = now
	q.mu.Unlock()
	return item, priority, shutdown
}

// Get waits for the next item.
func (q *Queue[T]) Get() (T, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// Done marks item as processed.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	if start, ok := q.processing[item]; ok {
		delete(q.processing, item)
		q.metrics.workDuration.Observe(q.clock.Since(start).Seconds())
	}
	q.mu.Unlock()
	q.inner.Done(item)
}

// Forget makes the rate limiter forget item's failures.
func (q *Queue[T]) Forget(item T) { q.inner.Forget(item) }

// NumRequeues is the number of item's failures the rate limiter counts.
func (q *Queue[T]) NumRequeues(item T) int { return q.inner.NumRequeues(item) }

// Len is the number of items ready to be handed out.
func (q *Queue[T]) Len() int { return q.inner.Len() }

// ShuttingDown says whether ShutDown was called.
func (q *Queue[T]) ShuttingDown() bool { return q.inner.ShuttingDown() }

// ShutDown stops the queue; its metrics are no longer collected.
func (q *Queue[T]) ShutDown() {
	q.registry.remove(q)
	q.inner.ShutDown()
}

// ShutDownWithDrain stops the queue once the items handed out are Done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.registry.remove(q)
	q.inner.ShutDownWithDrain()
}

// snapshot is what the gauges of q show at now.
type snapshot struct {
	// depth counts the items due by now, by priority.
	depth map[int]int
	// unfinished is the time the items handed out and not Done have been
	// processed so far, longest the longest of them, in seconds.
	unfinished, longest float64
}

func (q *Queue[T]) snapshot() snapshot {
	now := q.clock.Now()
	s := snapshot{depth: map[int]int{}}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range q.pending {
		if !d.at.After(now) {
			s.depth[d.priority]++
		}
	}
	for _, start := range q.processing {
		took := now.Sub(start).Seconds()
		s.unfinished += took
		s.longest = max(s.longest, took)
	}
	return s
}

func (q *Queue[T]) series() *series { return q.metrics }
