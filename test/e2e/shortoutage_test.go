//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// A workload that may only run in member1 (clusterNames: [member1], the
// default ClusterTaintPolicy, no tolerations) outlives a short crash of
// member1: it is evicted, nothing else can take it, so the copy is kept;
// when member1 is back the eviction is undone (the task goes, member1 is
// placed again, Scheduled=True), the copy was never recreated, and a
// template change reaches it again.
func shortOutage(t *testing.T, e *cfEnv) {
	const member = "member1"
	ctx := context.Background()
	ns := e.namespace(t, "cf-short")
	e.apply(t, ns, cfDeployment("solo", 1)+"---"+fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: solo
spec:
  resourceSelectors:
    - %s
  placement:
    clusterAffinity:
      clusterNames: [%s]
`, byName("solo"), member))
	if got := e.waitPlaced(t, ns, "solo", 1, ""); got != member {
		t.Fatalf("placed on %s, want %s", got, member)
	}
	before, err := e.memberDeployment(ctx, member, ns, "solo")
	if err != nil || before == nil {
		t.Fatalf("the copy in %s: %v", member, err)
	}

	e.crash(t, member)
	e.waitTaint(t, member, clusterv1alpha1.TaintClusterNotReady, corev1.TaintEffectNoExecute, true)
	cfEventually(t, cfTimeout, "the eviction from "+member+" with nowhere to go", func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "solo")
		if err != nil {
			return false, "", err
		}
		c := condition(rb.Status.Conditions, failover.ConditionFailoverTargetAvailable)
		return len(rb.Spec.Clusters) == 0 && len(rb.Spec.GracefulEvictionTasks) == 1 && c != nil && c.Status == metav1.ConditionFalse,
			fmt.Sprintf("clusters %v, tasks %s, FailoverTargetAvailable %+v", scheduledClusters(rb), cfTasks(rb), c), nil
	})

	e.start(t, member)
	cfEventually(t, cfTimeout, "the eviction undone: "+member+" placed again, no task, Scheduled=True", func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "solo")
		if err != nil {
			return false, "", err
		}
		c := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
		got := scheduledClusters(rb)
		return len(got) == 1 && got[0] == member && len(rb.Spec.GracefulEvictionTasks) == 0 && c != nil && c.Status == metav1.ConditionTrue,
			fmt.Sprintf("clusters %v, tasks %s, Scheduled %+v", got, cfTasks(rb), c), nil
	})
	after, err := e.memberDeployment(ctx, member, ns, "solo")
	if err != nil || after == nil {
		t.Fatalf("the copy in %s after the outage: %v", member, err)
	}
	if after.UID != before.UID {
		t.Errorf("the copy in %s was recreated (uid %s -> %s): the last copy was deleted during the outage", member, before.UID, after.UID)
	}

	// The template is scaled: the copy follows.
	if err := scaleTemplate(ctx, e.cp, ns, "solo", 2); err != nil {
		t.Fatal(err)
	}
	cfEventually(t, cfTimeout, "the copy in "+member+" scaled to 2", func(ctx context.Context) (bool, string, error) {
		d, err := e.memberDeployment(ctx, member, ns, "solo")
		if err != nil || d == nil {
			return false, fmt.Sprintf("%v", err), err
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 2 && deploymentReady(d, 2), fmt.Sprintf("replicas %v, ready %d", d.Spec.Replicas, d.Status.ReadyReplicas), nil
	})
}

// scaleTemplate sets the replicas of Deployment name in the control plane.
func scaleTemplate(ctx context.Context, cp client.Client, ns, name string, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		d.Spec.Replicas = &replicas
		return cp.Update(ctx, d)
	})
}
