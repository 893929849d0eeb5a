package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/simulate/policysim"
)

// The policy file's namespace comes from -n, else the context; every output
// format carries the same prediction.
func TestRunSimulatePolicy(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(schedtesting.MakeCluster("member1").Obj(), web).Build()
	dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}}},
	}}}}
	cp := &controlPlane{client: c, discovery: dc, namespace: "context-ns"}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(namespace, output string) (string, error) {
		var out strings.Builder
		err := runSimulatePolicy(context.Background(), &out, cp, file, namespace, output)
		return out.String(), err
	}

	for output, decode := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) }} {
		out, err := run("shop", output)
		if err != nil {
			t.Fatalf("%s: %v", output, err)
		}
		var pred policysim.Prediction
		if err := decode([]byte(out), &pred); err != nil {
			t.Fatalf("%s: decoding %q: %v", output, out, err)
		}
		if len(pred.Templates) != 1 || pred.Templates[0].Outcome != policysim.OutcomeScheduled ||
			len(pred.Templates[0].Clusters) != 1 || pred.Templates[0].Clusters[0] != (policysim.ClusterReplicas{Name: "member1", Replicas: 2}) {
			t.Errorf("%s: prediction %+v", output, pred)
		}
	}
	out, err := run("shop", "")
	if err != nil || !strings.Contains(out, "web-deployment") || !strings.Contains(out, "Scheduled") || !strings.Contains(out, "member1:2") {
		t.Errorf("table: err %v, output:\n%s", err, out)
	}
	out, err = run("", "table")
	if err != nil || !strings.Contains(out, "PropagationPolicy context-ns/web") || !strings.Contains(out, "No resource template is selected.") {
		t.Errorf("without -n the context's namespace is used: err %v, output:\n%s", err, out)
	}
	if _, err := run("shop", "wide"); err == nil || !strings.Contains(err.Error(), `unknown output format "wide"`) {
		t.Errorf("output wide: err %v", err)
	}
}
