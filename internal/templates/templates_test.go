package templates

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var deployments = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func template(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deployments)
	u.SetNamespace("default")
	u.SetName("nginx")
	u.SetResourceVersion(rv)
	return u
}

// source is a reader holding one template at one resourceVersion.
type source struct {
	rv string
}

func (s *source) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	template(s.rv).DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (s *source) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func TestReader(t *testing.T) {
	ctx := context.Background()
	ref := Ref{GVK: deployments, Namespace: "default", Name: "nginx"}
	watched := &Kinds{}
	watched.Add(deployments)
	for _, tc := range []struct {
		name     string
		kinds    *Kinds
		read     func(r *Reader) (*unstructured.Unstructured, error)
		wantFrom string
	}{
		{"Get, kind watched", watched, func(r *Reader) (*unstructured.Unstructured, error) { return r.Get(ctx, ref) }, "cache"},
		{"Get, kind not watched", &Kinds{}, func(r *Reader) (*unstructured.Unstructured, error) { return r.Get(ctx, ref) }, "live"},
		{"Get, no kinds", nil, func(r *Reader) (*unstructured.Unstructured, error) { return r.Get(ctx, ref) }, "live"},
		{"GetLive", watched, func(r *Reader) (*unstructured.Unstructured, error) { return r.GetLive(ctx, ref) }, "live"},
		{"GetAt the cached version", watched, func(r *Reader) (*unstructured.Unstructured, error) { return r.GetAt(ctx, ref, "5") }, "cache"},
		{"GetAt another version", watched, func(r *Reader) (*unstructured.Unstructured, error) { return r.GetAt(ctx, ref, "7") }, "live"},
		{"GetAt no version", watched, func(r *Reader) (*unstructured.Unstructured, error) { return r.GetAt(ctx, ref, "") }, "live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache, live := &source{rv: "5"}, &source{rv: "7"}
			got, err := tc.read(&Reader{Cache: cache, Kinds: tc.kinds, Live: live})
			if err != nil {
				t.Fatal(err)
			}
			from := "cache"
			if got.GetResourceVersion() == "7" {
				from = "live"
			}
			if from != tc.wantFrom {
				t.Errorf("read from the %s, want the %s", from, tc.wantFrom)
			}
		})
	}
}

func TestReaderNotFound(t *testing.T) {
	r := &Reader{Live: fake.NewClientBuilder().Build()}
	u := template("")
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	_, err := r.Get(context.Background(), Ref{GVK: u.GroupVersionKind(), Namespace: "default", Name: "missing"})
	if !apierrors.IsNotFound(err) {
		t.Errorf("err = %v, want a wrapped NotFound", err)
	}
}
