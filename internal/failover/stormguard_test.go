package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"

	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
)

// clusterWrapper builds Clusters for the storm guard and taint manager
// tests.
type clusterWrapper struct{ clusterv1alpha1.Cluster }

// makeCluster returns a Ready cluster without a region.
func makeCluster(name string) *clusterWrapper {
	c := &clusterWrapper{}
	c.Name = name
	return c.ready(metav1.ConditionTrue)
}

func (c *clusterWrapper) ready(s metav1.ConditionStatus) *clusterWrapper {
	c.Status.Conditions = []metav1.Condition{{
		Type: clusterv1alpha1.ClusterConditionReady, Status: s, Reason: "Test", LastTransitionTime: metav1.NewTime(t0),
	}}
	return c
}

func (c *clusterWrapper) down() *clusterWrapper { return c.ready(metav1.ConditionFalse) }

func (c *clusterWrapper) noConditions() *clusterWrapper {
	c.Status.Conditions = nil
	return c
}

func (c *clusterWrapper) region(r string) *clusterWrapper {
	c.Spec.Region = r
	return c
}

// taint adds a taint added at the given second (negative: no timeAdded).
func (c *clusterWrapper) taint(key string, effect corev1.TaintEffect, added int) *clusterWrapper {
	t := corev1.Taint{Key: key, Effect: effect}
	if added >= 0 {
		t.TimeAdded = mt(added)
	}
	c.Spec.Taints = append(c.Spec.Taints, t)
	return c
}

// notReadyNoExecute adds cluster.karmada.io/not-ready:NoExecute, added at
// the given second.
func (c *clusterWrapper) notReadyNoExecute(added int) *clusterWrapper {
	return c.taint(clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, added)
}

func (c *clusterWrapper) obj() *clusterv1alpha1.Cluster { return c.Cluster.DeepCopy() }

var defaultGuardConfig = NewClusterFailoverOptions().StormGuardConfig()

func TestComputeGroupState(t *testing.T) {
	cases := map[string]struct {
		ready, notReady int
		want            GroupState
	}{
		"all ready":         {ready: 5, want: GroupNormal},
		"one down of three": {ready: 2, notReady: 1, want: GroupNormal},
		"two down of three: under the floor of 3":    {ready: 1, notReady: 2, want: GroupNormal},
		"three down of five (60%)":                   {ready: 2, notReady: 3, want: GroupPartialDisruption},
		"three down of six (50%): under threshold":   {ready: 3, notReady: 3, want: GroupNormal},
		"eleven down of twenty (55%): at threshold":  {ready: 9, notReady: 11, want: GroupPartialDisruption},
		"every cluster down":                         {notReady: 3, want: GroupFullDisruption},
		"a single cluster down is a full disruption": {notReady: 1, want: GroupFullDisruption},
		"empty group": {want: GroupNormal},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := computeGroupState(tc.ready, tc.notReady, 0.55); got != tc.want {
				t.Errorf("computeGroupState(%d, %d) = %s, want %s", tc.ready, tc.notReady, got, tc.want)
			}
		})
	}
}

func TestGroupRate(t *testing.T) {
	cfg := StormGuardConfig{Rate: 50, SecondaryRate: 1, UnhealthyThreshold: 0.55, LargeGroupThreshold: 10}
	cases := map[string]struct {
		state   GroupState
		size    int
		allDown bool
		want    float64
	}{
		"normal: primary rate":                          {state: GroupNormal, size: 3, want: 50},
		"partial disruption of a large group: slower":   {state: GroupPartialDisruption, size: 11, want: 1},
		"partial disruption of a small group: stop":     {state: GroupPartialDisruption, size: 10, want: 0},
		"full disruption of one group: primary (moves)": {state: GroupFullDisruption, size: 2, want: 50},
		"every cluster down: nothing":                   {state: GroupFullDisruption, size: 3, allDown: true, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := groupRate(tc.state, tc.size, tc.allDown, cfg); got != tc.want {
				t.Errorf("groupRate = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestComputeStormGuard(t *testing.T) {
	h := func(name, group string, ready bool) clusterHealth {
		return clusterHealth{name: name, group: group, observed: true, ready: ready}
	}
	unprobed := func(name string) clusterHealth { return clusterHealth{name: name} }
	cases := map[string]struct {
		clusters []clusterHealth
		want     StormGuardStatus
	}{
		"no clusters": {},
		"one group, one down": {
			clusters: []clusterHealth{h("m1", "", false), h("m2", "", true), h("m3", "", true)},
			want: StormGuardStatus{Groups: []GroupStatus{
				{Name: "", Clusters: []string{"m1", "m2", "m3"}, NotReady: 1, State: GroupNormal, Rate: 50},
			}},
		},
		"every cluster down: the control plane is cut off, nothing moves": {
			clusters: []clusterHealth{h("m1", "", false), h("m2", "", false), h("m3", "", false)},
			want: StormGuardStatus{AllClustersDown: true, Fleet: GroupFullDisruption, Groups: []GroupStatus{
				{Name: "", Clusters: []string{"m1", "m2", "m3"}, NotReady: 3, State: GroupFullDisruption, Rate: 0},
			}},
		},
		"every cluster of every region down": {
			clusters: []clusterHealth{h("a1", "eu", false), h("b1", "us", false)},
			want: StormGuardStatus{AllClustersDown: true, Fleet: GroupFullDisruption, Groups: []GroupStatus{
				{Name: "eu", Clusters: []string{"a1"}, NotReady: 1, State: GroupFullDisruption, Rate: 0},
				{Name: "us", Clusters: []string{"b1"}, NotReady: 1, State: GroupFullDisruption, Rate: 0},
			}},
		},
		"one region down, the other up: the region's workloads move": {
			clusters: []clusterHealth{h("a1", "eu", false), h("a2", "eu", false), h("b1", "us", true)},
			want: StormGuardStatus{Groups: []GroupStatus{
				{Name: "eu", Clusters: []string{"a1", "a2"}, NotReady: 2, State: GroupFullDisruption, Rate: 50},
				{Name: "us", Clusters: []string{"b1"}, State: GroupNormal, Rate: 50},
			}},
		},
		"clusters not probed yet count neither way": {
			clusters: []clusterHealth{unprobed("m1"), unprobed("m2"), h("m3", "", false)},
			want: StormGuardStatus{AllClustersDown: true, Fleet: GroupFullDisruption, Groups: []GroupStatus{
				{Name: "", Clusters: []string{"m1", "m2", "m3"}, NotReady: 1, State: GroupFullDisruption, Rate: 0},
			}},
		},
		"a fresh control plane is not a partition": {
			clusters: []clusterHealth{unprobed("m1"), unprobed("m2")},
			want: StormGuardStatus{Groups: []GroupStatus{
				{Name: "", Clusters: []string{"m1", "m2"}, State: GroupNormal, Rate: 50},
			}},
		},
		"small group partially disrupted: held": {
			clusters: []clusterHealth{h("a1", "eu", false), h("a2", "eu", false), h("a3", "eu", false), h("a4", "eu", true), h("b1", "us", true)},
			want: StormGuardStatus{Fleet: GroupPartialDisruption, Groups: []GroupStatus{
				{Name: "eu", Clusters: []string{"a1", "a2", "a3", "a4"}, NotReady: 3, State: GroupPartialDisruption, Rate: 0},
				{Name: "us", Clusters: []string{"b1"}, State: GroupNormal, Rate: 50},
			}},
		},
		"a large region down among healthy ones, most of the fleet: it moves": {
			clusters: []clusterHealth{h("a1", "eu", false), h("a2", "eu", false), h("a3", "eu", false), h("b1", "us", true), h("b2", "us", true)},
			want: StormGuardStatus{Fleet: GroupPartialDisruption, Groups: []GroupStatus{
				{Name: "eu", Clusters: []string{"a1", "a2", "a3"}, NotReady: 3, State: GroupFullDisruption, Rate: 50},
				{Name: "us", Clusters: []string{"b1", "b2"}, State: GroupNormal, Rate: 50},
			}},
		},
		"must not: two regions down together, most of the fleet": {
			clusters: []clusterHealth{h("a1", "eu", false), h("a2", "eu", false), h("b1", "us", false), h("b2", "us", false), h("c1", "ap", true), h("c2", "ap", true)},
			want: StormGuardStatus{Fleet: GroupPartialDisruption, Groups: []GroupStatus{
				{Name: "ap", Clusters: []string{"c1", "c2"}, State: GroupNormal, Rate: 0, FleetCapped: true},
				{Name: "eu", Clusters: []string{"a1", "a2"}, NotReady: 2, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
				{Name: "us", Clusters: []string{"b1", "b2"}, NotReady: 2, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
			}},
		},
		// One cluster per region, all but one region down: each region is
		// in FullDisruption, the control plane as a whole in
		// PartialDisruption, which stops a fleet this small.
		"must not: one cluster per region, all regions but one down": {
			clusters: []clusterHealth{h("a", "eu", false), h("b", "us", false), h("c", "ap", false), h("d", "sa", false), h("e", "af", true)},
			want: StormGuardStatus{Fleet: GroupPartialDisruption, Groups: []GroupStatus{
				{Name: "af", Clusters: []string{"e"}, State: GroupNormal, Rate: 0, FleetCapped: true},
				{Name: "ap", Clusters: []string{"c"}, NotReady: 1, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
				{Name: "eu", Clusters: []string{"a"}, NotReady: 1, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
				{Name: "sa", Clusters: []string{"d"}, NotReady: 1, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
				{Name: "us", Clusters: []string{"b"}, NotReady: 1, State: GroupFullDisruption, Rate: 0, FleetCapped: true},
			}},
		},
		"one cluster per region, two regions of five down: they move": {
			clusters: []clusterHealth{h("a", "eu", false), h("b", "us", false), h("c", "ap", true), h("d", "sa", true), h("e", "af", true)},
			want: StormGuardStatus{Groups: []GroupStatus{
				{Name: "af", Clusters: []string{"e"}, State: GroupNormal, Rate: 50},
				{Name: "ap", Clusters: []string{"c"}, State: GroupNormal, Rate: 50},
				{Name: "eu", Clusters: []string{"a"}, NotReady: 1, State: GroupFullDisruption, Rate: 50},
				{Name: "sa", Clusters: []string{"d"}, State: GroupNormal, Rate: 50},
				{Name: "us", Clusters: []string{"b"}, NotReady: 1, State: GroupFullDisruption, Rate: 50},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := computeStormGuard(tc.clusters, defaultGuardConfig)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(StormGuardStatus{}, "NotReady", "Total")); diff != "" {
				t.Errorf("computeStormGuard (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("large group partially disrupted: secondary rate", func(t *testing.T) {
		var clusters []clusterHealth
		for i := 0; i < 12; i++ {
			clusters = append(clusters, h(fmt.Sprintf("m%02d", i), "", i >= 7))
		}
		got := computeStormGuard(clusters, defaultGuardConfig)
		if g := got.Groups[0]; g.State != GroupPartialDisruption || g.Rate != 1 || g.NotReady != 7 {
			t.Errorf("group = %+v, want PartialDisruption at 1/s with 7 not Ready", g)
		}
	})
}

func TestTokenBucket(t *testing.T) {
	b := newTokenBucket(2, t0)
	var waits []time.Duration
	for i := 0; i < 4; i++ {
		waits = append(waits, b.reserve(t0))
	}
	want := []time.Duration{0, 0, 500 * time.Millisecond, time.Second}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// Two seconds later the debt is paid and the bucket is full again (burst 2).
	if w := b.reserve(t0.Add(3 * time.Second)); w != 0 {
		t.Errorf("wait after refill = %s, want 0", w)
	}
	if b.tokens != 1 {
		t.Errorf("tokens = %g, want 1 (burst 2 minus one)", b.tokens)
	}
	// A fractional rate: one token, then one every 2s.
	slow := newTokenBucket(0.5, t0)
	if w := slow.reserve(t0); w != 0 {
		t.Errorf("first = %s", w)
	}
	if w := slow.reserve(t0); w != 2*time.Second {
		t.Errorf("second = %s, want 2s", w)
	}
}

// guardEnv is a storm guard over a fake client.
type guardEnv struct {
	t        *testing.T
	client   client.Client
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	registry *prometheus.Registry
	guard    *StormGuard
}

func newGuardEnv(t *testing.T, cfg StormGuardConfig, clusters ...*clusterv1alpha1.Cluster) *guardEnv {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&clusterv1alpha1.Cluster{})
	for _, c := range clusters {
		b = b.WithObjects(c)
	}
	e := &guardEnv{t: t, client: b.Build(), clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(100), registry: prometheus.NewRegistry()}
	e.guard, err = NewStormGuard(e.client, e.recorder, e.clock, cfg, e.registry)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *guardEnv) admit(key, cluster string) Admission {
	e.t.Helper()
	a, err := e.guard.Admit(context.Background(), key, cluster)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *guardEnv) setReady(name string, s metav1.ConditionStatus) {
	e.t.Helper()
	var c clusterv1alpha1.Cluster
	if err := e.client.Get(context.Background(), client.ObjectKey{Name: name}, &c); err != nil {
		e.t.Fatal(err)
	}
	c.Status.Conditions[0].Status = s
	if err := e.client.Status().Update(context.Background(), &c); err != nil {
		e.t.Fatal(err)
	}
}

func (e *guardEnv) events() []string {
	return eventstest.Drain(e.recorder)
}

func (e *guardEnv) gauge(name, group string) (float64, bool) {
	e.t.Helper()
	mfs, err := e.registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "group" && l.GetValue() == group {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func TestStormGuardPacesEvictions(t *testing.T) {
	cfg := defaultGuardConfig
	cfg.Rate = 2 // burst 2
	e := newGuardEnv(t, cfg, makeCluster("m1").down().obj(), makeCluster("m2").obj(), makeCluster("m3").obj())

	// Two at once, then one every 500ms, each with its own slot.
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second} {
		a := e.admit(fmt.Sprintf("rb/b%d@m1", i), "m1")
		if a.Allowed != (want == 0) || a.RetryAfter != want {
			t.Errorf("binding %d: %+v, want wait %s", i, a, want)
		}
	}
	// Asking again before the slot: same wait, no new token taken.
	if a := e.admit("rb/b2@m1", "m1"); a.Allowed || a.RetryAfter != 500*time.Millisecond {
		t.Errorf("early retry: %+v", a)
	}
	// At its slot the eviction goes ahead on the reserved token.
	e.clock.Step(500 * time.Millisecond)
	if a := e.admit("rb/b2@m1", "m1"); !a.Allowed {
		t.Errorf("at the slot: %+v, want allowed", a)
	}
	if a := e.admit("rb/b3@m1", "m1"); a.Allowed || a.RetryAfter != 500*time.Millisecond {
		t.Errorf("the next slot: %+v, want 500ms more", a)
	}
	// A new eviction queues after the reserved ones.
	if a := e.admit("rb/b4@m1", "m1"); a.Allowed || a.RetryAfter != time.Second {
		t.Errorf("new eviction: %+v, want 1s", a)
	}
	if got := e.events(); len(got) != 0 {
		t.Errorf("events in state Normal: %v", got)
	}
}

func TestStormGuardHoldsWhenEveryClusterIsDown(t *testing.T) {
	e := newGuardEnv(t, defaultGuardConfig,
		makeCluster("m1").down().obj(), makeCluster("m2").ready(metav1.ConditionUnknown).obj(), makeCluster("m3").noConditions().obj())
	a := e.admit("rb/x@m1", "m1")
	if a.Allowed || a.RetryAfter != stormGuardHoldRecheck || a.State != GroupFullDisruption {
		t.Fatalf("admission = %+v, want held, recheck in %s", a, stormGuardHoldRecheck)
	}
	if !strings.Contains(a.Reason, "no cluster is Ready") {
		t.Errorf("reason = %q", a.Reason)
	}
	evs := e.events()
	if len(evs) != 3 || !containsEvent(evs, "Warning", EventReasonStormGuardAllClustersDown, "evicts nothing") {
		t.Errorf("events = %v, want one AllClustersDown per cluster", evs)
	}
	if v, ok := e.gauge("lifeboat_storm_guard_state", "(none)"); !ok || v != 2 {
		t.Errorf("state gauge = %g (%t), want 2", v, ok)
	}
	if v, ok := e.gauge("lifeboat_storm_guard_eviction_rate", "(none)"); !ok || v != 0 {
		t.Errorf("rate gauge = %g (%t), want 0", v, ok)
	}
	// Same state again: no new events.
	e.admit("rb/x@m1", "m1")
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("repeated events: %v", evs)
	}

	// One cluster comes back: the rest is a normal outage again.
	e.setReady("m2", metav1.ConditionTrue)
	if a := e.admit("rb/x@m1", "m1"); !a.Allowed || a.State != GroupNormal {
		t.Errorf("after m2 recovered: %+v, want allowed in Normal", a)
	}
	if evs := e.events(); len(evs) != 3 || !containsEvent(evs, "Normal", EventReasonStormGuardNormal) {
		t.Errorf("events = %v, want StormGuardNormal on each cluster", evs)
	}
	if v, _ := e.gauge("lifeboat_storm_guard_state", "(none)"); v != 0 {
		t.Errorf("state gauge = %g, want 0", v)
	}
}

func TestStormGuardRegions(t *testing.T) {
	e := newGuardEnv(t, defaultGuardConfig,
		makeCluster("eu1").region("eu").down().obj(), makeCluster("eu2").region("eu").down().obj(),
		makeCluster("us1").region("us").obj())
	// A whole region down while another is up: its workloads move.
	if a := e.admit("rb/x@eu1", "eu1"); !a.Allowed || a.Group != "eu" || a.State != GroupFullDisruption {
		t.Errorf("admission = %+v, want allowed in eu FullDisruption", a)
	}
	evs := e.events()
	if len(evs) != 2 || !containsEvent(evs, "Warning", EventReasonStormGuardFullDisruption, "region eu") {
		t.Errorf("events = %v, want FullDisruption on eu1 and eu2 only", evs)
	}
	if v, _ := e.gauge("lifeboat_storm_guard_state", "eu"); v != 2 {
		t.Errorf("eu state = %g, want 2", v)
	}
	if v, ok := e.gauge("lifeboat_storm_guard_state", "us"); !ok || v != 0 {
		t.Errorf("us state = %g (%t), want 0", v, ok)
	}
}

func TestStormGuardPartialDisruptionOfASmallGroupHolds(t *testing.T) {
	var clusters []*clusterv1alpha1.Cluster
	for i := 1; i <= 5; i++ {
		c := makeCluster(fmt.Sprintf("m%d", i))
		if i <= 3 {
			c = c.down()
		}
		clusters = append(clusters, c.obj())
	}
	e := newGuardEnv(t, defaultGuardConfig, clusters...)
	a := e.admit("rb/x@m1", "m1")
	if a.Allowed || a.State != GroupPartialDisruption || a.RetryAfter != stormGuardHoldRecheck {
		t.Errorf("admission = %+v, want held in PartialDisruption", a)
	}
	if evs := e.events(); len(evs) != 5 || !containsEvent(evs, EventReasonStormGuardPartialDisruption, "3 of 5 clusters", "evictions stop") {
		t.Errorf("events = %v", evs)
	}
}

func TestStormGuardRateChangeDropsReservations(t *testing.T) {
	var clusters []*clusterv1alpha1.Cluster
	for i := 1; i <= 12; i++ {
		clusters = append(clusters, makeCluster(fmt.Sprintf("m%02d", i)).obj())
	}
	clusters[0] = makeCluster("m01").down().obj()
	cfg := defaultGuardConfig
	cfg.Rate = 1
	e := newGuardEnv(t, cfg, clusters...)
	if a := e.admit("a", "m01"); !a.Allowed {
		t.Fatalf("first: %+v", a)
	}
	if a := e.admit("b", "m01"); a.Allowed || a.RetryAfter != time.Second {
		t.Fatalf("second: %+v, want a 1s reservation", a)
	}
	// Seven of twelve go down: PartialDisruption of a large group, 1/s
	// becomes the secondary rate; with SecondaryRate 0.1 the old
	// reservation does not hold.
	e.guard.cfg.SecondaryRate = 0.1
	for _, n := range []string{"m02", "m03", "m04", "m05", "m06", "m07"} {
		e.setReady(n, metav1.ConditionFalse)
	}
	e.clock.Step(time.Second)
	a := e.admit("b", "m01")
	if a.State != GroupPartialDisruption {
		t.Fatalf("state = %s", a.State)
	}
	// The old reservation is dropped, and the new bucket keeps no more than
	// the old one's tokens (0 here), so "b" waits 10s at the secondary rate.
	if a.Allowed || a.RetryAfter != 10*time.Second {
		t.Errorf("after the slowdown: %+v, want a 10s wait", a)
	}
}

func TestDescribeStormGuard(t *testing.T) {
	cases := map[string]struct {
		clusters []*clusterv1alpha1.Cluster
		want     string
	}{
		"no clusters": {want: "Normal: no clusters"},
		"one group": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").down().obj(), makeCluster("m2").obj()},
			want:     "Normal: 1 of 2 clusters not Ready; evicting at up to 50/s",
		},
		"all down": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").down().obj(), makeCluster("m2").down().obj()},
			want:     "HALTED: no cluster is Ready (2 of 2 not Ready); evicting nothing, the control plane may be the one cut off",
		},
		"regions": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("a").region("eu").down().obj(), makeCluster("b").obj()},
			want: "FullDisruption: 1 of 2 clusters not Ready in 2 regions\n" +
				"  clusters without a region: Normal, 0 of 1 clusters not Ready; evicting at up to 50/s\n" +
				"  region eu: FullDisruption, 1 of 1 clusters not Ready; evicting at up to 50/s",
		},
		"one cluster per region, all but one down": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("a").region("eu").down().obj(), makeCluster("b").region("us").down().obj(),
				makeCluster("c").region("ap").down().obj(), makeCluster("d").region("sa").obj()},
			want: "FullDisruption: 3 of 4 clusters not Ready in 4 regions (PartialDisruption of the whole control plane: it caps every region's rate)\n" +
				"  region ap: FullDisruption, 1 of 1 clusters not Ready; evictions held (the whole control plane's rate)\n" +
				"  region eu: FullDisruption, 1 of 1 clusters not Ready; evictions held (the whole control plane's rate)\n" +
				"  region sa: Normal, 0 of 1 clusters not Ready; evictions held (the whole control plane's rate)\n" +
				"  region us: FullDisruption, 1 of 1 clusters not Ready; evictions held (the whole control plane's rate)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newGuardEnv(t, defaultGuardConfig, tc.clusters...)
			got, err := DescribeStormGuard(context.Background(), e.client)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("DescribeStormGuard =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestStormGuardRefreshForgetsGroups(t *testing.T) {
	e := newGuardEnv(t, defaultGuardConfig, makeCluster("a").region("eu").obj(), makeCluster("b").obj())
	if _, err := e.guard.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.gauge("lifeboat_storm_guard_state", "eu"); !ok {
		t.Fatal("no gauge for eu")
	}
	a := &clusterv1alpha1.Cluster{}
	a.Name = "a"
	if err := e.client.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := e.guard.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.gauge("lifeboat_storm_guard_state", "eu"); ok {
		t.Error("the gauge of a group without clusters is still there")
	}
}
