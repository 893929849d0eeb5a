package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// TaintReconciler keeps the scheduling taints of a Cluster in step with its
// Ready condition (see planTaints). It writes spec.taints, and only the
// not-ready:NoSchedule, unreachable:NoSchedule and flapping:NoSchedule
// entries of it and the timeAdded of NoExecute taints that have none; and
// the cluster.lifeboat.dev/ready-failures annotation (flap damping's
// record) and cluster.lifeboat.dev/no-execute-cleared (failback's).
type TaintReconciler struct {
	Client          client.Client
	Recorder        events.EventRecorder
	Clock           clock.PassiveClock
	ConcurrentSyncs int
	// FlapDamping configures the flapping taint; a zero Hold turns it off.
	FlapDamping FlapDamping
	// Metrics records which clusters are damped; nil records nothing.
	Metrics *Metrics
}

// SetupWithManager watches Clusters whose Ready condition, taints or
// ready-failures annotation changed.
func (r *TaintReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-taint").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
				n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
				return !ok1 || !ok2 || readyStatus(o) != readyStatus(n) || !readyTransitionTime(o).Equal(readyTransitionTime(n)) ||
					o.Annotations[clusterv1alpha1.AnnotationReadyFailures] != n.Annotations[clusterv1alpha1.AnnotationReadyFailures] ||
					!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.ConcurrentSyncs, NewQueue: queue.New}).
		Complete(r)
}

// taintPlan is what the cluster-taint controller writes to one Cluster.
type taintPlan struct {
	taints []corev1.Taint
	// failures is the ready-failures annotation's value ("": none).
	failures string
	// noExecute is the no-execute-cleared annotation's value ("": none).
	noExecute string
	flap      flapDecision
	// stamped are the NoExecute taints that got timeAdded.
	stamped []corev1.Taint
	// flapping: the flapping taint was added (true) or removed (false);
	// nil when unchanged.
	flapping *bool
	changed  bool
}

// planTaints decides a cluster's scheduling taints, the timeAdded of its
// unstamped NoExecute taints and its flap-damping record at now:
//
//  1. the not-ready and unreachable NoSchedule taints follow Ready
//     (schedulingTaints);
//  2. the flapping NoSchedule taint is present while decideFlapDamping
//     says the cluster is damped, and the annotation holds its record;
//  3. every NoExecute taint without timeAdded gets now (stampTimeAdded).
//
// changed says whether spec.taints or the annotation differ from the
// cluster's.
func planTaints(c *clusterv1alpha1.Cluster, now time.Time, cfg FlapDamping) taintPlan {
	ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	taints, changed := schedulingTaints(c.Spec.Taints, ready, now)
	stored := c.Annotations[clusterv1alpha1.AnnotationReadyFailures]
	p := taintPlan{flap: decideFlapDamping(parseFailures(stored), ready, wasDown(c.Spec.Taints, ready), now, cfg)}
	p.failures = formatFailures(p.flap.failures)
	if cfg.Hold <= 0 {
		p.failures = stored
	}
	var flapChanged bool
	taints, flapChanged = setTaint(taints, flappingTaint, p.flap.damped, now)
	if flapChanged {
		p.flapping = &p.flap.damped
	}
	taints, p.stamped = stampTimeAdded(taints, now)
	p.taints = taints
	storedNoExecute := c.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared]
	p.noExecute = noExecuteRecord(storedNoExecute, taints, now)
	p.changed = changed || flapChanged || len(p.stamped) > 0 || p.failures != stored || p.noExecute != storedNoExecute
	return p
}

// noExecuteRecord is the no-execute-cleared annotation for a cluster with
// taints at now, given its stored value: NoExecutePending while a NoExecute
// taint is there; the time the cluster was first seen without one after
// that; else the stored value as it is.
func noExecuteRecord(stored string, taints []corev1.Taint, now time.Time) string {
	for i := range taints {
		if taints[i].Effect == corev1.TaintEffectNoExecute {
			return clusterv1alpha1.NoExecutePending
		}
	}
	if stored == clusterv1alpha1.NoExecutePending {
		return now.UTC().Format(time.RFC3339)
	}
	return stored
}

// wasDown says whether Ready, not True now, was already not True with the
// other status when this controller last wrote the cluster: False with the
// unreachable taint it keeps for Unknown, or Unknown with the not-ready
// taint it keeps for False. The same taint as the status now means a
// failure this controller has not recorded (it missed the True between
// two outages): that one counts.
func wasDown(taints []corev1.Taint, ready *metav1.Condition) bool {
	if ready == nil {
		return false
	}
	var other *corev1.Taint
	switch ready.Status {
	case metav1.ConditionFalse:
		other = &unreachableTaint
	case metav1.ConditionUnknown:
		other = &notReadyTaint
	default:
		return false
	}
	for i := range taints {
		if taints[i].MatchTaint(other) {
			return true
		}
	}
	return false
}

// Reconcile adds or removes the scheduling taints of one cluster, stamps
// its NoExecute taints and keeps its flap-damping record.
func (r *TaintReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		r.Metrics.forget(cluster.Name)
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	p := planTaints(&cluster, now, r.FlapDamping)
	r.Metrics.setDamped(cluster.Name, p.flap.damped)
	var result ctrl.Result
	if !p.flap.until.IsZero() && p.flap.damped {
		result.RequeueAfter = max(p.flap.until.Sub(now), minProbeDelay)
	}
	if !p.changed {
		return result, nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = p.taints
	if p.failures == "" {
		delete(cluster.Annotations, clusterv1alpha1.AnnotationReadyFailures)
	} else {
		if cluster.Annotations == nil {
			cluster.Annotations = map[string]string{}
		}
		cluster.Annotations[clusterv1alpha1.AnnotationReadyFailures] = p.failures
	}
	if p.noExecute == "" {
		delete(cluster.Annotations, clusterv1alpha1.AnnotationNoExecuteCleared)
	} else {
		if cluster.Annotations == nil {
			cluster.Annotations = map[string]string{}
		}
		cluster.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared] = p.noExecute
	}
	if err := r.Client.Patch(ctx, &cluster, patch); err != nil {
		if apierrors.IsConflict(err) {
			return requeueOnConflict(ctx)
		}
		r.event(&cluster, corev1.EventTypeWarning, "TaintClusterFailed", "failed to update scheduling taints: %v", err)
		return ctrl.Result{}, fmt.Errorf("updating taints of cluster %s: %w", cluster.Name, err)
	}
	r.announce(&cluster, p)
	log.Info("updated scheduling taints", "ready", readyStatus(&cluster), "flapDamped", p.flap.damped, "stamped", formatTaints(p.stamped))
	return result, nil
}

// Event reasons of flap damping, on the Cluster.
const (
	// EventReasonClusterFlapping (Warning): the cluster failed repeatedly
	// and gets no new placements until it has been Ready for the hold.
	EventReasonClusterFlapping = "ClusterFlapping"
	// EventReasonClusterFlappingEnded (Normal): the hold is over.
	EventReasonClusterFlappingEnded = "ClusterFlappingEnded"
	// EventReasonTaintTimeAdded (Normal): a NoExecute taint without
	// timeAdded was stamped.
	EventReasonTaintTimeAdded = "TaintTimeAdded"
)

// announce records the Events of what a written plan changed.
func (r *TaintReconciler) announce(cluster *clusterv1alpha1.Cluster, p taintPlan) {
	r.event(cluster, corev1.EventTypeNormal, "TaintClusterSucceed", "scheduling taints now %s (%s)", describeTaints(p.taints), describeReady(cluster))
	if len(p.stamped) > 0 {
		r.event(cluster, corev1.EventTypeNormal, EventReasonTaintTimeAdded,
			"NoExecute taint(s) %s had no timeAdded; stamped now, tolerationSeconds count from it", strings.Join(formatTaints(p.stamped), ", "))
	}
	switch {
	case p.flapping == nil:
	case *p.flapping:
		r.event(cluster, corev1.EventTypeWarning, EventReasonClusterFlapping,
			"Ready turned False %d times within %s: no new placements here (taint %s) until the cluster has been Ready for %s",
			p.flap.recent, r.FlapDamping.Window, formatTaint(flappingTaint), p.flap.hold)
	default:
		r.event(cluster, corev1.EventTypeNormal, EventReasonClusterFlappingEnded,
			"the cluster has stayed Ready through its flap-damping hold: taint %s removed", formatTaint(flappingTaint))
	}
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

// readyTransitionTime is the Ready condition's lastTransitionTime, or the zero
// time when there is none.
func readyTransitionTime(c *clusterv1alpha1.Cluster) time.Time {
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}

func describeTaints(taints []corev1.Taint) string {
	var out []string
	for _, t := range taints {
		if t.MatchTaint(&notReadyTaint) || t.MatchTaint(&unreachableTaint) || t.MatchTaint(&flappingTaint) {
			out = append(out, formatTaint(t))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return fmt.Sprint(out)
}
