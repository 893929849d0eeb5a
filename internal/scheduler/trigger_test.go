package scheduler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

func TestDecide(t *testing.T) {
	divided := st.MakePlacement().DynamicWeight().Obj()
	lastHour := metav1.NewTime(testNow.Add(-time.Hour))
	// settled returns a binding scheduled with placement on member1.
	settled := func(replicas int32) *st.BindingWrapper {
		return st.MakeBinding("default", "nginx").Replicas(replicas).Placement(divided).Cluster("member1", 2).
			Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, divided)).
			SchedulerStatus(1, &lastHour, "").Condition(scheduledCondition())
	}
	members := map[string]*clusterv1alpha1.Cluster{"member1": st.MakeCluster("member1").Obj(), "member2": st.MakeCluster("member2").Obj()}
	cases := map[string]struct {
		binding     *st.BindingWrapper
		clusters    map[string]*clusterv1alpha1.Cluster
		wantTrigger string
		wantFresh   bool
	}{
		"settled": {
			binding: settled(2), clusters: members,
		},
		"never scheduled": {
			binding: st.MakeBinding("default", "nginx").Replicas(2).Placement(divided), clusters: members,
			wantTrigger: triggerPlacementChanged,
		},
		"placement changed": {
			binding:  settled(2).Placement(st.MakePlacement().DynamicWeight().ClusterNames("member2").Obj()),
			clusters: members, wantTrigger: triggerPlacementChanged,
		},
		"last attempt failed": {
			binding:     settled(2).Condition(metav1.Condition{Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse}),
			clusters:    members,
			wantTrigger: triggerNotScheduled,
		},
		"replicas changed": {
			binding: settled(3), clusters: members, wantTrigger: triggerReplicasChanged,
		},
		"manual reschedule": {
			binding:  settled(2).RescheduleTriggeredAt(metav1.NewTime(testNow)),
			clusters: members, wantTrigger: triggerReschedule, wantFresh: true,
		},
		"old reschedule request": {
			binding:  settled(2).RescheduleTriggeredAt(metav1.NewTime(testNow.Add(-2 * time.Hour))),
			clusters: members,
		},
		"Duplicated always runs": {
			binding: st.MakeBinding("default", "nginx").Replicas(2).Placement(seedPlacement()).Cluster("member1", 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, seedPlacement())).Condition(scheduledCondition()),
			clusters: members, wantTrigger: triggerAlways,
		},
		"scheduled cluster deleted": {
			binding: settled(2), clusters: map[string]*clusterv1alpha1.Cluster{"member2": members["member2"]}, wantTrigger: triggerClusterGone,
		},
		"scheduled cluster being deleted": {
			binding:  settled(2),
			clusters: map[string]*clusterv1alpha1.Cluster{"member1": st.MakeCluster("member1").Deleting().Obj()}, wantTrigger: triggerClusterGone,
		},
		"clusterAffinities without an observed term": {
			binding: st.MakeBinding("default", "nginx").Replicas(2).Placement(st.MakePlacement().AffinityTerm("a", "member1").DynamicWeight().Obj()).
				Cluster("member1", 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, st.MakePlacement().AffinityTerm("a", "member1").DynamicWeight().Obj())).
				Condition(scheduledCondition()),
			clusters: members, wantTrigger: triggerPlacementChanged,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rb := tc.binding.Obj()
			got := decide(&rb.Spec, &rb.Status, rb.Annotations, tc.clusters)
			if got.trigger != tc.wantTrigger || got.fresh != tc.wantFresh {
				t.Errorf("got %+v, want trigger %q fresh %v", got, tc.wantTrigger, tc.wantFresh)
			}
		})
	}
}
