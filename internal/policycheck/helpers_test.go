package policycheck

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

var listWatch = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}

// controlPlane is what the test control plane serves: a few built-in kinds
// of both scopes, one custom kind, and kinds that are never propagated.
func controlPlane() []*metav1.APIResourceList {
	res := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: listWatch}
	}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("configmaps", "ConfigMap", true), res("namespaces", "Namespace", false),
			res("events", "Event", true), res("services", "Service", true),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			res("deployments", "Deployment", true), res("statefulsets", "StatefulSet", true),
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{res("jobs", "Job", true)}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{res("horizontalpodautoscalers", "HorizontalPodAutoscaler", true)}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{res("clusterroles", "ClusterRole", false)}},
		{GroupVersion: "flink.apache.org/v1beta1", APIResources: []metav1.APIResource{res("flinkdeployments", "FlinkDeployment", true)}},
		{GroupVersion: "policy.karmada.io/v1alpha1", APIResources: []metav1.APIResource{res("propagationpolicies", "PropagationPolicy", true)}},
	}
}

// servedView returns a ready view of lists.
func servedView(t *testing.T, lists func() []*metav1.APIResourceList) *served.Kinds {
	t.Helper()
	k := served.New(func() ([]*metav1.APIResourceList, error) { return lists(), nil }, nil, 0)
	if err := k.EnsureReady(); err != nil {
		t.Fatal(err)
	}
	return k
}

func newChecker(t *testing.T) *Checker {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return &Checker{Kinds: servedView(t, controlPlane), Types: s}
}

// fromYAML decodes a policy written as YAML, strictly: a typo in a test's
// policy must not pass as a missing field.
func fromYAML[T any](t *testing.T, y string) *T {
	t.Helper()
	var obj T
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(y, "\t", "  ")), &obj); err != nil {
		t.Fatalf("decoding %s: %v", y, err)
	}
	return &obj
}

func pp(t *testing.T, y string) *policyv1alpha1.PropagationPolicy {
	return fromYAML[policyv1alpha1.PropagationPolicy](t, y)
}

func cpp(t *testing.T, y string) *policyv1alpha1.ClusterPropagationPolicy {
	return fromYAML[policyv1alpha1.ClusterPropagationPolicy](t, y)
}

func op(t *testing.T, y string) *policyv1alpha1.OverridePolicy {
	return fromYAML[policyv1alpha1.OverridePolicy](t, y)
}

func cop(t *testing.T, y string) *policyv1alpha1.ClusterOverridePolicy {
	return fromYAML[policyv1alpha1.ClusterOverridePolicy](t, y)
}

func rawJSON(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }
