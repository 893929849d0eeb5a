package scheduler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// IndexScheduled is a field index on ResourceBindings and
// ClusterResourceBindings: "false" unless the Scheduled condition is True.
// Capacity changes only re-enqueue those. Scheduled bindings, nearly all of
// them, are left out of the index: each indexed binding costs two index
// entries.
const IndexScheduled = "scheduler.lifeboat.dev/scheduled"

// ScheduledIndexValue extracts IndexScheduled from a binding (for the
// manager's field indexer and for fake clients in tests).
func ScheduledIndexValue(obj client.Object) []string {
	b, ok := viewOf(obj)
	if !ok {
		return nil
	}
	if meta.IsStatusConditionTrue(b.status.Conditions, workv1alpha2.Scheduled) {
		return nil
	}
	return []string{"false"}
}

// SetupWithManager registers the field index and two controllers,
// "scheduler-resourcebinding" and "scheduler-clusterresourcebinding". Each
// watches its binding kind (creation and generation changes) and Clusters.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		//lint:ignore SA1019 the binding and template Events use the core/v1 recorder
		r.Recorder = mgr.GetEventRecorderFor("lifeboat-scheduler")
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 1
	}
	if r.Echoes == nil {
		r.Echoes = coalesce.NewRecent(0, r.clock())
	}
	ctx := context.Background()
	for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexScheduled, ScheduledIndexValue); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", obj, IndexScheduled, err)
		}
	}
	// A binding claimed again by a policy (its labels change, not its
	// generation) is looked at too: its spec may have changed meanwhile.
	bindingEvents := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, claimChanged()), predicate.NewPredicateFuncs(r.handles))
	opts := controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, NewQueue: queue.New}

	if err := ctrl.NewControllerManagedBy(mgr).
		Named("scheduler-resourcebinding").
		For(&workv1alpha2.ResourceBinding{}, bindingEvents).
		Watches(&clusterv1alpha1.Cluster{}, r.clusterHandler(r.listResourceBindings)).
		WithOptions(opts).
		Complete(conflict.Retrying(reconcile.Func(r.ReconcileResourceBinding))); err != nil {
		return fmt.Errorf("setting up the ResourceBinding scheduler: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("scheduler-clusterresourcebinding").
		For(&workv1alpha2.ClusterResourceBinding{}, bindingEvents).
		Watches(&clusterv1alpha1.Cluster{}, r.clusterHandler(r.listClusterResourceBindings)).
		WithOptions(opts).
		Complete(conflict.Retrying(reconcile.Func(r.ReconcileClusterResourceBinding))); err != nil {
		return fmt.Errorf("setting up the ClusterResourceBinding scheduler: %w", err)
	}
	return nil
}

// clusterChange is how much a Cluster update matters to scheduling.
type clusterChange int

const (
	// changeNone: nothing the scheduler reads changed.
	changeNone clusterChange = iota
	// changeCapacity: only status.resourceSummary changed; bindings that
	// are scheduled stay where they are, the others may fit now.
	changeCapacity
	// changeScheduling: labels, spec (taints, provider, region, zones),
	// deletion, Ready or API enablements changed; every binding may move.
	changeScheduling
)

// classifyClusterUpdate is a pure function of the old and new Cluster.
func classifyClusterUpdate(old, cur *clusterv1alpha1.Cluster) clusterChange {
	switch {
	case (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil),
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels),
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec),
		conditionStatus(old, clusterv1alpha1.ClusterConditionReady) != conditionStatus(cur, clusterv1alpha1.ClusterConditionReady),
		conditionStatus(old, clusterv1alpha1.ClusterConditionCompleteAPIEnablements) != conditionStatus(cur, clusterv1alpha1.ClusterConditionCompleteAPIEnablements),
		!equality.Semantic.DeepEqual(old.Status.APIEnablements, cur.Status.APIEnablements):
		return changeScheduling
	case !equality.Semantic.DeepEqual(old.Status.ResourceSummary, cur.Status.ResourceSummary):
		return changeCapacity
	}
	return changeNone
}

func conditionStatus(c *clusterv1alpha1.Cluster, condType string) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, condType); cond != nil {
		return string(cond.Status)
	}
	return ""
}

// bindingLister lists the names of the bindings of one kind this scheduler
// handles; pendingOnly keeps those not successfully scheduled.
type bindingLister func(ctx context.Context, pendingOnly bool) ([]types.NamespacedName, error)

// clusterHandler enqueues bindings on Cluster events: every binding when a
// cluster comes, goes or changes in a way that matters to placement, only
// the pending ones when just its capacity changed.
func (r *Reconciler) clusterHandler(list bindingLister) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], change clusterChange) {
		if change == changeNone {
			return
		}
		keys, err := list(ctx, change == changeCapacity)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing bindings for a cluster event")
			return
		}
		for _, key := range keys {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, changeScheduling)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*clusterv1alpha1.Cluster)
			cur, okNew := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if okOld && okNew {
				enqueue(ctx, q, classifyClusterUpdate(old, cur))
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, changeScheduling)
		},
	}
}

func (r *Reconciler) listResourceBindings(ctx context.Context, pendingOnly bool) ([]types.NamespacedName, error) {
	var list workv1alpha2.ResourceBindingList
	if err := r.Client.List(ctx, &list, listOptions(pendingOnly)...); err != nil {
		return nil, fmt.Errorf("listing ResourceBindings: %w", err)
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		if r.handles(&list.Items[i]) {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return keys, nil
}

func (r *Reconciler) listClusterResourceBindings(ctx context.Context, pendingOnly bool) ([]types.NamespacedName, error) {
	var list workv1alpha2.ClusterResourceBindingList
	if err := r.Client.List(ctx, &list, listOptions(pendingOnly)...); err != nil {
		return nil, fmt.Errorf("listing ClusterResourceBindings: %w", err)
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		if r.handles(&list.Items[i]) {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return keys, nil
}

// listOptions: read-only lists skip the cache's deep copies (thousands of
// bindings per cluster event otherwise).
func listOptions(pendingOnly bool) []client.ListOption {
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if pendingOnly {
		opts = append(opts, client.MatchingFields{IndexScheduled: "false"})
	}
	return opts
}

// claimChanged passes updates that change whether a policy claims the
// binding (Claimed).
func claimChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && Claimed(e.ObjectOld.GetLabels()) != Claimed(e.ObjectNew.GetLabels())
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
