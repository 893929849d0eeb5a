package dependencies

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
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
