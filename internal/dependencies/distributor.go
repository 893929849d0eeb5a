package dependencies

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// IndexDependency indexes ResourceBindings by the dependencies recorded in
// their resourcebinding.karmada.io/dependencies annotation
// ("apiVersion|kind|namespace|name").
const IndexDependency = "dependencies.lifeboat.dev/dependency"

// Event reasons (Karmada's).
const (
	ReasonGetDependenciesFailed    = "GetDependenciesFailed"
	ReasonSyncDependenciesSucceed  = "SyncScheduleResultToDependenciesSucceed"
	ReasonSyncDependenciesFailed   = "SyncScheduleResultToDependenciesFailed"
	ReasonDependencyPolicyConflict = "DependencyPolicyConflict"
	// ReasonDependencyKindNotServed (Lifeboat's) is the Warning on a
	// depending binding one of whose dependencies is of a kind the API server
	// does not serve: its attached binding is kept as it is.
	ReasonDependencyKindNotServed = "DependencyKindNotServed"
)

const (
	controllerName = "dependencies-distributor"
	// waitingRetry is how soon a binding is looked at again when an
	// attached binding's name is held by a binding being deleted or replaced.
	waitingRetry = 2 * time.Second
)

// Distributor propagates the dependencies of ResourceBindings with
// spec.propagateDeps through attached ResourceBindings. See the package
// documentation. Fields are its dependencies; SetupWithManager fills the
// optional ones from the manager.
type Distributor struct {
	// Client writes bindings. Required.
	Client client.Client
	// Reader reads bindings, templates (unstructured) and dependencies
	// (metadata only); the manager's cache by default.
	Reader client.Reader
	// Cache provides the metadata informers of dependency kinds; the
	// manager's cache by default.
	Cache cache.Cache
	// Recorder records Events on depending and attached bindings. Required.
	Recorder record.EventRecorder
	// Interpreter answers GetDependencies. Required.
	Interpreter interpreter.Interpreter
	// MaxConcurrentReconciles defaults to 5.
	MaxConcurrentReconciles int
	// NewID returns a permanent ID for new attached bindings (UUID by
	// default).
	NewID func() string

	ctrl     controller.Controller
	mu       sync.Mutex
	watching map[schema.GroupVersionKind]bool
}

func (d *Distributor) setDefaults() {
	if d.Reader == nil && d.Cache != nil {
		d.Reader = d.Cache
	}
	if d.MaxConcurrentReconciles <= 0 {
		d.MaxConcurrentReconciles = 5
	}
	if d.NewID == nil {
		d.NewID = func() string { return string(uuid.NewUUID()) }
	}
	d.watching = map[schema.GroupVersionKind]bool{}
}

// SetupWithManager registers the dependency index and the
// "dependencies-distributor" controller. It watches ResourceBindings that
// propagate dependencies (or still carry the distributor's finalizer), the
// deletion of attached bindings, and, once seen, every dependency kind
// (metadata only).
func (d *Distributor) SetupWithManager(mgr ctrl.Manager) error {
	if d.Cache == nil {
		d.Cache = mgr.GetCache()
	}
	d.setDefaults()
	if d.Client == nil || d.Recorder == nil || d.Interpreter == nil {
		return fmt.Errorf("dependencies distributor: Client, Recorder and Interpreter are required")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workv1alpha2.ResourceBinding{}, IndexDependency, dependencyIndex); err != nil {
		return fmt.Errorf("indexing ResourceBindings by dependency: %w", err)
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&workv1alpha2.ResourceBinding{}, builder.WithPredicates(parentPredicate())).
		Watches(&workv1alpha2.ResourceBinding{}, handler.EnqueueRequestsFromMapFunc(requiredByParents),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: d.MaxConcurrentReconciles, NewQueue: queue.New}).
		Build(d)
	if err != nil {
		return fmt.Errorf("creating dependencies distributor: %w", err)
	}
	d.ctrl = c
	return nil
}

func dependencyIndex(obj client.Object) []string {
	deps := parseDependenciesAnnotation(obj.GetAnnotations()[workv1alpha2.BindingDependenciesAnnotationKey])
	out := make([]string, 0, len(deps))
	for _, dep := range deps {
		out = append(out, dependencyKey(dep.APIVersion, dep.Kind, dep.Namespace, dep.Name))
	}
	return out
}

func wantsDeps(obj client.Object) bool {
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	return ok && (rb.Spec.PropagateDeps || controllerutil.ContainsFinalizer(rb, workv1alpha2.BindingDependenciesDistributorFinalizer))
}

// parentPredicate lets through depending bindings: created, deleted, or
// changed in spec (generation: clusters, eviction tasks, propagateDeps) or
// deletion state.
func parentPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return wantsDeps(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !wantsDeps(e.ObjectOld) && !wantsDeps(e.ObjectNew) {
				return false
			}
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
				e.ObjectOld.GetLabels()[workv1alpha2.ResourceBindingPermanentIDLabel] != e.ObjectNew.GetLabels()[workv1alpha2.ResourceBindingPermanentIDLabel]
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { return wantsDeps(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// requiredByParents maps a deleted attached binding to the bindings that
// required it, so that they recreate it.
func requiredByParents(_ context.Context, obj client.Object) []reconcile.Request {
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return nil
	}
	out := make([]reconcile.Request, 0, len(rb.Spec.RequiredBy))
	for _, s := range rb.Spec.RequiredBy {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return out
}

// ensureWatch watches a dependency kind (metadata only) once: any change of
// a dependency re-enqueues the bindings that recorded it.
func (d *Distributor) ensureWatch(gvk schema.GroupVersionKind) error {
	if d.ctrl == nil || d.Cache == nil {
		return nil // unit tests
	}
	d.mu.Lock()
	if d.watching[gvk] {
		d.mu.Unlock()
		return nil
	}
	d.watching[gvk] = true
	d.mu.Unlock()
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	mapFn := func(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
		var rbs workv1alpha2.ResourceBindingList
		if err := d.Reader.List(ctx, &rbs, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{IndexDependency: dependencyKey(apiVersion, kind, obj.GetNamespace(), obj.GetName())}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing bindings depending on object", "kind", kind, "namespace", obj.GetNamespace(), "name", obj.GetName())
			return nil
		}
		out := make([]reconcile.Request, 0, len(rbs.Items))
		for i := range rbs.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rbs.Items[i])})
		}
		return out
	}
	if err := d.ctrl.Watch(source.Kind(d.Cache, m, handler.TypedEnqueueRequestsFromMapFunc(mapFn))); err != nil {
		d.mu.Lock()
		delete(d.watching, gvk)
		d.mu.Unlock()
		return fmt.Errorf("watching dependency kind %s: %w", gvk, err)
	}
	return nil
}

// Reconcile handles one depending binding: observe it, its template, its
// dependencies and their attached bindings; plan; write.
func (d *Distributor) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := d.reconcile(ctx, req)
	if err != nil && apierrors.IsConflict(err) {
		// Someone else wrote the object first: re-read and re-decide on the
		// next pass instead of reporting an error.
		ctrl.LoggerFrom(ctx).V(1).Info("write conflict, requeueing", "error", err.Error())
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	return res, err
}

func (d *Distributor) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	parent := &workv1alpha2.ResourceBinding{}
	if err := d.Reader.Get(ctx, req.NamespacedName, parent); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting binding: %w", err)
		}
		// Gone without our finalizer: release what it still holds.
		parent = &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
		return d.sync(ctx, parent, false, nil, nil, nil)
	}
	active := parent.Spec.PropagateDeps && parent.DeletionTimestamp.IsZero()
	if !active {
		return d.sync(ctx, parent, false, nil, nil, nil)
	}

	r := parent.Spec.Resource
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(schema.FromAPIVersionAndKind(r.APIVersion, r.Kind))
	if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // the detector deletes the binding
		}
		if meta.IsNoMatchError(err) {
			// Whether the template exists is not known: the detector keeps
			// the binding, and the attached bindings stay as they are until
			// the template can be read again.
			return reconcile.Result{}, &detector.TemplateKindNotServedError{
				Key: detector.TemplateKey{GVK: tmpl.GroupVersionKind(), Namespace: r.Namespace, Name: r.Name}, Err: err}
		}
		return reconcile.Result{}, fmt.Errorf("getting template %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	refs, err := d.Interpreter.GetDependencies(tmpl)
	if err != nil {
		d.Recorder.Eventf(parent, corev1.EventTypeWarning, ReasonGetDependenciesFailed, "Getting dependencies of %s %s failed: %v", r.Kind, r.Name, err)
		return reconcile.Result{}, fmt.Errorf("getting dependencies: %w", err)
	}
	refs = filterDependencies(refs, parent.Namespace)
	var present []presentDependency
	var notServed []error
	held := map[string]bool{}
	for _, ref := range refs {
		dep, ok, err := d.lookup(ctx, ref)
		var kindErr *DependencyKindNotServedError
		if errors.As(err, &kindErr) {
			// Whether it exists is not known: its attached binding is
			// held as it is, and the binding looked at again with back-off.
			held[detector.BindingName(ref.Kind, ref.Name)] = true
			notServed = append(notServed, err)
			d.Recorder.Eventf(parent, corev1.EventTypeWarning, ReasonDependencyKindNotServed,
				"%s %s of dependency %s/%s is not served, so whether it exists is not known: its attached binding is kept as it is", ref.Kind, ref.APIVersion, ref.Namespace, ref.Name)
			continue
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if !ok {
			log.V(1).Info("dependency not found; skipped until it exists", "kind", ref.Kind, "name", ref.Name)
			continue
		}
		present = append(present, dep)
	}
	res, err := d.sync(ctx, parent, true, refs, present, held)
	if err != nil {
		return res, err
	}
	return res, errors.Join(notServed...)
}

// sync writes the parent's finalizer and dependencies annotation (when
// active), then the attached bindings, then (when inactive) drops the
// finalizer and annotation. The attached bindings named in held (those of
// dependencies whose kind is not served) are left as they are.
func (d *Distributor) sync(ctx context.Context, parent *workv1alpha2.ResourceBinding, active bool,
	refs []interpreter.Dependency, present []presentDependency, held map[string]bool) (reconcile.Result, error) {
	exists := parent.UID != ""
	if active {
		p := parent.DeepCopy()
		controllerutil.AddFinalizer(p, workv1alpha2.BindingDependenciesDistributorFinalizer)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[workv1alpha2.BindingDependenciesAnnotationKey] = dependenciesAnnotation(refs)
		if !controllerutil.ContainsFinalizer(parent, workv1alpha2.BindingDependenciesDistributorFinalizer) ||
			parent.Annotations[workv1alpha2.BindingDependenciesAnnotationKey] != p.Annotations[workv1alpha2.BindingDependenciesAnnotationKey] {
			if err := d.Client.Update(ctx, p); err != nil {
				return reconcile.Result{}, fmt.Errorf("recording dependencies: %w", err)
			}
			parent = p
		}
	}

	existing, err := d.attachedBindings(ctx, parent, present)
	if err != nil {
		return reconcile.Result{}, err
	}
	for name := range held {
		delete(existing, name)
	}
	settings, err := d.settings(ctx, parent, existing)
	if err != nil {
		return reconcile.Result{}, err
	}
	pl := planAttached(parent, active, present, existing, settings)
	if err := d.execute(ctx, parent, pl, exists); err != nil {
		return reconcile.Result{}, err
	}

	if !active && exists && (controllerutil.ContainsFinalizer(parent, workv1alpha2.BindingDependenciesDistributorFinalizer) ||
		parent.Annotations[workv1alpha2.BindingDependenciesAnnotationKey] != "") {
		p := parent.DeepCopy()
		controllerutil.RemoveFinalizer(p, workv1alpha2.BindingDependenciesDistributorFinalizer)
		delete(p.Annotations, workv1alpha2.BindingDependenciesAnnotationKey)
		if err := d.Client.Update(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("removing dependencies finalizer: %w", err)
		}
	}
	if len(pl.Waiting) > 0 {
		return reconcile.Result{RequeueAfter: waitingRetry}, nil
	}
	return reconcile.Result{}, nil
}

func (d *Distributor) execute(ctx context.Context, parent *workv1alpha2.ResourceBinding, pl plan, parentExists bool) error {
	log := ctrl.LoggerFrom(ctx)
	conflicts := map[string]bool{}
	for _, n := range pl.Conflicts {
		conflicts[n] = true
	}
	fail := func(err error) error {
		if parentExists && !apierrors.IsConflict(err) {
			d.Recorder.Eventf(parent, corev1.EventTypeWarning, ReasonSyncDependenciesFailed, "%v", err)
		}
		return err
	}
	for _, b := range pl.Delete {
		// The plan deletes b because, as read, nobody requires it; another
		// depending binding may have added itself since. Deleting only that
		// version turns such a change into a Conflict, and the next pass
		// decides on the binding as it is now.
		uid, rv := b.UID, b.ResourceVersion
		if err := d.Client.Delete(ctx, b, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) {
			return fail(fmt.Errorf("deleting attached binding %s: %w", b.Name, err))
		}
		log.V(1).Info("deleted attached binding", "binding", b.Name)
	}
	for _, b := range pl.Create {
		b.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] = d.NewID()
		if err := d.Client.Create(ctx, b); err != nil {
			return fail(fmt.Errorf("creating attached binding %s: %w", b.Name, err))
		}
		log.V(1).Info("created attached binding", "binding", b.Name)
		d.warnConflict(b, conflicts)
	}
	for _, b := range pl.Update {
		if err := d.Client.Update(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			return fail(fmt.Errorf("updating attached binding %s: %w", b.Name, err))
		}
		d.warnConflict(b, conflicts)
	}
	if !pl.empty() && parentExists && parent.DeletionTimestamp.IsZero() && parent.Spec.PropagateDeps {
		d.Recorder.Eventf(parent, corev1.EventTypeNormal, ReasonSyncDependenciesSucceed,
			"Synced dependencies: %d created, %d updated, %d deleted", len(pl.Create), len(pl.Update), len(pl.Delete))
	}
	for _, name := range pl.Waiting {
		log.V(1).Info("attached binding not writable yet", "binding", name)
	}
	return nil
}

func (d *Distributor) warnConflict(b *workv1alpha2.ResourceBinding, conflicts map[string]bool) {
	if conflicts[b.Name] {
		d.Recorder.Event(b, corev1.EventTypeWarning, ReasonDependencyPolicyConflict,
			"the bindings requiring this dependency disagree on conflictResolution or preserveResourcesOnDeletion; using Overwrite / true")
	}
}

// DependencyKindNotServedError says the API server does not serve the kind
// of a dependency at the version the interpreter named: a CRD that stopped
// serving it or was removed, or a group the RESTMapper cannot resolve for a
// moment. That says nothing of whether the dependency exists, so it is not
// taken for absent (which would remove its attached binding, and the
// dependency from the members).
type DependencyKindNotServedError struct {
	Dependency interpreter.Dependency
	Err        error
}

func (e *DependencyKindNotServedError) Error() string {
	return fmt.Sprintf("%s %s of dependency %s/%s is not served; its attached binding is kept and the dependency read again: %v",
		e.Dependency.Kind, e.Dependency.APIVersion, e.Dependency.Namespace, e.Dependency.Name, e.Err)
}

func (e *DependencyKindNotServedError) Unwrap() error { return e.Err }

// lookup reads a dependency's metadata (starting its metadata informer and
// event source on first use). A dependency of a kind that is not served is a
// DependencyKindNotServedError.
func (d *Distributor) lookup(ctx context.Context, ref interpreter.Dependency) (presentDependency, bool, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if err := d.ensureWatch(gvk); err != nil {
		return presentDependency{}, false, err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return presentDependency{}, false, nil
		}
		if meta.IsNoMatchError(err) {
			return presentDependency{}, false, &DependencyKindNotServedError{Dependency: ref, Err: err}
		}
		return presentDependency{}, false, fmt.Errorf("getting dependency %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return presentDependency{}, false, nil
	}
	return presentDependency{Dependency: ref, UID: m.UID, ResourceVersion: m.ResourceVersion}, true, nil
}

// attachedBindings returns, by name, the bindings labelled as required by
// parent and the bindings named after its present dependencies.
func (d *Distributor) attachedBindings(ctx context.Context, parent *workv1alpha2.ResourceBinding, present []presentDependency) (map[string]*workv1alpha2.ResourceBinding, error) {
	out := map[string]*workv1alpha2.ResourceBinding{}
	var labelled workv1alpha2.ResourceBindingList
	if err := d.Reader.List(ctx, &labelled, client.InNamespace(parent.Namespace),
		client.HasLabels{DependedByLabelKey(parent.Namespace, parent.Name)}); err != nil {
		return nil, fmt.Errorf("listing attached bindings: %w", err)
	}
	for i := range labelled.Items {
		out[labelled.Items[i].Name] = &labelled.Items[i]
	}
	for _, dep := range present {
		name := detector.BindingName(dep.Kind, dep.Name)
		if _, ok := out[name]; ok {
			continue
		}
		rb := &workv1alpha2.ResourceBinding{}
		if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: parent.Namespace, Name: name}, rb); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting attached binding %s: %w", name, err)
		}
		out[name] = rb
	}
	return out, nil
}

// settings collects the settings of parent and of every binding that
// requires one of the existing attached bindings.
func (d *Distributor) settings(ctx context.Context, parent *workv1alpha2.ResourceBinding, existing map[string]*workv1alpha2.ResourceBinding) (map[types.NamespacedName]parentSettings, error) {
	out := map[types.NamespacedName]parentSettings{}
	self := types.NamespacedName{Namespace: parent.Namespace, Name: parent.Name}
	if parent.UID != "" {
		out[self] = settingsOf(parent)
	}
	for _, b := range existing {
		for _, s := range b.Spec.RequiredBy {
			key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
			if _, ok := out[key]; ok || key == self {
				continue
			}
			other := &workv1alpha2.ResourceBinding{}
			if err := d.Reader.Get(ctx, key, other); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("getting binding %s: %w", key, err)
			}
			out[key] = settingsOf(other)
		}
	}
	return out, nil
}

// filterDependencies keeps the dependencies an attached binding can carry:
// in the binding's namespace, complete, not objects every cluster makes for
// itself; sorted and without duplicates.
func filterDependencies(refs []interpreter.Dependency, namespace string) []interpreter.Dependency {
	seen := map[interpreter.Dependency]bool{}
	var out []interpreter.Dependency
	for _, r := range refs {
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" || r.Namespace != namespace || seen[r] ||
			detector.IsSkippedReference(r.APIVersion, r.Kind, r.Namespace, r.Name) {
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return dependencyKey(out[i].APIVersion, out[i].Kind, out[i].Namespace, out[i].Name) <
			dependencyKey(out[j].APIVersion, out[j].Kind, out[j].Namespace, out[j].Name)
	})
	return out
}

// conflictRequeue is how soon a reconcile that lost a write race runs again.
const conflictRequeue = 200 * time.Millisecond
