package orphans

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const grace = 2 * time.Minute

type fixture struct {
	t     *testing.T
	ctx   context.Context
	cp    client.Client
	env   *mct.Env
	clock *clocktesting.FakeClock
	rec   *events.FakeRecorder
	queue *fakeQueue

	objects    *ObjectReconciler
	namespaces *NamespaceReconciler
}

// newFixture has a Ready push cluster member1 whose member is a fake, plus
// objs in the control plane.
func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	all := mct.ClusterObjects("member1")
	all[0].(*clusterv1alpha1.Cluster).Status.Conditions = []metav1.Condition{{
		Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "ClusterReady", LastTransitionTime: metav1.Now(),
	}}
	all = append(all, objs...)
	cp := fake.NewClientBuilder().WithScheme(s).WithObjects(all...).
		WithIndex(&workv1alpha1.Work{}, IndexWorksByMemberNamespace, memberNamespaceIndex).Build()
	env := mct.New(cp)
	t.Cleanup(env.Cache.Stop)
	f := &fixture{
		t: t, ctx: context.Background(), cp: cp, env: env,
		clock: clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		rec:   events.NewFakeRecorder(100),
		queue: &fakeQueue{},
	}
	f.objects = &ObjectReconciler{
		Client: cp, APIReader: cp, Members: env.Cache, Recorder: f.rec, Clock: f.clock,
		Namespaces: f.queue, Options: Options{Grace: grace, ScanInterval: 10 * time.Minute},
	}
	f.namespaces = &NamespaceReconciler{Client: cp, Members: env.Cache, Recorder: f.rec, Clock: f.clock}
	return f
}

// fakeQueue records the namespaces handed to the namespace controller.
type fakeQueue struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

func (q *fakeQueue) Enqueue(cluster, namespace string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, types.NamespacedName{Namespace: cluster, Name: namespace})
}

func (q *fakeQueue) has(cluster, namespace string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range q.keys {
		if k == (types.NamespacedName{Namespace: cluster, Name: namespace}) {
			return true
		}
	}
	return false
}

func (f *fixture) scan() reconcile.Result {
	f.t.Helper()
	res, err := f.objects.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "member1"}})
	if err != nil {
		f.t.Fatalf("scan: %v", err)
	}
	return res
}

func (f *fixture) checkNamespace(ns string) reconcile.Result {
	f.t.Helper()
	res, err := f.namespaces.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "member1", Name: ns}})
	if err != nil {
		f.t.Fatalf("namespace check: %v", err)
	}
	return res
}

// deletes counts the delete requests sent to member1.
func (f *fixture) deletes() int {
	n := 0
	for _, a := range f.env.Member("member1").Actions() {
		if a.GetVerb() == "delete" {
			n++
		}
	}
	return n
}

// watch starts an informer of gvr in member1, as the execution and status
// controllers do for the kinds they apply, and waits until it holds n
// objects.
func (f *fixture) watch(gvr schema.GroupVersionResource, n int) {
	f.t.Helper()
	h := membercluster.Handler{Name: "test", OnEvent: func(membercluster.Event) {}}
	if err := f.env.Cache.Watch(f.ctx, "member1", gvr, h); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		held := f.env.Cache.EachCached("member1", gvr, func(*packed.Object) bool { got++; return true })
		if held && got == n {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the informer of %s: held %t, %d objects; want %d", gvr, held, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lists counts the list requests for gvr sent to member1, the informers'
// among them.
func (f *fixture) lists(gvr schema.GroupVersionResource) int {
	n := 0
	for _, a := range f.env.Member("member1").Actions() {
		if a.GetVerb() == "list" && a.GetResource() == gvr {
			n++
		}
	}
	return n
}

func (f *fixture) events() []string { return eventstest.DrainChan(f.rec.Events) }

func (f *fixture) put(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	f.env.Put("member1", gvr, obj)
}

func (f *fixture) exists(gvr schema.GroupVersionResource, ns, name string) bool {
	return f.env.Lookup("member1", gvr, ns, name) != nil
}

// work is a Work of member1 named name whose manifest is a ConfigMap in ns.
func work(name, ns string) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "karmada-es-member1"}}
	raw := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"` + ns + `"}}`)
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	return w
}

// namespaceWork is a Work of member1 named name whose manifest is the
// Namespace ns itself.
func namespaceWork(name, ns string) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "karmada-es-member1"}}
	raw := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`)
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	return w
}

// binding is the ResourceBinding team-a/<name>-deployment scheduled to
// clusters.
func binding(name string, clusters ...string) *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name + "-deployment"}}
	for _, c := range clusters {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c})
	}
	return rb
}

// namespace is a member namespace; created marks it as the execution
// controller does.
func namespace(name string, created bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	u.SetUID(types.UID("uid-ns-" + name))
	u.SetResourceVersion("1")
	if created {
		c := execution.NewCreatedNamespace(name)
		u.SetLabels(c.GetLabels())
		u.SetAnnotations(c.GetAnnotations())
	}
	return u
}
