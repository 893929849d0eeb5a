package failover

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestTaskDone(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
	)
	graceful := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	directly := makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")
	never := makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")
	for name, tc := range map[string]struct {
		task       workv1alpha2.GracefulEvictionTask
		binding    *bindingWrapper
		now        int
		wantDone   bool
		wantReason string
	}{
		"Gracefully: replacement healthy": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", healthy).health("member2", unhealthy),
			now:        30,
			wantDone:   true,
			wantReason: "is healthy",
		},
		// member1 reports Healthy for the share it ran before the scheduler
		// raised it: the old copy is still needed.
		"Gracefully: a Healthy report of the placement before the scheduler's change": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", healthy).health("member2", unhealthy).staleReport(),
			now:        30,
			wantReason: "waiting for the replacement",
		},
		"Rebalance: the new placement healthy": {
			task: func() workv1alpha2.GracefulEvictionTask {
				t := graceful
				t.Reason, t.Producer = workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionProducerScheduler
				return t
			}(),
			binding:    makeBinding("a").clusters("member1").health("member1", healthy).health("member2", healthy),
			now:        30,
			wantDone:   true,
			wantReason: "is healthy",
		},
		"Rebalance: the new placement not healthy yet keeps the old copy": {
			task: func() workv1alpha2.GracefulEvictionTask {
				t := graceful
				t.Reason, t.Producer = workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionProducerScheduler
				return t
			}(),
			binding:    makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnknown).health("member2", healthy),
			now:        30,
			wantReason: "waiting for the replacement",
		},
		"Gracefully (old spelling Graciously): replacement healthy": {
			task:     withGrace(makeTask("member2", policyv1alpha1.PurgeModeGraciously, 0, "member2"), 600),
			binding:  makeBinding("a").clusters("member1").health("member1", healthy),
			now:      30,
			wantDone: true,
		},
		"Gracefully: replacement not healthy yet": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        30,
			wantReason: "waiting for the replacement",
		},
		"Gracefully: replacement Unknown is not healthy": {
			task:    graceful,
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnknown),
			now:     30,
		},
		"Gracefully: healthy but the scheduler has not placed the replacement yet": {
			task:    graceful,
			binding: makeBinding("a").clusters("member1").health("member1", healthy).unscheduled(),
			now:     30,
		},
		"Gracefully: grace period expired": {
			task:       graceful,
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        600,
			wantDone:   true,
			wantReason: "grace period of 10m0s passed",
		},
		"Gracefully: no grace on the task uses the default (10m)": {
			task:    makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"),
			binding: makeBinding("a").clusters("member1"),
			now:     599,
		},
		"no target: never done, not even after the grace period": {
			task:       graceful,
			binding:    makeBinding("a").health("member2", unhealthy),
			now:        100000,
			wantReason: "no cluster to fail over to",
		},
		"no target, Directly: the old copy is kept too": {
			task:    directly,
			binding: makeBinding("a").health("member2", unhealthy),
			now:     100000,
		},
		"Never: kept forever": {
			task:       never,
			binding:    makeBinding("a").clusters("member1").health("member1", healthy),
			now:        100000,
			wantReason: "until a user sets suppressDeletion to false",
		},
		"Never without suppressDeletion: still kept": {
			task:    withSuppress(never, nil),
			binding: makeBinding("a").clusters("member1").health("member1", healthy),
			now:     100000,
		},
		"Never + suppressDeletion false: done at once": {
			task:       withSuppress(never, ptr.To(false)),
			binding:    makeBinding("a").clusters("member1").health("member1", unhealthy),
			now:        1,
			wantDone:   true,
			wantReason: "suppressDeletion: false",
		},
		"suppressDeletion false: done even without a target (the user decided)": {
			task:     withSuppress(never, ptr.To(false)),
			binding:  makeBinding("a"),
			now:      1,
			wantDone: true,
		},
		"Directly: old copy still reported": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1").health("member2", unhealthy),
			now:        10,
			wantReason: "waiting for the old copy",
		},
		"Directly: old copy gone": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1"),
			now:        10,
			wantDone:   true,
			wantReason: "was deleted",
		},
		"Directly: unreachable old cluster times out": {
			task:       directly,
			binding:    makeBinding("a").clusters("member1").health("member2", workv1alpha2.ResourceUnknown),
			now:        600,
			wantDone:   true,
			wantReason: "not confirmed deleted",
		},
		"no creation time yet": {
			task:    withGrace(workv1alpha2.GracefulEvictionTask{FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeGracefully}, 1),
			binding: makeBinding("a").clusters("member1").health("member1", healthy),
			now:     1000,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}
			done, reason := taskDone(&tc.task, o, at(tc.now))
			if done != tc.wantDone {
				t.Errorf("done = %t (%s), want %t", done, reason, tc.wantDone)
			}
			if !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", reason, tc.wantReason)
			}
		})
	}
}

func TestPlanTasks(t *testing.T) {
	for name, tc := range map[string]struct {
		binding     *bindingWrapper
		now         int
		wantKept    []string
		wantChanged bool
		wantRequeue time.Duration
	}{
		"nothing to do: no write, requeue at the grace deadline": {
			binding:     makeBinding("a").clusters("member1").task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0), 600)),
			now:         100,
			wantKept:    []string{"member2"},
			wantRequeue: 500 * time.Second,
		},
		"stamps a task without a creation time": {
			binding:     makeBinding("a").clusters("member1").task(workv1alpha2.GracefulEvictionTask{FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeGracefully}),
			now:         100,
			wantKept:    []string{"member2"},
			wantChanged: true,
			wantRequeue: DefaultGracePeriod,
		},
		"removes done tasks, keeps the others": {
			binding: makeBinding("a").clusters("member1").
				task(withSuppress(makeTask("member2", policyv1alpha1.PurgeModeNever, 0), ptr.To(false))).
				task(makeTask("member3", policyv1alpha1.PurgeModeNever, 0)),
			now:         100,
			wantKept:    []string{"member3"},
			wantChanged: true,
		},
		"no target: no timed requeue": {
			binding:  makeBinding("a").task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0), 600)),
			now:      100,
			wantKept: []string{"member2"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			p := planTasks(observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}, at(tc.now))
			var kept []string
			for _, k := range p.kept {
				kept = append(kept, k.FromCluster)
				if k.CreationTimestamp == nil {
					t.Errorf("task %s kept without a creation time", k.FromCluster)
				}
			}
			if strings.Join(kept, ",") != strings.Join(tc.wantKept, ",") {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			if p.changed != tc.wantChanged {
				t.Errorf("changed = %t, want %t", p.changed, tc.wantChanged)
			}
			if p.requeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", p.requeueAfter, tc.wantRequeue)
			}
		})
	}
}

func TestTargetCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		binding    *bindingWrapper
		wantNil    bool
		wantKeep   bool
		wantStatus string
		wantMsg    string
	}{
		"no task: remove": {
			binding: makeBinding("a").clusters("member1"),
			wantNil: true,
		},
		"task and a placement: True": {
			binding:    makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)),
			wantStatus: "True",
			wantMsg:    "placed on member1",
		},
		"no placement, scheduler said no: False with its message": {
			binding: makeBinding("a").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).
				unscheduled().noClusterFit("0/2 clusters are available: 1 cluster(s) is in the process of eviction, 1 cluster(s) didn't match the placement cluster affinity constraint."),
			wantStatus: "False",
			wantMsg:    "in the process of eviction",
		},
		"a placement kept while the scheduler could not place what was evicted: False": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).
				unscheduled().noClusterFit("0/3 clusters are available: 1 cluster(s) had insufficient capacity"),
			wantStatus: "False",
			wantMsg:    "not placed anywhere else (the scheduler: 0/3 clusters are available: 1 cluster(s) had insufficient capacity); member1 keeps its share.",
		},
		"a placement the scheduler has not looked at yet: True": {
			binding:    makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).unscheduled(),
			wantStatus: "True",
			wantMsg:    "placed on member1",
		},
		"a placement the scheduler made, then a later attempt failed at the same generation: True": {
			binding: makeBinding("a").clusters("member1").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).
				noClusterFit("0/3 clusters are available"),
			wantStatus: "True",
			wantMsg:    "placed on member1",
		},
		"no placement, scheduler has not looked yet: unchanged": {
			binding:  makeBinding("a").task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0)).unscheduled(),
			wantNil:  true,
			wantKeep: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			cond, keep := targetCondition(b.Generation, &b.Spec, &b.Status)
			if keep != tc.wantKeep || (cond == nil) != tc.wantNil {
				t.Fatalf("targetCondition = %+v, keep %t; want nil=%t keep=%t", cond, keep, tc.wantNil, tc.wantKeep)
			}
			if cond == nil {
				return
			}
			if string(cond.Status) != tc.wantStatus || !strings.Contains(cond.Message, tc.wantMsg) {
				t.Errorf("condition = %s %q, want %s containing %q", cond.Status, cond.Message, tc.wantStatus, tc.wantMsg)
			}
		})
	}
}

// An eviction is undone when its cluster is healthy again while nothing
// was placed instead: the task goes and its cluster returns to
// spec.clusters, so the copy that kept running is the workload again. It
// is never undone while a replacement is placed, nor for other reasons.
func TestPlanTasksUndoesEvictionsOfRecoveredClusters(t *testing.T) {
	const (
		healthy   = workv1alpha2.ResourceHealthy
		unhealthy = workv1alpha2.ResourceUnhealthy
	)
	ready := func(name string) *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: clusterv1alpha1.ClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue}}}}
	}
	notReady := func(name string) *clusterv1alpha1.Cluster {
		c := ready(name)
		c.Status.Conditions[0].Status = metav1.ConditionFalse
		return c
	}
	tainted := func(c *clusterv1alpha1.Cluster, key string) *clusterv1alpha1.Cluster {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: mt(0)})
		return c
	}
	taintTask := func(from string, mode policyv1alpha1.PurgeMode, replicas int32) workv1alpha2.GracefulEvictionTask {
		t := withGrace(makeTask(from, mode, 0, from), 60)
		t.Reason, t.Producer, t.Replicas = workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionProducerTaintManager, ptr.To(replicas)
		return t
	}
	tolerate := func(b *bindingWrapper, seconds *int64) *bindingWrapper {
		b.Spec.Placement = &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{
			Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}}
		return b
	}
	divided := func(b *bindingWrapper) *bindingWrapper {
		b.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}}
		return b
	}
	replicas := func(b *bindingWrapper, n int32) *bindingWrapper { b.Spec.Replicas = n; return b }
	rebalanceTask := func(from string) workv1alpha2.GracefulEvictionTask {
		t := makeTask(from, policyv1alpha1.PurgeModeGracefully, 0, from)
		t.Reason, t.Producer, t.Replicas = workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionProducerScheduler, ptr.To[int32](2)
		return t
	}

	for name, tc := range map[string]struct {
		binding       *bindingWrapper
		clusters      []*clusterv1alpha1.Cluster
		wantRestored  []workv1alpha2.TargetCluster
		wantKept      []string
		wantCancelled int
	}{
		"cluster Ready again, no NoExecute taint, nothing placed: undone": {
			binding:      replicas(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 1)), 2),
			clusters:     []*clusterv1alpha1.Cluster{ready("member1")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}},
		},
		"Directly and nothing placed: undone, the old copy was kept": {
			binding:      replicas(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeDirectly, 3)), 3),
			clusters:     []*clusterv1alpha1.Cluster{ready("member1")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 3}},
		},
		"Divided: the kept copy's share comes back": {
			binding:      divided(replicas(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 1)), 4)),
			clusters:     []*clusterv1alpha1.Cluster{ready("member1")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}},
		},
		"a NoExecute taint tolerated for good: undone": {
			binding:      tolerate(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)), nil),
			clusters:     []*clusterv1alpha1.Cluster{tainted(ready("member1"), "maintenance")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member1"}},
		},
		"the application is healthy again, nothing placed: undone": {
			binding:      replicas(makeBinding("a").health("member2", healthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)), 2),
			clusters:     []*clusterv1alpha1.Cluster{ready("member2")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}},
		},
		"Never, nothing placed, the application healthy again: undone": {
			binding:      replicas(makeBinding("a").health("member2", healthy).task(makeTask("member2", policyv1alpha1.PurgeModeNever, 0, "member2")), 2),
			clusters:     []*clusterv1alpha1.Cluster{ready("member2")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}},
		},
		"two tasks from one recovered cluster: both go, the cluster comes back once": {
			binding: replicas(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)).
				task(withGrace(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 5, "member1"), 60)).health("member1", healthy), 2),
			clusters:      []*clusterv1alpha1.Cluster{ready("member1")},
			wantRestored:  []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}},
			wantCancelled: 2,
		},
		"must not: the application's last report is Healthy but its cluster is not Ready": {
			binding:  makeBinding("a").health("member2", healthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)),
			clusters: []*clusterv1alpha1.Cluster{notReady("member2")},
			wantKept: []string{"member2"},
		},
		"must not: the application's cluster is gone": {
			binding:  makeBinding("a").health("member2", healthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)),
			wantKept: []string{"member2"},
		},
		"must not: the cluster is still not Ready": {
			binding:  makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)),
			clusters: []*clusterv1alpha1.Cluster{notReady("member1")},
			wantKept: []string{"member1"},
		},
		"must not: Ready, but an untolerated NoExecute taint remains": {
			binding:  makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)),
			clusters: []*clusterv1alpha1.Cluster{tainted(ready("member1"), "cluster.karmada.io/not-ready")},
			wantKept: []string{"member1"},
		},
		"must not: Ready, but a NoExecute taint tolerated only for a while": {
			binding:  tolerate(makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)), ptr.To[int64](300)),
			clusters: []*clusterv1alpha1.Cluster{tainted(ready("member1"), "maintenance")},
			wantKept: []string{"member1"},
		},
		"must not: the cluster is gone": {
			binding:  makeBinding("a").task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)),
			wantKept: []string{"member1"},
		},
		"Divided, the cluster Ready again while its share was never placed elsewhere: undone": {
			binding: divided(replicas(makeBinding("a").clusters("member2").health("member2", healthy).
				task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)), 4)).
				unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonUnschedulable, 0),
			clusters:     []*clusterv1alpha1.Cluster{ready("member1")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}},
		},
		"must not: a share never placed elsewhere, its cluster still not Ready": {
			binding: divided(replicas(makeBinding("a").clusters("member2").health("member2", healthy).
				task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)), 4)).
				unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonUnschedulable, 0),
			clusters: []*clusterv1alpha1.Cluster{notReady("member1")},
			wantKept: []string{"member1"},
		},
		"must not: a replacement is placed (it closes the normal way)": {
			binding:  makeBinding("a").clusters("member2").health("member2", unhealthy).task(withGrace(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2), 1000000)),
			clusters: []*clusterv1alpha1.Cluster{ready("member1")},
			wantKept: []string{"member1"},
		},
		"must not: the application is still unhealthy": {
			binding:  makeBinding("a").health("member2", unhealthy).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)),
			wantKept: []string{"member2"},
		},
		"must not: the application's health is Unknown": {
			binding:  makeBinding("a").health("member2", workv1alpha2.ResourceUnknown).task(withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)),
			wantKept: []string{"member2"},
		},
		"a rebalance whose new placement was lost (its cluster evicted in turn): the copy it kept is the workload again": {
			binding: replicas(makeBinding("a").task(rebalanceTask("member2")).
				task(taintTask("member1", policyv1alpha1.PurgeModeGracefully, 2)), 2),
			clusters:     []*clusterv1alpha1.Cluster{ready("member2"), notReady("member1")},
			wantRestored: []workv1alpha2.TargetCluster{{Name: "member2", Replicas: 2}},
			wantKept:     []string{"member1"},
		},
		"must not: a rebalance whose new placement is placed but not Healthy yet (the cluster left is Ready)": {
			binding:  makeBinding("a").clusters("member1").health("member1", unhealthy).task(withGrace(rebalanceTask("member2"), 1000000)),
			clusters: []*clusterv1alpha1.Cluster{ready("member2")},
			wantKept: []string{"member2"},
		},
		"must not: a rebalance without placement whose cluster is not Ready": {
			binding:  makeBinding("a").task(rebalanceTask("member2")),
			clusters: []*clusterv1alpha1.Cluster{notReady("member2")},
			wantKept: []string{"member2"},
		},
		"must not: a rebalance without placement whose cluster got an untolerated NoExecute taint": {
			binding:  makeBinding("a").task(rebalanceTask("member2")),
			clusters: []*clusterv1alpha1.Cluster{tainted(ready("member2"), "cluster.karmada.io/not-ready")},
			wantKept: []string{"member2"},
		},
		"must not: an eviction written by another tool": {
			binding: makeBinding("a").health("member2", healthy).task(func() workv1alpha2.GracefulEvictionTask {
				t := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 60)
				t.Reason, t.Producer = "ManualMove", "someone"
				return t
			}()),
			clusters: []*clusterv1alpha1.Cluster{ready("member2")},
			wantKept: []string{"member2"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod,
				clusters: map[string]*clusterv1alpha1.Cluster{}}
			for _, c := range tc.clusters {
				o.clusters[c.Name] = c
			}
			p := planTasks(o, at(100000))
			if !equality.Semantic.DeepEqual(p.restored, tc.wantRestored) {
				t.Errorf("restored = %+v, want %+v", p.restored, tc.wantRestored)
			}
			var kept []string
			for _, k := range p.kept {
				kept = append(kept, k.FromCluster)
			}
			if strings.Join(kept, ",") != strings.Join(tc.wantKept, ",") {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			if len(p.removed) != 0 && len(tc.wantKept) > 0 {
				t.Errorf("removed %+v: a task left without undoing its eviction deletes the copy", p.removed)
			}
			wantCancelled := tc.wantCancelled
			if wantCancelled == 0 {
				wantCancelled = len(tc.wantRestored)
			}
			if len(p.cancelled) != wantCancelled {
				t.Errorf("cancelled %d tasks, want %d", len(p.cancelled), wantCancelled)
			}
		})
	}
}

// The grace period counts from the moment a replacement was placed, not
// from the task's creation: a target that appears after the grace period
// does not delete the old copy at once.
func TestTaskDoneGraceCountsFromThePlacement(t *testing.T) {
	graceful := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	directly := withGrace(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2"), 600)
	targetSince := func(b *bindingWrapper, status metav1.ConditionStatus, seconds int) *bindingWrapper {
		b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: ConditionFailoverTargetAvailable, Status: status, LastTransitionTime: *mt(seconds)})
		return b
	}
	scheduledAt := func(b *bindingWrapper, seconds int) *bindingWrapper {
		b.Status.LastScheduledTime = mt(seconds)
		return b
	}
	unhealthyOn1 := func() *bindingWrapper {
		return makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).health("member2", workv1alpha2.ResourceUnhealthy)
	}
	// A Divided workload of two clusters, member2 evicted: member1 keeps
	// its share and reports Healthy, and the copy in member2 too.
	healthyOn1 := func() *bindingWrapper {
		b := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).health("member2", workv1alpha2.ResourceHealthy)
		b.Spec.Replicas = 4
		b.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}}
		return b
	}
	// The scheduler could not place the binding's current generation.
	unplacedShare := func(b *bindingWrapper) *bindingWrapper {
		return b.unscheduled().withScheduled(metav1.ConditionFalse, workv1alpha2.BindingReasonUnschedulable, 0)
	}
	for name, tc := range map[string]struct {
		task     workv1alpha2.GracefulEvictionTask
		binding  *bindingWrapper
		now      int
		gone     bool
		wantDone bool
	}{
		"placed at once: the grace period from the task's creation": {
			task: graceful, binding: targetSince(unhealthyOn1(), metav1.ConditionTrue, 0), now: 600, wantDone: true,
		},
		"placed later (condition True since 5000): not expired at 5599": {
			task: graceful, binding: targetSince(unhealthyOn1(), metav1.ConditionTrue, 5000), now: 5599,
		},
		"placed later (condition True since 5000): expired at 5600": {
			task: graceful, binding: targetSince(unhealthyOn1(), metav1.ConditionTrue, 5000), now: 5600, wantDone: true,
		},
		"the condition still says no target, the scheduler placed it at 5000": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1(), metav1.ConditionFalse, 100), 5000), now: 5599,
		},
		"the condition still says no target and the scheduler's stamp is older: the grace starts now": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1(), metav1.ConditionFalse, 100), 50), now: 100000,
		},
		"no condition yet, the scheduler placed it at 5000": {
			task: graceful, binding: scheduledAt(unhealthyOn1(), 5000), now: 5599,
		},
		"must not: a Divided share the scheduler could not place never runs out, whatever the condition still says": {
			task: graceful, binding: unplacedShare(targetSince(healthyOn1(), metav1.ConditionTrue, 0)), now: 100000,
		},
		// member2 evicted to member1 (True since 0); member1 evicted in turn
		// at 500 and the scheduler placed the workload again at 501,
		// without the condition turning False between.
		"a newer eviction: the grace counts from the placement after it": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1().task(graceful).task(makeTask("member3", policyv1alpha1.PurgeModeGracefully, 500)), metav1.ConditionTrue, 0), 501), now: 1100,
		},
		"a newer eviction: and ends 600s after that placement": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1().task(graceful).task(makeTask("member3", policyv1alpha1.PurgeModeGracefully, 500)), metav1.ConditionTrue, 0), 501), now: 1101, wantDone: true,
		},
		"a newer eviction and an older scheduler stamp: from the eviction": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1().task(graceful).task(makeTask("member3", policyv1alpha1.PurgeModeGracefully, 500)), metav1.ConditionTrue, 0), 400), now: 1100, wantDone: true,
		},
		"must not: a newer eviction the scheduler has not placed yet never runs out": {
			task: graceful, binding: scheduledAt(targetSince(unhealthyOn1().task(graceful).task(makeTask("member3", policyv1alpha1.PurgeModeGracefully, 500)), metav1.ConditionTrue, 0), 0).unscheduled(), now: 100000,
		},
		"must not: Directly, a Divided share the scheduler could not place keeps its task past the bound": {
			task: directly, binding: unplacedShare(targetSince(healthyOn1().task(directly), metav1.ConditionTrue, 0)), now: 100000,
		},
		"must not: Directly, a Divided share the scheduler could not place keeps its task, its copy gone": {
			task: directly, binding: unplacedShare(targetSince(healthyOn1().task(directly), metav1.ConditionTrue, 0)), now: 100000, gone: true,
		},
		"Directly, Duplicated, the scheduler failed but the other cluster runs a whole copy: closed once the old copy is gone": {
			task: directly, binding: unplacedShare(targetSince(unhealthyOn1().task(directly), metav1.ConditionTrue, 0)), now: 5, gone: true, wantDone: true,
		},
		"Directly: the bounded wait for the old copy also counts from the placement": {
			task: directly, binding: targetSince(unhealthyOn1(), metav1.ConditionTrue, 5000), now: 5599,
		},
		"Directly: and ends 600s after it": {
			task: directly, binding: targetSince(unhealthyOn1(), metav1.ConditionTrue, 5000), now: 5600, wantDone: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod}
			if tc.gone {
				o.oldCopyGone = func(string) bool { return true }
			}
			done, reason := taskDone(&tc.task, o, at(tc.now))
			if done != tc.wantDone {
				t.Errorf("done = %t (%s), want %t", done, reason, tc.wantDone)
			}
		})
	}
}

// A Directly task from a Pull cluster whose agent fenced the old copy
// closes from the fencing time, not before, and not only after the grace
// period; one from a cluster that cannot be fenced waits as before.
func TestDirectlyTaskClosesOnceFenced(t *testing.T) {
	directly := makeTask("member2", policyv1alpha1.PurgeModeDirectly, 0, "member2")
	b := makeBinding("a").clusters("member1").health("member2", workv1alpha2.ResourceUnknown).task(directly).obj()
	fencedAt := func(seconds int) func(string) (time.Time, bool) {
		return func(cluster string) (time.Time, bool) { return at(seconds), cluster == "member2" }
	}
	for name, tc := range map[string]struct {
		fenced      func(string) (time.Time, bool)
		now         int
		wantDone    bool
		wantReason  string
		wantRequeue time.Duration
	}{
		"before the fencing time: waits, and comes back then": {fencedAt(70), 40, false, "waiting for the old copy", 30 * time.Second},
		"at the fencing time: done":                           {fencedAt(70), 70, true, "fenced by its agent", 0},
		"cannot be fenced: waits for the grace period":        {func(string) (time.Time, bool) { return time.Time{}, false }, 70, false, "waiting for the old copy", DefaultGracePeriod - 70*time.Second},
		"no fencing hook: waits for the grace period":         {nil, 70, false, "waiting for the old copy", DefaultGracePeriod - 70*time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			o := observed{generation: b.Generation, spec: &b.Spec, status: &b.Status, defaultGrace: DefaultGracePeriod, fencedAt: tc.fenced}
			done, reason := taskDone(&directly, o, at(tc.now))
			if done != tc.wantDone || !strings.Contains(reason, tc.wantReason) {
				t.Errorf("taskDone = %t %q, want %t and %q", done, reason, tc.wantDone, tc.wantReason)
			}
			if p := planTasks(o, at(tc.now)); !done && p.requeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter = %s, want %s", p.requeueAfter, tc.wantRequeue)
			}
		})
	}
	// Gracefully is never closed by fencing.
	graceful := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 0, "member2"), 600)
	gb := makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(graceful).obj()
	o := observed{generation: gb.Generation, spec: &gb.Spec, status: &gb.Status, defaultGrace: DefaultGracePeriod, fencedAt: fencedAt(10)}
	if done, reason := taskDone(&graceful, o, at(70)); done {
		t.Errorf("a Gracefully task closed by fencing: %s", reason)
	}
}

// Two failovers in a row: member1 evicted (a NoExecute taint) to member2,
// placed at 1; member2 evicted in turn at 500 before its copy was Healthy,
// and member3 placed at 501, the condition True throughout. The copy kept
// in member1, the last Healthy one, stays its 600 s counted from 501, and
// the condition says so across restarts.
func TestGraceCountsFromThePlacementAfterAChainedEviction(t *testing.T) {
	b := makeBinding("nginx").clusters("member2").
		health("member1", workv1alpha2.ResourceHealthy).
		task(taintTask()).obj()
	b.Status.LastScheduledTime = mt(1)
	m1 := makeCluster("member1").taint("maintenance", corev1.TaintEffectNoExecute, 0).obj()
	e := newEnv(t, nil, b, m1, makeCluster("member2").obj(), makeCluster("member3").obj())
	r := e.gracefulEviction()
	pass := func(seconds int) *workv1alpha2.ResourceBinding {
		t.Helper()
		e.clock.SetTime(at(seconds))
		for range 2 {
			if _, err := r.reconcile(context.Background(), resourceBindingKind, reqFor(b.Name)); err != nil {
				t.Fatal(err)
			}
		}
		return e.rb(b.Name)
	}
	got := pass(2)
	if c := meta.FindStatusCondition(got.Status.Conditions, ConditionFailoverTargetAvailable); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(mt(1)) {
		t.Fatalf("after member2 was placed: FailoverTargetAvailable = %+v, want True since 1", c)
	}

	e.clock.SetTime(at(500))
	second := withGrace(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 500, "member2"), 600)
	second.Reason, second.Producer, second.Replicas = workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionProducerTaintManager, ptr.To[int32](2)
	got.Spec.GracefulEvictionTasks = append(got.Spec.GracefulEvictionTasks, second)
	got.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 2}}
	e.update(got)
	got = e.rb(b.Name)
	got.Status.SchedulerObservedGeneration = got.Generation
	got.Status.LastScheduledTime = mt(501)
	e.updateStatus(got)

	got = pass(502)
	if c := meta.FindStatusCondition(got.Status.Conditions, ConditionFailoverTargetAvailable); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(mt(501)) {
		t.Fatalf("after member3 was placed: FailoverTargetAvailable = %+v, want True since 501", c)
	}
	if got = pass(1100); len(got.Spec.GracefulEvictionTasks) != 2 {
		t.Fatalf("at 1100, 599 s after member3 was placed: %d tasks, want both open (grace 600 s)", len(got.Spec.GracefulEvictionTasks))
	}
	got = pass(1102)
	for _, task := range got.Spec.GracefulEvictionTasks {
		if task.FromCluster == "member1" {
			t.Errorf("at 1102, 601 s after member3 was placed: member1's task is still open")
		}
	}
}
