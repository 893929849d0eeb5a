// Package api_test checks the Go API types against the YAML fixtures the
// end-to-end tests apply to a real API server: every valid fixture must
// decode strictly (no unknown or duplicate fields) into the typed objects,
// so the Go types and the CRD schemas agree on the JSON field names.
package api_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestValidFixturesDecodeStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1alpha1.AddToScheme,
		clusterv1alpha1.AddToScheme,
		configv1alpha1.AddToScheme,
		policyv1alpha1.AddToScheme,
		workv1alpha1.AddToScheme,
		workv1alpha2.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	decoder := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})

	files, err := filepath.Glob("../test/e2e/testdata/api/valid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures found")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			obj, gvk, err := decoder.Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			if _, ok := obj.(runtime.Unstructured); ok {
				t.Fatalf("%s decoded as unstructured; its kind is not registered", gvk)
			}
			// Round trip: the deepcopy must be equal to the original.
			if !equalJSON(t, decoder, obj, obj.DeepCopyObject()) {
				t.Errorf("deep copy of %s differs from the original", gvk)
			}
		})
	}
}

func equalJSON(t *testing.T, s runtime.Encoder, a, b runtime.Object) bool {
	t.Helper()
	ja, err := runtime.Encode(s, a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := runtime.Encode(s, b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
