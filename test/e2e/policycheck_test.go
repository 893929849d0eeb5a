//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

const policyCheckTimeout = 60 * time.Second

// policyCheckCases are policies the schema accepts but that cannot work as
// written: each must get Accepted=False with the reason, and a Warning
// Event naming the field. They are applied in the test's namespace.
var policyCheckCases = []struct {
	kind, name, reason, message string
	manifest                    string
}{
	{"PropagationPolicy", "typo", policyv1alpha1.PolicyReasonUnknownKind, `spec.resourceSelectors[0]: no kind "Deploymnt" in apps/v1`, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: typo}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deploymnt}
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement: {clusterAffinity: {clusterNames: [member1]}}
`},
	{"PropagationPolicy", "cluster-scoped", policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0]: ClusterRole of rbac.authorization.k8s.io/v1 is cluster-scoped", `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cluster-scoped}
spec:
  resourceSelectors:
    - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: view}
`},
	{"PropagationPolicy", "app-jsonpath", policyv1alpha1.PolicyReasonInvalidJSONPath, `spec.failover.application.statePreservation.rules[0].jsonPath: invalid JSONPath "{ .jobStatus.jobId": unclosed action`, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: app-jsonpath}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: flink-like}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 30}
      purgeMode: Immediately
      statePreservation:
        rules:
          - {aliasLabelName: application.karmada.io/failover-jobid, jsonPath: "{ .jobStatus.jobId"}
`},
	{"PropagationPolicy", "cluster-jsonpath", policyv1alpha1.PolicyReasonInvalidJSONPath, "spec.failover.cluster.statePreservation.rules[0].jsonPath: invalid JSONPath", `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cluster-jsonpath}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: flink-like}
  failover:
    cluster:
      purgeMode: Directly
      statePreservation:
        rules:
          - {aliasLabelName: id, jsonPath: "{.items[x]}"}
`},
	{"OverridePolicy", "replicas", policyv1alpha1.PolicyReasonInvalidOverride, `spec.overrideRules[0].overriders.plaintext[0].value: "three" does not fit /spec/replicas of apps/v1 Deployment: want a 32-bit integer`, `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: replicas}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: not-deployed}
  overrideRules:
    - targetCluster: {clusterNames: [member1]}
      overriders:
        plaintext:
          - {path: /spec/replicas, operator: replace, value: three}
`},
	{"OverridePolicy", "pointer", policyv1alpha1.PolicyReasonInvalidOverride, `spec.overrideRules[0].overriders.plaintext[0]: plaintext: path "spec/replicas" is not a JSON pointer`, `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: pointer}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: not-deployed}
  overrideRules:
    - overriders:
        plaintext:
          - {path: spec/replicas, operator: replace, value: 3}
`},
}

// TestPolicyCheck applies policies the schema accepts but that cannot work
// and waits for each one's Accepted=False condition and Warning Event,
// shows valid policies get Accepted=True, that the valid parts of an
// invalid policy still propagate, that the detector writing the policy
// keeps the condition, and that a kind installed after its policy clears
// the problem.
func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "policycheck")
	cp := clientFor(t, controlPlaneConfig(t))
	cs := clientsetFor(t, controlPlaneConfig(t))

	var manifests []string
	for _, c := range policyCheckCases {
		manifests = append(manifests, c.manifest)
	}
	applyYAML(t, ns, strings.Join(manifests, "\n---\n")+`
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: valid}
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: ConfigMap, name: settings}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 30}
      purgeMode: Immediately
      statePreservation:
        rules:
          - {aliasLabelName: application.karmada.io/failover-jobid, jsonPath: "{ .jobStatus.jobId }"}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: valid}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  overrideRules:
    - overriders:
        plaintext:
          - {path: /spec/replicas, operator: replace, value: 1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`)

	for _, c := range policyCheckCases {
		waitAccepted(t, cp, cs, c.kind, ns, c.name, metav1.ConditionFalse, c.reason, c.message)
	}
	waitAccepted(t, cp, cs, "PropagationPolicy", ns, "valid", metav1.ConditionTrue, policyv1alpha1.PolicyReasonValid, "")
	waitAccepted(t, cp, cs, "OverridePolicy", ns, "valid", metav1.ConditionTrue, policyv1alpha1.PolicyReasonValid, "")

	// kubectl shows it: the ACCEPTED column, and describe's condition and
	// Event.
	kubeconfig := suite.state.KubeconfigPath()
	get := kubectl(t, kubeconfig, "--context", "lifeboat", "-n", ns, "get", "pp", "-o", "wide")
	t.Logf("kubectl get pp -o wide:\n%s", get)
	if !lineHas(get, "typo", "False", policyv1alpha1.PolicyReasonUnknownKind) || !lineHas(get, "valid", "True", policyv1alpha1.PolicyReasonValid) {
		t.Errorf("kubectl get pp -o wide does not show ACCEPTED and REASON:\n%s", get)
	}
	described := kubectl(t, kubeconfig, "--context", "lifeboat", "-n", ns, "describe", "pp", "typo")
	t.Logf("kubectl describe pp typo:\n%s", described)
	if !strings.Contains(described, `no kind "Deploymnt" in apps/v1`) || !lineHas(described, "Warning", policyv1alpha1.PolicyReasonUnknownKind) {
		t.Errorf("kubectl describe pp typo shows neither the problem nor its Event:\n%s", described)
	}

	// The valid selector of the invalid policy still propagates: the
	// problem is made visible, nothing is held back.
	eventually(t, propagationTimeout, "binding web-deployment claimed by policy typo and scheduled to member1", func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, cp, ns, "web-deployment")
		if err != nil {
			return false, "", err
		}
		clusters := scheduledClusters(rb)
		return rb.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation] == "typo" && len(clusters) == 1 && clusters[0] == "member1",
			fmt.Sprintf("claimed by %q, scheduled to %v", rb.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation], clusters), nil
	})

	// The detector writes policies with a full update (finalizer,
	// permanent ID): take its finalizer away and let it put it back; the
	// condition must survive untouched.
	var before policyv1alpha1.PropagationPolicy
	if err := cp.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "typo"}, &before); err != nil {
		t.Fatal(err)
	}
	stored := meta.FindStatusCondition(before.Status.Conditions, policyv1alpha1.PolicyConditionAccepted)
	kubectl(t, kubeconfig, "--context", "lifeboat", "-n", ns, "patch", "pp", "typo", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	eventually(t, policyCheckTimeout, "the detector puts its finalizer back on policy typo, and the condition stays", func(ctx context.Context) (bool, string, error) {
		var p policyv1alpha1.PropagationPolicy
		if err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: "typo"}, &p); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, policyv1alpha1.PolicyConditionAccepted)
		if c == nil || !equality.Semantic.DeepEqual(*c, *stored) {
			t.Fatalf("condition changed when the detector wrote the policy: %+v, was %+v", c, stored)
		}
		return len(p.Finalizers) > 0, fmt.Sprintf("finalizers %v", p.Finalizers), nil
	})

	// One Warning per change: the detector's write and any discovery
	// round since have not repeated it.
	for _, c := range policyCheckCases {
		evs := policyEvents(t, cs, c.kind, ns, c.name, c.reason)
		if len(evs) != 1 || evs[0].Count > 1 {
			t.Errorf("%s %s: Warning %s events %s, want exactly one, once", c.kind, c.name, c.reason, summarizeEvents(evs))
		}
	}

	// A kind installed after the policy that selects it.
	group := "policycheck-" + rand.String(5) + ".example.com"
	cpp := "widgets-" + rand.String(5)
	applyYAML(t, ns, fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: %s}
spec:
  resourceSelectors:
    - {apiVersion: %s/v1, kind: Widget}
`, cpp, group))
	t.Cleanup(func() {
		_, _ = kubectlE(kubeconfig, "--context", "lifeboat", "delete", "cpp", cpp, "--ignore-not-found")
		_, _ = kubectlE(kubeconfig, "--context", "lifeboat", "delete", "crd", "widgets."+group, "--ignore-not-found")
	})
	waitAccepted(t, cp, cs, "ClusterPropagationPolicy", "", cpp, metav1.ConditionFalse, policyv1alpha1.PolicyReasonUnknownKind,
		fmt.Sprintf(`spec.resourceSelectors[0]: no kind "Widget" in %s/v1`, group))
	applyYAML(t, ns, fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group))
	waitAccepted(t, cp, cs, "ClusterPropagationPolicy", "", cpp, metav1.ConditionTrue, policyv1alpha1.PolicyReasonValid, "")
	eventually(t, policyCheckTimeout, "Normal Event Accepted on the ClusterPropagationPolicy", func(ctx context.Context) (bool, string, error) {
		evs, err := eventsFor(ctx, cs, metav1.NamespaceDefault, "ClusterPropagationPolicy", cpp)
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Type == corev1.EventTypeNormal && e.Reason == "Accepted" {
				return true, "", nil
			}
		}
		return false, summarizeEvents(evs), nil
	})
}

// waitAccepted waits until the policy's Accepted condition has the status
// and reason, its message contains message, its observed generation is
// the policy's, and (for False) a Warning Event with the reason and the
// message is recorded on it. Cluster-scoped policies have an empty ns;
// their Events are in the default namespace.
func waitAccepted(t *testing.T, cp client.Client, cs kubernetes.Interface, kind, ns, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	obj := newPolicy(t, kind)
	eventually(t, policyCheckTimeout, describe("%s %s/%s Accepted=%s %s %q", kind, ns, name, status, reason, message), func(ctx context.Context) (bool, string, error) {
		if err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(policyConditions(obj), policyv1alpha1.PolicyConditionAccepted)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) || c.ObservedGeneration != obj.GetGeneration() {
			return false, fmt.Sprintf("condition %+v at generation %d", c, obj.GetGeneration()), nil
		}
		if status == metav1.ConditionTrue {
			return true, "", nil
		}
		evNS := ns
		if evNS == "" {
			evNS = metav1.NamespaceDefault
		}
		evs, err := eventsFor(ctx, cs, evNS, kind, name)
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, message) {
				return true, "", nil
			}
		}
		return false, "condition set; events: " + summarizeEvents(evs), nil
	})
}

func newPolicy(t *testing.T, kind string) client.Object {
	t.Helper()
	switch kind {
	case "PropagationPolicy":
		return &policyv1alpha1.PropagationPolicy{}
	case "ClusterPropagationPolicy":
		return &policyv1alpha1.ClusterPropagationPolicy{}
	case "OverridePolicy":
		return &policyv1alpha1.OverridePolicy{}
	case "ClusterOverridePolicy":
		return &policyv1alpha1.ClusterOverridePolicy{}
	}
	t.Fatalf("not a policy kind: %s", kind)
	return nil
}

func policyConditions(obj client.Object) []metav1.Condition {
	switch p := obj.(type) {
	case *policyv1alpha1.PropagationPolicy:
		return p.Status.Conditions
	case *policyv1alpha1.ClusterPropagationPolicy:
		return p.Status.Conditions
	case *policyv1alpha1.OverridePolicy:
		return p.Status.Conditions
	case *policyv1alpha1.ClusterOverridePolicy:
		return p.Status.Conditions
	}
	return nil
}

// policyEvents lists the Warning Events with reason on a namespaced policy.
func policyEvents(t *testing.T, cs kubernetes.Interface, kind, ns, name, reason string) []corev1.Event {
	t.Helper()
	evs, err := eventsFor(context.Background(), cs, ns, kind, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
