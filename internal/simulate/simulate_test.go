package simulate

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// TestClusterFailover checks each binding's outcome when member clusters
// fail, against docs/cluster-failover.md ("How long"): with P = 10s,
// F = 30s, T = 5s and a toleration of S seconds, the eviction is written
// between max(F + S, P + F + T) (the member refuses connections) and
// P + F + T + max(S, P) (it goes silent) after the failure.
func TestClusterFailover(t *testing.T) {
	m2 := []string{"member2"}
	cases := map[string]struct {
		snap func(*Snapshot)
		b    Binding
		fail []string
		// want
		result     string
		after      []string
		replicas   map[string]int32
		toleration string
		at         *Seconds
		mode       policyv1alpha1.PurgeMode
		state      map[string]string
		reason     string
	}{
		"untolerated Duplicated": {
			b: binding("nginx"), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"},
			toleration: "untolerated", at: &Seconds{Min: 45, Max: 55}, mode: policyv1alpha1.PurgeModeGracefully,
		},
		"tolerated for 20s": {
			b: binding("nginx", tolerateNotReady(ptr.To[int64](20))), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"},
			toleration: "tolerated for 20s", at: &Seconds{Min: 50, Max: 65},
		},
		"tolerated for 300s": {
			b: binding("nginx", tolerateNotReady(ptr.To[int64](300))), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"},
			toleration: "tolerated for 300s", at: &Seconds{Min: 330, Max: 345},
		},
		"tolerated for 0s": {
			b: binding("nginx", tolerateNotReady(ptr.To[int64](0))), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"},
			toleration: "tolerated for 0s", at: &Seconds{Min: 45, Max: 55},
		},
		"tolerated forever": {
			b: binding("nginx", tolerateNotReady(nil)), fail: m2,
			result: ResultTolerated, after: []string{"member1", "member2", "member3"},
			toleration: "tolerated forever",
		},
		"pinned to the failed cluster": {
			b: binding("nginx", affinity("member2"), scheduledOn("member2", 2)), fail: m2,
			result: ResultStays, after: []string{}, toleration: "untolerated", at: &Seconds{Min: 45, Max: 55},
			reason: "no other cluster fits",
		},
		"released (its policy deleted): not evicted": {
			b: binding("nginx", func(b *Binding) { b.Released = true }), fail: m2,
			result: ResultNotEvicted, after: []string{"member1", "member2", "member3"}, reason: "no policy claims it",
		},
		"scheduling suspended: evicted, and not placed again": {
			b: binding("nginx", func(b *Binding) { b.Spec.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)} }), fail: m2,
			result: ResultStays, after: []string{"member1", "member3"}, reason: "suspended",
		},
		"Divided Weighted moves the replicas to the other weighted cluster": {
			b: binding("nginx", replicas(4), affinity("member1", "member2"),
				dividedWeighted(map[string]int64{"member1": 1, "member2": 1}), scheduledOn("member1", 2, "member2", 2)),
			fail:   m2,
			result: ResultEvicted, after: []string{"member1"}, replicas: map[string]int32{"member1": 4},
		},
		"clusterAffinities fall back to the backup term": {
			b: binding("nginx", affinityTerms([]string{"member2"}, []string{"member3"}), observedAffinity("term0"),
				scheduledOn("member2", 2)),
			fail:   m2,
			result: ResultEvicted, after: []string{"member3"},
		},
		"all clusters failed: the storm guard halts": {
			b: binding("nginx"), fail: []string{"member1", "member2", "member3"},
			result: ResultHeld, after: []string{"member1", "member2", "member3"},
			reason: "no cluster is Ready",
		},
		"two of three failed: evicted (not a partial disruption below 3)": {
			b: binding("nginx"), fail: []string{"member1", "member2"},
			result: ResultEvicted, after: []string{"member3"}, at: &Seconds{Min: 45, Max: 55},
		},
		"three of four failed: a small group in partial disruption halts": {
			snap:   func(s *Snapshot) { s.Clusters = append(s.Clusters, readyCluster("member4")) },
			b:      binding("nginx", affinity("member1", "member2", "member3", "member4")),
			fail:   []string{"member1", "member2", "member3"},
			result: ResultHeld, after: []string{"member1", "member2", "member3"},
			reason: "not Ready in a group of 10 or fewer",
		},
		"a failed region fails over to another region": {
			snap: func(s *Snapshot) {
				s.Clusters[0].Spec.Region = "us"
				s.Clusters[1].Spec.Region = "us"
				s.Clusters[2].Spec.Region = "eu"
			},
			b: binding("nginx"), fail: []string{"member1", "member2"},
			result: ResultEvicted, after: []string{"member3"}, at: &Seconds{Min: 45, Max: 55},
		},
		"purge mode from spec.failover.cluster": {
			b: binding("nginx", clusterFailover(policyv1alpha1.PurgeModeDirectly)), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"}, mode: policyv1alpha1.PurgeModeDirectly,
		},
		"the old spelling of the purge mode": {
			b: binding("nginx", clusterFailover(policyv1alpha1.PurgeModeImmediately)), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"}, mode: policyv1alpha1.PurgeModeDirectly,
		},
		"the default purge mode from the settings": {
			snap: func(s *Snapshot) { s.Settings.DefaultPurgeMode = policyv1alpha1.PurgeModeDirectly },
			b:    binding("nginx"), fail: m2,
			result: ResultEvicted, after: []string{"member1", "member3"}, mode: policyv1alpha1.PurgeModeDirectly,
		},
		"state preservation": {
			b: binding("nginx",
				clusterFailover("", policyv1alpha1.StatePreservationRule{AliasLabelName: "example.io/job-id", JSONPath: "{ .jobID }"}),
				reflected("member1", map[string]any{"jobID": "job-1"}),
				reflected("member2", map[string]any{"jobID": "job-2"})),
			fail:   m2,
			result: ResultEvicted, after: []string{"member1", "member3"}, mode: policyv1alpha1.PurgeModeGracefully,
			state: map[string]string{"example.io/job-id": "job-2"},
		},
		"taint eviction off in the controller manager": {
			snap: func(s *Snapshot) { s.Settings.TaintEviction = false },
			b:    binding("nginx"), fail: m2,
			result: ResultNotEvicted, after: []string{"member1", "member2", "member3"},
			reason: "cluster failover is off",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.b)
			if tc.snap != nil {
				tc.snap(&snap)
			}
			r := run(t, snap, Scenario{FailClusters: tc.fail})
			o := outcome(t, r, "nginx")
			if o.Result != tc.result {
				t.Fatalf("result = %s (%s), want %s; steps:\n%s", o.Result, o.Reason, tc.result, strings.Join(o.Steps, "\n"))
			}
			if diff := cmp.Diff(tc.after, names(o.After)); diff != "" {
				t.Errorf("after (-want +got):\n%s", diff)
			}
			if tc.replicas != nil {
				got := map[string]int32{}
				for _, c := range o.After {
					got[c.Name] = c.Replicas
				}
				if diff := cmp.Diff(tc.replicas, got); diff != "" {
					t.Errorf("replicas after (-want +got):\n%s", diff)
				}
				if sum(o.After) != tc.b.Spec.Replicas {
					t.Errorf("replicas after add up to %d, want %d", sum(o.After), tc.b.Spec.Replicas)
				}
			}
			if tc.reason != "" && !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("reason = %q, want it to mention %q", o.Reason, tc.reason)
			}
			if tc.result == ResultHeld {
				for _, e := range o.Evictions {
					if e.At != nil || e.Held == "" {
						t.Errorf("held eviction %+v: want no time and the guard's reason", e)
					}
				}
				return
			}
			if tc.result == ResultNotEvicted {
				if len(o.Evictions) != 0 {
					t.Errorf("evictions = %+v, want none", o.Evictions)
				}
				return
			}
			e := o.evictionFrom(t, "member2")
			if tc.toleration != "" && e.Toleration != tc.toleration {
				t.Errorf("toleration = %q, want %q", e.Toleration, tc.toleration)
			}
			if tc.result == ResultTolerated {
				if e.At != nil || o.HealthyAt != nil {
					t.Errorf("tolerated: at = %v, healthyAt = %v, want none", e.At, o.HealthyAt)
				}
				return
			}
			if tc.at != nil && (e.At == nil || *e.At != *tc.at) {
				t.Errorf("at = %v, want %v", e.At, tc.at)
			}
			if tc.mode != "" && e.PurgeMode != tc.mode {
				t.Errorf("purge mode = %s, want %s", e.PurgeMode, tc.mode)
			}
			if diff := cmp.Diff(tc.state, e.State); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExplainSteps checks that the steps say why: the toleration and the
// scheduler's decision.
func TestExplainSteps(t *testing.T) {
	r := run(t, snapshot(binding("nginx", tolerateNotReady(ptr.To[int64](20)))), Scenario{FailClusters: []string{"member2"}})
	steps := strings.Join(outcome(t, r, "nginx").Steps, "\n")
	for _, want := range []string{
		"member2: the taint cluster.karmada.io/not-ready:NoExecute is tolerated for 20s",
		"scheduler: {member1:2, member3:2}",
		"purge mode Gracefully",
	} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps do not mention %q:\n%s", want, steps)
		}
	}
}

// TestPacing checks that evictions from one group are paced by the storm
// guard's token bucket: a burst of B = max(1, floor(R)), then one every
// 1/R seconds.
func TestPacing(t *testing.T) {
	cases := map[string]struct {
		bindings int
		rate     float64
		// wantLast is the last eviction's earliest time.
		wantLast float64
	}{
		"within the burst":         {bindings: 50, rate: 50, wantLast: 45},
		"120 at 50/s":              {bindings: 120, rate: 50, wantLast: 45 + float64(120-50)/50},
		"a rate below 1: burst 1":  {bindings: 3, rate: 0.5, wantLast: 45 + 2/0.5},
		"a fractional rate above1": {bindings: 5, rate: 1.5, wantLast: 45 + (5-1)/1.5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var bs []Binding
			for i := 0; i < tc.bindings; i++ {
				bs = append(bs, binding(fmt.Sprintf("app%03d", i)))
			}
			snap := snapshot(bs...)
			snap.Settings.EvictionRate = tc.rate
			r := run(t, snap, Scenario{FailClusters: []string{"member2"}})
			if r.Totals.Evicted != tc.bindings {
				t.Fatalf("evicted = %d, want %d", r.Totals.Evicted, tc.bindings)
			}
			// All are due at once, so each may get the first token or the
			// last: its range spans the whole pacing.
			for _, o := range r.Outcomes {
				e := o.evictionFrom(t, "member2")
				if math.Abs(e.At.Min-45) > 0.1 || math.Abs(e.At.Max-(55+tc.wantLast-45)) > 0.1 {
					t.Errorf("%s: at = %v, want 45–%.1fs", o.Key(), e.At, 55+tc.wantLast-45)
				}
			}
			last := r.Totals.AllEvicted
			if last == nil {
				t.Fatal("no allEvicted")
			}
			if math.Abs(last.Min-tc.wantLast) > 0.1 {
				t.Errorf("last eviction at %v, want %.1fs at the earliest", last, tc.wantLast)
			}
			if math.Abs((last.Max-55)-(last.Min-45)) > 0.1 {
				t.Errorf("last eviction at %v: the pacing differs between the earliest and latest", last)
			}
			if len(r.Totals.Guard) != 1 || r.Totals.Guard[0].Evictions != tc.bindings {
				t.Fatalf("guard = %+v, want one group with %d evictions", r.Totals.Guard, tc.bindings)
			}
			if g := r.Totals.Guard[0]; math.Abs(g.Span.Min-(tc.wantLast-45)) > 0.1 || g.Rate != tc.rate {
				t.Errorf("guard = %+v, want span %.1fs at rate %g", g, tc.wantLast-45, tc.rate)
			}
		})
	}
}

// TestApplicationFailover checks --unhealthy: the eviction is written
// tolerationSeconds after the application turned Unhealthy, with the
// purge mode of spec.failover.application.
func TestApplicationFailover(t *testing.T) {
	unhealthy := func(cluster string) *Unhealthy {
		return &Unhealthy{Kind: KindResourceBinding, Binding: "default/nginx-deployment", Cluster: cluster}
	}
	cases := map[string]struct {
		b         Binding
		settings  func(*failover.Settings)
		unhealthy *Unhealthy
		result    string
		after     []string
		at        *Seconds
		mode      policyv1alpha1.PurgeMode
		reason    string
		err       string
	}{
		"evicted after its tolerationSeconds": {
			b: binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly)), unhealthy: unhealthy("member2"),
			result: ResultEvicted, after: []string{"member1", "member3"}, at: &Seconds{Min: 30, Max: 30}, mode: policyv1alpha1.PurgeModeDirectly,
		},
		"tolerationSeconds 0": {
			b: binding("nginx", appFailover(0, policyv1alpha1.PurgeModeGracefully)), unhealthy: unhealthy("member2"),
			result: ResultEvicted, after: []string{"member1", "member3"}, at: &Seconds{Min: 0, Max: 0}, mode: policyv1alpha1.PurgeModeGracefully,
		},
		"pinned: stays": {
			b:         binding("nginx", appFailover(30, policyv1alpha1.PurgeModeGracefully), affinity("member2"), scheduledOn("member2", 2)),
			unhealthy: unhealthy("member2"),
			result:    ResultStays, after: []string{}, reason: "no other cluster fits",
		},
		"no failover.application": {
			b: binding("nginx"), unhealthy: unhealthy("member2"),
			result: ResultNotEvicted, after: []string{"member1", "member2", "member3"}, reason: "no failover.application",
		},
		"application failover off in the controller manager": {
			b: binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly)), unhealthy: unhealthy("member2"),
			settings: func(s *failover.Settings) { s.ApplicationFailover = false },
			result:   ResultNotEvicted, after: []string{"member1", "member2", "member3"}, reason: "application failover is off",
		},
		"not scheduled on the cluster": {
			b: binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly), scheduledOn("member1", 2)), unhealthy: unhealthy("member2"),
			err: "is not scheduled on member2",
		},
		"unknown cluster": {
			b: binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly)), unhealthy: unhealthy("member9"),
			err: `no cluster "member9"; the clusters are: member1, member2, member3`,
		},
		"unknown binding": {
			b:         binding("nginx"),
			unhealthy: &Unhealthy{Kind: KindResourceBinding, Binding: "default/other", Cluster: "member2"},
			err:       "no ResourceBinding default/other",
		},
		"the kind must match": {
			b:         binding("nginx"),
			unhealthy: &Unhealthy{Kind: KindClusterResourceBinding, Binding: "default/nginx-deployment", Cluster: "member2"},
			err:       "no ClusterResourceBinding default/nginx-deployment",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.b)
			if tc.settings != nil {
				tc.settings(&snap.Settings)
			}
			r, err := Run(snap, Scenario{Unhealthy: tc.unhealthy})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(r.Outcomes) != 1 {
				t.Fatalf("outcomes = %+v, want one", r.Outcomes)
			}
			o := r.Outcomes[0]
			if o.Result != tc.result {
				t.Fatalf("result = %s (%s), want %s", o.Result, o.Reason, tc.result)
			}
			if diff := cmp.Diff(tc.after, names(o.After)); diff != "" {
				t.Errorf("after (-want +got):\n%s", diff)
			}
			if tc.reason != "" && !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("reason = %q, want it to mention %q", o.Reason, tc.reason)
			}
			if tc.at == nil {
				return
			}
			e := o.evictionFrom(t, "member2")
			if e.At == nil || *e.At != *tc.at || e.PurgeMode != tc.mode {
				t.Errorf("eviction = %+v, want at %v with purge mode %s", e, tc.at, tc.mode)
			}
			if o.HealthyAt == nil || *o.HealthyAt != *tc.at {
				t.Errorf("healthyAt = %v, want %v (no start-up time)", o.HealthyAt, tc.at)
			}
		})
	}
}

// TestApplicationFailoverStartupTime checks that HealthyAt adds the
// assumed start-up time.
func TestApplicationFailoverStartupTime(t *testing.T) {
	r := run(t, snapshot(binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly))), Scenario{
		Unhealthy:   &Unhealthy{Kind: KindResourceBinding, Binding: "default/nginx-deployment", Cluster: "member2"},
		StartupTime: 10 * time.Second,
	})
	if h := r.Outcomes[0].HealthyAt; h == nil || *h != (Seconds{Min: 40, Max: 40}) {
		t.Errorf("healthyAt = %v, want 40s", h)
	}
}

// TestBadScenario checks the scenarios Run refuses.
func TestBadScenario(t *testing.T) {
	cases := map[string]struct {
		sc  Scenario
		err string
	}{
		"empty":                     {sc: Scenario{}, err: "nothing to simulate"},
		"an unknown failed cluster": {sc: Scenario{FailClusters: []string{"member9"}}, err: `--fail-cluster: no cluster "member9"; the clusters are: member1, member2, member3`},
		"an unknown tainted cluster": {
			sc:  Scenario{Taints: map[string][]string{"member9": {"maintenance:NoExecute"}}},
			err: `--taint: no cluster "member9"`,
		},
		"a bad taint": {
			sc:  Scenario{Taints: map[string][]string{"member2": {"maintenance:Sometimes"}}},
			err: "--taint member2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Run(snapshot(binding("nginx")), tc.sc)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.err)
			}
		})
	}
}

// TestTaintScenario checks --taint: a NoExecute taint added now evicts at
// once (no settling window: the cluster is healthy), a NoSchedule one
// evicts nothing.
func TestTaintScenario(t *testing.T) {
	cases := map[string]struct {
		taint      string
		result     string
		toleration string
		at         *Seconds
	}{
		"NoExecute":  {taint: "maintenance:NoExecute", result: ResultEvicted, toleration: "untolerated", at: &Seconds{}},
		"NoSchedule": {taint: "maintenance=soon:NoSchedule", result: ResultTolerated, toleration: "no NoExecute taint"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := run(t, snapshot(binding("nginx")), Scenario{Taints: map[string][]string{"member2": {tc.taint}}})
			o := outcome(t, r, "nginx")
			if o.Result != tc.result {
				t.Fatalf("result = %s (%s), want %s", o.Result, o.Reason, tc.result)
			}
			e := o.evictionFrom(t, "member2")
			if e.Toleration != tc.toleration {
				t.Errorf("toleration = %q, want %q", e.Toleration, tc.toleration)
			}
			if (tc.at == nil) != (e.At == nil) || (tc.at != nil && *e.At != *tc.at) {
				t.Errorf("at = %v, want %v", e.At, tc.at)
			}
		})
	}
}

// TestExtremeInput checks values at the edges of what the API allows, and
// past them: nothing panics, times do not overflow into the past and
// totals do not wrap around.
func TestExtremeInput(t *testing.T) {
	cases := map[string]struct {
		b     Binding
		check func(t *testing.T, r *Report)
	}{
		"tolerationSeconds at the API's maximum": {
			b: binding("nginx", tolerateNotReady(ptr.To[int64](math.MaxInt32))),
			check: func(t *testing.T, r *Report) {
				e := outcome(t, r, "nginx").evictionFrom(t, "member2")
				if e.At == nil || e.At.Min != 30+math.MaxInt32 || e.At.Max != 45+math.MaxInt32 {
					t.Errorf("at = %v, want %d–%ds", e.At, 30+math.MaxInt32, 45+math.MaxInt32)
				}
			},
		},
		"tolerationSeconds near MaxInt64": {
			b: binding("nginx", tolerateNotReady(ptr.To[int64](math.MaxInt64-1))),
			check: func(t *testing.T, r *Report) {
				e := outcome(t, r, "nginx").evictionFrom(t, "member2")
				if e.At == nil || e.At.Min < 1e9 || e.At.Max < e.At.Min {
					t.Errorf("at = %v, want far in the future", e.At)
				}
			},
		},
		// Duplicated: a Divided binding this large would spend seconds in
		// the scheduler's division, one replica at a time.
		"MaxInt32 replicas with CPU requests": {
			b: binding("nginx", replicas(math.MaxInt32), requests("1", "1Gi"),
				scheduledOn("member1", math.MaxInt32, "member2", math.MaxInt32)),
			check: func(t *testing.T, r *Report) {
				o := outcome(t, r, "nginx")
				if o.Result != ResultEvicted {
					t.Fatalf("result %s (%s), want Evicted", o.Result, o.Reason)
				}
				if diff := cmp.Diff([]string{"member1", "member3"}, names(o.After)); diff != "" {
					t.Fatalf("after (-want +got):\n%s", diff)
				}
				if len(r.Totals.Clusters) != 1 || r.Totals.Clusters[0].Cluster != "member3" {
					t.Fatalf("clusters = %+v, want member3", r.Totals.Clusters)
				}
				l := r.Totals.Clusters[0]
				if l.Replicas != math.MaxInt32 || l.Fits {
					t.Errorf("load = %+v, want %d replicas that do not fit", l, math.MaxInt32)
				}
				if l.CPU.MilliValue() != int64(math.MaxInt32)*1000 || l.Memory.Cmp(resource.MustParse("2147483647Gi")) != 0 {
					t.Errorf("requests = %s CPU, %s memory, want %d CPU and %dGi", l.CPU.String(), l.Memory.String(), math.MaxInt32, math.MaxInt32)
				}
				if len(r.Totals.Warnings) != 3 {
					t.Errorf("warnings = %q, want pods, CPU and memory", r.Totals.Warnings)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.check(t, run(t, snapshot(tc.b), Scenario{FailClusters: []string{"member2"}}))
		})
	}
}

// TestAlreadyFailed checks a cluster that failed before the simulation
// starts (an hour ago, its taint in place): an eviction that is already
// due is written at once, not in the past, and a toleration still running
// ends when it would have.
func TestAlreadyFailed(t *testing.T) {
	cases := map[string]struct {
		b  Binding
		at Seconds
	}{
		"untolerated":           {b: binding("nginx"), at: Seconds{}},
		"tolerated for 300s":    {b: binding("nginx", tolerateNotReady(ptr.To[int64](300))), at: Seconds{}},
		"tolerated for an hour": {b: binding("nginx", tolerateNotReady(ptr.To[int64](3700))), at: Seconds{Min: 100, Max: 100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.b)
			c := &snap.Clusters[1]
			hourAgo := metav1.NewTime(now.Add(-time.Hour))
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse, Reason: "ClusterNotReachable", LastTransitionTime: hourAgo})
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionFalse, Reason: "ProbeFailed", LastTransitionTime: hourAgo})
			c.Spec.Taints = []corev1.Taint{{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &hourAgo}}
			r := run(t, snap, Scenario{FailClusters: []string{"member2"}})
			o := outcome(t, r, "nginx")
			if o.Result != ResultEvicted {
				t.Fatalf("result = %s (%s), want Evicted", o.Result, o.Reason)
			}
			if e := o.evictionFrom(t, "member2"); e.At == nil || *e.At != tc.at {
				t.Errorf("at = %v, want %v; steps:\n%s", e.At, tc.at, strings.Join(o.Steps, "\n"))
			}
		})
	}
}

// TestApplicationFailoverRunningTimer checks an application that is
// already Unhealthy in the cluster: application failover's timer
// (status.unhealthyClusters) runs from when it started, not from now.
func TestApplicationFailoverRunningTimer(t *testing.T) {
	cases := map[string]struct {
		since time.Duration // before now
		at    float64
	}{
		"started 20s ago":       {since: 20 * time.Second, at: 10},
		"started long ago: now": {since: time.Hour, at: 0},
		"a timer in the future": {since: -5 * time.Second, at: 35},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := binding("nginx", appFailover(30, policyv1alpha1.PurgeModeDirectly))
			b.Status.UnhealthyClusters = []workv1alpha2.UnhealthyCluster{
				{ClusterName: "member1", UnhealthySince: metav1.NewTime(now.Add(-time.Hour))},
				{ClusterName: "member2", UnhealthySince: metav1.NewTime(now.Add(-tc.since))},
			}
			r := run(t, snapshot(b), Scenario{Unhealthy: &Unhealthy{Kind: KindResourceBinding, Binding: "default/nginx-deployment", Cluster: "member2"}})
			o := r.Outcomes[0]
			if e := o.evictionFrom(t, "member2"); e.At == nil || *e.At != (Seconds{Min: tc.at, Max: tc.at}) {
				t.Errorf("at = %v, want %gs; steps:\n%s", e.At, tc.at, strings.Join(o.Steps, "\n"))
			}
			if o.HealthyAt == nil || o.HealthyAt.Min != tc.at {
				t.Errorf("healthyAt = %v, want %gs", o.HealthyAt, tc.at)
			}
		})
	}
}
