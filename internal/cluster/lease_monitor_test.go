package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// makePullCluster returns a Pull cluster owned by the cluster controller
// (it has the finalizer), created an hour before t0.
func makePullCluster(name string) *clusterWrapper {
	w := makeCluster(name).Finalizer()
	w.Spec.SyncMode = clusterv1alpha1.Pull
	w.Spec.SecretRef = nil
	w.Spec.APIEndpoint = ""
	w.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	return w
}

func createdAt(w *clusterWrapper, at time.Time) *clusterWrapper {
	w.CreationTimestamp = metav1.NewTime(at)
	return w
}

func withProbe(w *clusterWrapper, status metav1.ConditionStatus, reason string, since time.Time) *clusterWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: status, Reason: reason,
		Message: "set by test", LastTransitionTime: metav1.NewTime(since),
	})
	return w
}

// makeLease returns the Lease of cluster name as registration creates it
// (created two hours before t0, never renewed), renewed at renewed when
// given.
func makeLease(name string, renewed ...time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace, CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
		},
	}
	for _, at := range renewed {
		l.Spec.RenewTime = &metav1.MicroTime{Time: at}
	}
	return l
}

func condition(typ string, status metav1.ConditionStatus, reason string, since time.Time) *metav1.Condition {
	return &metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)}
}

func TestMonitorDecision(t *testing.T) {
	const grace, startup = 40 * time.Second, time.Minute
	now := t0
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	renewed := func(d time.Duration) *coordinationv1.Lease { return makeLease("m1", ago(d)) }
	const (
		ready = clusterv1alpha1.ClusterConditionReady
		probe = clusterv1alpha1.ClusterConditionProbeSucceeded
		lost  = clusterv1alpha1.ClusterReasonStatusUnknown
		never = clusterv1alpha1.ClusterReasonStatusNeverUpdated
	)
	u := metav1.ConditionUnknown
	cases := map[string]struct {
		cluster      *clusterv1alpha1.Cluster
		lease        *coordinationv1.Lease
		ready        *metav1.Condition
		probe        *metav1.Condition
		requeueAfter time.Duration
	}{
		"fresh Lease: nothing until the grace period ends": {
			cluster:      makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:        renewed(10 * time.Second),
			requeueAfter: 30 * time.Second,
		},
		"expired Lease: Ready and ProbeSucceeded Unknown, failing since the renewal": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:   renewed(41 * time.Second),
			ready:   condition(ready, u, lost, now),
			probe:   condition(probe, u, lost, ago(41*time.Second)),
		},
		"exactly at the end of the grace period: not yet, look again just after": {
			cluster:      makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:        renewed(grace),
			requeueAfter: minProbeDelay,
		},
		"a nanosecond past it: Unknown, since the renewal's second": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:   renewed(grace + time.Nanosecond),
			ready:   condition(ready, u, lost, now),
			probe:   condition(probe, u, lost, ago(41*time.Second)),
		},
		"Ready False is set to Unknown too": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReady, ago(time.Hour)).Obj(),
			lease:   renewed(time.Minute),
			ready:   condition(ready, u, lost, now),
			probe:   condition(probe, u, lost, ago(time.Minute)),
		},
		"never renewed, within the startup grace period": {
			cluster:      createdAt(makePullCluster("m1"), ago(30*time.Second)).Obj(),
			lease:        makeLease("m1"),
			requeueAfter: 30 * time.Second,
		},
		"never renewed, past the startup grace period: never updated, failing since creation": {
			cluster: createdAt(makePullCluster("m1"), ago(61*time.Second)).Obj(),
			lease:   makeLease("m1"),
			ready:   condition(ready, u, never, now),
			probe:   condition(probe, u, never, ago(61*time.Second)),
		},
		"a Lease created after the cluster starts the startup grace period again": {
			cluster: makePullCluster("m1").Obj(),
			lease: func() *coordinationv1.Lease {
				l := makeLease("m1")
				l.CreationTimestamp = metav1.NewTime(ago(30 * time.Second))
				return l
			}(),
			requeueAfter: 30 * time.Second,
		},
		"Lease missing, agent never reported: startup grace period from creation": {
			cluster: createdAt(makePullCluster("m1"), ago(61*time.Second)).Obj(),
			ready:   condition(ready, u, never, now),
			probe:   condition(probe, u, never, ago(61*time.Second)),
		},
		"Lease missing, Ready reported recently: its transition is a heartbeat": {
			cluster:      makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(10*time.Second)).Obj(),
			requeueAfter: 30 * time.Second,
		},
		"Lease missing, Ready reported long ago": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(41*time.Second)).Obj(),
			ready:   condition(ready, u, lost, now),
			probe:   condition(probe, u, lost, ago(41*time.Second)),
		},
		"Lease never renewed, Ready reported recently": {
			cluster:      makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(10*time.Second)).Obj(),
			lease:        makeLease("m1"),
			requeueAfter: 30 * time.Second,
		},
		"Lease renewed but Ready never reported: normal grace, never updated": {
			cluster: makePullCluster("m1").Obj(),
			lease:   renewed(41 * time.Second),
			ready:   condition(ready, u, never, now),
			probe:   condition(probe, u, never, ago(41*time.Second)),
		},
		"Ready already Unknown: nothing to write": {
			cluster: withProbe(makePullCluster("m1").Ready(u, lost, ago(5*time.Second)), u, lost, ago(45*time.Second)).Obj(),
			lease:   renewed(45 * time.Second),
		},
		"the monitor's own Ready=Unknown is no heartbeat: only the missing ProbeSucceeded is written": {
			cluster: makePullCluster("m1").Ready(u, lost, ago(time.Second)).Obj(),
			lease:   renewed(50 * time.Second),
			probe:   condition(probe, u, lost, ago(50*time.Second)),
		},
		"agent back: the monitor's ProbeSucceeded turns True since the renewal, Ready is left to the agent": {
			cluster:      withProbe(makePullCluster("m1").Ready(u, lost, ago(20*time.Second)), u, lost, ago(time.Minute)).Obj(),
			lease:        renewed(2 * time.Second),
			probe:        condition(probe, metav1.ConditionTrue, ReasonClusterHeartbeatResumed, ago(2*time.Second)),
			requeueAfter: 38 * time.Second,
		},
		"the agent's own ProbeSucceeded is left alone": {
			cluster: withProbe(makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)),
				metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReachable, ago(5*time.Second)).Obj(),
			lease:        renewed(2 * time.Second),
			requeueAfter: 38 * time.Second,
		},
		"leaseDurationSeconds is ignored: the grace period decides": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease: func() *coordinationv1.Lease {
				l := renewed(41 * time.Second)
				l.Spec.LeaseDurationSeconds = ptr.To[int32](300)
				return l
			}(),
			ready: condition(ready, u, lost, now),
			probe: condition(probe, u, lost, ago(41*time.Second)),
		},
		"renewTime ahead of the control plane's clock: fresh": {
			cluster:      makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:        renewed(-5 * time.Second),
			requeueAfter: 45 * time.Second,
		},
		"being deleted: not monitored": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Deleting(ago(time.Minute)).Obj(),
			lease:   renewed(time.Hour),
		},
		"Push cluster: not monitored": {
			cluster: makeCluster("m1").Finalizer().Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj(),
			lease:   renewed(time.Hour),
		},
		"no finalizer yet: not monitored": {
			cluster: func() *clusterv1alpha1.Cluster {
				c := makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, ago(time.Hour)).Obj()
				c.Finalizers = nil
				return c
			}(),
			lease: renewed(time.Hour),
		},
	}
	ignoreMessage := cmpopts.IgnoreFields(metav1.Condition{}, "Message")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotReady, gotProbe, after := MonitorDecision(tc.cluster, tc.lease, now, grace, startup)
			if diff := cmp.Diff(tc.ready, gotReady, ignoreMessage, ignoreTimeLocation); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.probe, gotProbe, ignoreMessage, ignoreTimeLocation); diff != "" {
				t.Errorf("ProbeSucceeded (-want +got):\n%s", diff)
			}
			if gotReady != nil && gotProbe != nil && gotReady.Message != gotProbe.Message {
				t.Errorf("messages differ: Ready %q, ProbeSucceeded %q", gotReady.Message, gotProbe.Message)
			}
			if after != tc.requeueAfter {
				t.Errorf("requeueAfter = %s, want %s", after, tc.requeueAfter)
			}
		})
	}
}

func TestMonitorDecisionMessages(t *testing.T) {
	const grace, startup = 40 * time.Second, time.Minute
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		lease   *coordinationv1.Lease
		want    string
	}{
		"Lease renewed": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
			lease:   makeLease("m1", t0.Add(-time.Minute)),
			want:    "the agent of cluster m1 has not renewed its Lease karmada-cluster/m1 since 2026-03-01T11:59:00Z (grace 40s)",
		},
		"Ready reported, Lease missing": {
			cluster: makePullCluster("m1").Ready(metav1.ConditionFalse, clusterv1alpha1.ClusterReasonNotReady, t0.Add(-time.Minute)).Obj(),
			want:    "the agent of cluster m1 has not renewed its Lease karmada-cluster/m1, and has not reported since Ready turned False at 2026-03-01T11:59:00Z (grace 40s)",
		},
		"never reported": {
			cluster: createdAt(makePullCluster("m1"), t0.Add(-2*time.Minute)).Obj(),
			lease:   makeLease("m1"),
			want:    "the agent of cluster m1 has neither renewed its Lease karmada-cluster/m1 nor reported the cluster's status since 2026-03-01T11:58:00Z (startup grace 1m0s)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, _, _ := MonitorDecision(tc.cluster, tc.lease, t0, grace, startup)
			if ready == nil || ready.Message != tc.want {
				t.Errorf("Ready = %+v, want the message %q", ready, tc.want)
			}
		})
	}
	back := withProbe(makePullCluster("m1").Ready(metav1.ConditionUnknown, clusterv1alpha1.ClusterReasonStatusUnknown, t0.Add(-time.Minute)),
		metav1.ConditionUnknown, clusterv1alpha1.ClusterReasonStatusUnknown, t0.Add(-2*time.Minute)).Obj()
	_, probe, _ := MonitorDecision(back, makeLease("m1", t0.Add(-time.Second)), t0, grace, startup)
	if want := "the agent of cluster m1 is heard from: it renewed its Lease at 2026-03-01T11:59:59Z"; probe == nil || probe.Message != want {
		t.Errorf("ProbeSucceeded = %+v, want the message %q", probe, want)
	}
}

type leaseFixture struct {
	r        *LeaseMonitor
	c        client.Client
	leases   client.Client
	clock    *clocktesting.FakeClock
	writes   *writeCounter
	recorder *events.FakeRecorder
	reg      *prometheus.Registry
}

func newLeaseFixture(t *testing.T, cluster *clusterv1alpha1.Cluster, lease *coordinationv1.Lease) *leaseFixture {
	t.Helper()
	w := &writeCounter{}
	c := newFakeClient(t).WithInterceptorFuncs(w.funcs()).WithObjects(cluster).Build()
	lb := newFakeClient(t)
	if lease != nil {
		lb = lb.WithObjects(lease)
	}
	leases := lb.Build()
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	rec := events.NewFakeRecorder(10)
	return &leaseFixture{
		r: &LeaseMonitor{
			Client: c, Leases: leases, Recorder: rec, Clock: clk, Metrics: metrics,
			MonitorPeriod: 5 * time.Second, GracePeriod: 40 * time.Second, StartupGracePeriod: time.Minute,
		},
		c: c, leases: leases, clock: clk, writes: w, recorder: rec, reg: reg,
	}
}

func (f *leaseFixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func (f *leaseFixture) get(t *testing.T, name string) *clusterv1alpha1.Cluster {
	t.Helper()
	var c clusterv1alpha1.Cluster
	if err := f.c.Get(context.Background(), types.NamespacedName{Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// renew renews the cluster's Lease at the fake clock's time, as the agent
// does.
func (f *leaseFixture) renew(t *testing.T, name string) {
	t.Helper()
	var l coordinationv1.Lease
	if err := f.leases.Get(context.Background(), types.NamespacedName{Namespace: LeaseNamespace, Name: name}, &l); err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: f.clock.Now()}
	if err := f.leases.Update(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
}

func (f *leaseFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestLeaseMonitorSilentAgentTurnsUnknown(t *testing.T) {
	f := newLeaseFixture(t, makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
		makeLease("m1", t0))
	wantRequeue := map[time.Duration]time.Duration{
		0:                5 * time.Second, // the monitor period
		35 * time.Second: 5 * time.Second,
		38 * time.Second: 2 * time.Second, // the end of the grace period
		40 * time.Second: minProbeDelay,   // at it: just after
	}
	for _, at := range []time.Duration{0, 35 * time.Second, 38 * time.Second, 40 * time.Second} {
		f.clock.SetTime(t0.Add(at))
		if res := f.reconcile(t, "m1"); res.RequeueAfter != wantRequeue[at] {
			t.Errorf("+%s: RequeueAfter = %s, want %s", at, res.RequeueAfter, wantRequeue[at])
		}
	}
	if f.writes.n != 0 {
		t.Fatalf("wrote %d times within the grace period, want none", f.writes.n)
	}

	f.clock.SetTime(t0.Add(40*time.Second + minProbeDelay))
	if res := f.reconcile(t, "m1"); res.RequeueAfter != 5*time.Second {
		t.Errorf("after the grace period: RequeueAfter = %s, want the monitor period", res.RequeueAfter)
	}
	got := f.get(t, "m1").Status.Conditions
	ready := meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status != metav1.ConditionUnknown || ready.Reason != clusterv1alpha1.ClusterReasonStatusUnknown ||
		!ready.LastTransitionTime.Time.Equal(t0.Add(40*time.Second)) {
		t.Errorf("Ready = %+v, want Unknown/ClusterStatusUnknown since now (to the second)", ready)
	}
	probe := meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionProbeSucceeded)
	if probe == nil || probe.Status != metav1.ConditionUnknown || !probe.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("ProbeSucceeded = %+v, want Unknown since the last renewal", probe)
	}
	if evs := f.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ClusterStatusUnknown Ready is Unknown: the agent of cluster m1 has not renewed") {
		t.Errorf("events = %q, want one Warning ClusterStatusUnknown", evs)
	}
	if v, ok := gaugeValue(t, f.reg, "lifeboat_cluster_ready_transitions_total", "m1"); !ok || v != 1 {
		t.Errorf("lifeboat_cluster_ready_transitions_total{cluster=m1} = %g (%t), want 1", v, ok)
	}

	for _, at := range []time.Duration{45 * time.Second, 50 * time.Second, 5 * time.Minute} {
		f.clock.SetTime(t0.Add(at))
		f.reconcile(t, "m1")
	}
	if f.writes.n != 1 {
		t.Errorf("writes = %d, want 1: an Unknown cluster is not written again", f.writes.n)
	}
	if evs := f.events(); len(evs) != 0 {
		t.Errorf("events = %q, want none after the change", evs)
	}
}

func TestLeaseMonitorRenewingAgentWritesNothing(t *testing.T) {
	f := newLeaseFixture(t, makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
		makeLease("m1", t0))
	for at := time.Duration(0); at <= 5*time.Minute; at += 5 * time.Second {
		f.clock.SetTime(t0.Add(at))
		if at%(10*time.Second) == 0 {
			f.renew(t, "m1")
		}
		f.reconcile(t, "m1")
	}
	if f.writes.n != 0 {
		t.Errorf("writes = %d, want none while the agent renews its Lease", f.writes.n)
	}
	if evs := f.events(); len(evs) != 0 {
		t.Errorf("events = %q, want none", evs)
	}
}

func TestLeaseMonitorAgentComesBack(t *testing.T) {
	f := newLeaseFixture(t, makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
		makeLease("m1", t0))
	f.reconcile(t, "m1") // the renewal is seen
	f.clock.SetTime(t0.Add(time.Minute))
	f.reconcile(t, "m1") // Unknown
	f.clock.SetTime(t0.Add(2 * time.Minute))
	f.renew(t, "m1")
	f.reconcile(t, "m1")
	got := f.get(t, "m1").Status.Conditions
	if !meta.IsStatusConditionPresentAndEqual(got, clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown) {
		t.Errorf("Ready = %+v, want it left Unknown for the agent to report", meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionReady))
	}
	probe := meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionProbeSucceeded)
	if probe == nil || probe.Status != metav1.ConditionTrue || probe.Reason != ReasonClusterHeartbeatResumed || !probe.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("ProbeSucceeded = %+v, want True/ClusterHeartbeatResumed since the renewal", probe)
	}
	if f.writes.n != 2 {
		t.Fatalf("writes = %d, want 2 (Unknown, then ProbeSucceeded back)", f.writes.n)
	}

	// The agent reports Ready again, and its own probe result.
	c := f.get(t, "m1")
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue,
		Reason: clusterv1alpha1.ClusterReasonReady, LastTransitionTime: metav1.NewTime(t0.Add(2*time.Minute + 10*time.Second))})
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionTrue,
		Reason: clusterv1alpha1.ClusterReasonReady})
	if err := f.c.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	agentWrites := f.writes.n
	for _, at := range []time.Duration{2*time.Minute + 10*time.Second, 2*time.Minute + 15*time.Second} {
		f.clock.SetTime(t0.Add(at))
		f.reconcile(t, "m1")
	}
	if f.writes.n != agentWrites {
		t.Errorf("the monitor wrote %d times after the agent reported Ready, want none", f.writes.n-agentWrites)
	}
}

func TestLeaseMonitorConflictRequeues(t *testing.T) {
	c := newFakeClient(t).WithObjects(makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj()).
		WithInterceptorFuncs(interceptorConflictOnStatus()).Build()
	clk := clocktesting.NewFakeClock(t0.Add(-time.Minute))
	r := &LeaseMonitor{
		Client: c, Leases: newFakeClient(t, makeLease("m1", t0.Add(-time.Minute))).Build(), Clock: clk,
		MonitorPeriod: 5 * time.Second, GracePeriod: 40 * time.Second, StartupGracePeriod: time.Minute,
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}}); err != nil {
		t.Fatal(err) // the renewal is seen
	}
	clk.SetTime(t0)
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "m1"}})
	if err != nil || res.RequeueAfter != time.Second {
		t.Errorf("Reconcile = %+v, %v; want a requeue after 1s and no error", res, err)
	}
}

func TestLeaseMonitorSkips(t *testing.T) {
	cases := map[string]*clusterv1alpha1.Cluster{
		"Push cluster":    makeCluster("m1").Finalizer().Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
		"being deleted":   makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Deleting(t0).Obj(),
		"no finalizer":    func() *clusterv1alpha1.Cluster { c := makePullCluster("m1").Obj(); c.Finalizers = nil; return c }(),
		"another cluster": makePullCluster("other").Obj(),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newLeaseFixture(t, c, makeLease("m1", t0.Add(-time.Hour)))
			if res := f.reconcile(t, "m1"); res.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %s, want none", res.RequeueAfter)
			}
			if f.writes.n != 0 {
				t.Errorf("wrote %d times, want none", f.writes.n)
			}
		})
	}
}

func TestLeaseMonitorEvents(t *testing.T) {
	pull := makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Obj()
	with := func(mutate func(c *clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
		c := pull.DeepCopy()
		mutate(c)
		return c
	}
	push := makeCluster("m1").Finalizer().Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0).Obj()
	cases := map[string]struct {
		old, new *clusterv1alpha1.Cluster
		want     bool
	}{
		"Push cluster's Ready changed": {old: push, new: makeCluster("m1").Finalizer().Ready(metav1.ConditionFalse, "", t0).Obj(), want: false},
		"Pull cluster's Ready changed": {old: pull, new: with(func(c *clusterv1alpha1.Cluster) { c.Status.Conditions[0].Status = metav1.ConditionFalse }), want: true},
		"Pull cluster's ProbeSucceeded added": {old: pull, new: with(func(c *clusterv1alpha1.Cluster) {
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionTrue})
		}), want: true},
		"Pull cluster's summary changed": {old: pull, new: with(func(c *clusterv1alpha1.Cluster) { c.Status.KubernetesVersion = "v1.35.4" }), want: false},
		"Push cluster turned Pull":       {old: push, new: with(func(c *clusterv1alpha1.Cluster) { c.Generation = 2 }), want: true},
		"Pull cluster being deleted": {old: pull, new: with(func(c *clusterv1alpha1.Cluster) {
			c.DeletionTimestamp = &metav1.Time{Time: t0}
		}), want: true},
	}
	p := pullClusterEvents()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %t, want %t", got, tc.want)
			}
		})
	}
	if p.Create(event.CreateEvent{Object: push}) || !p.Create(event.CreateEvent{Object: pull}) {
		t.Error("Create should let through Pull clusters only")
	}
}

func TestLeaseMonitorSetupWithManager(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{Scheme: testScheme(t), Metrics: metricsserver.Options{BindAddress: "0"}, Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &LeaseMonitor{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("cluster-lease-monitor"), Clock: clocktesting.NewFakePassiveClock(t0),
		MonitorPeriod: 5 * time.Second, GracePeriod: 40 * time.Second, StartupGracePeriod: time.Minute, ConcurrentSyncs: 2}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if r.Leases == nil {
		t.Error("Leases not set: the monitor reads Leases from its own cache")
	}
}

func TestLeaseMonitorFlags(t *testing.T) {
	o := NewOptions()
	if o.MonitorPeriod != 5*time.Second || o.MonitorGracePeriod != 40*time.Second || o.StartupGracePeriod != time.Minute {
		t.Errorf("defaults = %s / %s / %s, want Karmada's 5s / 40s / 1m", o.MonitorPeriod, o.MonitorGracePeriod, o.StartupGracePeriod)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--cluster-monitor-period=1s", "--cluster-monitor-grace-period=20s", "--cluster-startup-grace-period=2m"}); err != nil {
		t.Fatal(err)
	}
	if o.MonitorPeriod != time.Second || o.MonitorGracePeriod != 20*time.Second || o.StartupGracePeriod != 2*time.Minute {
		t.Errorf("parsed = %s / %s / %s", o.MonitorPeriod, o.MonitorGracePeriod, o.StartupGracePeriod)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.MonitorPeriod = 0 },
		func(o *Options) { o.MonitorGracePeriod = 0 },
		func(o *Options) { o.StartupGracePeriod = -time.Second },
	} {
		o := NewOptions()
		bad(o)
		if o.Validate() == nil {
			t.Errorf("Validate accepted %+v", o)
		}
	}
}

// interceptorConflictOnStatus makes every status update fail with a
// conflict, as when the agent wrote the Cluster meanwhile.
func interceptorConflictOnStatus() interceptor.Funcs {
	return interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: clusterv1alpha1.GroupName, Resource: "clusters"}, "m1", errors.New("the object has been modified"))
		},
	}
}

// A Pull cluster the monitor marked Unknown gets the same scheduling taint
// as a Push cluster would: the taint controller reads Ready, not syncMode.
func TestLeaseMonitorUnknownPullClusterIsTaintedUnreachable(t *testing.T) {
	c := makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj()
	ready, _, _ := MonitorDecision(c, makeLease("m1", t0.Add(-time.Minute)), t0, 40*time.Second, time.Minute)
	if ready == nil {
		t.Fatal("no Ready=Unknown decided")
	}
	meta.SetStatusCondition(&c.Status.Conditions, *ready)
	p := planTaints(c, t0, FlapDamping{})
	want := []corev1.Taint{taintAt(clusterv1alpha1.TaintClusterUnreachable, "", corev1.TaintEffectNoSchedule, t0)}
	if diff := cmp.Diff(want, p.taints, ignoreTimeLocation); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
}

// An agent whose clock runs an hour ahead renewed its Lease once and died:
// the grace counts from when the monitor saw the renewal, not from the
// time the agent wrote.
func TestLeaseMonitorHeartbeatFromAClockAhead(t *testing.T) {
	for name, renew := range map[string]time.Time{"an hour ahead": t0.Add(time.Hour), "far future": time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)} {
		t.Run(name, func(t *testing.T) {
			f := newLeaseFixture(t, makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
				makeLease("m1", renew))
			if res := f.reconcile(t, "m1"); res.RequeueAfter != f.r.MonitorPeriod {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, f.r.MonitorPeriod)
			}
			f.clock.SetTime(t0.Add(f.r.GracePeriod))
			f.reconcile(t, "m1")
			if !meta.IsStatusConditionTrue(f.get(t, "m1").Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				t.Fatalf("Unknown within the grace of the first sight of the renewal")
			}
			f.clock.SetTime(t0.Add(f.r.GracePeriod + time.Second))
			f.reconcile(t, "m1")
			got := f.get(t, "m1").Status.Conditions
			if !meta.IsStatusConditionPresentAndEqual(got, clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown) {
				t.Fatalf("Ready = %+v, want Unknown a grace after the renewal was seen", meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionReady))
			}
			if probe := meta.FindStatusCondition(got, clusterv1alpha1.ClusterConditionProbeSucceeded); probe == nil || !probe.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("ProbeSucceeded = %+v, want Unknown since the renewal was seen", probe)
			}
		})
	}
}

// The time a renewal was seen is forgotten with the cluster.
func TestLeaseMonitorForgetsDeletedCluster(t *testing.T) {
	f := newLeaseFixture(t, makePullCluster("m1").Ready(metav1.ConditionTrue, clusterv1alpha1.ClusterReasonReady, t0.Add(-time.Hour)).Obj(),
		makeLease("m1", t0))
	f.reconcile(t, "m1")
	if err := f.c.Delete(context.Background(), f.get(t, "m1")); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "m1")
	if n := len(f.r.heard.byName); n != 0 {
		t.Fatalf("%d clusters remembered after the deletion", n)
	}
}
