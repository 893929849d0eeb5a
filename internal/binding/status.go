package binding

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
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
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

// Event reasons of the status controller.
const (
	// ReasonAggregateStatusFailed: the template's status could not be
	// aggregated or written.
	ReasonAggregateStatusFailed = "AggregateStatusFailed"
)

// Messages of the FullyApplied condition.
const (
	fullyAppliedMessage    = "All works have been successfully applied"
	notFullyAppliedMessage = "Failed to apply all works, see status.aggregatedStatus for details"
)

// StatusReconciler writes what the members report into bindings and their
// templates: status.aggregatedStatus and the FullyApplied condition of the
// binding, and the template's status (Interpreter.AggregateStatus).
type StatusReconciler struct {
	// Client reads bindings and Works from the manager's cache and writes
	// the binding's and the template's status subresources.
	Client client.Client
	// Templates reads templates: from the detector's informers when they
	// hold the kind, from the API server otherwise and after a conflicting
	// write (nil: the manager's API reader alone).
	Templates *templates.Reader
	// Recorder emits Warning events on bindings.
	Recorder record.EventRecorder
	// Interpreter aggregates member statuses into the template's status.
	Interpreter Interpreter
	// Eviction decides which evicted clusters' Works still count (nil:
	// every eviction task's cluster).
	Eviction EvictionHooks
	// Clock stamps condition transitions (nil: the real clock).
	Clock clock.PassiveClock
	// DefaultPurgeMode is the cluster-failover purge mode of bindings
	// whose policy has none, which decides their Fencing condition.
	DefaultPurgeMode policyv1alpha1.PurgeMode
	// MaxConcurrentReconciles defaults to 5.
	MaxConcurrentReconciles int
	// WorkIndex registers the index of Works by binding once for the
	// binding and binding-status controllers of one manager.
	WorkIndex *WorkIndex
	// Writes spaces out status writes without news (default: a
	// coalesce.DefaultWindow per binding).
	Writes *coalesce.Writes

	// templates remembers what this process knows of each binding's
	// template status.
	templates templateMemory
	// Starting holds back status changes of clusters that are still
	// starting (see onlyStarting; default: StartingGrace per binding).
	Starting *coalesce.Quiet
	// Backlog says how many bindings wait for a worker of this controller
	// (default: its queue's ready requests). While at least as many wait as
	// there are workers, a template's status is written on a later,
	// low-priority pass (see deferTemplate).
	Backlog func() int
}

// placementAnswerWait is how much longer a status write that only takes
// away the PlacementHealthy condition may wait: the placement was emptied
// by an eviction (spec.clusters is empty and a graceful eviction task
// exists) less than core.EvictionAnswerWait ago (task creation times are
// whole seconds, cut down, so the wait may end up to a second early). The
// scheduler's answer, the replacement's placement, replaces the condition
// within moments; a binding-status write in between is one of the busiest
// kind per failed-over binding, and in a mass failover it would queue before
// the replacements.
// Meanwhile the eviction task says the cluster was evicted. When nothing
// fits, the condition goes once the wait is over. 0: write now.
func placementAnswerWait(spec *workv1alpha2.ResourceBindingSpec, now time.Time) time.Duration {
	if len(spec.Clusters) > 0 {
		return 0
	}
	var newest time.Time
	for _, t := range spec.GracefulEvictionTasks {
		if t.CreationTimestamp != nil && t.CreationTimestamp.After(newest) {
			newest = t.CreationTimestamp.Time
		}
	}
	if newest.IsZero() {
		return 0
	}
	return max(newest.Add(core.EvictionAnswerWait).Sub(now), 0)
}

// StartingGrace is how long a status change that only says clusters are
// still starting may wait. A new binding's first status would say "not
// applied yet", then "applied, health unknown", each overwritten a moment
// later by the Work's first health: two writes of the API server's busiest
// kind per propagated object, and as many per failed-over binding for its
// new cluster. Health and failures are written at once; a cluster still
// starting after the grace is reported as it is. It is counted from the
// first such change and covers scheduling, the apply and the work status
// controller's own wait for a first health (firstReportGrace there).
const StartingGrace = 5 * time.Second

// Reconcile aggregates the Works of one binding:
//  1. build aggregatedStatus from the binding's Works in expected clusters
//     (targets and clusters kept by eviction tasks), sorted by cluster;
//  2. set FullyApplied;
//  3. write the binding status if either changed;
//  4. aggregate the items into the template's status and write it if it
//     changed, on a later pass while the controller has a backlog
//     (deferTemplate).
func (r *StatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && kerrors.IsConflict(err) {
		// Someone else wrote the object first: re-read and re-decide on the
		// next pass instead of reporting an error.
		ctrl.LoggerFrom(ctx).V(1).Info("write conflict, requeueing", "error", err.Error())
		res, err = ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	if res.Priority == nil {
		// Only a put-off template write waits at low priority; whatever
		// else a pass of one asks for is the binding's own.
		res.Priority = ptr.To(0)
	}
	return res, err
}

func (r *StatusReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b, err := getBinding(ctx, r.Client, req.NamespacedName)
	if err != nil {
		if kerrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.obj.GetDeletionTimestamp().IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	works, err := r.WorkIndex.list(ctx, r.Client, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	expected := expectedClusters(b.spec, r.Eviction)
	items := aggregateStatus(works, expected, b.spec)
	same, err := sameJSONValue(b.status.AggregatedStatus, items)
	if err != nil {
		return ctrl.Result{}, err
	}
	if (!same || fullyAppliedChanges(b.status, expected, items)) && onlyStarting(b.status.AggregatedStatus, expected, items) {
		if wait := r.Starting.Hold(req.NamespacedName); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	if !same {
		if !aggregatedNews(b.status.AggregatedStatus, items) {
			if wait := r.Writes.Wait(req.NamespacedName); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
		r.Writes.Wrote(req.NamespacedName)
	}

	held, err := r.updateBindingStatus(ctx, b, items, !same, expected)
	if err != nil {
		return ctrl.Result{}, err
	}
	if held > 0 {
		return ctrl.Result{RequeueAfter: held}, nil
	}
	r.Starting.Done(req.NamespacedName) // whatever was held is written
	if same && r.templates.synced(req.NamespacedName) {
		// The template's status was brought up to these items already.
		return ctrl.Result{}, nil
	}
	if !same && r.deferTemplate(req.NamespacedName) {
		ctrl.LoggerFrom(ctx).V(1).Info("template status put off behind a backlog")
		return ctrl.Result{RequeueAfter: templateDeferral, Priority: ptr.To(handler.LowPriority)}, nil
	}
	if err := r.updateTemplateStatus(ctx, req.NamespacedName, b, items); err != nil {
		r.templates.setSynced(req.NamespacedName, false)
		if r.Recorder != nil && !kerrors.IsConflict(err) {
			r.Recorder.Event(b.obj, corev1.EventTypeWarning, ReasonAggregateStatusFailed, err.Error())
		}
		return ctrl.Result{}, err
	}
	r.templates.setSynced(req.NamespacedName, true)
	return ctrl.Result{}, nil
}

// templateDeferral is how soon a binding whose template write was put off
// is ready again; it then waits at low priority behind the bindings whose
// own status has news.
const templateDeferral = time.Millisecond

// deferTemplate says whether the template write of this pass waits for a
// later one. It does while the controller has a backlog (at least as many
// bindings ready as it has workers): the binding's status, which the
// failover and failback decisions read, is written first for every binding
// in the backlog, and each template's status after them, at most one
// write per binding, brought up to the binding's status of that time. A
// template write is put off once at most: the pass after a deferral writes
// it whatever the backlog, so a steady backlog cannot starve templates.
func (r *StatusReconciler) deferTemplate(key types.NamespacedName) bool {
	if r.Backlog == nil || r.Backlog() < workers(r.MaxConcurrentReconciles) {
		return false
	}
	return r.templates.deferOnce(key)
}

func (r *StatusReconciler) forget(key types.NamespacedName) {
	r.templates.forget(key)
	r.Starting.Done(key)
}

// onlyStarting says whether the binding's aggregated status changes only in
// clusters that are still starting, before and after: a cluster is
// starting while it is expected and its Work is missing, not applied yet
// (and not failed), or applied with no health and no status reflected yet.
// A removed cluster, a failure, any health and any reflected status are
// news; so is a cluster that had more to say before (Healthy, say) and now
// says less.
func onlyStarting(written []workv1alpha2.AggregatedStatusItem, expected sets.Set[string], items []workv1alpha2.AggregatedStatusItem) bool {
	before := itemsByCluster(written)
	after := itemsByCluster(items)
	for cluster := range sets.KeySet(before).Union(sets.KeySet(after)) {
		b, a := before[cluster], after[cluster]
		if b != nil && a != nil && equality.Semantic.DeepEqual(*b, *a) {
			continue
		}
		if !expected.Has(cluster) || !startingItem(b) || !startingItem(a) {
			return false
		}
	}
	return true
}

func itemsByCluster(items []workv1alpha2.AggregatedStatusItem) map[string]*workv1alpha2.AggregatedStatusItem {
	m := make(map[string]*workv1alpha2.AggregatedStatusItem, len(items))
	for i := range items {
		m[items[i].ClusterName] = &items[i]
	}
	return m
}

// fullyAppliedChanges says whether the FullyApplied condition the items
// give differs from the binding's (or the binding has none yet).
func fullyAppliedChanges(status *workv1alpha2.ResourceBindingStatus, expected sets.Set[string], items []workv1alpha2.AggregatedStatusItem) bool {
	cur := meta.FindStatusCondition(status.Conditions, workv1alpha2.FullyApplied)
	want := fullyAppliedCondition(expected, items)
	return cur == nil || cur.Status != want.Status || cur.Reason != want.Reason || cur.Message != want.Message
}

// startingItem says whether a cluster's item (nil: no Work) has nothing to
// report yet.
func startingItem(item *workv1alpha2.AggregatedStatusItem) bool {
	switch {
	case item == nil:
		return true
	case !item.Applied:
		return item.AppliedMessage == ""
	default:
		return (item.Health == "" || item.Health == workv1alpha2.ResourceUnknown) && item.Status == nil
	}
}

func (r *StatusReconciler) now() metav1.Time {
	if r.Clock == nil {
		return metav1.Now()
	}
	return metav1.NewTime(r.Clock.Now())
}

// updateBindingStatus writes items (changed says whether they differ from
// the binding's, compared as JSON values) and the FullyApplied and
// PlacementHealthy conditions. A write that would only take away the
// PlacementHealthy condition of a placement just evicted is held while the
// scheduler answers (placementAnswerWait): held is how long to wait before
// asking again, and nothing was written.
func (r *StatusReconciler) updateBindingStatus(ctx context.Context, b bindingObject, items []workv1alpha2.AggregatedStatusItem, changed bool, expected sets.Set[string]) (held time.Duration, err error) {
	before := b.obj.DeepCopyObject().(client.Object)
	if changed {
		b.status.AggregatedStatus = items
	}
	if !changed && expected.Len() == 0 && meta.FindStatusCondition(b.status.Conditions, workv1alpha2.FullyApplied) == nil {
		// Not scheduled yet: nothing to report, and a write now would only
		// race the scheduler's first write of the binding.
		return 0, nil
	}
	cond := fullyAppliedCondition(expected, items)
	cond.LastTransitionTime = r.now()
	if meta.SetStatusCondition(&b.status.Conditions, cond) {
		changed = true
	}
	placementGone := false
	if healthy, ok := placementHealthyCondition(b.spec.Clusters, items); ok {
		healthy.LastTransitionTime = r.now()
		if cur := meta.FindStatusCondition(b.status.Conditions, workv1alpha2.PlacementHealthy); cur != nil && cur.Message != healthy.Message &&
			!olderWording(cur.Message, healthy.Message) {
			// Another placement: its own transition, even when the one
			// before was Healthy too (a failover's replacement was not).
			meta.RemoveStatusCondition(&b.status.Conditions, workv1alpha2.PlacementHealthy)
		}
		if meta.SetStatusCondition(&b.status.Conditions, healthy) {
			changed = true
		}
	} else if meta.RemoveStatusCondition(&b.status.Conditions, workv1alpha2.PlacementHealthy) {
		placementGone = true
	}
	if r.setFencingCondition(ctx, b) {
		changed = true
	}
	if !changed && !placementGone {
		return 0, nil
	}
	if !changed {
		if wait := placementAnswerWait(b.spec, r.now().Time); wait > 0 {
			return wait, nil
		}
	}
	if err := r.Client.Status().Patch(ctx, b.obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return 0, fmt.Errorf("updating status of %s: %w", b.describe(), err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("updated binding status", "clusters", len(items))
	return 0, nil
}

// setFencingCondition sets or removes the binding's Fencing condition
// (fencing.Condition) from its scheduled clusters' modes; it says whether
// it changed anything.
func (r *StatusReconciler) setFencingCondition(ctx context.Context, b bindingObject) bool {
	if _, ok := fencing.For(b.spec, r.DefaultPurgeMode); !ok {
		return meta.RemoveStatusCondition(&b.status.Conditions, fencing.ConditionType)
	}
	modes := map[string]clusterv1alpha1.ClusterSyncMode{}
	for _, c := range b.spec.Clusters {
		var cl clusterv1alpha1.Cluster
		if err := r.Client.Get(ctx, types.NamespacedName{Name: c.Name}, &cl); err == nil {
			modes[c.Name] = cl.Spec.SyncMode
		}
	}
	cond, ok := fencing.Condition(b.spec, modes, r.DefaultPurgeMode)
	if !ok {
		return meta.RemoveStatusCondition(&b.status.Conditions, fencing.ConditionType)
	}
	cond.LastTransitionTime = r.now()
	cond.ObservedGeneration = b.obj.GetGeneration()
	return meta.SetStatusCondition(&b.status.Conditions, cond)
}

// aggregatedNews reports whether items b tell something a decision depends
// on that a does not: which clusters have an item, and each one's applied
// state, message and health. A change of the reflected status alone is no
// news (see package coalesce).
func aggregatedNews(a, b []workv1alpha2.AggregatedStatusItem) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].ClusterName != b[i].ClusterName || itemNews(a[i], b[i]) {
			return true
		}
	}
	return false
}

// itemNews reports whether one cluster's item b says something a decision
// depends on that a does not: its applied state, message or health.
func itemNews(a, b workv1alpha2.AggregatedStatusItem) bool {
	return a.Applied != b.Applied || a.AppliedMessage != b.AppliedMessage || a.Health != b.Health
}

func (r *StatusReconciler) updateTemplateStatus(ctx context.Context, key types.NamespacedName, b bindingObject, items []workv1alpha2.AggregatedStatusItem) error {
	ref, err := templateRef(b)
	if err != nil {
		return err
	}
	live := conflict.Live(ctx)
	read := r.Templates.Get
	if live {
		read = r.Templates.GetLive
	}
	template, err := read(ctx, ref)
	if kerrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	aggregated, err := r.Interpreter.AggregateStatus(template, items)
	if err != nil {
		return fmt.Errorf("aggregating status of %s: %w", ref, err)
	}
	same, err := sameJSONValue(template.Object["status"], aggregated.Object["status"])
	if err != nil {
		return err
	}
	if same && !live {
		// A cached copy older than this process's last write of the status
		// could say "same" where the template is not: ask the API server.
		if written, ok := r.templates.written(key); ok && written != template.GetResourceVersion() {
			if template, err = r.Templates.GetLive(ctx, ref); err != nil {
				return client.IgnoreNotFound(err)
			}
			if aggregated, err = r.Interpreter.AggregateStatus(template, items); err != nil {
				return fmt.Errorf("aggregating status of %s: %w", ref, err)
			}
			if same, err = sameJSONValue(template.Object["status"], aggregated.Object["status"]); err != nil {
				return err
			}
		}
	}
	if same {
		return nil
	}
	// A cached copy that is behind makes this write fail with a conflict,
	// and the retried run reads the template from the API server.
	from := template.GetResourceVersion()
	aggregated.SetResourceVersion(from)
	if err := r.Client.Status().Update(ctx, aggregated); err != nil {
		return fmt.Errorf("updating status of %s: %w", ref, err)
	}
	r.templates.wrote(key, aggregated.GetResourceVersion())
	r.Templates.Statuses.Written(template.GetUID(), from, aggregated.GetResourceVersion())
	ctrl.LoggerFrom(ctx).V(1).Info("updated template status", "resource", b.spec.Resource)
	return nil
}

// aggregateStatus builds one item per Work of an expected cluster, sorted
// by cluster name. Works being deleted and Works of other clusters (orphans
// about to be deleted) are left out.
//
//	Applied condition      applied  appliedMessage  health                     status
//	missing                false    ""              Unknown                    -
//	False or Unknown       false    its message     Unknown                    -
//	True                   true     ""              the manifest's, or Unknown the manifest's
//
// A manifest's health counts only when it is current (reportCurrent): a
// report of an older version of the Work, or of a Work rendered for
// another replica count than the cluster's in spec.clusters, is Unknown.
func aggregateStatus(works []workv1alpha1.Work, expected sets.Set[string], spec *workv1alpha2.ResourceBindingSpec) []workv1alpha2.AggregatedStatusItem {
	var items []workv1alpha2.AggregatedStatusItem
	for i := range works {
		w := &works[i]
		cluster, ok := ClusterOfNamespace(w.Namespace)
		if !ok || !expected.Has(cluster) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		item := workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Health: workv1alpha2.ResourceUnknown}
		applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied)
		switch {
		case applied == nil:
		case applied.Status != metav1.ConditionTrue:
			item.AppliedMessage = applied.Message
		default:
			item.Applied = true
			if ms := manifestStatusOf(w, spec.Resource); ms != nil {
				item.Status = ms.Status.DeepCopy()
				if ms.Health != "" && reportCurrent(w, applied, ms, spec, cluster) {
					item.Health = workv1alpha2.ResourceHealth(ms.Health)
				}
			}
		}
		items = append(items, item)
	}
	slices.SortFunc(items, func(a, b workv1alpha2.AggregatedStatusItem) int { return cmp.Compare(a.ClusterName, b.ClusterName) })
	return items
}

// reportCurrent says whether a Work's health report describes what the
// binding wants of that cluster now: the Work's current generation was
// applied (Applied's observedGeneration), the member object had been
// applied from it when its status was read (the manifest status's
// observedGeneration), and, for a cluster of spec.clusters whose replicas
// the Work was rendered with, that count is the cluster's current share.
// A stale Healthy must not close an eviction before the replacement runs
// its new share, nor a stale Unhealthy fail a fixed application over.
func reportCurrent(w *workv1alpha1.Work, applied *metav1.Condition, ms *workv1alpha1.ManifestStatus, spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	if applied.ObservedGeneration != w.Generation || ms.ObservedGeneration != w.Generation {
		return false
	}
	rendered, ok := w.Annotations[workv1alpha1.WorkReplicasAnnotation]
	if !ok {
		return true
	}
	for _, t := range spec.Clusters {
		if t.Name == cluster {
			n, err := strconv.ParseInt(rendered, 10, 32)
			return err == nil && n == int64(t.Replicas)
		}
	}
	return true
}

// manifestStatusOf finds the status of the template's manifest in a Work:
// ordinal 0, the template's group and kind, and its name (fields left empty
// by the writer are not compared).
func manifestStatusOf(w *workv1alpha1.Work, ref workv1alpha2.ObjectReference) *workv1alpha1.ManifestStatus {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	for i := range w.Status.ManifestStatuses {
		ms := &w.Status.ManifestStatuses[i]
		id := ms.Identifier
		if id.Ordinal != 0 || (id.Kind != "" && id.Kind != ref.Kind) || (id.Name != "" && id.Name != ref.Name) ||
			(id.Kind != "" && id.Group != gv.Group) || (id.Namespace != "" && id.Namespace != ref.Namespace) {
			continue
		}
		return ms
	}
	return nil
}

// placementHealthyCondition is True when every cluster of the placement
// reports Healthy (items are current reports only, see reportCurrent);
// false (no condition) for an empty placement. Its message names the
// placement's clusters, and a new placement starts a new transition (see
// updateBindingStatus), so that its lastTransitionTime is when this
// placement became Healthy, never an earlier one's time.
func placementHealthyCondition(clusters []workv1alpha2.TargetCluster, items []workv1alpha2.AggregatedStatusItem) (metav1.Condition, bool) {
	if len(clusters) == 0 {
		return metav1.Condition{}, false
	}
	if workv1alpha2.IsPlacementHealthy(clusters, items) {
		return metav1.Condition{Type: workv1alpha2.PlacementHealthy, Status: metav1.ConditionTrue,
			Reason: workv1alpha2.PlacementHealthyReason, Message: workv1alpha2.PlacementHealthyMessage(clusters)}, true
	}
	return metav1.Condition{Type: workv1alpha2.PlacementHealthy, Status: metav1.ConditionFalse,
		Reason: workv1alpha2.PlacementNotHealthyReason, Message: "Not every cluster of the placement (" + workv1alpha2.DescribePlacement(clusters) + ") reports Healthy; see status.aggregatedStatus."}, true
}

// replicaCounts matches the replicas DescribePlacement puts after a
// cluster's name.
var replicaCounts = regexp.MustCompile(` \([0-9]+ replicas?\)`)

// olderWording says whether old is message written, for the same clusters,
// before messages named each cluster's replicas: the same placement, whose
// transition time must not restart when the message is rewritten.
func olderWording(old, message string) bool {
	return !replicaCounts.MatchString(old) && replicaCounts.ReplaceAllString(message, "") == old
}

// fullyAppliedCondition is True when there are expected clusters and every
// one of them has an applied item.
func fullyAppliedCondition(expected sets.Set[string], items []workv1alpha2.AggregatedStatusItem) metav1.Condition {
	ok := expected.Len() > 0 && len(items) == expected.Len()
	for _, item := range items {
		ok = ok && item.Applied && expected.Has(item.ClusterName)
	}
	if ok {
		return metav1.Condition{Type: workv1alpha2.FullyApplied, Status: metav1.ConditionTrue,
			Reason: workv1alpha2.FullyAppliedSuccessReason, Message: fullyAppliedMessage}
	}
	return metav1.Condition{Type: workv1alpha2.FullyApplied, Status: metav1.ConditionFalse,
		Reason: workv1alpha2.FullyAppliedFailedReason, Message: notFullyAppliedMessage}
}

// sameJSONValue compares two values by their JSON form, so that int64 and
// float64 numbers, nil and empty, and key order do not matter.
func sameJSONValue(a, b any) (bool, error) {
	ra, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("encoding status: %w", err)
	}
	rb, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("encoding status: %w", err)
	}
	if isEmptyJSON(ra) && isEmptyJSON(rb) {
		return true, nil
	}
	return sameJSON(ra, rb)
}

func isEmptyJSON(raw []byte) bool {
	s := string(raw)
	return s == "null" || s == "[]" || s == "{}"
}

// SetupWithManager registers the Work index and the controller
// "binding-status". It watches ResourceBindings and ClusterResourceBindings
// (creation and generation changes: the expected clusters may change) and
// Works (creation, status changes, deletion; mapped to their binding).
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.WorkIndex.Setup(context.Background(), mgr); err != nil {
		return err
	}
	if r.Templates == nil {
		r.Templates = &templates.Reader{Live: mgr.GetAPIReader()}
	}
	if r.Recorder == nil {
		//lint:ignore SA1019 the binding and template Events use the core/v1 recorder
		r.Recorder = mgr.GetEventRecorderFor("binding-status-controller")
	}
	if r.Interpreter == nil {
		return fmt.Errorf("binding status controller: Interpreter is required")
	}
	concurrency := workers(r.MaxConcurrentReconciles)
	if r.Writes == nil {
		r.Writes = coalesce.New(0, nil)
	}
	if r.Starting == nil {
		r.Starting = coalesce.NewQuiet(StartingGrace, r.Clock)
	}
	bindingChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("binding-status").
		For(&workv1alpha2.ResourceBinding{}, bindingChanged).
		Watches(&workv1alpha2.ClusterResourceBinding{}, &handler.EnqueueRequestForObject{}, bindingChanged).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(workToBinding), builder.WithPredicates(workStatusChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, NewQueue: r.newQueue}).
		Complete(conflict.Retrying(r))
}

// newQueue is the controller's queue, whose ready requests are the
// default Backlog.
func (r *StatusReconciler) newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := queue.New(name, rl)
	if r.Backlog == nil {
		r.Backlog = q.Len
	}
	return q
}

// workStatusChanged passes Work creations, deletions, status changes and
// the start of a deletion.
func workStatusChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldW, okOld := e.ObjectOld.(*workv1alpha1.Work)
			newW, okNew := e.ObjectNew.(*workv1alpha1.Work)
			if !okOld || !okNew {
				return true
			}
			return !equality.Semantic.DeepEqual(oldW.Status, newW.Status) ||
				oldW.DeletionTimestamp.IsZero() != newW.DeletionTimestamp.IsZero()
		},
	}
}

// templateMemory remembers, per binding, what this process knows of its
// template's status: whether it was written or found up to date since the
// binding's aggregated status last changed (synced), and the template's
// resourceVersion after this process last wrote that status (written): a
// cached template of another version may be older than that write. One
// map entry per binding; the zero value is ready to use.
type templateMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]templateState
}

type templateState struct {
	synced  bool
	written string
	// deferred: a template write was put off since the last one.
	deferred bool
}

func (t *templateMemory) synced(key types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[key].synced
}

func (t *templateMemory) setSynced(key types.NamespacedName, synced bool) {
	t.update(key, func(s *templateState) {
		s.synced = synced
		if synced {
			s.deferred = false
		}
	})
}

// deferOnce marks key's template write put off, unless it was already:
// it says whether this is the first time since the last write.
func (t *templateMemory) deferOnce(key types.NamespacedName) bool {
	first := false
	t.update(key, func(s *templateState) {
		first = !s.deferred
		s.deferred = true
		s.synced = false
	})
	return first
}

func (t *templateMemory) written(key types.NamespacedName) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[key]
	return s.written, s.written != ""
}

func (t *templateMemory) wrote(key types.NamespacedName, resourceVersion string) {
	t.update(key, func(s *templateState) { s.written = resourceVersion })
}

func (t *templateMemory) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key)
}

// update changes the entry of key with f, and drops the entry once it holds
// nothing.
func (t *templateMemory) update(key types.NamespacedName, f func(*templateState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[key]
	f(&s)
	if s == (templateState{}) {
		delete(t.m, key)
		return
	}
	if t.m == nil {
		t.m = map[types.NamespacedName]templateState{}
	}
	t.m[key] = s
}
