package scheduler

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

func rebalanceTask(cluster string, replicas int32, before ...string) workv1alpha2.GracefulEvictionTask {
	return workv1alpha2.GracefulEvictionTask{
		FromCluster:            cluster,
		PurgeMode:              policyv1alpha1.PurgeModeGracefully,
		Replicas:               ptr.To(replicas),
		Reason:                 workv1alpha2.EvictionReasonRebalance,
		Producer:               workv1alpha2.EvictionProducerScheduler,
		ClustersBeforeFailover: before,
		CreationTimestamp:      ptr.To(metav1.NewTime(testNow)),
	}
}

func withReason(t workv1alpha2.GracefulEvictionTask, reason string) workv1alpha2.GracefulEvictionTask {
	t.Reason = reason
	return t
}

func TestRescheduleReason(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"no annotation":   {want: workv1alpha2.EvictionReasonRebalance},
		"failback":        {annotations: map[string]string{workv1alpha2.RescheduleReasonAnnotation: "Failback"}, want: workv1alpha2.EvictionReasonFailback},
		"any other value": {annotations: map[string]string{workv1alpha2.RescheduleReasonAnnotation: "TaintUntolerated"}, want: workv1alpha2.EvictionReasonRebalance},
	}
	for name, tc := range cases {
		if got := rescheduleReason(tc.annotations); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}

func TestGracefulPlacement(t *testing.T) {
	members := map[string]*clusterv1alpha1.Cluster{
		"member1": st.MakeCluster("member1").Obj(),
		"member2": st.MakeCluster("member2").Obj(),
		"member3": st.MakeCluster("member3").Deleting().Obj(),
	}
	on := func(pairs ...any) []workv1alpha2.TargetCluster {
		var out []workv1alpha2.TargetCluster
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, workv1alpha2.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
		}
		return out
	}
	taintTask := workv1alpha2.GracefulEvictionTask{
		FromCluster: "member2", Reason: workv1alpha2.EvictionReasonTaintUntolerated, Producer: workv1alpha2.EvictionProducerTaintManager,
		PurgeMode: policyv1alpha1.PurgeModeDirectly,
	}
	cases := map[string]struct {
		spec          *workv1alpha2.ResourceBindingSpec
		target        []workv1alpha2.TargetCluster
		fresh, ok     bool
		reason        string
		state         stateFunc
		wantTasks     []workv1alpha2.GracefulEvictionTask
		wantRebalance []string
	}{
		"a fresh schedule that moves the workload keeps the old copy in a Rebalance task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
			wantTasks: []workv1alpha2.GracefulEvictionTask{rebalanceTask("member2", 2, "member2")}, wantRebalance: []string{"member2"},
		},
		"a failback keeps the old copy in a Failback task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
			reason:    workv1alpha2.EvictionReasonFailback,
			wantTasks: []workv1alpha2.GracefulEvictionTask{withReason(rebalanceTask("member2", 2, "member2"), workv1alpha2.EvictionReasonFailback)}, wantRebalance: []string{"member2"},
		},
		"a failback's task carries the state of the copy it leaves": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
			reason: workv1alpha2.EvictionReasonFailback,
			state: func(cluster string) (map[string]string, string) {
				return map[string]string{"job": "id-in-" + cluster}, "captured"
			},
			wantTasks: []workv1alpha2.GracefulEvictionTask{func() workv1alpha2.GracefulEvictionTask {
				t := withReason(rebalanceTask("member2", 2, "member2"), workv1alpha2.EvictionReasonFailback)
				t.PreservedLabelState, t.Message = map[string]string{"job": "id-in-member2"}, "captured"
				return t
			}()}, wantRebalance: []string{"member2"},
		},
		"only the dropped cluster gets a task; the one that stays with other replicas does not": {
			spec: st.MakeBinding("default", "nginx").Cluster("member1", 1).Cluster("member2", 1).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
			wantTasks: []workv1alpha2.GracefulEvictionTask{rebalanceTask("member2", 1, "member1", "member2")}, wantRebalance: []string{"member2"},
		},
		"must not: the same placement writes no task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member1", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
		},
		"must not: new replicas on the same clusters write no task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member1", 1).Cluster("member2", 1).SpecObj(), target: on("member1", 2, "member2", 0), fresh: true, ok: true,
		},
		"must not: a schedule that is not fresh is not a rebalance": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), target: on("member1", 2), ok: true,
		},
		"must not: a failed fresh schedule evicts nothing": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), target: on("member2", 2), fresh: true,
		},
		"must not: an empty placement evicts nothing": {
			spec: st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj(), fresh: true, ok: true,
		},
		"must not: a failover's task for the dropped cluster is kept as it is": {
			spec: func() *workv1alpha2.ResourceBindingSpec {
				s := st.MakeBinding("default", "nginx").Cluster("member2", 2).SpecObj()
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{taintTask}
				return s
			}(),
			target: on("member1", 2), fresh: true, ok: true,
			wantTasks: []workv1alpha2.GracefulEvictionTask{taintTask}, wantRebalance: []string{"member2"},
		},
		"a deleting cluster is dropped without a task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member3", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
		},
		"a cluster that is gone is dropped without a task": {
			spec: st.MakeBinding("default", "nginx").Cluster("member9", 2).SpecObj(), target: on("member1", 2), fresh: true, ok: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			orig := tc.spec.DeepCopy()
			reason := tc.reason
			if reason == "" {
				reason = workv1alpha2.EvictionReasonRebalance
			}
			w := gracefulPlacement(tc.spec, tc.target, move{graceful: tc.fresh, reason: reason, state: tc.state}, tc.ok, members, testNow)
			if !reflect.DeepEqual(w.clusters, tc.target) {
				t.Errorf("clusters: got %v, want %v", w.clusters, tc.target)
			}
			if !reflect.DeepEqual(w.tasks, tc.wantTasks) {
				t.Errorf("tasks:\n got %+v\nwant %+v", w.tasks, tc.wantTasks)
			}
			if !reflect.DeepEqual(w.rebalancedFrom, tc.wantRebalance) {
				t.Errorf("rebalancedFrom: got %v, want %v", w.rebalancedFrom, tc.wantRebalance)
			}
			if !reflect.DeepEqual(tc.spec, orig) {
				t.Errorf("the binding's spec was modified")
			}
		})
	}
}

// A WorkloadRebalancer after a failover: the workload runs in the backup
// group (member2); a fresh schedule takes it back to member1 and keeps the
// copy in member2 in the same spec write.
func TestReconcileRebalanceKeepsTheOldCopy(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	lastHour := metav1.NewTime(testNow.Add(-time.Hour))
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
		SchedulerStatus(1, &lastHour, "backup").Condition(scheduledCondition()).
		RescheduleTriggeredAt(metav1.NewTime(testNow.Add(-time.Minute))).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	want := []workv1alpha2.GracefulEvictionTask{rebalanceTask("member2", 2, "member2")}
	if !equality.Semantic.DeepEqual(got.Spec.GracefulEvictionTasks, want) {
		t.Errorf("tasks:\n got %+v\nwant %+v", got.Spec.GracefulEvictionTasks, want)
	}
	if h.writes != 2 {
		t.Errorf("writes: got %d, want 2 (one spec patch with placement and task, one status patch)", h.writes)
	}
	if got.Status.SchedulerObservedAffinityName != "primary" || !got.Status.LastScheduledTime.Time.Equal(testNow) {
		t.Errorf("status: affinity %q, lastScheduledTime %v", got.Status.SchedulerObservedAffinityName, got.Status.LastScheduledTime)
	}

	// Consumed: the next pass writes nothing, and member2, which has the
	// task, is not chosen again meanwhile.
	h.writes = 0
	_, got = h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 || len(got.Spec.GracefulEvictionTasks) != 1 {
		t.Errorf("second pass: %d writes, tasks %+v", h.writes, got.Spec.GracefulEvictionTasks)
	}
}

func TestReconcileRebalanceMustNotMove(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	lastHour := metav1.NewTime(testNow.Add(-time.Hour))
	cases := map[string]struct {
		clusters   []*clusterv1alpha1.Cluster
		placedOn   string
		tasks      []string
		wantWrites int
	}{
		"already on the first group: only the status records the schedule": {
			clusters: []*clusterv1alpha1.Cluster{st.MakeCluster("member1").Obj(), st.MakeCluster("member2").Obj()},
			placedOn: "member1", wantWrites: 1,
		},
		"no group fits: the current placement is kept, and its copy": {
			// member1 is gone; member2 has an application failure's task.
			clusters: []*clusterv1alpha1.Cluster{st.MakeCluster("member2").Obj()},
			placedOn: "member2", tasks: []string{"member2"}, wantWrites: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster(tc.placedOn, 2).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
				SchedulerStatus(1, &lastHour, "backup").Condition(scheduledCondition()).
				RescheduleTriggeredAt(metav1.NewTime(testNow.Add(-time.Minute)))
			for _, c := range tc.tasks {
				rb = rb.EvictionTask(c)
			}
			objs := []client.Object{rb.Obj()}
			for _, c := range tc.clusters {
				objs = append(objs, c)
			}
			h := newHarness(t, objs...)

			_, got := h.reconcileRB(t, "nginx-deployment")

			if want := []workv1alpha2.TargetCluster{{Name: tc.placedOn, Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
				t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
			}
			if len(got.Spec.GracefulEvictionTasks) != len(tc.tasks) ||
				(len(tc.tasks) > 0 && got.Spec.GracefulEvictionTasks[0].Reason != workv1alpha2.EvictionReasonApplicationFailure) {
				t.Errorf("tasks: %+v", got.Spec.GracefulEvictionTasks)
			}
			if h.writes != tc.wantWrites {
				t.Errorf("writes: got %d, want %d", h.writes, tc.wantWrites)
			}
		})
	}
}

// A fresh schedule asked for by the failback controller writes the task
// of the cluster it leaves with reason Failback, in the same spec write.
func TestReconcileFailbackTask(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	lastHour := metav1.NewTime(testNow.Add(-time.Hour))
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
		Annotation(workv1alpha2.RescheduleReasonAnnotation, workv1alpha2.EvictionReasonFailback).
		SchedulerStatus(1, &lastHour, "backup").Condition(scheduledCondition()).
		RescheduleTriggeredAt(metav1.NewTime(testNow.Add(-time.Minute))).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	want := []workv1alpha2.GracefulEvictionTask{withReason(rebalanceTask("member2", 2, "member2"), workv1alpha2.EvictionReasonFailback)}
	if !equality.Semantic.DeepEqual(got.Spec.GracefulEvictionTasks, want) {
		t.Errorf("tasks:\n got %+v\nwant %+v", got.Spec.GracefulEvictionTasks, want)
	}
}

// After an abandoned failback the graceful-eviction controller puts the
// cluster the workload left back into spec.clusters, while the scheduler
// last observed the first term (the failback's). The next ordinary pass
// must keep the copy that runs: it must not move the workload back to the
// cluster whose copy was just given up, without a task.
func TestReconcileAfterAbandonedFailbackMustNotMove(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	lastHour := metav1.NewTime(testNow.Add(-time.Hour))
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member2", 2).Generation(2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
		SchedulerStatus(1, &lastHour, "primary").Condition(scheduledCondition()).
		RescheduleTriggeredAt(metav1.NewTime(testNow.Add(-2 * time.Hour))).Obj()
	h := newHarness(t, append(threeMembers(), rb)...)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v (the copy that runs)", got.Spec.Clusters, want)
	}
	if len(got.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("tasks: %+v", got.Spec.GracefulEvictionTasks)
	}
}

func TestMoveOf(t *testing.T) {
	placed := st.MakeBinding("default", "nginx").Cluster("member1", 2).SpecObj()
	unplaced := st.MakeBinding("default", "nginx").SpecObj()
	primary := &workv1alpha2.ResourceBindingStatus{SchedulerObservedAffinityName: "primary"}
	failback := map[string]string{workv1alpha2.RescheduleReasonAnnotation: workv1alpha2.EvictionReasonFailback}
	cases := map[string]struct {
		pass        Pass
		spec        *workv1alpha2.ResourceBindingSpec
		annotations map[string]string
		want        move
	}{
		"a fresh schedule is a rebalance": {
			pass: Pass{Fresh: true, Result: core.Result{AffinityName: "primary"}}, spec: placed,
			want: move{graceful: true, reason: workv1alpha2.EvictionReasonRebalance},
		},
		"a fresh schedule the failback controller asked for is a failback, also across terms": {
			pass: Pass{Fresh: true, Result: core.Result{AffinityName: "backup"}}, spec: placed, annotations: failback,
			want: move{graceful: true, reason: workv1alpha2.EvictionReasonFailback},
		},
		"a switch of term of a placed workload is a rebalance that says so": {
			pass: Pass{Result: core.Result{AffinityName: "backup"}}, spec: placed,
			want: move{graceful: true, reason: workv1alpha2.EvictionReasonRebalance, message: `the clusterAffinities term changed from "primary" to "backup"`},
		},
		"must not: the same term": {
			pass: Pass{Result: core.Result{AffinityName: "primary"}}, spec: placed,
		},
		"must not: a workload placed nowhere has nothing to keep": {
			pass: Pass{Result: core.Result{AffinityName: "backup"}}, spec: unplaced,
		},
		"must not: a failed schedule": {
			pass: Pass{Result: core.Result{AffinityName: "primary"}, Err: &core.AffinitiesError{}}, spec: placed,
		},
		"must not: no clusterAffinities": {
			pass: Pass{}, spec: placed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := moveOf(tc.pass, tc.spec, primary, tc.annotations); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A scale-up that the term in use cannot hold moves the workload to the
// next term; its copies in the old term stay, in Rebalance tasks written
// with the new placement, until the new placement is Healthy.
func TestReconcileTermSwitchKeepsTheOldCopy(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").DynamicWeight().Obj()
	rb := st.MakeBinding("default", "nginx").Replicas(20).Placement(groups).Cluster("member1", 10).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
		SchedulerStatus(1, nil, "primary").Condition(scheduledCondition()).Obj()
	h := newHarness(t, st.MakeCluster("member1").Free(5, "").Obj(), st.MakeCluster("member2").Obj(), rb)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 20}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	task := rebalanceTask("member1", 10, "member1")
	task.Message = `the clusterAffinities term changed from "primary" to "backup"`
	if want := []workv1alpha2.GracefulEvictionTask{task}; !equality.Semantic.DeepEqual(got.Spec.GracefulEvictionTasks, want) {
		t.Errorf("tasks:\n got %+v\nwant %+v", got.Spec.GracefulEvictionTasks, want)
	}
	if got.Status.SchedulerObservedAffinityName != "backup" {
		t.Errorf("observed affinity: %q", got.Status.SchedulerObservedAffinityName)
	}

	// The switch is recorded: the next pass writes nothing, and member1,
	// which has the task, is not chosen again meanwhile.
	h.writes = 0
	_, got = h.reconcileRB(t, "nginx-deployment")
	if h.writes != 0 || len(got.Spec.GracefulEvictionTasks) != 1 {
		t.Errorf("second pass: %d writes, tasks %+v", h.writes, got.Spec.GracefulEvictionTasks)
	}
}

// A term whose cluster no longer matches (its label was removed) moves a
// Duplicated workload to the next term the same graceful way.
func TestReconcileTermSwitchOnLabelChangeKeepsTheOldCopy(t *testing.T) {
	groups := &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "primary"}}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}},
	}}
	rb := st.MakeBinding("default", "nginx").Replicas(2).Placement(groups).Cluster("member1", 2).
		Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
		SchedulerStatus(1, nil, "primary").Condition(scheduledCondition()).Obj()
	h := newHarness(t, st.MakeCluster("member1").Obj(), st.MakeCluster("member2").Obj(), rb)

	_, got := h.reconcileRB(t, "nginx-deployment")

	if want := []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
		t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
	}
	if len(got.Spec.GracefulEvictionTasks) != 1 || got.Spec.GracefulEvictionTasks[0].FromCluster != "member1" ||
		got.Spec.GracefulEvictionTasks[0].Reason != workv1alpha2.EvictionReasonRebalance {
		t.Errorf("tasks: %+v, want member1's copy kept by a Rebalance task", got.Spec.GracefulEvictionTasks)
	}
}

// A term switched because a cluster of the term in use failed: the
// failover controller already evicted that cluster (its task is left as
// it is, never doubled); the cluster of the old term that still runs its
// share is kept by a Rebalance task until the new placement is Healthy.
func TestReconcileTermSwitchAfterFailoverKeepsTheFailoverTask(t *testing.T) {
	groups := st.MakePlacement().AffinityTerm("primary", "member1", "member3").AffinityTerm("backup", "member2").DynamicWeight().Obj()
	taintTask := workv1alpha2.GracefulEvictionTask{
		FromCluster: "member1", Reason: workv1alpha2.EvictionReasonTaintUntolerated, Producer: workv1alpha2.EvictionProducerTaintManager,
		PurgeMode: policyv1alpha1.PurgeModeDirectly, Replicas: ptr.To[int32](5), ClustersBeforeFailover: []string{"member1", "member3"},
		CreationTimestamp: ptr.To(metav1.NewTime(testNow.Add(-time.Minute))),
	}
	cases := map[string]struct {
		clusters  []workv1alpha2.TargetCluster
		wantTasks []workv1alpha2.GracefulEvictionTask
	}{
		"the old term's survivor is kept": {
			clusters: []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 5}},
			wantTasks: []workv1alpha2.GracefulEvictionTask{taintTask, func() workv1alpha2.GracefulEvictionTask {
				t := rebalanceTask("member3", 5, "member3")
				t.Message = `the clusterAffinities term changed from "primary" to "backup"`
				return t
			}()},
		},
		"nothing left in the old term: only the failover's task": {
			wantTasks: []workv1alpha2.GracefulEvictionTask{taintTask},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := st.MakeBinding("default", "nginx").Replicas(10).Placement(groups).
				Annotation(workv1alpha2.AppliedPlacementAnnotation, appliedJSON(t, groups)).
				SchedulerStatus(1, nil, "primary").Condition(scheduledCondition())
			for _, c := range tc.clusters {
				b = b.Cluster(c.Name, c.Replicas)
			}
			rb := b.Obj()
			rb.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{taintTask}
			h := newHarness(t, st.MakeCluster("member1").Ready(metav1.ConditionFalse).Obj(), st.MakeCluster("member2").Obj(),
				st.MakeCluster("member3").Free(2, "").Obj(), rb)

			_, got := h.reconcileRB(t, "nginx-deployment")

			if want := []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 10}}; !reflect.DeepEqual(got.Spec.Clusters, want) {
				t.Errorf("spec.clusters: got %v, want %v", got.Spec.Clusters, want)
			}
			if !equality.Semantic.DeepEqual(got.Spec.GracefulEvictionTasks, tc.wantTasks) {
				t.Errorf("tasks:\n got %+v\nwant %+v", got.Spec.GracefulEvictionTasks, tc.wantTasks)
			}
		})
	}
}
