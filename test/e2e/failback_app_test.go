//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failback"
)

// appFailbackWindow is the stabilizationSeconds of
// TestFailbackAfterApplicationFailover's policies.
const appFailbackWindow = 10 * time.Second

// TestFailbackAfterApplicationFailover: after an application failover the
// application's own fault may still be in the cluster it left, so failback
// is off unless the policy asks for it with afterApplicationFailover. Two
// Deployments prefer member1 and fail over to member2 when their image
// cannot be pulled in member1; the fault is then fixed. The one whose
// policy asks goes back to member1 once the window has passed since it
// left; the other stays on member2 and `lifeboat failback` says why.
func TestFailbackAfterApplicationFailover(t *testing.T) {
	t.Parallel()
	cp := clientFor(t, controlPlaneConfig(t))
	kubeconfig := suite.state.KubeconfigPath()
	const name = "app"
	nsOff, nsOn := newNamespace(t, "fb-app-off"), newNamespace(t, "fb-app-on")
	for ns, after := range map[string]bool{nsOff: false, nsOn: true} {
		applyYAML(t, ns, appFailbackPolicy(name, after)+"---"+nginxDeployment(name, ""))
	}
	for _, ns := range []string{nsOff, nsOn} {
		if on := waitPlacedHealthy(t, cp, ns, name, ""); on != "member1" {
			t.Fatalf("%s/%s placed on %s, want member1 (the first affinity)", ns, name, on)
		}
		applyYAML(t, ns, fakeRegistry(name, []string{"member1"}, ""))
	}
	left := map[string]time.Time{}
	for _, ns := range []string{nsOff, nsOn} {
		if on := waitPlacedHealthy(t, cp, ns, name, "member1"); on != "member2" {
			t.Fatalf("%s/%s failed over to %s, want member2", ns, name, on)
		}
		entry := waitHistoryEntry(t, cp, ns, name, "member1", workv1alpha2.EvictionReasonApplicationFailure)
		left[ns] = entry.Time.Time
		// The fault is fixed: the image can be pulled in member1 again.
		kubectl(t, kubeconfig, "-n", ns, "delete", "overridepolicy", name+"-broken")
	}

	// With afterApplicationFailover it goes back, no earlier than a window
	// after it left.
	back := waitHistoryEntry(t, cp, nsOn, name, "member2", workv1alpha2.EvictionReasonFailback)
	if back.Time.Time.Before(left[nsOn].Add(appFailbackWindow)) {
		t.Errorf("moved back at %s, less than %s after it left member1 at %s", back.Time.Format(time.RFC3339), appFailbackWindow, left[nsOn].Format(time.RFC3339))
	}
	if on := waitPlacedHealthy(t, cp, nsOn, name, "member2"); on != "member1" {
		t.Errorf("with afterApplicationFailover it went to %s, want member1", on)
	}

	// Without it the workload stays where it went, also once its own
	// window has passed, and lifeboat failback says why.
	var moved string
	eventually(t, failoverTimeout, "the workload without afterApplicationFailover still on member2 a window after it left member1", func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, nsOff, name)
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.Reason == workv1alpha2.EvictionReasonFailback {
				moved = fmt.Sprintf("it failed back: %+v", h)
			}
		}
		if _, open := rb.Annotations[failback.FailbackAnnotation]; open {
			moved = fmt.Sprintf("a failback was started: %v", rb.Annotations)
		}
		if cs := scheduledClusters(rb); len(cs) != 1 || cs[0] != "member2" {
			moved = fmt.Sprintf("it moved to %v; tasks %s", cs, tasksSummary(rb))
		}
		waited := time.Since(left[nsOff])
		return moved != "" || waited > appFailbackWindow+5*time.Second, fmt.Sprintf("on member2 for %s", waited.Round(time.Second)), nil
	})
	if moved != "" {
		t.Fatalf("afterApplicationFailover is off, yet %s", moved)
	}
	out, err := lifeboat(t, "failback", "--all", "-o", "json", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("lifeboat failback: %v\n%s", err, out)
	}
	var rows []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		State     string `json:"state"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("lifeboat failback -o json: %v\n%s", err, out)
	}
	found := false
	for _, r := range rows {
		if r.Namespace != nsOff {
			continue
		}
		found = true
		if r.State != failback.StateNone || !containsAll(r.Reason, "member1", "application failure", "afterApplicationFailover is off") {
			t.Errorf("lifeboat failback says %s: %q; want %s, naming member1, the application failure and afterApplicationFailover", r.State, r.Reason, failback.StateNone)
		}
	}
	if !found {
		t.Errorf("lifeboat failback --all does not list %s/%s:\n%s", nsOff, name, out)
	}
}

// appFailbackPolicy places Deployment name on member1, else member2, with
// application failover and failback (afterApplicationFailover as given).
func appFailbackPolicy(name string, afterApplicationFailover bool) string {
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
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
    application:
      decisionConditions:
        tolerationSeconds: 3
    failback:
      stabilizationSeconds: %[2]d
      afterApplicationFailover: %[3]t
`, name, int(appFailbackWindow.Seconds()), afterApplicationFailover)
}

// waitHistoryEntry waits for a failoverHistory entry of Deployment name
// from cluster with reason, in the shared environment.
func waitHistoryEntry(t *testing.T, cp client.Client, ns, name, from, reason string) workv1alpha2.FailoverHistoryItem {
	t.Helper()
	var entry workv1alpha2.FailoverHistoryItem
	eventually(t, failoverTimeout, describe("history of %s/%s: %s from %s", ns, name, reason, from), func(ctx context.Context) (bool, string, error) {
		rb, err := bindingOf(ctx, cp, ns, name)
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == from && h.Reason == reason {
				entry = h
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("clusters %v; tasks %s; %d history entries", scheduledClusters(rb), tasksSummary(rb), len(rb.Status.FailoverHistory)), nil
	})
	return entry
}
