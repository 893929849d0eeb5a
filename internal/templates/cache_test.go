package templates

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

func deployment(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec":   map[string]interface{}{"replicas": int64(1)},
		"status": map[string]interface{}{"replicas": int64(0)},
	}}
	u.SetGroupVersionKind(deployments)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
	return u
}

// event is what a Handler was told, by name.
type event struct{ old, cur string }

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) handle(_ context.Context, old, cur *packed.Object) {
	name := func(p *packed.Object) string {
		if p == nil {
			return ""
		}
		return p.Namespace + "/" + p.Name
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{name(old), name(cur)})
}

// waitFor polls until the handler was told e, and reports what it was told.
func (r *recorder) waitFor(t *testing.T, e event) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, got := range r.events {
			if got == e {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("handler never told %+v; told %+v", e, r.events)
}

func newTestCache(t *testing.T, objs ...runtime.Object) (*Cache, *dynamicfake.FakeDynamicClient, client.Client, *Kinds) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(deployments, meta.RESTScopeNamespace)
	fallback := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}}).Build()
	c := NewCache(dyn, mapper, fallback)
	kinds := c.Kinds()
	c.syncTimeout = 10 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, dyn, fallback, kinds
}

func TestCacheReadsHeldTemplates(t *testing.T) {
	ctx := context.Background()
	c, _, _, kinds := newTestCache(t,
		deployment("a", "web", map[string]string{"app": "web"}),
		deployment("a", "db", nil),
		deployment("b", "web", map[string]string{"app": "web"}))

	// Not held yet: the read goes to the fallback, which has no Deployments.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deployments)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web"}, u); err == nil {
		t.Fatalf("Get of a kind not held read %v, want the fallback's answer", u.Object)
	}

	var rec recorder
	if err := c.Watch(ctx, deployments, rec.handle); err != nil {
		t.Fatal(err)
	}
	if !kinds.Has(deployments) {
		t.Error("Kinds does not know the watched kind")
	}
	for _, name := range []string{"a/web", "a/db", "b/web"} {
		rec.waitFor(t, event{"", name})
	}

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(deployments)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web"}, got); err != nil {
		t.Fatal(err)
	}
	if got.GetName() != "web" || got.GetLabels()["app"] != "web" || got.GetKind() != "Deployment" {
		t.Errorf("Get = %v", got.Object)
	}
	if replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); replicas != 1 {
		t.Errorf("spec lost: %v", got.Object)
	}
	if len(got.GetManagedFields()) != 0 {
		t.Errorf("managedFields kept: %v", got.GetManagedFields())
	}
	// A caller's change stays with the caller.
	got.SetLabels(nil)
	again := &unstructured.Unstructured{}
	again.SetGroupVersionKind(deployments)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web"}, again); err != nil || again.GetLabels()["app"] != "web" {
		t.Errorf("after changing a copy: %v, labels %v", err, again.GetLabels())
	}

	missing := &unstructured.Unstructured{}
	missing.SetGroupVersionKind(deployments)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "nope"}, missing); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing template = %v, want NotFound", err)
	}

	list := func(opts ...client.ListOption) []string {
		t.Helper()
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(deployments.GroupVersion().WithKind("DeploymentList"))
		if err := c.List(ctx, l, opts...); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, i := range l.Items {
			names = append(names, i.GetNamespace()+"/"+i.GetName())
		}
		return names
	}
	if got := list(); len(got) != 3 {
		t.Errorf("List = %v, want all three", got)
	}
	if got := list(client.InNamespace("a")); len(got) != 2 {
		t.Errorf("List in a = %v, want a/web and a/db", got)
	}
	if got := list(client.MatchingLabels{"app": "web"}); len(got) != 2 {
		t.Errorf("List app=web = %v, want a/web and b/web", got)
	}
	if got := list(client.InNamespace("b"), client.MatchingLabels{"app": "web"}); fmt.Sprint(got) != "[b/web]" {
		t.Errorf("List app=web in b = %v", got)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(deployments.GroupVersion().WithKind("DeploymentList"))
	if err := c.List(ctx, l, client.MatchingFields{"metadata.name": "web"}); err == nil {
		t.Error("List with a field selector succeeded; the cache cannot answer it")
	}

	// Other objects come from the fallback.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "cm"}, &cm); err != nil {
		t.Errorf("Get of a typed object from the fallback: %v", err)
	}
}

func TestCacheTellsChanges(t *testing.T) {
	ctx := context.Background()
	c, dyn, _, _ := newTestCache(t, deployment("a", "web", nil))
	var rec recorder
	if err := c.Watch(ctx, deployments, rec.handle); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, event{"", "a/web"})

	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	changed := deployment("a", "web", map[string]string{"app": "web"})
	if _, err := dyn.Resource(gvr).Namespace("a").Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, event{"a/web", "a/web"})
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(deployments)
	deadline := time.Now().Add(10 * time.Second)
	for got.GetLabels()["app"] != "web" && time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "web"}, got); err != nil {
			t.Fatal(err)
		}
	}
	if got.GetLabels()["app"] != "web" {
		t.Errorf("the cache never served the update: %v", got.Object)
	}

	if err := dyn.Resource(gvr).Namespace("a").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, event{"a/web", ""})
}

func TestCacheWatchOfAnUnknownKind(t *testing.T) {
	c, _, _, kinds := newTestCache(t)
	unknown := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Nope"}
	if err := c.Watch(context.Background(), unknown, func(context.Context, *packed.Object, *packed.Object) {}); err == nil {
		t.Fatal("Watch of a kind the API server does not serve succeeded")
	}
	if kinds.Has(unknown) {
		t.Error("Kinds has the kind that could not be watched")
	}
}

// TestCacheWatchGivesUp: a kind whose list keeps failing does not hold its
// caller for ever, and is not reported as held.
func TestCacheWatchGivesUp(t *testing.T) {
	c, dyn, _, kinds := newTestCache(t, deployment("a", "web", nil))
	c.syncTimeout = 200 * time.Millisecond
	dyn.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", fmt.Errorf("no"))
	})
	var rec recorder
	if err := c.Watch(context.Background(), deployments, rec.handle); err == nil {
		t.Fatal("Watch succeeded although the kind cannot be listed")
	}
	if kinds.Has(deployments) {
		t.Error("Kinds has a kind never listed")
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deployments)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "a", Name: "web"}, u); err == nil {
		t.Errorf("Get of a kind never listed read %v", u.Object)
	}
}
