package core

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// targets builds an expected spec.clusters from name/replicas pairs.
func targets(pairs ...any) []workv1alpha2.TargetCluster {
	out := []workv1alpha2.TargetCluster{}
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
	}
	return out
}

func clusters(ws ...*st.ClusterWrapper) []*clusterv1alpha1.Cluster {
	out := make([]*clusterv1alpha1.Cluster, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Obj())
	}
	return out
}

func members(n int) []*clusterv1alpha1.Cluster {
	names := []string{"member1", "member2", "member3", "member4"}
	ws := make([]*st.ClusterWrapper, 0, n)
	for _, name := range names[:n] {
		ws = append(ws, st.MakeCluster(name))
	}
	return clusters(ws...)
}

type wantErr int

const (
	noErr wantErr = iota
	fitErr
	unschedErr
)

func checkErr(t *testing.T, err error, want wantErr, wantMsg string) {
	t.Helper()
	var fe *FitError
	var ue *UnschedulableError
	switch want {
	case noErr:
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case fitErr:
		if !errors.As(err, &fe) {
			t.Fatalf("want FitError, got %v", err)
		}
	case unschedErr:
		if !errors.As(err, &ue) {
			t.Fatalf("want UnschedulableError, got %v", err)
		}
	}
	if wantMsg != "" && (err == nil || err.Error() != wantMsg) {
		t.Fatalf("error message:\n got: %v\nwant: %s", err, wantMsg)
	}
}

func TestScheduleFilters(t *testing.T) {
	unschedulableTaint := func(name string) *st.ClusterWrapper {
		return st.MakeCluster(name).Taint(clusterv1alpha1.TaintClusterUnschedulable, "", corev1.TaintEffectNoSchedule)
	}
	cases := map[string]struct {
		binding  *st.BindingWrapper
		clusters []*clusterv1alpha1.Cluster
		want     []workv1alpha2.TargetCluster
		wantErr  wantErr
		wantMsg  string
	}{
		"clusterNames restricts the candidates": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(st.MakePlacement().ClusterNames("member1", "member3").Obj()),
			clusters: members(3),
			want:     targets("member1", 2, "member3", 2),
		},
		"exclude removes clusters": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Exclude("member2").Obj()),
			clusters: members(3),
			want:     targets("member1", 1, "member3", 1),
		},
		"label selector": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().LabelSelector(map[string]string{"env": "prod"}).Obj()),
			clusters: clusters(st.MakeCluster("member1").Label("env", "prod"), st.MakeCluster("member2").Label("env", "dev"),
				st.MakeCluster("member3")),
			want: targets("member1", 1),
		},
		"field selector on provider, region and zone": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().
				Field("provider", corev1.NodeSelectorOpIn, "aws").
				Field("region", corev1.NodeSelectorOpNotIn, "us-east").
				Field("zone", corev1.NodeSelectorOpIn, "eu-1a", "eu-1b").Obj()),
			clusters: clusters(
				st.MakeCluster("member1").Provider("aws").Region("eu").Zones("eu-1b", "eu-1c"),
				st.MakeCluster("member2").Provider("aws").Region("us-east").Zones("eu-1a"),
				st.MakeCluster("member3").Provider("gcp").Region("eu").Zones("eu-1a"),
				st.MakeCluster("member4").Provider("aws").Region("eu").Zones("eu-1c"),
			),
			want: targets("member1", 1),
		},
		"NotIn on an empty region matches": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Field("region", corev1.NodeSelectorOpNotIn, "us").Obj()),
			clusters: clusters(st.MakeCluster("member1"), st.MakeCluster("member2").Region("us")),
			want:     targets("member1", 1),
		},
		"NoSchedule and NoExecute taints block new placements, PreferNoSchedule does not": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()),
			clusters: clusters(
				st.MakeCluster("member1").Taint("a", "", corev1.TaintEffectNoSchedule),
				st.MakeCluster("member2").Taint("b", "x", corev1.TaintEffectNoExecute),
				st.MakeCluster("member3").Taint("c", "", corev1.TaintEffectPreferNoSchedule),
			),
			want: targets("member3", 1),
		},
		"tolerated taints pass": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().
				Tolerate("a", "", corev1.TaintEffectNoSchedule).Tolerate("b", "x", "").Obj()),
			clusters: clusters(
				st.MakeCluster("member1").Taint("a", "v", corev1.TaintEffectNoSchedule),
				st.MakeCluster("member2").Taint("b", "x", corev1.TaintEffectNoExecute),
				st.MakeCluster("member3").Taint("b", "y", corev1.TaintEffectNoExecute),
			),
			want: targets("member1", 1, "member2", 1),
		},
		"a tainted cluster already scheduled is kept": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()).Cluster("member2", 1),
			clusters: clusters(unschedulableTaint("member1"), unschedulableTaint("member2")),
			want:     targets("member2", 1),
		},
		"a cluster with an eviction task is not a candidate": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()).EvictionTask("member1"),
			clusters: members(2),
			want:     targets("member2", 1),
		},
		"a cluster being deleted is not a candidate, even when scheduled": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()).Cluster("member1", 1),
			clusters: clusters(st.MakeCluster("member1").Deleting(), st.MakeCluster("member2")),
			want:     targets("member2", 1),
		},
		"API enablements: listed passes, missing from a complete list fails, empty or partial lists pass": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()),
			clusters: clusters(
				st.MakeCluster("member1").APIs("apps/v1", "Deployment").APIsComplete(metav1.ConditionTrue),
				st.MakeCluster("member2").APIs("apps/v1", "StatefulSet").APIsComplete(metav1.ConditionTrue),
				st.MakeCluster("member3"),
				st.MakeCluster("member4").APIs("v1", "ConfigMap").APIsComplete(metav1.ConditionFalse),
			),
			want: targets("member1", 1, "member3", 1, "member4", 1),
		},
		"a scheduled cluster passes the API check": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()).Cluster("member1", 1),
			clusters: clusters(st.MakeCluster("member1").APIs("v1", "ConfigMap")),
			want:     targets("member1", 1),
		},
		"spread by region needs a region": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().
				Spread(policyv1alpha1.SpreadByFieldCluster, 1, 3).Spread(policyv1alpha1.SpreadByFieldRegion, 1, 2).Obj()),
			clusters: clusters(st.MakeCluster("member1"), st.MakeCluster("member2").Region("eu")),
			want:     targets("member2", 1),
		},
		"nothing fits: the error counts the reasons": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().ClusterNames("member1").Obj()),
			clusters: clusters(unschedulableTaint("member1"), st.MakeCluster("member2"), st.MakeCluster("member3")),
			wantErr:  fitErr,
			wantMsg:  "0/3 clusters are available: 1 cluster(s) had untolerated taint {cluster.karmada.io/unschedulable: }, 2 cluster(s) did not match the placement cluster affinity constraint.",
		},
		"no clusters at all": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()),
			wantErr: fitErr,
			wantMsg: "0/0 clusters are available: no clusters are registered.",
		},
		"every cluster evicting or deleting": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Obj()).EvictionTask("member1"),
			clusters: clusters(st.MakeCluster("member1"), st.MakeCluster("member2").Deleting()),
			wantErr:  fitErr,
			wantMsg:  "0/2 clusters are available: 1 cluster(s) is being deleted, 1 cluster(s) is in the process of eviction.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Schedule(Problem{Spec: tc.binding.SpecObj(), Clusters: tc.clusters})
			checkErr(t, err, tc.wantErr, tc.wantMsg)
			if tc.wantErr == noErr && !reflect.DeepEqual(got.Clusters, tc.want) {
				t.Errorf("clusters: got %v, want %v", got.Clusters, tc.want)
			}
		})
	}
}

func TestScheduleClusterAffinities(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2", "member3").Obj()
	cases := map[string]struct {
		binding  *st.BindingWrapper
		observed string
		fresh    bool
		clusters []*clusterv1alpha1.Cluster
		want     []workv1alpha2.TargetCluster
		wantName string
		wantErr  wantErr
	}{
		"the first term that fits wins": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(groups),
			clusters: members(3),
			want:     targets("member1", 2),
			wantName: "primary",
		},
		"falls through to the next term": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).EvictionTask("member1"),
			observed: "primary",
			clusters: members(3),
			want:     targets("member2", 2, "member3", 2),
			wantName: "backup",
		},
		"never moves back to an earlier term by itself": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2).Cluster("member3", 2),
			observed: "backup",
			clusters: members(3),
			want:     targets("member2", 2, "member3", 2),
			wantName: "backup",
		},
		"a manual reschedule starts over at the first term": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2).Cluster("member3", 2),
			observed: "backup",
			fresh:    true,
			clusters: members(3),
			want:     targets("member1", 2),
			wantName: "primary",
		},
		"every term fails: the observed term is kept": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).EvictionTask("member1"),
			observed: "primary",
			clusters: members(1),
			wantName: "primary",
			wantErr:  fitErr,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Schedule(Problem{Spec: tc.binding.SpecObj(), ObservedAffinityName: tc.observed, Fresh: tc.fresh, Clusters: tc.clusters})
			checkErr(t, err, tc.wantErr, "")
			if !reflect.DeepEqual(got.Clusters, tc.want) && tc.wantErr == noErr {
				t.Errorf("clusters: got %v, want %v", got.Clusters, tc.want)
			}
			if got.AffinityName != tc.wantName {
				t.Errorf("affinity name: got %q, want %q", got.AffinityName, tc.wantName)
			}
		})
	}
}

func TestScheduleSpreadConstraints(t *testing.T) {
	// The seed's placement: one of member1..3, every replica there.
	seed := st.MakePlacement().ClusterNames("member1", "member2", "member3").Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).Obj()
	byRegion := st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 2, 2).Spread(policyv1alpha1.SpreadByFieldRegion, 2, 2).Obj()
	cases := map[string]struct {
		binding  *st.BindingWrapper
		clusters []*clusterv1alpha1.Cluster
		want     []workv1alpha2.TargetCluster
		wantErr  wantErr
	}{
		"seed: equal clusters, the first name wins": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(seed),
			clusters: members(3),
			want:     targets("member1", 2),
		},
		"seed: the cluster with the most room wins": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(seed),
			clusters: clusters(st.MakeCluster("member1").Free(3, ""), st.MakeCluster("member2").Free(50, ""), st.MakeCluster("member3").Free(10, "")),
			want:     targets("member2", 2),
		},
		"seed: the cluster already scheduled stays": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(seed).Cluster("member3", 2),
			clusters: clusters(st.MakeCluster("member1").Free(3, ""), st.MakeCluster("member2").Free(50, ""), st.MakeCluster("member3").Free(10, "")),
			want:     targets("member3", 2),
		},
		"seed: after eviction, the next best cluster": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(seed).EvictionTask("member2"),
			clusters: clusters(st.MakeCluster("member1").Free(3, ""), st.MakeCluster("member2").Free(50, ""), st.MakeCluster("member3").Free(10, "")),
			want:     targets("member3", 2),
		},
		"fewer candidates than minGroups": {
			binding:  st.MakeBinding("default", "nginx").Replicas(2).Placement(st.MakePlacement().ClusterNames("member1").Spread(policyv1alpha1.SpreadByFieldCluster, 2, 3).Obj()),
			clusters: members(3),
			wantErr:  unschedErr,
		},
		"maxGroups 0 selects every candidate": {
			binding:  st.MakeBinding("default", "nginx").Replicas(1).Placement(st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 0).Obj()),
			clusters: members(3),
			want:     targets("member1", 1, "member2", 1, "member3", 1),
		},
		"Divided: a richer cluster replaces one that cannot hold the replicas": {
			binding: st.MakeBinding("default", "nginx").Replicas(6).Placement(
				st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).DynamicWeight().Obj()).Cluster("member1", 0),
			clusters: clusters(st.MakeCluster("member1").Free(2, ""), st.MakeCluster("member2").Free(4, ""), st.MakeCluster("member3").Free(8, "")),
			want:     targets("member3", 6),
		},
		"Divided: not enough room in maxGroups clusters": {
			binding:  st.MakeBinding("default", "nginx").Replicas(20).Placement(st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 2).DynamicWeight().Obj()),
			clusters: clusters(st.MakeCluster("member1").Free(2, ""), st.MakeCluster("member2").Free(4, ""), st.MakeCluster("member3").Free(8, "")),
			wantErr:  unschedErr,
		},
		"region: the best cluster of each of the two best regions": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(byRegion),
			clusters: clusters(
				st.MakeCluster("member1").Region("eu").Free(5, ""), st.MakeCluster("member2").Region("eu").Free(9, ""),
				st.MakeCluster("member3").Region("us").Free(1, ""), st.MakeCluster("member4").Region("ap").Free(1, "")),
			// eu has two clusters that can run the workload; ap and us tie
			// and ap comes first by name.
			want: targets("member2", 1, "member4", 1),
		},
		"spreadByLabel alone cannot select": {
			binding: st.MakeBinding("default", "nginx").Replicas(1).Placement(&policyv1alpha1.Placement{
				SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "team", MinGroups: 1, MaxGroups: 1}},
			}),
			clusters: members(2),
			wantErr:  unschedErr,
		},
		"static weights: spread constraints do not select, maxGroups still caps (heaviest weight kept)": {
			binding: st.MakeBinding("default", "nginx").Replicas(3).Placement(st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).
				StaticWeights(map[string]int64{"member1": 1, "member2": 2}).Obj()),
			clusters: members(2),
			want:     targets("member2", 3),
		},
		"static weights with maxGroups above the clusters: every weighted cluster": {
			binding: st.MakeBinding("default", "nginx").Replicas(3).Placement(st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 3).
				StaticWeights(map[string]int64{"member1": 1, "member2": 2}).Obj()),
			clusters: members(2),
			want:     targets("member1", 1, "member2", 2),
		},
		"static weights: a scheduled cluster is kept over a heavier one": {
			binding: st.MakeBinding("default", "nginx").Replicas(3).Placement(st.MakePlacement().Spread(policyv1alpha1.SpreadByFieldCluster, 1, 1).
				StaticWeights(map[string]int64{"member1": 1, "member2": 2}).Obj()).Cluster("member1", 3),
			clusters: members(2),
			want:     targets("member1", 3),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Schedule(Problem{Spec: tc.binding.SpecObj(), Clusters: tc.clusters})
			checkErr(t, err, tc.wantErr, "")
			if tc.wantErr == noErr && !reflect.DeepEqual(got.Clusters, tc.want) {
				t.Errorf("clusters: got %v, want %v", got.Clusters, tc.want)
			}
		})
	}
}

func TestScheduleReplicaDivision(t *testing.T) {
	dynamic := st.MakePlacement().DynamicWeight().Obj()
	aggregated := st.MakePlacement().Aggregated().Obj()
	rich := func() []*clusterv1alpha1.Cluster {
		return clusters(st.MakeCluster("member1").Free(2, ""), st.MakeCluster("member2").Free(6, ""), st.MakeCluster("member3").Free(0, ""))
	}
	cases := map[string]struct {
		binding  *st.BindingWrapper
		fresh    bool
		clusters []*clusterv1alpha1.Cluster
		want     []workv1alpha2.TargetCluster
		wantErr  wantErr
		wantMsg  string
	}{
		"Duplicated: every cluster gets spec.replicas": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).Placement(st.MakePlacement().Duplicated().Obj()),
			clusters: members(2),
			want:     targets("member1", 3, "member2", 3),
		},
		"no replicas: every selected cluster, replicas 0": {
			binding:  st.MakeBinding("default", "cm").Resource("v1", "ConfigMap").Placement(st.MakePlacement().DynamicWeight().Obj()),
			clusters: members(3),
			want:     targets("member1", 0, "member2", 0, "member3", 0),
		},
		"a workload scaled to 0 keeps its clusters": {
			binding:  st.MakeBinding("default", "nginx").Replicas(0).CPU("100m").Placement(dynamic).Cluster("member1", 2),
			clusters: members(2),
			want:     targets("member1", 0, "member2", 0),
		},
		"static weights 1:2": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).Placement(st.MakePlacement().StaticWeights(map[string]int64{"member1": 1, "member2": 2}).Obj()),
			clusters: members(3),
			want:     targets("member1", 1, "member2", 2),
		},
		"static weights: the remainder by Webster": {
			binding:  st.MakeBinding("default", "nginx").Replicas(7).Placement(st.MakePlacement().StaticWeights(map[string]int64{"member1": 1, "member2": 1, "member3": 1}).Obj()),
			clusters: members(3),
			want:     targets("member1", 3, "member2", 2, "member3", 2),
		},
		"static weights: clusters without a weight get nothing; previous results do not matter": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(st.MakePlacement().StaticWeights(map[string]int64{"member2": 1}).Obj()).Cluster("member1", 4),
			clusters: members(3),
			want:     targets("member2", 4),
		},
		"static weights: no cluster matches, all weigh 1": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(st.MakePlacement().StaticWeights(map[string]int64{"member9": 1}).Obj()),
			clusters: members(2),
			want:     targets("member1", 2, "member2", 2),
		},
		"dynamic: first schedule by free capacity": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic),
			clusters: rich(),
			want:     targets("member1", 1, "member2", 3),
		},
		"dynamic: scale up adds only the missing replicas": {
			binding:  st.MakeBinding("default", "nginx").Replicas(6).Placement(dynamic).Cluster("member1", 2).Cluster("member3", 2),
			clusters: clusters(st.MakeCluster("member1").Free(0, ""), st.MakeCluster("member2").Free(10, ""), st.MakeCluster("member3").Free(0, "")),
			want:     targets("member1", 2, "member2", 2, "member3", 2),
		},
		"dynamic: scale down by current replicas": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).Placement(dynamic).Cluster("member1", 2).Cluster("member2", 4),
			clusters: rich(),
			want:     targets("member1", 1, "member2", 2),
		},
		"dynamic: steady, nothing moves when capacities change": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic).Cluster("member1", 3).Cluster("member3", 1),
			clusters: rich(),
			want:     targets("member1", 3, "member3", 1),
		},
		"dynamic: the replicas of an evicted cluster go elsewhere": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic).Cluster("member2", 2).EvictionTask("member1"),
			clusters: clusters(st.MakeCluster("member1").Free(10, ""), st.MakeCluster("member2").Free(3, ""), st.MakeCluster("member3").Free(3, "")),
			want:     targets("member2", 3, "member3", 1),
		},
		"dynamic: fresh redistributes everything": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic).Cluster("member1", 4),
			fresh:    true,
			clusters: clusters(st.MakeCluster("member1").Free(0, ""), st.MakeCluster("member2").Free(4, "")),
			want:     targets("member1", 2, "member2", 2),
		},
		"dynamic: by CPU": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).CPU("500m").Placement(dynamic),
			clusters: clusters(st.MakeCluster("member1").Free(100, "1"), st.MakeCluster("member2").Free(100, "2")),
			want:     targets("member1", 1, "member2", 2),
		},
		"dynamic: unknown capacity counts as room for every replica": {
			binding:  st.MakeBinding("default", "nginx").Replicas(4).Placement(dynamic),
			clusters: members(2),
			want:     targets("member1", 2, "member2", 2),
		},
		"dynamic: not enough room": {
			binding:  st.MakeBinding("default", "nginx").Replicas(9).Placement(dynamic),
			clusters: rich(),
			wantErr:  unschedErr,
			wantMsg:  "Clusters available replicas 8 are not enough to schedule.",
		},
		"aggregated: as few clusters as possible": {
			binding:  st.MakeBinding("default", "nginx").Replicas(5).Placement(aggregated),
			clusters: rich(),
			want:     targets("member2", 5),
		},
		"aggregated: spills over when one cluster is not enough": {
			binding:  st.MakeBinding("default", "nginx").Replicas(7).Placement(aggregated),
			clusters: rich(),
			want:     targets("member1", 2, "member2", 5),
		},
		"aggregated: scale up prefers clusters with replicas": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).Placement(aggregated).Cluster("member1", 1),
			clusters: rich(),
			want:     targets("member1", 3),
		},
		"aggregated: scale down keeps the largest clusters": {
			binding:  st.MakeBinding("default", "nginx").Replicas(3).Placement(aggregated).Cluster("member1", 1).Cluster("member2", 4),
			clusters: rich(),
			want:     targets("member2", 3),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Schedule(Problem{Spec: tc.binding.SpecObj(), Fresh: tc.fresh, Clusters: tc.clusters})
			checkErr(t, err, tc.wantErr, tc.wantMsg)
			if tc.wantErr == noErr && !reflect.DeepEqual(got.Clusters, tc.want) {
				t.Errorf("clusters: got %v, want %v", got.Clusters, tc.want)
			}
		})
	}
}

func TestWebster(t *testing.T) {
	cases := map[string]struct {
		parties  []party
		seats    int32
		descTies bool
		want     map[string]int32
	}{
		"proportional": {
			parties: []party{{"a", 1}, {"b", 2}}, seats: 3,
			want: map[string]int32{"a": 1, "b": 2},
		},
		"ties go to the first name": {
			parties: []party{{"b", 1}, {"a", 1}}, seats: 1,
			want: map[string]int32{"a": 1},
		},
		"ties go to the last name when descending": {
			parties: []party{{"a", 1}, {"b", 1}}, seats: 1, descTies: true,
			want: map[string]int32{"b": 1},
		},
		"parties without votes get nothing": {
			parties: []party{{"a", 0}, {"b", 3}}, seats: 5,
			want: map[string]int32{"b": 5},
		},
		"large votes do not overflow": {
			parties: []party{{"a", 1 << 40}, {"b", 1 << 41}}, seats: 3,
			want: map[string]int32{"a": 1, "b": 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := webster(tc.parties, tc.seats, tc.descTies); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEstimateCapacity(t *testing.T) {
	cpu := st.MakeBinding("default", "nginx").CPU("250m").SpecObj().ReplicaRequirements
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		req     *workv1alpha2.ReplicaRequirements
		want    int32
	}{
		"no summary: unknown, room for every replica": {cluster: st.MakeCluster("m").Obj(), want: 7},
		"free pods":                  {cluster: st.MakeCluster("m").Free(4, "").Obj(), want: 4},
		"CPU bounds below free pods": {cluster: st.MakeCluster("m").Free(100, "1").Obj(), req: cpu, want: 4},
		"pods bound below CPU":       {cluster: st.MakeCluster("m").Free(2, "1").Obj(), req: cpu, want: 2},
		"a resource the cluster does not offer": {
			cluster: st.MakeCluster("m").Free(100, "").Obj(), req: cpu, want: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := EstimateCapacity(tc.cluster, tc.req, 7); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}
