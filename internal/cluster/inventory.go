package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// inventory keeps a member's nodes, and with resource modeling its
// non-terminal pods, in informers holding only what the summaries read.
//
// It replaces listing every pod of the member each CollectInterval: at
// thousands of pods those lists dominated the controller manager's idle CPU
// and its heap. Its watches also tell, through lost, as soon as the member's
// API server stops answering, so that the status controller can probe at once
// instead of at its next period.
type inventory struct {
	cs       kubernetes.Interface
	withPods bool
	conn     *connection

	mu  sync.Mutex
	run *informers
}

// informers is one run of an inventory's informers.
type informers struct {
	nodes  cache.SharedIndexInformer
	pods   cache.SharedIndexInformer // nil without resource modeling
	cancel context.CancelFunc
}

// startInventory starts the informers. lost, when not nil, is called (from
// informer goroutines) whenever a list or watch fails without an answer from
// the API server, with first true for the first failure since the member was
// last reached; it must not block.
func startInventory(cs kubernetes.Interface, withPods bool, lost func(first bool)) *inventory {
	if lost == nil {
		lost = func(bool) {}
	}
	inv := &inventory{cs: cs, withPods: withPods, conn: &connection{lost: lost}}
	inv.run = inv.start()
	return inv
}

func (i *inventory) start() *informers {
	ctx, cancel := context.WithCancel(context.Background())
	run := &informers{cancel: cancel}
	nodes := i.cs.CoreV1().Nodes()
	run.nodes = newSlimInformer(i.cs, reportingConnectionLoss(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return nodes.Watch(ctx, o)
		},
	}, i.conn), &corev1.Node{}, slimNode)
	all := []cache.SharedIndexInformer{run.nodes}
	if i.withPods {
		pods := i.cs.CoreV1().Pods(metav1.NamespaceAll)
		// Finished pods hold no resources; a pod that finishes leaves the
		// selection and is delivered as deleted.
		nonTerminal := "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
		run.pods = newSlimInformer(i.cs, reportingConnectionLoss(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = nonTerminal
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = nonTerminal
				return pods.Watch(ctx, o)
			},
		}, i.conn), &corev1.Pod{}, slimPod)
		all = append(all, run.pods)
	}
	for _, inf := range all {
		go inf.RunWithContext(ctx)
	}
	return run
}

// newSlimInformer builds an informer whose objects pass through transform.
// cs tells the reflector whether the client can stream the initial list
// (a fake clientset cannot).
func newSlimInformer(cs kubernetes.Interface, lw *cache.ListWatch, example runtime.Object, transform cache.TransformFunc) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, cs), example, cache.SharedIndexInformerOptions{})
	// Setting the transform cannot fail before the informer runs.
	_ = inf.SetTransform(transform)
	return inf
}

// current is the informers' present run.
func (i *inventory) current() *informers {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.run
}

// stop ends the informers. It does not wait for them: a reflector waiting
// out its back-off after a failed watch-list notices only when the wait
// ends, up to a minute later.
func (i *inventory) stop() {
	i.current().cancel()
}

// reached is told that a probe just reached the member's API server. If the
// informers lost it since they last reached it, they are started afresh and
// reported true: after an outage a reflector retries on a back-off of up to
// 30 s, and until it gets through it has no watch open, so its member could
// crash again without anyone noticing before the next probe, and what it
// holds would stay stale. A member whose informers are connected is left
// alone.
func (i *inventory) reached() bool {
	if !i.conn.down.Load() {
		return false
	}
	i.mu.Lock()
	if !i.conn.down.Swap(false) { // another probe restarted them
		i.mu.Unlock()
		return false
	}
	old := i.run
	i.run = i.start()
	i.mu.Unlock()
	old.cancel()
	return true
}

// eachNode calls fn for every node once the node informer has synced, or
// fails when ctx ends first.
func (i *inventory) eachNode(ctx context.Context, fn func(*corev1.Node)) error {
	nodes := i.current().nodes
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced) {
		return fmt.Errorf("nodes not synced: %w", context.Cause(ctx))
	}
	for _, obj := range nodes.GetStore().List() {
		if n, ok := obj.(*corev1.Node); ok {
			fn(n)
		}
	}
	return nil
}

// eachPod is eachNode for the non-terminal pods.
func (i *inventory) eachPod(ctx context.Context, fn func(*PodUsage)) error {
	pods := i.current().pods
	if pods == nil {
		return errors.New("pods are not watched without resource modeling")
	}
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return fmt.Errorf("pods not synced: %w", context.Cause(ctx))
	}
	for _, obj := range pods.GetStore().List() {
		if u, ok := obj.(*PodUsage); ok {
			fn(u)
		}
	}
	return nil
}

// connection is what the inventory's informers tell of their member's API
// server, shared by them.
type connection struct {
	down atomic.Bool
	lost func(first bool)
}

func (c *connection) observe(ctx context.Context, err error) {
	switch {
	case err == nil:
		c.down.Store(false)
	case connectionLost(ctx, err):
		c.lost(!c.down.Swap(true))
	}
}

// reportingConnectionLoss wraps lw so that a list or watch that fails
// without an answer from the API server (refused, reset, timed out) is
// reported to conn, and one that succeeds too. An error the API server
// answered with (forbidden, gone, too many requests) is not a lost
// connection; neither is the informer being stopped.
func reportingConnectionLoss(lw *cache.ListWatch, conn *connection) *cache.ListWatch {
	if conn == nil {
		return lw
	}
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, o)
			conn.observe(ctx, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			conn.observe(ctx, err)
			return w, err
		},
		DisableChunking: lw.DisableChunking,
	}
}

// connectionLost says whether err, returned by a call made with ctx, means
// that the API server could not be reached.
func connectionLost(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}

// slimPod reduces a pod to its PodUsage, computed once when it arrives.
func slimPod(obj interface{}) (interface{}, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return usageOf(p), nil
	}
	return obj, nil
}

// slimNode keeps the node's allocatable resources and its Ready condition.
func slimNode(obj interface{}) (interface{}, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}
