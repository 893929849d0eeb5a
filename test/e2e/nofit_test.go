//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// A placement that suddenly fits nowhere never deletes the running copy:
// the label that selected the cluster is removed, then the policy is edited
// to name only a cluster that does not exist. Each time the copy keeps
// running where it was (same object, never recreated), the binding says
// Scheduled=False and a Warning Event says the placement is kept. A policy
// that fits elsewhere then moves the workload, as the user asked.
func TestPlacementThatFitsNowhereKeepsTheCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "nofit")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	const member = "member3"
	key := "e2e.lifeboat.dev/nofit-" + rand.String(5)
	setClusterLabel(t, cp, member, key, "yes")
	t.Cleanup(func() { setClusterLabel(t, cp, member, key, "") })

	policy := func(affinity string) string {
		return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
  placement:
    clusterAffinity:
%s`, affinity)
	}
	byLabel := fmt.Sprintf("      labelSelector:\n        matchLabels:\n          %s: \"yes\"\n", key)
	applyYAML(t, ns, nginxDeployment("web", "")+"---"+policy(byLabel))
	if got := waitPlacedHealthy(t, cp, ns, "web", ""); got != member {
		t.Fatalf("placed on %s, want %s (the only cluster with the label)", got, member)
	}
	original, err := ms[member].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// keeps checks, for a while, that the copy in member3 is the original
	// one and the binding still places it there.
	keeps := func(what string) {
		t.Helper()
		eventually(t, failoverTimeout, "Scheduled=False keeping the placement: "+what, func(ctx context.Context) (bool, string, error) {
			rb, err := bindingOf(ctx, cp, ns, "web")
			if err != nil {
				return false, "", err
			}
			c := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
			if c == nil || c.Status != metav1.ConditionFalse {
				return false, fmt.Sprintf("Scheduled %+v", c), nil
			}
			return strings.Contains(c.Message, "The current placement {"+member+":2} is kept."), c.Message, nil
		})
		eventWith(t, ns, "web", corev1.EventTypeWarning, "ScheduleBindingFailed", "is kept")
		stays(t, time.Now().Add(10*time.Second), "the copy in "+member+" keeps running: "+what, func(ctx context.Context) (bool, string, error) {
			rb, err := bindingOf(ctx, cp, ns, "web")
			if err != nil {
				return false, "", err
			}
			if got := scheduledClusters(rb); len(got) != 1 || got[0] != member {
				return false, fmt.Sprintf("spec.clusters %v", got), nil
			}
			d, err := ms[member].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, "the copy was deleted", nil
			}
			if err != nil {
				return false, "", err
			}
			return d.UID == original.UID && d.DeletionTimestamp == nil, fmt.Sprintf("uid %s deleting %v", d.UID, d.DeletionTimestamp != nil), nil
		})
	}

	setClusterLabel(t, cp, member, key, "")
	keeps("the label that selected " + member + " was removed")

	applyYAML(t, ns, policy("      clusterNames: [member9]\n"))
	keeps("the policy names only member9, which does not exist")

	// A placement that fits elsewhere moves the workload: the user's choice.
	applyYAML(t, ns, policy("      clusterNames: [member2]\n"))
	if got := waitPlacedHealthy(t, cp, ns, "web", member); got != "member2" {
		t.Fatalf("placed on %s, want member2", got)
	}
	eventually(t, failoverTimeout, "the copy in "+member+" removed after the move", func(ctx context.Context) (bool, string, error) {
		_, err := ms[member].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("still there (%v)", err), nil
	})
}

// setClusterLabel sets (value "" removes) a label of a Cluster of the shared
// control plane, retrying on conflicts with the controllers' writes.
func setClusterLabel(t *testing.T, cp client.Client, cluster, key, value string) {
	t.Helper()
	eventually(t, 30*time.Second, "label "+key+" on cluster "+cluster, func(ctx context.Context) (bool, string, error) {
		c := &clusterv1alpha1.Cluster{}
		if err := cp.Get(ctx, types.NamespacedName{Name: cluster}, c); err != nil {
			return false, "", err
		}
		if value == "" {
			delete(c.Labels, key)
		} else {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[key] = value
		}
		if err := cp.Update(ctx, c); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}
