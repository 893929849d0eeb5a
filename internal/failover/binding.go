package failover

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// bindingKind is what differs between ResourceBinding and
// ClusterResourceBinding for the engine: the object type and the name of
// the application-failover producer. Everything else works on the shared
// ResourceBindingSpec and ResourceBindingStatus.
type bindingKind struct {
	// name is the kind, for logs and controller names.
	name string
	// short names the controllers: "rb" or "crb".
	short string
	// appFailoverProducer is GracefulEvictionTask.Producer for application
	// failover.
	appFailoverProducer string
	newObject           func() client.Object
}

var (
	resourceBindingKind = bindingKind{
		name:                "ResourceBinding",
		short:               "rb",
		appFailoverProducer: workv1alpha2.EvictionProducerRBApplicationFailover,
		newObject:           func() client.Object { return &workv1alpha2.ResourceBinding{} },
	}
	clusterResourceBindingKind = bindingKind{
		name:                "ClusterResourceBinding",
		short:               "crb",
		appFailoverProducer: workv1alpha2.EvictionProducerCRBApplicationFailover,
		newObject:           func() client.Object { return &workv1alpha2.ClusterResourceBinding{} },
	}
	bindingKinds = []bindingKind{resourceBindingKind, clusterResourceBindingKind}
)

// parts returns pointers into obj's spec and status; writes through them
// change obj.
func parts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus, error) {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec, &b.Status, nil
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec, &b.Status, nil
	default:
		return nil, nil, fmt.Errorf("not a binding: %T", obj)
	}
}

// mustParts is parts for objects made by bindingKind.newObject.
func mustParts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus) {
	spec, status, err := parts(obj)
	if err != nil {
		panic(err)
	}
	return spec, status
}

// conflictRetry is when a reconcile that lost a write race runs again. The
// newer object's watch event usually triggers it sooner.
const conflictRetry = time.Second

// setupPerKind registers one controller per binding kind (ResourceBinding,
// ClusterResourceBinding), named "<rb|crb>-<name>", for the objects
// relevant says it must see. With workGone, the deletion of one of a
// binding's Works brings the binding back too: nothing else changes on the
// binding when the last trace of an old copy goes.
func setupPerKind(mgr ctrl.Manager, name string, relevant func(client.Object) bool, workGone bool, maxConcurrent int,
	rec func(ctx context.Context, k bindingKind, req ctrl.Request) (ctrl.Result, error), watches ...extraWatch) error {
	for _, k := range bindingKinds {
		k := k
		b := ctrl.NewControllerManagedBy(mgr).
			Named(k.short+"-"+name).
			For(k.newObject(), builder.WithPredicates(relevantPredicate(relevant)))
		if workGone {
			b = b.Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(k.bindingOfWork),
				builder.WithPredicates(predicate.Funcs{
					CreateFunc:  func(event.CreateEvent) bool { return false },
					UpdateFunc:  func(event.UpdateEvent) bool { return false },
					DeleteFunc:  func(event.DeleteEvent) bool { return true },
					GenericFunc: func(event.GenericEvent) bool { return false },
				}))
		}
		for _, w := range watches {
			b = w(b, k)
		}
		err := b.
			WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent, NewQueue: queue.New}).
			Complete(conflict.Retrying(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return rec(ctx, k, req)
			})))
		if err != nil {
			return fmt.Errorf("setting up the %s %s controller: %w", k.name, name, err)
		}
	}
	return nil
}

// extraWatch adds a watch to the controller of binding kind k.
type extraWatch func(b *builder.Builder, k bindingKind) *builder.Builder

// bindingOfWork maps a Work to its binding of kind k, by the annotations
// the binding controller puts on every Work.
func (k bindingKind) bindingOfWork(_ context.Context, w client.Object) []reconcile.Request {
	ns, name, cluster, ok := workv1alpha2.BindingOfWorkAnnotations(w.GetAnnotations())
	if !ok || cluster != (k.short == clusterResourceBindingKind.short) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
