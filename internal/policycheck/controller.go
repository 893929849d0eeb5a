package policycheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

// conflictRequeue is how soon a policy whose status write lost a race is
// looked at again (after conflict.Retrying's own immediate attempts).
const conflictRequeue = time.Second

// Reconciler checks PropagationPolicies, ClusterPropagationPolicies,
// OverridePolicies and ClusterOverridePolicies and writes their Accepted
// condition (see the package documentation). Its fields are its
// dependencies.
type Reconciler struct {
	// Client reads policies (from the cache) and patches their status.
	// Required.
	Client client.Client
	// Recorder records the Events on policies. Required.
	Recorder record.EventRecorder
	// Kinds is the view of the served kinds; its changes make every policy
	// be checked again. Required.
	Kinds *served.Kinds
	// Types knows the Go types of the built-in kinds (the manager's
	// scheme); nil skips the checks of override values.
	Types Types
	// Clock stamps lastTransitionTime; the real clock by default.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles per policy kind; 1 by default.
	MaxConcurrentReconciles int
}

// policyKind is one of the four policy kinds as the reconciler sees it.
type policyKind[T client.Object] struct {
	// name is the kind in lower case, for the controller's name.
	name   string
	newObj func() T
	status func(T) *policyv1alpha1.PolicyStatus
	check  func(*Checker, T) []Problem
	// list returns every policy of the kind, for a new look after the
	// served kinds change.
	list func(context.Context, client.Reader) ([]client.Object, error)
}

var (
	propagationPolicies = policyKind[*policyv1alpha1.PropagationPolicy]{
		name:   "propagationpolicy",
		newObj: func() *policyv1alpha1.PropagationPolicy { return &policyv1alpha1.PropagationPolicy{} },
		status: func(p *policyv1alpha1.PropagationPolicy) *policyv1alpha1.PolicyStatus { return &p.Status },
		check:  (*Checker).PropagationPolicy,
		list: func(ctx context.Context, c client.Reader) ([]client.Object, error) {
			var l policyv1alpha1.PropagationPolicyList
			err := c.List(ctx, &l)
			return objects(l.Items), err
		},
	}
	clusterPropagationPolicies = policyKind[*policyv1alpha1.ClusterPropagationPolicy]{
		name:   "clusterpropagationpolicy",
		newObj: func() *policyv1alpha1.ClusterPropagationPolicy { return &policyv1alpha1.ClusterPropagationPolicy{} },
		status: func(p *policyv1alpha1.ClusterPropagationPolicy) *policyv1alpha1.PolicyStatus { return &p.Status },
		check:  (*Checker).ClusterPropagationPolicy,
		list: func(ctx context.Context, c client.Reader) ([]client.Object, error) {
			var l policyv1alpha1.ClusterPropagationPolicyList
			err := c.List(ctx, &l)
			return objects(l.Items), err
		},
	}
	overridePolicies = policyKind[*policyv1alpha1.OverridePolicy]{
		name:   "overridepolicy",
		newObj: func() *policyv1alpha1.OverridePolicy { return &policyv1alpha1.OverridePolicy{} },
		status: func(p *policyv1alpha1.OverridePolicy) *policyv1alpha1.PolicyStatus { return &p.Status },
		check:  (*Checker).OverridePolicy,
		list: func(ctx context.Context, c client.Reader) ([]client.Object, error) {
			var l policyv1alpha1.OverridePolicyList
			err := c.List(ctx, &l)
			return objects(l.Items), err
		},
	}
	clusterOverridePolicies = policyKind[*policyv1alpha1.ClusterOverridePolicy]{
		name:   "clusteroverridepolicy",
		newObj: func() *policyv1alpha1.ClusterOverridePolicy { return &policyv1alpha1.ClusterOverridePolicy{} },
		status: func(p *policyv1alpha1.ClusterOverridePolicy) *policyv1alpha1.PolicyStatus { return &p.Status },
		check:  (*Checker).ClusterOverridePolicy,
		list: func(ctx context.Context, c client.Reader) ([]client.Object, error) {
			var l policyv1alpha1.ClusterOverridePolicyList
			err := c.List(ctx, &l)
			return objects(l.Items), err
		},
	}
)

// objects returns pointers to the items of a list.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}

func (r *Reconciler) setDefaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 1
	}
}

// SetupWithManager registers one controller per policy kind
// ("policycheck-propagationpolicy", ...). Each looks at a policy when it is
// created or its spec changes (its generation: the controller's own status
// writes do not bring it back), and at every policy of its kind when the
// served kinds change.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil || r.Kinds == nil {
		return errors.New("policycheck: Client, Recorder and Kinds are required")
	}
	r.setDefaults()
	return errors.Join(
		setup(mgr, r, propagationPolicies),
		setup(mgr, r, clusterPropagationPolicies),
		setup(mgr, r, overridePolicies),
		setup(mgr, r, clusterOverridePolicies),
	)
}

func setup[T client.Object](mgr ctrl.Manager, r *Reconciler, k policyKind[T]) error {
	recheck := make(chan event.GenericEvent, 256)
	recheckOnChange(r, k, recheck)
	err := ctrl.NewControllerManagedBy(mgr).
		Named("policycheck-"+k.name).
		For(k.newObj(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(recheck, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, NewQueue: queue.New}).
		Complete(conflict.Retrying(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			return reconcilePolicy(ctx, r, k, req)
		})))
	if err != nil {
		return fmt.Errorf("creating the %s check controller: %w", k.name, err)
	}
	return nil
}

// recheckOnChange sends every policy of kind k to recheck whenever the
// served kinds change: a kind installed after the policy that selects it
// clears its problem, a kind removed makes one.
func recheckOnChange[T client.Object](r *Reconciler, k policyKind[T], recheck chan<- event.GenericEvent) {
	r.Kinds.OnChange(func(ctx context.Context) {
		items, err := k.list(ctx, r.Client)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing policies to check again after discovery", "kind", k.name)
			return
		}
		for _, obj := range items {
			select {
			case recheck <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return
			}
		}
	})
}

// reconcilePolicy checks one policy:
//  1. a policy that is gone or being deleted is left alone;
//  2. the served kinds must be known (discovery once if the loop has not
//     run yet; an error retries with backoff, and nothing is written);
//  3. check it and compute the Accepted condition;
//  4. when the condition differs from the stored one, patch the status
//     (optimistic lock: a lost race is retried quietly), then record the
//     Event transition decides.
func reconcilePolicy[T client.Object](ctx context.Context, r *Reconciler, k policyKind[T], req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	obj := k.newObj()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	if err := r.Kinds.EnsureReady(); err != nil {
		return ctrl.Result{}, fmt.Errorf("learning the served kinds: %w", err)
	}
	problems := k.check(&Checker{Kinds: r.Kinds, Types: r.Types}, obj)
	cond := Condition(problems, obj.GetGeneration())
	status := k.status(obj)
	write, ev := transition(meta.FindStatusCondition(status.Conditions, cond.Type), cond)
	if !write {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	cond.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	meta.SetStatusCondition(&status.Conditions, cond)
	if err := r.Client.Status().Patch(ctx, obj, patch); err != nil {
		switch {
		case apierrors.IsConflict(err):
			log.V(1).Info("status write conflict; checking again", "error", err.Error())
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the Accepted condition: %w", err)
	}
	if ev != nil {
		r.Recorder.Event(obj, ev.Type, ev.Reason, ev.Message)
	}
	log.V(1).Info("policy checked", "accepted", cond.Status, "reason", cond.Reason, "problems", len(problems))
	return ctrl.Result{}, nil
}
