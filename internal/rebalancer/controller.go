package rebalancer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
)

// Event reasons on WorkloadRebalancers.
const (
	EventReasonFinished         = "RebalanceFinished"
	EventReasonSelectorFailed   = "WorkloadSelectorFailed"
	EventReasonTooManyWorkloads = "TooManyWorkloads"
	// EventReasonNotTaken: a workload waits for a fresh schedule that no
	// scheduler takes (scheduler.WhyNotTaken); it keeps waiting, without a
	// result, until one does.
	EventReasonNotTaken = "RescheduleNotTaken"
	// EventReasonHeld: some workloads of a new generation wait for their
	// turn under --rebalance-max-concurrent.
	EventReasonHeld = "RebalanceHeld"
)

// IndexPendingBindings indexes WorkloadRebalancers by the bindings of
// their workloads that have no result yet (pendingBindingKeys), so that a
// binding's schedule brings back the rebalancers waiting for it.
const IndexPendingBindings = "rebalancer.lifeboat.dev/pending-binding"

// IndexMoving: "true" on bindings that count against the fleet-wide cap
// (Moving), to count them.
const IndexMoving = "rebalancer.lifeboat.dev/moving"

// conflictRetry is when a reconcile that lost a write race runs again.
const conflictRetry = time.Second

// Reconciler runs WorkloadRebalancers. Its fields are its dependencies.
type Reconciler struct {
	// Client reads rebalancers and bindings (from the cache) and writes.
	Client client.Client
	// Templates lists resource templates for spec.workloadSelector (their
	// metadata only; the API server, not a cache: the kinds are arbitrary).
	Templates client.Reader
	// Recorder records Events on rebalancers.
	Recorder record.EventRecorder
	// Clock tells the time.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles; 0 means 1.
	MaxConcurrentReconciles int
	// SchedulerName is the scheduler that takes the requests (empty:
	// scheduler.DefaultSchedulerName); a workload whose binding it would
	// not schedule is named in an Event.
	SchedulerName string
	// Gate caps the rebalances open fleet-wide (Moving); nil does not cap
	// them. It needs no queue (see fleetcap.Gate.WithoutQueue): a place
	// freed wakes every unfinished rebalancer.
	Gate *fleetcap.Gate

	heldNotices heldNotices
}

// heldNotices remembers the rebalancers whose generation was already
// said to have workloads waiting for the cap, so that the RebalanceHeld
// Event is recorded once per generation (once more after a restart), on
// the first pass that holds one back, whichever it is.
type heldNotices struct {
	mu   sync.Mutex
	said map[string]heldNotice // by rebalancer name
}

type heldNotice struct {
	uid        types.UID
	generation int64
}

// first reports whether rb's generation was not said yet, and marks it
// said.
func (h *heldNotices) first(rb *appsv1alpha1.WorkloadRebalancer) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := heldNotice{uid: rb.UID, generation: rb.Generation}
	if h.said[rb.Name] == n {
		return false
	}
	if h.said == nil {
		h.said = map[string]heldNotice{}
	}
	h.said[rb.Name] = n
	return true
}

// forget drops what was said of the rebalancer name: it finished or is
// gone.
func (h *heldNotices) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.said, name)
}

// SetupWithManager registers the controller: rebalancers, and the
// bindings they wait for (a change of generation or of
// status.lastScheduledTime).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1alpha1.WorkloadRebalancer{}, IndexPendingBindings, pendingBindingKeys); err != nil {
		return fmt.Errorf("indexing WorkloadRebalancers by pending binding: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workload-rebalancer").
		For(&appsv1alpha1.WorkloadRebalancer{}).
		Watches(&workv1alpha2.ResourceBinding{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor), builder.WithPredicates(scheduleChanged())).
		Watches(&workv1alpha2.ClusterResourceBinding{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor), builder.WithPredicates(scheduleChanged()))
	if r.Gate != nil {
		for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
			if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexMoving, r.movingValues); err != nil {
				return fmt.Errorf("indexing bindings by rebalance in progress: %w", err)
			}
			// A place freed under the cap: the rebalancers with workloads
			// waiting for one look again.
			b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.unfinished), builder.WithPredicates(r.movingEnded()))
		}
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles), NewQueue: queue.New}).
		Complete(r)
}

// moving reports whether a binding counts against the cap (Moving).
func (r *Reconciler) moving(obj client.Object) bool {
	spec, status, ok := bindingParts(obj)
	if !ok || obj.GetDeletionTimestamp() != nil {
		return false // a binding being deleted moves nowhere
	}
	if !Moving(spec, status, obj.GetAnnotations(), obj.GetGeneration(), true) {
		return false // nearly every binding: no need to ask who takes it
	}
	return Moving(spec, status, obj.GetAnnotations(), obj.GetGeneration(), scheduler.WhyNotTaken(obj.GetLabels(), spec, r.SchedulerName) == "")
}

// movingValues is the index function of IndexMoving.
func (r *Reconciler) movingValues(obj client.Object) []string {
	if r.moving(obj) {
		return []string{"true"}
	}
	return nil
}

// movingEnded passes a binding that stops counting against the cap: an
// update after which it no longer does, or its deletion.
func (r *Reconciler) movingEnded() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return r.moving(e.ObjectOld) && !r.moving(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return r.moving(e.Object) },
	}
}

// unfinished maps any object to the rebalancers that have not finished.
func (r *Reconciler) unfinished(ctx context.Context, _ client.Object) []reconcile.Request {
	var list appsv1alpha1.WorkloadRebalancerList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the rebalancers that wait for a place under the cap")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if rb := &list.Items[i]; rb.Status.FinishTime == nil && rb.DeletionTimestamp == nil {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: rb.Name}})
		}
	}
	return out
}

// openMoves lists the bindings that count against the cap, by
// bindingKey, as the cache shows them.
func (r *Reconciler) openMoves(ctx context.Context) (map[string]bool, error) {
	open := map[string]bool{}
	var rbs workv1alpha2.ResourceBindingList
	if err := r.Client.List(ctx, &rbs, client.MatchingFields{IndexMoving: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the ResourceBindings being rebalanced: %w", err)
	}
	for i := range rbs.Items {
		open[bindingKey(rbs.Items[i].Namespace, rbs.Items[i].Name)] = true
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	if err := r.Client.List(ctx, &crbs, client.MatchingFields{IndexMoving: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the ClusterResourceBindings being rebalanced: %w", err)
	}
	for i := range crbs.Items {
		open[bindingKey("", crbs.Items[i].Name)] = true
	}
	return open, nil
}

// bindingParts returns the spec and status of a binding of either kind.
func bindingParts(obj client.Object) (*workv1alpha2.ResourceBindingSpec, *workv1alpha2.ResourceBindingStatus, bool) {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec, &b.Status, true
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec, &b.Status, true
	}
	return nil, nil, false
}

// bindingKey names a binding in IndexPendingBindings and under the Gate.
func bindingKey(namespace, name string) string {
	if namespace == "" {
		return "crb/" + name
	}
	return "rb/" + namespace + "/" + name
}

// pendingBindingKeys is the index function of IndexPendingBindings.
func pendingBindingKeys(obj client.Object) []string {
	rb, ok := obj.(*appsv1alpha1.WorkloadRebalancer)
	if !ok {
		return nil
	}
	var out []string
	for _, w := range rb.Status.ObservedWorkloads {
		if w.Result == "" {
			out = append(out, bindingKey(w.Workload.Namespace, detector.BindingName(w.Workload.Kind, w.Workload.Name)))
		}
	}
	return out
}

// waitingFor maps a binding to the rebalancers waiting for it.
func (r *Reconciler) waitingFor(ctx context.Context, obj client.Object) []reconcile.Request {
	var list appsv1alpha1.WorkloadRebalancerList
	if err := r.Client.List(ctx, &list, client.MatchingFields{IndexPendingBindings: bindingKey(obj.GetNamespace(), obj.GetName())}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the rebalancers waiting for a binding", "binding", obj.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// scheduleChanged passes binding creations, deletions, and updates that
// change the generation or status.lastScheduledTime.
func scheduleChanged() predicate.Predicate {
	last := func(obj client.Object) (*metav1.Time, bool) {
		switch b := obj.(type) {
		case *workv1alpha2.ResourceBinding:
			return b.Status.LastScheduledTime, true
		case *workv1alpha2.ClusterResourceBinding:
			return b.Status.LastScheduledTime, true
		}
		return nil, false
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := last(e.ObjectOld)
			n, ok2 := last(e.ObjectNew)
			return ok1 && ok2 && (e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || !equality.Semantic.DeepEqual(o, n))
		},
	}
}

// Reconcile carries out one rebalancer (see the package documentation).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	rb := &appsv1alpha1.WorkloadRebalancer{}
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		if apierrors.IsNotFound(err) {
			r.heldNotices.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rb.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()

	// 1. A new generation: record its workloads and request time first.
	newGeneration := rb.Status.ObservedGeneration != rb.Generation || rb.Status.RescheduleTriggeredAt == nil
	if newGeneration {
		workloads, err := r.workloads(ctx, rb)
		if err != nil {
			return ctrl.Result{}, err
		}
		status, dropped := observeGeneration(rb.Status, rb.Generation, workloads, now)
		if dropped > 0 {
			r.Recorder.Eventf(rb, corev1.EventTypeWarning, EventReasonTooManyWorkloads,
				"%d workloads beyond the first %d are left out; rebalance them with another WorkloadRebalancer", dropped, appsv1alpha1.MaxWorkloads)
		}
		rb.Status = status
		if err := r.Client.Status().Update(ctx, rb); err != nil {
			return writeFailed(ctx, err, "recording the workloads of a new generation")
		}
		log.V(1).Info("rebalancer generation observed", "generation", rb.Generation, "workloads", len(status.ObservedWorkloads))
	}

	// 2 and 3. Request a fresh schedule of each pending workload, as the
	// cap admits; collect the results.
	status := *rb.Status.DeepCopy()
	var untaken []string // workloads no scheduler takes, and why
	held, heldWhy := 0, ""
	full := false      // the cap refused one: the others wait without asking
	waiting := false   // a workload waits for the cap or for a scheduler
	conflicts := false // a binding changed under a request: decide it again
	by := string(rb.UID)
	for i := range status.ObservedWorkloads {
		w := &status.ObservedWorkloads[i]
		if w.Result != "" {
			continue
		}
		b, err := r.binding(ctx, w.Workload)
		if err != nil {
			return ctrl.Result{}, err
		}
		s := decideWorkload(*status.RescheduleTriggeredAt, b.view())
		if s.trigger != nil {
			key := bindingKey(b.obj.GetNamespace(), b.obj.GetName())
			if r.Gate != nil {
				// Under a cap, only an admitted request is written: one
				// that no scheduler takes would move, uncounted, the
				// moment one does.
				if why := scheduler.WhyNotTaken(b.obj.GetLabels(), b.spec, r.SchedulerName); why != "" {
					untaken = append(untaken, describe(w.Workload)+": "+why)
					waiting = true
					continue
				}
				if full {
					held, waiting = held+1, true
					continue
				}
				a, err := r.Gate.Admit(key, by, func() (map[string]bool, error) { return r.openMoves(ctx) }, now)
				if err != nil {
					return ctrl.Result{}, err
				}
				if !a.Allowed {
					full, held, heldWhy, waiting = true, held+1, a.Reason, true
					continue
				}
			}
			if err := r.trigger(ctx, b.obj, *s.trigger); err != nil {
				if r.Gate != nil {
					r.Gate.Forget(key, by)
				}
				if apierrors.IsConflict(err) {
					conflicts = true
					continue
				}
				return writeFailed(ctx, err, "requesting a fresh schedule")
			}
			log.Info("fresh schedule requested", "workload", describe(w.Workload), "binding", b.obj.GetName(), "rescheduleTriggeredAt", s.trigger.UTC())
			continue
		}
		if s.result == "" {
			if why := scheduler.WhyNotTaken(b.obj.GetLabels(), b.spec, r.SchedulerName); why != "" {
				untaken = append(untaken, describe(w.Workload)+": "+why)
			}
		}
		if s.result == appsv1alpha1.RebalanceSuccessful && r.Gate != nil {
			// The request is made: from now on the binding itself says
			// whether it is moving, also when the cache never showed the
			// request open.
			r.Gate.Forget(bindingKey(b.obj.GetNamespace(), b.obj.GetName()), by)
		}
		w.Result, w.Reason = s.result, s.reason
	}
	if len(untaken) > 0 {
		r.Recorder.Event(rb, corev1.EventTypeWarning, EventReasonNotTaken, notTakenMessage(untaken))
	}
	if held > 0 {
		log.V(1).Info("rebalances held back by the fleet-wide cap", "held", held, "why", heldWhy)
		if r.heldNotices.first(rb) {
			r.Recorder.Eventf(rb, corev1.EventTypeNormal, EventReasonHeld,
				"%d of %d workloads wait for their turn (%s; --rebalance-max-concurrent); each gets its fresh schedule as earlier rebalances finish.",
				held, len(status.ObservedWorkloads), heldWhy)
		}
	}
	justFinished := status.FinishTime == nil && finished(status.ObservedWorkloads)
	if justFinished {
		t := metav1.NewTime(now).Rfc3339Copy()
		status.FinishTime = &t
	}
	if !equality.Semantic.DeepEqual(status, rb.Status) {
		rb.Status = status
		if err := r.Client.Status().Update(ctx, rb); err != nil {
			return writeFailed(ctx, err, "recording results")
		}
		if justFinished {
			ok, failed := count(status.ObservedWorkloads)
			r.Recorder.Eventf(rb, corev1.EventTypeNormal, EventReasonFinished, "Rebalance finished: %d successful, %d failed.", ok, failed)
			log.Info("rebalance finished", "successful", ok, "failed", failed)
		}
	}

	// 4. Expire.
	if conflicts {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if rb.Status.FinishTime != nil {
		r.heldNotices.forget(rb.Name)
	}
	at, ok := expiry(rb.Spec, rb.Status)
	if !ok {
		if waiting {
			// Woken when a place frees (movingEnded) or the binding
			// changes; the retry covers what the watches do not see (a
			// policy claiming the binding again).
			return ctrl.Result{RequeueAfter: fleetcap.CapRetry}, nil
		}
		return ctrl.Result{}, nil
	}
	if wait := at.Sub(now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Delete(ctx, rb, client.Preconditions{UID: &rb.UID}); err != nil && !apierrors.IsNotFound(err) {
		return writeFailed(ctx, err, "deleting the finished rebalancer")
	}
	log.Info("finished rebalancer deleted after its ttlSecondsAfterFinished")
	return ctrl.Result{}, nil
}

// foundBinding is a workload's binding: obj nil when there is none.
type foundBinding struct {
	obj    client.Object
	spec   *workv1alpha2.ResourceBindingSpec
	status *workv1alpha2.ResourceBindingStatus
}

func (b foundBinding) view() *bindingView {
	if b.obj == nil {
		return nil
	}
	return &bindingView{rescheduleTriggeredAt: b.spec.RescheduleTriggeredAt, lastScheduledTime: b.status.LastScheduledTime}
}

// binding finds the binding of a workload as the detector names it, and
// only if it binds that very template (a binding's name is shared by
// templates whose kinds differ only in group).
func (r *Reconciler) binding(ctx context.Context, w appsv1alpha1.ObjectReference) (foundBinding, error) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: detector.BindingName(w.Kind, w.Name)}
	var b foundBinding
	if w.Namespace != "" {
		rb := &workv1alpha2.ResourceBinding{}
		b = foundBinding{obj: rb, spec: &rb.Spec, status: &rb.Status}
	} else {
		crb := &workv1alpha2.ClusterResourceBinding{}
		b = foundBinding{obj: crb, spec: &crb.Spec, status: &crb.Status}
	}
	if err := r.Client.Get(ctx, key, b.obj); err != nil {
		if apierrors.IsNotFound(err) {
			return foundBinding{}, nil
		}
		return foundBinding{}, fmt.Errorf("reading the binding of %s: %w", describe(w), err)
	}
	gv, err := schema.ParseGroupVersion(w.APIVersion)
	if err != nil || b.obj.GetDeletionTimestamp() != nil ||
		!detector.BindsTemplate(b.spec.Resource, gv.WithKind(w.Kind).GroupKind(), w.Namespace, w.Name) {
		return foundBinding{}, nil
	}
	return b, nil
}

// trigger writes spec.rescheduleTriggeredAt, with the binding's
// resourceVersion: a binding that changed meanwhile is decided again.
func (r *Reconciler) trigger(ctx context.Context, obj client.Object, at metav1.Time) error {
	before := obj.DeepCopyObject().(client.Object)
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		b.Spec.RescheduleTriggeredAt = &at
	case *workv1alpha2.ClusterResourceBinding:
		b.Spec.RescheduleTriggeredAt = &at
	}
	return r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// writeFailed turns a lost write race into a quick re-read and wraps
// other errors.
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

// notTakenNamed is how many workloads a RescheduleNotTaken Event names;
// it counts the others.
const notTakenNamed = 3

// notTakenMessage is the message of the one RescheduleNotTaken Event of a
// pass: each workload with its reason, the first notTakenNamed of them.
func notTakenMessage(untaken []string) string {
	named := untaken[:min(len(untaken), notTakenNamed)]
	msg := strings.Join(named, "; ")
	if more := len(untaken) - len(named); more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	if len(untaken) == 1 {
		return "A workload waits for a fresh schedule that no scheduler takes; it gets its result once one does: " + msg
	}
	return fmt.Sprintf("%d workloads wait for a fresh schedule that no scheduler takes; each gets its result once one does: %s", len(untaken), msg)
}

func count(ws []appsv1alpha1.ObservedWorkload) (ok, failed int) {
	for _, w := range ws {
		switch w.Result {
		case appsv1alpha1.RebalanceSuccessful:
			ok++
		case appsv1alpha1.RebalanceFailed:
			failed++
		}
	}
	return ok, failed
}

func describe(w appsv1alpha1.ObjectReference) string {
	if w.Namespace == "" {
		return fmt.Sprintf("%s %s %s", w.APIVersion, w.Kind, w.Name)
	}
	return fmt.Sprintf("%s %s %s/%s", w.APIVersion, w.Kind, w.Namespace, w.Name)
}
