package workstatus

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// fakeInterpreter reflects the whole status and says Healthy when
// status.readyReplicas equals spec.replicas; objects labelled broken make
// both rules fail.
type fakeInterpreter struct{ interpreter.Interpreter }

func (fakeInterpreter) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	if obj.GetLabels()["broken"] == "true" {
		return nil, errors.New("no rule")
	}
	status, ok := obj.Object["status"]
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(status)
	return &runtime.RawExtension{Raw: raw}, err
}

func (fakeInterpreter) InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	if obj.GetLabels()["broken"] == "true" {
		return "", errors.New("lua error")
	}
	want, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	if want == ready {
		return workv1alpha1.ResourceHealthy, nil
	}
	return workv1alpha1.ResourceUnhealthy, nil
}

type driftRecorder struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

func (d *driftRecorder) NotifyDrift(k types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = append(d.keys, k)
}

func (d *driftRecorder) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys)
}

func deployment(name string, replicas, ready int64, workName string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{
			"name": name, "namespace": "default",
			"labels": map[string]interface{}{membercluster.ManagedLabel: "true"},
			"annotations": map[string]interface{}{
				workv1alpha1.WorkNamespaceAnnotation: "karmada-es-member1",
				workv1alpha1.WorkNameAnnotation:      workName,
			},
		},
		"spec":   map[string]interface{}{"replicas": replicas},
		"status": map[string]interface{}{"readyReplicas": ready},
	}}
	return u
}

func work(name string, applied bool, manifests ...*unstructured.Unstructured) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterv1alpha1.ExecutionSpacePrefix + "member1", Generation: 1}}
	for _, m := range manifests {
		m = m.DeepCopy()
		delete(m.Object, "status")
		raw, _ := json.Marshal(m.Object)
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	if applied {
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedSuccessful", LastTransitionTime: metav1.Now()}}
	}
	return w
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	client client.Client
	env    *mct.Env
	r      *Reconciler
	drift  *driftRecorder
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(append(mct.ClusterObjects("member1"), objs...)...).
		WithStatusSubresource(&workv1alpha1.Work{}).Build()
	env := mct.New(cl)
	t.Cleanup(env.Cache.Stop)
	f := &fixture{t: t, ctx: context.Background(), client: cl, env: env, drift: &driftRecorder{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())}
	t.Cleanup(f.queue.ShutDown)
	f.r = &Reconciler{Client: cl, Interpreter: fakeInterpreter{}, Members: env.Cache, Drift: f.drift}
	f.r.queue.Set(f.queue)
	return f
}

func (f *fixture) reconcile(w *workv1alpha1.Work) *workv1alpha1.Work {
	f.t.Helper()
	if _, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	var got workv1alpha1.Work
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		f.t.Fatal(err)
	}
	return &got
}

// waitWatching waits (bounded) until member1's Deployment informer has
// opened its watch: the fake member does not replay changes made between
// the informer's list and its watch, so a change made before this is lost.
func (f *fixture) waitWatching() {
	f.t.Helper()
	select {
	case <-f.env.WatchStarted("member1", mct.Deployments):
	case <-time.After(10 * time.Second):
		f.t.Fatal("the member informer did not start watching")
	}
}

// waitQueued waits (bounded) until a member event enqueued w.
func (f *fixture) waitQueued(w *workv1alpha1.Work) {
	f.t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		req, shutdown := f.queue.Get()
		if !shutdown {
			f.queue.Done(req)
			got <- req
		}
	}()
	select {
	case req := <-got:
		if req.NamespacedName != client.ObjectKeyFromObject(w) {
			f.t.Fatalf("enqueued %v, want %v", req.NamespacedName, client.ObjectKeyFromObject(w))
		}
	case <-time.After(10 * time.Second):
		f.t.Fatal("the member event did not enqueue the Work")
	}
}

func TestReportsStatusOnTheInformersFirstEvent(t *testing.T) {
	w := work("nginx", true, deployment("nginx", 2, 0, "nginx"))
	f := newFixture(t, w)
	f.env.Put("member1", mct.Deployments, deployment("nginx", 2, 1, "nginx"))

	// The Work's own event registers the watch; the informer's Added
	// event brings the Work back.
	f.reconcile(w)
	f.waitQueued(w)
	got := f.reconcile(w)

	if len(got.Status.ManifestStatuses) != 1 {
		t.Fatalf("manifestStatuses = %+v", got.Status.ManifestStatuses)
	}
	ms := got.Status.ManifestStatuses[0]
	wantID := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "nginx"}
	if ms.Identifier != wantID {
		t.Errorf("identifier = %+v", ms.Identifier)
	}
	if ms.Health != workv1alpha1.ResourceUnhealthy {
		t.Errorf("health = %s", ms.Health)
	}
	if ms.Status == nil || string(ms.Status.Raw) != `{"readyReplicas":1}` {
		t.Errorf("status = %v", ms.Status)
	}

	// Nothing changed: nothing is written.
	rv := got.ResourceVersion
	if again := f.reconcile(w); again.ResourceVersion != rv {
		t.Error("a reconcile with nothing to do wrote the Work")
	}

	// The member becomes ready.
	f.waitWatching()
	ready := deployment("nginx", 2, 2, "nginx")
	if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitQueued(w)
	if got := f.reconcile(w); got.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceHealthy {
		t.Errorf("health after the member is ready = %s", got.Status.ManifestStatuses[0].Health)
	}
}

func TestMissingObjectIsHandedToExecution(t *testing.T) {
	w := work("nginx", true, deployment("nginx", 1, 1, "nginx"))
	f := newFixture(t, w)
	f.env.Put("member1", mct.Deployments, deployment("nginx", 1, 1, "nginx"))
	f.reconcile(w)
	f.waitQueued(w)
	before := f.reconcile(w)
	if len(before.Status.ManifestStatuses) != 1 {
		t.Fatalf("manifestStatuses = %+v", before.Status.ManifestStatuses)
	}

	f.waitWatching()
	if err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Delete(f.ctx, "nginx", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitQueued(w)
	after := f.reconcile(w)

	if f.drift.count() != 1 {
		t.Fatalf("drift notifications = %d, want 1", f.drift.count())
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Error("a missing object must not rewrite the status")
	}
}

func TestObjectOfAnotherWorkIsNotReported(t *testing.T) {
	w := work("nginx", false, deployment("nginx", 1, 1, "nginx"))
	f := newFixture(t, w)
	f.env.Put("member1", mct.Deployments, deployment("nginx", 1, 1, "someone-else"))
	f.reconcile(w)
	// The other Work's object is announced; ours is not there.
	f.waitQueued(&workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-member1", Name: "someone-else"}})

	if got := f.reconcile(w); len(got.Status.ManifestStatuses) != 0 {
		t.Fatalf("manifestStatuses = %+v", got.Status.ManifestStatuses)
	}
	if f.drift.count() != 0 {
		t.Error("a Work that is not applied yet must not be handed to execution")
	}
}

func TestObserve(t *testing.T) {
	id := workv1alpha1.ResourceIdentifier{Kind: "Deployment", Name: "x"}
	broken := deployment("x", 1, 1, "x")
	broken.SetLabels(map[string]string{"broken": "true"})
	noStatus := deployment("x", 1, 0, "x")
	delete(noStatus.Object, "status")
	cases := map[string]struct {
		obj        *unstructured.Unstructured
		health     workv1alpha1.ResourceHealth
		withStatus bool
		errs       bool
	}{
		"healthy":          {deployment("x", 1, 1, "x"), workv1alpha1.ResourceHealthy, true, false},
		"unhealthy":        {deployment("x", 2, 1, "x"), workv1alpha1.ResourceUnhealthy, true, false},
		"rules fail":       {broken, workv1alpha1.ResourceUnknown, false, true},
		"no status at all": {noStatus, workv1alpha1.ResourceUnhealthy, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ms, statusErr, healthErr := Observe(fakeInterpreter{}, id, tc.obj)
			if ms.Health != tc.health || (ms.Status != nil) != tc.withStatus || (statusErr != nil || healthErr != nil) != tc.errs {
				t.Errorf("Observe = %+v, %v, %v", ms, statusErr, healthErr)
			}
		})
	}

	// The report says which version of the Work the object was applied
	// from; an object that does not say is of no known version.
	applied := deployment("x", 1, 1, "x")
	applied.SetAnnotations(map[string]string{workv1alpha1.WorkGenerationAnnotation: "5"})
	if ms, _, _ := Observe(fakeInterpreter{}, id, applied); ms.ObservedGeneration != 5 {
		t.Errorf("observedGeneration = %d, want 5", ms.ObservedGeneration)
	}
	if ms, _, _ := Observe(fakeInterpreter{}, id, deployment("x", 1, 1, "x")); ms.ObservedGeneration != 0 {
		t.Errorf("observedGeneration = %d without the annotation, want 0", ms.ObservedGeneration)
	}
}

func TestEqual(t *testing.T) {
	id := workv1alpha1.ResourceIdentifier{Kind: "Deployment", Name: "x"}
	st := func(raw string, h workv1alpha1.ResourceHealth) []workv1alpha1.ManifestStatus {
		ms := workv1alpha1.ManifestStatus{Identifier: id, Health: h}
		if raw != "" {
			ms.Status = &runtime.RawExtension{Raw: []byte(raw)}
		}
		return []workv1alpha1.ManifestStatus{ms}
	}
	cases := map[string]struct {
		a, b []workv1alpha1.ManifestStatus
		want bool
	}{
		"same":                   {st(`{"a":1}`, "Healthy"), st(`{"a":1}`, "Healthy"), true},
		"formatting and order":   {st(`{"a":1,"b":2}`, "Healthy"), st(`{ "b": 2, "a": 1 }`, "Healthy"), true},
		"status differs":         {st(`{"a":1}`, "Healthy"), st(`{"a":2}`, "Healthy"), false},
		"health differs":         {st(`{"a":1}`, "Healthy"), st(`{"a":1}`, "Unknown"), false},
		"status appears":         {st("", "Healthy"), st(`{"a":1}`, "Healthy"), false},
		"both without status":    {st("", "Healthy"), st("", "Healthy"), true},
		"length differs":         {nil, st("", "Healthy"), false},
		"empty and nil are same": {nil, []workv1alpha1.ManifestStatus{}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Equal(tc.a, tc.b); got != tc.want {
				t.Errorf("Equal = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestStatusMayHaveChanged(t *testing.T) {
	base := deployment("x", 1, 0, "x")
	rvOnly := base.DeepCopy()
	rvOnly.SetResourceVersion("9")
	statusChanged := deployment("x", 1, 1, "x")
	generation := base.DeepCopy()
	generation.SetGeneration(2)
	specOnly := base.DeepCopy()
	_ = unstructured.SetNestedField(specOnly.Object, "x", "spec", "paused")
	annotated := base.DeepCopy()
	annotated.SetAnnotations(map[string]string{"a": "b"})
	cases := map[string]struct {
		e    membercluster.Event
		want bool
	}{
		"added":              {membercluster.Event{Type: membercluster.Added, Object: pack(t, base)}, true},
		"deleted":            {membercluster.Event{Type: membercluster.Deleted, Object: pack(t, base)}, true},
		"resourceVersion":    {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, rvOnly)}, false},
		"spec only":          {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, specOnly)}, false},
		"status changed":     {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, statusChanged)}, true},
		"generation changed": {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, generation)}, true},
		"annotation changed": {membercluster.Event{Type: membercluster.Updated, Old: pack(t, base), Object: pack(t, annotated)}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StatusMayHaveChanged(tc.e); got != tc.want {
				t.Errorf("StatusMayHaveChanged = %t, want %t", got, tc.want)
			}
		})
	}
}
func TestNews(t *testing.T) {
	id := func(name string) workv1alpha1.ResourceIdentifier {
		return workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "Deployment", Group: "apps", Namespace: "ns", Name: name}
	}
	st := func(name, ready string, h workv1alpha1.ResourceHealth) workv1alpha1.ManifestStatus {
		return workv1alpha1.ManifestStatus{Identifier: id(name), Health: h,
			Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":` + ready + `}`)}}
	}
	tests := map[string]struct {
		a, b []workv1alpha1.ManifestStatus
		want bool
	}{
		"figures only":     {[]workv1alpha1.ManifestStatus{st("a", "0", "Unhealthy")}, []workv1alpha1.ManifestStatus{st("a", "1", "Unhealthy")}, false},
		"health":           {[]workv1alpha1.ManifestStatus{st("a", "1", "Unhealthy")}, []workv1alpha1.ManifestStatus{st("a", "1", "Healthy")}, true},
		"first status":     {nil, []workv1alpha1.ManifestStatus{st("a", "0", "Unhealthy")}, true},
		"another manifest": {[]workv1alpha1.ManifestStatus{st("a", "0", "Healthy")}, []workv1alpha1.ManifestStatus{st("b", "0", "Healthy")}, true},
		"a manifest added": {[]workv1alpha1.ManifestStatus{st("a", "0", "Healthy")}, []workv1alpha1.ManifestStatus{st("a", "0", "Healthy"), st("b", "0", "Healthy")}, true},
		"nothing changed":  {[]workv1alpha1.ManifestStatus{st("a", "0", "Healthy")}, []workv1alpha1.ManifestStatus{st("a", "0", "Healthy")}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := News(tc.a, tc.b); got != tc.want {
				t.Errorf("News = %v, want %v", got, tc.want)
			}
		})
	}
}

// packed is the member object as the member cache holds it.
func pack(t *testing.T, u *unstructured.Unstructured) *packed.Object {
	t.Helper()
	o, err := packed.New(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOnlyStarting(t *testing.T) {
	id := func(name string) workv1alpha1.ResourceIdentifier {
		return workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "Deployment", Group: "apps", Namespace: "ns", Name: name}
	}
	st := func(name, ready string, h workv1alpha1.ResourceHealth) workv1alpha1.ManifestStatus {
		return workv1alpha1.ManifestStatus{Identifier: id(name), Health: h,
			Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":` + ready + `}`)}}
	}
	list := func(s ...workv1alpha1.ManifestStatus) []workv1alpha1.ManifestStatus { return s }
	tests := map[string]struct {
		a, b []workv1alpha1.ManifestStatus
		want bool
	}{
		"first report, Unhealthy":           {nil, list(st("a", "0", "Unhealthy")), true},
		"first report, Unknown":             {nil, list(st("a", "0", "Unknown")), true},
		"first report, Healthy":             {nil, list(st("a", "1", "Healthy")), false},
		"a second object's first report":    {list(st("a", "1", "Healthy")), list(st("a", "1", "Healthy"), st("b", "0", "Unhealthy")), true},
		"first report beside a change":      {list(st("a", "1", "Healthy")), list(st("a", "0", "Unhealthy"), st("b", "0", "Unhealthy")), false},
		"a reported object's figures":       {list(st("a", "0", "Unhealthy")), list(st("a", "1", "Unhealthy")), false},
		"a reported object turns Unhealthy": {list(st("a", "1", "Healthy")), list(st("a", "0", "Unhealthy")), false},
		"an entry removed":                  {list(st("a", "1", "Healthy"), st("b", "0", "Unhealthy")), list(st("b", "0", "Unhealthy")), false},
		"nothing new":                       {list(st("a", "0", "Unhealthy")), list(st("a", "0", "Unhealthy")), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := OnlyStarting(tc.a, tc.b); got != tc.want {
				t.Errorf("OnlyStarting = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFirstReportWaitsForHealthy: the first report of a member object that
// is not Healthy yet waits up to firstReportGrace; Healthy within it is the
// first write, and an object still starting after it is reported as it is.
func TestFirstReportWaitsForHealthy(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	w := work("nginx", true, deployment("nginx", 2, 0, "nginx"))
	slow := work("slow", true, deployment("slow", 2, 0, "slow"))
	f := newFixture(t, w, slow)
	f.r.Starting = coalesce.NewQuiet(firstReportGrace, clk)
	f.env.Put("member1", mct.Deployments, deployment("nginx", 2, 0, "nginx"))
	f.env.Put("member1", mct.Deployments, deployment("slow", 2, 0, "slow"))

	held := func(w *workv1alpha1.Work, want time.Duration) {
		t.Helper()
		res, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		if err != nil {
			t.Fatal(err)
		}
		var got workv1alpha1.Work
		if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(w), &got); err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != want || len(got.Status.ManifestStatuses) != 0 {
			t.Errorf("%s: requeue after %v, manifestStatuses %+v; want %v and none", w.Name, res.RequeueAfter, got.Status.ManifestStatuses, want)
		}
	}
	// The first reconciles register the watches; the informers' Added
	// events bring the Works back.
	f.reconcile(w)
	f.waitQueued(w)
	f.reconcile(slow)
	f.waitQueued(slow)
	held(w, firstReportGrace)
	held(slow, firstReportGrace)
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	held(w, firstReportGrace-300*time.Millisecond)

	f.waitWatching()
	ready := deployment("nginx", 2, 2, "nginx")
	if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitQueued(w)
	if got := f.reconcile(w); len(got.Status.ManifestStatuses) != 1 || got.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceHealthy {
		t.Errorf("after the object turned Healthy: manifestStatuses = %+v, want it Healthy", got.Status.ManifestStatuses)
	}

	clk.SetTime(clk.Now().Add(firstReportGrace))
	if got := f.reconcile(slow); len(got.Status.ManifestStatuses) != 1 || got.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceUnhealthy {
		t.Errorf("still starting after the grace: manifestStatuses = %+v, want it reported Unhealthy", got.Status.ManifestStatuses)
	}
}

// newHandoffFixture has a Work whose Deployment the member informer holds,
// Healthy, not reported yet, and a Handoff wired as the controller manager
// wires it. before is the Work once the informer's event brought it back.
func newHandoffFixture(t *testing.T) (f *fixture, w, before *workv1alpha1.Work, echoes *coalesce.Recent, clk *clocktesting.FakePassiveClock) {
	t.Helper()
	clk = clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	w = work("nginx", false, deployment("nginx", 2, 0, "nginx"))
	f = newFixture(t, w)
	echoes = coalesce.NewRecent(0, clk)
	f.r.Handoff = coalesce.NewHandoff[[]metav1.Condition](HandoffWait, echoes, clk)
	// The first pass starts the member informer; the object appears after
	// it, as one the execution controller has just created.
	f.reconcile(w)
	f.waitWatching()
	f.env.Put("member1", mct.Deployments, deployment("nginx", 2, 2, "nginx"))
	f.waitQueued(w)
	before = &workv1alpha1.Work{}
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(w), before); err != nil {
		t.Fatal(err)
	}
	return f, w, before, echoes, clk
}

// The execution controller's conditions for a new object go into the first
// report of it: one write of the Work says both.
func TestFirstReportCarriesTheOfferedConditions(t *testing.T) {
	f, w, before, echoes, clk := newHandoffFixture(t)

	key := string(before.UID)
	offered := []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedSuccessful", LastTransitionTime: metav1.NewTime(clk.Now())}}
	if wait := f.r.Handoff.Offer(key, offered, "applied", true); wait != HandoffWait {
		t.Fatalf("offer waits %v, want %v", wait, HandoffWait)
	}
	got := f.reconcile(w)

	if len(got.Status.ManifestStatuses) != 1 || got.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceHealthy {
		t.Errorf("manifestStatuses = %+v, want the object Healthy", got.Status.ManifestStatuses)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("conditions = %+v, want the offered Applied", got.Status.Conditions)
	}
	if writes := resourceVersion(t, got) - resourceVersion(t, before); writes != 1 {
		t.Errorf("%d writes of the Work, want 1", writes)
	}
	if f.r.Handoff.Pending() != 0 {
		t.Error("the offer is still pending after the report carried it")
	}
	if !echoes.Has(key, "applied") {
		t.Error("the execution controller is not told the conditions were written")
	}
}

func resourceVersion(t *testing.T, w *workv1alpha1.Work) int {
	t.Helper()
	n, err := strconv.Atoi(w.ResourceVersion)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", w.ResourceVersion, err)
	}
	return n
}

// Offered conditions replace the whole list: written over a Work that
// changed since it was read, they could undo newer conditions (the
// execution controller writing a failure, or a suspension, in between).
// Such a write must fail, and the offer must not count as delivered.
func TestOfferedConditionsDoNotUndoANewerWrite(t *testing.T) {
	f, w, before, echoes, clk := newHandoffFixture(t)

	newer := []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedFailed", Message: "newer", LastTransitionTime: metav1.NewTime(clk.Now())}}
	f.r.Client = interceptor.NewClient(f.client.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			// The execution controller's write lands first.
			var cur workv1alpha1.Work
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cur); err != nil {
				return err
			}
			cur.Status.Conditions = newer
			if err := c.Status().Update(ctx, &cur); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	offered := []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedSuccessful", LastTransitionTime: metav1.NewTime(clk.Now())}}
	f.r.Handoff.Offer(string(before.UID), offered, "applied", true)
	_, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	if !apierrors.IsConflict(err) {
		t.Fatalf("reconcile error = %v, want a conflict", err)
	}
	var got workv1alpha1.Work
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Message != "newer" {
		t.Errorf("Applied = %+v, want the newer write kept", c)
	}
	if echoes.Has(string(before.UID), "applied") {
		t.Error("an offer that was not written counts as delivered")
	}
}

// A Work deleted and created again keeps its name and generation 1. The
// copy of the earlier Work, which a lagging member informer may still hold
// after the member restarted, must not be reported for the new one: its
// Healthy would close a failback or failover before the new copy runs.
func TestCopyOfAnEarlierWorkIsNotReported(t *testing.T) {
	w := work("nginx", true, deployment("nginx", 2, 2, "nginx"))
	w.UID = "uid-of-the-new-work"
	stamped := func(ready int64, uid string) *unstructured.Unstructured {
		d := deployment("nginx", 2, ready, "nginx")
		d.SetAnnotations(map[string]string{
			workv1alpha1.WorkNamespaceAnnotation:  w.Namespace,
			workv1alpha1.WorkNameAnnotation:       w.Name,
			workv1alpha1.WorkGenerationAnnotation: "1",
			workv1alpha1.WorkUIDAnnotation:        uid,
		})
		return d
	}
	f := newFixture(t, w)
	f.env.Put("member1", mct.Deployments, stamped(2, "uid-of-the-earlier-work"))
	f.reconcile(w)
	f.waitQueued(w)
	if got := f.reconcile(w); len(got.Status.ManifestStatuses) != 0 {
		t.Fatalf("the earlier Work's copy was reported: %+v", got.Status.ManifestStatuses)
	}
	if f.drift.count() != 0 {
		t.Error("the object is there, only not applied from this Work yet: it must not be reported missing")
	}

	// The execution controller's apply stamps the object with this Work.
	f.waitWatching()
	if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, stamped(1, string(w.UID)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitQueued(w)
	got := f.reconcile(w)
	if len(got.Status.ManifestStatuses) != 1 || got.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceUnhealthy {
		t.Fatalf("manifestStatuses once applied from this Work = %+v, want its own (Unhealthy, 1 of 2 ready)", got.Status.ManifestStatuses)
	}
}

func TestAppliedFrom(t *testing.T) {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	cases := map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"this Work's":                       {annotations: map[string]string{workv1alpha1.WorkUIDAnnotation: "u2"}, want: true},
		"an earlier Work's of the name":     {annotations: map[string]string{workv1alpha1.WorkUIDAnnotation: "u1"}, want: false},
		"not stamped (applied before UIDs)": {annotations: map[string]string{workv1alpha1.WorkGenerationAnnotation: "1"}, want: true},
		"stamped empty":                     {annotations: map[string]string{workv1alpha1.WorkUIDAnnotation: ""}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Annotations: tc.annotations}
			if got := AppliedFrom(obj, w); got != tc.want {
				t.Errorf("AppliedFrom = %t, want %t", got, tc.want)
			}
		})
	}
}
