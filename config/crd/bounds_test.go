package crd

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// quantityPattern is the pattern controller-gen writes for a
// resource.Quantity (an int-or-string).
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// unboundedByDesign are the integer fields that keep the whole range of
// their format, and why. Paths are the same in every CRD that has them.
var unboundedByDesign = map[string]string{
	// The binding copies the workload's pod tolerations, which Kubernetes
	// accepts in the whole int64 range; a smaller bound would make the
	// binding of a valid Deployment unwritable. Nothing in Lifeboat
	// computes with them.
	".spec.replicaRequirements.nodeClaim.tolerations[].tolerationSeconds": "a copy of the pod template's tolerations",
}

// TestIntegerFieldsAreBounded walks every version's schema of every CRD and
// fails, naming the path, for an integer field the API server would accept
// past what the Go types decode (an int32 above 2147483647 stops every
// controller that lists the object) or without a maximum at all (an int64
// number of seconds overflows time.Duration). format: int32 needs a minimum
// and maximum inside the int32 range; int64, and integers without a format
// (Go int), need both inside the int64 range. An int-or-string must be a
// resource.Quantity (arbitrary precision: TestQuantitiesDecodeAnyNumber) or
// bounded like an int32 (intstr.IntOrString).
func TestIntegerFieldsAreBounded(t *testing.T) {
	crds, err := All()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	integers := 0
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			walkSchema(v.Schema.OpenAPIV3Schema, "", func(path string, s *apiextensionsv1.JSONSchemaProps) {
				if s.Type != "integer" && !s.XIntOrString {
					return
				}
				integers++
				if _, ok := unboundedByDesign[path]; ok {
					used[path] = true
					return
				}
				if problem := integerProblem(s); problem != "" {
					t.Errorf("%s %s: %s: %s", crd.Name, v.Name, path, problem)
				}
			})
		}
	}
	for path := range unboundedByDesign {
		if !used[path] {
			t.Errorf("unboundedByDesign lists %s, which no CRD has any more", path)
		}
	}
	if integers < 20 {
		t.Fatalf("found only %d integer fields; is the walk broken?", integers)
	}
}

// integerProblem says why s is not bounded to its format's range, or "".
func integerProblem(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XIntOrString {
		if s.Pattern == quantityPattern {
			return ""
		}
		return inRange(s, math.MinInt32, math.MaxInt32, "int-or-string (int32)")
	}
	switch s.Format {
	case "int32":
		return inRange(s, math.MinInt32, math.MaxInt32, "int32")
	case "int64", "":
		return inRange(s, math.MinInt64, math.MaxInt64, "int64")
	}
	return fmt.Sprintf("unknown integer format %q", s.Format)
}

func inRange(s *apiextensionsv1.JSONSchemaProps, lo, hi float64, format string) string {
	switch {
	case s.Maximum == nil:
		return fmt.Sprintf("%s without a maximum", format)
	case *s.Maximum > hi:
		return fmt.Sprintf("%s with maximum %.0f, above %.0f", format, *s.Maximum, hi)
	case s.Minimum == nil:
		return fmt.Sprintf("%s without a minimum", format)
	case *s.Minimum < lo:
		return fmt.Sprintf("%s with minimum %.0f, below %.0f", format, *s.Minimum, lo)
	}
	return ""
}

// walkSchema calls fn for s and every schema below it, with a path such as
// .spec.clusters[].replicas (items as [], additionalProperties as {}).
func walkSchema(s *apiextensionsv1.JSONSchemaProps, path string, fn func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	fn(path, s)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		walkSchema(&p, path+"."+name, fn)
	}
	if s.Items != nil {
		walkSchema(s.Items.Schema, path+"[]", fn)
		for i := range s.Items.JSONSchemas {
			walkSchema(&s.Items.JSONSchemas[i], path+"[]", fn)
		}
	}
	if s.AdditionalProperties != nil {
		walkSchema(s.AdditionalProperties.Schema, path+"{}", fn)
	}
}

// TestQuantitiesDecodeAnyNumber backs the exemption of resource.Quantity
// fields in TestIntegerFieldsAreBounded: any number the API server accepts
// in one decodes into the Go type.
func TestQuantitiesDecodeAnyNumber(t *testing.T) {
	for _, n := range []string{
		"99999999999999999999999999999999", "-99999999999999999999999999999999",
		"9223372036854775808", "1e300", `"9999999999999999Ei"`, `"1e-300"`,
	} {
		var r clusterv1alpha1.ResourceModelRange
		if err := json.Unmarshal([]byte(`{"name":"cpu","min":`+n+`,"max":`+n+`}`), &r); err != nil {
			t.Errorf("quantity %s: %v", n, err)
		}
	}
}
