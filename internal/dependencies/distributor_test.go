package dependencies

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// fakeInterpreter says every template depends on the ConfigMap "cfg".
type fakeInterpreter struct{ interpreter.Interpreter }

func (fakeInterpreter) GetDependencies(obj *unstructured.Unstructured) ([]interpreter.Dependency, error) {
	return []interpreter.Dependency{{APIVersion: "v1", Kind: "ConfigMap", Namespace: obj.GetNamespace(), Name: "cfg"}}, nil
}

type testEnv struct {
	d      *Distributor
	c      client.Client
	rec    *record.FakeRecorder
	writes atomic.Int32
}

func newTestEnv(t *testing.T, objs ...client.Object) *testEnv {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{rec: record.NewFakeRecorder(100)}
	e.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&workv1alpha2.ResourceBinding{}, IndexDependency, dependencyIndex).
		WithInterceptorFuncs(clienttest.CountWrites(func(string, client.Object) { e.writes.Add(1) })).Build()
	e.d = &Distributor{Client: e.c, Reader: e.c, Recorder: e.rec, Interpreter: fakeInterpreter{}, NewID: func() string { return "attached-id" }}
	e.d.setDefaults()
	return e
}

func (e *testEnv) reconcile(t *testing.T) {
	t.Helper()
	if _, err := e.d.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func (e *testEnv) get(t *testing.T, name string) (*workv1alpha2.ResourceBinding, bool) {
	t.Helper()
	rb := &workv1alpha2.ResourceBinding{}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, rb)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return rb, true
}

func fixtures() []client.Object {
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nginx", UID: "uid-nginx"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg", UID: "uid-cfg"}},
		makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member1").obj(),
	}
}

func TestReconcileCreatesAttachedBindingThenWritesNothing(t *testing.T) {
	e := newTestEnv(t, fixtures()...)
	e.reconcile(t)

	parent, _ := e.get(t, "nginx-deployment")
	if !strings.Contains(parent.Annotations[workv1alpha2.BindingDependenciesAnnotationKey], `"name":"cfg"`) ||
		len(parent.Finalizers) != 1 || parent.Finalizers[0] != workv1alpha2.BindingDependenciesDistributorFinalizer {
		t.Errorf("parent annotations %v finalizers %v", parent.Annotations, parent.Finalizers)
	}
	att, ok := e.get(t, "cfg-configmap")
	if !ok {
		t.Fatal("attached binding not created")
	}
	if att.Labels[workv1alpha2.ResourceBindingPermanentIDLabel] != "attached-id" ||
		len(att.Spec.RequiredBy) != 1 || att.Spec.RequiredBy[0].Clusters[0].Name != "member1" || att.Spec.Resource.UID != "uid-cfg" {
		t.Errorf("attached binding = %+v", att)
	}
	// The parent's own index entry lets a ConfigMap change find it.
	var rbs workv1alpha2.ResourceBindingList
	if err := e.c.List(context.Background(), &rbs, client.MatchingFields{IndexDependency: dependencyKey("v1", "ConfigMap", "default", "cfg")}); err != nil || len(rbs.Items) != 1 {
		t.Errorf("index lookup: %v, %d items", err, len(rbs.Items))
	}

	e.writes.Store(0)
	e.reconcile(t)
	if n := e.writes.Load(); n != 0 {
		t.Errorf("second reconcile wrote %d times, want 0", n)
	}
}

func TestReconcileFollowsParentClusters(t *testing.T) {
	e := newTestEnv(t, fixtures()...)
	e.reconcile(t)
	parent, _ := e.get(t, "nginx-deployment")
	parent.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}
	if err := e.c.Update(context.Background(), parent); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	att, _ := e.get(t, "cfg-configmap")
	if c := att.Spec.RequiredBy[0].Clusters; len(c) != 1 || c[0].Name != "member2" {
		t.Errorf("requiredBy clusters = %+v, want member2", c)
	}
}

func TestReconcileStopsDependingReleasesAndDeletes(t *testing.T) {
	e := newTestEnv(t, fixtures()...)
	e.reconcile(t)
	parent, _ := e.get(t, "nginx-deployment")
	parent.Spec.PropagateDeps = false
	if err := e.c.Update(context.Background(), parent); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if att, ok := e.get(t, "cfg-configmap"); ok && att.DeletionTimestamp.IsZero() {
		t.Errorf("attached binding not deleted: %+v", att)
	}
	parent, _ = e.get(t, "nginx-deployment")
	if len(parent.Finalizers) != 0 || parent.Annotations[workv1alpha2.BindingDependenciesAnnotationKey] != "" {
		t.Errorf("parent finalizers %v annotations %v", parent.Finalizers, parent.Annotations)
	}
}

func TestReconcileParentDeletedReleasesSharedBinding(t *testing.T) {
	objs := append(fixtures(), attached("cfg", "uid-cfg").requiredBy("nginx-deployment", "member1").requiredBy("web-deployment", "member2").obj())
	e := newTestEnv(t, objs...)
	e.reconcile(t) // records the finalizer
	parent, _ := e.get(t, "nginx-deployment")
	if err := e.c.Delete(context.Background(), parent); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	att, ok := e.get(t, "cfg-configmap")
	if !ok || len(att.Spec.RequiredBy) != 1 || att.Spec.RequiredBy[0].Name != "web-deployment" {
		t.Errorf("shared attached binding = %+v", att)
	}
	if _, ok := e.get(t, "nginx-deployment"); ok {
		t.Errorf("parent still there: finalizer not removed")
	}
}

func TestReconcileMissingDependencyIsSkipped(t *testing.T) {
	objs := fixtures()[:1]
	objs = append(objs, makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member1").obj())
	e := newTestEnv(t, objs...)
	e.reconcile(t)
	if _, ok := e.get(t, "cfg-configmap"); ok {
		t.Errorf("attached binding created for a missing ConfigMap")
	}
}

// twoDependencies says every template depends on the ConfigMap "cfg" and
// the Secret "creds".
type twoDependencies struct{ interpreter.Interpreter }

func (twoDependencies) GetDependencies(obj *unstructured.Unstructured) ([]interpreter.Dependency, error) {
	return []interpreter.Dependency{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: obj.GetNamespace(), Name: "cfg"},
		{APIVersion: "v1", Kind: "Secret", Namespace: obj.GetNamespace(), Name: "creds"},
	}, nil
}

// notServing makes the distributor's reads of kind fail as the RESTMapper
// does for a kind the API server does not serve.
func notServing(e *testEnv, kind string) {
	e.d.Reader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind == kind {
				return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

func requires(rb *workv1alpha2.ResourceBinding, parent, cluster string) bool {
	for _, r := range rb.Spec.RequiredBy {
		if r.Name == parent && len(r.Clusters) == 1 && r.Clusters[0].Name == cluster {
			return true
		}
	}
	return false
}

func describe(rb *workv1alpha2.ResourceBinding) string {
	if rb == nil {
		return "<none>"
	}
	return fmt.Sprintf("deletionTimestamp %v, requiredBy %+v", rb.DeletionTimestamp, rb.Spec.RequiredBy)
}

// A dependency of a kind that is not served may still exist: it is not taken
// for gone (which would delete its attached binding, and the dependency in
// every member). Its attached binding is left as it is, the other
// dependencies follow the depending binding, and the binding is looked at
// again with back-off.
func TestReconcileDependencyOfUnservedKindKeepsAttachedBinding(t *testing.T) {
	objs := append(fixtures(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds", UID: "uid-creds"}})
	e := newTestEnv(t, objs...)
	e.d.Interpreter = twoDependencies{}
	e.reconcile(t)
	parent, _ := e.get(t, "nginx-deployment")
	parent.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}
	if err := e.c.Update(context.Background(), parent); err != nil {
		t.Fatal(err)
	}
	notServing(e, "ConfigMap")

	_, err := e.d.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}})

	att, ok := e.get(t, "cfg-configmap")
	if !ok || !att.DeletionTimestamp.IsZero() || !requires(att, "nginx-deployment", "member1") {
		t.Fatalf("the attached binding of a dependency whose kind is not served was changed: exists %t, %s", ok, describe(att))
	}
	var notServed *DependencyKindNotServedError
	if !errors.As(err, &notServed) {
		t.Fatalf("reconcile = %v; want a DependencyKindNotServedError, retried with back-off", err)
	}
	if creds, ok := e.get(t, "creds-secret"); !ok || !requires(creds, "nginx-deployment", "member2") {
		t.Errorf("the other dependency did not follow the depending binding: exists %t, %s", ok, describe(creds))
	}
	if evs := eventstest.Drain(e.rec); !slices.ContainsFunc(evs, func(ev string) bool { return strings.Contains(ev, ReasonDependencyKindNotServed) }) {
		t.Errorf("events = %q", evs)
	}
}

// A depending binding whose template's kind is not served keeps its
// attached bindings: the template may still exist.
func TestReconcileTemplateOfUnservedKindKeepsAttachedBindings(t *testing.T) {
	e := newTestEnv(t, fixtures()...)
	e.reconcile(t)
	notServing(e, "Deployment")

	_, err := e.d.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}})

	if att, ok := e.get(t, "cfg-configmap"); !ok || !att.DeletionTimestamp.IsZero() || !requires(att, "nginx-deployment", "member1") {
		t.Fatalf("attached binding changed: exists %t, %s", ok, describe(att))
	}
	var notServed *detector.TemplateKindNotServedError
	if !errors.As(err, &notServed) {
		t.Fatalf("reconcile = %v; want a TemplateKindNotServedError, retried with back-off", err)
	}
}

// cacheHolding has the distributor read stale, as an informer that has not
// caught up yet, in place of the stored binding of the same name.
func cacheHolding(e *testEnv, stale *workv1alpha2.ResourceBinding) {
	e.d.Reader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if rb, ok := obj.(*workv1alpha2.ResourceBinding); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(rb)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if rbs, ok := list.(*workv1alpha2.ResourceBindingList); ok {
				for i := range rbs.Items {
					if client.ObjectKeyFromObject(&rbs.Items[i]) == client.ObjectKeyFromObject(stale) {
						stale.DeepCopyInto(&rbs.Items[i])
					}
				}
			}
			return nil
		},
	})
}

// An attached binding that another depending binding required after the
// version the decision to delete it was made on is kept: the delete is
// refused and the binding looked at again, without a Warning.
func TestReconcileKeepsAttachedBindingRequiredMeanwhile(t *testing.T) {
	ctx := context.Background()
	e := newTestEnv(t, fixtures()...)
	e.reconcile(t)
	parent, _ := e.get(t, "nginx-deployment")
	parent.Spec.PropagateDeps = false
	if err := e.c.Update(ctx, parent); err != nil {
		t.Fatal(err)
	}
	stale, _ := e.get(t, "cfg-configmap")
	live := stale.DeepCopy()
	addRequirement(live, DependedByLabelKey("default", "web-deployment"), "id-web-deployment",
		workv1alpha2.BindingSnapshot{Namespace: "default", Name: "web-deployment", Clusters: []workv1alpha2.TargetCluster{{Name: "member2"}}})
	if err := e.c.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	cacheHolding(e, stale)
	eventstest.Drain(e.rec)

	res, err := e.d.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "nginx-deployment"}})
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("reconcile = %+v, %v; want a quiet requeue", res, err)
	}
	att, ok := e.get(t, "cfg-configmap")
	if !ok || !att.DeletionTimestamp.IsZero() || !requires(att, "web-deployment", "member2") {
		t.Fatalf("the attached binding web-deployment requires was changed: exists %t, %s", ok, describe(att))
	}
	if evs := eventstest.Drain(e.rec); len(evs) != 0 {
		t.Errorf("events = %q", evs)
	}
}
