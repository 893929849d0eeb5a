package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// DefaultSchedulerName is the schedulerName this scheduler answers to when
// Reconciler.SchedulerName is empty; bindings with an empty schedulerName
// mean it too.
const DefaultSchedulerName = "default-scheduler"

// Event reasons.
const (
	EventReasonScheduleSucceed = "ScheduleBindingSucceed"
	EventReasonScheduleFailed  = "ScheduleBindingFailed"
)

const (
	scheduledMessage = "Binding has been scheduled successfully."
	// defaultUnschedulableRetry is how often a binding that does not fit
	// for lack of capacity or groups is retried: capacity changes show up
	// in Cluster status, which does not trigger scheduling by itself.
	defaultUnschedulableRetry = time.Minute
	// conflictRetry is the delay before re-reading a binding whose write
	// lost an optimistic-lock race.
	conflictRetry = 500 * time.Millisecond
	// echoRecheck is how soon a binding is looked at again when the cache
	// does not hold this scheduler's own status write yet.
	echoRecheck = 200 * time.Millisecond
)

// Reconciler schedules ResourceBindings and ClusterResourceBindings. Its
// fields are its dependencies; zero values get defaults in SetupWithManager.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder records events on bindings and resource templates.
	Recorder record.EventRecorder
	// Events holds back the ScheduleBindingSucceed Events of a mass
	// failover past its burst and summarises them on the evicted Cluster
	// (nil: every Event is recorded).
	Events *eventbudget.Budget
	// Clock stamps status.lastScheduledTime and conditions.
	Clock clock.PassiveClock
	// SchedulerName is the spec.schedulerName handled (default
	// "default-scheduler").
	SchedulerName string
	// MaxConcurrentReconciles per binding kind (default 1).
	MaxConcurrentReconciles int
	// UnschedulableRetry is the retry period of bindings that fit no
	// cluster for lack of capacity or groups (default 1m).
	UnschedulableRetry time.Duration
	// Echoes remembers the generations whose status this scheduler wrote
	// lately: its own spec write brings the binding back before the cache
	// holds the status write that followed it (default: one per process).
	Echoes *coalesce.Recent
	// Unreadable, if set, reports whether a Cluster missing from the cache
	// is stored but cannot be decoded (undecodable.Guard.Stored). Such a
	// cluster is not gone: a binding placed on it is left alone, so its
	// copy there is not removed because the controllers cannot read the
	// Cluster.
	Unreadable func(name string) bool
	// Gates turn state capture for failbacks on or off
	// (StatefulFailoverInjection); nil uses the defaults.
	Gates *features.Gates
}

// binding is the part of a ResourceBinding or ClusterResourceBinding the
// scheduler reads and writes; spec and status point into obj.
type binding struct {
	obj    client.Object
	spec   *workv1alpha2.ResourceBindingSpec
	status *workv1alpha2.ResourceBindingStatus
}

func viewOf(obj client.Object) (binding, bool) {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return binding{obj: b, spec: &b.Spec, status: &b.Status}, true
	case *workv1alpha2.ClusterResourceBinding:
		return binding{obj: b, spec: &b.Spec, status: &b.Status}, true
	}
	return binding{}, false
}

// handles says whether the binding is this scheduler's: a policy claims it
// (Claimed) and HandlesSpec.
func (r *Reconciler) handles(obj client.Object) bool {
	b, ok := viewOf(obj)
	return ok && Claimed(obj.GetLabels()) && HandlesSpec(b.spec, r.schedulerName())
}

// Claimed says whether a binding with these labels is scheduled at all
// (workv1alpha2.IsClaimed): a binding whose policy was deleted, or no
// longer selects its template, stays where it is, as in Karmada.
func Claimed(labels map[string]string) bool { return workv1alpha2.IsClaimed(labels) }

// HandlesSpec says whether the scheduler named schedulerName schedules a
// binding with this spec: it has a placement (attached dependency bindings
// have none), names that scheduler (empty means DefaultSchedulerName), and
// scheduling is not suspended.
func HandlesSpec(spec *workv1alpha2.ResourceBindingSpec, schedulerName string) bool {
	if spec.Placement == nil {
		return false
	}
	name := spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	if name != schedulerName {
		return false
	}
	if s := spec.Suspension; s != nil && s.Scheduling != nil && *s.Scheduling {
		return false
	}
	return true
}

// WhyNotScheduled says why the scheduler named schedulerName (empty:
// DefaultSchedulerName) would not take a requested schedule of a binding
// with this spec; "" when it would (HandlesSpec).
func WhyNotScheduled(spec *workv1alpha2.ResourceBindingSpec, schedulerName string) string {
	if schedulerName == "" {
		schedulerName = DefaultSchedulerName
	}
	switch {
	case HandlesSpec(spec, schedulerName):
		return ""
	case spec.Placement == nil:
		return "it has no placement to schedule"
	case spec.Suspension != nil && spec.Suspension.Scheduling != nil && *spec.Suspension.Scheduling:
		return "its scheduling is suspended (spec.suspension.scheduling)"
	}
	return fmt.Sprintf("spec.schedulerName %q is not the scheduler %q, which would take the request", spec.SchedulerName, schedulerName)
}

// WhyNotTaken says why no scheduler takes a requested schedule of a
// binding with these labels and spec ("" when the scheduler named
// schedulerName does): no policy claims it (Claimed), or WhyNotScheduled.
func WhyNotTaken(labels map[string]string, spec *workv1alpha2.ResourceBindingSpec, schedulerName string) string {
	if !Claimed(labels) {
		return "no policy claims it any more"
	}
	return WhyNotScheduled(spec, schedulerName)
}

func (r *Reconciler) schedulerName() string {
	if r.SchedulerName == "" {
		return DefaultSchedulerName
	}
	return r.SchedulerName
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// ReconcileResourceBinding schedules one ResourceBinding.
func (r *Reconciler) ReconcileResourceBinding(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, req, &workv1alpha2.ResourceBinding{})
}

// ReconcileClusterResourceBinding schedules one ClusterResourceBinding.
func (r *Reconciler) ReconcileClusterResourceBinding(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, req, &workv1alpha2.ClusterResourceBinding{})
}

// reconcile observes the binding and the clusters, decides, and writes only
// what changed.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request, obj client.Object) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	// 1. Observe.
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil || !r.handles(obj) {
		return ctrl.Result{}, nil
	}
	b, _ := viewOf(obj)
	if b.status.SchedulerObservedGeneration != obj.GetGeneration() && r.Echoes.Has(string(obj.GetUID()), observed(obj.GetGeneration())) {
		// This scheduler wrote the status of this generation a moment ago
		// and the cache does not hold it yet: deciding now would schedule
		// again and lose a write race with that status. Look again once
		// the cache has caught up.
		log.V(4).Info("status write not in the cache yet; looking again shortly")
		return ctrl.Result{RequeueAfter: echoRecheck}, nil
	}
	var list clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing clusters: %w", err)
	}
	clusters := make([]*clusterv1alpha1.Cluster, 0, len(list.Items))
	byName := make(map[string]*clusterv1alpha1.Cluster, len(list.Items))
	for i := range list.Items {
		clusters = append(clusters, &list.Items[i])
		byName[list.Items[i].Name] = &list.Items[i]
	}

	if c := r.unreadableScheduled(b.spec, byName); c != "" {
		log.Info("a scheduled cluster is stored but cannot be decoded; leaving the placement as it is", "cluster", c)
		return ctrl.Result{RequeueAfter: r.unschedulableRetry()}, nil
	}

	// 2. Decide.
	pass := PlanPass(b.spec, b.status, obj.GetAnnotations(), clusters)
	if pass.Trigger == "" {
		if b.status.SchedulerObservedGeneration == obj.GetGeneration() {
			return ctrl.Result{}, nil
		}
		before := obj.DeepCopyObject().(client.Object)
		b.status.SchedulerObservedGeneration = obj.GetGeneration()
		return r.patchStatus(ctx, obj, before)
	}
	log.V(4).Info("scheduling binding", "trigger", pass.Trigger, "fresh", pass.Fresh)
	// 3. Write the spec (see PlanPass for what a failed schedule keeps).
	//    A fresh schedule or a switch of clusterAffinities term that moves
	//    the workload keeps the copies it leaves until the new placement
	//    is Healthy (gracefulPlacement).
	result, schedErr, target := pass.Result, pass.Err, pass.Clusters
	mv := moveOf(pass, b.spec, b.status, obj.GetAnnotations())
	if mv.reason == workv1alpha2.EvictionReasonFailback {
		mv.state = func(cluster string) (map[string]string, string) {
			return failover.FailbackState(b.spec, b.status, cluster, r.Gates)
		}
	}
	write := gracefulPlacement(b.spec, target, mv, schedErr == nil, byName, r.clock().Now())
	specWritten := false
	if schedErr == nil || (len(clusters) > 0 && !equality.Semantic.DeepEqual(normalize(b.spec.Clusters), normalize(target))) {
		placement, err := json.Marshal(b.spec.Placement)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("encoding placement: %w", err)
		}
		annotations := obj.GetAnnotations()
		recordPlacement := schedErr == nil && annotations[workv1alpha2.AppliedPlacementAnnotation] != string(placement)
		if !equality.Semantic.DeepEqual(normalize(b.spec.Clusters), normalize(target)) || recordPlacement {
			before := obj.DeepCopyObject().(client.Object)
			b.spec.Clusters = target
			if write.tasks != nil {
				b.spec.GracefulEvictionTasks = write.tasks
			}
			if recordPlacement {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[workv1alpha2.AppliedPlacementAnnotation] = string(placement)
				obj.SetAnnotations(annotations)
			}
			if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				return r.writeFailed(ctx, err, "patching binding spec")
			}
			specWritten = true
			if len(write.rebalancedFrom) > 0 {
				log.Info("moved; the copies left behind stay until the new placement is Healthy",
					"from", write.rebalancedFrom, "clusters", formatTargets(target), "reason", mv.reason, "affinityName", result.AffinityName)
			}
		}
	}
	failMessage := ""
	if schedErr != nil {
		failMessage = schedErr.Error()
		if len(b.spec.Clusters) > 0 {
			failMessage += fmt.Sprintf(" The current placement %s is kept.", formatTargets(b.spec.Clusters))
		}
	}

	// 4. Write the status.
	wasScheduled := meta.IsStatusConditionTrue(b.status.Conditions, workv1alpha2.Scheduled)
	failedBefore := meta.IsStatusConditionFalse(b.status.Conditions, workv1alpha2.Scheduled)
	before := obj.DeepCopyObject().(client.Object)
	now := metav1.NewTime(r.clock().Now())
	cond := metav1.Condition{Type: workv1alpha2.Scheduled, ObservedGeneration: obj.GetGeneration(), LastTransitionTime: now}
	var res ctrl.Result
	var retErr error
	switch {
	case schedErr == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, workv1alpha2.BindingReasonSuccess, scheduledMessage
		// Stamp only real news, so that re-running an unchanged schedule
		// writes nothing.
		if specWritten || pass.Fresh || !meta.IsStatusConditionTrue(b.status.Conditions, workv1alpha2.Scheduled) ||
			b.status.SchedulerObservedGeneration != obj.GetGeneration() || b.status.SchedulerObservedAffinityName != result.AffinityName {
			b.status.SchedulerObservedGeneration = obj.GetGeneration()
			b.status.SchedulerObservedAffinityName = result.AffinityName
			t := lastScheduledTime(now, b.spec)
			b.status.LastScheduledTime = &t
			meta.SetStatusCondition(&b.status.Conditions, cond)
		}
	case isFitError(schedErr):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, workv1alpha2.BindingReasonNoClusterFit, failMessage
		meta.SetStatusCondition(&b.status.Conditions, cond)
	case isUnschedulable(schedErr):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, workv1alpha2.BindingReasonUnschedulable, failMessage
		meta.SetStatusCondition(&b.status.Conditions, cond)
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, workv1alpha2.BindingReasonSchedulerError, failMessage
		meta.SetStatusCondition(&b.status.Conditions, cond)
		retErr = fmt.Errorf("scheduling binding: %w", schedErr)
	}
	// A fit error alone is not retried: only a change of the binding or of
	// a cluster helps, and both trigger a reconcile. Capacity problems
	// (also behind a clusterAffinities fit error) are retried periodically.
	if isUnschedulable(schedErr) {
		res = ctrl.Result{RequeueAfter: r.unschedulableRetry()}
	}
	statusWritten := false
	if bb, _ := viewOf(before); !equality.Semantic.DeepEqual(bb.status, b.status) {
		if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return r.writeFailed(ctx, err, "patching binding status")
		}
		r.Echoes.Wrote(string(obj.GetUID()), observed(b.status.SchedulerObservedGeneration))
		statusWritten = true
	}

	// 5. Tell the user, once per change: a success only when the
	// placement changed, was asked for again, or follows a failure, not
	// when the status only records a later generation (an eviction task
	// closed, say) with the same result.
	news := specWritten || pass.Fresh || !wasScheduled || schedErr != nil
	if news && (specWritten || statusWritten) {
		if schedErr == nil {
			// The success after a failure is what a person watching a
			// stuck workload waits for: never held back.
			if failedBefore || r.Events.Allow(eventSubject(b), corev1.EventTypeNormal, EventReasonScheduleSucceed, eventbudget.Workload(b.obj, b.spec)) {
				r.event(b, corev1.EventTypeNormal, EventReasonScheduleSucceed, fmt.Sprintf("%s Result: %s", scheduledMessage, formatTargets(b.spec.Clusters)))
			}
			log.V(2).Info("binding scheduled", "trigger", pass.Trigger, "clusters", formatTargets(b.spec.Clusters), "affinityName", result.AffinityName)
		} else {
			r.event(b, corev1.EventTypeWarning, EventReasonScheduleFailed, failMessage)
			log.V(2).Info("binding not scheduled", "trigger", pass.Trigger, "reason", cond.Reason, "message", cond.Message)
		}
	}
	return res, retErr
}

// patchStatus writes the status difference between before and obj.
func (r *Reconciler) patchStatus(ctx context.Context, obj, before client.Object) (ctrl.Result, error) {
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return r.writeFailed(ctx, err, "patching binding status")
	}
	if b, ok := viewOf(obj); ok {
		r.Echoes.Wrote(string(obj.GetUID()), observed(b.status.SchedulerObservedGeneration))
	}
	return ctrl.Result{}, nil
}

// observed is what Echoes remembers of a status write: the generation it
// marked as observed.
func observed(generation int64) string {
	return strconv.FormatInt(generation, 10)
}

// writeFailed turns a lost optimistic-lock race into a quick re-read (the
// binding changed under us; the next pass re-observes it) and wraps every
// other error.
func (r *Reconciler) writeFailed(ctx context.Context, err error, what string) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(4).Info("binding changed while writing, retrying", "write", what)
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, fmt.Errorf("%s: %w", what, err)
}

func (r *Reconciler) unschedulableRetry() time.Duration {
	if r.UnschedulableRetry <= 0 {
		return defaultUnschedulableRetry
	}
	return r.UnschedulableRetry
}

// eventSubject is what a placement's Event is about for the Events'
// budget: the cluster of the binding's newest eviction task, whose
// failover the placement is taken to be part of (one made for another
// reason while the task is open counts there too), or without a task the
// policy that claims the binding's workload (a rollout, a policy or the
// workload changed).
func eventSubject(b binding) eventbudget.Subject {
	if n := len(b.spec.GracefulEvictionTasks); n > 0 {
		return eventbudget.Cluster(b.spec.GracefulEvictionTasks[n-1].FromCluster)
	}
	return eventbudget.PolicyOf(b.obj)
}

// event records an event on the binding and on its resource template.
func (r *Reconciler) event(b binding, eventType, reason, message string) {
	eventbudget.RecordBoth(r.Recorder, b.obj, b.spec, eventType, reason, message)
}

// unreadableScheduled returns a cluster of spec.clusters that the cache
// does not hold but that is stored, unreadable (Unreadable); "" for none.
func (r *Reconciler) unreadableScheduled(spec *workv1alpha2.ResourceBindingSpec, clusters map[string]*clusterv1alpha1.Cluster) string {
	if r.Unreadable == nil {
		return ""
	}
	for _, t := range spec.Clusters {
		if _, ok := clusters[t.Name]; !ok && r.Unreadable(t.Name) {
			return t.Name
		}
	}
	return ""
}

func isFitError(err error) bool {
	var f *core.FitError
	return err != nil && errors.As(err, &f)
}

// Pass is one scheduling pass over a binding as decided, before anything
// is written.
type Pass struct {
	// Trigger says why the binding is scheduled; empty when the pass leaves
	// spec.clusters as they are.
	Trigger string
	// Fresh: a manual reschedule is pending.
	Fresh bool
	// Result and Err are core.Schedule's answer (zero without a Trigger).
	Result core.Result
	Err    error
	// Clusters is the spec.clusters the pass leaves: the new placement, or
	// when it fails the current one minus clusters that are gone or being
	// deleted (a workload never loses its running copy because a new
	// placement fits nowhere), or without a Trigger the current one.
	Clusters []workv1alpha2.TargetCluster
}

// PlanPass decides one scheduling pass over a binding with this spec,
// status and annotations, given every Cluster: whether to schedule
// (decide) and, if so, core.Schedule's placement. Nothing is modified.
func PlanPass(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, annotations map[string]string, clusters []*clusterv1alpha1.Cluster) Pass {
	byName := make(map[string]*clusterv1alpha1.Cluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	d := decide(spec, status, annotations, byName)
	pass := Pass{Trigger: d.trigger, Fresh: d.fresh, Clusters: spec.Clusters}
	if d.trigger == "" {
		return pass
	}
	pass.Result, pass.Err = core.Schedule(core.Problem{
		Spec:                 spec,
		ObservedAffinityName: status.SchedulerObservedAffinityName,
		Fresh:                d.fresh,
		Clusters:             clusters,
	})
	pass.Clusters = pass.Result.Clusters
	if pass.Err != nil {
		pass.Clusters = keptPlacement(spec.Clusters, byName)
	}
	return pass
}

// keptPlacement is what stays of the current placement when no new one
// fits: every cluster that still exists and is not being deleted.
func keptPlacement(current []workv1alpha2.TargetCluster, clusters map[string]*clusterv1alpha1.Cluster) []workv1alpha2.TargetCluster {
	var kept []workv1alpha2.TargetCluster
	for _, t := range current {
		if c, ok := clusters[t.Name]; ok && c.DeletionTimestamp == nil {
			kept = append(kept, t)
		}
	}
	return kept
}

func isUnschedulable(err error) bool {
	var u *core.UnschedulableError
	return err != nil && errors.As(err, &u)
}

// normalize treats nil and empty cluster lists alike.
func normalize(ts []workv1alpha2.TargetCluster) []workv1alpha2.TargetCluster {
	if len(ts) == 0 {
		return nil
	}
	return ts
}

// formatTargets renders spec.clusters as {member1:2, member2:1}.
func formatTargets(ts []workv1alpha2.TargetCluster) string { return core.FormatTargets(ts) }
