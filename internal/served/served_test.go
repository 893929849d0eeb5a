package served

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}
)

var lw = metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}

// apiServer is a fake discovery endpoint whose resources a test changes.
type apiServer struct {
	mu    sync.Mutex
	lists []*metav1.APIResourceList
	err   error
	calls atomic.Int32
}

func (a *apiServer) list() ([]*metav1.APIResourceList, error) {
	a.calls.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lists, a.err
}

func (a *apiServer) set(lists []*metav1.APIResourceList, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lists, a.err = lists, err
}

func core() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: lw},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: lw},
		}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Verbs: lw},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
	}
}

func withWidget() []*metav1.APIResourceList {
	return append(core(), &metav1.APIResourceList{GroupVersion: "example.io/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Verbs: lw},
	}})
}

func TestParse(t *testing.T) {
	kinds, err := Parse(core(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := kinds[deploymentGVK]; !ok || k.Resource.Resource != "deployments" || !k.Namespaced {
		t.Errorf("Deployment = %+v, %v", k, ok)
	}
	if k, ok := kinds[schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}]; !ok || k.Namespaced {
		t.Errorf("Namespace = %+v, %v; want served and cluster-scoped", k, ok)
	}
	// Subresources and kinds that cannot be listed and watched are left out.
	if len(kinds) != 2 {
		t.Errorf("kinds = %v, want Deployment and Namespace only", kinds)
	}

	partial := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("unavailable")}}
	if kinds, err := Parse(core(), partial); err != nil || len(kinds) != 2 {
		t.Errorf("a partial discovery failure: kinds %v, err %v; want what was found", kinds, err)
	}
	if _, err := Parse(nil, errors.New("connection refused")); err == nil {
		t.Error("a failed discovery must be an error")
	}
}

func TestRefreshNotifiesOnlyChanges(t *testing.T) {
	api := &apiServer{lists: core()}
	k := New(api.list, nil, 0)
	var changes atomic.Int32
	k.OnChange(func(context.Context) { changes.Add(1) })
	ctx := context.Background()

	if k.Ready() {
		t.Fatal("ready before any discovery")
	}
	mustRefresh(t, k)
	if !k.Ready() || changes.Load() != 1 {
		t.Fatalf("first round: ready %v, changes %d; want ready and one change", k.Ready(), changes.Load())
	}
	mustRefresh(t, k)
	if changes.Load() != 1 {
		t.Errorf("an unchanged round notified (%d changes)", changes.Load())
	}

	api.set(withWidget(), nil)
	mustRefresh(t, k)
	if _, ok := k.Lookup(widgetGVK); !ok || changes.Load() != 2 {
		t.Errorf("new kind: served %v, changes %d; want served and a second change", ok, changes.Load())
	}

	api.set(nil, errors.New("connection refused"))
	if err := k.Refresh(ctx); err == nil {
		t.Error("a failed round must report its error")
	}
	if _, ok := k.Lookup(widgetGVK); !ok || changes.Load() != 2 {
		t.Errorf("a failed round must keep the previous view without notifying (served %v, changes %d)", ok, changes.Load())
	}

	api.set(core(), nil)
	mustRefresh(t, k)
	if _, ok := k.Lookup(widgetGVK); ok || changes.Load() != 3 {
		t.Errorf("removed kind: served %v, changes %d; want gone and a third change", ok, changes.Load())
	}
	if got := k.VersionsOf(deploymentGVK.GroupKind()); len(got) != 1 || got[0] != "apps/v1" {
		t.Errorf("VersionsOf(Deployment) = %v", got)
	}
}

func TestEnsureReadyDiscoversOnceWithoutNotifying(t *testing.T) {
	api := &apiServer{lists: core()}
	k := New(api.list, nil, 0)
	var changes atomic.Int32
	k.OnChange(func(context.Context) { changes.Add(1) })
	for range 3 {
		if err := k.EnsureReady(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := k.Lookup(deploymentGVK); !ok {
		t.Error("Deployment not served after EnsureReady")
	}
	if n := api.calls.Load(); n != 1 {
		t.Errorf("%d discovery rounds, want 1", n)
	}
	if changes.Load() != 0 {
		t.Error("EnsureReady notified")
	}
}

// TestStartFindsKindInstalledLater: the loop's periodic round finds a kind
// that appeared after the first round and tells the subscribers.
func TestStartFindsKindInstalledLater(t *testing.T) {
	api := &apiServer{lists: core()}
	clk := clocktesting.NewFakeClock(time.Now())
	k := New(api.list, clk, time.Minute)
	changed := make(chan struct{}, 8)
	k.OnChange(func(context.Context) { changed <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	waitChange(t, changed, "the first round")
	api.set(withWidget(), nil)
	// Step the clock until the loop's ticker exists and fires.
	deadline := time.Now().Add(10 * time.Second)
	for {
		clk.Step(time.Minute)
		select {
		case <-changed:
			if _, ok := k.Lookup(widgetGVK); !ok {
				t.Fatal("notified, but Widget is not served")
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the periodic round never found the new kind")
		}
	}
}

func mustRefresh(t *testing.T, k *Kinds) {
	t.Helper()
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitChange(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no change notified", what)
	}
}
