package membercluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// SetupWithManager adds the cache to mgr (its informers stop with the
// manager) and a small controller that keeps member connections in step with
// Cluster objects and their Secrets: it reconnects on a changed endpoint,
// proxy, TLS setting or credentials, and when a Cluster becomes Ready again
// after an outage, and tears down a deleted Cluster's informers. It writes
// nothing.
func (c *Cache) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(c); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("membercluster-connections").
		// Cluster status changes often (health probes) and rarely affects
		// the connection: spec changes (generation), creations, deletions
		// and the member becoming Ready again matter.
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, becameReady()))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(c.clustersUsingSecret)).
		WithOptions(controller.Options{NewQueue: queue.New}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			err := c.Reconnect(ctx, req.Name)
			if err != nil {
				ctrl.LoggerFrom(ctx).Info("could not reconnect member cluster", "cluster", req.Name, "error", err.Error())
			}
			return reconcile.Result{}, err
		}))
}

// clustersUsingSecret maps a Secret to the Clusters whose spec.secretRef
// names it (a handful of Clusters: listing them is cheap).
func (c *Cache) clustersUsingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	var clusters clusterv1alpha1.ClusterList
	if err := c.reader.List(ctx, &clusters); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Clusters for a Secret change", "secret", client.ObjectKeyFromObject(obj))
		return nil
	}
	var out []reconcile.Request
	for i := range clusters.Items {
		ref := clusters.Items[i].Spec.SecretRef
		if ref != nil && ref.Namespace == obj.GetNamespace() && ref.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: clusters.Items[i].Name}})
		}
	}
	return out
}

// becameReady passes Cluster updates whose Ready condition turned True.
func becameReady() predicate.Predicate {
	ready := func(obj client.Object) bool {
		c, ok := obj.(*clusterv1alpha1.Cluster)
		return ok && meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return !ready(e.ObjectOld) && ready(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
