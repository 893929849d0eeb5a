package core

import (
	"testing"

	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// The status write recording the term in use can lose a race after the spec
// was written. The next pass then sees the old observed term with clusters of
// a later term; once the eviction task of the earlier term's cluster is gone
// (a Directly eviction closes in under a second), starting from the stale
// term would move the workload straight back to the cluster it left.
func TestScheduleDoesNotBounceBackOnAStaleObservedTerm(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	b := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2)
	got, err := Schedule(Problem{Spec: b.SpecObj(), ObservedAffinityName: "primary", Clusters: members(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Clusters) != 1 || got.Clusters[0].Name != "member2" || got.AffinityName != "backup" {
		t.Fatalf("got %+v (term %q), want member2 under term backup", got.Clusters, got.AffinityName)
	}
}

func TestTermOfScheduled(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2", "member3").Obj()
	cases := map[string]struct {
		binding *st.BindingWrapper
		want    int
	}{
		"nothing scheduled":            {binding: st.MakeBinding("default", "a"), want: -1},
		"scheduled in the first term":  {binding: st.MakeBinding("default", "a").Cluster("member1", 1), want: 0},
		"scheduled in the second term": {binding: st.MakeBinding("default", "a").Cluster("member2", 1).Cluster("member3", 1), want: 1},
		"spread over two terms":        {binding: st.MakeBinding("default", "a").Cluster("member1", 1).Cluster("member2", 1), want: -1},
		"unknown cluster":              {binding: st.MakeBinding("default", "a").Cluster("gone", 1), want: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := termOfScheduled(groups.ClusterAffinities, tc.binding.SpecObj().Clusters, members(3)); got != tc.want {
				t.Fatalf("termOfScheduled = %d, want %d", got, tc.want)
			}
		})
	}
}
