package detector

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/apidiscovery"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
	"github.com/lifeboat-dev/lifeboat/internal/served"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
)

// Event reasons on templates and policies.
const (
	ReasonApplyPolicySucceed = "ApplyPolicySucceed"
	ReasonApplyPolicyFailed  = "ApplyPolicyFailed"
)

// ReasonTemplateKindNotServed is the Warning event on a binding whose
// template's kind, at the version the binding names, the API server does
// not serve: the binding is kept (see TemplateKindNotServedError).
const ReasonTemplateKindNotServed = "TemplateKindNotServed"

// Field indexes the detector registers on ResourceBindings and
// ClusterResourceBindings.
const (
	// IndexClaimedBy indexes bindings by their claim: "pp:<permanent-id>" or
	// "cpp:<permanent-id>".
	IndexClaimedBy = "detector.lifeboat.dev/claimed-by"
)

const (
	// overridesRetry is how long a template waits for a policy's
	// dependentOverrides to appear before it is looked at again.
	overridesRetry = 10 * time.Second
	// staleBindingRetry is how long a template waits for the binding of a
	// previous template with its name to be deleted.
	staleBindingRetry = 2 * time.Second
)

// TemplateKey names one resource template: its kind and version as watched,
// and its namespace (empty when cluster-scoped) and name. It is the request
// type of the template controller.
type TemplateKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (k TemplateKey) String() string {
	return fmt.Sprintf("%s %s/%s", k.GVK.String(), k.Namespace, k.Name)
}

func (k TemplateKey) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// name is the template's namespace/name, or its name when cluster-scoped.
func (k TemplateKey) name() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Detector matches resource templates with PropagationPolicies and
// ClusterPropagationPolicies, claims them and keeps their bindings. See the
// package documentation. Fields are its dependencies; SetupWithManager fills
// the optional ones from the manager.
type Detector struct {
	// Client writes templates, bindings and policies. Required.
	Client client.Client
	// Reader reads templates (unstructured and metadata-only), policies and
	// bindings; the manager's cache by default.
	Reader client.Reader
	// APIReader reads from the API server; the manager's by default. It is
	// asked for a binding the cache does not have yet before one is
	// created for an already claimed template.
	APIReader client.Reader
	// Cache provides the informers of bindings and CRDs; the manager's
	// cache by default.
	Cache cache.Cache
	// Templates holds the templates of the kinds the detector watches;
	// SetupWithManager makes one over the manager's when it is nil.
	// Reader defaults to it.
	Templates *templates.Cache
	// Statuses are the template versions the binding-status controller
	// made by writing only their status (nil: none known). A binding that
	// names a version before such writes is not updated for them.
	Statuses *templates.Statuses
	// Echoes remembers the bindings the detector created lately: the
	// claim's own update brings the template back before the cache holds
	// the binding created right after it (default: one per process).
	Echoes *coalesce.Recent
	// Served is the view of the kinds the control plane serves. When nil,
	// SetupWithManager makes one over the manager's discovery and runs its
	// refresh loop; a shared view is run by whoever made it.
	Served *served.Kinds
	// Recorder records ApplyPolicySucceed/ApplyPolicyFailed, and
	// TemplateKindNotServed on bindings. Required.
	Recorder record.EventRecorder
	// Events holds back the ApplyPolicySucceed Events of a mass rollout
	// past its burst per policy, and summarises them on the policy (nil:
	// every Event recorded).
	Events *eventbudget.Budget
	// Interpreter answers GetReplicas. Required.
	Interpreter interpreter.Interpreter
	// TemplateWorkers is the template controller's concurrency; 5 by default.
	TemplateWorkers int
	// PolicyWorkers is the concurrency of each policy controller; 1 by
	// default.
	PolicyWorkers int

	// NewID returns a new permanent ID (UUID by default). Tests set it.
	NewID func() string

	mu sync.Mutex
	// watching holds the template kinds with an event source installed.
	watching map[schema.GroupVersionKind]bool
	// wanted maps each policy ("pp/<ns>/<name>", "cpp/<name>") to the kinds it
	// selects; wantedCount counts policies per kind.
	wanted      map[string][]schema.GroupVersionKind
	wantedCount map[schema.GroupVersionKind]int
	primed      bool

	templateCtrl   controller.TypedController[TemplateKey]
	templateEvents chan event.TypedGenericEvent[TemplateKey]
	ppEvents       chan event.GenericEvent
	cppEvents      chan event.GenericEvent
}

func (d *Detector) setDefaults() {
	if d.TemplateWorkers <= 0 {
		d.TemplateWorkers = 5
	}
	if d.PolicyWorkers <= 0 {
		d.PolicyWorkers = 1
	}
	if d.NewID == nil {
		d.NewID = func() string { return string(uuid.NewUUID()) }
	}
	if d.Echoes == nil {
		d.Echoes = coalesce.NewRecent(0, nil)
	}
	if d.Reader == nil && d.Templates != nil {
		d.Reader = d.Templates
	}
	if d.Reader == nil && d.Cache != nil {
		d.Reader = d.Cache
	}
	d.watching = map[schema.GroupVersionKind]bool{}
	d.wanted = map[string][]schema.GroupVersionKind{}
	d.wantedCount = map[schema.GroupVersionKind]int{}
	d.templateEvents = make(chan event.TypedGenericEvent[TemplateKey], 1024)
	d.ppEvents = make(chan event.GenericEvent, 256)
	d.cppEvents = make(chan event.GenericEvent, 256)
}

// SetupWithManager registers the detector's field indexes, its template
// controller ("detector-template") and its policy controllers
// ("detector-propagationpolicy", "detector-clusterpropagationpolicy") with
// mgr, and looks at every policy again when the served kinds change. All
// run only on the elected leader.
func (d *Detector) SetupWithManager(mgr ctrl.Manager) error {
	if d.Cache == nil {
		d.Cache = mgr.GetCache()
	}
	if d.Templates == nil {
		tc, err := templates.NewCacheForManager(mgr)
		if err != nil {
			return err
		}
		d.Templates = tc
	}
	if d.APIReader == nil {
		d.APIReader = mgr.GetAPIReader()
	}
	if d.Served == nil {
		dc, err := apidiscovery.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		d.Served = served.New(served.FromLister(dc), nil, 0)
		if err := d.Served.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	d.setDefaults()
	if d.Client == nil || d.Recorder == nil || d.Interpreter == nil {
		return fmt.Errorf("detector: Client, Recorder and Interpreter are required")
	}
	d.Served.OnChange(d.requeuePolicies)
	ctx := context.Background()
	for _, obj := range []client.Object{&workv1alpha2.ResourceBinding{}, &workv1alpha2.ClusterResourceBinding{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, IndexClaimedBy, claimedByIndex); err != nil {
			return fmt.Errorf("indexing %T by claim: %w", obj, err)
		}
	}

	tc, err := controller.NewTyped[TemplateKey]("detector-template", mgr, controller.TypedOptions[TemplateKey]{
		Reconciler:              reconcile.TypedFunc[TemplateKey](d.reconcileTemplate),
		MaxConcurrentReconciles: d.TemplateWorkers,
		NewQueue:                queue.Typed[TemplateKey],
		LogConstructor: func(k *TemplateKey) logr.Logger {
			log := mgr.GetLogger().WithValues("controller", "detector-template")
			if k != nil {
				log = log.WithValues("gvk", k.GVK.String(), "namespace", k.Namespace, "name", k.Name)
			}
			return log
		},
	})
	if err != nil {
		return fmt.Errorf("creating template controller: %w", err)
	}
	d.templateCtrl = tc
	if err := tc.Watch(source.TypedChannel[TemplateKey, TemplateKey](d.templateEvents, handler.TypedFuncs[TemplateKey, TemplateKey]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[TemplateKey], q workqueue.TypedRateLimitingInterface[TemplateKey]) {
			q.Add(e.Object)
		},
	})); err != nil {
		return fmt.Errorf("watching template events: %w", err)
	}
	if err := tc.Watch(source.TypedKind[*workv1alpha2.ResourceBinding, TemplateKey](d.Cache, &workv1alpha2.ResourceBinding{}, bindingHandler[*workv1alpha2.ResourceBinding]())); err != nil {
		return fmt.Errorf("watching ResourceBindings: %w", err)
	}
	if err := tc.Watch(source.TypedKind[*workv1alpha2.ClusterResourceBinding, TemplateKey](d.Cache, &workv1alpha2.ClusterResourceBinding{}, bindingHandler[*workv1alpha2.ClusterResourceBinding]())); err != nil {
		return fmt.Errorf("watching ClusterResourceBindings: %w", err)
	}

	if err := ctrl.NewControllerManagedBy(mgr).
		Named("detector-propagationpolicy").
		For(&policyv1alpha1.PropagationPolicy{}, builder.WithPredicates(notStatusOnly())).
		WatchesRawSource(source.Channel(d.ppEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: d.PolicyWorkers, NewQueue: queue.New}).
		Complete(reconcile.Func(d.reconcilePropagationPolicy)); err != nil {
		return fmt.Errorf("creating PropagationPolicy controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("detector-clusterpropagationpolicy").
		For(&policyv1alpha1.ClusterPropagationPolicy{}, builder.WithPredicates(notStatusOnly())).
		WatchesRawSource(source.Channel(d.cppEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: d.PolicyWorkers, NewQueue: queue.New}).
		Complete(reconcile.Func(d.reconcileClusterPropagationPolicy)); err != nil {
		return fmt.Errorf("creating ClusterPropagationPolicy controller: %w", err)
	}
	return nil
}

// notStatusOnly drops the updates of a policy that wrote only its status
// (the policy checker's Accepted condition): nothing the detector reads
// (spec, labels, annotations, finalizers, deletion) changed. Informer
// resyncs, which repeat an unchanged object, still pass.
func notStatusOnly() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil || o.GetResourceVersion() == n.GetResourceVersion() {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	}}
}

func claimedByIndex(obj client.Object) []string {
	l := obj.GetLabels()
	var out []string
	if id := l[policyv1alpha1.PropagationPolicyPermanentIDLabel]; id != "" {
		out = append(out, "pp:"+id)
	}
	if id := l[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; id != "" {
		out = append(out, "cpp:"+id)
	}
	return out
}

func claimIndexValue(cluster bool, id string) string {
	if cluster {
		return "cpp:" + id
	}
	return "pp:" + id
}

// bindingHandler maps binding creation and deletion to the binding's
// template, so that a deleted binding is rebuilt and a binding whose
// template is gone (deleted while the detector was down) is removed.
func bindingHandler[T client.Object]() handler.TypedEventHandler[T, TemplateKey] {
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[TemplateKey]) {
		spec := BindingSpec(obj)
		if spec == nil || spec.Resource.Kind == "" || spec.Resource.Name == "" {
			return
		}
		q.Add(TemplateKey{
			GVK:       schema.FromAPIVersionAndKind(spec.Resource.APIVersion, spec.Resource.Kind),
			Namespace: spec.Resource.Namespace,
			Name:      spec.Resource.Name,
		})
	}
	return handler.TypedFuncs[T, TemplateKey]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[T], q workqueue.TypedRateLimitingInterface[TemplateKey]) {
			add(e.Object, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[T], q workqueue.TypedRateLimitingInterface[TemplateKey]) {
			add(e.Object, q)
		},
	}
}

// onTemplate enqueues template events of one kind. Updates that only touch
// status, managedFields or resourceVersion are dropped (as Karmada's
// SpecificationChanged does), so status aggregation into the template does
// not churn the binding.
func (d *Detector) onTemplate(gvk schema.GroupVersionKind) templates.Handler {
	return func(ctx context.Context, old, cur *packed.Object) {
		obj := cur
		if obj == nil {
			obj = old
		}
		if IsSkippedNamespace(obj.Namespace) || !specificationChanged(old, cur) {
			return
		}
		d.enqueueTemplate(ctx, TemplateKey{GVK: gvk, Namespace: obj.Namespace, Name: obj.Name})
	}
}

// specificationChanged reports whether anything but status,
// metadata.managedFields and metadata.resourceVersion differs; a template
// appearing or going is a change.
func specificationChanged(old, cur *packed.Object) bool {
	return old == nil || cur == nil || !old.SameButStatus(cur)
}

// enqueueTemplate asks the template controller to look at a template.
func (d *Detector) enqueueTemplate(ctx context.Context, key TemplateKey) {
	select {
	case d.templateEvents <- event.TypedGenericEvent[TemplateKey]{Object: key}:
	case <-ctx.Done():
	}
}

// ensureWatch installs the event source of a template kind once.
func (d *Detector) ensureWatch(ctx context.Context, gvk schema.GroupVersionKind) error {
	if d.templateCtrl == nil || d.Templates == nil {
		return nil // unit tests: no informers
	}
	d.mu.Lock()
	if d.watching[gvk] {
		d.mu.Unlock()
		return nil
	}
	d.watching[gvk] = true
	d.mu.Unlock()
	if err := d.Templates.Watch(ctx, gvk, d.onTemplate(gvk)); err != nil {
		d.mu.Lock()
		delete(d.watching, gvk)
		d.mu.Unlock()
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	return nil
}

func (d *Detector) isWatching(gvk schema.GroupVersionKind) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.watching[gvk]
}

func ppKey(ns, name string) string { return "pp/" + ns + "/" + name }
func cppKey(name string) string    { return "cpp/" + name }

// setWanted records the kinds a policy selects.
func (d *Detector) setWanted(key string, kinds []schema.GroupVersionKind) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.setWantedLocked(key, kinds)
}

func (d *Detector) setWantedLocked(key string, kinds []schema.GroupVersionKind) {
	for _, gvk := range d.wanted[key] {
		if d.wantedCount[gvk]--; d.wantedCount[gvk] <= 0 {
			delete(d.wantedCount, gvk)
		}
	}
	if kinds == nil {
		delete(d.wanted, key)
		return
	}
	d.wanted[key] = kinds
	for _, gvk := range kinds {
		d.wantedCount[gvk]++
	}
}

// isWanted reports whether some policy selects the kind. The first call
// fills the table from every policy in the cache, so that templates looked
// at before their policy's first reconcile are not mistaken for orphans.
func (d *Detector) isWanted(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	d.mu.Lock()
	primed := d.primed
	d.mu.Unlock()
	if !primed {
		var pps policyv1alpha1.PropagationPolicyList
		if err := d.Reader.List(ctx, &pps); err != nil {
			return false, fmt.Errorf("listing PropagationPolicies: %w", err)
		}
		var cpps policyv1alpha1.ClusterPropagationPolicyList
		if err := d.Reader.List(ctx, &cpps); err != nil {
			return false, fmt.Errorf("listing ClusterPropagationPolicies: %w", err)
		}
		d.mu.Lock()
		if !d.primed {
			for i := range pps.Items {
				if k := ppKey(pps.Items[i].Namespace, pps.Items[i].Name); d.wanted[k] == nil {
					d.setWantedLocked(k, SelectedKinds(&pps.Items[i].Spec))
				}
			}
			for i := range cpps.Items {
				if k := cppKey(cpps.Items[i].Name); d.wanted[k] == nil {
					d.setWantedLocked(k, SelectedKinds(&cpps.Items[i].Spec))
				}
			}
			d.primed = true
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wantedCount[gvk] > 0, nil
}

// requeuePolicies looks at every policy again: a kind that was not served
// may be now. It runs after discovery found a change in the served kinds.
func (d *Detector) requeuePolicies(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx)
	var pps policyv1alpha1.PropagationPolicyList
	if err := d.Reader.List(ctx, &pps); err != nil {
		log.Error(err, "listing PropagationPolicies after discovery")
	}
	for i := range pps.Items {
		select {
		case d.ppEvents <- event.GenericEvent{Object: &pps.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
	var cpps policyv1alpha1.ClusterPropagationPolicyList
	if err := d.Reader.List(ctx, &cpps); err != nil {
		log.Error(err, "listing ClusterPropagationPolicies after discovery")
	}
	for i := range cpps.Items {
		select {
		case d.cppEvents <- event.GenericEvent{Object: &cpps.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}
