package execution

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/coalesce"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

type fixture struct {
	t      *testing.T
	ctx    context.Context
	client client.Client
	env    *mct.Env
	r      *Reconciler
	events *record.FakeRecorder
	interp *fakeInterpreter
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// newFixture has members member1 and member2 (Clusters without status)
// plus objs in the control plane.
func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	all := append(mct.ClusterObjects("member1"), mct.ClusterObjects("member2")...)
	all = append(all, objs...)
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(all...).WithStatusSubresource(&workv1alpha1.Work{}).Build()
	env := mct.New(cl)
	t.Cleanup(env.Cache.Stop)
	f := &fixture{
		t: t, ctx: context.Background(), client: cl, env: env,
		events: record.NewFakeRecorder(100),
		interp: &fakeInterpreter{},
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()),
	}
	t.Cleanup(f.queue.ShutDown)
	f.r = &Reconciler{
		Client: cl, Recorder: f.events, Clock: clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		Interpreter: f.interp, Members: env.Cache,
	}
	f.r.queue.Set(f.queue)
	return f
}

// requests counts the requests the reconciler made to a member: informers'
// lists and watches, which retry on their own schedule, are left out.
func (f *fixture) requests(cluster string) int {
	n := 0
	for _, a := range f.env.Member(cluster).Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" {
			n++
		}
	}
	return n
}

func (f *fixture) reconcile(work *workv1alpha1.Work) (reconcile.Result, error) {
	f.t.Helper()
	return f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(work)})
}

func (f *fixture) mustReconcile(work *workv1alpha1.Work) reconcile.Result {
	f.t.Helper()
	res, err := f.reconcile(work)
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (f *fixture) get(work *workv1alpha1.Work) *workv1alpha1.Work {
	f.t.Helper()
	var got workv1alpha1.Work
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &got); err != nil {
		f.t.Fatalf("get Work: %v", err)
	}
	return &got
}

func (f *fixture) applied(work *workv1alpha1.Work) *metav1.Condition {
	return meta.FindStatusCondition(f.get(work).Status.Conditions, workv1alpha1.WorkApplied)
}

func (f *fixture) writes(cluster string) int {
	n := 0
	for _, a := range f.env.Member(cluster).Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

func TestAppliesNewWorkAndThenWritesNothing(t *testing.T) {
	work := MakeWork("nginx", "member1").Label(workv1alpha1.WorkPermanentIDLabel, "w-1").Manifest(deployment("nginx", 2)).Obj()
	f := newFixture(t, work)

	f.mustReconcile(work)

	got := f.env.Lookup("member1", mct.Deployments, "default", "nginx")
	if got == nil {
		t.Fatal("Deployment not applied")
	}
	if !IsManaged(got) || got.GetLabels()[workv1alpha1.WorkPermanentIDLabel] != "w-1" {
		t.Errorf("member labels = %v", got.GetLabels())
	}
	if key, ok := WorkOf("member1", got); !ok || key.Name != "nginx" {
		t.Errorf("member object does not map back to its Work: %v", got.GetAnnotations())
	}
	stored := f.get(work)
	if !strings.Contains(strings.Join(stored.Finalizers, ","), workv1alpha1.ExecutionControllerFinalizer) {
		t.Error("finalizer not added")
	}
	c := meta.FindStatusCondition(stored.Status.Conditions, workv1alpha1.WorkApplied)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonAppliedSuccessful {
		t.Fatalf("Applied = %+v", c)
	}
	if d := meta.FindStatusCondition(stored.Status.Conditions, workv1alpha1.WorkDispatching); d == nil || d.Status != metav1.ConditionTrue {
		t.Fatalf("Dispatching = %+v", d)
	}

	// Second pass: the member already holds it, nothing is written
	// anywhere.
	writes, rv := f.writes("member1"), stored.ResourceVersion
	f.mustReconcile(work)
	if f.writes("member1") != writes {
		t.Error("an up-to-date object was applied again")
	}
	if f.get(work).ResourceVersion != rv {
		t.Error("a reconcile with nothing to do wrote the Work")
	}
}

func TestCreatesMissingNamespaceFirst(t *testing.T) {
	work := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, work)
	f.env.RequireNamespaces = true

	f.mustReconcile(work)

	ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a")
	if ns == nil || !IsManaged(ns) || !CreatedByLifeboat(ns) {
		t.Fatalf("namespace = %v", ns)
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Fatal("ConfigMap not applied after creating its namespace")
	}
	if c := f.applied(work); c.Status != metav1.ConditionTrue {
		t.Fatalf("Applied = %+v", c)
	}
}

// A member's API server holds an apply into a namespace it lacks for a
// while before refusing it, so a new object's namespace is created before
// the object is applied, not after the refusal.
func TestNoApplyIntoAMissingNamespace(t *testing.T) {
	work := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, work)
	f.env.RequireNamespaces = true
	member := f.env.Member("member1")
	var refused int
	member.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if _, err := member.Tracker().Get(mct.Namespaces, "", "team-a"); apierrors.IsNotFound(err) {
			refused++
		}
		return false, nil, nil
	})

	f.mustReconcile(work)

	if refused != 0 {
		t.Errorf("%d applies were sent before the namespace existed", refused)
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Fatal("ConfigMap not applied")
	}
	ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a")
	if ns == nil || !CreatedByLifeboat(ns) {
		t.Fatalf("namespace = %v", ns)
	}
}

// An object whose namespace exists costs no namespace write.
func TestExistingNamespaceIsNotWritten(t *testing.T) {
	work := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, work)
	f.env.RequireNamespaces = true
	f.env.Put("member1", mct.Namespaces, NewCreatedNamespace("team-a"))

	f.mustReconcile(work)

	for _, a := range f.env.Member("member1").Actions() {
		if a.GetResource().Resource == "namespaces" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("namespace written although it exists: %s", a.GetVerb())
		}
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Fatal("ConfigMap not applied")
	}
}

func TestNamespaceSomeoneElseCreatedMeanwhileIsNotMarked(t *testing.T) {
	work := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, work)
	f.env.RequireNamespaces = true
	// Between the apply that finds no namespace and Lifeboat's create,
	// someone else creates it.
	member := f.env.Member("member1")
	member.PrependReactor("create", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		theirs := &unstructured.Unstructured{}
		theirs.SetAPIVersion("v1")
		theirs.SetKind("Namespace")
		theirs.SetName("team-a")
		if err := member.Tracker().Create(mct.Namespaces, theirs, ""); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "namespaces"}, "team-a")
	})

	f.mustReconcile(work)

	ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a")
	if ns == nil || CreatedByLifeboat(ns) {
		t.Fatalf("a namespace someone else created is marked as Lifeboat's: %v", ns)
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Fatal("ConfigMap not applied into the existing namespace")
	}
}

func TestObjectOfATerminatingNamespaceIsAppliedOnceItIsGone(t *testing.T) {
	work := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, work)
	f.env.RequireNamespaces = true
	f.env.Put("member1", mct.Namespaces, NewCreatedNamespace("team-a"))
	terminating := true
	f.env.Member("member1").PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !terminating {
			return false, nil, nil
		}
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm",
			errors.New("unable to create new content in namespace team-a because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
		return true, nil, err
	})

	res, err := f.reconcile(work)

	if err != nil {
		t.Fatalf("a terminating namespace is a wait, not an error: %v", err)
	}
	if res.RequeueAfter != NamespaceTerminatingRetry {
		t.Fatalf("requeue = %+v, want after %s", res, NamespaceTerminatingRetry)
	}
	if c := f.applied(work); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "being deleted") {
		t.Fatalf("Applied = %+v", c)
	}

	// The namespace is gone now: the next pass creates it and applies.
	terminating = false
	if err := f.env.Member("member1").Tracker().Delete(mct.Namespaces, "", "team-a"); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Fatal("the object was not applied once its namespace was gone")
	}
	if c := f.applied(work); c.Status != metav1.ConditionTrue {
		t.Fatalf("Applied = %+v", c)
	}
}

func TestConflictRule(t *testing.T) {
	cases := map[string]struct {
		resolution    string
		wantApplied   metav1.ConditionStatus
		wantOverwrite bool
	}{
		"no resolution aborts": {"", metav1.ConditionFalse, false},
		"abort aborts":         {"abort", metav1.ConditionFalse, false},
		"overwrite takes over": {"overwrite", metav1.ConditionTrue, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manifest := configMap("default", "settings", map[string]interface{}{"k": "lifeboat"})
			if tc.resolution != "" {
				manifest.SetAnnotations(map[string]string{workv1alpha1.ResourceConflictResolutionAnnotation: tc.resolution})
			}
			work := MakeWork("settings", "member1").Manifest(manifest).Obj()
			f := newFixture(t, work)
			f.env.Put("member1", mct.ConfigMaps, configMap("default", "settings", map[string]interface{}{"k": "theirs"}))

			res := f.mustReconcile(work)

			c := f.applied(work)
			if c.Status != tc.wantApplied {
				t.Fatalf("Applied = %+v", c)
			}
			data, _, _ := unstructured.NestedString(f.env.Lookup("member1", mct.ConfigMaps, "default", "settings").Object, "data", "k")
			if overwritten := data == "lifeboat"; overwritten != tc.wantOverwrite {
				t.Fatalf("member data = %q, overwritten %t, want %t", data, overwritten, tc.wantOverwrite)
			}
			if !tc.wantOverwrite {
				if c.Reason != ReasonResourceConflict || !strings.Contains(c.Message, "not managed by Lifeboat") {
					t.Errorf("Applied reason/message = %s: %s", c.Reason, c.Message)
				}
				if res.RequeueAfter != 2*time.Minute {
					t.Errorf("a conflict must be rechecked later, got %+v", res)
				}
				if ev := <-f.events.Events; !strings.Contains(ev, EventSyncFailed) {
					t.Errorf("event = %s", ev)
				}
			}
		})
	}
}

func TestSuspendedWorkIsNotApplied(t *testing.T) {
	work := MakeWork("nginx", "member1").Suspend().Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)

	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.Deployments, "default", "nginx") != nil {
		t.Fatal("a suspended Work was applied")
	}
	d := meta.FindStatusCondition(f.get(work).Status.Conditions, workv1alpha1.WorkDispatching)
	if d == nil || d.Status != metav1.ConditionFalse || d.Reason != ReasonSuspendDispatching {
		t.Fatalf("Dispatching = %+v", d)
	}
}

func TestNotReadyClusterIsWaitedFor(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	var cluster clusterv1alpha1.Cluster
	if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: "Down", LastTransitionTime: metav1.Now()}}
	if err := f.client.Update(f.ctx, &cluster); err != nil {
		t.Fatal(err)
	}

	res := f.mustReconcile(work)

	if len(f.env.Member("member1").Actions()) != 0 {
		t.Error("a not-ready member was called")
	}
	if res.RequeueAfter != 0 {
		t.Errorf("must wait for the Cluster event, not poll: %+v", res)
	}
}

func TestUnreachableMemberDoesNotBlockOthers(t *testing.T) {
	down := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	up := MakeWork("nginx", "member2").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, down, up)
	f.env.SetReachable("member1", false)

	res, err := f.reconcile(down)
	if err != nil {
		t.Fatalf("an unreachable member is a condition and a wait, not an error: %v", err)
	}
	if res.RequeueAfter <= 0 {
		t.Fatalf("expected a requeue after the member's back-off, got %+v", res)
	}
	if c := f.applied(down); c.Status != metav1.ConditionFalse || c.Reason != ReasonClusterUnreachable {
		t.Fatalf("Applied = %+v", c)
	}
	calls := f.requests("member1")

	// While member1 backs off, its Works fail fast and member2's apply.
	if _, err := f.reconcile(down); err != nil {
		t.Fatal(err)
	}
	if got := f.requests("member1"); got != calls {
		t.Errorf("member1 was called during its back-off (%d -> %d)", calls, got)
	}
	f.mustReconcile(up)
	if c := f.applied(up); c.Status != metav1.ConditionTrue {
		t.Fatalf("member2 Applied = %+v", c)
	}
}

func TestDriftIsCorrected(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	live := f.env.Lookup("member1", mct.Deployments, "default", "nginx")
	seen := f.observe("member1", mct.Deployments)

	// Someone scales the member object by hand. The informer sees it (so
	// the Work is reconciled against the new state); the handler under
	// test is then told. The fake API does not replay a change made while
	// an informer is between a list and its watch, so the scaling is
	// repeated (to another count) until the informer reports it.
	var drifted *unstructured.Unstructured
	for attempt := int64(0); ; attempt++ {
		drifted = f.env.Lookup("member1", mct.Deployments, "default", "nginx").DeepCopy()
		_ = unstructured.SetNestedField(drifted.Object, 7+attempt, "spec", "replicas")
		if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, drifted, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if eventWithin(seen, membercluster.Updated, 2*time.Second) {
			break
		}
		if attempt == 9 {
			t.Fatalf("no %s event after %d scalings", membercluster.Updated, attempt+1)
		}
	}
	f.r.MemberHandler().OnEvent(membercluster.Event{Cluster: "member1", Type: membercluster.Updated, Old: pack(t, live), Object: pack(t, drifted)})
	if f.queue.Len() != 1 {
		t.Fatalf("the Work was not enqueued (queue length %d)", f.queue.Len())
	}
	req, _ := f.queue.Get()
	f.queue.Done(req)
	if req.NamespacedName != client.ObjectKeyFromObject(work) {
		t.Fatalf("enqueued %v", req)
	}

	f.mustReconcile(work)
	if r, _, _ := unstructured.NestedInt64(f.env.Lookup("member1", mct.Deployments, "default", "nginx").Object, "spec", "replicas"); r != 2 {
		t.Fatalf("replicas = %d, want the manifest's 2", r)
	}

	// A deleted member object is recreated.
	if err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Delete(f.ctx, "nginx", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, seen, membercluster.Deleted)
	f.r.MemberHandler().OnEvent(membercluster.Event{Cluster: "member1", Type: membercluster.Deleted, Object: pack(t, live)})
	if f.queue.Len() != 1 {
		t.Fatal("a deleted member object must enqueue its Work")
	}
	f.mustReconcile(work)
	if f.env.Lookup("member1", mct.Deployments, "default", "nginx") == nil {
		t.Fatal("the deleted member object was not recreated")
	}
}

// observe registers a test handler on the member informer (after waiting
// for its watch, so later changes are seen) and returns its events.
func (f *fixture) observe(cluster string, gvr schema.GroupVersionResource) chan membercluster.Event {
	f.t.Helper()
	ch := make(chan membercluster.Event, 100)
	if err := f.env.Cache.Watch(f.ctx, cluster, gvr, membercluster.Handler{Name: "test", OnEvent: func(e membercluster.Event) { ch <- e }}); err != nil {
		f.t.Fatal(err)
	}
	select {
	case <-f.env.WatchStarted(cluster, gvr):
	case <-time.After(10 * time.Second):
		f.t.Fatal("informer did not start watching")
	}
	return ch
}

// waitEvent waits for an event of type typ (bounded; events arrive in
// milliseconds).
func waitEvent(t *testing.T, ch chan membercluster.Event, typ membercluster.EventType) {
	t.Helper()
	if !eventWithin(ch, typ, 10*time.Second) {
		t.Fatalf("no %s event", typ)
	}
}

// eventWithin says whether an event of typ arrives on ch within d.
func eventWithin(ch chan membercluster.Event, typ membercluster.EventType, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case e := <-ch:
			if e.Type == typ {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func TestRetainKeepsMemberOwnedFields(t *testing.T) {
	manifest := deployment("nginx", 2)
	manifest.SetLabels(map[string]string{"retain-replicas": "true"})
	work := MakeWork("nginx", "member1").Manifest(manifest).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)

	// An HPA in the member scaled to 5.
	live := f.env.Lookup("member1", mct.Deployments, "default", "nginx")
	_ = unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas")
	if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := f.writes("member1")
	f.mustReconcile(work)

	if f.interp.retains == 0 {
		t.Fatal("Retain was not asked")
	}
	if f.writes("member1") != writes {
		t.Error("the retained object was applied although nothing else differs")
	}
	if r, _, _ := unstructured.NestedInt64(f.env.Lookup("member1", mct.Deployments, "default", "nginx").Object, "spec", "replicas"); r != 5 {
		t.Fatalf("replicas = %d, want the member's 5", r)
	}
}

// A retention rule (a script) that renames the object is refused: applied,
// it would force-write an object the conflict check never looked at.
func TestRetainThatRenamesIsRefused(t *testing.T) {
	manifest := deployment("nginx", 2)
	manifest.SetLabels(map[string]string{"retain-renames-to": "theirs"})
	work := MakeWork("nginx", "member1").Manifest(manifest).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	theirs := deployment("theirs", 7)
	f.env.Put("member1", mct.Deployments, theirs)

	_, _ = f.reconcile(work)

	if got := f.env.Lookup("member1", mct.Deployments, "default", "theirs"); got == nil || IsManaged(got) {
		t.Fatalf("an object the Work does not name was written: %v", got)
	}
	if c := f.applied(work); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "may not be changed") {
		t.Errorf("Applied = %+v, want False naming the refused change", c)
	}
}

func deleteWork(t *testing.T, f *fixture, work *workv1alpha1.Work) {
	t.Helper()
	if err := f.client.Delete(f.ctx, f.get(work)); err != nil {
		t.Fatal(err)
	}
}

func TestDeletingWorkDeletesMemberObjects(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	// An unmanaged object named in another manifest is never deleted.
	deleteWork(t, f, work)

	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.Deployments, "default", "nginx") != nil {
		t.Error("member object not deleted")
	}
	err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Work must be gone once its finalizer is removed: %v", err)
	}
}

func TestDeletingWorkLeavesUnmanagedObjects(t *testing.T) {
	work := MakeWork("settings", "member1").Finalizer().Manifest(configMap("default", "settings", nil)).Obj()
	f := newFixture(t, work)
	f.env.Put("member1", mct.ConfigMaps, configMap("default", "settings", map[string]interface{}{"k": "theirs"}))
	deleteWork(t, f, work)

	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.ConfigMaps, "default", "settings") == nil {
		t.Fatal("an object Lifeboat does not manage was deleted")
	}
}

// A Namespace Work that never applied (suspended here) is deleted. The
// member namespace was created by Lifeboat for another Work's ConfigMap:
// labelled managed, but naming no Work. Deleting the Namespace Work keeps
// it, and everything inside.
func TestDeletingUnappliedNamespaceWorkKeepsCreatedNamespace(t *testing.T) {
	cm := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	nsWork := MakeWork("team-a-ns", "member1").Finalizer().Suspend().Manifest(namespace("team-a")).Obj()
	f := newFixture(t, cm, nsWork)
	f.env.RequireNamespaces = true
	f.mustReconcile(cm)
	f.mustReconcile(nsWork)
	deleteWork(t, f, nsWork)

	f.mustReconcile(nsWork)

	ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a")
	if ns == nil {
		t.Fatal("the namespace Lifeboat created for another Work was deleted by a Namespace Work that never applied it")
	}
	if !CreatedByLifeboat(ns) {
		t.Errorf("the created namespace lost its mark: %v", ns.GetAnnotations())
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Error("the other Work's ConfigMap was deleted")
	}
}

// A Namespace Work that adopted the namespace Lifeboat created (it applied,
// so the namespace names it) deletes it when it is deleted.
func TestDeletingNamespaceWorkThatAdoptedCreatedNamespaceDeletesIt(t *testing.T) {
	nsWork := MakeWork("team-a-ns", "member1").Manifest(namespace("team-a")).Obj()
	f := newFixture(t, nsWork)
	f.env.Put("member1", mct.Namespaces, NewCreatedNamespace("team-a"))
	f.mustReconcile(nsWork)
	deleteWork(t, f, nsWork)

	f.mustReconcile(nsWork)

	if f.env.Lookup("member1", mct.Namespaces, "", "team-a") != nil {
		t.Fatal("the namespace a Namespace Work applied was left behind")
	}
}

// staleMembers answers Get with the object as it was before the Work
// adopted it, as an informer that has not seen the apply yet does.
type staleMembers struct {
	MemberCache
	stale *unstructured.Unstructured
}

func (m staleMembers) Get(context.Context, string, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return m.stale.DeepCopy(), nil
}

// A Work deleted just after it adopted an object is deleted with it even
// when the informer's copy does not name the Work yet: the member's own
// answer decides.
func TestDeletingWorkReadsTheMemberWhenItsCacheDoesNotNameTheWork(t *testing.T) {
	nsWork := MakeWork("team-a-ns", "member1").Manifest(namespace("team-a")).Obj()
	f := newFixture(t, nsWork)
	before := NewCreatedNamespace("team-a")
	f.env.Put("member1", mct.Namespaces, before)
	f.mustReconcile(nsWork)
	deleteWork(t, f, nsWork)
	f.r.Members = staleMembers{MemberCache: f.env.Cache, stale: before}

	f.mustReconcile(nsWork)

	if f.env.Lookup("member1", mct.Namespaces, "", "team-a") != nil {
		t.Fatal("the namespace the Work adopted was left behind: its cached copy, older than the apply, was trusted")
	}
}

// An object at a Work's name that is managed but names another Work, or
// none, is not the Work's: deleting the Work leaves it as it is, with or
// without preserveResourcesOnDeletion.
func TestDeletingWorkKeepsManagedObjectsItDoesNotOwn(t *testing.T) {
	owners := map[string]map[string]string{
		"another cluster's Work": {
			workv1alpha1.WorkNamespaceAnnotation: "karmada-es-other",
			workv1alpha1.WorkNameAnnotation:      "settings",
		},
		"another Work of the cluster": {
			workv1alpha1.WorkNamespaceAnnotation: "karmada-es-member1",
			workv1alpha1.WorkNameAnnotation:      "other",
		},
		"no Work": nil,
	}
	for name, annotations := range owners {
		for _, preserve := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, preserve %t", name, preserve), func(t *testing.T) {
				w := MakeWork("settings", "member1").Finalizer().Manifest(configMap("default", "settings", nil))
				if preserve {
					w = w.Preserve()
				}
				work := w.Obj()
				f := newFixture(t, work)
				theirs := configMap("default", "settings", map[string]interface{}{"k": "theirs"})
				theirs.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue})
				theirs.SetAnnotations(annotations)
				f.env.Put("member1", mct.ConfigMaps, theirs)
				deleteWork(t, f, work)

				f.mustReconcile(work)

				got := f.env.Lookup("member1", mct.ConfigMaps, "default", "settings")
				if got == nil {
					t.Fatal("an object the Work does not own was deleted")
				}
				if !IsManaged(got) || !reflect.DeepEqual(got.GetAnnotations(), theirs.GetAnnotations()) {
					t.Errorf("an object the Work does not own was released: labels %v annotations %v", got.GetLabels(), got.GetAnnotations())
				}
				if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
					t.Errorf("the Work must be gone: %v", err)
				}
			})
		}
	}
}

func TestDeletingWorkWithPreserveReleasesMemberObjects(t *testing.T) {
	work := MakeWork("nginx", "member1").Preserve().Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	deleteWork(t, f, work)

	f.mustReconcile(work)

	got := f.env.Lookup("member1", mct.Deployments, "default", "nginx")
	if got == nil {
		t.Fatal("preserved object was deleted")
	}
	if IsManaged(got) || got.GetAnnotations()[workv1alpha1.WorkNameAnnotation] != "" {
		t.Errorf("preserved object still tied to Lifeboat: labels %v annotations %v", got.GetLabels(), got.GetAnnotations())
	}
}

func TestDeletingWorkOnUnreachableMember(t *testing.T) {
	cases := map[string]struct {
		release     func(context.Context, *clusterv1alpha1.Cluster, *workv1alpha1.Work, error) bool
		wantRemoved bool
	}{
		"keeps the finalizer and waits": {nil, false},
		"failover hook releases it": {func(context.Context, *clusterv1alpha1.Cluster, *workv1alpha1.Work, error) bool {
			return true
		}, true},
		"failover hook declines": {func(context.Context, *clusterv1alpha1.Cluster, *workv1alpha1.Work, error) bool {
			return false
		}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
			f := newFixture(t, work)
			f.mustReconcile(work)
			f.env.SetReachable("member1", false)
			f.r.ReleaseUnreachable = tc.release
			deleteWork(t, f, work)
			// The object is not in the (unsynced) informer, so the
			// member must be asked.
			res, err := f.reconcile(work)
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			var got workv1alpha1.Work
			gone := apierrors.IsNotFound(f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &got))
			if gone != tc.wantRemoved {
				t.Fatalf("Work gone = %t, want %t", gone, tc.wantRemoved)
			}
			if !tc.wantRemoved {
				c := meta.FindStatusCondition(got.Status.Conditions, ConditionCleanup)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonCleanupPending {
					t.Fatalf("Cleanup = %+v", c)
				}
				if res.RequeueAfter <= 0 {
					t.Errorf("expected a requeue after the back-off: %+v", res)
				}
			}
		})
	}
}

// While the member stays unreachable, the Work waiting for its clean-up is
// written once: later passes, with the member cache's countdown to its
// next attempt lower and the last connection error another, say the same.
func TestDeletingWorkOnUnreachableMemberWritesOnce(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	f.env.SetReachable("member1", false)
	deleteWork(t, f, work)
	if _, err := f.reconcile(work); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	first := f.get(work)
	c := meta.FindStatusCondition(first.Status.Conditions, ConditionCleanup)
	if c == nil || c.Reason != ReasonCleanupPending {
		t.Fatalf("Cleanup = %+v", c)
	}
	if want := "Member objects could not be deleted yet, retrying: member cluster member1 is unreachable"; c.Message != want {
		t.Errorf("Cleanup message = %q, want %q", c.Message, want)
	}
	for i := range 3 {
		f.env.Clock.Step(time.Second)
		if _, err := f.reconcile(work); err != nil {
			t.Fatalf("reconcile %d: %v", i+2, err)
		}
		if got := f.get(work); got.ResourceVersion != first.ResourceVersion {
			t.Fatalf("pass %d wrote the Work again: conditions %+v", i+2, got.Status.Conditions)
		}
	}
}

func TestDeletingWorkOfDeletedClusterReleasesIt(t *testing.T) {
	work := MakeWork("nginx", "member1").Finalizer().Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	if err := f.client.Delete(f.ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}); err != nil {
		t.Fatal(err)
	}
	deleteWork(t, f, work)

	f.mustReconcile(work)

	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Work of a deleted cluster must be released: %v", err)
	}
}

// unjoin marks member1 as being deleted (the cluster controller's
// finalizer holds it), with its Ready condition as given.
func unjoin(t *testing.T, f *fixture, ready metav1.ConditionStatus) {
	t.Helper()
	var cluster clusterv1alpha1.Cluster
	if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Finalizers = []string{clusterv1alpha1.ClusterControllerFinalizer}
	cluster.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: ready, Reason: "Test", LastTransitionTime: metav1.Now()}}
	if err := f.client.Update(f.ctx, &cluster); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Delete(f.ctx, &cluster); err != nil {
		t.Fatal(err)
	}
}

func TestUnjoiningAReadyMemberDeletesWhatItsWorksCreated(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	unjoin(t, f, metav1.ConditionTrue)
	deleteWork(t, f, work)

	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.Deployments, "default", "nginx") != nil {
		t.Error("the object of a Work of an unjoined, Ready member was left behind")
	}
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Work must be gone once its objects are: %v", err)
	}
}

func TestUnjoiningAMemberThatIsNotReadyLeavesItAlone(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	unjoin(t, f, metav1.ConditionFalse)
	deleteWork(t, f, work)
	calls := f.requests("member1")

	f.mustReconcile(work)

	if f.requests("member1") != calls || f.env.Lookup("member1", mct.Deployments, "default", "nginx") == nil {
		t.Error("a member that is not Ready was touched while its Cluster is deleted")
	}
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Work must be released without waiting for the member: %v", err)
	}
}

func TestWorkOfMissingClusterSaysSo(t *testing.T) {
	work := MakeWork("nginx", "ghost").Manifest(deployment("nginx", 1)).Obj()
	f := newFixture(t, work)

	f.mustReconcile(work)

	if c := f.applied(work); c.Status != metav1.ConditionFalse || c.Reason != ReasonClusterNotFound {
		t.Fatalf("Applied = %+v", c)
	}
}

func TestInvalidManifestFailsWithReason(t *testing.T) {
	bad := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": map[string]interface{}{"name": "x"}}}
	work := MakeWork("x", "member1").Manifest(bad).Obj()
	f := newFixture(t, work)

	if _, err := f.reconcile(work); err == nil {
		t.Fatal("an unknown kind must be retried with back-off")
	}
	c := f.applied(work)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonAppliedFailed || !strings.Contains(c.Message, "(0/1)") {
		t.Fatalf("Applied = %+v", c)
	}
}

// A finalizer write that loses a race with another writer of the Work is
// not an error (the e2e suite's log tripwire caught it as one): the Work is
// requeued and the next pass finishes the job.
func TestFinalizerWriteConflictIsRequeuedNotAnError(t *testing.T) {
	for name, deleting := range map[string]bool{"adding the finalizer": false, "removing the finalizer": true} {
		t.Run(name, func(t *testing.T) {
			work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 1)).Obj()
			f := newFixture(t, work)
			if deleting {
				f.mustReconcile(work)
				deleteWork(t, f, work)
			}
			conflicts := 0
			f.r.Client = interceptor.NewClient(f.client.(client.WithWatch), interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*workv1alpha1.Work); ok && conflicts == 0 {
						conflicts++
						return apierrors.NewConflict(schema.GroupResource{Group: "work.karmada.io", Resource: "works"}, obj.GetName(), errors.New("the object has been modified"))
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})

			res, err := f.reconcile(work)
			if err != nil {
				t.Fatalf("a write conflict was reported as an error: %v", err)
			}
			if conflicts != 1 || res.RequeueAfter <= 0 {
				t.Fatalf("conflicts=%d result=%+v; want one conflict and a requeue", conflicts, res)
			}

			f.mustReconcile(work)
			var got workv1alpha1.Work
			err = f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &got)
			switch {
			case deleting && !apierrors.IsNotFound(err):
				t.Errorf("the retry should release the Work: %v", err)
			case !deleting && (err != nil || !controllerutil.ContainsFinalizer(&got, workv1alpha1.ExecutionControllerFinalizer)):
				t.Errorf("the retry should add the finalizer: %v %v", err, got.Finalizers)
			}
		})
	}
}

// staleWork serves one Work as the cache held it a moment ago.
type staleWork struct {
	client.Client
	stale *workv1alpha1.Work
}

func (s staleWork) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == client.ObjectKeyFromObject(s.stale) {
		s.stale.DeepCopyInto(obj.(*workv1alpha1.Work))
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestConditionsWrittenOnceWhileTheCacheLags: the member object's creation
// brings the Work back before the cache holds the conditions written after
// the apply; that reconcile does not write them again.
func TestConditionsWrittenOnceWhileTheCacheLags(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
	f := newFixture(t, work)
	f.r.Echoes = coalesce.NewRecent(0, f.r.Clock)
	f.mustReconcile(work)
	stored := f.get(work)
	if c := meta.FindStatusCondition(stored.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Applied = %+v", c)
	}

	stale := stored.DeepCopy()
	stale.Status.Conditions = nil
	stale.ResourceVersion = "1"
	f.r.Client = staleWork{Client: f.client, stale: stale}
	f.mustReconcile(work)
	if got := f.get(work).ResourceVersion; got != stored.ResourceVersion {
		t.Errorf("the Work was written again on a stale cache: resourceVersion %s -> %s", stored.ResourceVersion, got)
	}

	// Without the memory of its own write the controller writes again:
	// the test above shows what Echoes saves.
	f.r.Echoes = nil
	f.mustReconcile(work)
	if got := f.get(work).ResourceVersion; got == stored.ResourceVersion {
		t.Error("no write on the stale cache even without Echoes")
	}
}

// withHandoff wires a Handoff into f as the controller manager does, and
// returns it with the fixture's clock.
func withHandoff(f *fixture) (*coalesce.Handoff[[]metav1.Condition], *clocktesting.FakePassiveClock) {
	clk := f.r.Clock.(*clocktesting.FakePassiveClock)
	f.r.Echoes = coalesce.NewRecent(0, clk)
	f.r.Handoff = coalesce.NewHandoff[[]metav1.Condition](handoffWait, f.r.Echoes, clk)
	return f.r.Handoff, clk
}

const handoffWait = 3 * time.Second

// changeSpec changes the stored Work's spec with change, as a user or the
// binding controller would (the generation goes up), and returns it.
func (f *fixture) changeSpec(work *workv1alpha1.Work, change func(*workv1alpha1.Work)) *workv1alpha1.Work {
	f.t.Helper()
	stored := f.get(work)
	change(stored)
	stored.Generation++
	if err := f.client.Update(f.ctx, stored); err != nil {
		f.t.Fatal(err)
	}
	return stored
}

// eventsSaid drains the recorder.
func (f *fixture) eventsSaid() []string {
	return eventstest.Drain(f.events)
}

func TestNewObjectsConditionsAreHandedOff(t *testing.T) {
	work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
	f := newFixture(t, work)
	h, clk := withHandoff(f)

	res := f.mustReconcile(work)
	if f.env.Lookup("member1", mct.Deployments, "default", "nginx") == nil {
		t.Fatal("Deployment not applied")
	}
	if res.RequeueAfter != handoffWait {
		t.Errorf("requeue after %v, want the handoff's wait %v", res.RequeueAfter, handoffWait)
	}
	stored := f.get(work)
	if len(stored.Status.Conditions) != 0 {
		t.Fatalf("conditions written although offered to the work status controller: %+v", stored.Status.Conditions)
	}
	if evs := f.eventsSaid(); len(evs) != 1 || !strings.Contains(evs[0], EventSyncSucceeded) {
		t.Errorf("events = %q, want one %s", evs, EventSyncSucceeded)
	}

	// The member's creation event brings the Work back within the wait:
	// still nothing written, and nothing announced again.
	clk.SetTime(clk.Now().Add(time.Second))
	if res := f.mustReconcile(work); res.RequeueAfter != handoffWait-time.Second {
		t.Errorf("second pass: requeue after %v, want %v", res.RequeueAfter, handoffWait-time.Second)
	}
	if got := f.get(work); got.ResourceVersion != stored.ResourceVersion {
		t.Error("the Work was written during the wait")
	}
	if evs := f.eventsSaid(); len(evs) != 0 {
		t.Errorf("events during the wait = %q, want none", evs)
	}

	// The work status controller takes the conditions into its write.
	conditions, said, ok := h.Take(string(stored.UID))
	if !ok {
		t.Fatal("no offer for the work status controller")
	}
	if c := meta.FindStatusCondition(conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonAppliedSuccessful {
		t.Errorf("offered Applied = %+v", c)
	}
	if c := meta.FindStatusCondition(conditions, workv1alpha1.WorkDispatching); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("offered Dispatching = %+v", c)
	}
	h.Delivered(string(stored.UID), said)

	// The cache has not caught up with that write yet: not written again.
	clk.SetTime(clk.Now().Add(handoffWait))
	if res := f.mustReconcile(work); res.RequeueAfter != 0 {
		t.Errorf("after delivery: requeue after %v, want none", res.RequeueAfter)
	}
	if got := f.get(work); got.ResourceVersion != stored.ResourceVersion {
		t.Error("conditions the work status controller wrote were written again")
	}
}

// The cases where the conditions must not wait for the work status
// controller.
func TestHandoffMustNotHoldBack(t *testing.T) {
	t.Run("a failure is written at once, even beside a created object", func(t *testing.T) {
		bad := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": map[string]interface{}{"name": "x"}}}
		work := MakeWork("x", "member1").Manifest(deployment("nginx", 1), bad).Obj()
		f := newFixture(t, work)
		h, _ := withHandoff(f)
		if _, err := f.reconcile(work); err == nil {
			t.Fatal("an unknown kind must be retried with back-off")
		}
		if f.env.Lookup("member1", mct.Deployments, "default", "nginx") == nil {
			t.Fatal("the Deployment beside the bad manifest was not created; the test needs it")
		}
		if c := f.applied(work); c == nil || c.Status != metav1.ConditionFalse {
			t.Fatalf("Applied = %+v, want False at once", c)
		}
		if h.Pending() != 0 {
			t.Error("a failure was offered")
		}
	})

	t.Run("a failure during the wait is written at once", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		h, _ := withHandoff(f)
		// The reactor goes in before the first reconcile starts the member
		// informers, which read the fake's reactors concurrently.
		var refuse atomic.Bool
		f.env.Member("member1").PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
			if !refuse.Load() {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(mct.Deployments.GroupResource(), "nginx", errors.New("denied"))
		})
		f.mustReconcile(work)
		if h.Pending() != 1 {
			t.Fatal("nothing offered; the test needs an offer")
		}
		refuse.Store(true)
		f.changeSpec(work, func(w *workv1alpha1.Work) {
			w.Spec.Workload.Manifests = MakeWork("nginx", "member1").Manifest(deployment("nginx", 3)).Obj().Spec.Workload.Manifests
		})
		f.eventsSaid()
		if _, err := f.reconcile(work); err == nil {
			t.Fatal("a refused apply must be retried with back-off")
		}
		if c := f.applied(work); c == nil || c.Status != metav1.ConditionFalse {
			t.Fatalf("Applied = %+v, want False at once", c)
		}
		if h.Pending() != 0 {
			t.Error("the offer of the earlier success is still pending")
		}
		if evs := f.eventsSaid(); len(evs) != 1 || !strings.Contains(evs[0], EventSyncFailed) {
			t.Errorf("events = %q, want one %s", evs, EventSyncFailed)
		}
	})

	t.Run("a conflict with an unmanaged object is written at once", func(t *testing.T) {
		work := MakeWork("settings", "member1").Manifest(configMap("default", "settings", map[string]interface{}{"k": "lifeboat"})).Obj()
		f := newFixture(t, work)
		h, _ := withHandoff(f)
		f.env.Put("member1", mct.ConfigMaps, configMap("default", "settings", map[string]interface{}{"k": "theirs"}))
		f.mustReconcile(work)
		if c := f.applied(work); c == nil || c.Reason != ReasonResourceConflict {
			t.Fatalf("Applied = %+v, want the conflict at once", c)
		}
		if h.Pending() != 0 {
			t.Error("a conflict was offered")
		}
	})

	t.Run("an update of an existing object is written at once", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		f.mustReconcile(work) // without a handoff: created, conditions written
		h, _ := withHandoff(f)
		stored := f.changeSpec(work, func(w *workv1alpha1.Work) {
			w.Spec.Workload.Manifests = MakeWork("nginx", "member1").Manifest(deployment("nginx", 3)).Obj().Spec.Workload.Manifests
		})
		if res := f.mustReconcile(work); res.RequeueAfter != 0 {
			t.Errorf("requeue after %v, want none", res.RequeueAfter)
		}
		if c := f.applied(work); c == nil || c.ObservedGeneration != stored.Generation {
			t.Fatalf("Applied = %+v, want it for generation %d at once", c, stored.Generation)
		}
		if h.Pending() != 0 {
			t.Error("an update was offered")
		}
	})

	t.Run("an update during the wait is written at once", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		h, _ := withHandoff(f)
		f.mustReconcile(work)
		stored := f.changeSpec(work, func(w *workv1alpha1.Work) {
			w.Spec.Workload.Manifests = MakeWork("nginx", "member1").Manifest(deployment("nginx", 3)).Obj().Spec.Workload.Manifests
		})
		f.eventsSaid()
		if res := f.mustReconcile(work); res.RequeueAfter != 0 {
			t.Errorf("requeue after %v, want none", res.RequeueAfter)
		}
		if c := f.applied(work); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != stored.Generation {
			t.Fatalf("Applied = %+v, want True for generation %d at once", c, stored.Generation)
		}
		if h.Pending() != 0 {
			t.Error("the update was left pending")
		}
		if evs := f.eventsSaid(); len(evs) != 0 {
			t.Errorf("events = %q, want none: the success was announced already", evs)
		}
	})

	t.Run("suspended during the wait, the Work keeps its Applied condition", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		h, _ := withHandoff(f)
		f.mustReconcile(work)
		f.changeSpec(work, func(w *workv1alpha1.Work) { w.Spec.SuspendDispatching = ptr.To(true) })
		f.mustReconcile(work)
		got := f.get(work)
		if d := meta.FindStatusCondition(got.Status.Conditions, workv1alpha1.WorkDispatching); d == nil || d.Reason != ReasonSuspendDispatching {
			t.Errorf("Dispatching = %+v, want SuspendDispatching", d)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Applied = %+v, want the True it had when offered", c)
		}
		if h.Pending() != 0 {
			t.Error("the offer is still pending after the controller wrote")
		}
	})

	t.Run("an offer nobody took is written when the wait ends", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		h, clk := withHandoff(f)
		f.mustReconcile(work)
		if len(f.get(work).Status.Conditions) != 0 {
			t.Fatal("conditions written at once; the test needs them offered")
		}
		clk.SetTime(clk.Now().Add(handoffWait))
		f.mustReconcile(work)
		if c := f.applied(work); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Applied = %+v, want True once the wait ended", c)
		}
		if h.Pending() != 0 {
			t.Error("the offer is still pending after its maker wrote it")
		}
		if evs := f.eventsSaid(); len(evs) != 1 {
			t.Errorf("events = %q, want the one success announced when offered", evs)
		}
	})

	t.Run("an offer taken and not written is written by its maker", func(t *testing.T) {
		work := MakeWork("nginx", "member1").Manifest(deployment("nginx", 2)).Obj()
		f := newFixture(t, work)
		h, clk := withHandoff(f)
		f.mustReconcile(work)
		if _, _, ok := h.Take(string(f.get(work).UID)); !ok {
			t.Fatal("nothing offered")
		}
		// The work status controller's write failed: no Delivered. Until
		// the wait ends the execution controller waits for it.
		clk.SetTime(clk.Now().Add(time.Second))
		if res := f.mustReconcile(work); res.RequeueAfter != handoffWait-time.Second || len(f.get(work).Status.Conditions) != 0 {
			t.Fatalf("while taken: requeue after %v, conditions %+v; want %v and none", res.RequeueAfter, f.get(work).Status.Conditions, handoffWait-time.Second)
		}
		clk.SetTime(clk.Now().Add(handoffWait))
		f.mustReconcile(work)
		if c := f.applied(work); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Applied = %+v, want True written by the execution controller", c)
		}
		if evs := f.eventsSaid(); len(evs) != 1 {
			t.Errorf("events = %q, want the one success announced when offered", evs)
		}
	})
}

func TestForbiddenHint(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	forbidden := apierrors.NewForbidden(gvr.GroupResource(), "x", errors.New("no"))
	if got := forbiddenHint(forbidden, "member1", gvr); !strings.Contains(got, "ClusterRole lifeboat-member1") || !strings.Contains(got, "--propagate-resource clusterroles.rbac.authorization.k8s.io") {
		t.Errorf("hint = %q", got)
	}
	for _, err := range []error{nil, errors.New("boom"), apierrors.NewNotFound(gvr.GroupResource(), "x")} {
		if got := forbiddenHint(err, "member1", gvr); got != "" {
			t.Errorf("hint for %v = %q, want none", err, got)
		}
	}
}

// Past the budget's burst, the SyncWorkloadSucceed and CleanupFailed
// Events of one member's Works are counted for a summary on the Cluster;
// another member's are recorded.
func TestEventsOfOneMembersWorksAreBudgeted(t *testing.T) {
	works := []*workv1alpha1.Work{
		MakeWork("a", "member1").Manifest(deployment("a", 1)).Obj(),
		MakeWork("b", "member1").Manifest(deployment("b", 1)).Obj(),
		MakeWork("c", "member2").Manifest(deployment("c", 1)).Obj(),
	}
	f := newFixture(t, works[0], works[1], works[2])
	budget, err := eventbudget.New(eventbudget.Options{Burst: 1, Clock: f.r.Clock})
	if err != nil {
		t.Fatal(err)
	}
	f.r.Events = budget
	for _, w := range works {
		f.mustReconcile(w)
		if c := meta.FindStatusCondition(f.get(w).Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s: Applied = %+v, want True whatever its Event", w.Name, c)
		}
	}
	if evs := f.eventsSaid(); len(evs) != 2 {
		t.Errorf("events = %q, want member1's first and member2's", evs)
	}
	clk := f.r.Clock.(*clocktesting.FakePassiveClock)
	clk.SetTime(clk.Now().Add(eventbudget.DefaultSummaryPeriod))
	if sums := budget.Due(false); len(sums) != 1 || sums[0].Subject != eventbudget.Cluster("member1") || !strings.Contains(sums[0].Message, "Work karmada-es-member1/") {
		t.Errorf("summaries = %+v, want one for member1 naming the Work", sums)
	}

	// member1 goes down and both its Works are deleted: the first one's
	// CleanupFailed is recorded, the second's counted; both Works say it.
	f.env.SetReachable("member1", false)
	for _, w := range works[:2] {
		deleteWork(t, f, w)
		if _, err := f.reconcile(w); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(f.get(w).Status.Conditions, ConditionCleanup); c == nil || c.Reason != ReasonCleanupPending {
			t.Errorf("%s: Cleanup = %+v, want pending whatever its Event", w.Name, c)
		}
	}
	if evs := f.eventsSaid(); len(evs) != 1 || !strings.Contains(evs[0], EventCleanupFailed) {
		t.Errorf("events = %q, want one %s", evs, EventCleanupFailed)
	}
	if sums := budget.Due(true); len(sums) != 1 || sums[0].Reason != EventCleanupFailed || sums[0].EventType != corev1.EventTypeWarning {
		t.Errorf("summaries = %+v, want member1's CleanupFailed", sums)
	}
}

// Deleting a Namespace Work while another Work of the cluster keeps objects
// in that namespace would delete them with it (the member's API server
// empties a deleted namespace): the namespace stays, as one Lifeboat created
// (the namespace rule removes it once nothing uses it and it is empty), and
// the other Work's object is untouched.
func TestDeletingNamespaceWorkKeepsNamespaceAnotherWorkUses(t *testing.T) {
	nsWork := MakeWork("team-a-ns", "member1").Manifest(namespace("team-a")).Obj()
	cm := MakeWork("cm", "member1").Manifest(configMap("team-a", "cm", map[string]interface{}{"k": "v"})).Obj()
	f := newFixture(t, nsWork, cm)
	f.mustReconcile(nsWork)
	f.mustReconcile(cm)
	if ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a"); ns == nil || !f.r.owns("member1", nsWork, ns) {
		t.Fatalf("setup: the namespace is not the Namespace Work's: %v", ns)
	}
	deleteWork(t, f, nsWork)

	f.mustReconcile(nsWork)

	ns := f.env.Lookup("member1", mct.Namespaces, "", "team-a")
	if ns == nil {
		t.Fatal("the namespace was deleted while another Work's ConfigMap is in it")
	}
	if !CreatedByLifeboat(ns) || !IsManaged(ns) {
		t.Errorf("the kept namespace is not handed to the namespace rule: labels %v, annotations %v", ns.GetLabels(), ns.GetAnnotations())
	}
	if _, named := WorkOf("member1", ns); named {
		t.Errorf("the kept namespace still names the deleted Work: %v", ns.GetAnnotations())
	}
	if f.env.Lookup("member1", mct.ConfigMaps, "team-a", "cm") == nil {
		t.Error("the other Work's ConfigMap was deleted")
	}
	var got workv1alpha1.Work
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(nsWork), &got); !apierrors.IsNotFound(err) {
		t.Errorf("the Namespace Work is still there (%v): its finalizer must go once the namespace is handed off", err)
	}

	// Once the other Work is being deleted too, its objects go anyway: a
	// second Namespace Work of the same namespace deletes it.
	again := MakeWork("team-a-ns2", "member1").Manifest(namespace("team-a")).Obj()
	if err := f.client.Create(f.ctx, again); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(again)
	deleteWork(t, f, cm)
	deleteWork(t, f, again)
	f.mustReconcile(again)
	if f.env.Lookup("member1", mct.Namespaces, "", "team-a") != nil {
		t.Error("the namespace is kept although the only other Work using it is being deleted")
	}
}

// A Work left by an earlier Cluster of the same name (unjoined while its
// member was down: its copies were to stay) is released, not finalized
// against the member joined again under that name.
func TestLeftoverWorkOfAnEarlierClusterKeepsItsCopiesAfterARejoin(t *testing.T) {
	work := MakeWork("web", "member1").Manifest(configMap("default", "web", map[string]interface{}{"k": "v"})).Obj()
	work.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixture(t, work)
	f.mustReconcile(work)
	if f.env.Lookup("member1", mct.ConfigMaps, "default", "web") == nil {
		t.Fatal("setup: not applied")
	}
	var old clusterv1alpha1.Cluster
	if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &old); err != nil {
		t.Fatal(err)
	}
	joined := old.DeepCopy()
	if err := f.client.Delete(f.ctx, &old); err != nil {
		t.Fatal(err)
	}
	joined.ResourceVersion, joined.UID = "", "joined-again"
	joined.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC))
	if err := f.client.Create(f.ctx, joined); err != nil {
		t.Fatal(err)
	}
	deleteWork(t, f, work)

	f.mustReconcile(work)

	if f.env.Lookup("member1", mct.ConfigMaps, "default", "web") == nil {
		t.Error("the copy of a Work made for an earlier Cluster of the name was deleted from the member joined again")
	}
	var got workv1alpha1.Work
	if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &got); !apierrors.IsNotFound(err) {
		t.Errorf("the leftover Work is still there (%v): it must be released", err)
	}
}

// A Work deleted while its binding still wants a Work in the cluster (by
// hand, or just before the binding placed the cluster again) leaves its
// objects for the Work made again to adopt: the copy runs on. An answer
// that cannot be had keeps the finalizer; a Cluster being unjoined, or not
// Ready (whose retries would ask each time), is not asked, and its objects
// go as before.
func TestDeletedWorkStillWantedKeepsItsObjects(t *testing.T) {
	cases := map[string]struct {
		wanted     bool
		err        error
		unjoining  bool
		notReady   bool
		wantObject bool
		wantGone   bool
		wantAsked  bool
	}{
		"still wanted: kept, released":          {wanted: true, wantObject: true, wantGone: true, wantAsked: true},
		"not wanted: deleted":                   {wanted: false, wantObject: false, wantGone: true, wantAsked: true},
		"no answer: nothing done yet":           {err: errors.New("the API server does not answer"), wantObject: true, wantGone: false, wantAsked: true},
		"cluster unjoined while Ready: deleted": {wanted: true, unjoining: true, wantObject: false, wantGone: true},
		"member not Ready: not asked":           {wanted: true, notReady: true, wantObject: false, wantGone: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			work := MakeWork("web", "member1").Manifest(configMap("default", "web", map[string]interface{}{"k": "v"})).Obj()
			f := newFixture(t, work)
			asked := false
			f.r.StillWanted = func(_ context.Context, cluster string, w *workv1alpha1.Work) (bool, error) {
				asked = true
				if cluster != "member1" || w.Name != "web" {
					t.Errorf("asked about %s in %s", w.Name, cluster)
				}
				return tc.wanted, tc.err
			}
			f.mustReconcile(work)
			var c clusterv1alpha1.Cluster
			if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
				t.Fatal(err)
			}
			ready := metav1.ConditionTrue
			if tc.notReady {
				ready = metav1.ConditionFalse
			}
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: ready, Reason: "Probed"})
			if tc.unjoining {
				c.Finalizers = append(c.Finalizers, "test/keep")
			}
			if err := f.client.Update(f.ctx, &c); err != nil {
				t.Fatal(err)
			}
			if tc.unjoining {
				if err := f.client.Delete(f.ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
			deleteWork(t, f, work)

			_, err := f.reconcile(work)
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("reconcile = %v, want an error: %t", err, tc.err != nil)
			}
			if asked != tc.wantAsked {
				t.Errorf("asked = %t, want %t", asked, tc.wantAsked)
			}
			if got := f.env.Lookup("member1", mct.ConfigMaps, "default", "web") != nil; got != tc.wantObject {
				t.Errorf("member object there = %t, want %t", got, tc.wantObject)
			}
			var got workv1alpha1.Work
			gone := apierrors.IsNotFound(f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &got))
			if gone != tc.wantGone {
				t.Errorf("Work gone = %t, want %t", gone, tc.wantGone)
			}
		})
	}
}

// racingMembers answers Get with the copies in stale, as an informer that
// has not seen the member's latest change does, and checks a delete's
// preconditions against the member's object, as an API server does.
type racingMembers struct {
	MemberCache
	env     *mct.Env
	stale   map[string]*unstructured.Unstructured
	deletes int
}

func (s *racingMembers) Get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	if o := s.stale[name]; o != nil {
		return o.DeepCopy(), nil
	}
	return s.MemberCache.Get(ctx, cluster, gvr, namespace, name)
}

func (s *racingMembers) Delete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error {
	s.deletes++
	if live, p := s.env.Lookup(cluster, gvr, namespace, name), opts.Preconditions; live != nil && p != nil {
		if (p.UID != nil && *p.UID != live.GetUID()) || (p.ResourceVersion != nil && *p.ResourceVersion != live.GetResourceVersion()) {
			return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("the object changed: precondition failed"))
		}
	}
	return s.MemberCache.Delete(ctx, cluster, gvr, namespace, name, opts)
}

// A Work deleted while the informer's copy of its object is stale: the
// object, taken over by another Work since, is left alone; one that only
// changed (its status) is deleted after reading it again.
func TestDeletingWorkLeavesAnObjectTakenOverSinceItWasRead(t *testing.T) {
	for name, tc := range map[string]struct {
		takenOver   bool
		wantDeleted bool
	}{
		"taken over by another Work": {takenOver: true, wantDeleted: false},
		"changed, still this Work's": {takenOver: false, wantDeleted: true},
	} {
		t.Run(name, func(t *testing.T) {
			work := MakeWork("web", "member1").Manifest(configMap("default", "web", map[string]interface{}{"k": "v"})).Obj()
			f := newFixture(t, work)
			f.mustReconcile(work)
			read := f.env.Lookup("member1", mct.ConfigMaps, "default", "web")
			if read == nil || !f.r.owns("member1", work, read) {
				t.Fatalf("setup: not applied: %v", read)
			}
			read.SetUID("uid-1")
			read.SetResourceVersion("1")
			live := read.DeepCopy()
			live.SetResourceVersion("2")
			if tc.takenOver {
				ann := live.GetAnnotations()
				ann[workv1alpha1.WorkNameAnnotation] = "web-other"
				live.SetAnnotations(ann)
			}
			if err := f.env.Member("member1").Tracker().Update(mct.ConfigMaps, live, "default"); err != nil {
				t.Fatal(err)
			}
			members := &racingMembers{MemberCache: f.r.Members, env: f.env, stale: map[string]*unstructured.Unstructured{"web": read}}
			f.r.Members = members
			deleteWork(t, f, work)

			f.mustReconcile(work)

			got := f.env.Lookup("member1", mct.ConfigMaps, "default", "web")
			switch {
			case tc.wantDeleted && got != nil:
				t.Errorf("this Work's object is still there after %d deletes", members.deletes)
			case !tc.wantDeleted && got == nil:
				t.Errorf("the object another Work took over was deleted")
			case !tc.wantDeleted:
				if owner, _ := WorkOf("member1", got); owner.Name != "web-other" {
					t.Errorf("the object now names %v, want the Work that took it over", owner)
				}
			}
		})
	}
}

// The agent of a Pull cluster may not read bindings: a deleted Work's
// member objects stay until the control plane has decided. A Work its
// binding still wants is released by the control plane itself, its objects
// left for the Work made again; otherwise the agent is let delete them
// (MemberObjectsAnnotation). The control plane decides only for a deleted
// Work the agent still holds, and not while it cannot tell.
func TestPullWorkDeletedWaitsForTheControlPlane(t *testing.T) {
	cases := map[string]struct {
		wanted     bool
		err        error
		unjoining  bool
		wantAnswer string
		wantObject bool
		wantGone   bool
	}{
		"still wanted: kept, released": {wanted: true, wantObject: true, wantGone: true},
		"not wanted: deleted":          {wanted: false, wantAnswer: MemberObjectsDelete, wantObject: false, wantGone: true},
		"no answer: nothing done":      {err: errors.New("the API server does not answer"), wantObject: true, wantGone: false},
		"unjoined: deleted, not asked": {wanted: true, unjoining: true, wantAnswer: MemberObjectsDelete, wantObject: false, wantGone: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			work := MakeWork("web", "member1").Manifest(configMap("default", "web", map[string]interface{}{"k": "v"})).Obj()
			f := newFixture(t, work)
			var c clusterv1alpha1.Cluster
			if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
				t.Fatal(err)
			}
			c.Spec.SyncMode = clusterv1alpha1.Pull
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Probed"})
			if tc.unjoining {
				c.Finalizers = append(c.Finalizers, "test/keep")
			}
			if err := f.client.Update(f.ctx, &c); err != nil {
				t.Fatal(err)
			}
			controlPlane := &Reconciler{Client: f.client, Recorder: f.events, Clock: f.r.Clock, Interpreter: f.interp, Members: f.env.Cache}
			asked := false
			controlPlane.StillWanted = func(_ context.Context, cluster string, w *workv1alpha1.Work) (bool, error) {
				asked = true
				return tc.wanted, tc.err
			}
			agent := f.r
			agent.Agent = true

			f.mustReconcile(work)
			if f.env.Lookup("member1", mct.ConfigMaps, "default", "web") == nil {
				t.Fatal("the agent did not apply the Work")
			}
			if _, err := controlPlane.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(work)}); err != nil {
				t.Fatal(err)
			}
			if asked || f.get(work).Annotations[MemberObjectsAnnotation] != "" {
				t.Fatal("the control plane answered for a Work that is not deleted")
			}
			if tc.unjoining {
				if err := f.client.Delete(f.ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
			deleteWork(t, f, work)

			// Before the control plane answers, the agent deletes nothing.
			res := f.mustReconcile(work)
			if res.RequeueAfter != VerdictRecheck {
				t.Errorf("agent before the answer: requeue after %s, want %s", res.RequeueAfter, VerdictRecheck)
			}
			if f.env.Lookup("member1", mct.ConfigMaps, "default", "web") == nil {
				t.Fatal("the agent deleted the member object before the control plane answered")
			}

			_, err := controlPlane.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(work)})
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("control plane reconcile = %v, want an error: %t", err, tc.err != nil)
			}
			if asked == tc.unjoining {
				t.Errorf("StillWanted asked = %t while unjoining = %t", asked, tc.unjoining)
			}
			var judged workv1alpha1.Work
			if err := f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &judged); err == nil {
				if got := judged.Annotations[MemberObjectsAnnotation]; got != tc.wantAnswer {
					t.Fatalf("answer = %q, want %q", got, tc.wantAnswer)
				}
			} else if !apierrors.IsNotFound(err) || !tc.wanted {
				t.Fatalf("the Work after the control plane's decision: %v", err)
			}

			f.mustReconcile(work)
			if got := f.env.Lookup("member1", mct.ConfigMaps, "default", "web") != nil; got != tc.wantObject {
				t.Errorf("member object there = %t, want %t", got, tc.wantObject)
			}
			gone := apierrors.IsNotFound(f.client.Get(f.ctx, client.ObjectKeyFromObject(work), &workv1alpha1.Work{}))
			if gone != tc.wantGone {
				t.Errorf("Work gone = %t, want %t", gone, tc.wantGone)
			}
		})
	}
}

// The control plane's decision is written only to the Work it judged: one
// made again under the same name meanwhile (the agent released the old one
// and the binding controller made it anew) gets nothing.
func TestPullWorkDecisionNeverLandsOnAWorkMadeAgain(t *testing.T) {
	work := MakeWork("web", "member1").Manifest(configMap("default", "web", map[string]interface{}{"k": "v"})).Obj()
	work.Finalizers = []string{workv1alpha1.ExecutionControllerFinalizer}
	f := newFixture(t, work)
	var c clusterv1alpha1.Cluster
	if err := f.client.Get(f.ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.SyncMode = clusterv1alpha1.Pull
	if err := f.client.Update(f.ctx, &c); err != nil {
		t.Fatal(err)
	}
	for _, wanted := range []bool{false, true} {
		judged := f.get(work)
		now := metav1.Now()
		judged.DeletionTimestamp = &now
		// The Work as the control plane's cache shows it; the API server
		// holds another by now.
		remade := f.get(work)
		remade.Labels = map[string]string{"made": "again"}
		if err := f.client.Update(f.ctx, remade); err != nil {
			t.Fatal(err)
		}
		controlPlane := &Reconciler{Client: f.client, Recorder: f.events, Clock: f.r.Clock, Interpreter: f.interp, Members: f.env.Cache,
			StillWanted: func(context.Context, string, *workv1alpha1.Work) (bool, error) { return wanted, nil }}
		if _, err := controlPlane.judge(f.ctx, "member1", &c, judged); err != nil {
			t.Fatalf("wanted %t: judge = %v", wanted, err)
		}
		got := f.get(work)
		if got.Annotations[MemberObjectsAnnotation] != "" || !controllerutil.ContainsFinalizer(got, workv1alpha1.ExecutionControllerFinalizer) {
			t.Errorf("wanted %t: the Work made again was written: annotations %v, finalizers %v", wanted, got.Annotations, got.Finalizers)
		}
	}
}
