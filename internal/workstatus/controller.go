package workstatus

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/enqueue"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// Event reasons recorded on Works.
const (
	EventReflectStatusFailed   = "ReflectStatusFailed"
	EventInterpretHealthFailed = "InterpretHealthFailed"
)

// MemberCache is what the controller needs from the member cluster cache;
// *membercluster.Cache implements it. Status is read from the informers
// only: no member request per reconcile.
type MemberCache interface {
	RESTMapping(ctx context.Context, cluster string, gvk schema.GroupVersionKind) (*meta.RESTMapping, error)
	Watch(ctx context.Context, cluster string, gvr schema.GroupVersionResource, h membercluster.Handler) error
	Cached(cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool)
}

// DriftNotifier is told about Works whose member object is missing, so that
// they are applied again; *execution.Reconciler implements it.
type DriftNotifier interface {
	NotifyDrift(work types.NamespacedName)
}

// firstReportGrace is how long the first report of a member object that is
// not Healthy yet may wait. A new Deployment's status says Unhealthy when
// it is created and when its controller first observes it, and Healthy
// once its pods are available: reported as it comes, that is three status
// writes of the Work and as many of its binding and template where one says
// everything. Healthy is written at once; an object still not Healthy after
// the grace is reported as it is (for a real workload, whose pods take
// longer to start, that merges the first two reports).
const firstReportGrace = 2 * time.Second

// HandoffWait is how long the execution controller should leave a new
// object's conditions to this controller (coalesce.Handoff): longer than
// the first report's grace, so that the report normally carries them.
const HandoffWait = firstReportGrace + time.Second

// Reconciler records the status and health of each Work's member objects
// in Work.status.manifestStatuses.
type Reconciler struct {
	Client      client.Client
	Recorder    record.EventRecorder
	Interpreter interpreter.Interpreter
	Members     MemberCache
	// Drift, when set, is told when an applied Work's object is missing
	// from its member.
	Drift DriftNotifier

	// MaxConcurrentReconciles is the number of workers (default 10).
	MaxConcurrentReconciles int
	// Writes spaces out status writes without news (default: a
	// coalesce.DefaultWindow per Work).
	Writes *coalesce.Writes
	// Starting holds back a Work's first reports of objects that are not
	// Healthy yet (see OnlyStarting; default: firstReportGrace per Work).
	Starting *coalesce.Quiet
	// Handoff, when set, holds the execution controller's conditions for
	// Works whose objects it has just created; they go into this
	// controller's next write of the Work.
	Handoff *coalesce.Handoff[[]metav1.Condition]

	// Agent is set in the agent of a Pull cluster: it reports the Works of
	// the Pull cluster it runs in; the control plane's reports those of
	// Push clusters (see execution.Applies).
	Agent bool

	// queue takes member events, which arrive from informers outside
	// controller-runtime.
	queue enqueue.Queue
}

// MemberHandler enqueues the Work of a member object that was added,
// deleted, or whose status, generation or metadata changed.
func (r *Reconciler) MemberHandler() membercluster.Handler {
	return membercluster.Handler{Name: "workstatus", OnEvent: func(e membercluster.Event) {
		if !StatusMayHaveChanged(e) {
			return
		}
		if key, ok := execution.WorkOf(e.Cluster, e.Object); ok {
			r.queue.Add(key)
		}
	}}
}

// StatusMayHaveChanged filters out updates that change neither the status,
// the generation (health rules compare observedGeneration with it) nor the
// labels and annotations (which map the object to its Work).
func StatusMayHaveChanged(e membercluster.Event) bool {
	if e.Type != membercluster.Updated || e.Old == nil {
		return true
	}
	o, n := e.Old, e.Object
	return o.GetGeneration() != n.GetGeneration() ||
		!n.StatusEqual(o) ||
		!o.Labels().Equal(n.Labels()) ||
		!o.Annotations().Equal(n.Annotations())
}

// SetupWithManager registers the controller. It watches Works in execution
// namespaces (creation and spec changes, to register member watches) and
// the Works' objects in the members through the member cache.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 10
	}
	if r.Writes == nil {
		r.Writes = coalesce.New(0, nil)
	}
	if r.Starting == nil {
		r.Starting = coalesce.NewQuiet(firstReportGrace, nil)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workstatus").
		For(&workv1alpha1.Work{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool {
				_, ok := execution.ClusterOfNamespace(o.GetNamespace())
				return ok
			}),
			predicate.GenerationChangedPredicate{},
		)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: queue.New}).
		Complete(conflict.Retrying(r))
}

// Reconcile rebuilds status.manifestStatuses of one Work from the member
// informers:
//  1. each manifest is mapped to its resource and its member watch ensured;
//  2. an object the informer holds (and that points back to this Work) is
//     reflected and its health interpreted;
//  3. an object not listed yet keeps its previous entry; one that is
//     missing keeps it too, and an applied Work is handed to the execution
//     controller to recreate it, rather than reporting a stale status;
//  4. the list is written only when it changed, together with the
//     execution controller's conditions when it offered them (Handoff).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cluster, ok := execution.ClusterOfNamespace(req.Namespace)
	if !ok {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("work", req.NamespacedName, "cluster", cluster)
	ctx = ctrl.LoggerInto(ctx, log)

	var work workv1alpha1.Work
	if err := r.Client.Get(ctx, req.NamespacedName, &work); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !work.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var owner clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, types.NamespacedName{Name: cluster}, &owner); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading Cluster %s: %w", cluster, err)
		}
		// No member to observe.
		return reconcile.Result{}, nil
	}
	if !execution.Applies(&owner, r.Agent) {
		return reconcile.Result{}, nil
	}

	statuses := make([]workv1alpha1.ManifestStatus, 0, len(work.Spec.Workload.Manifests))
	var retry error
	missing := false
	for i := range work.Spec.Workload.Manifests {
		raw, err := work.Spec.Workload.Manifests[i].JSON()
		manifest := &unstructured.Unstructured{}
		if err == nil {
			err = manifest.UnmarshalJSON(raw)
		}
		if err != nil {
			// The execution controller reports bad manifests.
			continue
		}
		mapping, err := r.Members.RESTMapping(ctx, cluster, manifest.GroupVersionKind())
		if err != nil {
			retry = err
			if prev, ok := Previous(work.Status.ManifestStatuses, Identifier(i, manifest)); ok {
				statuses = append(statuses, prev)
			}
			continue
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && manifest.GetNamespace() == "" {
			manifest.SetNamespace(metav1.NamespaceDefault)
		}
		id := Identifier(i, manifest)
		if err := r.Members.Watch(ctx, cluster, mapping.Resource, r.MemberHandler()); err != nil {
			retry = err
		}
		obj, synced := r.Members.Cached(cluster, mapping.Resource, manifest.GetNamespace(), manifest.GetName())
		earlier := false
		if obj != nil {
			if owner, ok := execution.WorkOf(cluster, obj); !ok || owner != req.NamespacedName {
				obj = nil
			} else if !AppliedFrom(obj, &work) {
				// The copy of an earlier Work of this name: not reported,
				// and not missing either; the execution controller's apply
				// stamps the object with this Work.
				obj, earlier = nil, true
			}
		}
		if obj == nil {
			missing = missing || (synced && !earlier)
			if prev, ok := Previous(work.Status.ManifestStatuses, id); ok {
				statuses = append(statuses, prev)
			}
			continue
		}
		ms, statusErr, healthErr := Observe(r.Interpreter, id, obj)
		if statusErr != nil {
			r.event(&work, EventReflectStatusFailed, fmt.Sprintf("reflecting status of %s %s: %v", id.Kind, id.Name, statusErr))
		}
		if healthErr != nil {
			r.event(&work, EventInterpretHealthFailed, fmt.Sprintf("interpreting health of %s %s: %v", id.Kind, id.Name, healthErr))
		}
		statuses = append(statuses, ms)
	}

	if missing && r.Drift != nil && applied(&work) && !execution.Suspended(&work) {
		log.V(1).Info("member object missing; asking execution to apply it again")
		r.Drift.NotifyDrift(req.NamespacedName)
	}
	if !Equal(work.Status.ManifestStatuses, statuses) {
		if OnlyStarting(work.Status.ManifestStatuses, statuses) {
			if wait := r.Starting.Hold(req.NamespacedName); wait > 0 {
				return reconcile.Result{RequeueAfter: wait}, nil
			}
		}
		if !News(work.Status.ManifestStatuses, statuses) {
			if wait := r.Writes.Wait(req.NamespacedName); wait > 0 {
				return reconcile.Result{RequeueAfter: wait}, nil
			}
		}
		r.Writes.Wrote(req.NamespacedName)
		r.Starting.Done(req.NamespacedName)
		base := work.DeepCopy()
		work.Status.ManifestStatuses = statuses
		patch := client.MergeFrom(base)
		conditions, said, offered := r.Handoff.Take(string(work.UID))
		if offered {
			// The whole list is replaced: only if nobody wrote the Work
			// since it was read, or newer conditions would be undone.
			work.Status.Conditions = conditions
			patch = client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
		}
		if err := r.Client.Status().Patch(ctx, &work, patch); client.IgnoreNotFound(err) != nil {
			// Conditions taken and not written are written by the
			// execution controller when its offer's wait ends.
			return reconcile.Result{}, fmt.Errorf("writing Work manifest statuses: %w", err)
		}
		if offered {
			r.Handoff.Delivered(string(work.UID), said)
		}
	}
	if retry != nil {
		if wait, ok := membercluster.RetryAfter(retry); ok {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return reconcile.Result{}, retry
	}
	return reconcile.Result{}, nil
}

func applied(work *workv1alpha1.Work) bool {
	return meta.IsStatusConditionTrue(work.Status.Conditions, workv1alpha1.WorkApplied)
}

func (r *Reconciler) event(work *workv1alpha1.Work, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Event(work, corev1.EventTypeWarning, reason, message)
	}
}

// SetupWithExecution registers exec and ws, the pair that applies Works and
// reports on them, wired to each other: the execution controller leaves a
// new object's Applied condition to ws's first report of it (one status
// write of the Work instead of two), and ws hands exec the Works whose
// member objects went missing. The control plane and the agent of a Pull
// cluster run the same pair.
func SetupWithExecution(mgr ctrl.Manager, clk clock.PassiveClock, exec *execution.Reconciler, ws *Reconciler) error {
	echoes := coalesce.NewRecent(0, clk)
	exec.Clock = clk
	exec.Echoes = echoes
	exec.Handoff = coalesce.NewHandoff[[]metav1.Condition](HandoffWait, echoes, clk)
	if err := exec.SetupWithManager(mgr); err != nil {
		return err
	}
	ws.Drift = exec
	ws.Handoff = exec.Handoff
	return ws.SetupWithManager(mgr)
}
