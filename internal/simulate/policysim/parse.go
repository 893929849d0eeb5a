package policysim

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/yamlfile"
)

// ParsePolicyFile reads the one PropagationPolicy or
// ClusterPropagationPolicy in the YAML or JSON file at path. A
// PropagationPolicy without a namespace gets defaultNamespace.
func ParsePolicyFile(path, defaultNamespace string) (client.Object, error) {
	doc, err := yamlfile.ReadOne(path, wantPolicy)
	if err != nil {
		return nil, fmt.Errorf("reading policy file: %w", err)
	}
	obj, err := ParsePolicy(doc, defaultNamespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// wantPolicy names what a policy file must hold.
const wantPolicy = "one PropagationPolicy or ClusterPropagationPolicy"

// ParsePolicy decodes the one policy object in raw (YAML or JSON): a
// policy.karmada.io/v1alpha1 PropagationPolicy or ClusterPropagationPolicy.
// Unknown fields are an error, so that a misspelt field is not silently
// dropped from the prediction. A PropagationPolicy without a namespace
// gets defaultNamespace; a ClusterPropagationPolicy's namespace is cleared.
func ParsePolicy(raw []byte, defaultNamespace string) (client.Object, error) {
	doc, err := yamlfile.One(raw, wantPolicy)
	if err != nil {
		return nil, err
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	var obj client.Object
	switch {
	case gvk == policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy"):
		obj = &policyv1alpha1.PropagationPolicy{}
	case gvk == policyv1alpha1.SchemeGroupVersion.WithKind("ClusterPropagationPolicy"):
		obj = &policyv1alpha1.ClusterPropagationPolicy{}
	case tm.Kind == "" && tm.APIVersion == "":
		return nil, errors.New("found no apiVersion and kind; want a policy.karmada.io/v1alpha1 PropagationPolicy or ClusterPropagationPolicy")
	default:
		return nil, fmt.Errorf("found a %s of apiVersion %q; want a policy.karmada.io/v1alpha1 PropagationPolicy or ClusterPropagationPolicy", orNone(tm.Kind), tm.APIVersion)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", gvk.Kind, err)
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("the %s has no metadata.name", gvk.Kind)
	}
	switch {
	case gvk.Kind == "ClusterPropagationPolicy":
		obj.SetNamespace("")
	case obj.GetNamespace() == "":
		obj.SetNamespace(defaultNamespace)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

func orNone(kind string) string {
	if kind == "" {
		return "object without kind"
	}
	return kind
}
