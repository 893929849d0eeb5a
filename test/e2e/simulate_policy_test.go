//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/simulate/policysim"
)

// lifeboat simulate --policy predicts, writing nothing, the placement the
// controllers then make: four policies (static weights, a pinned cluster,
// a label selector, an affinity that fits nowhere) are simulated first,
// nothing is created by that, then each is applied and its binding ends up
// with exactly the predicted spec.clusters (or the predicted reason for
// fitting nowhere). A policy the API server refuses makes the command fail
// with the server's validation message.
func TestSimulatePolicyPredictsThePlacement(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "simulate")
	cp := clientFor(t, controlPlaneConfig(t))
	nowhere := "e2e.lifeboat.dev/simulate-" + rand.String(5)

	applyYAML(t, ns, cfDeployment("weighted", 3)+"---"+cfDeployment("pinned", 2)+"---"+
		cfDeployment("labelled", 1, "tier", "front")+"---"+cfDeployment("lost", 1))

	policy := func(name, selector, placement string) string {
		return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %s
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
%s
  placement:
%s
`, name, selector, placement)
	}
	cases := []struct {
		policy, template string
		manifest         string
		want             policysim.Outcome
	}{
		{
			policy: "weighted", template: "weighted", want: policysim.OutcomeScheduled,
			manifest: policy("weighted", "      name: weighted", `    clusterAffinity:
      clusterNames: [member1, member2]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster: {clusterNames: [member1]}
            weight: 2
          - targetCluster: {clusterNames: [member2]}
            weight: 1`),
		},
		{
			policy: "pinned", template: "pinned", want: policysim.OutcomeScheduled,
			manifest: policy("pinned", "      name: pinned", "    clusterAffinity:\n      clusterNames: [member2]"),
		},
		{
			policy: "labelled", template: "labelled", want: policysim.OutcomeScheduled,
			manifest: policy("labelled", "      labelSelector:\n        matchLabels:\n          tier: front", "    clusterAffinity:\n      clusterNames: [member1]"),
		},
		{
			policy: "lost", template: "lost", want: policysim.OutcomeUnschedulable,
			manifest: policy("lost", "      name: lost", fmt.Sprintf("    clusterAffinity:\n      labelSelector:\n        matchLabels:\n          %s: \"yes\"", nowhere)),
		},
	}

	// 1. Predict every policy; nothing may be written.
	predicted := map[string]policysim.TemplateResult{}
	for _, tc := range cases {
		pred := simulatePolicy(t, ns, tc.manifest)
		if pred.Existing || pred.Policy.Name != tc.policy || pred.Policy.Namespace != ns {
			t.Fatalf("%s: prediction names %+v (existing %v), want the new PropagationPolicy %s/%s", tc.policy, pred.Policy, pred.Existing, ns, tc.policy)
		}
		if len(pred.Templates) != 1 {
			t.Fatalf("%s: predicted %d templates, want only %s: %+v", tc.policy, len(pred.Templates), tc.template, pred.Templates)
		}
		got := pred.Templates[0]
		if got.Name != tc.template || got.Kind != "Deployment" || got.APIVersion != "apps/v1" || got.Namespace != ns || got.Binding != tc.template+"-deployment" {
			t.Fatalf("%s: predicted template %+v", tc.policy, got)
		}
		if got.Outcome != tc.want {
			t.Fatalf("%s: outcome %s (%s), want %s", tc.policy, got.Outcome, got.Message, tc.want)
		}
		predicted[tc.template] = got
	}
	for _, tc := range cases {
		var pp policyv1alpha1.PropagationPolicy
		if err := cp.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tc.policy}, &pp); !apierrors.IsNotFound(err) {
			t.Fatalf("simulating created PropagationPolicy %s (get: %v)", tc.policy, err)
		}
		if _, err := getBinding(context.Background(), cp, ns, tc.template+"-deployment"); !apierrors.IsNotFound(err) {
			t.Fatalf("simulating created the binding of %s (get: %v)", tc.template, err)
		}
	}
	expected := map[string][]policysim.ClusterReplicas{
		"weighted": {{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		"pinned":   {{Name: "member2", Replicas: 2}},
		"labelled": {{Name: "member1", Replicas: 1}},
	}
	for name, clusters := range expected {
		if got := predicted[name].Clusters; !slices.Equal(got, clusters) {
			t.Errorf("%s: predicted %v, want %v", name, got, clusters)
		}
	}

	// 2. Apply each policy: the controllers place as predicted.
	for _, tc := range cases {
		applyYAML(t, ns, tc.manifest)
	}
	for _, tc := range cases {
		want := predicted[tc.template]
		eventually(t, propagationTimeout, tc.template+" scheduled as predicted", func(ctx context.Context) (bool, string, error) {
			rb, err := getBinding(ctx, cp, ns, want.Binding)
			if err != nil {
				return false, "", err
			}
			c := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
			if c == nil || c.ObservedGeneration != rb.Generation {
				return false, fmt.Sprintf("Scheduled %+v at generation %d", c, rb.Generation), nil
			}
			got := clusterReplicas(rb.Spec.Clusters)
			seen := fmt.Sprintf("Scheduled=%s %s %q, clusters %v, predicted %v %q", c.Status, c.Reason, c.Message, got, want.Clusters, want.Message)
			if want.Outcome == policysim.OutcomeUnschedulable {
				const reason = "did not match the placement cluster affinity constraint"
				return c.Status == metav1.ConditionFalse && len(got) == 0 &&
					strings.Contains(c.Message, reason) && strings.Contains(want.Message, reason), seen, nil
			}
			return c.Status == metav1.ConditionTrue && slices.Equal(got, want.Clusters), seen, nil
		})
	}

	// 3. The table output of an applied policy predicts the same again.
	out := simulatePolicyOut(t, ns, "table", cases[0].manifest)
	if !lineHas(out, "weighted-deployment", "Scheduled", "member1:2, member2:1") || !strings.Contains(out, "Changing the existing PropagationPolicy "+ns+"/weighted") {
		t.Errorf("table output of the applied policy:\n%s", out)
	}

	// 4. A policy the API server refuses: its own message, nothing created.
	bad := policy("bad", "      name: weighted", "    replicaScheduling:\n      replicaSchedulingType: Sideways")
	out, err := lifeboat(t, simulatePolicyArgs(t, ns, "json", bad)...)
	if err == nil || !strings.Contains(out, `Unsupported value: "Sideways"`) {
		t.Errorf("simulating an invalid policy: err %v, output:\n%s", err, out)
	}
	var pp policyv1alpha1.PropagationPolicy
	if err := cp.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "bad"}, &pp); !apierrors.IsNotFound(err) {
		t.Errorf("simulating an invalid policy created it (get: %v)", err)
	}
}

// simulatePolicy runs lifeboat simulate -o json on manifest in ns and decodes the
// prediction.
func simulatePolicy(t *testing.T, ns, manifest string) *policysim.Prediction {
	t.Helper()
	out := simulatePolicyOut(t, ns, "json", manifest)
	pred := &policysim.Prediction{}
	if err := json.Unmarshal([]byte(out), pred); err != nil {
		t.Fatalf("decoding the prediction: %v\n%s", err, out)
	}
	return pred
}

// simulatePolicyOut runs lifeboat simulate with output format output and returns
// its standard output and error; a failure ends the test.
func simulatePolicyOut(t *testing.T, ns, output, manifest string) string {
	t.Helper()
	out, err := lifeboat(t, simulatePolicyArgs(t, ns, output, manifest)...)
	if err != nil {
		t.Fatalf("lifeboat simulate: %v\n%s", err, out)
	}
	return out
}

// simulatePolicyArgs writes manifest to a file and returns the arguments of
// lifeboat simulate for it.
func simulatePolicyArgs(t *testing.T, ns, output, manifest string) []string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"simulate", "--policy", file, "-n", ns, "-o", output,
		"--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName}
}

func clusterReplicas(ts []workv1alpha2.TargetCluster) []policysim.ClusterReplicas {
	var out []policysim.ClusterReplicas
	for _, t := range ts {
		out = append(out, policysim.ClusterReplicas{Name: t.Name, Replicas: t.Replicas})
	}
	return out
}
