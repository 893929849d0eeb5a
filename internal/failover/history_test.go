package failover

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestSyncHistory(t *testing.T) {
	task := withState(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 100, "member2"), "jobid", "aaaa")
	task.Message = "state not preserved for rule x"
	entry := workv1alpha2.FailoverHistoryItem{
		Time: *mt(100), Reason: workv1alpha2.EvictionReasonApplicationFailure, Producer: workv1alpha2.EvictionProducerRBApplicationFailover,
		FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeDirectly, ClustersBefore: []string{"member2"},
		PreservedLabelState: map[string]string{"jobid": "aaaa"}, Message: "state not preserved for rule x",
	}
	placed := entry
	placed.ClustersAfter = []string{"member1"}
	healed := placed
	healed.ReplacementHealthyTime = mt(300)
	chainA := workv1alpha2.FailoverHistoryItem{Time: *mt(100), FromCluster: "member1", ClustersBefore: []string{"member1"}}
	chainAPlaced := chainA
	chainAPlaced.ClustersAfter = []string{"member2"}
	chainB := workv1alpha2.FailoverHistoryItem{
		Time: *mt(200), Reason: workv1alpha2.EvictionReasonApplicationFailure, Producer: workv1alpha2.EvictionProducerRBApplicationFailover,
		FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeDirectly, ClustersBefore: []string{"member2"}, ClustersAfter: []string{"member3"},
	}

	for name, tc := range map[string]struct {
		binding      *bindingWrapper
		want         []workv1alpha2.FailoverHistoryItem
		wantAppended int
		wantHealed   int
	}{
		"task without entry: appended (the scheduler has not placed yet)": {
			binding:      makeBinding("a").task(task).unscheduled(),
			want:         []workv1alpha2.FailoverHistoryItem{entry},
			wantAppended: 1,
		},
		"idempotent: an entry per task, once": {
			binding: makeBinding("a").task(task).unscheduled().history(entry),
			want:    []workv1alpha2.FailoverHistoryItem{entry},
		},
		"replacement placed: clustersAfter": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceUnhealthy).task(task).history(entry),
			want:    []workv1alpha2.FailoverHistoryItem{placed},
		},
		"replacement healthy: replacementHealthyTime (task already gone)": {
			binding:    makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).history(placed),
			want:       []workv1alpha2.FailoverHistoryItem{healed},
			wantHealed: 1,
		},
		"a Healthy report of the placement before the scheduler's change: not healed yet": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).history(placed).staleReport(),
			want:    []workv1alpha2.FailoverHistoryItem{placed},
		},
		"closed entries stay as they are": {
			binding: makeBinding("a").clusters("member3").health("member3", workv1alpha2.ResourceHealthy).history(healed),
			want:    []workv1alpha2.FailoverHistoryItem{healed},
		},
		// A→B→C, the controller did not see B placed before B failed:
		// the entry of A gets B (the next eviction's clustersBefore), not
		// the current placement C.
		"chained: the next eviction tells where the earlier one went": {
			binding: makeBinding("a").clusters("member3").health("member3", workv1alpha2.ResourceUnhealthy).
				history(chainA).task(makeTask("member2", policyv1alpha1.PurgeModeDirectly, 200, "member2")),
			want:         []workv1alpha2.FailoverHistoryItem{chainAPlaced, chainB},
			wantAppended: 1,
		},
		"task without creation time waits": {
			binding: makeBinding("a").task(workv1alpha2.GracefulEvictionTask{FromCluster: "member2"}).unscheduled(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			got, change := syncHistory(b.Generation, &b.Spec, &b.Status, at(300))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if len(change.appended) != tc.wantAppended || len(change.healed) != tc.wantHealed {
				t.Errorf("appended %d healed %d, want %d and %d", len(change.appended), len(change.healed), tc.wantAppended, tc.wantHealed)
			}
		})
	}
}

func TestSyncHistoryBounded(t *testing.T) {
	b := makeBinding("a").clusters("member1")
	for i := 0; i < workv1alpha2.MaxFailoverHistoryItems; i++ {
		b.history(workv1alpha2.FailoverHistoryItem{Time: *mt(i), FromCluster: fmt.Sprintf("old%d", i), ClustersAfter: []string{"x"}, ReplacementHealthyTime: mt(i)})
	}
	b.task(makeTask("member2", policyv1alpha1.PurgeModeGracefully, 1000, "member1", "member2"))
	obj := b.obj()
	got, change := syncHistory(obj.Generation, &obj.Spec, &obj.Status, at(1001))
	if len(got) != workv1alpha2.MaxFailoverHistoryItems {
		t.Fatalf("len = %d, want %d", len(got), workv1alpha2.MaxFailoverHistoryItems)
	}
	if got[0].FromCluster != "old1" || got[len(got)-1].FromCluster != "member2" || len(change.appended) != 1 {
		t.Errorf("oldest not dropped first: first %s last %s", got[0].FromCluster, got[len(got)-1].FromCluster)
	}
	// A second pass does not re-add the dropped entry nor the new one.
	obj.Status.FailoverHistory = got
	again, change := syncHistory(obj.Generation, &obj.Spec, &obj.Status, at(1002))
	if !change.empty() || len(again) != len(got) {
		t.Errorf("second pass changed the history: %+v", change)
	}
}

// A requested move records that the copy moved there became Healthy. The
// failback moved the workload to member1 at 100; member1 failed at 200
// before its copy was Healthy, the Failback task from member2 was undone
// (member2 restored) and member2's copy is Healthy. Nothing on member1 ever
// was: the Failback entry gets no healthy time, and stays closed for good.
func TestSyncHistoryRequestedMoveNotHealedByAnotherCopy(t *testing.T) {
	failback := func(after ...string) workv1alpha2.FailoverHistoryItem {
		return workv1alpha2.FailoverHistoryItem{Time: *mt(100), Reason: workv1alpha2.EvictionReasonFailback, FromCluster: "member2",
			PurgeMode: policyv1alpha1.PurgeModeGracefully, ClustersBefore: []string{"member2"}, ClustersAfter: after}
	}
	rebalance := failback("member1")
	rebalance.Reason = workv1alpha2.EvictionReasonRebalance
	failedAgain := withReason(makeTask("member1", policyv1alpha1.PurgeModeGracefully, 200, "member1"), workv1alpha2.EvictionReasonTaintUntolerated)
	for name, tc := range map[string]struct {
		binding    *bindingWrapper
		wantHealed bool
	}{
		"must not: the cluster moved back to failed and was evicted; the copy kept is Healthy": {
			binding: makeBinding("a").clusters("member2").health("member2", workv1alpha2.ResourceHealthy).
				history(failback("member1")).task(failedAgain),
		},
		"must not: the eviction of the cluster moved back to is over": {
			binding: makeBinding("a").clusters("member2").health("member2", workv1alpha2.ResourceHealthy).
				history(failback("member1")).history(workv1alpha2.FailoverHistoryItem{Time: *mt(200), Reason: workv1alpha2.EvictionReasonTaintUntolerated,
				FromCluster: "member1", ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"}}),
		},
		"must not: the placement does not hold the cluster moved to": {
			binding: makeBinding("a").clusters("member2").health("member2", workv1alpha2.ResourceHealthy).history(failback("member1")),
		},
		"must not: a rebalance, alike": {
			binding: makeBinding("a").clusters("member2").health("member2", workv1alpha2.ResourceHealthy).history(rebalance).task(failedAgain),
		},
		"must not: only part of the clusters moved to is placed": {
			binding: makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).history(failback("member1", "member3")),
		},
		"the copy moved back is Healthy": {
			binding:    makeBinding("a").clusters("member1").health("member1", workv1alpha2.ResourceHealthy).history(failback("member1")),
			wantHealed: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.binding.obj()
			got, _ := syncHistory(b.Generation, &b.Spec, &b.Status, at(300))
			for _, h := range got {
				if !requestedMove(h.Reason) {
					continue
				}
				if healed := h.ReplacementHealthyTime != nil; healed != tc.wantHealed {
					t.Errorf("%s entry to %v healthy: %t, want %t", h.Reason, h.ClustersAfter, healed, tc.wantHealed)
				}
			}
		})
	}
	// Once undone, the entry no longer keeps the history open.
	b := makeBinding("a").clusters("member2").
		history(failback("member1")).
		history(workv1alpha2.FailoverHistoryItem{Time: *mt(200), Reason: workv1alpha2.EvictionReasonTaintUntolerated, FromCluster: "member1",
			ClustersBefore: []string{"member1"}, ClustersAfter: []string{"member2"}, ReplacementHealthyTime: mt(250)}).obj()
	if historyOpen(&b.Status) {
		t.Error("an undone failback keeps the history open")
	}
}
