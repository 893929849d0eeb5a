//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// TestClusterFailover proves cluster failover end to end: a member's API
// server stops, its Cluster turns Ready=False, the default
// ClusterTaintPolicy taints it cluster.karmada.io/not-ready:NoExecute, and
// the taint manager moves what does not tolerate the taint. It stops
// members, so it runs on its own three-member environment (health probed
// every second, 3 s to Ready=False, 2 s back to Ready=True); the scenarios
// run one after the other and each starts with every member Ready.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	e := startCFEnv(t, shortPeriods)
	begin := time.Now()
	t.Cleanup(func() {
		// The suite's tripwire only reads the shared environment's log.
		if problems := controllerLogTripwires(e.state, 0); len(problems) > 0 {
			t.Errorf("the private controller manager logged problems no test may cause:\n%s", strings.Join(problems, "\n"))
		}
		if errs := e.controllerErrors(); len(errs) > 0 {
			t.Logf("the private controller manager logged %d error line(s), e.g.:\n%s", len(errs), strings.Join(errs[:min(len(errs), 10)], "\n"))
		}
		t.Logf("TestClusterFailover scenarios took %s", time.Since(begin).Round(time.Second))
	})

	e.scenario(t, "custom ClusterTaintPolicy and manual taints", customTaintPolicy)
	e.scenario(t, "untolerated taint moves the seed workload and recovery deletes the stale copy", untoleratedAndRecovery)
	e.scenario(t, "tolerationSeconds delays the eviction and no tolerationSeconds keeps the workload", tolerations)
	e.scenario(t, "Directly does not wait forever for an unreachable cluster", directly)
	e.scenario(t, "a short outage of the only allowed cluster is undone, not wedged", shortOutage)
	e.scenario(t, "Divided moves only the failed member replicas", divided)
	e.scenario(t, "all members killed at once: nothing is evicted while they are down or after they return", allMembersDown)
	e.scenario(t, "members killed a few seconds apart: nothing is evicted", staggeredMembersDown)
	e.scenario(t, "a single killed member fails over within the documented bound", singleFailureBound)
	e.scenario(t, "a NoExecute taint patched without timeAdded is stamped and evicts after tolerationSeconds", patchedTaint)
	e.scenario(t, "a flapping member stops receiving a Duplicated copy", flapping)
	e.scenario(t, "mass failover of 200 Deployments", massFailover)
	e.scenario(t, "simulate predicts one member's failover", simulateOneMember)
	e.scenario(t, "simulate predicts two members failing together", simulateTwoMembers)
	e.scenario(t, "simulate predicts the storm guard's halt when every member fails", simulateAllMembers)
}

// TestPartitionedMember runs the partition scenario on an environment whose
// members sit behind the environment's proxies (up --partitionable).
func TestPartitionedMember(t *testing.T) {
	t.Parallel()
	e := startCFEnv(t, shortPeriods, "--partitionable")
	e.scenario(t, "a partitioned member: the workload moves while the old copy runs on, and goes after heal", partitionedMember)
}

// TestClusterFailoverDefaultPeriods runs the storm guard's promises with
// the controller manager's default health periods (probes every 10 s, 30 s
// to Ready=False, 30 s back), on its own environment: the settling window
// derives from them, and what holds with one-second periods must hold with
// the periods users run.
func TestClusterFailoverDefaultPeriods(t *testing.T) {
	t.Parallel()
	e := startCFEnv(t, defaultPeriods)
	e.scenario(t, "all members killed at once: nothing is evicted while they are down or after they return", allMembersDown)
	e.scenario(t, "members killed a few seconds apart: nothing is evicted", staggeredMembersDown)
	e.scenario(t, "a single killed member fails over within the documented bound", singleFailureBound)
}

// The seeds' nginx policy (one member, no
// tolerations) leaves a stopped member and does not come back; the stale
// copy is deleted when the member returns.
func untoleratedAndRecovery(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "cf-seed")
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "apply", "-f", filepath.Join("testdata", "seeds", "000-nginx.yaml"))
	from := e.waitPlaced(t, ns, "nginx", 2, "")

	e.stop(t, from)
	e.waitReady(t, from, metav1.ConditionFalse)
	taint := e.waitTaint(t, from, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	to := e.waitPlaced(t, ns, "nginx", 2, from)
	entry := e.waitHistory(t, ns, "nginx", from, workv1alpha2.EvictionReasonTaintUntolerated)
	if entry.Producer != workv1alpha2.EvictionProducerTaintManager {
		t.Errorf("history producer = %q, want %q", entry.Producer, workv1alpha2.EvictionProducerTaintManager)
	}
	t.Logf("nginx moved %s -> %s; taint added %s, evicted %s", from, to, taint.TimeAdded.UTC().Format(time.RFC3339), entry.Time.UTC().Format(time.RFC3339))

	// Recovery: taints removed, the stale copy deleted, no move back.
	e.start(t, from)
	e.waitGoneFrom(t, ns, "nginx", from)
	stays(t, time.Now().Add(5*time.Second), "nginx stays on "+to+" after "+from+" returned", func(ctx context.Context) (bool, string, error) {
		ok, seen, err := e.staysOn(ns, "nginx", to)(ctx)
		if err != nil || !ok {
			return ok, seen, err
		}
		d, err := e.memberDeployment(ctx, to, ns, "nginx")
		return err == nil && deploymentReady(d, 2), fmt.Sprintf("Deployment in %s: %v", to, err), err
	})
	if d, err := e.memberDeployment(ctx, from, ns, "nginx"); err != nil || d != nil {
		t.Errorf("nginx came back to %s: %v %v", from, d != nil, err)
	}
}

// partitionedMember: the control plane loses its path to a member that
// keeps running (env partition). The member turns not Ready, its workload
// moves; the old copy runs on in the member all along, as it would behind
// a real partition, untouched by anything Lifeboat does (it cannot reach
// it). After heal, the stale copy is deleted and the workload stays where
// it moved.
func partitionedMember(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "cf-part")
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "apply", "-f", filepath.Join("testdata", "seeds", "000-nginx.yaml"))
	from := e.waitPlaced(t, ns, "nginx", 2, "")
	old, err := e.memberDeployment(ctx, from, ns, "nginx")
	if err != nil || old == nil {
		t.Fatalf("nginx in %s: %v", from, err)
	}

	// A Directly workload on the same member that tolerates the taint
	// for 5 s: it is evicted after the toleration, but a Push cluster
	// cannot be fenced, so its new copy waits for the old one's deletion,
	// which only the heal allows.
	e.apply(t, ns, cfDeployment("single", 1)+"---"+cfPinnedPolicy("single", byName("single"), from, `    clusterTolerations:
      - key: `+clusterv1alpha1.TaintClusterNotReady+`
        operator: Exists
        effect: NoExecute
        tolerationSeconds: 5`, `  failover:
    cluster:
      purgeMode: Directly`))
	if got := e.waitPlaced(t, ns, "single", 1, ""); got != from {
		t.Fatalf("single placed on %s, want %s", got, from)
	}
	e.waitFencingCondition(t, ns, "single", metav1.ConditionFalse, "PushClustersNotFenced")
	single := watchDeploymentsIn(t, e.members, ns, "single")
	added := func(ev deploymentEvent) bool { return ev.typ == watch.Added }

	e.partition(t, from)
	cfEventually(t, cfTimeout, describe("Cluster %s not Ready behind the partition", from), func(ctx context.Context) (bool, string, error) {
		c, err := e.cluster(ctx, from)
		if err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		if ready == nil {
			return false, "no Ready condition", nil
		}
		return ready.Status != metav1.ConditionTrue, fmt.Sprintf("Ready=%s (%s)", ready.Status, ready.Message), nil
	})
	e.waitTaint(t, from, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	to := e.waitPlaced(t, ns, "nginx", 2, from)
	entry := e.waitHistory(t, ns, "nginx", from, workv1alpha2.EvictionReasonTaintUntolerated)

	// Behind the partition the old copy runs on: the same object, never
	// touched since the partition began.
	d, err := e.memberDeployment(ctx, from, ns, "nginx")
	if err != nil || d == nil || d.UID != old.UID || d.DeletionTimestamp != nil || !deploymentReady(d, 2) {
		t.Fatalf("the copy in %s behind the partition: %+v %v; want the same Deployment, running", from, d, err)
	}
	if s, err := localenv.Load(e.dir); err != nil || !s.Partitioned(from) {
		t.Fatalf("the partition of %s ended before the check (%v)", from, err)
	}
	t.Logf("behind the partition nginx moved %s -> %s at %s; the old copy still runs there", from, to, entry.Time.UTC().Format(time.RFC3339))

	// The Directly workload was evicted after its toleration, and waits:
	// no copy anywhere else while the old one may run.
	e.waitHistory(t, ns, "single", from, workv1alpha2.EvictionReasonTaintUntolerated)
	for _, m := range cfMembers {
		if _, ok := single.first(m, added); ok && m != from {
			t.Errorf("single was created in %s behind the partition, while its old copy in %s may still run", m, from)
		}
	}

	e.heal(t, from)
	e.waitGoneFrom(t, ns, "nginx", from)
	stays(t, time.Now().Add(3*time.Second), "nginx stays on "+to+" after the partition healed", func(ctx context.Context) (bool, string, error) {
		return e.staysOn(ns, "nginx", to)(ctx)
	})
	// After heal: the old copy is deleted first, then the new one created.
	singleTo := e.waitPlaced(t, ns, "single", 1, from)
	gone, ok1 := single.first(from, func(ev deploymentEvent) bool { return ev.typ == watch.Deleted })
	created, ok2 := single.first(singleTo, added)
	if !ok1 || !ok2 || !gone.at.Before(created.at) {
		t.Errorf("single: old copy in %s deleted (%t) at %v, new copy in %s created (%t) at %v; want the deletion first\n%s", from, ok1, gone.at, singleTo, ok2, created.at, single)
	}
}

// clusterTolerations with tolerationSeconds (10 s here; the guides' example
// says 30) delay the eviction to timeAdded + 10 s; without tolerationSeconds
// the workload stays.
func tolerations(t *testing.T, e *cfEnv) {
	const member, seconds = "member2", 10
	ns := e.namespace(t, "cf-tol")
	tolerate := func(extra string) string {
		return `    clusterTolerations:
      - key: ` + clusterv1alpha1.TaintClusterNotReady + `
        operator: Exists
        effect: NoExecute` + extra
	}
	e.apply(t, ns, cfDeployment("timed", 1)+"---"+cfPinnedPolicy("timed", byName("timed"), member, tolerate(fmt.Sprintf("\n        tolerationSeconds: %d", seconds)), ""))
	e.apply(t, ns, cfDeployment("forever", 1)+"---"+cfPinnedPolicy("forever", byName("forever"), member, tolerate(""), ""))
	e.waitPlaced(t, ns, "timed", 1, "")
	if got := e.waitPlaced(t, ns, "forever", 1, ""); got != member {
		t.Fatalf("forever placed on %s, want %s", got, member)
	}

	// A crash: the member's API server is killed, not stopped.
	e.crash(t, member)
	taint := e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	added := taint.TimeAdded.Time
	// The untimed toleration holds for a bounded window well past the timed one.
	stays(t, added.Add((seconds+5)*time.Second), "forever stays on "+member, e.staysOn(ns, "forever", member))

	entry := e.waitHistory(t, ns, "timed", member, workv1alpha2.EvictionReasonTaintUntolerated)
	if entry.Time.Time.Before(added.Add(seconds * time.Second)) {
		t.Errorf("timed evicted at %s, before timeAdded %s + %ds", entry.Time.UTC().Format(time.RFC3339), added.UTC().Format(time.RFC3339), seconds)
	}
	t.Logf("taint added %s; toleration %ds; eviction task created %s (%s after the taint)",
		added.UTC().Format(time.RFC3339), seconds, entry.Time.UTC().Format(time.RFC3339), entry.Time.Sub(added))
	e.waitPlaced(t, ns, "timed", 1, member)
}

// With purgeMode Directly the new copy waits for the old one
// to be deleted, but not forever when the old cluster is unreachable: the
// graceful-eviction controller closes the task at creationTimestamp + the
// grace period (the task's gracePeriodSeconds, 10 minutes by default). The
// test shortens this task's bound to 5 s, as a user can. The old copy is
// deleted when the member returns.
func directly(t *testing.T, e *cfEnv) {
	const member, grace = "member1", 5
	ctx := context.Background()
	ns := e.namespace(t, "cf-directly")
	e.apply(t, ns, cfDeployment("directly", 2)+"---"+cfPinnedPolicy("directly", byName("directly"), member, "", `  failover:
    cluster:
      purgeMode: Directly`))
	e.waitPlaced(t, ns, "directly", 2, "")

	e.stop(t, member)
	var task workv1alpha2.GracefulEvictionTask
	var index int
	cfEventually(t, cfTimeout, "Directly eviction task from "+member, func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "directly")
		if err != nil {
			return false, "", err
		}
		for i, tk := range rb.Spec.GracefulEvictionTasks {
			if tk.FromCluster == member && tk.CreationTimestamp != nil {
				task, index = tk, i
				return len(rb.Spec.Clusters) == 1, fmt.Sprintf("clusters %v", scheduledClusters(rb)), nil
			}
		}
		return false, fmt.Sprintf("clusters %v; tasks %s", scheduledClusters(rb), cfTasks(rb)), nil
	})
	if task.PurgeMode != "Directly" || task.Reason != workv1alpha2.EvictionReasonTaintUntolerated {
		t.Fatalf("task %+v", task)
	}
	// The barrier: while the task is open, no new copy exists.
	for _, m := range cfMembers {
		if m == member {
			continue
		}
		if d, err := e.memberDeployment(ctx, m, ns, "directly"); err != nil || d != nil {
			t.Fatalf("a new copy exists in %s while the Directly task is open (err %v)", m, err)
		}
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/gracefulEvictionTasks/%[1]d/fromCluster","value":%[2]q},`+
		`{"op":"add","path":"/spec/gracefulEvictionTasks/%[1]d/gracePeriodSeconds","value":%[3]d}]`, index, member, grace)
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "directly-deployment"}}
	if err := e.cp.Patch(ctx, rb, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
		t.Fatalf("shortening the task's grace period: %v", err)
	}

	deadline := task.CreationTimestamp.Add(grace * time.Second)
	to := e.waitPlaced(t, ns, "directly", 2, member)
	healthyAt := time.Now()
	d, err := e.memberDeployment(ctx, to, ns, "directly")
	if err != nil || d == nil {
		t.Fatalf("new copy in %s: %v", to, err)
	}
	if d.CreationTimestamp.Time.Before(deadline) {
		t.Errorf("the new copy was created at %s, before the task's deadline %s", d.CreationTimestamp.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339))
	}
	if bound := deadline.Add(30 * time.Second); healthyAt.After(bound) {
		t.Errorf("the new copy was healthy at %s, later than the deadline + 30s (%s)", healthyAt.UTC().Format(time.RFC3339), bound.UTC().Format(time.RFC3339))
	}
	t.Logf("task created %s, deadline %s, new copy in %s created %s, healthy %s after the task",
		task.CreationTimestamp.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339), to,
		d.CreationTimestamp.UTC().Format(time.RFC3339), healthyAt.Sub(task.CreationTimestamp.Time).Round(time.Second))

	e.start(t, member)
	e.waitGoneFrom(t, ns, "directly", member)
}

// A Divided workload over two members loses
// one; the replicas of the failed member move, the survivor keeps its own.
func divided(t *testing.T, e *cfEnv) {
	const failed, survivor, replicas = "member1", "member2", 4
	ns := e.namespace(t, "cf-divided")
	e.apply(t, ns, cfDeployment("divided", replicas)+`---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: divided
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: divided}
  placement:
    clusterAffinity:
      clusterNames: [`+failed+`, `+survivor+`]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
`)
	before := map[string]int32{}
	cfEventually(t, cfTimeout, "divided spread over both members and ready", func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "divided")
		if err != nil {
			return false, "", err
		}
		before = map[string]int32{}
		for _, c := range rb.Spec.Clusters {
			before[c.Name] = c.Replicas
			d, err := e.memberDeployment(ctx, c.Name, ns, "divided")
			if err != nil || !deploymentReady(d, c.Replicas) {
				return false, fmt.Sprintf("%v not ready in %s (%v)", rb.Spec.Clusters, c.Name, err), err
			}
		}
		return before[failed] > 0 && before[survivor] > 0, fmt.Sprintf("%v", rb.Spec.Clusters), nil
	})

	e.stop(t, failed)
	e.waitTaint(t, failed, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	cfEventually(t, cfTimeout, "divided's replicas moved off "+failed, func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "divided")
		if err != nil {
			return false, "", err
		}
		var total int32
		after := map[string]int32{}
		for _, c := range rb.Spec.Clusters {
			after[c.Name] = c.Replicas
			total += c.Replicas
		}
		seen := fmt.Sprintf("before %v, now %v, tasks %s", before, after, cfTasks(rb))
		if _, ok := after[failed]; ok || total != replicas {
			return false, seen, nil
		}
		if after[survivor] < before[survivor] {
			return false, "", fmt.Errorf("the survivor lost replicas: %s", seen)
		}
		d, err := e.memberDeployment(ctx, survivor, ns, "divided")
		if err != nil || !deploymentReady(d, after[survivor]) {
			return false, seen + "; not ready yet in " + survivor, err
		}
		return true, seen, nil
	})
	e.waitHistory(t, ns, "divided", failed, workv1alpha2.EvictionReasonTaintUntolerated)
}

// When every member fails at once the control plane is probably the one
// cut off: with the default ClusterTaintPolicy and no toleration, the storm
// guard evicts nothing, although the members turn Ready=False one after
// the other, says so, and still evicts nothing while they come back one
// after the other.
func allMembersDown(t *testing.T, e *cfEnv) {
	ctx := context.Background()
	ns := e.namespace(t, "cf-alldown")
	pinned := e.pinEach(t, ns, "alldown")

	for _, m := range cfMembers { // kill returns at once: the three die together
		e.kill(t, m)
	}
	var lastDown time.Time
	for _, m := range cfMembers {
		e.waitReady(t, m, metav1.ConditionFalse)
		if at := e.readySince(t, m); at.After(lastDown) {
			lastDown = at
		}
	}
	cfEventually(t, cfTimeout, "lifeboat status reports the storm guard halted", func(ctx context.Context) (bool, string, error) {
		out, _ := lifeboat(t, "status", "--state-dir", e.dir) // fails: API servers are stopped
		return strings.Contains(out, "Storm guard: HALTED"), out, nil
	})
	cfEventually(t, cfTimeout, "StormGuardAllClustersDown Event on the Clusters", func(ctx context.Context) (bool, string, error) {
		evs, err := e.clusterEvents(ctx, "StormGuardAllClustersDown")
		if err != nil {
			return false, "", err
		}
		return len(evs) > 0, summarizeEvents(evs), nil
	})
	// Every eviction was due when its member turned Ready=False, and would
	// follow the settling window at the latest; held past both.
	stays(t, lastDown.Add(e.periods.window()+5*time.Second), "nothing is evicted while every member is down", e.allStay(ns, pinned))
	if out, _ := lifeboat(t, "status", "--state-dir", e.dir); !strings.Contains(out, "Storm guard: HALTED") {
		t.Errorf("lifeboat status during the outage:\n%s", out)
	}
	evs, err := e.clusterEvents(ctx, "StormGuardAllClustersDown")
	if err == nil && len(evs) > 0 {
		t.Logf("storm guard Event: %s", evs[0].Message)
	}

	e.startTogether(t, cfMembers...)
	stays(t, time.Now().Add(e.periods.window()+5*time.Second), "nothing is evicted after the members returned", e.allStay(ns, pinned))
}

// Members killed a few seconds apart: the first is Ready=False while the
// last still runs (a guard deciding on Ready alone evicted its workload
// onto the last, about to fail); the settling window sees them all fail.
func staggeredMembersDown(t *testing.T, e *cfEnv) {
	ns := e.namespace(t, "cf-staggered")
	pinned := e.pinEach(t, ns, "staggered")

	start := time.Now()
	e.kill(t, "member1")
	e.probeFailing(t, "member1")
	e.kill(t, "member2")
	e.waitReady(t, "member1", metav1.ConditionFalse)
	e.kill(t, "member3")
	t.Logf("member3 killed %s after member1, once member1 was Ready=False", time.Since(start).Round(100*time.Millisecond))
	var lastDown time.Time
	for _, m := range cfMembers {
		e.waitReady(t, m, metav1.ConditionFalse)
		if at := e.readySince(t, m); at.After(lastDown) {
			lastDown = at
		}
	}
	stays(t, lastDown.Add(e.periods.window()+5*time.Second), "nothing is evicted from members that failed a few seconds apart", e.allStay(ns, pinned))
}

// A single member killed: its workload still fails over, no earlier than
// the settling window after its probes started failing and no later than
// the documented bound t0 + D + F + T + max(S, P) (D at its worst, P; no
// toleration; the first workload, within the burst).
func singleFailureBound(t *testing.T, e *cfEnv) {
	const member = "member3"
	ns := e.namespace(t, "cf-single")
	e.apply(t, ns, cfDeployment("single", 1)+"---"+cfPinnedPolicy("single", byName("single"), member, "", ""))
	if got := e.waitPlaced(t, ns, "single", 1, ""); got != member {
		t.Fatalf("single placed on %s, want %s", got, member)
	}

	e.kill(t, member)
	e.finishStop(t, member) // the API server is dead once the command returns
	t0 := time.Now()
	failing := e.probeFailing(t, member)
	entry := e.waitHistory(t, ns, "single", member, workv1alpha2.EvictionReasonTaintUntolerated)
	bound := t0.Add(e.periods.evictionBound())
	// Times in the API are whole seconds, cut down: one second of slack
	// on the lower bound only.
	earliest := failing.Add(e.periods.window() - time.Second)
	t.Logf("killed %s; probes failing since %s; evicted %s (%s after the kill); documented bound %s, settling window %s",
		t0.UTC().Format(time.RFC3339), failing.UTC().Format(time.RFC3339), entry.Time.UTC().Format(time.RFC3339),
		entry.Time.Sub(t0).Round(time.Second), e.periods.evictionBound(), e.periods.window())
	if entry.Time.After(bound) {
		t.Errorf("evicted at %s, after the documented bound %s (t0 %s + %s)", entry.Time.UTC().Format(time.RFC3339),
			bound.UTC().Format(time.RFC3339), t0.UTC().Format(time.RFC3339), e.periods.evictionBound())
	}
	if entry.Time.Time.Before(earliest) {
		t.Errorf("evicted at %s, before the settling window ended (probes failing since %s + %s)", entry.Time.UTC().Format(time.RFC3339),
			failing.UTC().Format(time.RFC3339), e.periods.window())
	}
	e.waitPlaced(t, ns, "single", 1, member)
}

// A NoExecute taint written without timeAdded (kubectl patch, a GitOps
// tool) is stamped by the control plane, and a placement tolerating it for
// N seconds leaves N seconds after the stamp: before, not at all; never, not
// at all.
func patchedTaint(t *testing.T, e *cfEnv) {
	const member, key, seconds = "member1", "lifeboat.test/patched", 8
	ns := e.namespace(t, "cf-patched")
	e.apply(t, ns, cfDeployment("patched", 1)+"---"+cfPinnedPolicy("patched", byName("patched"), member, `    clusterTolerations:
      - key: `+key+`
        operator: Exists
        effect: NoExecute
        tolerationSeconds: `+fmt.Sprint(seconds), ""))
	if got := e.waitPlaced(t, ns, "patched", 1, ""); got != member {
		t.Fatalf("patched placed on %s, want %s", got, member)
	}

	c, err := e.cluster(context.Background(), member)
	if err != nil {
		t.Fatal(err)
	}
	taints := append(c.Spec.Taints, corev1.Taint{Key: key, Value: "yes", Effect: corev1.TaintEffectNoExecute})
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "patch", "cluster", member, "--type=merge", "-p", string(patch))
	t.Cleanup(func() {
		cp := []string{"--control-plane-kubeconfig", e.kubeconfig, "--control-plane-context", localenv.ControlPlaneName}
		if out, err := lifeboat(t, append([]string{"taint", member, key + ":NoExecute-"}, cp...)...); err != nil {
			t.Errorf("removing the patched taint: %v\n%s", err, out)
		}
	})
	var stamped time.Time
	cfEventually(t, cfTimeout, "the patched taint is stamped with timeAdded", func(ctx context.Context) (bool, string, error) {
		c, err := e.cluster(ctx, member)
		if err != nil {
			return false, "", err
		}
		tt := findTaint(c, key, corev1.TaintEffectNoExecute)
		if tt == nil || tt.TimeAdded == nil {
			return false, fmt.Sprintf("taints %v", c.Spec.Taints), nil
		}
		stamped = tt.TimeAdded.Time
		return true, "", nil
	})
	stays(t, stamped.Add((seconds-1)*time.Second), "patched stays on "+member+" while the taint is tolerated", e.staysOn(ns, "patched", member))
	entry := e.waitHistory(t, ns, "patched", member, workv1alpha2.EvictionReasonTaintUntolerated)
	if entry.Time.Time.Before(stamped.Add(seconds * time.Second)) {
		t.Errorf("evicted at %s, before timeAdded %s + %ds", entry.Time.UTC().Format(time.RFC3339), stamped.UTC().Format(time.RFC3339), seconds)
	}
	t.Logf("taint patched without timeAdded, stamped %s; evicted %s", stamped.UTC().Format(time.RFC3339), entry.Time.UTC().Format(time.RFC3339))
	e.waitPlaced(t, ns, "patched", 1, member)
}

// A member failing again and again: a Duplicated workload's copy there is
// evicted on the first failures, then the member, damped, gets no new copy
// that a further failure would evict. Without damping every cycle evicts.
func flapping(t *testing.T, e *cfEnv) {
	const member, cycles = "member3", 4
	ns := e.namespace(t, "cf-flapping")
	e.apply(t, ns, cfDeployment("flappy", 1)+`---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: flappy
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: flappy}
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3]
    replicaScheduling:
      replicaSchedulingType: Duplicated
`)
	on := func(ctx context.Context) (bool, []string, error) {
		rb, err := e.binding(ctx, ns, "flappy")
		if err != nil {
			return false, nil, err
		}
		cs := scheduledClusters(rb)
		return slices.Contains(cs, member), cs, nil
	}
	cfEventually(t, cfTimeout, "flappy on every member", func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "flappy")
		if err != nil {
			return false, "", err
		}
		return len(scheduledClusters(rb)) == 3, fmt.Sprintf("%v", scheduledClusters(rb)), nil
	})
	for i := 1; i <= cycles; i++ {
		ctx := context.Background()
		wasOn, cs, err := on(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.kill(t, member)
		e.waitReady(t, member, metav1.ConditionFalse)
		if wasOn {
			cfEventually(t, cfTimeout, describe("cycle %d: the copy on %s evicted", i, member), func(ctx context.Context) (bool, string, error) {
				ok, cs, err := on(ctx)
				return !ok, fmt.Sprintf("scheduled to %v", cs), err
			})
		} else {
			stays(t, time.Now().Add(e.periods.window()+2*time.Second), describe("cycle %d: no copy on %s", i, member), func(ctx context.Context) (bool, string, error) {
				ok, cs, err := on(ctx)
				return !ok, fmt.Sprintf("scheduled to %v", cs), err
			})
		}
		e.start(t, member)
		c, err := e.cluster(ctx, member)
		if err != nil {
			t.Fatal(err)
		}
		damped := findTaint(c, clusterv1alpha1.TaintClusterFlapping, corev1.TaintEffectNoSchedule) != nil
		t.Logf("cycle %d: copy on %s before the failure: %t (scheduled to %v); damped after it: %t (%s)", i, member, wasOn, cs, damped,
			c.Annotations[clusterv1alpha1.AnnotationReadyFailures])
		if damped {
			stays(t, time.Now().Add(3*time.Second), describe("cycle %d: no new copy on the damped %s", i, member), func(ctx context.Context) (bool, string, error) {
				ok, cs, err := on(ctx)
				return !ok, fmt.Sprintf("scheduled to %v", cs), err
			})
			continue
		}
		// Undamped, the member gets its copy back: the next failure would
		// evict it again.
		cfEventually(t, cfTimeout, describe("cycle %d: the copy back on the undamped %s", i, member), func(ctx context.Context) (bool, string, error) {
			ok, cs, err := on(ctx)
			return ok, fmt.Sprintf("scheduled to %v", cs), err
		})
	}
	rb, err := e.binding(context.Background(), ns, "flappy")
	if err != nil {
		t.Fatal(err)
	}
	evictions := 0
	for _, h := range rb.Status.FailoverHistory {
		if h.FromCluster == member {
			evictions++
		}
	}
	t.Logf("%d failures of %s evicted flappy's copy there %d times", cycles, member, evictions)
	if evictions > 2 {
		t.Errorf("flappy's copy on %s was evicted %d times in %d failures, want at most 2", member, evictions, cycles)
	}
	ev := e.waitEvent(t, "", "involvedObject.kind=Cluster,reason=ClusterFlapping", "")
	t.Logf("flap damping Event: %s", ev.Message)
}

// A ClusterTaintPolicy on a custom condition (set by the test
// in the Cluster's status) adds and removes taints of both effects; a
// NoSchedule taint evicts nothing; a NoExecute one, from the policy or from
// `lifeboat taint`, evicts what does not tolerate it.
func customTaintPolicy(t *testing.T, e *cfEnv) {
	const member = "member3"
	ns := e.namespace(t, "cf-custom")
	policy := func(name, condition, key string, effect corev1.TaintEffect) string {
		return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: %s
spec:
  targetClusters:
    clusterNames: [%s]
  addOnConditions:
    - {conditionType: %s, operator: In, statusValues: ["True"]}
  removeOnConditions:
    - {conditionType: %s, operator: In, statusValues: ["False"]}
  taints:
    - {key: %s, effect: %s}
`, name, member, condition, condition, key, effect)
	}
	e.apply(t, "", policy("cf-maintenance", "TestMaintenance", "lifeboat.test/maintenance", corev1.TaintEffectNoSchedule)+"---"+
		policy("cf-broken", "TestBroken", "lifeboat.test/broken", corev1.TaintEffectNoExecute))
	t.Cleanup(func() {
		kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "delete", "clustertaintpolicies", "cf-maintenance", "cf-broken")
	})
	e.apply(t, ns, cfDeployment("first", 1)+"---"+cfPinnedPolicy("first", byName("first"), member, "", ""))
	e.waitPlaced(t, ns, "first", 1, "")

	// NoSchedule: added, evicts nothing, removed.
	e.setCondition(t, member, "TestMaintenance", metav1.ConditionTrue)
	e.waitTaint(t, member, "lifeboat.test/maintenance", corev1.TaintEffectNoSchedule, true)
	stays(t, time.Now().Add(5*time.Second), "first stays on "+member+" with a NoSchedule taint", e.staysOn(ns, "first", member))
	e.setCondition(t, member, "TestMaintenance", metav1.ConditionFalse)
	e.waitTaint(t, member, "lifeboat.test/maintenance", corev1.TaintEffectNoSchedule, false)

	// A manual NoExecute taint evicts.
	cp := []string{"--control-plane-kubeconfig", e.kubeconfig, "--control-plane-context", localenv.ControlPlaneName}
	if out, err := lifeboat(t, append([]string{"taint", member, "lifeboat.test/manual=yes:NoExecute"}, cp...)...); err != nil {
		t.Fatalf("lifeboat taint: %v\n%s", err, out)
	}
	e.waitHistory(t, ns, "first", member, workv1alpha2.EvictionReasonTaintUntolerated)
	e.waitPlaced(t, ns, "first", 1, member)
	if out, err := lifeboat(t, append([]string{"taint", member, "lifeboat.test/manual:NoExecute-"}, cp...)...); err != nil {
		t.Fatalf("lifeboat taint ...-: %v\n%s", err, out)
	}
	e.waitTaint(t, member, "lifeboat.test/manual", corev1.TaintEffectNoExecute, false)

	// NoExecute from the policy: added, evicts, removed.
	e.apply(t, ns, cfDeployment("second", 1)+"---"+cfPinnedPolicy("second", byName("second"), member, "", ""))
	if got := e.waitPlaced(t, ns, "second", 1, ""); got != member {
		t.Fatalf("second placed on %s, want %s", got, member)
	}
	e.setCondition(t, member, "TestBroken", metav1.ConditionTrue)
	e.waitTaint(t, member, "lifeboat.test/broken", corev1.TaintEffectNoExecute, true)
	e.waitHistory(t, ns, "second", member, workv1alpha2.EvictionReasonTaintUntolerated)
	e.waitPlaced(t, ns, "second", 1, member)
	e.setCondition(t, member, "TestBroken", metav1.ConditionFalse)
	e.waitTaint(t, member, "lifeboat.test/broken", corev1.TaintEffectNoExecute, false)
}

// 200 single-replica Deployments on one member that stops all
// run healthy elsewhere. The time from the taint to the last healthy
// replacement is logged, not asserted.
func massFailover(t *testing.T, e *cfEnv) {
	const member, n = "member2", 200
	ns := e.namespace(t, "cf-mass")
	var b strings.Builder
	b.WriteString(cfPinnedPolicy("mass", "{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {cf-mass: \"true\"}}}", member, "", ""))
	for i := 0; i < n; i++ {
		b.WriteString("---" + cfDeployment(fmt.Sprintf("mass-%03d", i), 1, "cf-mass", "true"))
	}
	e.apply(t, ns, b.String())

	// placedAll reports how many bindings are scheduled to one cluster
	// (not `not`) that reports them Healthy with their replica ready.
	placedAll := func(ctx context.Context, not string) (int, map[string]int, *workv1alpha2.ResourceBindingList, error) {
		var list workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return 0, nil, nil, err
		}
		ok, where := 0, map[string]int{}
		for i := range list.Items {
			rb := &list.Items[i]
			cs := scheduledClusters(rb)
			if len(cs) != 1 || cs[0] == not {
				continue
			}
			item := aggregatedItem(rb, cs[0])
			if item != nil && item.Health == workv1alpha2.ResourceHealthy && reflectedInt(item, "readyReplicas") == 1 {
				ok++
				where[cs[0]]++
			}
		}
		return ok, where, &list, nil
	}
	start := time.Now()
	cfEventually(t, 3*time.Minute, fmt.Sprintf("%d Deployments healthy on %s", n, member), func(ctx context.Context) (bool, string, error) {
		ok, where, list, err := placedAll(ctx, "")
		if err != nil {
			return false, "", err
		}
		return ok == n && where[member] == n, fmt.Sprintf("%d bindings, %d healthy: %v", len(list.Items), ok, where), nil
	})
	t.Logf("%d Deployments healthy on %s %s after apply", n, member, time.Since(start).Round(time.Second))

	// A crash: the member's API server is killed, not stopped. Events and
	// history entries carry whole seconds.
	crashed := time.Now().Truncate(time.Second)
	e.crash(t, member)
	taint := e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	cfEventually(t, 3*time.Minute, fmt.Sprintf("%d Deployments healthy off %s", n, member), func(ctx context.Context) (bool, string, error) {
		ok, where, list, err := placedAll(ctx, member)
		if err != nil {
			return false, "", err
		}
		return ok == n, fmt.Sprintf("%d bindings, %d healthy elsewhere: %v", len(list.Items), ok, where), nil
	})
	observed := time.Now()
	var list workv1alpha2.ResourceBindingList
	if err := e.cp.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var lastEvicted, lastHealthy time.Time
	for _, rb := range list.Items {
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster != member {
				continue
			}
			if h.Time.After(lastEvicted) {
				lastEvicted = h.Time.Time
			}
			if h.ReplacementHealthyTime != nil && h.ReplacementHealthyTime.After(lastHealthy) {
				lastHealthy = h.ReplacementHealthyTime.Time
			}
		}
	}
	added := taint.TimeAdded.Time
	summary, _ := json.Marshal(map[string]string{
		"taintAdded":                added.UTC().Format(time.RFC3339),
		"lastEviction":              lastEvicted.UTC().Format(time.RFC3339),
		"lastReplacementHealthy":    lastHealthy.UTC().Format(time.RFC3339),
		"taintToLastEviction":       lastEvicted.Sub(added).String(),
		"taintToLastHealthy":        lastHealthy.Sub(added).String(),
		"taintToObservedAllHealthy": observed.Sub(added).Round(time.Second).String(),
	})
	t.Logf("MASS FAILOVER of %d Deployments from %s: %s", n, member, summary)

	// Past the Events' burst (50 by default), the evictions' Events are
	// counted on the Cluster; every eviction since the crash (these 200,
	// and what earlier scenarios left on the member) is on its binding or
	// in a count, none lost in the recorder's queue.
	cfEventually(t, 5*time.Minute, fmt.Sprintf("the evictions from %s recorded on their bindings or counted on the Cluster", member), func(ctx context.Context) (bool, string, error) {
		var all workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &all); err != nil {
			return false, "", err
		}
		evicted := 0
		for _, rb := range all.Items {
			for _, h := range rb.Status.FailoverHistory {
				if h.FromCluster == member && !h.Time.Time.Before(crashed) {
					evicted++
				}
			}
		}
		onBindings, err := e.cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=ResourceBinding,reason=" + failover.EventReasonEvicted,
		})
		if err != nil {
			return false, "", err
		}
		recorded := 0
		for _, ev := range onBindings.Items {
			// An Event identical to an earlier one on the same binding (a
			// workload evicted from this member before, with the same
			// reason) is counted up by the recorder, not created again:
			// its last time says it happened since the crash.
			if strings.Contains(ev.Message, "from cluster "+member) && !ev.LastTimestamp.Time.Before(crashed) {
				recorded++
			}
		}
		counted, summaries, err := e.summarised(ctx, failover.EventReasonEvicted, member, crashed)
		if err != nil {
			return false, "", err
		}
		// More than the evictions would be one said twice: the wait fails
		// with what it saw.
		return evicted >= n && recorded+counted == evicted && summaries > 0 && recorded < evicted,
			fmt.Sprintf("%d evictions since the crash; %d Events on bindings, %d counted in %d summaries on %s", evicted, recorded, counted, summaries, member), nil
	})

	// The rollout said each template's policy once: on the template, or,
	// past the burst, counted on the PropagationPolicy.
	cfEventually(t, 2*time.Minute, "each template's ApplyPolicySucceed on it or counted on its policy", func(ctx context.Context) (bool, string, error) {
		onTemplates, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Deployment,reason=" + detector.ReasonApplyPolicySucceed,
		})
		if err != nil {
			return false, "", err
		}
		onPolicy, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=PropagationPolicy,involvedObject.name=mass,reason=" + detector.ReasonApplyPolicySucceed,
		})
		if err != nil {
			return false, "", err
		}
		counted := 0
		for _, ev := range onPolicy.Items {
			var more int
			if _, err := fmt.Sscanf(ev.Message, "%d more", &more); err == nil {
				counted += more
			}
		}
		recorded := len(onTemplates.Items)
		return recorded+counted == n && len(onPolicy.Items) > 0 && recorded < n,
			fmt.Sprintf("%d on templates, %d counted in %d summaries on the policy", recorded, counted, len(onPolicy.Items)), nil
	})

	// The member returns: every stale copy is deleted there.
	e.start(t, member)
	back := time.Now()
	cfEventually(t, 3*time.Minute, fmt.Sprintf("the %d stale copies deleted from %s", n, member), func(ctx context.Context) (bool, string, error) {
		list, err := e.members[member].AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items)), nil
	})
	t.Logf("stale copies deleted %s after %s was Ready again", time.Since(back).Round(time.Second), member)
}
