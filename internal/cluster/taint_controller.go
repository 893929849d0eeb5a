package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// TaintReconciler keeps the scheduling taints of a Cluster in step with its
// Ready condition (see schedulingTaints). It writes spec.taints, and only the
// not-ready:NoSchedule and unreachable:NoSchedule entries of it.
type TaintReconciler struct {
	Client          client.Client
	Recorder        events.EventRecorder
	Clock           clock.PassiveClock
	ConcurrentSyncs int
}

// SetupWithManager watches Clusters whose Ready status or taints changed.
func (r *TaintReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-taint").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
				n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
				return !ok1 || !ok2 || readyStatus(o) != readyStatus(n) ||
					!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs}).
		Complete(r)
}

// Reconcile adds or removes the scheduling taints of one cluster.
func (r *TaintReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ready := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	taints, changed := schedulingTaints(cluster.Spec.Taints, ready, r.Clock.Now())
	if !changed {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	if err := r.Client.Patch(ctx, &cluster, patch); err != nil {
		if apierrors.IsConflict(err) {
			return requeueOnConflict(ctx)
		}
		r.event(&cluster, corev1.EventTypeWarning, "TaintClusterFailed", "failed to update scheduling taints: %v", err)
		return ctrl.Result{}, fmt.Errorf("updating taints of cluster %s: %w", cluster.Name, err)
	}
	r.event(&cluster, corev1.EventTypeNormal, "TaintClusterSucceed", "scheduling taints now %s (%s)", describeTaints(taints), describeReady(&cluster))
	log.Info("updated scheduling taints", "ready", readyStatus(&cluster))
	return ctrl.Result{}, nil
}

func (r *TaintReconciler) event(cluster *clusterv1alpha1.Cluster, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cluster, nil, eventType, reason, "TaintCluster", note, args...)
	}
}

// readyStatus is the Ready condition's status, or "" when there is none.
func readyStatus(c *clusterv1alpha1.Cluster) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
		return string(cond.Status)
	}
	return ""
}

func describeReady(c *clusterv1alpha1.Cluster) string {
	if s := readyStatus(c); s != "" {
		return "Ready " + s
	}
	return "no Ready condition yet"
}

func describeTaints(taints []corev1.Taint) string {
	var out []string
	for _, t := range taints {
		if t.MatchTaint(&notReadyTaint) || t.MatchTaint(&unreachableTaint) {
			out = append(out, formatTaint(t))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return fmt.Sprint(out)
}
