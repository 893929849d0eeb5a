package policysim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

const ppYAML = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
%s
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [member1]
`

func TestParsePolicy(t *testing.T) {
	cases := map[string]struct {
		in            string
		wantKind      string
		wantNamespace string
		wantErr       string
	}{
		"PropagationPolicy takes the default namespace": {
			in: strings.Replace(ppYAML, "%s", "", 1), wantKind: "PropagationPolicy", wantNamespace: "fallback",
		},
		"PropagationPolicy keeps its own namespace": {
			in: strings.Replace(ppYAML, "%s", "  namespace: own", 1), wantKind: "PropagationPolicy", wantNamespace: "own",
		},
		"ClusterPropagationPolicy has no namespace": {
			in:       "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: all, namespace: x}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n",
			wantKind: "ClusterPropagationPolicy",
		},
		"JSON": {
			in:       `{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"j"},"spec":{"resourceSelectors":[{"apiVersion":"v1","kind":"ConfigMap"}]}}`,
			wantKind: "PropagationPolicy", wantNamespace: "fallback",
		},
		"comments and separators around one object": {
			in:       "# a policy\n---\n" + strings.Replace(ppYAML, "%s", "", 1) + "---\n# nothing more\n",
			wantKind: "PropagationPolicy", wantNamespace: "fallback",
		},
		"another kind is named": {
			in:      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			wantErr: `found a Deployment of apiVersion "apps/v1"`,
		},
		"another version of the group is named": {
			in:      "apiVersion: policy.karmada.io/v1beta1\nkind: PropagationPolicy\nmetadata: {name: web}\n",
			wantErr: `found a PropagationPolicy of apiVersion "policy.karmada.io/v1beta1"`,
		},
		"no kind": {
			in:      "metadata: {name: web}\n",
			wantErr: "found no apiVersion and kind",
		},
		"two objects": {
			in:      strings.Replace(ppYAML, "%s", "", 1) + "---\n" + strings.Replace(ppYAML, "%s", "", 1),
			wantErr: "found 2 objects",
		},
		"empty file": {
			in:      "# nothing\n",
			wantErr: "found no object",
		},
		"misspelt field": {
			in:      strings.Replace(strings.Replace(ppYAML, "%s", "", 1), "resourceSelectors", "resourceSelector", 1),
			wantErr: `unknown field "resourceSelector"`,
		},
		"no name": {
			in:      "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nspec: {}\n",
			wantErr: "has no metadata.name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := ParsePolicy([]byte(tc.in), "fallback")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.GetObjectKind().GroupVersionKind(); got.Kind != tc.wantKind || got.GroupVersion() != policyv1alpha1.SchemeGroupVersion {
				t.Errorf("kind = %v, want %s", got, tc.wantKind)
			}
			if obj.GetNamespace() != tc.wantNamespace {
				t.Errorf("namespace = %q, want %q", obj.GetNamespace(), tc.wantNamespace)
			}
		})
	}
}

func TestParsePolicyFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ParsePolicyFile(path, "default")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "found a ConfigMap") {
		t.Fatalf("error = %v, want one naming the file and the ConfigMap", err)
	}
	if _, err := ParsePolicyFile(filepath.Join(t.TempDir(), "missing.yaml"), "default"); err == nil {
		t.Fatal("a missing file parsed")
	}
}
