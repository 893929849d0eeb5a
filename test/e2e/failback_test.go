//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// failbackWindow is the policy's stabilizationSeconds.
const failbackWindow = 20 * time.Second

// failbackMax is the controller manager's --failback-max-concurrent.
const failbackMax = 2

// failbackStateLabel is the label TestFailback's statePreservation rule
// writes into the copy moved back.
const failbackStateLabel = "e2e.lifeboat.dev/ready-replicas"

// TestFailback proves automatic failback: twenty Deployments that prefer
// member1 fail over to member2 when member1 is killed. member1 comes back
// and fails again within the window (a flap), then comes back for good:
// none moves before it has been Ready for a whole window since the flap,
// then all move back, never more than --failback-max-concurrent at once,
// each copy in member1 available before the copy in member2 is deleted,
// each carrying the state its policy's statePreservation rule captured
// from the copy in member2. It stops a member, so it runs on its own
// environment.
func TestFailback(t *testing.T) {
	t.Parallel()
	periods := shortPeriods
	periods.args = append(append([]string(nil), shortPeriods.args...),
		// A rate high enough that the cap, not the rate, holds them back.
		fmt.Sprintf("--failback-max-concurrent=%d", failbackMax), "--failback-rate=100", "--graceful-eviction-hold=5s",
		// The flap below gets member1 the flapping taint; a hold shorter
		// than the window leaves the window to decide.
		"--cluster-flap-hold=5s")
	e := startCFEnv(t, periods)
	t.Cleanup(func() {
		if problems := controllerLogTripwires(e.state, 0); len(problems) > 0 {
			t.Errorf("the private controller manager logged problems no test may cause:\n%s", strings.Join(problems, "\n"))
		}
	})
	ns := e.namespace(t, "failback")
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("fb-%02d", i+1)
		e.apply(t, ns, cfDeployment(names[i], 2, "group", "failback"))
	}
	e.apply(t, ns, fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: failback
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {group: failback}}}
  placement:
    clusterAffinities:
      - affinityName: primary
        clusterNames: [member1]
      - affinityName: backup
        clusterNames: [member2]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
  failover:
    cluster:
      statePreservation:
        rules:
          - aliasLabelName: %s
            jsonPath: "{ .readyReplicas }"
    failback:
      stabilizationSeconds: %d
`, failbackStateLabel, int(failbackWindow.Seconds())))
	for _, n := range names {
		if on := e.waitPlaced(t, ns, n, 2, ""); on != "member1" {
			t.Fatalf("%s placed on %s, want member1", n, on)
		}
	}

	// 1. member1 crashes: everything fails over to member2.
	e.kill(t, "member1")
	for _, n := range names {
		if on := e.waitPlaced(t, ns, n, 2, "member1"); on != "member2" {
			t.Fatalf("%s failed over to %s, want member2", n, on)
		}
		e.waitHistory(t, ns, n, "member1", workv1alpha2.EvictionReasonTaintUntolerated)
	}

	// 2. member1 returns and fails again at once, well within the window:
	// the window starts over when it is back for good.
	e.start(t, "member1")
	firstReady := e.readySince(t, "member1")
	e.kill(t, "member1")
	e.waitReady(t, "member1", metav1.ConditionFalse)
	e.start(t, "member1")
	if again := e.readySince(t, "member1"); !again.After(firstReady) {
		t.Fatalf("member1's Ready transition %s is not after the first return at %s", again, firstReady)
	}
	t.Logf("member1 Ready at %s, failed, Ready again at %s", firstReady.Format(time.RFC3339), e.readySince(t, "member1").Format(time.RFC3339))
	// Its stale copies go; then nothing may move back before member1 has
	// been Ready for the window since the flap.
	for _, n := range names {
		e.waitGoneFrom(t, ns, n, "member1")
	}
	watches := map[string]*deploymentWatch{}
	for _, n := range names {
		watches[n] = e.watchDeployments(t, ns, n, "member1", "member2")
	}

	// 3. Watch everything move back, counting the open failbacks.
	var readySince time.Time
	maxOpen := 0
	eventually(t, 5*time.Minute, "every Deployment back on member1", func(ctx context.Context) (bool, string, error) {
		var c clusterv1alpha1.Cluster
		if err := e.cp.Get(ctx, types.NamespacedName{Name: "member1"}, &c); err != nil {
			return false, "", err
		}
		if ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); ready != nil && ready.LastTransitionTime.After(readySince) {
			readySince = ready.LastTransitionTime.Time
		}
		var list workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		open, back := 0, 0
		var seen []string
		for _, rb := range list.Items {
			name := strings.TrimSuffix(rb.Name, "-deployment")
			failbackOpen := false
			for _, task := range rb.Spec.GracefulEvictionTasks {
				if task.Reason == workv1alpha2.EvictionReasonFailback {
					failbackOpen = true
				}
			}
			if failbackOpen {
				open++
			}
			cs := scheduledClusters(&rb)
			if len(cs) == 1 && cs[0] == "member1" {
				if !failbackOpen {
					back++
				}
			}
			seen = append(seen, fmt.Sprintf("%s on %v (tasks %s)", name, cs, cfTasks(&rb)))
		}
		maxOpen = max(maxOpen, open)
		return back == len(names), fmt.Sprintf("%d open; %s", open, strings.Join(seen, "; ")), nil
	})

	if maxOpen > failbackMax {
		t.Errorf("%d failbacks open at once, want at most %d", maxOpen, failbackMax)
	}
	t.Logf("at most %d failbacks open at once", maxOpen)
	for _, n := range names {
		e.waitGoneFrom(t, ns, n, "member2")
		w := watches[n]
		inOrder, ok, detail := w.availableThenGone("member1", "member2")
		switch {
		case !ok:
			t.Errorf("%s: watch events incomplete (%s): %s", n, detail, w)
		case !inOrder:
			t.Errorf("%s: the copy in member2 went before the copy in member1 was available: %s: %s", n, detail, w)
		case strings.Contains(detail, receivedOutOfOrder):
			t.Logf("%s: %s", n, detail)
		}
		entry := e.waitHistory(t, ns, n, "member2", workv1alpha2.EvictionReasonFailback)
		if strings.Join(entry.ClustersAfter, ",") != "member1" {
			t.Errorf("%s: failback history entry %+v", n, entry)
		}
		// The state of the copy in member2 (two ready replicas) is in the
		// history and in the copy moved back.
		if got := entry.PreservedLabelState[failbackStateLabel]; got != "2" {
			t.Errorf("%s: failback history preservedLabelState %v, want %s=2", n, entry.PreservedLabelState, failbackStateLabel)
		}
		d, err := e.memberDeployment(context.Background(), "member1", ns, n)
		switch {
		case err != nil:
			t.Error(err)
		case d == nil:
			t.Errorf("%s: no copy in member1", n)
		case d.Labels[failbackStateLabel] != "2":
			t.Errorf("%s: the copy moved back to member1 has labels %v, want %s=2 from the copy in member2", n, d.Labels, failbackStateLabel)
		}
		// The entry's time is when the scheduler moved it back; times are
		// whole seconds.
		if moved := entry.Time.Time; moved.Before(readySince.Add(failbackWindow - time.Second)) {
			t.Errorf("%s moved back at %s, %s after member1 became Ready (%s): before the window of %s",
				n, moved.Format(time.RFC3339), moved.Sub(readySince), readySince.Format(time.RFC3339), failbackWindow)
		}
	}
}

// TestFailbackAbandoned attacks the way back: the copy moved back to
// member1 never becomes available (its image cannot be pulled there), so
// the failback is given up when the grace period passes. The copy in
// member2 must never be deleted, the workload must stay on member2, the
// history and an Event must say so, and member1 is not tried again within
// the window.
func TestFailbackAbandoned(t *testing.T) {
	t.Parallel()
	const grace = 30 * time.Second
	const window = 15 * time.Second
	periods := shortPeriods
	periods.args = append(append([]string(nil), shortPeriods.args...),
		fmt.Sprintf("--graceful-eviction-timeout=%s", grace), "--graceful-eviction-hold=5s")
	e := startCFEnv(t, periods)
	t.Cleanup(func() {
		if problems := controllerLogTripwires(e.state, 0); len(problems) > 0 {
			t.Errorf("the private controller manager logged problems no test may cause:\n%s", strings.Join(problems, "\n"))
		}
	})
	ns := e.namespace(t, "failback-abandoned")
	e.apply(t, ns, cfDeployment("stuck", 2))
	e.apply(t, ns, fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: stuck
spec:
  resourceSelectors:
    - %s
  placement:
    clusterAffinities:
      - affinityName: primary
        clusterNames: [member1]
      - affinityName: backup
        clusterNames: [member2]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
  failover:
    cluster: {}
    failback:
      stabilizationSeconds: %d
`, byName("stuck"), int(window.Seconds())))
	if on := e.waitPlaced(t, ns, "stuck", 2, ""); on != "member1" {
		t.Fatalf("stuck placed on %s, want member1", on)
	}
	e.kill(t, "member1")
	if on := e.waitPlaced(t, ns, "stuck", 2, "member1"); on != "member2" {
		t.Fatalf("stuck failed over to %s, want member2", on)
	}
	// From now on a copy in member1 cannot become available.
	e.apply(t, ns, fakeRegistry("stuck", []string{"member1"}, ""))
	e.start(t, "member1")
	e.waitGoneFrom(t, ns, "stuck", "member1")
	w := e.watchDeployments(t, ns, "stuck", "member2")

	e.waitHistory(t, ns, "stuck", "member2", workv1alpha2.EvictionReasonFailback)
	abandoned := e.waitHistoryWithin(t, ns, "stuck", "member1", workv1alpha2.EvictionReasonFailbackAbandoned, cfTimeout+grace)
	if strings.Join(abandoned.ClustersAfter, ",") != "member2" {
		t.Errorf("FailbackAbandoned entry: %+v", abandoned)
	}
	e.waitGoneFrom(t, ns, "stuck", "member1")
	ctx := context.Background()
	rb, err := e.binding(ctx, ns, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if cs := scheduledClusters(rb); strings.Join(cs, ",") != "member2" || len(rb.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("after the abandonment: scheduled to %v, tasks %s; want member2, none", cs, cfTasks(rb))
	}
	if d, err := e.memberDeployment(ctx, "member2", ns, "stuck"); err != nil || !deploymentReady(d, 2) || d.DeletionTimestamp != nil {
		t.Errorf("the copy in member2 after the abandonment: %v %s", err, summarizeDeployments(map[string]*appsv1.Deployment{"member2": d}))
	}
	if gone, ok := w.goneAt("member2"); ok {
		t.Errorf("the copy in member2 was deleted at %s: %s", gone.Format(time.RFC3339Nano), w)
	}
	e.waitEvent(t, ns, "reason=FailbackAbandoned", "")
	// Not again within the window: no new failback before it ends.
	until := abandoned.Time.Add(window - 2*time.Second)
	for time.Now().Before(until) {
		rb, err := e.binding(ctx, ns, "stuck")
		if err != nil {
			t.Fatal(err)
		}
		if cs := scheduledClusters(rb); strings.Join(cs, ",") != "member2" || len(rb.Spec.GracefulEvictionTasks) != 0 {
			t.Fatalf("%s after the abandonment: scheduled to %v, tasks %s", time.Since(abandoned.Time.Time).Round(time.Second), cs, cfTasks(rb))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitHistoryWithin is waitHistory with its own timeout.
func (e *cfEnv) waitHistoryWithin(t *testing.T, ns, name, from, reason string, timeout time.Duration) workv1alpha2.FailoverHistoryItem {
	t.Helper()
	var entry workv1alpha2.FailoverHistoryItem
	cfEventually(t, timeout, describe("failover history of %s: %s from %s", name, reason, from), func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == from && h.Reason == reason {
				entry = h
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("history %+v; clusters %v; tasks %s", rb.Status.FailoverHistory, scheduledClusters(rb), cfTasks(rb)), nil
	})
	return entry
}
