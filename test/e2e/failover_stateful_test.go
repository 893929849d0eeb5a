//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"

	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// TestStatefulFailover: seed 004's demo with Immediately, and a rule on a
// missing field.
func TestStatefulFailover(t *testing.T) {
	t.Parallel()

	// Seed 004: the value of .updatedReplicas in the failed copy becomes
	// the label cztest-replicas: "2" of the new copy.
	t.Run("seed 004", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "fo-state")
		cp := clientFor(t, controlPlaneConfig(t))
		ms := members(t)
		pair := []string{"member1", "member2"}
		applyFile(t, ns, "failover/004-pp-immediately.yaml")
		applyFile(t, ns, "failover/004-deploy-recreate.yaml")
		x := waitPlacedHealthy(t, cp, ns, "nginx", "")
		y := other(pair, x)
		applyYAML(t, ns, fakeRegistry("nginx", []string{x}, ""))

		eventually(t, failoverTimeout, "the Deployment in "+y+" carries cztest-replicas: \"2\"", func(ctx context.Context) (bool, string, error) {
			d, err := ms[y].AppsV1().Deployments(ns).Get(ctx, "nginx", metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return d.Labels["cztest-replicas"] == "2", fmt.Sprintf("labels %v", d.Labels), nil
		})
		waitPlacedHealthy(t, cp, ns, "nginx", x)
		entry, _ := assertFailoverRecorded(t, ns, "nginx", x, y, "cztest-replicas=2")
		if entry.PreservedLabelState["cztest-replicas"] != "2" {
			t.Errorf("history preservedLabelState = %v, want cztest-replicas=2", entry.PreservedLabelState)
		}
		eventWith(t, ns, "nginx", "Warning", failover.EventReasonEvicted, x, "preserved state cztest-replicas=2")
	})

	// A rule whose path matches nothing does not block the failover: a
	// Warning Event names the rule, and the history says so.
	t.Run("missing field", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "fo-state-missing")
		cp := clientFor(t, controlPlaneConfig(t))
		ms := members(t)
		pair := []string{"member2", "member3"}
		const name, alias = "web", "application.karmada.io/failover-jobid"
		applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 3
      purgeMode: Immediately
      statePreservation:
        rules:
          - aliasLabelName: `+alias+`
            jsonPath: "{ .jobStatus.jobID }"
`)+"---"+nginxDeployment(name, ""))
		x := waitPlacedHealthy(t, cp, ns, name, "")
		y := other(pair, x)
		applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))

		waitPlacedHealthy(t, cp, ns, name, x)
		d, err := ms[y].AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := d.Labels[alias]; ok {
			t.Errorf("the new copy got %s=%q from a rule that matched nothing", alias, v)
		}
		eventWith(t, ns, name, "Warning", failover.EventReasonStatePreservationFailed, alias, "jobStatus not found", "the failover goes on")
		entry, _ := assertFailoverRecorded(t, ns, name, x, y, "state not preserved for rule "+alias)
		if !strings.Contains(entry.Message, "state not preserved for rule "+alias) || len(entry.PreservedLabelState) != 0 {
			t.Errorf("history entry message %q / state %v: want the missing rule named and no state", entry.Message, entry.PreservedLabelState)
		}
	})
}

// TestStatefulFailoverChained: A→B→C where B was placed by the failover
// from A and never became healthy, so B's own status is not the
// application's state: C gets A's value. The order A, B, C is made
// deterministic with NoSchedule taints of this test's own key on the
// shared Cluster objects, so the test is not parallel (untolerated taints
// block new placements of other tests). clusterAffinities would be simpler,
// but the scheduler can fall back to an earlier term after a fast Directly
// eviction (see the report of issue 4).
//
// The rule reads .observedGeneration, which differs between A and B: A's
// copy ran nginx and was then updated to the broken image (generation 2),
// B's copy was created broken (generation 1).
func TestStatefulFailoverChained(t *testing.T) {
	ns := newNamespace(t, "fo-state-chain")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	const name, alias = "chain", "cztest-generation"
	const a, b, c = "member1", "member2", "member3"
	t.Cleanup(func() {
		for _, m := range []string{a, b, c} {
			setChainTaint(t, cp, m, false)
		}
	})
	setChainTaint(t, cp, b, true)
	setChainTaint(t, cp, c, true)
	applyYAML(t, ns, onePolicy(name, []string{a, b, c}, `
      decisionConditions:
        tolerationSeconds: 4
      purgeMode: Immediately
      statePreservation:
        rules:
          - aliasLabelName: `+alias+`
            jsonPath: "{ .observedGeneration }"
`)+"---"+nginxDeployment(name, ""))
	if got := waitPlacedHealthy(t, cp, ns, name, ""); got != a {
		t.Fatalf("placed on %s, want %s (the others are tainted)", got, a)
	}
	setChainTaint(t, cp, b, false)
	applyYAML(t, ns, fakeRegistry(name, []string{a, b}, ""))

	// B: placed, given A's state, never healthy.
	var fromA, bOwn string
	eventually(t, failoverTimeout, "failed over to "+b+" with A's state injected, B reporting its own generation", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		if got := scheduledClusters(rb); len(got) != 1 || got[0] != b {
			return false, fmt.Sprintf("clusters %v; tasks %s", got, tasksSummary(rb)), nil
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == a {
				fromA = h.PreservedLabelState[alias]
			}
		}
		item := aggregatedItem(rb, b)
		if item == nil || fromA == "" {
			return false, fmt.Sprintf("state from A %q; item %v", fromA, item), nil
		}
		bOwn = strconv.FormatInt(reflectedInt(item, "observedGeneration"), 10)
		d, err := ms[b].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return d.Labels[alias] == fromA && reflectedInt(item, "observedGeneration") > 0,
			fmt.Sprintf("B labels %v, B observedGeneration %s, health %s", d.Labels, bOwn, item.Health), nil
	})
	if fromA == bOwn {
		t.Fatalf("A's captured %s equals B's own observedGeneration %s: the scenario cannot tell them apart", fromA, bOwn)
	}
	// C is the only cluster left for the next failover.
	setChainTaint(t, cp, a, true)
	setChainTaint(t, cp, c, false)

	eventually(t, failoverTimeout, "failed over to "+c+" with A's state", func(ctx context.Context) (bool, string, error) {
		d, err := ms[c].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no copy in " + c, nil
		}
		if err != nil {
			return false, "", err
		}
		return d.Labels[alias] == fromA, fmt.Sprintf("C labels %v; A's state %s, B's own %s", d.Labels, fromA, bOwn), nil
	})
	waitPlacedHealthy(t, cp, ns, name, b)
	eventWith(t, ns, name, "Normal", failover.EventReasonStateCarriedForward, b, "never became healthy", a)
	entry, out := assertFailoverRecorded(t, ns, name, b, c, alias+"="+fromA)
	if entry.PreservedLabelState[alias] != fromA {
		t.Errorf("history of the B→C eviction keeps state %v, want %s=%s (A's)", entry.PreservedLabelState, alias, fromA)
	}
	if !strings.Contains(entry.Message, "carrying the state captured from "+a+" forward") {
		t.Errorf("history message %q does not say the state was carried forward from %s", entry.Message, a)
	}
	assertFailoverRecorded(t, ns, name, a, b)
	if strings.Count(out, "ApplicationFailure") < 2 {
		t.Errorf("lifeboat history should list both evictions:\n%s", out)
	}
}

// chainTaintKey is the NoSchedule taint TestStatefulFailoverChained steers
// the scheduler with.
const chainTaintKey = "e2e.lifeboat.dev/chained-failover"

// setChainTaint adds or removes chainTaintKey on a Cluster, leaving other
// taints alone.
func setChainTaint(t *testing.T, c client.Client, cluster string, on bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cl clusterv1alpha1.Cluster
		if err := c.Get(context.Background(), types.NamespacedName{Name: cluster}, &cl); err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, tt := range cl.Spec.Taints {
			if tt.Key != chainTaintKey {
				taints = append(taints, tt)
			}
		}
		if on {
			taints = append(taints, corev1.Taint{Key: chainTaintKey, Effect: corev1.TaintEffectNoSchedule})
		}
		cl.Spec.Taints = taints
		return c.Update(context.Background(), &cl)
	})
	if err != nil {
		t.Fatalf("setting taint %s=%v on %s: %v", chainTaintKey, on, cluster, err)
	}
}
