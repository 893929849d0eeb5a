package failback

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
)

// Event reasons on the binding.
const (
	// EventReasonFailbackStarted (Normal): the workload is being moved back.
	EventReasonFailbackStarted = "FailbackStarted"
	// EventReasonFailbackCompleted (Normal): the copy moved back is Healthy.
	EventReasonFailbackCompleted = "FailbackCompleted"
	// EventReasonFailbackIncomplete (Normal): the failback ended without
	// completing and was not abandoned (Incomplete).
	EventReasonFailbackIncomplete = "FailbackIncomplete"
)

// Indexes on ResourceBindings and ClusterResourceBindings.
const (
	// IndexFailedOverFrom: the clusters a binding with failback configured
	// failed over away from and may move back to, so that a cluster that
	// turns Ready brings back exactly those bindings.
	IndexFailedOverFrom = "failback.lifeboat.dev/failed-over-from"
	// IndexOpen: "true" on bindings whose failback is open
	// (FailbackAnnotation), to count them fleet-wide.
	IndexOpen = "failback.lifeboat.dev/open"
)

// conflictRetry is when a reconcile that lost a write race runs again.
const conflictRetry = time.Second

// Reconciler moves workloads back (see the package doc for what it
// writes). It handles ResourceBindings and ClusterResourceBindings.
type Reconciler struct {
	// Client reads bindings and Clusters (from the cache) and writes
	// bindings.
	Client client.Client
	// Recorder records Events on bindings.
	Recorder record.EventRecorder
	// Clock tells the time; clock.RealClock{} in production.
	Clock clock.PassiveClock
	// Gate admits failbacks fleet-wide.
	Gate *fleetcap.Gate
	// Metrics may be nil.
	Metrics *Metrics
	// MaxConcurrentReconciles per binding kind; 0 means 1.
	MaxConcurrentReconciles int
	// SchedulerName is the spec.schedulerName the scheduler that takes a
	// failback's request answers to; empty means
	// scheduler.DefaultSchedulerName. A binding of another scheduler, or
	// whose scheduling is suspended, is never moved back.
	SchedulerName string

	// wake receives, per binding kind, the bindings held back by the cap
	// whose turn has come (see Gate.Release).
	wake map[string]chan event.GenericEvent
}

// wakeBuffer bounds the wake-ups waiting to be queued; one that does not
// fit is dropped, and the binding looks again after fleetcap.CapRetry.
const wakeBuffer = 1024

type kind struct {
	short     string
	newObject func() client.Object
	newList   func() client.ObjectList
}

var kinds = []kind{
	{"rb", func() client.Object { return &workv1alpha2.ResourceBinding{} }, func() client.ObjectList { return &workv1alpha2.ResourceBindingList{} }},
	{"crb", func() client.Object { return &workv1alpha2.ClusterResourceBinding{} }, func() client.ObjectList { return &workv1alpha2.ClusterResourceBindingList{} }},
}

func parts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus) {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec, &b.Status
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec, &b.Status
	}
	return nil, nil
}

// relevant is the cheap test every binding event passes first: failback
// configured, or a failback open. Nothing else of this controller runs for
// a binding without failback.
func relevant(obj client.Object) bool {
	spec, _ := parts(obj)
	if spec == nil {
		return false
	}
	_, open := obj.GetAnnotations()[FailbackAnnotation]
	return open || (spec.Failover != nil && spec.Failover.Failback != nil)
}

func failedOverFromValues(obj client.Object) []string {
	spec, status := parts(obj)
	if spec == nil || spec.Failover == nil || spec.Failover.Failback == nil {
		return nil
	}
	return FailedOverFrom(spec, status)
}

func openValues(obj client.Object) []string {
	if _, ok := obj.GetAnnotations()[FailbackAnnotation]; ok {
		return []string{"true"}
	}
	return nil
}

// SetupWithManager registers the indexes and one controller per binding
// kind ("rb-failback", "crb-failback"). Besides the bindings, a Cluster
// whose Ready condition or taints change brings back the bindings that
// failed over away from it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	for _, k := range kinds {
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.newObject(), IndexFailedOverFrom, failedOverFromValues); err != nil {
			return fmt.Errorf("indexing %s bindings by the cluster they failed over from: %w", k.short, err)
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, k.newObject(), IndexOpen, openValues); err != nil {
			return fmt.Errorf("indexing %s bindings by open failback: %w", k.short, err)
		}
	}
	r.wake = map[string]chan event.GenericEvent{}
	for _, k := range kinds {
		r.wake[k.short] = make(chan event.GenericEvent, wakeBuffer)
	}
	for _, k := range kinds {
		k := k
		err := ctrl.NewControllerManagedBy(mgr).
			Named(k.short+"-failback").
			For(k.newObject(), builder.WithPredicates(predicate.NewPredicateFuncs(relevant))).
			Watches(&clusterv1alpha1.Cluster{},
				handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
					return r.bindingsFrom(ctx, k, obj.GetName())
				}),
				builder.WithPredicates(clusterHealthChanged())).
			WatchesRawSource(source.Channel(r.wake[k.short], &handler.EnqueueRequestForObject{})).
			WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, NewQueue: queue.New}).
			Complete(conflict.Retrying(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return r.reconcile(ctx, k, req)
			})))
		if err != nil {
			return fmt.Errorf("setting up the %s failback controller: %w", k.short, err)
		}
	}
	return nil
}

// clusterHealthChanged passes Clusters created, and updates that change
// the Ready condition (status or transition time) or the taints.
func clusterHealthChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
			n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if !ok1 || !ok2 {
				return false
			}
			ready := func(c *clusterv1alpha1.Cluster) metav1.Condition {
				if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
					return metav1.Condition{Status: cond.Status, LastTransitionTime: cond.LastTransitionTime}
				}
				return metav1.Condition{}
			}
			ro, rn := ready(o), ready(n)
			return ro.Status != rn.Status || !ro.LastTransitionTime.Equal(&rn.LastTransitionTime) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				o.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared] != n.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// bindingsFrom returns the bindings of kind k that failed over away from
// cluster.
func (r *Reconciler) bindingsFrom(ctx context.Context, k kind, cluster string) []reconcile.Request {
	list := k.newList()
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexFailedOverFrom: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing bindings that failed over", "cluster", cluster)
		return nil
	}
	var out []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
		}
		return nil
	})
	return out
}

// openFailbacks returns the keys of the bindings of both kinds whose
// failback is open.
func (r *Reconciler) openFailbacks(ctx context.Context) (map[string]bool, error) {
	open := map[string]bool{}
	for _, k := range kinds {
		list := k.newList()
		if err := r.Client.List(ctx, list, client.MatchingFields{IndexOpen: "true"}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing open failbacks: %w", err)
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				open[k.short+"/"+types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}.String()] = true
			}
			return nil
		})
	}
	return open, nil
}

func (r *Reconciler) reconcile(ctx context.Context, k kind, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("binding", req.NamespacedName, "kind", k.short)
	ctx = ctrl.LoggerInto(ctx, log)
	obj := k.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Gate.Drop(k.short + "/" + req.NamespacedName.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading binding %s: %w", req.NamespacedName, err)
	}
	key := k.short + "/" + req.NamespacedName.String()
	if obj.GetDeletionTimestamp() != nil {
		r.Gate.Drop(key)
		return ctrl.Result{}, nil
	}
	spec, status := parts(obj)
	now := r.Clock.Now()

	// 1. A failback asked for: follow it until it ends.
	if v, ok := obj.GetAnnotations()[FailbackAnnotation]; ok {
		return r.follow(ctx, key, obj, spec, status, v)
	}

	// 2. Decide; the Clusters are read only for a binding that has
	// somewhere to go back to.
	released := !scheduler.Claimed(obj.GetLabels())
	if released || !mayMove(spec, status, r.SchedulerName) {
		r.Gate.Drop(key)
		return ctrl.Result{}, nil
	}
	var clusters clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing clusters: %w", err)
	}
	cs := make([]*clusterv1alpha1.Cluster, 0, len(clusters.Items))
	for i := range clusters.Items {
		cs = append(cs, &clusters.Items[i])
	}
	d := Decide(Input{Spec: spec, Status: status, Clusters: cs, SchedulerName: r.SchedulerName, Released: released, Now: now})
	switch d.Verdict {
	case Stay:
		r.Gate.Drop(key)
		log.V(4).Info("no failback", "why", d.Reason)
		return ctrl.Result{}, nil
	case Wait:
		r.Gate.Drop(key)
		log.V(2).Info("failback waits", "cluster", d.Cluster, "until", d.At, "why", d.Reason)
		return ctrl.Result{RequeueAfter: d.At.Sub(now)}, nil
	}

	// 3. Admit.
	a, err := r.Gate.Admit(key, "", func() (map[string]bool, error) { return r.openFailbacks(ctx) }, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !a.Allowed {
		log.V(2).Info("failback held back", "cluster", d.Cluster, "why", a.Reason, "lookAgainIn", a.RetryAfter)
		return ctrl.Result{RequeueAfter: a.RetryAfter}, nil
	}

	// 4. Ask for the fresh schedule, in one write with the annotations.
	before := obj.DeepCopyObject().(client.Object)
	stamp := requestTime(now, status)
	spec.RescheduleTriggeredAt = &stamp
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workv1alpha2.RescheduleReasonAnnotation] = workv1alpha2.EvictionReasonFailback
	annotations[FailbackAnnotation] = inFlight{cluster: d.Cluster, readySince: d.ReadySince}.String()
	obj.SetAnnotations(annotations)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		r.Gate.Forget(key, "")
		return writeFailed(ctx, err, "asking for the failback")
	}
	r.Metrics.start()
	log.Info("failback started", "cluster", d.Cluster, "why", d.Reason)
	r.Recorder.Eventf(obj, corev1.EventTypeNormal, EventReasonFailbackStarted,
		"Moving back to %s, Ready since %s; the current copy stays until the copy there is Healthy.",
		d.Cluster, d.ReadySince.UTC().Format(time.RFC3339))
	return ctrl.Result{}, nil
}

// follow ends an asked-for failback once progress says it completed, was
// given up or moved nothing: it removes the annotations (one write),
// frees its place under the gate's cap at once (a failback can end before
// the cache ever showed it open) and reports. While the failback is open
// it writes nothing.
func (r *Reconciler) follow(ctx context.Context, key string, obj client.Object, spec *workv1alpha2.ResourceBindingSpec,
	status *workv1alpha2.ResourceBindingStatus, value string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	f, err := parseInFlight(value)
	outcome, healthyAt := Open, time.Time{}
	if err != nil {
		// Not ours to keep: drop it and decide afresh.
		log.Error(err, "dropping an unreadable failback annotation")
		outcome = NotMoved
	} else {
		outcome, healthyAt = progress(spec, status, f)
	}
	// A request no scheduler will take (the policy was deleted, scheduling
	// suspended, another scheduler named since) would stay open for good,
	// holding a place under --failback-max-concurrent.
	untaken := ""
	if outcome == Open && reschedulePending(spec, status) && !failbackTaskOpen(spec) {
		untaken = scheduler.WhyNotTaken(obj.GetLabels(), spec, r.SchedulerName)
		if untaken != "" {
			outcome = Incomplete
		}
	}
	if outcome == Open {
		return ctrl.Result{}, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	if untaken != "" {
		spec.RescheduleTriggeredAt = nil
	}
	annotations := obj.GetAnnotations()
	delete(annotations, FailbackAnnotation)
	if annotations[workv1alpha2.RescheduleReasonAnnotation] == workv1alpha2.EvictionReasonFailback {
		delete(annotations, workv1alpha2.RescheduleReasonAnnotation)
	}
	obj.SetAnnotations(annotations)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return writeFailed(ctx, err, "closing the failback")
	}
	if next := r.Gate.Release(key, r.Clock.Now()); next != "" {
		r.wakeUp(ctx, next)
	}
	switch outcome {
	case Completed:
		took := healthyAt.Sub(f.readySince)
		r.Metrics.complete(took)
		log.Info("failback completed", "cluster", f.cluster, "sinceReady", took)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, EventReasonFailbackCompleted,
			"The workload is back on %s and Healthy, %s after the cluster became Ready.", f.cluster, took.Round(time.Second))
	case Abandoned:
		// The graceful-eviction controller recorded the Event.
		r.Metrics.abandon()
		log.Info("failback abandoned", "cluster", f.cluster)
	case NotMoved:
		log.Info("failback moved nothing: the fresh schedule kept the placement", "cluster", f.cluster)
	case Incomplete:
		r.Metrics.endIncomplete()
		where := strings.Join(clusterNames(spec.Clusters), ", ")
		why := fmt.Sprintf("%s is not in its placement (it failed again, or the placement changed)", f.cluster)
		switch {
		case untaken != "":
			why = "no scheduler takes the request: " + untaken
		case slices.ContainsFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == f.cluster }):
			why = "not all of it was Healthy when the failback's eviction task closed"
		}
		log.Info("failback ended without completing", "cluster", f.cluster, "clusters", where)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, EventReasonFailbackIncomplete,
			"The failback to %s ended without completing: the workload runs on %s, and %s.", f.cluster, orNone(where), why)
	}
	return ctrl.Result{}, nil
}

func clusterNames(ts []workv1alpha2.TargetCluster) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "no cluster"
	}
	return s
}

// wakeUp queues the binding under a gate key ("rb/NS/NAME",
// "crb//NAME"): a place under the cap is free for it. Without room in the
// buffer the wake-up is dropped; the binding looks again after fleetcap.CapRetry.
func (r *Reconciler) wakeUp(ctx context.Context, key string) {
	kindName, rest, _ := strings.Cut(key, "/")
	ns, name, _ := strings.Cut(rest, "/")
	ch, ok := r.wake[kindName]
	if !ok {
		return
	}
	var obj client.Object
	for _, k := range kinds {
		if k.short == kindName {
			obj = k.newObject()
		}
	}
	obj.SetNamespace(ns)
	obj.SetName(name)
	select {
	case ch <- event.GenericEvent{Object: obj}:
	default:
		ctrl.LoggerFrom(ctx).V(2).Info("wake-up queue full; the binding looks again later", "binding", key)
	}
}

// requestTime is the spec.rescheduleTriggeredAt a failback writes: now,
// but after status.lastScheduledTime at second precision, so that the
// scheduler sees the request as pending.
func requestTime(now time.Time, status *workv1alpha2.ResourceBindingStatus) metav1.Time {
	stamp := metav1.NewTime(now).Rfc3339Copy()
	if last := status.LastScheduledTime; last != nil && !stamp.After(last.Time) {
		stamp = metav1.NewTime(last.Add(time.Second)).Rfc3339Copy()
	}
	return stamp
}

func writeFailed(ctx context.Context, err error, what string) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("write conflict; re-reading", "write", what)
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, fmt.Errorf("%s: %w", what, err)
}
