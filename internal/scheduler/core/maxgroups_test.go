package core

import (
	"fmt"
	"reflect"
	"testing"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// TestNeverMoreClustersThanMaxGroups: whatever the replica scheduling, a
// spreadByField: cluster constraint's maxGroups bounds the placement, on
// the first schedule and after a cluster failover (the scheduled cluster
// evicted, its replicas to be placed again).
func TestNeverMoreClustersThanMaxGroups(t *testing.T) {
	withReplicaScheduling := map[string]func(*st.PlacementWrapper) *st.PlacementWrapper{
		"Duplicated (default)": func(p *st.PlacementWrapper) *st.PlacementWrapper { return p },
		"Duplicated":           func(p *st.PlacementWrapper) *st.PlacementWrapper { return p.Duplicated() },
		"Divided, Weighted without weightPreference": func(p *st.PlacementWrapper) *st.PlacementWrapper { return p.Divided() },
		"Divided, static weights": func(p *st.PlacementWrapper) *st.PlacementWrapper {
			return p.StaticWeights(map[string]int64{"member1": 1, "member2": 2, "member3": 3})
		},
		"Divided, dynamic weights": func(p *st.PlacementWrapper) *st.PlacementWrapper { return p.DynamicWeight() },
		"Divided, Aggregated":      func(p *st.PlacementWrapper) *st.PlacementWrapper { return p.Aggregated() },
	}
	for name, rs := range withReplicaScheduling {
		for _, maxGroups := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s, maxGroups %d", name, maxGroups), func(t *testing.T) {
				placement := rs(st.MakePlacement().ClusterNames("member1", "member2", "member3").
					Spread(policyv1alpha1.SpreadByFieldCluster, 1, maxGroups)).Obj()
				first, err := Schedule(Problem{
					Spec:     st.MakeBinding("default", "nginx").Replicas(4).Placement(placement).SpecObj(),
					Clusters: members(3),
				})
				checkErr(t, err, noErr, "")
				if len(first.Clusters) == 0 || len(first.Clusters) > maxGroups {
					t.Fatalf("first schedule: %v, want 1 to %d clusters", first.Clusters, maxGroups)
				}

				// The first scheduled cluster fails: evicted, with a task.
				b := st.MakeBinding("default", "nginx").Replicas(4).Placement(placement)
				for _, c := range first.Clusters[1:] {
					b.Cluster(c.Name, c.Replicas)
				}
				b.EvictionTask(first.Clusters[0].Name)
				after, err := Schedule(Problem{Spec: b.SpecObj(), Clusters: members(3)})
				checkErr(t, err, noErr, "")
				if len(after.Clusters) == 0 || len(after.Clusters) > maxGroups {
					t.Fatalf("after evicting %s: %v, want 1 to %d clusters", first.Clusters[0].Name, after.Clusters, maxGroups)
				}
				for _, c := range after.Clusters {
					if c.Name == first.Clusters[0].Name {
						t.Fatalf("after evicting %s: placed on it again: %v", c.Name, after.Clusters)
					}
				}
			})
		}
	}
}

// With static weights and maxGroups, a scheduled cluster the list gives no
// weight does not keep its slot over a weighted one: kept by its score, it
// took every replica.
func TestStaticWeightsMaxGroupsPreferWeightedClusters(t *testing.T) {
	weights := func(w map[string]int64) *policyv1alpha1.Placement {
		return st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).StaticWeights(w).Obj()
	}
	cases := map[string]struct {
		binding *st.BindingWrapper
		want    []workv1alpha2.TargetCluster
	}{
		"an unweighted scheduled cluster gives way": {
			binding: st.MakeBinding("default", "nginx").Replicas(4).Placement(weights(map[string]int64{"member2": 1})).Cluster("member1", 4),
			want:    targets("member2", 4),
		},
		"a weighted scheduled cluster keeps its slot": {
			binding: st.MakeBinding("default", "nginx").Replicas(4).Placement(weights(map[string]int64{"member1": 1, "member2": 5})).Cluster("member1", 4),
			want:    targets("member1", 4),
		},
		"no weighted cluster: the scheduled one stays": {
			binding: st.MakeBinding("default", "nginx").Replicas(4).Placement(weights(map[string]int64{"member9": 1})).Cluster("member1", 4),
			want:    targets("member1", 4),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Schedule(Problem{Spec: tc.binding.SpecObj(), Clusters: members(3)})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Clusters, tc.want) {
				t.Errorf("got %v, want %v", got.Clusters, tc.want)
			}
		})
	}
}
