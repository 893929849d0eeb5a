package binding

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
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
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/overrides"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

// worksByBindingIndex is the field index of Works by binding. The binding
// and binding-status controllers share it through a WorkIndex; it costs a
// set per Work.
const worksByBindingIndex = "binding.lifeboat.io/works-by-binding"

// Event reasons.
const (
	// ReasonApplyOverridePolicyFailed: an override policy could not be
	// applied for a cluster; its Work was not written.
	ReasonApplyOverridePolicyFailed = "ApplyOverridePolicyFailed"
	// ReasonSyncWorkFailed: a Work could not be built or written.
	ReasonSyncWorkFailed = "SyncWorkFailed"
	// ReasonCleanupWorkFailed: an orphan Work could not be deleted.
	ReasonCleanupWorkFailed = "CleanupWorkFailed"
	// ReasonWorkNameConflict: the Work name of the binding's template is
	// taken by the Work of another binding in a cluster; the template is
	// not propagated there.
	ReasonWorkNameConflict = "WorkNameConflict"
)

// deletingWorkRequeue is how soon a binding is looked at again when the
// Work it needs in a cluster is still being deleted.
const deletingWorkRequeue = 5 * time.Second

// defaultConcurrency is MaxConcurrentReconciles when unset (Karmada's
// --concurrent-resourcebinding-syncs).
const defaultConcurrency = 5

// workers is a controller's MaxConcurrentReconciles, defaultConcurrency
// when unset.
func workers(maxConcurrentReconciles int) int {
	if maxConcurrentReconciles <= 0 {
		return defaultConcurrency
	}
	return maxConcurrentReconciles
}

// Reconciler turns ResourceBindings and ClusterResourceBindings into one
// Work per target cluster. See the package doc for what it writes.
type Reconciler struct {
	// Client reads bindings, Works, Clusters and override policies from the
	// manager's cache and writes Works and binding finalizers.
	Client client.Client
	// Templates reads resource templates of any kind: from the detector's
	// informers when they hold the kind and the version the binding was
	// built from, else from the API server. Nil means the manager's API
	// reader alone: one GET per reconcile.
	Templates *templates.Reader
	// Recorder emits Warning events on bindings and templates.
	Recorder record.EventRecorder
	// Interpreter revises replicas.
	Interpreter Interpreter
	// InjectState is the preserved-state hook of stateful failover; nil
	// does nothing.
	InjectState StateInjector
	// DefaultPurgeMode is the cluster-failover purge mode of bindings
	// whose policy has none (the taint manager's); with Directly their
	// copies in Pull clusters are fenced (see internal/fencing).
	DefaultPurgeMode policyv1alpha1.PurgeMode
	// Eviction says which evicted clusters keep their Work and which new
	// Works must wait (nil: keep every evicted cluster's Work, block none).
	Eviction EvictionHooks
	// MaxConcurrentReconciles defaults to 5.
	MaxConcurrentReconciles int
	// WorkIndex registers the index of Works by binding once for the
	// binding and binding-status controllers of one manager.
	WorkIndex *WorkIndex
}

// Reconcile syncs the Works of one binding:
//  1. a deleted binding: delete its Works, then drop the finalizer;
//  2. add the finalizer;
//  3. delete orphan Works: clusters neither targeted nor kept by an
//     eviction task (clustersToKeep);
//  4. read the template (none: stop, garbage collection removes the
//     binding) and the override policies;
//  5. render each target cluster's Work and create or update it when it
//     differs; update the Works of kept copies that follow the template
//     (keptTargets).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && apierrors.IsConflict(err) {
		// Someone else wrote the object first: re-read and re-decide on the
		// next pass instead of reporting an error.
		ctrl.LoggerFrom(ctx).V(1).Info("write conflict, requeueing", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b, err := getBinding(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	works, err := r.WorkIndex.list(ctx, r.Client, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !b.obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.finalize(ctx, b, works)
	}
	if err := r.ensureFinalizer(ctx, b); err != nil {
		return ctrl.Result{}, err
	}

	var errs []error
	for _, w := range orphanWorks(works, expectedClusters(b.spec, r.Eviction)) {
		if err := r.deleteWork(ctx, w); err != nil {
			r.warn(b, nil, ReasonCleanupWorkFailed, err.Error())
			errs = append(errs, err)
		}
	}

	targets := append(targetClusters(b.spec), keptTargets(b, r.Eviction)...)
	if len(targets) == 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	ref, err := templateRef(b)
	if err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}
	template, err := r.Templates.GetAt(ctx, ref, b.spec.Resource.ResourceVersion)
	if apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("resource template not found, nothing to sync", "resource", b.spec.Resource)
		return ctrl.Result{}, errors.Join(errs...)
	}
	if err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}
	cops, ops, err := r.listOverridePolicies(ctx, template.GetNamespace())
	if err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}

	existing := map[string]*workv1alpha1.Work{}
	name := WorkName(template.GetKind(), template.GetName(), template.GetNamespace())
	for i := range works {
		if works[i].Name == name {
			existing[works[i].Namespace] = &works[i]
		}
	}
	blocked := sets.New[string]()
	if r.Eviction != nil {
		blocked.Insert(r.Eviction.BlockedClusters(b.spec)...)
	}
	var result ctrl.Result
	for _, t := range targets {
		if t.kept && existing[ExecutionNamespace(t.cluster)] == nil {
			continue
		}
		if blocked.Has(t.cluster) && existing[ExecutionNamespace(t.cluster)] == nil {
			// A Directly eviction deletes the old copy before the new one
			// is created; the graceful-eviction controller lifts the block.
			ctrl.LoggerFrom(ctx).V(1).Info("holding new Work until the evicted copy is deleted", "cluster", t.cluster)
			continue
		}
		requeue, err := r.syncWork(ctx, b, template, t, cops, ops, existing[ExecutionNamespace(t.cluster)])
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", t.cluster, err))
		}
		if requeue {
			result.RequeueAfter = deletingWorkRequeue
		}
	}
	return result, errors.Join(errs...)
}

// syncWork renders the Work of one target and writes it if needed. It
// returns requeue when the existing Work is still being deleted.
func (r *Reconciler) syncWork(ctx context.Context, b bindingObject, template *unstructured.Unstructured, t target,
	cops []policyv1alpha1.ClusterOverridePolicy, ops []policyv1alpha1.OverridePolicy, existing *workv1alpha1.Work) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", t.cluster)

	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: t.cluster}, cluster); err != nil {
		err = fmt.Errorf("reading Cluster: %w", err)
		r.warn(b, nil, ReasonSyncWorkFailed, fmt.Sprintf("cluster %s: %v", t.cluster, err))
		return false, err
	}
	desired, err := renderWork(renderInput{
		binding: b, template: template, target: t, cluster: cluster,
		cops: cops, ops: ops, interp: r.Interpreter, inject: r.InjectState,
		defaultPurgeMode: r.DefaultPurgeMode,
	})
	if err != nil {
		reason := ReasonSyncWorkFailed
		if oerr := (*overrideError)(nil); errors.As(err, &oerr) {
			reason = ReasonApplyOverridePolicyFailed
		}
		r.warn(b, template, reason, fmt.Sprintf("cluster %s: %v", t.cluster, err))
		return false, err
	}

	if existing == nil {
		err := r.Client.Create(ctx, desired)
		if apierrors.IsAlreadyExists(err) {
			// A Work of this name not indexed under this binding: not yet
			// in the cache, left by a renamed binding, or another binding's.
			existing = &workv1alpha1.Work{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
				return false, fmt.Errorf("reading Work %s/%s: %w", desired.Namespace, desired.Name, err)
			}
			if err := r.checkAdoptable(ctx, b, t, existing); err != nil {
				return false, err
			}
			return r.updateWork(ctx, b, t, existing, desired)
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				// The cluster controller owns execution namespaces; creating
				// one here could resurrect the namespace of a cluster being
				// removed. Wait for it with backoff.
				err = fmt.Errorf("execution namespace %s does not exist yet: %w", desired.Namespace, err)
			}
			r.warn(b, nil, ReasonSyncWorkFailed, fmt.Sprintf("cluster %s: creating Work: %v", t.cluster, err))
			return false, fmt.Errorf("creating Work %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		log.V(1).Info("created Work", "work", client.ObjectKeyFromObject(desired))
		return false, nil
	}
	return r.updateWork(ctx, b, t, existing, desired)
}

// checkAdoptable returns an error, and records a WorkNameConflict Warning on
// the binding, when existing belongs to another binding (see mayAdoptWork).
// The binding is then retried with back-off, and the status controller,
// which finds no Work of the binding in that cluster, does not report it
// FullyApplied.
func (r *Reconciler) checkAdoptable(ctx context.Context, b bindingObject, t target, existing *workv1alpha1.Work) error {
	self := client.ObjectKeyFromObject(b.obj)
	owner, named := bindingOfWork(existing)
	ownerExists := false
	if named && owner != self {
		switch _, err := getBinding(ctx, r.Client, owner); {
		case err == nil:
			ownerExists = true
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the binding of Work %s/%s: %w", existing.Namespace, existing.Name, err)
		}
	}
	if mayAdoptWork(self, owner, named, ownerExists) {
		return nil
	}
	work := existing.Namespace + "/" + existing.Name
	tmpl := b.spec.Resource.Kind + " " + bindingKey(b.spec.Resource.Namespace, b.spec.Resource.Name)
	err := fmt.Errorf("the Work %s, which template %s needs in cluster %s, names no binding: the template is not propagated to that cluster while it exists",
		work, tmpl, t.cluster)
	if named {
		err = fmt.Errorf("the Work %s, which template %s needs in cluster %s, belongs to binding %s, whose template's Work has the same name: the template is not propagated to that cluster while it does",
			work, tmpl, t.cluster, bindingKey(owner.Namespace, owner.Name))
	}
	r.warn(b, nil, ReasonWorkNameConflict, err.Error())
	return err
}

// updateWork brings existing to desired when they differ. It returns
// requeue when existing is being deleted: the Work is recreated once it is
// gone.
func (r *Reconciler) updateWork(ctx context.Context, b bindingObject, t target, existing, desired *workv1alpha1.Work) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", t.cluster)
	if !existing.DeletionTimestamp.IsZero() {
		log.V(1).Info("Work is being deleted, waiting to recreate it", "work", client.ObjectKeyFromObject(existing))
		return true, nil
	}
	merged, changed, err := mergeWork(existing, desired)
	if err != nil || !changed {
		return false, err
	}
	if err := r.Client.Update(ctx, merged); err != nil {
		if !apierrors.IsConflict(err) {
			r.warn(b, nil, ReasonSyncWorkFailed, fmt.Sprintf("cluster %s: updating Work: %v", t.cluster, err))
		}
		return false, fmt.Errorf("updating Work %s/%s: %w", merged.Namespace, merged.Name, err)
	}
	log.V(1).Info("updated Work", "work", client.ObjectKeyFromObject(merged))
	return false, nil
}

// finalize deletes the Works of a deleted binding and removes the
// finalizer. Like Karmada it does not wait for the Works to be gone: their
// own finalizer keeps them until the execution controller has cleaned the
// member.
func (r *Reconciler) finalize(ctx context.Context, b bindingObject, works []workv1alpha1.Work) error {
	if !controllerutil.ContainsFinalizer(b.obj, b.finalizer()) {
		return nil
	}
	preserve := ptr.Deref(b.spec.PreserveResourcesOnDeletion, false)
	for i := range works {
		w := &works[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		// The execution controller reads preserveResourcesOnDeletion from
		// the Work: one not rendered since the binding asked (its render
		// fails, or the template went right after the policy changed) is
		// marked before it goes, so that its member objects stay.
		if preserve && !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
			w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
			if err := r.Client.Update(ctx, w); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("marking Work %s/%s to preserve its member objects: %w", w.Namespace, w.Name, err)
			}
		}
		if err := r.deleteWork(ctx, w); err != nil {
			return err
		}
	}
	patch := client.MergeFromWithOptions(b.obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(b.obj, b.finalizer())
	if err := r.Client.Patch(ctx, b.obj, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer of %s: %w", b.describe(), err)
	}
	return nil
}

func (r *Reconciler) ensureFinalizer(ctx context.Context, b bindingObject) error {
	if controllerutil.ContainsFinalizer(b.obj, b.finalizer()) {
		return nil
	}
	patch := client.MergeFromWithOptions(b.obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(b.obj, b.finalizer())
	if err := r.Client.Patch(ctx, b.obj, patch); err != nil {
		return fmt.Errorf("adding finalizer to %s: %w", b.describe(), err)
	}
	return nil
}

func (r *Reconciler) deleteWork(ctx context.Context, w *workv1alpha1.Work) error {
	// The Work read is this binding's (found by its index); one created at
	// the same name since, by another binding, is not deleted in its place.
	var opts []client.DeleteOption
	if w.UID != "" {
		opts = append(opts, client.Preconditions{UID: &w.UID})
	}
	if err := r.Client.Delete(ctx, w, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Work %s/%s: %w", w.Namespace, w.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("deleted Work", "work", client.ObjectKeyFromObject(w))
	return nil
}

// listOverridePolicies returns every ClusterOverridePolicy and the
// OverridePolicies of namespace (none for a cluster-scoped template).
func (r *Reconciler) listOverridePolicies(ctx context.Context, namespace string) ([]policyv1alpha1.ClusterOverridePolicy, []policyv1alpha1.OverridePolicy, error) {
	cops := &policyv1alpha1.ClusterOverridePolicyList{}
	if err := r.Client.List(ctx, cops); err != nil {
		return nil, nil, fmt.Errorf("listing ClusterOverridePolicies: %w", err)
	}
	if namespace == "" {
		return cops.Items, nil, nil
	}
	ops := &policyv1alpha1.OverridePolicyList{}
	if err := r.Client.List(ctx, ops, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing OverridePolicies of %s: %w", namespace, err)
	}
	return cops.Items, ops.Items, nil
}

// warn records a Warning event on the binding and, when given, on the
// template.
func (r *Reconciler) warn(b bindingObject, template *unstructured.Unstructured, reason, message string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Event(b.obj, corev1.EventTypeWarning, reason, message)
	if template != nil {
		r.Recorder.Event(template, corev1.EventTypeWarning, reason, message)
	}
}

// templateRef names the template a binding points at (spec.resource), with
// the namespace of a ResourceBinding's template defaulted to the binding's
// own: a template is always in its binding's namespace, and a hand-written
// binding may omit it.
func templateRef(b bindingObject) (templates.Ref, error) {
	ref := b.spec.Resource
	if ref.Namespace == "" {
		ref.Namespace = b.obj.GetNamespace()
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return templates.Ref{}, fmt.Errorf("parsing apiVersion %q of the resource template: %w", ref.APIVersion, err)
	}
	return templates.Ref{GVK: gv.WithKind(ref.Kind), Namespace: ref.Namespace, Name: ref.Name}, nil
}

// SetupWithManager registers the field indexes and the controller "binding".
// It watches ResourceBindings and ClusterResourceBindings (generation,
// label or deletion changes; the detector bumps spec.resource.resourceVersion
// when the template changes), Works (spec changes and deletions, mapped to
// their binding by annotations), and OverridePolicies and
// ClusterOverridePolicies (mapped to the bindings whose template kind and
// name they may select).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	if err := r.WorkIndex.Setup(ctx, mgr); err != nil {
		return err
	}
	if r.Templates == nil {
		r.Templates = &templates.Reader{Live: mgr.GetAPIReader()}
	}
	if r.Recorder == nil {
		//lint:ignore SA1019 the binding and template Events use the core/v1 recorder
		r.Recorder = mgr.GetEventRecorderFor("binding-controller")
	}
	if r.Interpreter == nil {
		return errors.New("binding controller: Interpreter is required")
	}
	concurrency := workers(r.MaxConcurrentReconciles)
	bindingChanged := builder.WithPredicates(predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted()))
	// Only an override policy's spec (its generation) changes what is
	// rendered: the policy checker's status writes re-render nothing.
	overrideChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("binding").
		For(&workv1alpha2.ResourceBinding{}, bindingChanged).
		Watches(&workv1alpha2.ClusterResourceBinding{}, &handler.EnqueueRequestForObject{}, bindingChanged).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(workToBinding), builder.WithPredicates(workSpecChangedOrDeleted())).
		Watches(&policyv1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.overridePolicyToBindings), overrideChanged).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.clusterOverridePolicyToBindings), overrideChanged).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, NewQueue: queue.New}).
		Complete(conflict.Retrying(r))
}

// deletionStarted passes updates that set the deletion timestamp.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

// workSpecChangedOrDeleted passes Work deletions and changes of a Work's
// spec or metadata by someone else (the binding controller's own writes
// come back too, and reconcile to nothing).
func workSpecChangedOrDeleted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

func workToBinding(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := bindingOfWork(obj)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

func (r *Reconciler) overridePolicyToBindings(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*policyv1alpha1.OverridePolicy)
	if !ok {
		return nil
	}
	return r.bindingsSelectedBy(ctx, &p.Spec, p.Namespace)
}

func (r *Reconciler) clusterOverridePolicyToBindings(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*policyv1alpha1.ClusterOverridePolicy)
	if !ok {
		return nil
	}
	return r.bindingsSelectedBy(ctx, &p.Spec, "")
}

// bindingsSelectedBy lists the bindings whose template an override policy
// may select: the bindings of its namespace (all of them for a cluster
// policy) whose template's kind, namespace and name its selectors allow.
// ClusterResourceBindings are considered for ClusterOverridePolicies only.
// The lists are read without copies, and no index is kept for them: an
// index by kind costs two entries per binding for a lookup that only
// override policy changes make.
func (r *Reconciler) bindingsSelectedBy(ctx context.Context, spec *policyv1alpha1.OverrideSpec, policyNamespace string) []reconcile.Request {
	log := ctrl.LoggerFrom(ctx)
	var out []reconcile.Request
	rbs := &workv1alpha2.ResourceBindingList{}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if policyNamespace != "" {
		opts = append(opts, client.InNamespace(policyNamespace))
	}
	if err := r.Client.List(ctx, rbs, opts...); err != nil {
		log.Error(err, "listing ResourceBindings for an override policy")
	}
	for i := range rbs.Items {
		ref := &rbs.Items[i].Spec.Resource
		if overrides.MaySelect(spec, policyNamespace, ref.APIVersion, ref.Kind, ref.Namespace, ref.Name) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rbs.Items[i])})
		}
	}
	if policyNamespace != "" {
		return out
	}
	crbs := &workv1alpha2.ClusterResourceBindingList{}
	if err := r.Client.List(ctx, crbs, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "listing ClusterResourceBindings for an override policy")
	}
	for i := range crbs.Items {
		ref := &crbs.Items[i].Spec.Resource
		if overrides.MaySelect(spec, "", ref.APIVersion, ref.Kind, ref.Namespace, ref.Name) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&crbs.Items[i])})
		}
	}
	return out
}
