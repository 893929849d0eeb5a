package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// schemaFixture holds a label selector, a condition, cluster and pod
// tolerations and cluster taints, shaped as controller-gen writes them.
const schemaFixture = `
type: object
properties:
  selector:
    type: object
    x-kubernetes-map-type: atomic
    properties:
      matchLabels: {type: object, additionalProperties: {type: string}}
      matchExpressions:
        type: array
        items:
          type: object
          required: [key, operator]
          properties:
            key: {type: string}
            operator: {type: string}
            values: {type: array, items: {type: string}}
  conditions:
    type: array
    items:
      type: object
      properties:
        lastTransitionTime: {type: string}
        message: {type: string}
        observedGeneration: {type: integer, format: int64, minimum: 0}
        reason: {type: string}
        status: {type: string}
        type: {type: string}
  clusterTolerations: {type: array, items: ` + tolerationSchema + `}
  tolerations: {type: array, items: ` + tolerationSchema + `}
  taints:
    type: array
    items:
      type: object
      properties:
        effect: {type: string}
        key: {type: string}
        timeAdded: {type: string}
        value: {type: string}
`

const tolerationSchema = `{type: object, properties: {effect: {type: string}, key: {type: string}, operator: {type: string}, tolerationSeconds: {type: integer, format: int64}, value: {type: string}}}`

func loadFixture(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := sigsyaml.UnmarshalStrict([]byte(schemaFixture), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPatchSchema(t *testing.T) {
	s := loadFixture(t)
	patchSchema(s)

	sel := s.Properties["selector"]
	if got := len(sel.Properties["matchLabels"].XValidations); got != 1 {
		t.Errorf("matchLabels has %d rules, want 1 (keys)", got)
	}
	if got := sel.Properties["matchLabels"].AdditionalProperties.Schema.Pattern; got != labelValuePattern {
		t.Errorf("matchLabels values pattern = %q", got)
	}
	req := sel.Properties["matchExpressions"].Items.Schema
	if got := len(req.Properties["operator"].Enum); got != 4 {
		t.Errorf("operator enum has %d values, want 4", got)
	}
	if got := len(req.XValidations); got != 2 {
		t.Errorf("requirement has %d rules, want 2 (values required, values forbidden)", got)
	}

	if m := s.Properties["conditions"].Items.Schema.Properties["observedGeneration"].Maximum; m == nil || *m != maxGeneration {
		t.Errorf("observedGeneration maximum = %v, want %d", m, int64(maxGeneration))
	}

	secs := s.Properties["clusterTolerations"].Items.Schema.Properties["tolerationSeconds"]
	if secs.Minimum == nil || *secs.Minimum != 0 || secs.Maximum == nil || *secs.Maximum != maxSeconds {
		t.Errorf("clusterTolerations tolerationSeconds bounds = [%v, %v], want [0, %d]", secs.Minimum, secs.Maximum, maxSeconds)
	}
	// Pod tolerations keep Kubernetes' own range and rules.
	if pod := s.Properties["tolerations"].Items.Schema; pod.Properties["tolerationSeconds"].Maximum != nil || pod.Properties["value"].Pattern != "" {
		t.Error("pod tolerations got the bounds of cluster tolerations")
	}

	taint := s.Properties["taints"].Items.Schema
	if taint.Properties["key"].MaxLength == nil || taint.Properties["value"].Pattern != labelValuePattern {
		t.Error("taint key and value not bounded")
	}
}

func TestPatchSchemaTwiceChangesNothing(t *testing.T) {
	once := loadFixture(t)
	patchSchema(once)
	twice := once.DeepCopy()
	patchSchema(twice)
	if diff := cmp.Diff(once, twice); diff != "" {
		t.Errorf("second patch changed the schema (-once +twice):\n%s", diff)
	}
}

// TestPatchFileKeepsGeneratedFiles: the committed CRDs are already patched,
// so patching them again writes nothing.
func TestPatchFileKeepsGeneratedFiles(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		copyPath := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(copyPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := patchFile(copyPath); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(copyPath)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(data), string(got)); diff != "" {
			t.Errorf("%s changed (-committed +patched):\n%s", filepath.Base(f), diff)
		}
	}
}
