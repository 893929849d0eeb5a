package membercluster_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// wait bounds how long a test waits for an informer event; events normally
// arrive in milliseconds.
const wait = 10 * time.Second

func controlPlane(t *testing.T, clusters ...string) client.Client {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, c := range clusters {
		objs = append(objs, mct.ClusterObjects(c)...)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func configMap(ns, name string, managed bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	if managed {
		u.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue})
	}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "lifeboat", Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

func recorder() (membercluster.Handler, chan membercluster.Event) {
	ch := make(chan membercluster.Event, 100)
	return membercluster.Handler{Name: "test", OnEvent: func(e membercluster.Event) { ch <- e }}, ch
}

func next(t *testing.T, ch chan membercluster.Event) membercluster.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(wait):
		t.Fatal("no event")
		return membercluster.Event{}
	}
}

func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatal("informer did not start watching")
	}
}

func TestWatchDeliversManagedObjectsWithoutManagedFields(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	h, events := recorder()

	if err := env.Cache.Watch(ctx, "member1", mct.ConfigMaps, h); err != nil {
		t.Fatal(err)
	}
	// Asking twice registers the handler once.
	if err := env.Cache.Watch(ctx, "member1", mct.ConfigMaps, h); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env.WatchStarted("member1", mct.ConfigMaps))

	if _, err := env.Member("member1").Resource(mct.ConfigMaps).Namespace("ns").Create(ctx, configMap("ns", "cm", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := next(t, events)
	if e.Type != membercluster.Added || e.Cluster != "member1" || e.Object.GetName() != "cm" {
		t.Fatalf("event = %s %s %s", e.Type, e.Cluster, e.Object.GetName())
	}
	if len(e.Object.GetManagedFields()) != 0 {
		t.Error("managedFields must be stripped from the cache")
	}
	select {
	case dup := <-events:
		t.Fatalf("handler registered twice: got a second %s", dup.Type)
	default:
	}

	obj, synced := env.Cache.Cached("member1", mct.ConfigMaps, "ns", "cm")
	if !synced || obj == nil {
		t.Fatalf("Cached = %v, synced %t", obj, synced)
	}
	if err := env.Member("member1").Resource(mct.ConfigMaps).Namespace("ns").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events); e.Type != membercluster.Deleted || e.Object.GetName() != "cm" {
		t.Fatalf("event = %s %s", e.Type, e.Object.GetName())
	}
}

func TestGetFallsBackToTheAPIForObjectsTheInformerDoesNotHold(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	env.Put("member1", mct.ConfigMaps, configMap("ns", "foreign", false))

	got, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "foreign")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetLabels()[membercluster.ManagedLabel] != "" {
		t.Error("the unmanaged object must be returned as it is")
	}
	if _, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "absent"); !apierrors.IsNotFound(err) {
		t.Errorf("absent object: err = %v, want NotFound", err)
	}
}

func TestUnknownClusterIsNotConnected(t *testing.T) {
	env := mct.New(controlPlane(t))
	defer env.Cache.Stop()
	_, err := env.Cache.Get(context.Background(), "ghost", mct.ConfigMaps, "ns", "x")
	if !membercluster.IsNotConnected(err) {
		t.Fatalf("err = %v, want NotConnectedError", err)
	}
}

func TestUnreachableMemberFailsFastUntilTheBackoffEnds(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1", "member2"))
	defer env.Cache.Stop()
	env.SetReachable("member1", false)

	_, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x")
	after, ok := membercluster.RetryAfter(err)
	if !membercluster.IsUnreachable(err) || !ok || after != 2*time.Second {
		t.Fatalf("first failure: err = %v, retry after %s", err, after)
	}
	calls := len(env.Member("member1").Actions())
	if _, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x"); !membercluster.IsUnreachable(err) {
		t.Fatalf("during back-off: err = %v", err)
	}
	if got := len(env.Member("member1").Actions()); got != calls {
		t.Fatalf("during back-off the member was called (%d -> %d actions)", calls, got)
	}

	// Other members are not affected.
	if _, err := env.Cache.Get(ctx, "member2", mct.ConfigMaps, "ns", "x"); !apierrors.IsNotFound(err) {
		t.Fatalf("member2: err = %v, want NotFound", err)
	}

	env.SetReachable("member1", true)
	env.Clock.Step(2 * time.Second)
	if _, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x"); !apierrors.IsNotFound(err) {
		t.Fatalf("after back-off: err = %v, want NotFound from the member", err)
	}
}

// After a long outage the back-off has grown to minutes; the member's
// Cluster turning Ready again (the cluster-status controller's probe got
// through) ends it, so stale copies are deleted as soon as the member is
// back instead of minutes later.
func TestReadyClusterEndsTheBackoff(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t, "member1")
	env := mct.New(cp)
	defer env.Cache.Stop()
	env.SetReachable("member1", false)
	for i := 0; i < 6; i++ {
		_, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x")
		if !membercluster.IsUnreachable(err) {
			t.Fatalf("attempt %d: err = %v", i, err)
		}
		after, _ := membercluster.RetryAfter(err)
		env.Clock.Step(after)
	}
	_, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x")
	if after, _ := membercluster.RetryAfter(err); after < time.Minute {
		t.Fatalf("back-off after a long outage = %s, want at least a minute (err %v)", after, err)
	}

	env.SetReachable("member1", true)
	var cluster clusterv1alpha1.Cluster
	if err := cp.Get(ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "ClusterReady",
		LastTransitionTime: metav1.NewTime(env.Clock.Now().Add(time.Second)),
	})
	if err := cp.Update(ctx, &cluster); err != nil { // the fake has no status subresource
		t.Fatal(err)
	}
	if _, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "x"); !apierrors.IsNotFound(err) {
		t.Fatalf("member Ready again: err = %v, want NotFound from the member at once", err)
	}
}

func TestReconnectWhenCredentialsChangeKeepsWatches(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t, "member1")
	env := mct.New(cp)
	defer env.Cache.Stop()
	h, events := recorder()
	env.Put("member1", mct.ConfigMaps, configMap("ns", "cm", true))
	if err := env.Cache.Watch(ctx, "member1", mct.ConfigMaps, h); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events); e.Type != membercluster.Added {
		t.Fatalf("event = %s", e.Type)
	}

	// Same settings: nothing happens.
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil {
		t.Fatal(err)
	}
	if got := env.Connects("member1"); got != 1 {
		t.Fatalf("connects = %d, want 1", got)
	}

	var secret corev1.Secret
	if err := cp.Get(ctx, client.ObjectKey{Namespace: "karmada-cluster", Name: "member1"}, &secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[clusterv1alpha1.SecretTokenKey] = []byte("rotated")
	if err := cp.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil {
		t.Fatal(err)
	}
	if got := env.Connects("member1"); got != 2 {
		t.Fatalf("connects = %d, want 2", got)
	}
	// The new informer lists again and the old handler hears about it.
	if e := next(t, events); e.Type != membercluster.Added || e.Object.GetName() != "cm" {
		t.Fatalf("after reconnect: event = %s %s", e.Type, e.Object.GetName())
	}
}

// A member that comes back from an outage gets fresh informers (client-go's
// would wait out their back-off before listing again) and the watches
// carry over; once, not at every later reconcile.
func TestClusterReadyAgainRebuildsTheInformers(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t, "member1")
	env := mct.New(cp)
	defer env.Cache.Stop()
	h, events := recorder()
	started := env.WatchStarted("member1", mct.ConfigMaps)
	env.Put("member1", mct.ConfigMaps, configMap("ns", "cm", true))
	if err := env.Cache.Watch(ctx, "member1", mct.ConfigMaps, h); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started)
	if e := next(t, events); e.Type != membercluster.Added {
		t.Fatalf("event = %s", e.Type)
	}

	setReady := func(status metav1.ConditionStatus) {
		t.Helper()
		env.Clock.Step(10 * time.Second)
		var cluster clusterv1alpha1.Cluster
		if err := cp.Get(ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
			Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Test",
			LastTransitionTime: metav1.NewTime(env.Clock.Now()),
		})
		if err := cp.Update(ctx, &cluster); err != nil { // the fake has no status subresource
			t.Fatal(err)
		}
		if err := env.Cache.Reconnect(ctx, "member1"); err != nil {
			t.Fatal(err)
		}
	}
	setReady(metav1.ConditionFalse)
	if got := env.Connects("member1"); got != 1 {
		t.Fatalf("not Ready: connects = %d, want 1", got)
	}
	setReady(metav1.ConditionTrue)
	if got := env.Connects("member1"); got != 2 {
		t.Fatalf("Ready again: connects = %d, want 2", got)
	}
	if e := next(t, events); e.Type != membercluster.Added || e.Object.GetName() != "cm" {
		t.Fatalf("after the rebuild: event = %s %s", e.Type, e.Object.GetName())
	}
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil {
		t.Fatal(err)
	}
	if got := env.Connects("member1"); got != 2 {
		t.Fatalf("Ready for a while: connects = %d, want still 2", got)
	}
}

func TestDeletedClusterIsForgotten(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t, "member1")
	env := mct.New(cp)
	defer env.Cache.Stop()
	h, _ := recorder()
	if err := env.Cache.Watch(ctx, "member1", mct.ConfigMaps, h); err != nil {
		t.Fatal(err)
	}
	if err := cp.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil {
		t.Fatal(err)
	}
	if env.Cache.Connected("member1") {
		t.Fatal("a deleted Cluster's member must be torn down")
	}
	if _, synced := env.Cache.Cached("member1", mct.ConfigMaps, "ns", "cm"); synced {
		t.Fatal("no informer may survive the Cluster")
	}
}

func TestUnknownKindRefreshesDiscoveryAtMostOncePerInterval(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	gvk := schema.GroupVersionKind{Group: "flink.apache.org", Version: "v1beta1", Kind: "FlinkDeployment"}

	_, err := env.Cache.RESTMapping(ctx, "member1", gvk)
	if !meta.IsNoMatchError(err) {
		t.Fatalf("err = %v, want no match", err)
	}
	if got := env.Mapper("member1").Resets(); got != 1 {
		t.Fatalf("resets = %d, want 1", got)
	}
	_, _ = env.Cache.RESTMapping(ctx, "member1", gvk)
	if got := env.Mapper("member1").Resets(); got != 1 {
		t.Fatalf("resets within the interval = %d, want 1", got)
	}
	env.Clock.Step(time.Minute)
	_, _ = env.Cache.RESTMapping(ctx, "member1", gvk)
	if got := env.Mapper("member1").Resets(); got != 2 {
		t.Fatalf("resets after the interval = %d, want 2", got)
	}

	m, err := env.Cache.RESTMapping(ctx, "member1", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil || m.Resource != mct.Deployments {
		t.Fatalf("Deployment mapping = %v, %v", m, err)
	}
}

func TestClusterBeingDeletedStaysConnectedUntilItIsGone(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t, "member1")
	env := mct.New(cp)
	defer env.Cache.Stop()
	var cluster clusterv1alpha1.Cluster
	if err := cp.Get(ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Finalizers = []string{clusterv1alpha1.ClusterControllerFinalizer}
	if err := cp.Update(ctx, &cluster); err != nil {
		t.Fatal(err)
	}
	if err := cp.Delete(ctx, &cluster); err != nil {
		t.Fatal(err)
	}

	// The Works of an unjoined member delete what they created there.
	env.Put("member1", mct.ConfigMaps, configMap("ns", "cm", true))
	if _, err := env.Cache.Get(ctx, "member1", mct.ConfigMaps, "ns", "cm"); err != nil {
		t.Fatalf("a Cluster being deleted must stay reachable: %v", err)
	}
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil || !env.Cache.Connected("member1") {
		t.Fatalf("a Cluster being deleted was torn down (err %v)", err)
	}

	if err := cp.Get(ctx, client.ObjectKey{Name: "member1"}, &cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Finalizers = nil
	if err := cp.Update(ctx, &cluster); err != nil {
		t.Fatal(err)
	}
	if err := env.Cache.Reconnect(ctx, "member1"); err != nil || env.Cache.Connected("member1") {
		t.Fatalf("a Cluster that is gone must be torn down (err %v)", err)
	}
}

func TestResourcesAreTheListableAndDeletableKinds(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	d := env.Discovery("member1")
	d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get"}},
	}}, &metav1.APIResourceList{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}},
	}})

	got, err := env.Cache.Resources(ctx, "member1")

	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]membercluster.Resource{}
	for _, r := range got {
		byName[r.GVR.String()] = r
	}
	if r, ok := byName[mct.Deployments.String()]; !ok || r.Kind != "Deployment" || !r.Namespaced {
		t.Errorf("Deployments = %+v, %t", r, ok)
	}
	if r, ok := byName[mct.Namespaces.String()]; !ok || r.Namespaced {
		t.Errorf("Namespaces = %+v, %t", r, ok)
	}
	for _, skipped := range []string{"/v1, Resource=bindings", "/v1, Resource=pods/log", "metrics.k8s.io/v1beta1, Resource=pods"} {
		if _, ok := byName[skipped]; ok {
			t.Errorf("%s cannot be listed and deleted, yet is listed", skipped)
		}
	}
}

func TestResourcesSayWhenSomeGroupsWereNotDiscovered(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	env.Discovery("member1").PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("aggregated API down")
	})

	_, err := env.Cache.Resources(ctx, "member1")

	if !membercluster.IsIncompleteDiscovery(err) {
		t.Fatalf("err = %v, want an incomplete discovery", err)
	}
	if membercluster.IsUnreachable(err) {
		t.Fatal("a member that answered discovery is not unreachable")
	}
}

func TestResourcesOfAnUnreachableMember(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	env.SetReachable("member1", false)

	_, err := env.Cache.Resources(ctx, "member1")

	if !membercluster.IsUnreachable(err) {
		t.Fatalf("err = %v, want unreachable", err)
	}
}

func TestListReadsTheAPIServerManagedOrNot(t *testing.T) {
	ctx := context.Background()
	env := mct.New(controlPlane(t, "member1"))
	defer env.Cache.Stop()
	env.Put("member1", mct.ConfigMaps, configMap("ns", "managed", true))
	env.Put("member1", mct.ConfigMaps, configMap("ns", "theirs", false))

	all, err := env.Cache.List(ctx, "member1", mct.ConfigMaps, "ns", metav1.ListOptions{})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("list = %v, %v", all, err)
	}
	managed, err := env.Cache.List(ctx, "member1", mct.ConfigMaps, "ns", metav1.ListOptions{LabelSelector: membercluster.ManagedLabel + "=true"})
	if err != nil || len(managed.Items) != 1 || managed.Items[0].GetName() != "managed" {
		t.Fatalf("managed list = %v, %v", managed, err)
	}
}
