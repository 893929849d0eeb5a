package enqueue

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestAddReachesTheQueueTheSourceWasStartedWith(t *testing.T) {
	wq := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer wq.ShutDown()
	var q Queue
	key := types.NamespacedName{Namespace: "karmada-es-member1", Name: "web"}

	q.Add(key) // before the controller started: dropped, no panic
	if wq.Len() != 0 {
		t.Fatalf("a request added before the start reached the queue (length %d)", wq.Len())
	}

	if err := q.Source().Start(context.Background(), wq); err != nil {
		t.Fatal(err)
	}
	q.Add(key)
	if wq.Len() != 1 {
		t.Fatalf("queue length %d after one Add, want 1", wq.Len())
	}
	if got, _ := wq.Get(); got.NamespacedName != key {
		t.Errorf("enqueued %v, want %v", got.NamespacedName, key)
	}
}
