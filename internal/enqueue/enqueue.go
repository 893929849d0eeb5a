// Package enqueue lets code outside controller-runtime add requests to a
// controller's work queue: handlers of member informers (which the member
// cache runs, not the controller) and other controllers that hand work over.
//
// A controller keeps a Queue among its fields and registers Source with
// WatchesRawSource; when the controller starts, it hands its queue to the
// Queue. Requests added before then are dropped.
package enqueue

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue holds a controller's work queue once the controller has started.
// The zero value is ready to use; a Queue must not be copied after first
// use.
type Queue struct {
	mu sync.RWMutex
	q  workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Set makes q the queue that Add adds to.
func (q *Queue) Set(wq workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.q = wq
}

// Add enqueues key, or does nothing while no queue is set.
func (q *Queue) Add(key types.NamespacedName) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.q != nil {
		q.q.Add(reconcile.Request{NamespacedName: key})
	}
}

// Source is the source to register with the controller's builder
// (WatchesRawSource): starting it sets the controller's queue. It produces
// no events of its own.
func (q *Queue) Source() source.Source {
	return source.Func(func(_ context.Context, wq workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Set(wq)
		return nil
	})
}
