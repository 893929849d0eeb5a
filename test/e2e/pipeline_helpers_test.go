//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

var memberNames = []string{"member1", "member2", "member3"}

// applyFile applies a manifest from testdata to the control plane in ns, as
// a user would with kubectl.
func applyFile(t *testing.T, ns, path string) {
	t.Helper()
	kubectl(t, suite.state.KubeconfigPath(), "--context", "lifeboat", "-n", ns, "apply", "-f", filepath.Join("testdata", path))
}

// applyYAML applies manifest text to the shared control plane in ns.
func applyYAML(t *testing.T, ns, manifest string) {
	t.Helper()
	applyManifest(t, suite.state.KubeconfigPath(), ns, manifest)
}

// applyManifest applies manifest text to the control plane of the
// environment whose kubeconfig is given, in ns ("" for cluster-scoped
// objects).
func applyManifest(t *testing.T, kubeconfig, ns, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--context", localenv.ControlPlaneName}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	kubectl(t, kubeconfig, append(args, "apply", "-f", f)...)
}

// pinnedPolicy is a PropagationPolicy name placing Deployment deployment
// on cluster only; placement is more YAML for spec.placement (indented by 4
// spaces), "" for none.
func pinnedPolicy(name, deployment, cluster, placement string) string {
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: %[2]s
  placement:
    clusterAffinity:
      clusterNames: [%[3]s]
%[4]s`, name, deployment, cluster, placement)
}

// pinnedTo is a PropagationPolicy placing Deployment name on cluster only.
func pinnedTo(name, cluster string) string { return pinnedPolicy(name, name, cluster, "") }

// members returns a clientset per member of the shared environment.
func members(t *testing.T) map[string]kubernetes.Interface {
	t.Helper()
	m := map[string]kubernetes.Interface{}
	for _, n := range memberNames {
		m[n] = clientsetFor(t, memberConfig(t, n))
	}
	return m
}

func getBinding(ctx context.Context, c client.Client, ns, name string) (*workv1alpha2.ResourceBinding, error) {
	var rb workv1alpha2.ResourceBinding
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rb); err != nil {
		return nil, err
	}
	return &rb, nil
}

func scheduledClusters(rb *workv1alpha2.ResourceBinding) []string {
	var names []string
	for _, tc := range rb.Spec.Clusters {
		names = append(names, tc.Name)
	}
	sort.Strings(names)
	return names
}

func aggregatedItem(rb *workv1alpha2.ResourceBinding, cluster string) *workv1alpha2.AggregatedStatusItem {
	for i := range rb.Status.AggregatedStatus {
		if rb.Status.AggregatedStatus[i].ClusterName == cluster {
			return &rb.Status.AggregatedStatus[i]
		}
	}
	return nil
}

// reflectedInt reads an integer field of an aggregated item's reflected status.
func reflectedInt(item *workv1alpha2.AggregatedStatusItem, field string) int64 {
	if item == nil || item.Status == nil {
		return -1
	}
	var m map[string]any
	if err := json.Unmarshal(item.Status.Raw, &m); err != nil {
		return -1
	}
	if v, ok := m[field].(float64); ok {
		return int64(v)
	}
	return 0
}

func condition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// memberDeployments returns, per member, the Deployment ns/name if it exists there.
func memberDeployments(ctx context.Context, ms map[string]kubernetes.Interface, ns, name string) (map[string]*appsv1.Deployment, error) {
	out := map[string]*appsv1.Deployment{}
	for n, cs := range ms {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out[n] = d
	}
	return out, nil
}

func summarizeDeployments(ds map[string]*appsv1.Deployment) string {
	var parts []string
	for n, d := range ds {
		r := int32(0)
		if d.Spec.Replicas != nil {
			r = *d.Spec.Replicas
		}
		parts = append(parts, fmt.Sprintf("%s: %d/%d ready, image %s", n, d.Status.ReadyReplicas, r, d.Spec.Template.Spec.Containers[0].Image))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "in no member"
	}
	return strings.Join(parts, "; ")
}

// eventsFor lists the Events in ns about the named object.
func eventsFor(ctx context.Context, cs kubernetes.Interface, ns, kind, name string) ([]corev1.Event, error) {
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func summarizeEvents(evs []corev1.Event) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.Type+" "+e.Reason+": "+e.Message)
	}
	return strings.Join(parts, " | ")
}

// emptyClusterRoleTo is a ClusterRole without rules, named role, and the
// ClusterPropagationPolicy of the same name that places it on cluster.
func emptyClusterRoleTo(role, cluster string) string {
	return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %[1]s
rules: []
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      name: %[1]s
  placement:
    clusterAffinity:
      clusterNames: [%[2]s]
`, role, cluster)
}
