package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// fakeMember is a member cluster in memory.
type fakeMember struct {
	probe    ProbeResult
	version  string
	lists    []*metav1.APIResourceList
	nodes    []corev1.Node
	pods     []corev1.Pod
	collects int
}

func healthyMember() *fakeMember {
	return &fakeMember{
		probe:   ProbeResult{Online: true, Healthy: true, Path: "/readyz", StatusCode: 200},
		version: "v1.35.4",
		lists:   []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}}},
		nodes: []corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: corev1.NodeStatus{
				Allocatable: resources("cpu", "4", "memory", "8Gi", "pods", "110"),
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}},
		pods: []corev1.Pod{{
			Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container(resources("cpu", "1"))}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}},
	}
}

func (m *fakeMember) down() { m.probe = ProbeResult{Err: errors.New("connection refused")} }

func (m *fakeMember) Probe(context.Context) ProbeResult { return m.probe }
func (m *fakeMember) Version(context.Context) (string, error) {
	m.collects++
	return m.version, nil
}
func (m *fakeMember) Discover(context.Context) ([]*metav1.APIResourceList, bool, error) {
	return m.lists, false, nil
}
func (m *fakeMember) EachNode(_ context.Context, fn func(*corev1.Node)) error {
	for i := range m.nodes {
		fn(&m.nodes[i])
	}
	return nil
}
func (m *fakeMember) EachPod(_ context.Context, fn func(*PodUsage)) error {
	for i := range m.pods {
		fn(usageOf(&m.pods[i]))
	}
	return nil
}

type fakeMembers map[string]*fakeMember

func (f fakeMembers) For(_ context.Context, c *clusterv1alpha1.Cluster) (Member, error) {
	if m, ok := f[c.Name]; ok {
		return m, nil
	}
	return nil, errors.New("secret karmada-cluster/" + c.Name + " not found")
}
func (f fakeMembers) Forget(string) {}

type statusFixture struct {
	r      *StatusReconciler
	c      client.Client
	clock  *clocktesting.FakeClock
	writes *writeCounter
	// probed receives the name of each cluster whose probe ended.
	probed chan string
}

func newStatusFixture(t *testing.T, members fakeMembers, clusters ...*clusterv1alpha1.Cluster) *statusFixture {
	t.Helper()
	w := &writeCounter{}
	shared := &sharedReads{}
	funcs := w.funcs()
	funcs.Get = shared.get
	b := newFakeClient(t).WithInterceptorFuncs(funcs)
	t.Cleanup(func() { shared.check(t) })
	for _, c := range clusters {
		b = b.WithObjects(c)
	}
	clk := clocktesting.NewFakeClock(t0)
	c := b.Build()
	f := &statusFixture{
		r: &StatusReconciler{
			Client: c, Members: members, Clock: clk,
			StatusUpdateFrequency: 10 * time.Second, FailureThreshold: 30 * time.Second, SuccessThreshold: 30 * time.Second,
			ProbeTimeout: time.Second, CollectInterval: 30 * time.Second, EnableResourceModeling: true,
		},
		c: c, clock: clk, writes: w, probed: make(chan string, 1024),
	}
	f.r.init()
	f.r.probes.done = func(name string) { f.probed <- name }
	t.Cleanup(f.r.probes.Stop)
	return f
}

// sharedReads hands out Clusters read without a copy as the manager's
// cache does: every read until the Cluster changes shares the same
// slices, maps and pointers. check fails the test if any of them was
// written to, which in the manager would change the cache's object.
type sharedReads struct {
	mu     sync.Mutex
	handed []sharedCluster
	byKey  map[client.ObjectKey]sharedCluster
}

type sharedCluster struct{ obj, snapshot *clusterv1alpha1.Cluster }

func (s *sharedReads) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	out, ok := obj.(*clusterv1alpha1.Cluster)
	noCopy := (&client.GetOptions{}).ApplyOptions(opts).UnsafeDisableDeepCopy
	if !ok || noCopy == nil || !*noCopy {
		return c.Get(ctx, key, obj, opts...)
	}
	var stored clusterv1alpha1.Cluster
	if err := c.Get(ctx, key, &stored); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[client.ObjectKey]sharedCluster{}
	}
	e, ok := s.byKey[key]
	if !ok || e.obj.ResourceVersion != stored.ResourceVersion {
		e = sharedCluster{obj: &stored, snapshot: stored.DeepCopy()}
		s.byKey[key] = e
		s.handed = append(s.handed, e)
	}
	*out = *e.obj
	return nil
}

func (s *sharedReads) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.handed {
		if !equality.Semantic.DeepEqual(e.obj, e.snapshot) {
			t.Errorf("the reconciler wrote to the cached Cluster %s (resourceVersion %s):\nread    %+v\nbecame  %+v", e.obj.Name, e.obj.ResourceVersion, e.snapshot.Status, e.obj.Status)
		}
	}
}

// reconcile runs the reconcile that starts a probe of the cluster and, once
// the probe ends, the one that records its result, as the end of a probe
// triggers it.
func (f *statusFixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res := f.reconcileOnce(t, name)
	if f.r.probes.pending(name) {
		f.waitProbed(t, name)
		res = f.reconcileOnce(t, name)
	}
	return res
}

func (f *statusFixture) reconcileOnce(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

// pending says whether the cluster has a probe running or ended and not
// yet recorded.
func (p *probes) pending(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.byName[name]
	return ok
}

// waitProbed waits for the end of the cluster's probe.
func (f *statusFixture) waitProbed(t *testing.T, name string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-f.probed:
			if n == name {
				return
			}
		case <-deadline:
			t.Fatalf("the probe of %s did not end", name)
		}
	}
}

func (f *statusFixture) get(t *testing.T, name string) *clusterv1alpha1.Cluster {
	t.Helper()
	var c clusterv1alpha1.Cluster
	if err := f.c.Get(context.Background(), types.NamespacedName{Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestStatusNewClusterBecomesReadyWithInventory(t *testing.T) {
	f := newStatusFixture(t, fakeMembers{"m1": healthyMember()}, makeCluster("m1").Finalizer().Obj())
	res := f.reconcile(t, "m1")
	if res.RequeueAfter != 10*time.Second {
		t.Errorf("RequeueAfter = %s, want the status update frequency", res.RequeueAfter)
	}
	got := f.get(t, "m1").Status
	ready := meta.FindStatusCondition(got.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != clusterv1alpha1.ClusterReasonReady {
		t.Fatalf("Ready = %+v, want True/ClusterReady", ready)
	}
	if !ready.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("lastTransitionTime = %s, want the injected clock's %s", ready.LastTransitionTime, t0)
	}
	if !meta.IsStatusConditionTrue(got.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements) {
		t.Errorf("CompleteAPIEnablements not True: %+v", got.Conditions)
	}
	if got.KubernetesVersion != "v1.35.4" || len(got.APIEnablements) != 1 {
		t.Errorf("version %q, apiEnablements %v", got.KubernetesVersion, got.APIEnablements)
	}
	if got.NodeSummary == nil || got.NodeSummary.TotalNum != 1 || got.NodeSummary.ReadyNum != 1 {
		t.Errorf("nodeSummary = %+v", got.NodeSummary)
	}
	if got.ResourceSummary == nil || got.ResourceSummary.Allocated.Cpu().String() != "1" {
		t.Errorf("resourceSummary = %+v", got.ResourceSummary)
	}
}

func TestStatusNothingChangedWritesNothing(t *testing.T) {
	m := healthyMember()
	f := newStatusFixture(t, fakeMembers{"m1": m}, makeCluster("m1").Finalizer().Obj())
	f.reconcile(t, "m1")
	if f.writes.n != 1 {
		t.Fatalf("first reconcile wrote %d times, want 1", f.writes.n)
	}
	for i := 0; i < 6; i++ { // one minute of probes, two inventory refreshes
		f.clock.Step(10 * time.Second)
		f.reconcile(t, "m1")
	}
	if f.writes.n != 1 {
		t.Errorf("unchanged member caused %d writes, want none after the first", f.writes.n-1)
	}
	if m.collects != 3 {
		t.Errorf("inventory collected %d times in a minute, want 3 (every 30s)", m.collects)
	}
}

func TestStatusInventoryChangeIsWritten(t *testing.T) {
	m := healthyMember()
	f := newStatusFixture(t, fakeMembers{"m1": m}, makeCluster("m1").Finalizer().Obj())
	f.reconcile(t, "m1")
	m.pods = append(m.pods, corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container(resources("cpu", "2"))}}})
	f.clock.Step(30 * time.Second)
	f.reconcile(t, "m1")
	got := f.get(t, "m1").Status.ResourceSummary
	if got.Allocating.Cpu().String() != "2" {
		t.Errorf("allocating cpu = %s, want 2", got.Allocating.Cpu())
	}
	if f.writes.n != 2 {
		t.Errorf("writes = %d, want 2", f.writes.n)
	}
}

func TestStatusUnreachableMemberFailsAfterThresholdOthersUnaffected(t *testing.T) {
	m1, m2 := healthyMember(), healthyMember()
	f := newStatusFixture(t, fakeMembers{"m1": m1, "m2": m2},
		makeCluster("m1").Finalizer().Obj(), makeCluster("m2").Finalizer().Obj())
	f.reconcile(t, "m1")
	f.reconcile(t, "m2")
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.r.Metrics = metrics
	m1.down()
	before := m1.collects
	wantReady := map[time.Duration]metav1.ConditionStatus{
		10 * time.Second: metav1.ConditionTrue,
		20 * time.Second: metav1.ConditionTrue,
		30 * time.Second: metav1.ConditionTrue,
		40 * time.Second: metav1.ConditionFalse, // 30s after the first failed probe at +10s
		50 * time.Second: metav1.ConditionFalse,
	}
	for _, at := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second} {
		f.clock.SetTime(t0.Add(at))
		f.reconcile(t, "m1")
		f.reconcile(t, "m2")
		ready := meta.FindStatusCondition(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		if ready.Status != wantReady[at] {
			t.Errorf("+%s: m1 Ready = %s, want %s", at, ready.Status, wantReady[at])
		}
		if at == 40*time.Second && (ready.Reason != clusterv1alpha1.ClusterReasonNotReachable || !ready.LastTransitionTime.Time.Equal(t0.Add(at))) {
			t.Errorf("+%s: m1 Ready = %+v, want ClusterNotReachable since now", at, ready)
		}
		// The failing probes show at once, since the first of them, while
		// Ready is still held True.
		probe := meta.FindStatusCondition(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded)
		if probe == nil || probe.Status != metav1.ConditionFalse || probe.Reason != clusterv1alpha1.ClusterReasonNotReachable ||
			!probe.LastTransitionTime.Time.Equal(t0.Add(10*time.Second)) {
			t.Errorf("+%s: m1 ProbeSucceeded = %+v, want False/ClusterNotReachable since +10s", at, probe)
		}
		if !meta.IsStatusConditionTrue(f.get(t, "m2").Status.Conditions, clusterv1alpha1.ClusterConditionReady) ||
			!meta.IsStatusConditionTrue(f.get(t, "m2").Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded) {
			t.Errorf("+%s: m2 is not Ready, or its probe did not succeed", at)
		}
	}
	if m1.collects != before {
		t.Errorf("inventory of an unreachable member was collected")
	}
	if got := f.get(t, "m1").Status.KubernetesVersion; got != "v1.35.4" {
		t.Errorf("kubernetesVersion = %q: the last observation should be kept", got)
	}
	if v, ok := gaugeValue(t, reg, "lifeboat_cluster_ready_transitions_total", "m1"); !ok || v != 1 {
		t.Errorf("lifeboat_cluster_ready_transitions_total{cluster=m1} = %g (%t), want 1 (True to False)", v, ok)
	}
	if _, ok := gaugeValue(t, reg, "lifeboat_cluster_ready_transitions_total", "m2"); ok {
		t.Errorf("a transition was counted for m2, which stayed Ready")
	}
	// 2 first writes, then m1 twice (its first failed probe, Ready False)
	// and m2's 30s inventory refresh writes nothing.
	if f.writes.n != 4 {
		t.Errorf("writes = %d, want 4", f.writes.n)
	}
}

func TestStatusRecoveryAfterSuccessThreshold(t *testing.T) {
	m := healthyMember()
	stored := makeCluster("m1").Finalizer().Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, t0.Add(-time.Hour)).Obj()
	f := newStatusFixture(t, fakeMembers{"m1": m}, stored)
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		f.clock.SetTime(t0.Add(at))
		f.reconcile(t, "m1")
		if meta.IsStatusConditionTrue(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
			t.Fatalf("+%s: Ready turned True before the success threshold", at)
		}
	}
	f.clock.SetTime(t0.Add(30 * time.Second))
	f.reconcile(t, "m1")
	got := f.get(t, "m1").Status
	if !meta.IsStatusConditionTrue(got.Conditions, clusterv1alpha1.ClusterConditionReady) {
		t.Fatalf("Ready not True after the success threshold")
	}
	if got.KubernetesVersion == "" || got.NodeSummary == nil {
		t.Errorf("inventory not collected on recovery: %+v", got)
	}
}

func TestStatusCannotBuildClient(t *testing.T) {
	f := newStatusFixture(t, fakeMembers{}, makeCluster("m1").Finalizer().Obj())
	f.reconcile(t, "m1")
	ready := meta.FindStatusCondition(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != clusterv1alpha1.ClusterReasonStatusCollectionFail {
		t.Errorf("Ready = %+v, want False/StatusCollectionFailed", ready)
	}
}

func TestStatusSkips(t *testing.T) {
	pull := makeCluster("pull").Finalizer().Obj()
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	cases := map[string]*clusterv1alpha1.Cluster{
		"no finalizer yet": makeCluster("m1").Obj(),
		"pull mode":        pull,
		"deleting":         makeCluster("m1").Finalizer().Deleting(t0).Obj(),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newStatusFixture(t, fakeMembers{c.Name: healthyMember()}, c)
			if res := f.reconcile(t, c.Name); res.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %s, want none", res.RequeueAfter)
			}
			if f.writes.n != 0 {
				t.Errorf("wrote %d times, want none", f.writes.n)
			}
		})
	}
}

func TestCollectDue(t *testing.T) {
	ready := makeCluster("m1").Ready(metav1.ConditionTrue, "", t0).Version("v1").Obj()
	cases := map[string]struct {
		collected bool
		last      time.Time
		cluster   *clusterv1alpha1.Cluster
		want      bool
	}{
		"never collected by this process": {cluster: ready, want: true},
		"collected recently":              {collected: true, last: t0.Add(-10 * time.Second), cluster: ready, want: false},
		"interval passed":                 {collected: true, last: t0.Add(-30 * time.Second), cluster: ready, want: true},
		"no version stored":               {collected: true, last: t0, cluster: makeCluster("m1").Ready(metav1.ConditionTrue, "", t0).Obj(), want: true},
		"recovering":                      {collected: true, last: t0, cluster: makeCluster("m1").Ready(metav1.ConditionFalse, "", t0).Version("v1").Obj(), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := collectDue(tc.collected, tc.last, t0, 30*time.Second, tc.cluster); got != tc.want {
				t.Errorf("collectDue = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestStatusProbeBetweenPeriodsPassesThresholdOnTime: a probe triggered
// between periods (a lost connection) starts the failure window; the next
// probe is scheduled when the window ends, not at the period after it.
func TestStatusProbeBetweenPeriodsPassesThresholdOnTime(t *testing.T) {
	m := healthyMember()
	f := newStatusFixture(t, fakeMembers{"m1": m}, makeCluster("m1").Finalizer().Obj())
	f.reconcile(t, "m1") // periodic probes at +0s, +10s, ...
	m.down()
	f.clock.SetTime(t0.Add(1500 * time.Millisecond)) // triggered by the lost connection
	f.reconcile(t, "m1")
	for _, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
		f.clock.SetTime(t0.Add(at))
		if res := f.reconcile(t, "m1"); res.RequeueAfter != 10*time.Second {
			t.Errorf("+%s: RequeueAfter = %s, want the period (the window ends later)", at, res.RequeueAfter)
		}
	}
	f.clock.SetTime(t0.Add(30 * time.Second))
	if res := f.reconcile(t, "m1"); res.RequeueAfter != 1500*time.Millisecond {
		t.Errorf("+30s: RequeueAfter = %s, want 1.5s: the failure window ends at +31.5s", res.RequeueAfter)
	}
	if meta.IsStatusConditionFalse(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
		t.Fatalf("+30s: Ready False before the failure threshold")
	}
	f.clock.SetTime(t0.Add(31500 * time.Millisecond))
	res := f.reconcile(t, "m1")
	if !meta.IsStatusConditionFalse(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
		t.Fatalf("+31.5s: Ready not False when the failure threshold ended")
	}
	if res.RequeueAfter != 10*time.Second {
		t.Errorf("after the change: RequeueAfter = %s, want the period", res.RequeueAfter)
	}
}

// hangingMember is a member cut off by a network partition: its probe
// starts, then hangs until the timeout (release) and fails.
type hangingMember struct {
	*fakeMember
	started chan<- struct{}
	release <-chan struct{}
}

func (m hangingMember) Probe(ctx context.Context) ProbeResult {
	m.started <- struct{}{}
	select {
	case <-m.release:
	case <-ctx.Done():
	}
	return ProbeResult{Err: context.DeadlineExceeded}
}

type memberMap map[string]Member

func (f memberMap) For(_ context.Context, c *clusterv1alpha1.Cluster) (Member, error) {
	return f[c.Name], nil
}
func (f memberMap) Forget(string) {}

// Probes that hang until their timeout do not hold the reconcile: one
// worker starts the probes of all the members cut off at once, and every
// one is seen failing as of the start of the period, so the storm guard's
// settling window sees them all.
func TestStatusProbesOfPartitionedMembersAllStartWithinThePeriod(t *testing.T) {
	const n = 100
	started, release := make(chan struct{}, n), make(chan struct{})
	members := memberMap{}
	var clusters []*clusterv1alpha1.Cluster
	for i := range n {
		name := fmt.Sprintf("m%03d", i)
		members[name] = hangingMember{fakeMember: healthyMember(), started: started, release: release}
		clusters = append(clusters, makeCluster(name).Finalizer().Obj())
	}
	f := newStatusFixture(t, nil, clusters...)
	f.r.Members = members

	go func() { // one worker
		for _, c := range clusters {
			req := ctrl.Request{NamespacedName: types.NamespacedName{Name: c.Name}}
			if _, err := f.r.Reconcile(context.Background(), req); err != nil {
				t.Errorf("reconcile %s: %v", c.Name, err)
			}
		}
	}()
	deadline := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-started:
		case <-deadline:
			close(release)
			t.Fatalf("%d of %d probes started: hanging probes hold the worker", i, n)
		}
	}
	f.clock.Step(f.r.ProbeTimeout)
	close(release)
	for range n {
		select {
		case <-f.probed:
		case <-deadline:
			t.Fatalf("the probes did not all end")
		}
	}
	for _, c := range clusters {
		if res := f.reconcileOnce(t, c.Name); res.RequeueAfter != f.r.StatusUpdateFrequency-f.r.ProbeTimeout {
			t.Errorf("%s: next probe in %s, want %s after the start of this one", c.Name, res.RequeueAfter, f.r.StatusUpdateFrequency)
		}
		probe := meta.FindStatusCondition(f.get(t, c.Name).Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded)
		if probe == nil || probe.Status != metav1.ConditionFalse || !probe.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s: ProbeSucceeded = %+v, want False since %s", c.Name, probe, t0)
		}
	}
}

// A cluster has at most one probe in flight: a reconcile while its probe
// runs starts no other.
func TestStatusOneProbeInFlightPerCluster(t *testing.T) {
	started, release := make(chan struct{}, 4), make(chan struct{})
	f := newStatusFixture(t, nil, makeCluster("m1").Finalizer().Obj())
	f.r.Members = memberMap{"m1": hangingMember{fakeMember: healthyMember(), started: started, release: release}}
	f.reconcileOnce(t, "m1")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not start")
	}
	f.reconcileOnce(t, "m1") // a lost connection, say
	close(release)
	f.waitProbed(t, "m1")
	f.reconcileOnce(t, "m1")
	if len(started) != 0 {
		t.Fatalf("%d more probes started while one was in flight", len(started))
	}
}
