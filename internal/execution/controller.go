package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/enqueue"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/overrides"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// Event reasons recorded on Works.
const (
	EventSyncSucceeded = "SyncWorkloadSucceed"
	EventSyncFailed    = "SyncWorkloadFailed"
	EventCleanupFailed = "CleanupFailed"
)

// MemberCache is what the controller needs from the member cluster cache;
// *membercluster.Cache implements it.
type MemberCache interface {
	RESTMapping(ctx context.Context, cluster string, gvk schema.GroupVersionKind) (*meta.RESTMapping, error)
	Watch(ctx context.Context, cluster string, gvr schema.GroupVersionResource, h membercluster.Handler) error
	Get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	Read(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	Apply(ctx context.Context, cluster string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
	Create(ctx context.Context, cluster string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	Patch(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error
}

// Reconciler applies Works to their member clusters. Its fields are its
// dependencies; Client should be the manager's (cached) client.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Events holds back SyncWorkloadSucceed and CleanupFailed Events about
	// one cluster's Works past its burst and summarises them on the
	// Cluster (nil: every Event is recorded).
	Events      *eventbudget.Budget
	Clock       clock.PassiveClock
	Interpreter interpreter.Interpreter
	Members     MemberCache

	// MaxConcurrentReconciles is the number of workers (default 10).
	MaxConcurrentReconciles int
	// ConflictRecheckInterval is how often a Work blocked by an unmanaged
	// object in the member is tried again (default 2 minutes): the object
	// is outside the informers, so its removal produces no event.
	ConflictRecheckInterval time.Duration
	// Echoes remembers the conditions this controller wrote lately: the
	// member object's creation brings a Work back before the cache holds
	// the conditions written after the apply (default: one per process).
	Echoes *coalesce.Recent
	// Handoff, when set, receives the conditions of a Work whose objects
	// this controller has just created, for the work status controller to
	// write with its first report of them (see coalesce.Handoff; it should
	// be made with Echoes). nil writes them at once.
	Handoff *coalesce.Handoff[[]metav1.Condition]

	// ReleaseUnreachable is the hook of the failover work: it is asked when
	// a deleted Work's member objects cannot be deleted because the member
	// does not answer. Returning true removes the finalizer anyway, leaving
	// the objects behind (for example when the cluster is known to be gone
	// for good, or fenced). nil keeps the finalizer until the member
	// answers. A Cluster that no longer exists is always released.
	ReleaseUnreachable func(ctx context.Context, cluster *clusterv1alpha1.Cluster, work *workv1alpha1.Work, cause error) bool

	// StillWanted, when set, is asked before a deleted Work's member objects
	// are deleted: true when the binding the Work was made from still wants
	// a Work in the cluster (the Work was deleted by hand, or just before
	// the binding placed the cluster again). Its objects are then left as
	// they are, for the Work made again under the same name to adopt, and
	// only the finalizer goes; deleting them would stop a copy that is
	// wanted, to start it again. Asked only while the Cluster is Ready and
	// not being deleted (unjoining removes what Lifeboat put there). nil
	// deletes them.
	StillWanted func(ctx context.Context, cluster string, work *workv1alpha1.Work) (bool, error)

	// Hold, when set, keeps a Work from being applied for now: the agent's
	// fencing holds the Works whose copies it stopped. A held Work is
	// looked at again after HoldRecheck. Deletions are never held.
	Hold func(ctx context.Context, work *workv1alpha1.Work) bool

	// Agent is set in the agent of a Pull cluster: it applies the Works of
	// the Pull cluster it runs in. The control plane's applies the Works of
	// Push clusters, and leaves those of Pull clusters to their agents.
	Agent bool

	// queue takes member events, which arrive from informers outside
	// controller-runtime.
	queue enqueue.Queue
}

// HoldRecheck is when a held Work is looked at again.
const HoldRecheck = 5 * time.Second

// NotifyDrift enqueues a Work whose member object is missing or changed,
// so that it is applied again. The work status controller calls it.
func (r *Reconciler) NotifyDrift(work types.NamespacedName) { r.queue.Add(work) }

// MemberHandler is the handler registered on member informers: a deleted
// managed object, or one changed outside its status, enqueues its Work.
func (r *Reconciler) MemberHandler() membercluster.Handler {
	return membercluster.Handler{Name: "execution", OnEvent: func(e membercluster.Event) {
		if !NeedsResync(e) {
			return
		}
		if key, ok := WorkOf(e.Cluster, e.Object); ok {
			r.queue.Add(key)
		}
	}}
}

// SetupWithManager registers the controller. It watches Works in execution
// namespaces (spec, labels, annotations and deletion), Clusters (creation,
// spec changes, Ready transitions: every Work of the cluster is enqueued),
// and managed objects in the members through the member cache.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Echoes == nil {
		r.Echoes = coalesce.NewRecent(0, r.Clock)
	}
	if r.Handoff != nil && r.Handoff.Echoes() != r.Echoes {
		return errors.New("execution: the Handoff must record deliveries in the controller's Echoes")
	}
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 10
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("execution").
		For(&workv1alpha1.Work{}, builder.WithPredicates(inExecutionSpace(), workChanged())).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.worksOfCluster), builder.WithPredicates(clusterChanged())).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: queue.New}).
		Complete(conflict.Retrying(r))
}

func inExecutionSpace() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := ClusterOfNamespace(o.GetNamespace())
		return ok
	})
}

// workChanged passes spec changes and deletions, and the labels and
// annotations the member objects copy; status writes do not pass.
func workChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations())
	}}
}

// clusterChanged passes Cluster creations, deletions, spec changes and
// changes of the Ready condition.
func clusterChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
		n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
		if !ok1 || !ok2 {
			return false
		}
		return o.Generation != n.Generation || StateOf(o) != StateOf(n)
	}}
}

// worksOfCluster enqueues every Work of a cluster. It runs on Cluster
// transitions only, reading the cache without copying.
func (r *Reconciler) worksOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+obj.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Works of a cluster", "cluster", obj.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(works.Items))
	for i := range works.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
	}
	return out
}

// Reconcile applies one Work:
//  1. a Work being deleted has its member objects deleted (or released);
//  2. the finalizer is ensured and the Dispatching condition set; a
//     suspended Work stops there;
//  3. a missing or not-Ready cluster is reported or waited for;
//  4. each manifest is applied unless the member already holds it, and the
//     Applied condition sums up the outcomes.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	clusterName, ok := ClusterOfNamespace(req.Namespace)
	if !ok {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("work", req.NamespacedName, "cluster", clusterName)
	ctx = ctrl.LoggerInto(ctx, log)

	var work workv1alpha1.Work
	if err := r.Client.Get(ctx, req.NamespacedName, &work); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := r.cluster(ctx, clusterName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !Applies(cluster, r.Agent) {
		if !r.Agent && !work.DeletionTimestamp.IsZero() {
			return r.judge(ctx, clusterName, cluster, &work)
		}
		return reconcile.Result{}, nil
	}
	if !work.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, clusterName, cluster, &work)
	}
	if !controllerutil.ContainsFinalizer(&work, workv1alpha1.ExecutionControllerFinalizer) {
		base := work.DeepCopy()
		controllerutil.AddFinalizer(&work, workv1alpha1.ExecutionControllerFinalizer)
		if err := r.Client.Patch(ctx, &work, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return r.conflicted(ctx, "adding the finalizer")
			}
			return reconcile.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	conditions := append([]metav1.Condition(nil), work.Status.Conditions...)
	r.setCondition(&conditions, DispatchingCondition(&work))
	if Suspended(&work) {
		return reconcile.Result{}, r.writeConditions(ctx, &work, conditions)
	}
	state := StateOf(cluster)
	if r.Agent && state == ClusterPull {
		// The agent runs inside the member: its health is this process's
		// own concern, and a request that fails is retried.
		state = ClusterUsable
	}
	switch state {
	case ClusterGone:
		r.setCondition(&conditions, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, ObservedGeneration: work.Generation,
			Reason: ReasonClusterNotFound, Message: fmt.Sprintf("cluster %s does not exist or is being deleted", clusterName)})
		return reconcile.Result{}, r.writeConditions(ctx, &work, conditions)
	case ClusterNotReady:
		// Nothing is attempted: the Cluster watch brings the Work back
		// when the cluster is Ready again.
		log.V(1).Info("cluster not ready; waiting")
		return reconcile.Result{}, r.writeConditions(ctx, &work, conditions)
	}

	if r.Hold != nil && r.Hold(ctx, &work) {
		log.V(1).Info("held: its copy is fenced")
		return reconcile.Result{RequeueAfter: HoldRecheck}, r.writeConditions(ctx, &work, conditions)
	}
	results := make([]Result, 0, len(work.Spec.Workload.Manifests))
	for i := range work.Spec.Workload.Manifests {
		results = append(results, r.applyManifest(ctx, clusterName, &work, i))
	}
	applied := AppliedCondition(results, work.Generation)
	previous := meta.FindStatusCondition(work.Status.Conditions, workv1alpha1.WorkApplied)
	if offered, ok := r.Handoff.Peek(string(work.UID)); ok {
		// Said already, and maybe not written yet.
		previous = meta.FindStatusCondition(offered, workv1alpha1.WorkApplied)
	}
	r.setCondition(&conditions, applied)
	said := conditionsSaid(conditions)
	if r.written(&work, conditions, said) {
		r.Handoff.Withdraw(string(work.UID))
		return r.next(ctx, results)
	}
	var wait time.Duration
	if applied.Status == metav1.ConditionTrue {
		wait = r.Handoff.Offer(string(work.UID), conditions, said, created(results))
	}
	if wait == 0 {
		if err := r.writeConditions(ctx, &work, conditions); err != nil {
			return reconcile.Result{}, err
		}
	}
	if previous == nil || previous.Status != applied.Status || previous.Reason != applied.Reason {
		if applied.Status == metav1.ConditionTrue {
			r.budgetedEvent(&work, corev1.EventTypeNormal, EventSyncSucceeded, applied.Message)
		} else {
			r.event(&work, corev1.EventTypeWarning, EventSyncFailed, applied.Message)
		}
	}
	if wait > 0 {
		// Offered to the work status controller's first report of the
		// new objects; written here if that does not come in time.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return r.next(ctx, results)
}

// created says whether any manifest was created in the member by this pass.
func created(results []Result) bool {
	for _, res := range results {
		if res.Created {
			return true
		}
	}
	return false
}

// next turns the outcomes into a retry: errors back off per Work, an
// unreachable member is tried when its back-off ends, an object whose
// namespace is terminating after NamespaceTerminatingRetry, a conflict is
// checked again after ConflictRecheckInterval.
func (r *Reconciler) next(ctx context.Context, results []Result) (reconcile.Result, error) {
	var failures []error
	var after time.Duration
	conflict := false
	for _, res := range results {
		switch res.Outcome {
		case OutcomeFailed:
			if IsNamespaceTerminating(res.Err) {
				after = shortest(after, NamespaceTerminatingRetry)
				continue
			}
			failures = append(failures, res.Err)
		case OutcomeUnreachable:
			wait, ok := membercluster.RetryAfter(res.Err)
			if !ok {
				failures = append(failures, res.Err)
				continue
			}
			after = shortest(after, wait)
		case OutcomeConflict:
			conflict = true
		}
	}
	if len(failures) > 0 {
		return reconcile.Result{}, errors.Join(failures...)
	}
	if after > 0 {
		ctrl.LoggerFrom(ctx).Info("member cluster unreachable or namespace terminating; retrying later", "after", after.String())
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if conflict {
		interval := r.ConflictRecheckInterval
		if interval <= 0 {
			interval = 2 * time.Minute
		}
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	return reconcile.Result{}, nil
}

// shortest is the shorter of two waits, 0 meaning none yet.
func shortest(current, wait time.Duration) time.Duration {
	if current == 0 || wait < current {
		return wait
	}
	return current
}

func (r *Reconciler) cluster(ctx context.Context, name string) (*clusterv1alpha1.Cluster, error) {
	var cluster clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	return &cluster, nil
}

// target is one manifest resolved against the member.
type target struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
}

// resolve decodes manifest i and maps it to its resource in the member,
// defaulting the namespace of namespaced kinds and clearing it for
// cluster-scoped ones.
func (r *Reconciler) resolve(ctx context.Context, cluster string, work *workv1alpha1.Work, i int) (*target, error) {
	raw, err := work.Spec.Workload.Manifests[i].JSON()
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decoding manifest: %w", err)
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s manifest has no name", obj.GetKind())
	}
	mapping, err := r.Members.RESTMapping(ctx, cluster, obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
	} else {
		obj.SetNamespace("")
	}
	return &target{obj: obj, gvr: mapping.Resource}, nil
}

// observe returns the member's object, or nil when it does not exist.
func (r *Reconciler) observe(ctx context.Context, cluster string, t *target) (*unstructured.Unstructured, error) {
	observed, err := r.Members.Get(ctx, cluster, t.gvr, t.obj.GetNamespace(), t.obj.GetName())
	switch {
	case err == nil:
		return observed, nil
	case membercluster.IsUnreachable(err) || membercluster.IsNotConnected(err):
		return nil, err
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, err
}

// applyManifest applies manifest i of work and reports the outcome.
func (r *Reconciler) applyManifest(ctx context.Context, cluster string, work *workv1alpha1.Work, i int) Result {
	log := ctrl.LoggerFrom(ctx)
	res := Result{Ordinal: i}
	t, err := r.resolve(ctx, cluster, work, i)
	if err != nil {
		return failed(res, err)
	}
	log = log.WithValues("kind", t.obj.GetKind(), "namespace", t.obj.GetNamespace(), "name", t.obj.GetName())
	if err := r.Members.Watch(ctx, cluster, t.gvr, r.MemberHandler()); err != nil {
		return failed(res, err)
	}
	desired := DesiredObject(t.obj, work)
	observed, err := r.observe(ctx, cluster, t)
	if err != nil {
		return failed(res, fmt.Errorf("reading %s %s: %w%s", t.obj.GetKind(), objectName(t.obj.GetNamespace(), t.obj.GetName()), err, forbiddenHint(err, cluster, t.gvr)))
	}
	if err := CheckConflict(cluster, desired, observed); err != nil {
		res.Outcome, res.Err = OutcomeConflict, err
		return res
	}
	if observed != nil {
		if r.Interpreter != nil {
			retained, err := r.Interpreter.Retain(desired, observed)
			if err != nil {
				return failed(res, fmt.Errorf("retaining member fields: %w", err))
			}
			// A retention rule (a script) that renames the object would
			// force-apply over one the conflict check never saw.
			if err := overrides.IdentityChange(desired, retained); err != nil {
				return failed(res, fmt.Errorf("retaining member fields: %w", err))
			}
			if retained, err = RestoreFencedReplicas(r.Interpreter, desired, retained, observed); err != nil {
				return failed(res, fmt.Errorf("restoring the replicas of a fenced copy: %w", err))
			}
			desired = retained
			unstructured.RemoveNestedField(desired.Object, "metadata", "resourceVersion")
		}
		if UpToDate(desired, observed) {
			r.forgetFencedReplicas(ctx, cluster, t.gvr, observed)
			res.Outcome = OutcomeUpToDate
			return res
		}
	}
	if observed == nil {
		if err := r.ensureNamespace(ctx, cluster, desired.GetNamespace()); err != nil {
			return failed(res, err)
		}
	}
	_, err = r.Members.Apply(ctx, cluster, t.gvr, desired, FieldManager)
	if isMissingNamespace(err, desired.GetNamespace()) {
		if err := r.createNamespace(ctx, cluster, desired.GetNamespace()); err != nil {
			return failed(res, err)
		}
		_, err = r.Members.Apply(ctx, cluster, t.gvr, desired, FieldManager)
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// The namespace is being removed (an empty namespace Lifeboat
		// created, or someone's): try again once it is gone, when the
		// namespace is created afresh.
		return failed(res, &NamespaceTerminatingError{Namespace: desired.GetNamespace(), Cluster: cluster})
	}
	if err != nil {
		return failed(res, fmt.Errorf("applying %s %s: %w%s", desired.GetKind(), objectName(desired.GetNamespace(), desired.GetName()), err, forbiddenHint(err, cluster, t.gvr)))
	}
	log.V(1).Info("applied to member", "created", observed == nil)
	if observed != nil {
		r.forgetFencedReplicas(ctx, cluster, t.gvr, observed)
	}
	res.Outcome, res.Created = OutcomeApplied, observed == nil
	return res
}

// forgetFencedReplicas removes, once a fenced copy is applied again, the
// replicas its agent recorded when it scaled it to zero: an HPA's later
// scaling must not be undone by them. A failure is logged; the next apply
// tries again.
func (r *Reconciler) forgetFencedReplicas(ctx context.Context, cluster string, gvr schema.GroupVersionResource, observed *unstructured.Unstructured) {
	if _, ok := observed.GetAnnotations()[fencing.ReplicasAnnotation]; !ok {
		return
	}
	patch := []byte(`{"metadata":{"annotations":{"` + fencing.ReplicasAnnotation + `":null}}}`)
	if _, err := r.Members.Patch(ctx, cluster, gvr, observed.GetNamespace(), observed.GetName(), types.MergePatchType, patch); err != nil && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Error(err, "removing the replicas recorded by fencing; trying again at the next apply",
			"kind", observed.GetKind(), "namespace", observed.GetNamespace(), "name", observed.GetName())
	}
}

// forbiddenHint says, after a member's refusal, how to let Lifeboat write the
// kind there: the credentials `lifeboat join` creates allow a chosen set.
func forbiddenHint(err error, cluster string, gvr schema.GroupVersionResource) string {
	if !apierrors.IsForbidden(err) {
		return ""
	}
	return fmt.Sprintf(" (Lifeboat's credentials in %s do not allow %s: add it to the ClusterRole %s there, or join the member with --propagate-resource %s)",
		cluster, gvr.GroupResource(), "lifeboat-"+cluster, gvr.GroupResource())
}

func failed(res Result, err error) Result {
	res.Err = err
	res.Outcome = OutcomeFailed
	if membercluster.IsUnreachable(err) || membercluster.IsNotConnected(err) {
		res.Outcome = OutcomeUnreachable
	}
	return res
}

// isMissingNamespace tells the API server's answer to an object in a
// namespace that does not exist.
func isMissingNamespace(err error, namespace string) bool {
	var status apierrors.APIStatus
	if namespace == "" || !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == namespace
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ensureNamespace creates namespace in the member before an object is
// created in it, when the member says it does not exist. Applying first
// would cost more than the read: a member's API server holds a create into a
// namespace its cache does not know for 50 ms before it refuses it. An
// empty namespace (a cluster-scoped object) and a namespace that cannot be
// read are left to the apply, which reports what is wrong and creates a
// namespace that went missing in between.
func (r *Reconciler) ensureNamespace(ctx context.Context, cluster, namespace string) error {
	if namespace == "" {
		return nil
	}
	if _, err := r.Members.Get(ctx, cluster, namespaces, "", namespace); !apierrors.IsNotFound(err) {
		return nil
	}
	return r.createNamespace(ctx, cluster, namespace)
}

// createNamespace creates a namespace the member lacks. It is labelled as
// managed so that a Namespace Work (namespace propagation) adopts it
// without a conflict, and annotated CreatedNamespaceAnnotation: no Work owns
// it, and the orphans controller removes it once nothing of Lifeboat's is
// left in it (and nothing of anyone else's is in it). A namespace someone
// else created first (AlreadyExists) gets no annotation.
func (r *Reconciler) createNamespace(ctx context.Context, cluster, name string) error {
	_, err := r.Members.Create(ctx, cluster, namespaces, NewCreatedNamespace(name))
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("created namespace in member", "namespace", name)
	return nil
}

// finalize deletes (or, with preserveResourcesOnDeletion, releases) the
// member objects of a deleted Work, then removes the finalizer. An
// unreachable member keeps the finalizer and is retried after its back-off;
// other Works are not held up. CleanupOnDelete says when the member is left
// alone: its Cluster is gone, is being deleted while not Ready, or was
// joined after the Work was made.
func (r *Reconciler) finalize(ctx context.Context, clusterName string, cluster *clusterv1alpha1.Cluster, work *workv1alpha1.Work) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(work, workv1alpha1.ExecutionControllerFinalizer) {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	cleanup := CleanupOnDelete(cluster, work)
	wanted := false
	// Asked of a Ready member only: while it does not answer nothing can be
	// deleted, and the retries would ask again each time.
	if cleanup && r.StillWanted != nil && cluster.DeletionTimestamp.IsZero() &&
		meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
		w, err := r.StillWanted(ctx, clusterName, work)
		if err != nil {
			return reconcile.Result{}, err
		}
		wanted = w
	}
	if cleanup && r.Agent && !DeleteAllowed(work) {
		// The control plane's leave comes as an update of the Work, or it
		// releases the Work itself; the recheck only covers a missed event.
		log.V(1).Info("waiting for the control plane to say whether the Work's binding still wants it")
		return reconcile.Result{RequeueAfter: VerdictRecheck}, nil
	}
	switch {
	case !cleanup:
		log.Info("cluster is gone, being deleted while not Ready, or joined after the Work was made; releasing Work without touching the member")
	case wanted:
		log.Info("its binding still wants a Work in this cluster; leaving the member objects for the Work made again to adopt")
	default:
		var errs []error
		for i := range work.Spec.Workload.Manifests {
			if err := r.cleanupManifest(ctx, clusterName, work, i); err != nil {
				errs = append(errs, fmt.Errorf("manifest %d: %w", i, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			unreachable := membercluster.IsUnreachable(err) || membercluster.IsNotConnected(err)
			if !(unreachable && r.ReleaseUnreachable != nil && r.ReleaseUnreachable(ctx, cluster, work, err)) {
				return r.cleanupPending(ctx, work, err)
			}
			log.Info("member unreachable; released by the failover hook, member objects left behind", "error", err.Error())
		}
	}
	base := work.DeepCopy()
	controllerutil.RemoveFinalizer(work, workv1alpha1.ExecutionControllerFinalizer)
	if err := r.Client.Patch(ctx, work, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return r.conflicted(ctx, "removing the finalizer")
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// VerdictRecheck is how often the agent looks again at a deleted Work the
// control plane has not decided on.
const VerdictRecheck = 30 * time.Second

// judge decides, for the agent of a Pull cluster, what becomes of a
// deleted Work's member objects: the agent may not read bindings, so
// StillWanted is asked here, as finalize asks it for a Push cluster. A Work
// still wanted is released at once, its finalizer removed here, so that the
// decision cannot go stale before the agent acts on it; otherwise the agent
// is let delete the objects (MemberObjectsAnnotation). Unjoining (the
// Cluster being deleted) removes what Lifeboat put there. Both writes are
// conditional on the Work judged: a Work made again under the same name is
// judged anew. A Work the agent no longer holds needs nothing.
func (r *Reconciler) judge(ctx context.Context, clusterName string, cluster *clusterv1alpha1.Cluster, work *workv1alpha1.Work) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(work, workv1alpha1.ExecutionControllerFinalizer) {
		return reconcile.Result{}, nil
	}
	wanted := false
	if r.StillWanted != nil && cluster.DeletionTimestamp.IsZero() {
		w, err := r.StillWanted(ctx, clusterName, work)
		if err != nil {
			return reconcile.Result{}, err
		}
		wanted = w
	}
	if !wanted && DeleteAllowed(work) {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	base := work.DeepCopy()
	what := "letting the agent delete a deleted Work's member objects"
	if wanted {
		what = "releasing a deleted Work the binding still wants"
		controllerutil.RemoveFinalizer(work, workv1alpha1.ExecutionControllerFinalizer)
	} else {
		metav1.SetMetaDataAnnotation(&work.ObjectMeta, MemberObjectsAnnotation, MemberObjectsDelete)
	}
	if err := r.Client.Patch(ctx, work, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return reconcile.Result{}, nil
		case apierrors.IsConflict(err):
			return r.conflicted(ctx, what)
		}
		return reconcile.Result{}, fmt.Errorf("%s: %w", what, err)
	}
	if wanted {
		log.Info("its binding still wants a Work in this Pull cluster; released it, leaving the member objects for the Work made again to adopt")
	} else {
		log.Info("let the agent delete a deleted Work's member objects")
	}
	return reconcile.Result{}, nil
}

// conflicted handles a finalizer write that lost a race with another
// writer of the Work (the binding or work-status controller): nothing is
// wrong, so it is not reported as an error; the Work is read and decided
// again shortly (the other write's event usually brings it back sooner).
func (r *Reconciler) conflicted(ctx context.Context, what string) (reconcile.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("write conflict on the Work; re-reading", "while", what)
	return reconcile.Result{RequeueAfter: conflictRetry}, nil
}

// conflictRetry is when a reconcile whose write lost a race runs again.
const conflictRetry = time.Second

// cleanupPending records why the Work cannot go yet and schedules a retry.
func (r *Reconciler) cleanupPending(ctx context.Context, work *workv1alpha1.Work, cause error) (reconcile.Result, error) {
	conditions := append([]metav1.Condition(nil), work.Status.Conditions...)
	cond := metav1.Condition{Type: ConditionCleanup, Status: metav1.ConditionFalse, ObservedGeneration: work.Generation,
		Reason: ReasonCleanupPending, Message: truncate("Member objects could not be deleted yet, retrying: "+conditionError(cause), 4000)}
	if prev := meta.FindStatusCondition(conditions, ConditionCleanup); prev == nil || prev.Reason != cond.Reason {
		r.budgetedEvent(work, corev1.EventTypeWarning, EventCleanupFailed, truncate("Member objects could not be deleted yet, retrying: "+cause.Error(), 4000))
	}
	r.setCondition(&conditions, cond)
	if err := r.writeConditions(ctx, work, conditions); err != nil {
		return reconcile.Result{}, err
	}
	if wait, ok := membercluster.RetryAfter(cause); ok {
		ctrl.LoggerFrom(ctx).Info("member unreachable; keeping finalizer", "after", wait.String())
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{}, cause
}

// cleanupManifest deletes manifest i's member object if it is this Work's,
// or releases it when the Work preserves its resources. The object is the
// Work's only when it names the Work (WorkOf): everything Lifeboat applies
// for a Work does (DesiredObject). An object at the same name that names
// another Work, another cluster's Work or none (a namespace Lifeboat created
// for the objects of other Works, found by a Namespace Work that never
// applied) is left as it is.
func (r *Reconciler) cleanupManifest(ctx context.Context, cluster string, work *workv1alpha1.Work, i int) error {
	t, err := r.resolve(ctx, cluster, work, i)
	if err != nil {
		if meta.IsNoMatchError(err) {
			// The kind does not exist in the member: nothing to delete.
			return nil
		}
		return err
	}
	observed, err := r.observe(ctx, cluster, t)
	if err != nil || observed == nil {
		return err
	}
	if !r.owns(cluster, work, observed) {
		// The informer's copy may predate this Work's apply (an object it
		// adopted a moment ago): the member's own answer decides.
		if observed, err = r.Members.Read(ctx, cluster, t.gvr, t.obj.GetNamespace(), t.obj.GetName()); err != nil {
			return ignoreMemberNotFound(err)
		}
		if !r.owns(cluster, work, observed) {
			return nil
		}
	}
	ns, name := observed.GetNamespace(), observed.GetName()
	if work.Spec.PreserveResourcesOnDeletion != nil && *work.Spec.PreserveResourcesOnDeletion {
		patch, needed := ReleasePatch(observed)
		if !needed {
			return nil
		}
		_, err := r.Members.Patch(ctx, cluster, t.gvr, ns, name, types.MergePatchType, patch)
		return ignoreMemberNotFound(err)
	}
	if c := CascadeOf(observed); !c.None() {
		other, err := r.takenAlong(ctx, work, c)
		if err != nil {
			return err
		}
		if other != "" {
			return r.keepForOthers(ctx, cluster, t.gvr, observed, other)
		}
	}
	return r.deleteOwned(ctx, cluster, work, t.gvr, observed)
}

// deleteAttempts bounds how often deleteOwned reads an object again after
// it changed between the read and the delete (a member's status updates
// change it often); past it the Work is tried again later.
const deleteAttempts = 3

// deleteOwned deletes observed on the condition that it is still the
// version that was read, UID and resourceVersion: an object another Work
// took over, or one created at the same name (by another Work, or by
// hand), since the informer's copy was made is not deleted as this Work's.
// When the object changed, the member's own copy is read and deleted only
// if it is still this Work's.
func (r *Reconciler) deleteOwned(ctx context.Context, cluster string, work *workv1alpha1.Work, gvr schema.GroupVersionResource, observed *unstructured.Unstructured) error {
	ns, name := observed.GetNamespace(), observed.GetName()
	background := metav1.DeletePropagationBackground
	for attempt := 1; ; attempt++ {
		if observed.GetDeletionTimestamp() != nil {
			// Being deleted already (by this Work's earlier pass, or its
			// finalizers running): nothing to ask for again.
			return nil
		}
		opts := metav1.DeleteOptions{PropagationPolicy: &background}
		if uid := observed.GetUID(); uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
			if rv := observed.GetResourceVersion(); rv != "" {
				opts.Preconditions.ResourceVersion = &rv
			}
		}
		err := r.Members.Delete(ctx, cluster, gvr, ns, name, opts)
		if !apierrors.IsConflict(err) {
			return ignoreMemberNotFound(err)
		}
		if attempt == deleteAttempts {
			return fmt.Errorf("%s %s changed %d times while being deleted: %w", observed.GetKind(), name, attempt, err)
		}
		if observed, err = r.Members.Read(ctx, cluster, gvr, ns, name); err != nil {
			return ignoreMemberNotFound(err)
		}
		if !r.owns(cluster, work, observed) {
			ctrl.LoggerFrom(ctx).Info("not deleted: the object was taken over since it was read",
				"kind", observed.GetKind(), "namespace", ns, "name", name)
			return nil
		}
	}
}

// takenAlong returns the name of another Work of the same cluster, not
// being deleted, that has an object the cascade would take along (in the
// Namespace, of the CustomResourceDefinition's kind); "" for none.
func (r *Reconciler) takenAlong(ctx context.Context, work *workv1alpha1.Work, c Cascade) (string, error) {
	var works workv1alpha1.WorkList
	if err := r.Client.List(ctx, &works, client.InNamespace(work.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return "", fmt.Errorf("listing the Works that may use what deleting it takes along: %w", err)
	}
	for i := range works.Items {
		w := &works.Items[i]
		if w.Name == work.Name || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if c.TakesFrom(w) {
			return w.Name, nil
		}
	}
	return "", nil
}

// keepForOthers leaves a Namespace or CustomResourceDefinition in the member
// instead of deleting it, because deleting it would delete another Work's
// objects with it. A Namespace becomes one Lifeboat created (HandOffPatch),
// which the namespace rule removes once nothing uses it and it is empty; a
// CustomResourceDefinition is released (ReleasePatch).
func (r *Reconciler) keepForOthers(ctx context.Context, cluster string, gvr schema.GroupVersionResource, observed *unstructured.Unstructured, other string) error {
	var patch []byte
	if observed.GroupVersionKind() == namespaceGVK {
		p, err := HandOffPatch(observed)
		if err != nil {
			return fmt.Errorf("building the hand-off of namespace %s: %w", observed.GetName(), err)
		}
		patch = p
	} else if p, needed := ReleasePatch(observed); needed {
		patch = p
	}
	ctrl.LoggerFrom(ctx).Info("kept in the member: deleting it would delete another Work's objects with it",
		"kind", observed.GetKind(), "name", observed.GetName(), "work", other)
	if patch == nil {
		return nil
	}
	_, err := r.Members.Patch(ctx, cluster, gvr, observed.GetNamespace(), observed.GetName(), types.MergePatchType, patch)
	return ignoreMemberNotFound(err)
}

// owns tells whether a member object is work's: whether it names the Work.
func (r *Reconciler) owns(cluster string, work *workv1alpha1.Work, observed *unstructured.Unstructured) bool {
	owner, ok := WorkOf(cluster, observed)
	return ok && owner == client.ObjectKeyFromObject(work)
}

// ignoreMemberNotFound drops the member's NotFound answer, but not a missing
// Cluster (which the member cache also reports as NotFound, wrapped).
func ignoreMemberNotFound(err error) error {
	if apierrors.IsNotFound(err) && !membercluster.IsNotConnected(err) {
		return nil
	}
	return err
}

// setCondition sets cond with the injected clock's time as transition time.
func (r *Reconciler) setCondition(conditions *[]metav1.Condition, cond metav1.Condition) {
	cond.LastTransitionTime = metav1.NewTime(r.now())
	meta.SetStatusCondition(conditions, cond)
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// writeConditions patches status.conditions when they changed, and when
// they are not what this controller wrote a moment ago (the cached Work
// may not hold that write yet). A merge patch of only the conditions leaves
// status.manifestStatuses (written by the work status controller) alone.
func (r *Reconciler) writeConditions(ctx context.Context, work *workv1alpha1.Work, conditions []metav1.Condition) error {
	if offered, ok := r.Handoff.Withdraw(string(work.UID)); ok && meta.FindStatusCondition(conditions, workv1alpha1.WorkApplied) == nil {
		// The Work was suspended, or its cluster left, while the Applied
		// condition of its new objects waited for the work status
		// controller: it still holds.
		if a := meta.FindStatusCondition(offered, workv1alpha1.WorkApplied); a != nil {
			conditions = append(conditions, *a)
		}
	}
	said := conditionsSaid(conditions)
	if r.written(work, conditions, said) {
		return nil
	}
	base := work.DeepCopy()
	work.Status.Conditions = conditions
	if err := r.Client.Status().Patch(ctx, work, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing Work conditions: %w", err)
	}
	r.Echoes.Wrote(string(work.UID), said)
	return nil
}

// written says whether the Work holds conditions already, or this
// controller (or the work status controller, for it) wrote them a moment ago.
func (r *Reconciler) written(work *workv1alpha1.Work, conditions []metav1.Condition, said string) bool {
	return equality.Semantic.DeepEqual(work.Status.Conditions, conditions) || r.Echoes.Has(string(work.UID), said)
}

// conditionsSaid is what conditions say, without their transition times:
// a condition set again on a stale copy gets a new time and says the same.
func conditionsSaid(conditions []metav1.Condition) string {
	var b strings.Builder
	for _, c := range conditions {
		fmt.Fprintf(&b, "%s=%s/%s/%d/%s\n", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return b.String()
}

// budgetedEvent records an Event on the Work unless r.Events holds it back
// to count it on the Work's Cluster: one of many about the same member at
// once, as in a mass failover.
func (r *Reconciler) budgetedEvent(work *workv1alpha1.Work, eventType, reason, message string) {
	cluster, ok := strings.CutPrefix(work.Namespace, clusterv1alpha1.ExecutionSpacePrefix)
	if !ok {
		cluster = ""
	}
	if r.Events.Allow(eventbudget.Cluster(cluster), eventType, reason, "Work "+work.Namespace+"/"+work.Name) {
		r.event(work, eventType, reason, message)
	}
}

func (r *Reconciler) event(work *workv1alpha1.Work, eventType, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Event(work, eventType, reason, message)
	}
}
