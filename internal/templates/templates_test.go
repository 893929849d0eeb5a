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
	u.SetUID("uid-nginx")
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

func TestStatusesChain(t *testing.T) {
	var s Statuses
	s.Written("uid", "5", "6")
	s.Written("uid", "6", "7")
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"5", "7", true},  // two status writes on top of 5
		{"6", "7", false}, // the chain starts at 5
		{"5", "6", false}, // 6 is not the latest any more
		{"4", "7", false},
	} {
		if got := s.SameButStatus("uid", tc.from, tc.to); got != tc.want {
			t.Errorf("SameButStatus(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	// Someone else wrote version 8; a status write on top of it starts a
	// new chain.
	s.Written("uid", "8", "9")
	if s.SameButStatus("uid", "5", "9") {
		t.Error("a chain with another writer's version in it still counts")
	}
	if !s.SameButStatus("uid", "8", "9") {
		t.Error("the new chain is not remembered")
	}
	if s.SameButStatus("other", "8", "9") {
		t.Error("another template's chain is taken")
	}
	var none *Statuses
	none.Written("uid", "1", "2")
	if none.SameButStatus("uid", "1", "2") {
		t.Error("a nil Statuses remembered a write")
	}
}

// GetAt takes a cached copy that differs from the asked version only by
// status writes of this process.
func TestGetAtAfterStatusWrites(t *testing.T) {
	ctx := context.Background()
	ref := Ref{GVK: deployments, Namespace: "default", Name: "nginx"}
	kinds := &Kinds{}
	kinds.Add(deployments)
	statuses := &Statuses{}
	r := &Reader{Cache: &source{rv: "5"}, Kinds: kinds, Live: &source{rv: "7"}, Statuses: statuses}
	if got, _ := r.GetAt(ctx, ref, "3"); got.GetResourceVersion() != "7" {
		t.Errorf("read %s before any status write, want the live 7", got.GetResourceVersion())
	}
	statuses.Written("uid-nginx", "3", "4")
	statuses.Written("uid-nginx", "4", "5")
	if got, _ := r.GetAt(ctx, ref, "3"); got.GetResourceVersion() != "5" {
		t.Errorf("read %s, want the cached 5 (3 plus two status writes)", got.GetResourceVersion())
	}
}
