//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/simulate"
)

// The scenarios of `lifeboat simulate` run on TestClusterFailover's
// environment (they stop members): 30 workloads with mixed policies, a
// prediction, then the real failure, and every binding's real outcome
// must be the predicted one.

// simulateOneMember: member2 fails.
func simulateOneMember(t *testing.T, e *cfEnv) {
	predictThenFail(t, e, []string{"member2"})
}

// simulateTwoMembers: member2 and member3 fail together.
func simulateTwoMembers(t *testing.T, e *cfEnv) {
	predictThenFail(t, e, []string{"member2", "member3"})
}

// simulateAllMembers: every member fails; the storm guard halts.
func simulateAllMembers(t *testing.T, e *cfEnv) {
	r := predictThenFail(t, e, cfMembers)
	if r.Totals.Held == 0 || len(r.Totals.Guard) == 0 || r.Totals.Guard[0].Halts == "" {
		t.Errorf("the simulation of every member failing predicts no halt: totals %+v", r.Totals)
	}
}

// simVariant is one kind of workload of the simulation scenarios; X is
// member2, which fails in every scenario.
type simVariant struct {
	name     string
	replicas int
	// policy is the PropagationPolicy's spec below resourceSelectors
	// (indented by 2).
	policy string
}

// Each failover target is chosen by policy, not by free capacity: which
// of several equally preferred clusters has more room changes while the
// replicas of the other workloads move, and a simulation reads capacity
// once (docs/simulate.md, "What it does not predict"). So a backup group
// names one cluster, and clusterAffinities give the order.
var simVariants = []simVariant{
	{"pinned", 1, `
  placement:
    clusterAffinity: {clusterNames: [member2]}`},
	{"dup", 1, `
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}`},
	{"affinity", 1, `
  placement:
    clusterAffinities:
      - {affinityName: primary, clusterNames: [member2]}
      - {affinityName: backup, clusterNames: [member1]}
      - {affinityName: last, clusterNames: [member3]}
    spreadConstraints:
      - {spreadByField: cluster, maxGroups: 1, minGroups: 1}`},
	{"weighted", 3, `
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [member1]}, weight: 1}
          - {targetCluster: {clusterNames: [member2]}, weight: 2}`},
	{"even", 3, `
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [member1, member2, member3]}, weight: 1}`},
	{"tol15", 1, `
  placement:
    clusterAffinities:
      - {affinityName: primary, clusterNames: [member2]}
      - {affinityName: backup, clusterNames: [member1]}
      - {affinityName: last, clusterNames: [member3]}
    spreadConstraints:
      - {spreadByField: cluster, maxGroups: 1, minGroups: 1}
    clusterTolerations:
      - {key: cluster.karmada.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 15}`},
	{"tolforever", 1, `
  placement:
    clusterAffinities:
      - {affinityName: primary, clusterNames: [member2]}
      - {affinityName: backup, clusterNames: [member1, member3]}
    clusterTolerations:
      - {key: cluster.karmada.io/not-ready, operator: Exists, effect: NoExecute}`},
	{"directly", 1, `
  placement:
    clusterAffinities:
      - {affinityName: primary, clusterNames: [member2]}
      - {affinityName: backup, clusterNames: [member3]}
      - {affinityName: last, clusterNames: [member1]}
    spreadConstraints:
      - {spreadByField: cluster, maxGroups: 1, minGroups: 1}
  failover:
    cluster: {purgeMode: Directly}`},
	{"stateful", 1, `
  placement:
    clusterAffinity: {clusterNames: [member2, member3]}
    spreadConstraints:
      - {spreadByField: cluster, maxGroups: 1, minGroups: 1}
  failover:
    cluster:
      purgeMode: Gracefully
      statePreservation:
        rules:
          - {aliasLabelName: lifeboat.test/replicas, jsonPath: "{ .replicas }"}`},
	{"elsewhere", 1, `
  placement:
    clusterAffinity: {clusterNames: [member1]}`},
}

// predictThenFail creates 30 workloads (three of each variant) in a new
// namespace, runs `lifeboat simulate --fail-cluster` for failed, kills
// those members together, and checks each binding's real outcome against
// the prediction: its placement, whether it was evicted and with which
// purge mode, not before the predicted earliest time, and for the
// bindings that stay, tolerate or are held, that nothing moves.
func predictThenFail(t *testing.T, e *cfEnv, failed []string) *simulate.Report {
	ns := e.namespace(t, "simulate")
	t.Cleanup(func() {
		kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "delete", "namespace", ns, "--wait=false")
	})
	var b strings.Builder
	for i := 0; i < 3; i++ {
		for _, v := range simVariants {
			name := fmt.Sprintf("%s-%d", v.name, i)
			fmt.Fprintf(&b, "---%s---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: %s\nspec:\n  resourceSelectors:\n    - %s%s\n",
				cfDeployment(name, v.replicas), name, byName(name), v.policy)
		}
	}
	e.apply(t, ns, b.String())
	cfEventually(t, cfTimeout, "the 30 workloads scheduled and Healthy", func(ctx context.Context) (bool, string, error) {
		var list workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		scheduled := 0
		for i := range list.Items {
			rb := &list.Items[i]
			cond := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
			if len(rb.Spec.Clusters) > 0 && cond != nil && cond.Status == metav1.ConditionTrue && rb.Status.SchedulerObservedGeneration == rb.Generation && allHealthy(rb) {
				scheduled++
			}
		}
		return scheduled == 3*len(simVariants), fmt.Sprintf("%d of %d bindings scheduled and Healthy", scheduled, len(list.Items)), nil
	})

	args := []string{"simulate", "-o", "json", "--kubeconfig", e.kubeconfig, "--context", localenv.ControlPlaneName}
	for _, m := range failed {
		args = append(args, "--fail-cluster", m)
	}
	out := e.run(t, args...)
	var report simulate.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("decoding the simulation: %v\n%s", err, out)
	}
	predicted := map[string]simulate.Outcome{}
	for _, o := range report.Outcomes {
		if o.Namespace == ns {
			predicted[o.Name] = o
		}
	}
	t.Logf("prediction for %v: %s", failed, summarizePrediction(predicted))
	// Every binding on a failed member has its prediction.
	var onFailed workv1alpha2.ResourceBindingList
	if err := e.cp.List(context.Background(), &onFailed, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, rb := range onFailed.Items {
		for _, c := range rb.Spec.Clusters {
			if _, ok := predicted[rb.Name]; !ok && slices.Contains(failed, c.Name) {
				t.Fatalf("no prediction for %s, which runs on %s", rb.Name, c.Name)
			}
		}
	}

	failedAt := time.Now()
	for _, m := range failed {
		e.kill(t, m)
	}

	// Every binding predicted to move reaches its predicted placement.
	var latest float64
	for _, o := range predicted {
		for _, ev := range o.Evictions {
			if ev.At != nil {
				latest = max(latest, ev.At.Max)
			}
		}
	}
	cfEventually(t, cfTimeout+time.Duration(latest)*time.Second, "every binding at its predicted placement", func(ctx context.Context) (bool, string, error) {
		// One list per poll: a GET per binding would queue on the
		// client's rate limiter.
		var list workv1alpha2.ResourceBindingList
		if err := e.cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		byName := map[string]*workv1alpha2.ResourceBinding{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		var pending []string
		for name, o := range predicted {
			rb := byName[name]
			if rb == nil {
				pending = append(pending, name+": no binding")
				continue
			}
			if want, got := targetsOf(o.After), targetsOf(rb.Spec.Clusters); want != got {
				pending = append(pending, fmt.Sprintf("%s: %s, predicted %s (%s)", name, got, want, o.Result))
			}
		}
		sort.Strings(pending)
		return len(pending) == 0, strings.Join(pending, "; "), nil
	})

	// Each predicted eviction happened with its purge mode, not before its
	// predicted earliest time; every other binding has no eviction.
	ctx := context.Background()
	for name, o := range predicted {
		rb, err := getBinding(ctx, e.cp, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range o.Evictions {
			at, mode, state, found := evictionOf(rb, ev.Cluster)
			switch {
			case ev.At == nil && found:
				t.Errorf("%s: evicted from %s (%s), predicted %s (%s)", name, ev.Cluster, o.Result, ev.Toleration, ev.Held)
			case ev.At != nil && !found:
				t.Errorf("%s: not evicted from %s, predicted at %s", name, ev.Cluster, ev.At)
			case ev.At != nil:
				if mode != ev.PurgeMode {
					t.Errorf("%s: evicted from %s with purge mode %s, predicted %s", name, ev.Cluster, mode, ev.PurgeMode)
				}
				if fmt.Sprint(state) != fmt.Sprint(ev.State) {
					t.Errorf("%s: evicted from %s carrying the state %v, predicted %v", name, ev.Cluster, state, ev.State)
				}
				// Stamps have whole seconds.
				if earliest := failedAt.Add(time.Duration(ev.At.Min)*time.Second - 2*time.Second); at.Before(earliest) {
					t.Errorf("%s: evicted from %s %s after the failure, before the predicted %s", name, ev.Cluster, at.Sub(failedAt).Round(time.Second), ev.At)
				}
			}
		}
	}

	// What stays put (tolerated, held, or waiting for a target) still does
	// once every predicted eviction is past its latest time.
	settled := failedAt.Add(time.Duration(latest)*time.Second + 5*time.Second)
	if report.Totals.Held > 0 {
		settled = failedAt.Add(e.periods.window() + 20*time.Second)
	}
	stays(t, settled, "the bindings that stay keep their placement", func(ctx context.Context) (bool, string, error) {
		for name, o := range predicted {
			if o.Result == simulate.ResultEvicted {
				continue
			}
			rb, err := getBinding(ctx, e.cp, ns, name)
			if err != nil {
				return false, "", err
			}
			if want, got := targetsOf(o.After), targetsOf(rb.Spec.Clusters); want != got {
				return false, fmt.Sprintf("%s: %s, predicted %s (%s)", name, got, want, o.Result), nil
			}
			if o.Result == simulate.ResultStays {
				for _, c := range o.Before {
					if _, _, _, found := evictionOf(rb, c.Name); !found && slices.Contains(failed, c.Name) {
						return false, fmt.Sprintf("%s: no eviction task from %s: its copy there would be gone", name, c.Name), nil
					}
				}
			}
		}
		return true, "", nil
	})
	return &report
}

// allHealthy: every scheduled cluster of rb reported the workload Healthy
// (so the status that state preservation reads is there).
func allHealthy(rb *workv1alpha2.ResourceBinding) bool {
	for _, c := range rb.Spec.Clusters {
		item := aggregatedItem(rb, c.Name)
		if item == nil || item.Health != workv1alpha2.ResourceHealthy || item.Status == nil {
			return false
		}
	}
	return true
}

// evictionOf finds rb's eviction from cluster, open (a task) or done (the
// history): when it was written, its purge mode and the state it carries.
func evictionOf(rb *workv1alpha2.ResourceBinding, cluster string) (time.Time, policyv1alpha1.PurgeMode, map[string]string, bool) {
	for _, task := range rb.Spec.GracefulEvictionTasks {
		if task.FromCluster == cluster {
			at := time.Time{}
			if task.CreationTimestamp != nil {
				at = task.CreationTimestamp.Time
			}
			return at, task.PurgeMode, task.PreservedLabelState, true
		}
	}
	for _, h := range rb.Status.FailoverHistory {
		if h.FromCluster == cluster {
			return h.Time.Time, h.PurgeMode, h.PreservedLabelState, true
		}
	}
	return time.Time{}, "", nil, false
}

// targetsOf renders clusters sorted by name: member1:2,member3:1.
func targetsOf(ts []workv1alpha2.TargetCluster) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s:%d", t.Name, t.Replicas))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func summarizePrediction(p map[string]simulate.Outcome) string {
	parts := make([]string, 0, len(p))
	for name, o := range p {
		parts = append(parts, fmt.Sprintf("%s %s %s->%s", name, o.Result, targetsOf(o.Before), targetsOf(o.After)))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// predictUnhealthy runs `lifeboat simulate --unhealthy template --cluster`
// on the shared environment and returns its one outcome, which must be an
// eviction.
func predictUnhealthy(t *testing.T, ns, template, cluster string) simulate.Outcome {
	t.Helper()
	out, err := lifeboat(t, "simulate", "-o", "json", "--unhealthy", template, "-n", ns, "--cluster", cluster,
		"--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName)
	if err != nil {
		t.Fatalf("lifeboat simulate --unhealthy %s: %v\n%s", template, err, out)
	}
	var r simulate.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding the simulation: %v\n%s", err, out)
	}
	if len(r.Outcomes) != 1 || r.Outcomes[0].Result != simulate.ResultEvicted {
		t.Fatalf("lifeboat simulate --unhealthy %s --cluster %s: want one eviction, got %s", template, cluster, out)
	}
	return r.Outcomes[0]
}

// TestSimulateBadInput: the simulation's bad input is refused with a
// message that names what exists.
func TestSimulateBadInput(t *testing.T) {
	t.Parallel()
	base := []string{"simulate", "--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--fail-cluster", "member9"}, []string{`no cluster "member9"`, "member1, member2, member3"}},
		{[]string{"--unhealthy", "deploy/nothing-here", "-n", "default", "--cluster", "member1"}, []string{"nothing-here", "in namespace default"}},
		{[]string{"--unhealthy", "deploy/nothing-here"}, []string{"--unhealthy needs --cluster"}},
		{[]string{"--taint", "member2"}, []string{"CLUSTER=KEY[=VALUE]:EFFECT"}},
		{[]string{"--taint", "member2=k:Sometimes"}, []string{"Sometimes"}},
		{[]string{"--fail-cluster", "member1", "-o", "xml"}, []string{"table, json or yaml"}},
		{nil, []string{"nothing to simulate"}},
	} {
		out, err := lifeboat(t, append(base, tc.args...)...)
		if err == nil || !containsAll(out, tc.want...) {
			t.Errorf("lifeboat simulate %s: err %v, output %q; want a failure naming %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
