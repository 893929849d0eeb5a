//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// TestNoScheduleTaintsBlockNewPlacements is not parallel: it taints a shared
// member, and Go runs non-parallel tests before the parallel ones start, so
// no other scenario sees the taint.
func TestNoScheduleTaintsBlockNewPlacements(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "taints")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	const member = "member3"

	setTaints(t, cp, member, []corev1.Taint{{Key: "example.com/maintenance", Value: "true", Effect: corev1.TaintEffectNoSchedule}})
	t.Cleanup(func() { setTaints(t, cp, member, nil) })

	policy := func(name string, tolerate bool) string {
		tol := ""
		if tolerate {
			tol = `    clusterTolerations:
      - key: example.com/maintenance
        operator: Exists
        effect: NoSchedule
`
		}
		return pinnedPolicy(name, name, member, tol) + fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: nginx}]
`, name)
	}
	applyYAML(t, ns, policy("untolerated", false))
	applyYAML(t, ns, policy("tolerated", true))

	unschedulable := func(name, taintKey string) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			rb, err := getBinding(ctx, cp, ns, name+"-deployment")
			if err != nil {
				return false, "", err
			}
			c := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
			if c == nil {
				return false, "no Scheduled condition", nil
			}
			return c.Status == metav1.ConditionFalse && len(rb.Spec.Clusters) == 0 && strings.Contains(c.Message, taintKey),
				fmt.Sprintf("Scheduled=%s %s: %s; clusters %v", c.Status, c.Reason, c.Message, scheduledClusters(rb)), nil
		}
	}
	eventually(t, propagationTimeout, "untolerated NoSchedule taint blocks the placement", unschedulable("untolerated", "example.com/maintenance"))
	eventually(t, propagationTimeout, "a toleration lets it through", func(ctx context.Context) (bool, string, error) {
		_, err := ms[member].AppsV1().Deployments(ns).Get(ctx, "tolerated", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("%v", err), nil
	})

	// Cordon, with the CLI: a new placement is refused even with the other
	// taint tolerated.
	setTaints(t, cp, member, nil)
	if out, err := lifeboat(t, "cordon", member, "--control-plane-kubeconfig", suite.state.KubeconfigPath()); err != nil {
		t.Fatalf("lifeboat cordon: %v\n%s", err, out)
	}
	applyYAML(t, ns, policy("after-cordon", true))
	eventually(t, propagationTimeout, "a cordoned cluster receives no new placement", unschedulable("after-cordon", clusterv1alpha1.TaintClusterUnscheduler))

	// Already-placed workloads stay where they are.
	rb, err := getBinding(ctx, cp, ns, "tolerated-deployment")
	if err != nil {
		t.Fatal(err)
	}
	if got := scheduledClusters(rb); len(got) != 1 || got[0] != member {
		t.Errorf("tolerated workload moved off the cordoned cluster: %v", got)
	}

	if out, err := lifeboat(t, "uncordon", member, "--control-plane-kubeconfig", suite.state.KubeconfigPath()); err != nil {
		t.Fatalf("lifeboat uncordon: %v\n%s", err, out)
	}
	eventually(t, propagationTimeout, "uncordoned: the waiting workload is placed", func(ctx context.Context) (bool, string, error) {
		_, err := ms[member].AppsV1().Deployments(ns).Get(ctx, "after-cordon", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("%v", err), nil
	})
}

// setTaints replaces a Cluster's user taints (keeping none of the old ones).
func setTaints(t *testing.T, c client.Client, name string, taints []corev1.Taint) {
	t.Helper()
	var cl clusterv1alpha1.Cluster
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Spec.Taints = taints
	if err := c.Update(context.Background(), &cl); err != nil {
		t.Fatalf("setting taints on %s: %v", name, err)
	}
}
