package failover

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// IndexBindingsByScheduledCluster indexes ResourceBindings and
// ClusterResourceBindings by the names in spec.clusters, so the taint
// manager finds the bindings on a newly tainted cluster without listing
// every binding. Clusters that only have an eviction task are not indexed.
const IndexBindingsByScheduledCluster = "failover.lifeboat.dev/scheduled-cluster"

// scheduledClusterValues is the index function of
// IndexBindingsByScheduledCluster.
func scheduledClusterValues(obj client.Object) []string {
	spec, _, err := parts(obj)
	if err != nil {
		return nil
	}
	return clusterNames(spec.Clusters)
}

// NoExecuteTaints returns the NoExecute taints among taints.
func NoExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// EvictionDeadline is when a workload must leave a cluster because of its
// NoExecute taints.
type EvictionDeadline struct {
	// Never: every taint is tolerated without a time limit (or there is no
	// NoExecute taint).
	Never bool
	// At is when the workload must leave; the zero time means at once (a
	// taint is not tolerated).
	At time.Time
	// Taint decides: the untolerated taint, or the one whose toleration
	// runs out first.
	Taint corev1.Taint
	// Seconds is that toleration's tolerationSeconds.
	Seconds int64
}

// NoExecuteDeadline is the taint manager's toleration rule, Karmada's and
// Kubernetes' taint-eviction rule:
//
//  1. each NoExecute taint is matched with the first toleration that
//     tolerates it; a taint that none tolerates means: leave now;
//  2. for every matched toleration with tolerationSeconds, and every
//     NoExecute taint it tolerates that has a timeAdded, the workload may
//     stay until timeAdded + tolerationSeconds; the earliest of these is
//     the deadline (so 0 or a negative value means at once);
//  3. if no matched toleration has tolerationSeconds, the workload stays
//     (tolerated forever);
//  4. a taint without timeAdded counts as added now: the cluster-taint
//     controller stamps it (a taint written by `kubectl patch` or a GitOps
//     tool has none), and the stamp, a change of the taint, brings the
//     binding back here. Karmada skips such taints, which tolerates them
//     forever when its webhook did not stamp them.
func NoExecuteDeadline(taints []corev1.Taint, tolerations []corev1.Toleration, now time.Time) EvictionDeadline {
	taints = NoExecuteTaints(taints)
	var used []corev1.Toleration
	for _, taint := range taints {
		idx := -1
		for i := range tolerations {
			if core.Tolerates(tolerations[i], taint) {
				idx = i
				break
			}
		}
		if idx < 0 {
			return EvictionDeadline{Taint: taint}
		}
		dup := false
		for _, u := range used {
			if equality.Semantic.DeepEqual(u, tolerations[idx]) {
				dup = true
				break
			}
		}
		if !dup {
			used = append(used, tolerations[idx])
		}
	}
	d := EvictionDeadline{Never: true}
	for _, tol := range used {
		if tol.TolerationSeconds == nil {
			continue
		}
		for _, taint := range taints {
			if !core.Tolerates(tol, taint) {
				continue
			}
			added := now
			if taint.TimeAdded != nil {
				added = taint.TimeAdded.Time
			}
			at := added.Add(tolerationDuration(*tol.TolerationSeconds))
			if d.Never || at.Before(d.At) {
				d = EvictionDeadline{At: at, Taint: taint, Seconds: *tol.TolerationSeconds}
			}
		}
	}
	return d
}

// tolerationDuration is tolerationSeconds as a Duration, clamped so that
// values past what a Duration holds (the API allows any int64) mean
// "longer than anyone waits" instead of overflowing into the past.
func tolerationDuration(seconds int64) time.Duration {
	const maxSeconds = int64(math.MaxInt64 / int64(time.Second))
	return time.Duration(min(seconds, maxSeconds)) * time.Second
}

// TaintEviction is one cluster to evict and why.
type TaintEviction struct {
	// Cluster is the cluster to evict from.
	Cluster string
	// Message says why, for the eviction task and the history.
	Message string
}

// PlanTaintEvictions decides which of a binding's scheduled clusters must
// be evicted at now, given each cluster's taints (a cluster missing from
// taints does not exist: nothing is evicted from it) and the binding's
// tolerations. requeueAfter is the time to the earliest future deadline
// (0 for none).
func PlanTaintEvictions(clusters []workv1alpha2.TargetCluster, taints map[string][]corev1.Taint, tolerations []corev1.Toleration, now time.Time) ([]TaintEviction, time.Duration) {
	var evict []TaintEviction
	var requeueAfter time.Duration
	for _, c := range clusters {
		ts, ok := taints[c.Name]
		if !ok {
			continue
		}
		d := NoExecuteDeadline(ts, tolerations, now)
		switch {
		case d.Never:
		case d.At.IsZero():
			evict = append(evict, TaintEviction{Cluster: c.Name, Message: fmt.Sprintf(
				"cluster %s has the taint %s, which the placement does not tolerate", c.Name, formatTaint(d.Taint))})
		case !now.Before(d.At):
			evict = append(evict, TaintEviction{Cluster: c.Name, Message: fmt.Sprintf(
				"the placement tolerated the taint %s of cluster %s for %ds, until %s", formatTaint(d.Taint), c.Name, d.Seconds, d.At.UTC().Format(time.RFC3339))})
		default:
			if wait := d.At.Sub(now); requeueAfter == 0 || wait < requeueAfter {
				requeueAfter = wait
			}
		}
	}
	return evict, requeueAfter
}

func formatTaint(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// TaintManager is cluster failover: it evicts ResourceBindings and
// ClusterResourceBindings from clusters with a NoExecute taint that
// spec.placement.clusterTolerations does not tolerate, or no longer
// tolerates (timeAdded + tolerationSeconds has passed). Each eviction goes
// through the storm guard and is written with Evict (reason
// TaintUntolerated, producer TaintManager) in one spec Update.
type TaintManager struct {
	// Client reads bindings and Clusters (from the cache) and writes
	// bindings.
	Client client.Client
	// Recorder records Events on bindings and resource templates.
	Recorder record.EventRecorder
	// Clock tells the time; clock.RealClock{} in production.
	Clock clock.PassiveClock
	// Gates: Failover enables the controller; StatefulFailoverInjection
	// enables state capture.
	Gates *features.Gates
	// Guard paces evictions; nil evicts without a limit (tests only).
	Guard *StormGuard
	// Enabled is --enable-no-execute-taint-eviction; when false the
	// controller is not registered.
	Enabled bool
	// DefaultPurgeMode applies to bindings without spec.failover.cluster
	// (--no-execute-taint-eviction-purge-mode); empty means Gracefully.
	DefaultPurgeMode policyv1alpha1.PurgeMode
	// MaxConcurrentReconciles per binding kind; 0 means 1.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the IndexBindingsByScheduledCluster index
// and one controller per binding kind. A controller reconciles a binding
// when it is created or its spec changes, and every binding scheduled to a
// Cluster whose NoExecute taints change (found through the index). With
// the Failover gate off or eviction disabled it registers nothing.
func (r *TaintManager) SetupWithManager(mgr ctrl.Manager) error {
	if !r.Gates.Enabled(features.Failover) || !r.Enabled {
		return nil
	}
	ctx := context.Background()
	for _, k := range bindingKinds {
		k := k
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.newObject(), IndexBindingsByScheduledCluster, scheduledClusterValues); err != nil {
			return fmt.Errorf("indexing %ss by scheduled cluster: %w", k.name, err)
		}
		err := ctrl.NewControllerManagedBy(mgr).
			Named(k.short+"-taint-manager").
			For(k.newObject(), builder.WithPredicates(taintManagerBindingPredicate())).
			Watches(&clusterv1alpha1.Cluster{},
				handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
					return r.bindingsOnCluster(ctx, k, obj.GetName())
				}),
				builder.WithPredicates(noExecuteTaintsChanged())).
			WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, NewQueue: queue.New}).
			Complete(conflict.Retrying(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return r.reconcile(ctx, k, req)
			})))
		if err != nil {
			return fmt.Errorf("setting up the %s taint manager: %w", k.name, err)
		}
	}
	return nil
}

// taintManagerBindingPredicate passes bindings with a placement when they
// are created or their spec changes; status updates do not matter.
func taintManagerBindingPredicate() predicate.Predicate {
	scheduled := func(obj client.Object) bool {
		spec, _, err := parts(obj)
		return err == nil && len(spec.Clusters) > 0
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return scheduled(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() && scheduled(e.ObjectNew)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return scheduled(e.Object) },
	}
}

// noExecuteTaintsChanged passes Clusters created with NoExecute taints
// and Clusters whose NoExecute taints changed.
func noExecuteTaintsChanged() predicate.Predicate {
	taintsOf := func(obj client.Object) []corev1.Taint {
		c, ok := obj.(*clusterv1alpha1.Cluster)
		if !ok {
			return nil
		}
		return NoExecuteTaints(c.Spec.Taints)
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return len(taintsOf(e.Object)) > 0 },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(taintsOf(e.ObjectOld), taintsOf(e.ObjectNew))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return len(taintsOf(e.Object)) > 0 },
	}
}

// bindingsOnCluster returns the bindings of kind k scheduled to cluster.
func (r *TaintManager) bindingsOnCluster(ctx context.Context, k bindingKind, cluster string) []reconcile.Request {
	return bindingsIndexed(ctx, r.Client, k, IndexBindingsByScheduledCluster, cluster)
}

// clusterTaints returns the taints of the named clusters that exist.
func (r *TaintManager) clusterTaints(ctx context.Context, clusters []workv1alpha2.TargetCluster) (map[string][]corev1.Taint, error) {
	all, err := listClusters(ctx, r.Client)
	if err != nil {
		return nil, err
	}
	wanted := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		wanted[c.Name] = true
	}
	out := make(map[string][]corev1.Taint, len(clusters))
	for i := range all {
		if wanted[all[i].Name] {
			out[all[i].Name] = NoExecuteTaints(all[i].Spec.Taints) // a copy: the items are the cache's
		}
	}
	return out, nil
}

// ReconcileResourceBinding runs one pass for the ResourceBinding req
// names, as the controller does.
func (r *TaintManager) ReconcileResourceBinding(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, resourceBindingKind, req)
}

func (r *TaintManager) reconcile(ctx context.Context, k bindingKind, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues(k.name, req.NamespacedName)
	ctx = ctrl.LoggerInto(ctx, log)
	if !r.Gates.Enabled(features.Failover) || !r.Enabled {
		return ctrl.Result{}, nil
	}
	obj := k.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading %s %s: %w", k.name, req.NamespacedName, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	spec, _ := mustParts(obj)
	if len(spec.Clusters) == 0 || !workv1alpha2.IsClaimed(obj.GetLabels()) {
		// A binding no policy claims stays where it is: no scheduler would
		// place what an eviction takes away.
		return ctrl.Result{}, nil
	}
	taints, err := r.clusterTaints(ctx, spec.Clusters)
	if err != nil {
		return ctrl.Result{}, err
	}
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	now := r.Clock.Now()
	due, requeueAfter := PlanTaintEvictions(spec.Clusters, taints, tolerations, now)
	if len(due) == 0 {
		return ctrl.Result{RequeueAfter: requeueAfter}, nil
	}

	// The storm guard admits each eviction or says when to ask again.
	var admitted []TaintEviction
	for _, e := range due {
		if r.Guard == nil {
			admitted = append(admitted, e)
			continue
		}
		a, err := r.Guard.Admit(ctx, k.short+"/"+req.String()+"@"+e.Cluster, e.Cluster)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("asking the storm guard: %w", err)
		}
		if !a.Allowed {
			log.V(1).Info("eviction held by the storm guard", "cluster", e.Cluster, "group", a.Group, "state", a.State.String(), "reason", a.Reason, "retryAfter", a.RetryAfter)
			if requeueAfter == 0 || a.RetryAfter < requeueAfter {
				requeueAfter = a.RetryAfter
			}
			continue
		}
		admitted = append(admitted, e)
	}
	if len(admitted) == 0 {
		return ctrl.Result{RequeueAfter: requeueAfter}, nil
	}
	if res, done, err := r.evict(ctx, k, obj, admitted, now); done {
		return res, err
	}
	return ctrl.Result{RequeueAfter: requeueAfter}, nil
}

// evict writes the evictions in one spec Update. done is true when the
// reconcile must return at once with the result and error.
func (r *TaintManager) evict(ctx context.Context, k bindingKind, obj client.Object, evictions []TaintEviction, now time.Time) (ctrl.Result, bool, error) {
	spec, status := mustParts(obj)
	p := PlanTaintEviction(spec, status, evictions, r.DefaultPurgeMode, r.Gates, now)
	return writeEvictions(ctx, r.Client, r.Recorder, obj, spec, p.Spec, p.Evicted, p.reports, p.Mode, "a tainted cluster")
}

// EvictionPlan is the spec a failover controller writes to evict clusters
// from a binding.
type EvictionPlan struct {
	// Spec is the binding's spec after the evictions (a copy).
	Spec *workv1alpha2.ResourceBindingSpec
	// Mode is the purge mode of the new tasks.
	Mode policyv1alpha1.PurgeMode
	// Evicted are the clusters, in order.
	Evicted []string
	// reports tell the user what the evictions carried or could not.
	reports []evictionReport
}

// StateProblems are the statePreservation rules whose value could not be
// captured for the eviction from cluster.
func (p EvictionPlan) StateProblems(cluster string) []StateProblem {
	for _, r := range p.reports {
		if r.cluster == cluster {
			return r.problems
		}
	}
	return nil
}

// PlanTaintEviction is the taint manager's eviction of the given clusters
// from a binding: reason TaintUntolerated, the purge mode of
// spec.failover.cluster (defaultMode without one), the state of its
// statePreservation rules when the StatefulFailoverInjection gate is on.
// spec and status are not modified.
func PlanTaintEviction(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, evictions []TaintEviction, defaultMode policyv1alpha1.PurgeMode, gates *features.Gates, now time.Time) EvictionPlan {
	var behavior *policyv1alpha1.ClusterFailoverBehavior
	if spec.Failover != nil {
		behavior = spec.Failover.Cluster
	}
	mode := behavior.EffectivePurgeMode(defaultMode)
	var rules []policyv1alpha1.StatePreservationRule
	if behavior != nil && behavior.StatePreservation != nil && gates.Enabled(features.StatefulFailoverInjection) {
		rules = behavior.StatePreservation.Rules
	}

	p := EvictionPlan{Spec: spec.DeepCopy(), Mode: mode}
	before := clusterNames(spec.Clusters)
	for _, e := range evictions {
		state, problems, carried := captureForEviction(spec, status, rules, e.Cluster)
		notes := []string{e.Message}
		if carried != "" {
			notes = append(notes, carried)
		}
		for _, pr := range problems {
			notes = append(notes, "state not preserved for "+pr.String())
		}
		Evict(p.Spec, e.Cluster, EvictOptions{
			Reason:              workv1alpha2.EvictionReasonTaintUntolerated,
			Producer:            workv1alpha2.EvictionProducerTaintManager,
			PurgeMode:           mode,
			PreservedLabelState: state,
			Message:             strings.Join(notes, "; "),
			ClustersBefore:      before,
			Now:                 now,
		})
		p.Evicted = append(p.Evicted, e.Cluster)
		p.reports = append(p.reports, evictionReport{cluster: e.Cluster, problems: problems, note: carried})
	}
	return p
}
