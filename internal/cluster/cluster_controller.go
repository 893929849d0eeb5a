package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// ExecutionNamespace is the control-plane namespace holding a cluster's
// Works.
func ExecutionNamespace(cluster string) string {
	return clusterv1alpha1.ExecutionSpacePrefix + cluster
}

// deletionPollInterval is how often a deleting Cluster re-checks whether its
// Works are gone.
const deletionPollInterval = 5 * time.Second

// ClusterReconciler gives every Cluster its finalizer and its execution
// namespace, and on deletion removes the namespace and its Works before
// letting the Cluster go. It writes metadata.finalizers of Clusters, creates
// and deletes karmada-es-<name> namespaces and deletes Works in them.
type ClusterReconciler struct {
	// Client reads Clusters and Namespaces from the cache and writes.
	Client client.Client
	// APIReader counts a deleting cluster's Works without caching Works.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// DeletionGracePeriod bounds the wait for a Ready member's Works.
	DeletionGracePeriod time.Duration
	ConcurrentSyncs     int
}

// SetupWithManager watches Clusters (ignoring status-only updates) and the
// execution namespaces.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return specOrLifecycleChanged(e.ObjectOld, e.ObjectNew) },
		})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name, ok := strings.CutPrefix(o.GetName(), clusterv1alpha1.ExecutionSpacePrefix)
			if !ok || name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs, NewQueue: queue.New}).
		Complete(r)
}

// Reconcile ensures or tears down one cluster's execution space.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", cluster.Name))
	if !cluster.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &cluster)
	}
	if !controllerutil.ContainsFinalizer(&cluster, clusterv1alpha1.ClusterControllerFinalizer) {
		patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(&cluster, clusterv1alpha1.ClusterControllerFinalizer)
		if err := r.Client.Patch(ctx, &cluster, patch); err != nil {
			if apierrors.IsConflict(err) {
				return requeueOnConflict(ctx)
			}
			return ctrl.Result{}, fmt.Errorf("adding finalizer to cluster %s: %w", cluster.Name, err)
		}
	}
	return r.ensureExecutionNamespace(ctx, &cluster)
}

func (r *ClusterReconciler) ensureExecutionNamespace(ctx context.Context, cluster *clusterv1alpha1.Cluster) (ctrl.Result, error) {
	name := ExecutionNamespace(cluster.Name)
	var ns corev1.Namespace
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &ns)
	switch {
	case err == nil && ns.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil
	case err == nil:
		// A namespace of an earlier cluster with this name is still going
		// away; create the new one once it is gone.
		ctrl.LoggerFrom(ctx).V(1).Info("execution namespace is still terminating", "namespace", name)
		return ctrl.Result{RequeueAfter: deletionPollInterval}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.Client.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating execution namespace %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("created execution namespace", "namespace", name)
	return ctrl.Result{}, nil
}

// reconcileDelete tears a deleted cluster down:
//
//  1. delete the execution namespace (cascading to its Works where the
//     control plane runs a namespace controller);
//  2. delete the Works in it directly, so that no namespace controller is
//     needed for them to go;
//  3. drop the finalizer once releaseCluster allows it.
func (r *ClusterReconciler) reconcileDelete(ctx context.Context, cluster *clusterv1alpha1.Cluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.ClusterControllerFinalizer) {
		return ctrl.Result{}, nil
	}
	name := ExecutionNamespace(cluster.Name)
	var ns corev1.Namespace
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &ns)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading namespace %s: %w", name, err)
	case ns.DeletionTimestamp.IsZero():
		if err := r.Client.Delete(ctx, &ns); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("deleting execution namespace %s: %w", name, err)
		}
		log.Info("deleting execution namespace", "namespace", name)
	}

	remaining, err := r.remainingWorks(ctx, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining {
		if err := r.Client.DeleteAllOf(ctx, &workv1alpha1.Work{}, client.InNamespace(name)); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("deleting Works in %s: %w", name, err)
		}
		// Works without finalizers are gone now; the rest are cleaning up.
		if remaining, err = r.remainingWorks(ctx, name); err != nil {
			return ctrl.Result{}, err
		}
	}
	ready := meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	release, wait := releaseCluster(remaining, ready, cluster.DeletionTimestamp.Time, r.Clock.Now(), r.DeletionGracePeriod)
	if !release {
		log.V(1).Info("waiting for the Works of the deleted cluster to be cleaned up", "namespace", name)
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if remaining && r.Recorder != nil {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "WorksLeftBehind", "RemoveCluster",
			"Works in %s were not cleaned up (member Ready: %t); objects they created may remain in the member", name, ready)
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(cluster, clusterv1alpha1.ClusterControllerFinalizer)
	if err := r.Client.Patch(ctx, cluster, patch); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		case apierrors.IsConflict(err):
			return requeueOnConflict(ctx)
		}
		return ctrl.Result{}, fmt.Errorf("removing finalizer of cluster %s: %w", cluster.Name, err)
	}
	log.Info("cluster removed from the control plane")
	return ctrl.Result{}, nil
}

// remainingWorks says whether any Work is left in namespace, reading one
// item's metadata straight from the API server (Works are big; this keeps
// them out of this controller's cache).
func (r *ClusterReconciler) remainingWorks(ctx context.Context, namespace string) (bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(workv1alpha1.SchemeGroupVersion.WithKind("WorkList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(namespace), client.Limit(1)); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("listing Works in %s: %w", namespace, err)
	}
	return len(list.Items) > 0, nil
}

// releaseCluster decides whether a deleted cluster's finalizer may go, and
// otherwise how long to wait before looking again. The Works' finalizers
// clean the member up, which only a Ready member can do: an unready member is
// not waited for, and a Ready one at most grace after deletion began.
func releaseCluster(worksRemain, memberReady bool, deletedAt, now time.Time, grace time.Duration) (bool, time.Duration) {
	if !worksRemain || !memberReady {
		return true, 0
	}
	left := deletedAt.Add(grace).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, min(left, deletionPollInterval)
}

// requeueOnConflict handles a write that lost against another writer of the
// Cluster (the status and taint controllers write it too): look again soon,
// from the updated cache, without reporting an error.
func requeueOnConflict(ctx context.Context) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("cluster changed meanwhile; retrying")
	return ctrl.Result{RequeueAfter: time.Second}, nil
}
