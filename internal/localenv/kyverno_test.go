package localenv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/examples"
)

func TestKyvernoCRDsReadsEveryManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crd := func(name string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\n"
	}
	// As in Kyverno's config/crds: a folder per group, files starting with "---".
	write("kyverno/kyverno.io_clusterpolicies.yaml", "---\n"+crd("clusterpolicies.kyverno.io"))
	write("reports/two.yaml", crd("a.reports.kyverno.io")+"---\n"+crd("b.reports.kyverno.io")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-a-crd\n")
	write("README.md", "not a manifest")

	crds, err := kyvernoCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, ","), "clusterpolicies.kyverno.io,a.reports.kyverno.io,b.reports.kyverno.io"; got != want {
		t.Errorf("CRDs = %s, want %s", got, want)
	}
	if _, err := kyvernoCRDs(t.TempDir()); err == nil {
		t.Error("an empty folder gave no error")
	}
}

// The shipped policy is what `up --with-kyverno` installs: a ClusterPolicy
// that matches FlinkDeployments carrying the failover label on CREATE and
// UPDATE.
func TestShippedFlinkClusterPolicy(t *testing.T) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(examples.FlinkKyvernoClusterPolicy, &obj.Object); err != nil {
		t.Fatal(err)
	}
	if obj.GetAPIVersion() != "kyverno.io/v1" || obj.GetKind() != "ClusterPolicy" || obj.GetName() != "flink-restore-after-failover" {
		t.Fatalf("got %s %s %s", obj.GetAPIVersion(), obj.GetKind(), obj.GetName())
	}
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("%d rules, want 1", len(rules))
	}
	matches, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "match", "any")
	res := matches[0].(map[string]any)["resources"].(map[string]any)
	ops, _, _ := unstructured.NestedStringSlice(res, "operations")
	if strings.Join(ops, ",") != "CREATE,UPDATE" {
		t.Errorf("operations %v, want CREATE,UPDATE", ops)
	}
	if kinds, _, _ := unstructured.NestedStringSlice(res, "kinds"); len(kinds) != 1 || kinds[0] != "flink.apache.org/v1beta1/FlinkDeployment" {
		t.Errorf("kinds %v", kinds)
	}
}

func TestPolicyReady(t *testing.T) {
	for name, tc := range map[string]struct {
		status map[string]any
		want   bool
	}{
		"no status":  {nil, false},
		"ready":      {map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded"}}}, true},
		"not ready":  {map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Failed", "message": "webhook"}}}, false},
		"other only": {map[string]any{"conditions": []any{map[string]any{"type": "Other", "status": "True"}}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			p := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.status != nil {
				p.Object["status"] = tc.status
			}
			if got, why := policyReady(p); got != tc.want {
				t.Errorf("policyReady = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestWebhooksName(t *testing.T) {
	hooks := []admissionregistrationv1.MutatingWebhook{{Rules: []admissionregistrationv1.RuleWithOperations{{
		Rule: admissionregistrationv1.Rule{Resources: []string{"deployments", "flinkdeployments/status"}},
	}}}}
	if !webhooksName(hooks, "flinkdeployments") || !webhooksName(hooks, "deployments") {
		t.Error("named resources not found")
	}
	if webhooksName(hooks, "pods") || webhooksName(nil, "flinkdeployments") {
		t.Error("found a resource that is not named")
	}
}

// A restarted component gets its recorded environment again (Kyverno
// refuses to start without its variables).
func TestRestartKeepsEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	healthy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer healthy.Close()
	out := filepath.Join(dir, "seen")
	s := &State{Dir: dir, Components: []Component{{
		Name:   "envtest",
		Binary: "/bin/sh",
		Args:   []string{"-c", `echo "$LIFEBOAT_TEST_VAR" > ` + out + `; exec sleep 30`},
		Env:    []string{"LIFEBOAT_TEST_VAR=from-the-record"},
		Log:    filepath.Join(dir, "logs", "envtest.log"),
		Health: healthy.URL,
	}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := StartComponent(ctx, dir, "envtest"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = StopComponent(dir, "envtest") })
	var got []byte
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, _ = os.ReadFile(out)
		return len(got) > 0, nil
	})
	if strings.TrimSpace(string(got)) != "from-the-record" {
		t.Errorf("the restarted process saw LIFEBOAT_TEST_VAR=%q", got)
	}
}

func TestHasKyverno(t *testing.T) {
	s := &State{Clusters: []ClusterInfo{{Name: ControlPlaneName}, {Name: "member1", Member: true}}}
	if s.HasKyverno() {
		t.Error("an environment without Kyverno has it")
	}
	s.Components = append(s.Components, Component{Name: KyvernoComponent("member1"), Cluster: "member1"})
	if !s.HasKyverno() {
		t.Error("member1-kyverno not seen")
	}
}
