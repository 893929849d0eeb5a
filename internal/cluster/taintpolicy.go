package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
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
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// Event reasons of the ClusterTaintPolicy controller on a Cluster; Karmada's
// names (shared with the scheduling-taint controller).
const (
	EventReasonTaintClusterSucceed = "TaintClusterSucceed"
	EventReasonTaintClusterFailed  = "TaintClusterFailed"
)

// conditionsMatch reports whether every MatchCondition matches the
// cluster's conditions (they are ANDed), as Karmada evaluates them:
//
//  1. an empty list never matches (a policy without addOnConditions never
//     adds, one without removeOnConditions never removes);
//  2. a MatchCondition whose conditionType the cluster does not have does
//     not match, with either operator (a missing condition is not treated
//     as Unknown);
//  3. In matches when the condition's status is one of statusValues, NotIn
//     when it is none of them;
//  4. an unknown operator makes the whole list not match.
func conditionsMatch(conds []metav1.Condition, matches []policyv1alpha1.MatchCondition) bool {
	if len(matches) == 0 {
		return false
	}
	for _, m := range matches {
		var cond *metav1.Condition
		for i := range conds {
			if conds[i].Type == m.ConditionType {
				cond = &conds[i]
				break
			}
		}
		listed := false
		if cond != nil {
			for _, v := range m.StatusValues {
				if v == cond.Status {
					listed = true
					break
				}
			}
		}
		switch m.Operator {
		case policyv1alpha1.MatchConditionOpIn:
			if cond == nil || !listed {
				return false
			}
		case policyv1alpha1.MatchConditionOpNotIn:
			if cond == nil || listed {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// policyTaintChange is what the policies did to a cluster's taints.
type policyTaintChange struct {
	// added and removed are the net changes, by (key, effect).
	added, removed []corev1.Taint
	// policies are the policies that added or removed a taint, in order.
	policies []string
}

// empty: spec.taints is unchanged.
func (c policyTaintChange) empty() bool { return len(c.added) == 0 && len(c.removed) == 0 }

// applyTaintPolicies returns the cluster's spec.taints after the policies
// and what changed. Karmada's algorithm:
//
//  1. policies are applied oldest first (creationTimestamp, then name), so
//     a later policy wins a conflict;
//  2. a policy acts only on the clusters its targetClusters selects (nil
//     selects every cluster);
//  3. when all its addOnConditions match, each of its taints that the
//     cluster does not carry yet (same key and effect) is appended with
//     timeAdded = now; a taint with the same key and effect but another
//     value is left as it is;
//  4. then, when all its removeOnConditions match, the cluster's taint with
//     the same key and effect as each of its taints is removed, whatever
//     its value and whoever added it (a policy owns its (key, effect)
//     pairs, as in Karmada: there is no record of who added a taint).
//
// Taints with other (key, effect) pairs are never touched, and their order
// is kept. Taints are returned unchanged (the same slice) when nothing
// changed.
func applyTaintPolicies(cluster *clusterv1alpha1.Cluster, policies []policyv1alpha1.ClusterTaintPolicy, now time.Time) ([]corev1.Taint, policyTaintChange) {
	ordered := make([]*policyv1alpha1.ClusterTaintPolicy, 0, len(policies))
	for i := range policies {
		ordered = append(ordered, &policies[i])
	}
	sort.SliceStable(ordered, func(i, j int) bool {
		a, b := ordered[i].CreationTimestamp, ordered[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return ordered[i].Name < ordered[j].Name
	})

	taints := append([]corev1.Taint(nil), cluster.Spec.Taints...)
	var acted []string
	for _, p := range ordered {
		if !core.ClusterMatches(cluster, p.Spec.TargetClusters) {
			continue
		}
		changed := false
		if conditionsMatch(cluster.Status.Conditions, p.Spec.AddOnConditions) {
			for _, pt := range p.Spec.Taints {
				want := corev1.Taint{Key: pt.Key, Value: pt.Value, Effect: pt.Effect}
				if indexOfTaint(taints, want) >= 0 {
					continue
				}
				want.TimeAdded = &metav1.Time{Time: now}
				taints = append(taints, want)
				changed = true
			}
		}
		if conditionsMatch(cluster.Status.Conditions, p.Spec.RemoveOnConditions) {
			for _, pt := range p.Spec.Taints {
				if i := indexOfTaint(taints, corev1.Taint{Key: pt.Key, Effect: pt.Effect}); i >= 0 {
					taints = append(taints[:i:i], taints[i+1:]...)
					changed = true
				}
			}
		}
		if changed {
			acted = append(acted, p.Name)
		}
	}

	if equality.Semantic.DeepEqual(taints, cluster.Spec.Taints) || (len(taints) == 0 && len(cluster.Spec.Taints) == 0) {
		return cluster.Spec.Taints, policyTaintChange{}
	}
	change := policyTaintChange{policies: acted}
	for _, t := range taints {
		if !containsExactTaint(cluster.Spec.Taints, t) {
			change.added = append(change.added, t)
		}
	}
	for _, t := range cluster.Spec.Taints {
		if !containsExactTaint(taints, t) {
			change.removed = append(change.removed, t)
		}
	}
	if len(taints) == 0 {
		taints = nil
	}
	return taints, change
}

// indexOfTaint returns the index of the taint with t's key and effect, or -1.
func indexOfTaint(taints []corev1.Taint, t corev1.Taint) int {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return i
		}
	}
	return -1
}

// containsExactTaint reports whether taints has t with the same key,
// value, effect and timeAdded.
func containsExactTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if equality.Semantic.DeepEqual(taints[i], t) {
			return true
		}
	}
	return false
}

// TaintPolicyReconciler applies every ClusterTaintPolicy to a Cluster (see
// applyTaintPolicies). It writes spec.taints, and only the (key, effect)
// pairs listed by a policy that selects the cluster. Deleting a policy
// leaves its taints in place, and a cluster a policy stops selecting keeps
// the taints the policy added. With the Failover gate off it is not
// registered (as in Karmada).
type TaintPolicyReconciler struct {
	// Client reads Clusters and ClusterTaintPolicies (from the cache) and
	// patches Clusters.
	Client client.Client
	// Recorder records TaintClusterSucceed/TaintClusterFailed on Clusters.
	Recorder events.EventRecorder
	// Clock stamps timeAdded; clock.RealClock{} in production.
	Clock clock.PassiveClock
	// Gates: Failover registers the controller.
	Gates *features.Gates
	// ConcurrentSyncs is the number of Clusters reconciled at once; 0
	// means 1.
	ConcurrentSyncs int
}

// SetupWithManager watches Clusters (created, or their conditions or
// taints changed) and ClusterTaintPolicies (created, or their spec
// changed: every cluster the policy selects is reconciled). Deletions are
// ignored.
func (r *TaintPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if !r.Gates.Enabled(features.Failover) {
		return nil
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("cluster-taint-policy").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
				n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
				return !ok1 || !ok2 ||
					!equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
					!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
			},
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		Watches(&policyv1alpha1.ClusterTaintPolicy{},
			handler.EnqueueRequestsFromMapFunc(r.clustersOfPolicy),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
				},
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs, NewQueue: queue.New}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the ClusterTaintPolicy controller: %w", err)
	}
	return nil
}

// clustersOfPolicy maps a policy to the clusters it selects.
func (r *TaintPolicyReconciler) clustersOfPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*policyv1alpha1.ClusterTaintPolicy)
	if !ok {
		return nil
	}
	var clusters clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Clusters for a ClusterTaintPolicy", "clusterTaintPolicy", p.Name)
		return nil
	}
	var out []reconcile.Request
	for i := range clusters.Items {
		if core.ClusterMatches(&clusters.Items[i], p.Spec.TargetClusters) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: clusters.Items[i].Name}})
		}
	}
	return out
}

// Reconcile applies the ClusterTaintPolicies to one Cluster.
func (r *TaintPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var policies policyv1alpha1.ClusterTaintPolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing ClusterTaintPolicies: %w", err)
	}
	taints, change := applyTaintPolicies(&cluster, policies.Items, r.Clock.Now())
	if change.empty() {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	if err := r.Client.Patch(ctx, &cluster, patch); err != nil {
		if apierrors.IsConflict(err) {
			return requeueOnConflict(ctx)
		}
		r.event(&cluster, corev1.EventTypeWarning, EventReasonTaintClusterFailed,
			"ClusterTaintPolicy %s could not update the taints (%s): %v", strings.Join(change.policies, ", "), describeTaintChange(change), err)
		return ctrl.Result{}, fmt.Errorf("updating taints of cluster %s: %w", cluster.Name, err)
	}
	r.event(&cluster, corev1.EventTypeNormal, EventReasonTaintClusterSucceed,
		"ClusterTaintPolicy %s: %s (%s)", strings.Join(change.policies, ", "), describeTaintChange(change), describeReady(&cluster))
	log.Info("applied ClusterTaintPolicies", "policies", change.policies,
		"added", formatTaints(change.added), "removed", formatTaints(change.removed))
	return ctrl.Result{}, nil
}

func (r *TaintPolicyReconciler) event(cluster *clusterv1alpha1.Cluster, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cluster, nil, eventType, reason, "TaintCluster", note, args...)
	}
}

func describeTaintChange(c policyTaintChange) string {
	var parts []string
	if len(c.added) > 0 {
		parts = append(parts, "added "+strings.Join(formatTaints(c.added), ", "))
	}
	if len(c.removed) > 0 {
		parts = append(parts, "removed "+strings.Join(formatTaints(c.removed), ", "))
	}
	return strings.Join(parts, "; ")
}

func formatTaints(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, formatTaint(t))
	}
	return out
}
