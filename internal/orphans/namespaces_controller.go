package orphans

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/enqueue"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// Waiting for what is left in a namespace to go: the first look again
// comes after namespaceRecheckMin, later ones further apart up to
// namespaceRecheckMax, and after namespaceWaitLimit the namespace is kept
// until something brings it back (a Work deleted, a scan).
const (
	namespaceRecheckMin = 2 * time.Second
	namespaceRecheckMax = 30 * time.Second
	namespaceWaitLimit  = 5 * time.Minute
)

// NamespaceReconciler removes a namespace Lifeboat created in a member once
// the namespace rule (NamespaceGate, JudgeContents) allows it. Its requests
// name a member namespace: Namespace is the cluster, Name the namespace.
// They come from Works deleted (each namespace their manifests used), from
// the ObjectReconciler's scans (every namespace Lifeboat created, and those
// it removed orphans from) and from itself while what is left goes away.
type NamespaceReconciler struct {
	// Client reads Clusters and Works (the manager's cache, with the
	// IndexWorksByMemberNamespace index).
	Client   client.Client
	Members  MemberCache
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *Metrics

	// queue takes the namespaces Enqueue is given.
	queue enqueue.Queue

	mu sync.Mutex
	// waiting is when each namespace was first found waiting.
	waiting map[types.NamespacedName]time.Time
}

// Enqueue asks for namespace of cluster to be checked.
func (r *NamespaceReconciler) Enqueue(cluster, namespace string) {
	r.queue.Add(types.NamespacedName{Namespace: cluster, Name: namespace})
}

// SetupWithManager indexes Works by the member namespaces they use and
// watches Work deletions.
func (r *NamespaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workv1alpha1.Work{}, IndexWorksByMemberNamespace, memberNamespaceIndex); err != nil {
		return fmt.Errorf("indexing Works by %s: %w", IndexWorksByMemberNamespace, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("member-namespaces").
		Watches(&workv1alpha1.Work{}, handler.Funcs{DeleteFunc: r.workDeleted}).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{NewQueue: queue.New}).
		Complete(r)
}

// workDeleted enqueues the namespaces a deleted Work used in its member.
func (r *NamespaceReconciler) workDeleted(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	w, ok := e.Object.(*workv1alpha1.Work)
	if !ok {
		return
	}
	cluster, ok := execution.ClusterOfNamespace(w.Namespace)
	if !ok {
		return
	}
	for _, ns := range execution.MemberNamespaces(w) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cluster, Name: ns}})
	}
}

// Reconcile checks one member namespace:
//  1. nothing is done unless the member can be swept (scannable);
//  2. the namespace rule is applied (Sweeper.JudgeNamespace);
//  3. a Removable namespace is deleted, conditional on its UID and
//     resourceVersion as judged;
//  4. one whose contents are still going is looked at again, further apart
//     each time, for at most namespaceWaitLimit.
func (r *NamespaceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	clusterName, ns := req.Namespace, req.Name
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", clusterName, "memberNamespace", ns)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, types.NamespacedName{Name: clusterName}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.done(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading Cluster %s: %w", clusterName, err)
	}
	if !scannable(&cluster) {
		r.done(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	sweeper := Sweeper{
		Cluster:      clusterName,
		Member:       CachedMember(r.Members, clusterName),
		ControlPlane: ControlPlane{Reader: r.Client, Indexed: true},
	}
	j, err := sweeper.JudgeNamespace(ctx, ns)
	if err != nil {
		if wait, ok := membercluster.RetryAfter(err); ok {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return reconcile.Result{}, err
	}
	switch j.Verdict {
	case NamespaceRemovable:
		r.done(req.NamespacedName)
		removed, err := sweeper.RemoveNamespace(ctx, j)
		if err != nil {
			if wait, ok := membercluster.RetryAfter(err); ok {
				return reconcile.Result{RequeueAfter: wait}, nil
			}
			return reconcile.Result{}, err
		}
		if !removed {
			// It changed meanwhile: judge it again.
			return reconcile.Result{RequeueAfter: namespaceRecheckMin}, nil
		}
		log.Info("removed an empty namespace Lifeboat had created in the member")
		r.Metrics.removedNamespace(clusterName)
		if r.Recorder != nil {
			r.Recorder.Eventf(&cluster, nil, corev1.EventTypeNormal, EventNamespaceRemoved, "SweepMember",
				"Removed namespace %s from the member: Lifeboat created it, and nothing is left in it", ns)
		}
		return reconcile.Result{}, nil
	case NamespaceWait:
		wait, ok := r.wait(req.NamespacedName)
		if !ok {
			log.Info("namespace Lifeboat created is not empty yet; keeping it until it is checked again", "waitingFor", j.Detail)
			return reconcile.Result{}, nil
		}
		log.V(1).Info("waiting for what is left in the namespace to go", "waitingFor", j.Detail, "after", wait.String())
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	r.done(req.NamespacedName)
	log.V(1).Info("namespace kept", "verdict", string(j.Verdict), "detail", j.Detail)
	return reconcile.Result{}, nil
}

// wait returns when to look at a waiting namespace again: half the time
// waited so far, within [namespaceRecheckMin, namespaceRecheckMax]; ok is
// false once it has waited namespaceWaitLimit (and forgets it).
func (r *NamespaceReconciler) wait(key types.NamespacedName) (time.Duration, bool) {
	now := r.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[types.NamespacedName]time.Time{}
	}
	since, ok := r.waiting[key]
	if !ok {
		r.waiting[key] = now
		return namespaceRecheckMin, true
	}
	wait, ok := recheckAfter(now.Sub(since))
	if !ok {
		delete(r.waiting, key)
	}
	return wait, ok
}

// recheckAfter is the wait after having waited waited: half of it, within
// [namespaceRecheckMin, namespaceRecheckMax]; false past namespaceWaitLimit.
func recheckAfter(waited time.Duration) (time.Duration, bool) {
	if waited >= namespaceWaitLimit {
		return 0, false
	}
	return min(max(waited/2, namespaceRecheckMin), namespaceRecheckMax), true
}

func (r *NamespaceReconciler) done(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, key)
}
