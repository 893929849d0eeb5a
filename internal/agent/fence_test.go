package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

type fakeRenewals struct {
	mu        sync.Mutex
	last      time.Time
	attempted bool
}

func (f *fakeRenewals) LastRenewed() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.last }
func (f *fakeRenewals) Attempted() bool        { f.mu.Lock(); defer f.mu.Unlock(); return f.attempted }

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func marked(obj metav1.Object, action string, after string) {
	if action != "" {
		obj.SetLabels(map[string]string{fencing.ActionLabel: action})
	}
	if after != "" {
		obj.SetAnnotations(map[string]string{fencing.AfterAnnotation: after})
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func deployment(name string, replicas int32, action, after string) *unstructured.Unstructured {
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: "uid-" + "name"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
	marked(d, action, after)
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	return &unstructured.Unstructured{Object: m}
}

func newFencer(t *testing.T, r *fakeRenewals, clk *clocktesting.FakeClock, objs ...runtime.Object) (*Fencer, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		deployments: "DeploymentList", configmaps: "ConfigMapList",
	}, objs...)
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: metav1.Verbs{"get", "list", "update", "delete"}},
			{Name: "deployments/scale", Namespaced: true, Kind: "Scale", Verbs: metav1.Verbs{"get", "update"}},
		}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"get", "list", "update", "delete"}},
		}},
	}}}
	return &Fencer{
		Renewals: r, LeaseDuration: 40 * time.Second, Member: dyn, Discovery: disc,
		Replicas: interpreter.NewDefault(), Clock: clk, Tick: time.Second, Scan: time.Second,
	}, dyn
}

func replicasOf(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) (int64, bool) {
	t.Helper()
	obj, err := dyn.Resource(deployments).Namespace("app").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return 0, false
	}
	r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return r, true
}

// Each marked copy is stopped once the Lease has gone unrenewed for the
// lease duration plus its own toleration, and not before; unmarked objects
// are never touched.
func TestFencerStopsDueCopiesOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r := &fakeRenewals{last: t0, attempted: true}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings", UID: "cm"}}
	marked(cm, "ScaleToZero", "")
	f, dyn := newFencer(t, r, clk,
		deployment("now", 3, "ScaleToZero", ""),
		deployment("later", 2, "ScaleToZero", "30"),
		deployment("gone", 1, "Delete", ""),
		deployment("free", 4, "", ""),
		toUnstructured(t, cm),
	)
	ctx := context.Background()

	clk.SetTime(t0.Add(39 * time.Second))
	if n, err := f.scan(ctx, clk.Now()); err != nil || n != 0 {
		t.Fatalf("scan before the lease duration: %d stopped, %v", n, err)
	}
	if got, _ := replicasOf(t, dyn, "now"); got != 3 {
		t.Errorf("now: replicas %d before it is due", got)
	}

	clk.SetTime(t0.Add(40 * time.Second))
	if n, err := f.scan(ctx, clk.Now()); err != nil || n != 3 {
		t.Fatalf("scan at the lease duration: %d stopped, %v; want 3", n, err)
	}
	if got, _ := replicasOf(t, dyn, "now"); got != 0 {
		t.Errorf("now: replicas %d, want 0", got)
	}
	if obj, err := dyn.Resource(deployments).Namespace("app").Get(ctx, "now", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if n, ok := fencing.FencedReplicas(obj.GetAnnotations()); !ok || n != 3 {
		t.Errorf("now: the replicas it had recorded as %d, %t; want 3 (annotations %v)", n, ok, obj.GetAnnotations())
	}
	if got, _ := replicasOf(t, dyn, "later"); got != 2 {
		t.Errorf("later (30 s toleration): replicas %d, want 2 until it is due", got)
	}
	if _, ok := replicasOf(t, dyn, "gone"); ok {
		t.Error("gone (Delete) still exists")
	}
	if got, _ := replicasOf(t, dyn, "free"); got != 4 {
		t.Errorf("free (no marks): replicas %d, want 4", got)
	}
	if _, err := dyn.Resource(configmaps).Namespace("app").Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Error("a marked ConfigMap, which has no replicas, was not deleted")
	}

	clk.SetTime(t0.Add(70 * time.Second))
	if _, err := f.scan(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := replicasOf(t, dyn, "later"); got != 0 {
		t.Errorf("later: replicas %d at 70 s, want 0", got)
	}
}

// Holds follows the same rule; before the first renewal was tried nothing
// is due, and a first renewal that failed makes everything due at once.
func TestFencerHolds(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r := &fakeRenewals{}
	f, _ := newFencer(t, r, clk)
	if f.due(fencing.Spec{}, t0) {
		t.Error("due before the first renewal was tried")
	}
	r.attempted = true
	if !f.due(fencing.Spec{After: time.Hour}, t0) {
		t.Error("not due although the Lease was never renewed by this process")
	}
	r.last = t0
	if f.due(fencing.Spec{}, t0.Add(39*time.Second)) || !f.due(fencing.Spec{}, t0.Add(40*time.Second)) {
		t.Error("due does not turn at the lease duration")
	}
}

// After a fencing, a fenced Work is applied again only once the control
// plane holds it as the cache does: a Work deleted or changed during the
// partition, which the cache has not caught up with, would otherwise start
// a copy beside its replacement. Confirmed once per outage.
func TestFencerHoldsUntilTheControlPlaneConfirmsTheWork(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	r := &fakeRenewals{last: t0, attempted: true}
	f, _ := newFencer(t, r, clk)
	raw, err := deployment("web", 2, string(policyv1alpha1.FencingScaleToZero), "").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	cached := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-edge1", Name: "web", ResourceVersion: "10"}}
	cached.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	unmarked := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-edge1", Name: "plain", ResourceVersion: "3"}}

	reads := 0
	var live *workv1alpha1.Work // nil: not found
	var readErr error
	f.Works = readerFunc(func(_ context.Context, key client.ObjectKey, obj client.Object) error {
		reads++
		if readErr != nil {
			return readErr
		}
		if live == nil {
			return apierrors.NewNotFound(workv1alpha1.Resource("works"), key.Name)
		}
		live.DeepCopyInto(obj.(*workv1alpha1.Work))
		return nil
	})
	ctx := context.Background()

	if f.Holds(ctx, cached) || reads != 0 {
		t.Fatalf("no fencing in this process: held %t after %d reads, want applied without a read", f.Holds(ctx, cached), reads)
	}
	f.stopped()
	clk.SetTime(t0.Add(time.Minute))
	if !f.Holds(ctx, cached) || reads != 0 {
		t.Fatalf("due: want held without a read (reads %d)", reads)
	}
	r.mu.Lock()
	r.last = clk.Now() // the partition heals
	r.mu.Unlock()

	deleting := cached.DeepCopy()
	deleting.ResourceVersion, deleting.DeletionTimestamp = "11", &metav1.Time{Time: t0}
	changed := cached.DeepCopy()
	changed.ResourceVersion = "12"
	for _, tc := range []struct {
		name string
		live *workv1alpha1.Work
		err  error
	}{
		{"deleted in the control plane", nil, nil},
		{"being deleted there", deleting, nil},
		{"changed there", changed, nil},
		{"the control plane does not answer", cached, errors.New("i/o timeout")},
	} {
		live, readErr = tc.live, tc.err
		if !f.Holds(ctx, cached) {
			t.Errorf("%s: the fenced copy's cached Work is applied again", tc.name)
		}
	}
	if f.Holds(ctx, unmarked) {
		t.Error("a Work without fencing marks is held")
	}
	live, readErr = cached, nil
	if f.Holds(ctx, cached) {
		t.Fatal("the control plane holds the Work as cached: still held")
	}
	before := reads
	live, readErr = nil, errors.New("no longer asked")
	if f.Holds(ctx, cached) || reads != before {
		t.Errorf("confirmed once: held %t, %d more reads; want applied without asking again", f.Holds(ctx, cached), reads-before)
	}

	// The next outage asks again.
	f.mu.Lock()
	f.fenced = false
	f.mu.Unlock()
	f.stopped()
	if !f.Holds(ctx, cached) {
		t.Error("a new outage: the Work was not confirmed again")
	}
}

// readerFunc is a client.Reader of single objects.
type readerFunc func(ctx context.Context, key client.ObjectKey, obj client.Object) error

func (f readerFunc) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return f(ctx, key, obj)
}

func (f readerFunc) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// Once the Lease is renewed after a fencing, OnUnfenced runs once.
func TestFencerUnfences(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0.Add(time.Minute))
	r := &fakeRenewals{last: t0, attempted: true}
	f, _ := newFencer(t, r, clk, deployment("now", 3, "ScaleToZero", ""))
	unfenced := make(chan struct{}, 10)
	f.SetOnUnfenced(func(context.Context) { unfenced <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = f.Start(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		fenced := f.fenced
		f.mu.Unlock()
		if fenced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fencer did not fence")
		}
		time.Sleep(10 * time.Millisecond)
		clk.Step(time.Second)
	}
	r.mu.Lock()
	r.last = clk.Now()
	r.mu.Unlock()
	for len(unfenced) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("OnUnfenced was not called after the renewal")
		}
		time.Sleep(10 * time.Millisecond)
		clk.Step(time.Second)
	}
	cancel()
	<-done
	if len(unfenced) != 1 {
		t.Errorf("OnUnfenced called %d times, want 1", len(unfenced))
	}
}

// scriptedReplicas stands for an interpreter with a customization: its
// replica rule fails, or it has no rule to revise the replicas.
type scriptedReplicas struct {
	Replicas
	getErr    error
	noRevised bool
}

func (s scriptedReplicas) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error) {
	if s.getErr != nil {
		return 0, nil, false, s.getErr
	}
	return s.Replicas.GetReplicas(obj)
}

func (s scriptedReplicas) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	if s.noRevised {
		return obj.DeepCopy(), nil
	}
	return s.Replicas.ReviseReplica(obj, replicas)
}

// A ScaleToZero copy whose replica script fails is not deleted at once: the
// scan reports the error and tries again, for DefaultScaleRetry past its due
// time; then it is deleted, before the control plane counts it stopped. One
// whose kind reports replicas but has no rule to change them is deleted,
// never written back running and counted as stopped.
func TestFencerScaleToZeroWithAScriptedKind(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	t.Run("the replica script fails", func(t *testing.T) {
		// Due at 40 s (the Lease duration); the control plane counts it
		// stopped at 70 s (its default margin, 30 s).
		clk := clocktesting.NewFakeClock(t0.Add(40 * time.Second))
		f, dyn := newFencer(t, &fakeRenewals{last: t0, attempted: true}, clk, deployment("web", 3, "ScaleToZero", ""))
		f.Replicas = scriptedReplicas{Replicas: f.Replicas, getErr: errors.New("script error: attempt to index a nil value")}
		for _, at := range []time.Duration{40 * time.Second, 49 * time.Second} {
			clk.SetTime(t0.Add(at))
			n, err := f.scan(ctx, clk.Now())
			if err == nil || n != 0 {
				t.Errorf("scan at %s: %d stopped, error %v; want 0 and the script's error", at, n, err)
			}
			if got, ok := replicasOf(t, dyn, "web"); !ok || got != 3 {
				t.Errorf("web at %s: replicas %d, exists %t; want it kept at 3 while its script is tried again", at, got, ok)
			}
		}
		clk.SetTime(t0.Add(50 * time.Second))
		if n, err := f.scan(ctx, clk.Now()); err != nil || n != 1 {
			t.Errorf("scan at 50 s: %d stopped, %v; want it stopped", n, err)
		}
		if got, ok := replicasOf(t, dyn, "web"); ok {
			t.Errorf("web still runs %d replicas %s past its due time, before the control plane counts it stopped", got, DefaultScaleRetry)
		}
	})
	t.Run("no rule revises the replicas", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0.Add(time.Minute))
		f, dyn := newFencer(t, &fakeRenewals{last: t0, attempted: true}, clk, deployment("web", 3, "ScaleToZero", ""))
		f.Replicas = scriptedReplicas{Replicas: f.Replicas, noRevised: true}
		if n, err := f.scan(ctx, clk.Now()); err != nil || n != 1 {
			t.Fatalf("scan: %d stopped, %v; want 1", n, err)
		}
		if got, ok := replicasOf(t, dyn, "web"); ok {
			t.Errorf("web still exists with %d replicas: counted as stopped while it runs", got)
		}
	})
}

// A copy is deleted only in the version that was judged due: when it
// changed between the scan's list and the delete, it is read again and
// deleted only if it is still the same copy, still marked and due.
func TestFencerDeletesOnlyTheCopyItJudged(t *testing.T) {
	renewNow := false
	for name, tc := range map[string]struct {
		change      func(obj *unstructured.Unstructured)
		wantDeleted bool
	}{
		"its status changed, still marked": {
			change: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(obj.Object, int64(2), "status", "observedGeneration")
			},
			wantDeleted: true,
		},
		"its marks were removed": {
			change: func(obj *unstructured.Unstructured) { obj.SetLabels(nil) },
		},
		"its toleration grew": {
			change: func(obj *unstructured.Unstructured) {
				obj.SetAnnotations(map[string]string{fencing.AfterAnnotation: "300"})
			},
		},
		"it was replaced by another copy": {
			change: func(obj *unstructured.Unstructured) { obj.SetUID("uid-new") },
		},
		"its action became ScaleToZero": {
			change: func(obj *unstructured.Unstructured) {
				obj.SetLabels(map[string]string{fencing.ActionLabel: "ScaleToZero"})
			},
		},
		"the Lease was renewed meanwhile": {
			change: func(*unstructured.Unstructured) { renewNow = true },
		},
	} {
		t.Run(name, func(t *testing.T) {
			renewNow = false
			t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			clk := clocktesting.NewFakeClock(t0.Add(41 * time.Second))
			r := &fakeRenewals{last: t0, attempted: true}
			copy := deployment("web", 1, "Delete", "")
			copy.SetResourceVersion("1")
			f, dyn := newFencer(t, r, clk, copy)
			deletes := 0
			dyn.PrependReactor("delete", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
				deletes++
				del := action.(clienttesting.DeleteActionImpl)
				live, err := dyn.Tracker().Get(deployments, "app", del.Name)
				if err != nil {
					return true, nil, err
				}
				current := live.(*unstructured.Unstructured)
				if deletes == 1 {
					// Changed by someone else after the scan listed it.
					current = current.DeepCopy()
					tc.change(current)
					if renewNow {
						r.mu.Lock()
						r.last = clk.Now()
						r.mu.Unlock()
					}
					current.SetResourceVersion("2")
					if err := dyn.Tracker().Update(deployments, current, "app"); err != nil {
						return true, nil, err
					}
				}
				p := del.DeleteOptions.Preconditions
				if p == nil || p.UID == nil || p.ResourceVersion == nil {
					t.Errorf("delete %d without UID and resourceVersion preconditions: %+v", deletes, p)
				} else if *p.UID != current.GetUID() || *p.ResourceVersion != current.GetResourceVersion() {
					return true, nil, apierrors.NewConflict(deployments.GroupResource(), del.Name, errors.New("the object has been modified"))
				}
				return false, nil, nil
			})

			n, err := f.scan(context.Background(), clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			_, exists := replicasOf(t, dyn, "web")
			switch {
			case tc.wantDeleted && (exists || n != 1):
				t.Errorf("still there after %d deletes (%d counted stopped); want it deleted", deletes, n)
			case !tc.wantDeleted && !exists:
				t.Errorf("deleted after %d deletes; want it left running", deletes)
			case !tc.wantDeleted && n != 0:
				t.Errorf("%d counted stopped; want 0 for a copy left running", n)
			}
		})
	}
}

// A ScaleToZero copy whose status changed between the scan's list and the
// update is read again and scaled to zero, not deleted.
func TestFencerScalesACopyThatChangedSinceItWasListed(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0.Add(41 * time.Second))
	r := &fakeRenewals{last: t0, attempted: true}
	copy := deployment("web", 3, "ScaleToZero", "")
	copy.SetResourceVersion("1")
	f, dyn := newFencer(t, r, clk, copy)
	updates := 0
	dyn.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		updates++
		sent := action.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		live, err := dyn.Tracker().Get(deployments, "app", sent.GetName())
		if err != nil {
			return true, nil, err
		}
		current := live.(*unstructured.Unstructured)
		if updates == 1 {
			current = current.DeepCopy()
			_ = unstructured.SetNestedField(current.Object, int64(3), "status", "readyReplicas")
			current.SetResourceVersion("2")
			if err := dyn.Tracker().Update(deployments, current, "app"); err != nil {
				return true, nil, err
			}
		}
		if sent.GetResourceVersion() != current.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(deployments.GroupResource(), sent.GetName(), errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	dyn.PrependReactor("delete", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		t.Error("a ScaleToZero copy that changed was deleted")
		return false, nil, nil
	})
	if n, err := f.scan(context.Background(), clk.Now()); err != nil || n != 1 {
		t.Fatalf("scan: %d stopped, %v; want 1", n, err)
	}
	if got, ok := replicasOf(t, dyn, "web"); !ok || got != 0 {
		t.Errorf("replicas %d (exists %t) after %d updates; want scaled to 0", got, ok, updates)
	}
}
