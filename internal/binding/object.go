package binding

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// bindingObject is the common view of a ResourceBinding and a
// ClusterResourceBinding. Requests for ClusterResourceBindings have an
// empty namespace, which a ResourceBinding never has, so both kinds share
// one work queue per controller.
type bindingObject struct {
	obj    client.Object
	spec   *workv1alpha2.ResourceBindingSpec
	status *workv1alpha2.ResourceBindingStatus
}

func (b bindingObject) clusterScoped() bool { return b.obj.GetNamespace() == "" }

// getBinding reads the binding of a request from c.
func getBinding(ctx context.Context, c client.Reader, key types.NamespacedName) (bindingObject, error) {
	if key.Namespace == "" {
		crb := &workv1alpha2.ClusterResourceBinding{}
		if err := c.Get(ctx, key, crb); err != nil {
			return bindingObject{}, err
		}
		return bindingObject{obj: crb, spec: &crb.Spec, status: &crb.Status}, nil
	}
	rb := &workv1alpha2.ResourceBinding{}
	if err := c.Get(ctx, key, rb); err != nil {
		return bindingObject{}, err
	}
	return bindingObject{obj: rb, spec: &rb.Spec, status: &rb.Status}, nil
}

func (b bindingObject) finalizer() string {
	if b.clusterScoped() {
		return workv1alpha2.ClusterResourceBindingControllerFinalizer
	}
	return workv1alpha2.BindingControllerFinalizer
}

func (b bindingObject) permanentIDLabel() string {
	if b.clusterScoped() {
		return workv1alpha2.ClusterResourceBindingPermanentIDLabel
	}
	return workv1alpha2.ResourceBindingPermanentIDLabel
}

// permanentID is the binding's permanent-id label, or its UID when the
// label is missing (Lifeboat has no mutating webhook to stamp one).
func (b bindingObject) permanentID() string {
	if id := b.obj.GetLabels()[b.permanentIDLabel()]; id != "" {
		return id
	}
	return string(b.obj.GetUID())
}

// referenceAnnotations point from a Work, and from its manifest, back to
// the binding.
func (b bindingObject) referenceAnnotations() map[string]string {
	if b.clusterScoped() {
		return map[string]string{workv1alpha2.ClusterResourceBindingAnnotationKey: b.obj.GetName()}
	}
	return map[string]string{
		workv1alpha2.ResourceBindingNamespaceAnnotationKey: b.obj.GetNamespace(),
		workv1alpha2.ResourceBindingNameAnnotationKey:      b.obj.GetName(),
	}
}

// indexKey is the value under which the binding's Works are indexed.
func (b bindingObject) indexKey() string {
	return bindingKey(b.obj.GetNamespace(), b.obj.GetName())
}

// bindingKey is "<namespace>/<name>" for a ResourceBinding and "<name>" for
// a ClusterResourceBinding.
func bindingKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// bindingOfWork returns the binding a Work belongs to, read from its
// back-reference annotations; ok is false for Works of no binding.
func bindingOfWork(w client.Object) (types.NamespacedName, bool) {
	ns, name, _, ok := workv1alpha2.BindingOfWorkAnnotations(w.GetAnnotations())
	return types.NamespacedName{Namespace: ns, Name: name}, ok
}

// workIndexValues is the field-index function of Works by binding.
func workIndexValues(obj client.Object) []string {
	w, ok := obj.(*workv1alpha1.Work)
	if !ok {
		return nil
	}
	key, ok := bindingOfWork(w)
	if !ok {
		return nil
	}
	return []string{bindingKey(key.Namespace, key.Name)}
}

// WorkIndex registers the index of Works by their binding, which the
// binding and binding-status controllers share: give both of a manager the
// same WorkIndex. A nil WorkIndex registers the index every time, which
// the manager refuses for the second controller. At 5,000 Works a second
// copy of the index was about 3 MB of the controller manager's heap.
//
// On a manager (Setup) the index is added to the Work informer directly,
// one key per Work; a field index (Register, for fake clients) stores two,
// its value in the Work's namespace and in all namespaces, and at 10,000
// Works the second key cost about 3 MB.
type WorkIndex struct {
	registered bool
	// indexer is the Work informer's store, when Setup indexed it.
	indexer toolscache.Indexer
}

// Setup adds the index to the Work informer of mgr's cache, or registers
// it as a field index when the informer does not take indexers directly.
func (x *WorkIndex) Setup(ctx context.Context, mgr ctrl.Manager) error {
	if x != nil && x.registered {
		return nil
	}
	if x != nil {
		inf, err := mgr.GetCache().GetInformer(ctx, &workv1alpha1.Work{})
		if err != nil {
			return fmt.Errorf("getting the Work informer: %w", err)
		}
		if sii, ok := inf.(toolscache.SharedIndexInformer); ok {
			return x.addTo(sii)
		}
	}
	return x.Register(ctx, mgr.GetFieldIndexer())
}

// addTo indexes the Works of informer inf by binding, one key per Work.
func (x *WorkIndex) addTo(inf toolscache.SharedIndexInformer) error {
	if err := inf.AddIndexers(toolscache.Indexers{worksByBindingIndex: func(obj any) ([]string, error) {
		w, ok := obj.(*workv1alpha1.Work)
		if !ok {
			return nil, nil
		}
		return workIndexValues(w), nil
	}}); err != nil {
		return fmt.Errorf("indexing Works by binding: %w", err)
	}
	x.indexer, x.registered = inf.GetIndexer(), true
	return nil
}

// Register adds the index to indexer as a field index unless x already
// has the index.
func (x *WorkIndex) Register(ctx context.Context, indexer client.FieldIndexer) error {
	if x != nil && x.registered {
		return nil
	}
	if err := indexer.IndexField(ctx, &workv1alpha1.Work{}, worksByBindingIndex, workIndexValues); err != nil {
		return fmt.Errorf("indexing Works by binding: %w", err)
	}
	if x != nil {
		x.registered = true
	}
	return nil
}

// workKind is the kind Works listed through the informer's index carry, as
// a cache List sets it.
var workKind = workv1alpha1.SchemeGroupVersion.WithKind("Work")

// list returns copies of the Works of binding b: from the informer's
// index when Setup added it, through c's field index otherwise.
func (x *WorkIndex) list(ctx context.Context, c client.Reader, b bindingObject) ([]workv1alpha1.Work, error) {
	if x == nil || x.indexer == nil {
		return listWorks(ctx, c, b)
	}
	objs, err := x.indexer.ByIndex(worksByBindingIndex, b.indexKey())
	if err != nil {
		return nil, fmt.Errorf("listing Works of binding %s: %w", b.indexKey(), err)
	}
	out := make([]workv1alpha1.Work, 0, len(objs))
	for _, obj := range objs {
		w, ok := obj.(*workv1alpha1.Work)
		if !ok {
			continue
		}
		cp := w.DeepCopy()
		cp.SetGroupVersionKind(workKind)
		out = append(out, *cp)
	}
	return out, nil
}

// listWorks lists the Works of a binding through the field index.
func listWorks(ctx context.Context, c client.Reader, b bindingObject) ([]workv1alpha1.Work, error) {
	list := &workv1alpha1.WorkList{}
	if err := c.List(ctx, list, client.MatchingFields{worksByBindingIndex: b.indexKey()}); err != nil {
		return nil, fmt.Errorf("listing Works of binding %s: %w", b.indexKey(), err)
	}
	return list.Items, nil
}

// describe names the binding in logs and errors.
func (b bindingObject) describe() string {
	kind := "ResourceBinding"
	if b.clusterScoped() {
		kind = "ClusterResourceBinding"
	}
	return strings.TrimSpace(kind + " " + b.indexKey())
}

// WantsWork reads, through r, the binding that work was made from (its
// annotations name it) and says whether that binding still wants a Work in
// cluster: it exists, is not being deleted, and cluster is one of its
// expectedClusters. A Work deleted while its binding wants it (deleted by
// hand, or by this controller just before the binding placed the cluster
// again) is made again under the same name, which adopts the objects the
// deleted one left: they need not go.
func WantsWork(ctx context.Context, r client.Reader, eviction EvictionHooks, cluster string, work metav1.Object) (bool, error) {
	ns, name, _, ok := workv1alpha2.BindingOfWorkAnnotations(work.GetAnnotations())
	if !ok {
		return false, nil
	}
	b, err := getBinding(ctx, r, types.NamespacedName{Namespace: ns, Name: name})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the binding of Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	case !b.obj.GetDeletionTimestamp().IsZero():
		return false, nil
	}
	return expectedClusters(b.spec, eviction).Has(cluster), nil
}
