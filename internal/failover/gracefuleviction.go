package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// OldCopyExistsFunc reports whether the copy of binding obj in cluster
// still exists (e.g. its Work is still there, maybe deleting).
type OldCopyExistsFunc func(ctx context.Context, obj client.Object, cluster string) (bool, error)

// GracefulEvictionReconciler finishes evictions: it removes eviction tasks
// that are done (taskDone), keeps status.failoverHistory in step with the
// tasks and the replacement, and says in the FailoverTargetAvailable
// condition whether the evicted workload has somewhere to go. While other
// workloads still wait for their replacement, it holds back the writes
// that can wait (Wave). It handles ResourceBindings and
// ClusterResourceBindings.
type GracefulEvictionReconciler struct {
	// Client reads bindings (from the cache) and writes them.
	Client client.Client
	// Recorder records Events on bindings and resource templates.
	Recorder record.EventRecorder
	// Events holds back the per-workload Events of a mass failover past
	// its burst and summarises them on the evicted Cluster (nil: every
	// Event is recorded).
	Events *eventbudget.Budget
	// Clock tells the time; clock.RealClock{} in production.
	Clock clock.PassiveClock
	// Metrics may be nil.
	Metrics *Metrics
	// DefaultGracePeriod applies to tasks without gracePeriodSeconds; 0
	// means DefaultGracePeriod (10m).
	DefaultGracePeriod time.Duration
	// OldCopyExists, if set, is asked too before a Directly task is closed
	// (see WorkExists). Without it the old copy counts as gone when
	// status.aggregatedStatus has no item for its cluster.
	OldCopyExists OldCopyExistsFunc
	// Wave, if set, holds back clean-up writes while other failovers are
	// in flight (see Wave). nil holds nothing.
	Wave *Wave
	// Fenced, if set, tells from when the copy of a binding in a Pull
	// cluster counts as stopped by its agent's fencing (see FencedBy); a
	// Directly task then closes at that time without waiting for the
	// old copy's deletion to be confirmed. nil fences nothing.
	Fenced FencedFunc
	// MaxConcurrentReconciles per binding kind; 0 means 1.
	MaxConcurrentReconciles int
}

// IndexBindingsByEvictedCluster indexes ResourceBindings and
// ClusterResourceBindings by the fromCluster of their eviction tasks, so
// that a cluster that recovers brings back the bindings evicted from it.
const IndexBindingsByEvictedCluster = "failover.lifeboat.dev/evicted-cluster"

// evictedClusterValues is the index function of
// IndexBindingsByEvictedCluster.
func evictedClusterValues(obj client.Object) []string {
	spec, _, err := parts(obj)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(spec.GracefulEvictionTasks))
	for _, t := range spec.GracefulEvictionTasks {
		out = append(out, t.FromCluster)
	}
	return out
}

// SetupWithManager registers one controller for ResourceBindings and one
// for ClusterResourceBindings. Besides the bindings themselves, a change of
// a Cluster's Ready condition or NoExecute taints brings back the bindings
// with an eviction task from it: an eviction is undone when its cluster
// recovers before anything else was placed (planTasks).
func (r *GracefulEvictionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	for _, k := range bindingKinds {
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.newObject(), IndexBindingsByEvictedCluster, evictedClusterValues); err != nil {
			return fmt.Errorf("indexing %ss by evicted cluster: %w", k.name, err)
		}
	}
	return setupPerKind(mgr, "graceful-eviction", gracefulEvictionRelevant, true, r.MaxConcurrentReconciles, r.reconcile,
		func(b *builder.Builder, k bindingKind) *builder.Builder {
			return b.Watches(&clusterv1alpha1.Cluster{},
				handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
					return bindingsIndexed(ctx, r.Client, k, IndexBindingsByEvictedCluster, obj.GetName())
				}),
				builder.WithPredicates(clusterHealthChanged()))
		})
}

// clusterHealthChanged passes Cluster updates that change its Ready
// condition's status or its NoExecute taints.
func clusterHealthChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
			n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if !ok1 || !ok2 {
				return false
			}
			ready := func(c *clusterv1alpha1.Cluster) metav1.ConditionStatus {
				if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
					return cond.Status
				}
				return metav1.ConditionUnknown
			}
			return ready(o) != ready(n) || !equality.Semantic.DeepEqual(NoExecuteTaints(o.Spec.Taints), NoExecuteTaints(n.Spec.Taints))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// bindingsIndexed returns the bindings of kind k whose index holds value.
func bindingsIndexed(ctx context.Context, c client.Reader, k bindingKind, index, value string) []reconcile.Request {
	var list client.ObjectList = &workv1alpha2.ResourceBindingList{}
	if k.short == clusterResourceBindingKind.short {
		list = &workv1alpha2.ClusterResourceBindingList{}
	}
	if err := c.List(ctx, list, client.MatchingFields{index: value}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing bindings", "index", index, "value", value, "kind", k.name)
		return nil
	}
	var out []reconcile.Request
	switch l := list.(type) {
	case *workv1alpha2.ResourceBindingList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: l.Items[i].Namespace, Name: l.Items[i].Name}})
		}
	case *workv1alpha2.ClusterResourceBindingList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: l.Items[i].Name}})
		}
	}
	return out
}

// gracefulEvictionRelevant: the binding has tasks, history entries to
// complete, or a condition to clean up.
func gracefulEvictionRelevant(obj client.Object) bool {
	spec, status, err := parts(obj)
	if err != nil {
		return false
	}
	return len(spec.GracefulEvictionTasks) > 0 || historyOpen(status) ||
		meta.FindStatusCondition(status.Conditions, ConditionFailoverTargetAvailable) != nil
}

// ReconcileResourceBinding runs one pass for the ResourceBinding req
// names, as the controller does.
func (r *GracefulEvictionReconciler) ReconcileResourceBinding(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, resourceBindingKind, req)
}

func (r *GracefulEvictionReconciler) reconcile(ctx context.Context, k bindingKind, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues(k.name, req.NamespacedName)
	ctx = ctrl.LoggerInto(ctx, log)
	obj := k.newObject()
	key := k.short + "/" + req.String()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.setOpenTasks(key, 0)
			r.Wave.Forget(key)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading %s %s: %w", k.name, req.NamespacedName, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		r.Metrics.setOpenTasks(key, 0)
		r.Wave.Forget(key)
		return ctrl.Result{}, nil
	}
	spec, status := mustParts(obj)
	now := r.Clock.Now()
	o, err := r.observe(ctx, obj, spec, status, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planTasks(o, now)
	r.Wave.Observe(key, inFlight(o), !scheduled(o.generation, o.status), now)
	healthyAt := healthySince(status, now)

	// 1. Status first, so the history has an entry for every task before
	// a task is removed. The condition is the one the tasks kept by the
	// plan give: written now, a task about to be removed does not cost a
	// second status write once it is gone.
	history, change := syncHistory(obj.GetGeneration(), spec, status, healthyAt)
	newStatus := status.DeepCopy()
	newStatus.FailoverHistory = history
	after := spec
	if plan.changed {
		kept := *spec
		kept.GracefulEvictionTasks = plan.kept
		kept.Clusters = afterAbandon(spec.Clusters, plan)
		after = &kept
	}
	if len(plan.abandoned) > 0 {
		// The abandonment is in the history before the spec write, as
		// every eviction is, and records when the failback was given up,
		// which keeps the failback controller away for a window.
		newStatus.FailoverHistory = abandonedHistory(newStatus.FailoverHistory, plan.abandoned, clusterNames(spec.Clusters), clusterNames(after.Clusters))
	}
	var oldTargetMessage string
	if c := meta.FindStatusCondition(status.Conditions, ConditionFailoverTargetAvailable); c != nil {
		oldTargetMessage = c.Message
	}
	cond, keepCond := targetCondition(obj.GetGeneration(), after, status)
	wasNoTarget := meta.IsStatusConditionFalse(status.Conditions, ConditionFailoverTargetAvailable)
	switch {
	case keepCond:
	case cond == nil:
		meta.RemoveStatusCondition(&newStatus.Conditions, ConditionFailoverTargetAvailable)
	default:
		cond.ObservedGeneration = obj.GetGeneration()
		cond.LastTransitionTime = metav1.NewTime(now).Rfc3339Copy()
		for _, h := range plan.held {
			// Said in the condition, so that it is written (and its Event
			// sent) once, not at every pass.
			cond.Message += " The copy in " + h.task.FromCluster + " is kept: " + h.reason + "."
		}
		if placed := placedSince(o, now); cond.Status == metav1.ConditionTrue && !placed.IsZero() && placed.Before(now) {
			// The grace periods count from here (graceStart): the moment
			// the scheduler placed the target, not this write.
			cond.LastTransitionTime = metav1.NewTime(placed).Rfc3339Copy()
			if prev := meta.FindStatusCondition(newStatus.Conditions, ConditionFailoverTargetAvailable); prev != nil &&
				prev.Status == metav1.ConditionTrue && !prev.LastTransitionTime.Equal(&cond.LastTransitionTime) {
				// A placement made after a newer eviction (placedSince):
				// its time replaces the one of the placement it followed.
				meta.RemoveStatusCondition(&newStatus.Conditions, ConditionFailoverTargetAvailable)
			}
		}
		meta.SetStatusCondition(&newStatus.Conditions, *cond)
	}
	writeStatus := !change.empty() || !conditionsEqual(status.Conditions, newStatus.Conditions) ||
		len(newStatus.FailoverHistory) != len(status.FailoverHistory)
	if writeStatus && keepCond && !plan.changed && len(change.healed) == 0 && conditionsEqual(status.Conditions, newStatus.Conditions) {
		if wait := answerWait(change.appended, now); wait > 0 {
			// Only new history entries, and the scheduler has yet to
			// answer: they go with the write of its answer.
			writeStatus = false
			if plan.requeueAfter == 0 || wait < plan.requeueAfter {
				plan.requeueAfter = wait
			}
		}
	}
	if !writeStatus && !plan.changed {
		r.Wave.Release(key)
		r.Metrics.setOpenTasks(key, len(spec.GracefulEvictionTasks))
		return ctrl.Result{RequeueAfter: plan.requeueAfter}, nil
	}
	if len(plan.cancelled) == 0 && len(plan.abandoned) == 0 && holdable(plan, cond, wasNoTarget) {
		if after, held := r.Wave.Hold(key, now); held {
			log.V(1).Info("clean-up held while other failovers are in flight", "lookAgainIn", after)
			r.Metrics.setOpenTasks(key, len(spec.GracefulEvictionTasks))
			if plan.requeueAfter > 0 {
				after = min(after, plan.requeueAfter)
			}
			return ctrl.Result{RequeueAfter: after}, nil
		}
	}
	// healedNow are the replacements found Healthy in this pass whose
	// tasks this pass closes: one Event says both.
	var healedNow map[string]string
	if writeStatus {
		*status = *newStatus
		if err := r.Client.Status().Update(ctx, obj); err != nil {
			return r.writeFailed(ctx, err, "status")
		}
		healedNow = r.reportHistory(obj, spec, change, closing(plan))
		if cond != nil && cond.Status == metav1.ConditionFalse && !wasNoTarget {
			eventBoth(r.Recorder, obj, spec, "Warning", EventReasonNoFailoverTarget, "%s", cond.Message)
		}
		for _, h := range plan.held {
			if !strings.Contains(oldTargetMessage, h.reason) {
				log.Info("grace period passed; the only Healthy copy is kept", "cluster", h.task.FromCluster)
				eventBoth(r.Recorder, obj, spec, "Warning", EventReasonEvictedCopyKept,
					"The copy in %s is kept: %s.", h.task.FromCluster, h.reason)
			}
		}
	}

	// 2. Tasks.
	if plan.changed {
		spec.GracefulEvictionTasks = plan.kept
		spec.Clusters = after.Clusters
		if err := r.Client.Update(ctx, obj); err != nil {
			for from, note := range healedNow {
				r.replacementHealthy(obj, spec, from, note)
			}
			return r.writeFailed(ctx, err, "eviction tasks")
		}
		for _, c := range plan.cancelled {
			log.Info("eviction undone", "cluster", c.task.FromCluster, "reason", c.reason)
			r.Metrics.cancelled(c.task.Reason)
			eventFrom(r.Events, c.task.FromCluster, r.Recorder, obj, spec, "Normal", EventReasonEvictionCancelled,
				"The eviction from cluster %s is cancelled: %s.", c.task.FromCluster, c.reason)
		}
		for _, a := range plan.abandoned {
			log.Info("failback abandoned; the copy that runs stays", "cluster", a.task.FromCluster, "dropped", a.dropped)
			if len(a.dropped) == 0 {
				// Given up before the scheduler placed the current
				// generation, with nothing to remove.
				eventBoth(r.Recorder, obj, spec, "Warning", EventReasonFailbackAbandoned,
					"The failback is abandoned: its grace period passed before it completed; no copy is removed and the workload stays in %s.",
					strings.Join(append([]string{a.task.FromCluster}, a.kept...), ","))
				continue
			}
			eventBoth(r.Recorder, obj, spec, "Warning", EventReasonFailbackAbandoned,
				"The failback to %s is abandoned: the copy moved back was not healthy within the grace period; the workload stays in %s.",
				strings.Join(a.dropped, ","), a.task.FromCluster)
		}
		for _, rm := range plan.removed {
			log.Info("eviction task done", "cluster", rm.task.FromCluster, "reason", rm.reason)
			msg := fmt.Sprintf("Evict from cluster %s succeed: %s.", rm.task.FromCluster, rm.reason)
			if note, ok := healedNow[rm.task.FromCluster]; ok {
				msg += " The replacement was " + note + "."
			}
			eventFrom(r.Events, rm.task.FromCluster, r.Recorder, obj, spec, "Normal", EventReasonEvictionSucceed, "%s", msg)
		}
	}
	r.Metrics.setOpenTasks(key, len(spec.GracefulEvictionTasks))
	return ctrl.Result{RequeueAfter: plan.requeueAfter}, nil
}

// writeFailed turns a conflict into a quiet requeue (the next pass
// re-reads and decides again) and wraps other errors.
func (r *GracefulEvictionReconciler) writeFailed(ctx context.Context, err error, what string) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("write conflict; re-reading", "field", what)
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, fmt.Errorf("writing %s: %w", what, err)
}

func (r *GracefulEvictionReconciler) observe(ctx context.Context, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, now time.Time) (observed, error) {
	grace := r.DefaultGracePeriod
	if grace <= 0 {
		grace = DefaultGracePeriod
	}
	o := observed{generation: obj.GetGeneration(), spec: spec, status: status, defaultGrace: grace}
	switch {
	case len(spec.GracefulEvictionTasks) == 0:
	case len(spec.Clusters) == 0, schedulingFailed(o.generation, status):
		// Nothing placed instead: every evicted cluster, to tell whether
		// one recovered.
		o.clusters = map[string]*clusterv1alpha1.Cluster{}
		for _, t := range spec.GracefulEvictionTasks {
			c := &clusterv1alpha1.Cluster{}
			if err := r.Client.Get(ctx, types.NamespacedName{Name: t.FromCluster}, c); err == nil {
				o.clusters[t.FromCluster] = c
			} else if !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Error(err, "reading the evicted cluster; not undoing its eviction now", "cluster", t.FromCluster)
			}
		}
	default:
		// Only the clusters a decision needs: the one a failback left
		// (whether it can take the workload back when the failback is
		// overdue), and the one of a task past its grace period whose
		// copy reports Healthy (whether that copy is kept,
		// keptPastGrace).
		o.clusters = map[string]*clusterv1alpha1.Cluster{}
		for i := range spec.GracefulEvictionTasks {
			t := &spec.GracefulEvictionTasks[i]
			if _, read := o.clusters[t.FromCluster]; read || (t.Reason != workv1alpha2.EvictionReasonFailback && !overdueHealthy(t, o, now)) {
				continue
			}
			c := &clusterv1alpha1.Cluster{}
			if err := r.Client.Get(ctx, types.NamespacedName{Name: t.FromCluster}, c); err == nil {
				o.clusters[t.FromCluster] = c
			} else if !apierrors.IsNotFound(err) {
				return o, fmt.Errorf("reading cluster %s: %w", t.FromCluster, err)
			} else {
				o.clusters[t.FromCluster] = nil
			}
		}
	}
	if r.Fenced != nil {
		o.fencedAt = func(cluster string) (time.Time, bool) {
			return r.Fenced(ctx, obj, spec, cluster)
		}
	}
	if r.OldCopyExists != nil {
		o.oldCopyGone = func(cluster string) bool {
			if aggregatedItem(status, cluster) != nil {
				return false
			}
			exists, err := r.OldCopyExists(ctx, obj, cluster)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "checking the old copy; assuming it still exists", "cluster", cluster)
				return false
			}
			return !exists
		}
	}
	return o, nil
}

// answerWait is how much longer the history entries appended may wait for
// the scheduler's answer (core.EvictionAnswerWait after the earliest
// eviction); 0 when they may not. An eviction's history entry (and the
// Event that reports it) waits so that one status write records both: the
// entry and FailoverTargetAvailable. The task in spec.gracefulEvictionTasks
// shows the eviction meanwhile. Only a pass that writes nothing else waits:
// one that closes a task writes the entry first, as always.
func answerWait(appended []workv1alpha2.FailoverHistoryItem, now time.Time) time.Duration {
	var wait time.Duration
	for i, h := range appended {
		left := h.Time.Add(core.EvictionAnswerWait).Sub(now)
		if left <= 0 {
			return 0
		}
		if i == 0 || left < wait {
			wait = left
		}
	}
	return wait
}

// closing returns the clusters whose tasks the plan closes.
func closing(plan taskPlan) map[string]bool {
	out := map[string]bool{}
	if !plan.changed {
		return out
	}
	for _, rm := range plan.removed {
		out[rm.task.FromCluster] = true
	}
	return out
}

// reportHistory emits Events and metrics for what syncHistory changed. A
// replacement found Healthy for a task in closing gets no Event of its own:
// reportHistory returns where and how soon it was healthy, by evicted
// cluster, for the Event that says the task closed.
func (r *GracefulEvictionReconciler) reportHistory(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, change historyChange, closing map[string]bool) map[string]string {
	healedNow := map[string]string{}
	for _, h := range change.appended {
		r.Metrics.evicted(h.Reason, h.Producer)
		msg := fmt.Sprintf("Evicted from cluster %s (%s, by %s); purge mode %s", h.FromCluster, h.Reason, h.Producer, h.PurgeMode)
		if len(h.PreservedLabelState) > 0 {
			msg += fmt.Sprintf("; preserved state %s", formatState(h.PreservedLabelState))
		}
		if h.Message != "" {
			msg += ": " + h.Message
		}
		eventFrom(r.Events, h.FromCluster, r.Recorder, obj, spec, "Warning", EventReasonEvicted, "%s", msg)
	}
	for _, h := range change.healed {
		if !movedHealthy(h.Reason) {
			// A rebalance or failback moves a healthy workload: not a
			// failover.
			r.Metrics.failoverTook(h.ReplacementHealthyTime.Sub(detectionTime(spec, h)))
		}
		note := fmt.Sprintf("healthy on %s, %s after the eviction", strings.Join(h.ClustersAfter, ","), h.ReplacementHealthyTime.Sub(h.Time.Time))
		if closing[h.FromCluster] {
			healedNow[h.FromCluster] = note
			continue
		}
		r.replacementHealthy(obj, spec, h.FromCluster, note)
	}
	return healedNow
}

// replacementHealthy records that the replacement of the copy evicted from
// cluster is healthy; note says where and how long it took.
func (r *GracefulEvictionReconciler) replacementHealthy(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, from, note string) {
	eventFrom(r.Events, from, r.Recorder, obj, spec, "Normal", EventReasonReplacementHealthy,
		"The replacement of the copy evicted from %s is %s.", from, note)
}

// movedHealthy reports whether an eviction reason moves a healthy
// workload (a requested move, not a failover).
func movedHealthy(reason string) bool {
	switch reason {
	case workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionReasonFailback, workv1alpha2.EvictionReasonFailbackAbandoned:
		return true
	}
	return false
}

// detectionTime is when the failure behind h was first observed: for an
// application failure, the eviction time minus the toleration (the
// unhealthy timer started then); otherwise the eviction time.
func detectionTime(spec *workv1alpha2.ResourceBindingSpec, h workv1alpha2.FailoverHistoryItem) time.Time {
	if h.Reason == workv1alpha2.EvictionReasonApplicationFailure && spec.Failover != nil && spec.Failover.Application != nil {
		return h.Time.Add(-time.Duration(spec.Failover.Application.EffectiveTolerationSeconds()) * time.Second)
	}
	return h.Time.Time
}

// targetCondition returns the FailoverTargetAvailable condition the
// binding should have: nil to remove it; keep when nothing can be said yet
// (the scheduler has not looked at the binding since the eviction).
func targetCondition(generation int64, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) (*metav1.Condition, bool) {
	if len(spec.GracefulEvictionTasks) == 0 {
		return nil, false
	}
	from := make([]string, 0, len(spec.GracefulEvictionTasks))
	for _, t := range spec.GracefulEvictionTasks {
		from = append(from, t.FromCluster)
	}
	sort.Strings(from)
	evicted := strings.Join(from, ", ")
	sched := meta.FindStatusCondition(status.Conditions, workv1alpha2.Scheduled)
	if len(spec.Clusters) > 0 && schedulingFailed(generation, status) {
		why := "the scheduler could not place it"
		if sched.Message != "" {
			why = fmt.Sprintf("the scheduler: %s", strings.TrimSuffix(sched.Message, "."))
		}
		return &metav1.Condition{
			Type:   ConditionFailoverTargetAvailable,
			Status: metav1.ConditionFalse,
			Reason: ReasonNoFailoverTarget,
			Message: truncate(fmt.Sprintf("What was evicted from %s is not placed anywhere else (%s); %s. The copy in %s is kept until the scheduler places it.",
				evicted, why, keepTheirShares(spec.Clusters), evicted), 32768),
		}, false
	}
	if len(spec.Clusters) > 0 {
		return &metav1.Condition{
			Type:    ConditionFailoverTargetAvailable,
			Status:  metav1.ConditionTrue,
			Reason:  ReasonFailoverTargetPlaced,
			Message: fmt.Sprintf("The workload evicted from %s is placed on %s.", evicted, strings.Join(clusterNames(spec.Clusters), ", ")),
		}, false
	}
	saidNo := sched != nil && sched.Status == metav1.ConditionFalse
	if !saidNo && !scheduled(generation, status) {
		return nil, true
	}
	why := "the scheduler found no cluster"
	if saidNo && sched.Message != "" {
		why = fmt.Sprintf("the scheduler found no cluster: %s", sched.Message)
	}
	return &metav1.Condition{
		Type:   ConditionFailoverTargetAvailable,
		Status: metav1.ConditionFalse,
		Reason: ReasonNoFailoverTarget,
		Message: truncate(fmt.Sprintf("No cluster can take the workload evicted from %s (%s). The copy in %s is kept until a cluster is available: Lifeboat never deletes the last copy.",
			evicted, why, evicted), 32768),
	}, false
}

// keepTheirShares says that clusters run what they ran before the eviction.
func keepTheirShares(clusters []workv1alpha2.TargetCluster) string {
	names := clusterNames(clusters)
	if len(names) == 1 {
		return names[0] + " keeps its share"
	}
	return strings.Join(names, ", ") + " keep their shares"
}

// conditionsEqual compares conditions ignoring order.
func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		o := meta.FindStatusCondition(b, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message ||
			o.ObservedGeneration != c.ObservedGeneration || !o.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return false
		}
	}
	return true
}

func formatState(state map[string]string) string {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+state[k])
	}
	return strings.Join(parts, ",")
}

// FencedFunc tells from when the copy of a binding (obj, with its spec) in
// cluster counts as stopped by fencing; false when it cannot be fenced.
type FencedFunc func(ctx context.Context, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string) (time.Time, bool)

// FencedBy returns the FencedFunc of the controller manager: the copy in a
// Pull cluster of a binding that fencing.For fences (defaultPurgeMode for
// bindings without one) counts as stopped margin after its agent fenced
// it, by the cluster's Lease (fencing.StoppedBy), read afresh from the API
// server through reader. A Push cluster, a missing Cluster or Lease, or a
// Lease never renewed: not fenced.
//
// The agent fences by the marks on the copy in its member, which are those
// of the copy's Work when the agent last applied it, not those of the
// binding now: a policy changed during a partition (fencing turned on, a
// shorter toleration) never reaches the agent. So the toleration counted
// is that of the Work's marks, and only when the agent confirmed applying
// them (AppliedMarks); otherwise the copy is not counted as fenced, and the
// eviction waits for its deletion as for a Push cluster.
func FencedBy(reader client.Reader, defaultPurgeMode policyv1alpha1.PurgeMode, margin time.Duration) FencedFunc {
	return func(ctx context.Context, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string) (time.Time, bool) {
		if _, ok := fencing.For(spec, defaultPurgeMode); !ok {
			return time.Time{}, false
		}
		var c clusterv1alpha1.Cluster
		if err := reader.Get(ctx, types.NamespacedName{Name: cluster}, &c); err != nil || c.Spec.SyncMode != clusterv1alpha1.Pull {
			return time.Time{}, false
		}
		works, err := bindingWorks(ctx, reader, obj, cluster)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reading the old copy's Work; not counting it as fenced now", "cluster", cluster)
			return time.Time{}, false
		}
		s, ok := AppliedMarks(works)
		if !ok {
			return time.Time{}, false
		}
		var lease coordinationv1.Lease
		if err := reader.Get(ctx, types.NamespacedName{Namespace: clusterLeaseNamespace, Name: cluster}, &lease); err != nil {
			return time.Time{}, false
		}
		var renewed time.Time
		if lease.Spec.RenewTime != nil {
			renewed = lease.Spec.RenewTime.Time
		}
		return fencing.StoppedBy(renewed, ptr.Deref(lease.Spec.LeaseDurationSeconds, 0), s, margin)
	}
}

// AppliedMarks is how the copies of works are fenced by their agent: each
// Work's fencing marks, as the agent confirmed applying them (Applied True
// for the Work's generation, or for the one before a deletion, which moves
// the generation by one), with the longest toleration. False when there
// is no Work, or one that is unmarked or not confirmed: its copy may run
// on, or be fenced later than counted.
func AppliedMarks(works []workv1alpha1.Work) (fencing.Spec, bool) {
	var out fencing.Spec
	for i := range works {
		w := &works[i]
		s, ok := fencing.OfWork(w)
		if !ok {
			return fencing.Spec{}, false
		}
		applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied)
		if applied == nil || applied.Status != metav1.ConditionTrue {
			return fencing.Spec{}, false
		}
		confirmed := applied.ObservedGeneration == w.Generation ||
			(!w.DeletionTimestamp.IsZero() && applied.ObservedGeneration == w.Generation-1)
		if !confirmed {
			return fencing.Spec{}, false
		}
		if i == 0 || s.After > out.After {
			out = s
		}
	}
	return out, len(works) > 0
}

// bindingWorks lists the Works of obj in cluster's execution namespace, by
// the binding's permanent id (worksSelector).
func bindingWorks(ctx context.Context, reader client.Reader, obj client.Object, cluster string) ([]workv1alpha1.Work, error) {
	var works workv1alpha1.WorkList
	if err := reader.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+cluster), worksSelector(obj)); err != nil {
		return nil, fmt.Errorf("listing Works of cluster %s: %w", cluster, err)
	}
	return works.Items, nil
}

// worksSelector selects a binding's Works as the binding controller labels
// them: with the binding's permanent-id label, or its UID when the binding
// has none (one made by another tool; Lifeboat has no webhook to stamp it).
func worksSelector(obj client.Object) client.MatchingLabels {
	key := workv1alpha2.ResourceBindingPermanentIDLabel
	if _, ok := obj.(*workv1alpha2.ClusterResourceBinding); ok {
		key = workv1alpha2.ClusterResourceBindingPermanentIDLabel
	}
	id := obj.GetLabels()[key]
	if id == "" {
		id = string(obj.GetUID())
	}
	return client.MatchingLabels{key: id}
}

// clusterLeaseNamespace holds each Pull cluster's Lease, named after it.
const clusterLeaseNamespace = "karmada-cluster"

// WorkExists returns an OldCopyExistsFunc that looks for the binding's
// Work in the cluster's execution namespace (karmada-es-<cluster>), found
// by the binding's permanent id (worksSelector). A deleting Work still exists: the
// member object is only gone once the Work is.
func WorkExists(reader client.Reader) OldCopyExistsFunc {
	return func(ctx context.Context, obj client.Object, cluster string) (bool, error) {
		var works workv1alpha1.WorkList
		if err := reader.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+cluster),
			worksSelector(obj), client.Limit(1)); err != nil {
			return false, fmt.Errorf("listing Works of cluster %s: %w", cluster, err)
		}
		return len(works.Items) > 0, nil
	}
}

// relevantPredicate passes create, update (old or new relevant), delete
// and generic events of relevant bindings.
func relevantPredicate(relevant func(client.Object) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return relevant(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return relevant(e.ObjectOld) || relevant(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return relevant(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return relevant(e.Object) },
	}
}
