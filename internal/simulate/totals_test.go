package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestClusterLoad checks what a receiving cluster is told it gets: the
// replicas added, their requests, and whether they fit in allocatable −
// allocated − allocating.
func TestClusterLoad(t *testing.T) {
	// nginx runs on member1 and member2; member3 receives its copy.
	b := func(cpu, mem string) Binding {
		return binding("nginx", replicas(3), requests(cpu, mem), scheduledOn("member1", 3, "member2", 3))
	}
	cases := map[string]struct {
		b Binding
		// allocated and allocating on member3.
		allocated, allocating corev1.ResourceList
		noSummary             bool
		wantCPU, wantMem      string
		freeCPU, freeMem      string
		fits                  bool
		warnings              []string
	}{
		"fits": {
			b: b("500m", "1Gi"), wantCPU: "1500m", wantMem: "3Gi", freeCPU: "8", freeMem: "32Gi", fits: true,
		},
		"allocated and allocating count": {
			b:          b("1", "1Gi"),
			allocated:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("20Gi")},
			allocating: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("10Gi")},
			wantCPU:    "3", wantMem: "3Gi", freeCPU: "2", freeMem: "2Gi", fits: false,
			warnings: []string{
				"member3: the new copies request 3 CPU, 2 is free",
				"member3: the new copies request 3Gi memory, 2Gi is free",
			},
		},
		"exactly full fits": {
			b:         b("1", "1Gi"),
			allocated: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("29Gi")},
			wantCPU:   "3", wantMem: "3Gi", freeCPU: "3", freeMem: "3Gi", fits: true,
		},
		"no resource summary: unknown, fits": {
			b: b("1", "1Gi"), noSummary: true, wantCPU: "3", wantMem: "3Gi", fits: true,
		},
		"no requests": {
			b: binding("nginx", replicas(3), scheduledOn("member1", 3, "member2", 3)), wantCPU: "0", wantMem: "0",
			freeCPU: "8", freeMem: "32Gi", fits: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.b)
			if tc.noSummary {
				snap.Clusters[2].Status.ResourceSummary = nil
			} else {
				snap.Clusters[2].Status.ResourceSummary.Allocated = tc.allocated
				snap.Clusters[2].Status.ResourceSummary.Allocating = tc.allocating
			}
			r := run(t, snap, Scenario{FailClusters: []string{"member2"}})
			if len(r.Totals.Clusters) != 1 {
				t.Fatalf("clusters = %+v, want member3 only (member1 had its copy)", r.Totals.Clusters)
			}
			l := r.Totals.Clusters[0]
			if l.Cluster != "member3" || l.Replicas != 3 || l.Fits != tc.fits {
				t.Errorf("load = %+v, want member3 with 3 replicas, fits %v", l, tc.fits)
			}
			eq := func(what string, got resource.Quantity, want string) {
				if got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %s, want %s", what, got.String(), want)
				}
			}
			eq("cpu", l.CPU, tc.wantCPU)
			eq("memory", l.Memory, tc.wantMem)
			if tc.freeCPU == "" {
				if l.FreeCPU != nil || l.FreeMemory != nil {
					t.Errorf("free = %v, %v, want unknown", l.FreeCPU, l.FreeMemory)
				}
			} else {
				eq("free cpu", *l.FreeCPU, tc.freeCPU)
				eq("free memory", *l.FreeMemory, tc.freeMem)
			}
			if diff := cmp.Diff(tc.warnings, r.Totals.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTotalsCounts checks the per-result counts, the warning for a
// binding that stays, and the times to evicted and Healthy.
func TestTotalsCounts(t *testing.T) {
	snap := snapshot(
		binding("a"),
		binding("b", tolerateNotReady(ptr.To[int64](20))),
		binding("c", tolerateNotReady(nil)),
		binding("pinned", affinity("member2"), scheduledOn("member2", 2)),
		binding("elsewhere", scheduledOn("member1", 2)),
	)
	r := run(t, snap, Scenario{FailClusters: []string{"member2"}, StartupTime: 10 * time.Second})
	got := r.Totals
	if got.Bindings != 4 || got.Evicted != 2 || got.Tolerated != 1 || got.Stays != 1 || got.Held != 0 || got.NotEvicted != 0 {
		t.Errorf("counts = %+v, want 4 bindings (not the one elsewhere): 2 evicted, 1 tolerated, 1 stays", got)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "ResourceBinding default/pinned-deployment stays on its failed cluster: no other cluster fits") {
		t.Errorf("warnings = %q, want the pinned binding's", got.Warnings)
	}
	if got.AllEvicted == nil || *got.AllEvicted != (Seconds{Min: 50, Max: 65}) {
		t.Errorf("allEvicted = %v, want 50–65s", got.AllEvicted)
	}
	if got.AllHealthy == nil || *got.AllHealthy != (Seconds{Min: 60, Max: 75}) {
		t.Errorf("allHealthy = %v, want 60–75s", got.AllHealthy)
	}
	want := []string{"ResourceBinding default/a-deployment", "ResourceBinding default/b-deployment", "ResourceBinding default/c-deployment", "ResourceBinding default/pinned-deployment"}
	var keys []string
	for _, o := range r.Outcomes {
		keys = append(keys, o.Kind+" "+o.Key())
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestGroupVerdict checks the storm guard's verdict per group.
func TestGroupVerdict(t *testing.T) {
	regions := func(rs ...string) func(*Snapshot) {
		return func(s *Snapshot) {
			for i, r := range rs {
				s.Clusters[i].Spec.Region = r
			}
		}
	}
	cases := map[string]struct {
		snap     func(*Snapshot)
		bindings int
		fail     []string
		want     []GroupVerdict
		warning  string
	}{
		"one cluster": {
			bindings: 60, fail: []string{"member2"},
			want: []GroupVerdict{{Group: "", State: "Normal", Rate: 50, Evictions: 60, Span: Seconds{Min: 0.2, Max: 0.2}}},
		},
		"every cluster": {
			bindings: 2, fail: []string{"member1", "member2", "member3"},
			want: []GroupVerdict{{Group: "", State: "FullDisruption", Rate: 0,
				Halts: "no cluster is Ready: the control plane may be the one cut off, so nothing is evicted"}},
			warning: "the storm guard halts evictions from the clusters without a region: no cluster is Ready",
		},
		"a whole region": {
			snap: regions("us", "us", "eu"), bindings: 2, fail: []string{"member1", "member2"},
			want: []GroupVerdict{{Group: "us", State: "FullDisruption", Rate: 50, Evictions: 4}},
		},
		"one cluster of a region": {
			snap: regions("us", "us", "eu"), bindings: 1, fail: []string{"member2"},
			want: []GroupVerdict{{Group: "us", State: "Normal", Rate: 50, Evictions: 1}},
		},
		"clusters of two regions": {
			snap: regions("us", "eu", "ap"), bindings: 1, fail: []string{"member1", "member2"},
			want: []GroupVerdict{
				{Group: "eu", State: "FullDisruption", Rate: 50, Evictions: 1},
				{Group: "us", State: "FullDisruption", Rate: 50, Evictions: 1},
			},
		},
		"eviction rate 0": {
			snap: func(s *Snapshot) { s.Settings.EvictionRate = 0 }, bindings: 1, fail: []string{"member2"},
			want:    []GroupVerdict{{Group: "", State: "Normal", Rate: 0, Halts: "the eviction rate is 0"}},
			warning: "the storm guard halts evictions from the clusters without a region: the eviction rate is 0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var bs []Binding
			for i := 0; i < tc.bindings; i++ {
				bs = append(bs, binding(string(rune('a'+i/26))+string(rune('a'+i%26))))
			}
			snap := snapshot(bs...)
			if tc.snap != nil {
				tc.snap(&snap)
			}
			r := run(t, snap, Scenario{FailClusters: tc.fail})
			if diff := cmp.Diff(tc.want, r.Totals.Guard); diff != "" {
				t.Errorf("guard (-want +got):\n%s", diff)
			}
			found := tc.warning == ""
			for _, w := range r.Totals.Warnings {
				found = found || strings.Contains(w, tc.warning)
			}
			if !found {
				t.Errorf("warnings = %q, want one mentioning %q", r.Totals.Warnings, tc.warning)
			}
		})
	}
}
