package crd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// This file runs the API server's own code (k8s.io/apiextensions-apiserver,
// the version of the local environment's kube-apiserver) on the CRDs and on
// objects, so that schema and CEL validation are checked in unit tests: a
// CRD the API server would refuse (a rule that does not compile or exceeds
// the CEL cost budget), or an object it would accept or refuse against
// expectations, fails here in seconds.

// validateCRD returns the errors the API server gives when the CRD is
// created.
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) (field.ErrorList, error) {
	var in apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &in, nil); err != nil {
		return nil, fmt.Errorf("converting %s: %w", crd.Name, err)
	}
	// Status is the API server's to fill in; a new CRD stores its storage
	// version.
	for _, v := range in.Spec.Versions {
		if v.Storage {
			in.Status.StoredVersions = []string{v.Name}
		}
	}
	return crdvalidation.ValidateCustomResourceDefinition(context.Background(), &in), nil
}

// objectValidator validates objects of one version of one CRD as the API
// server does on create: defaults, then pruning (unknown fields are errors,
// as with kubectl's default strict field validation), the OpenAPI schema,
// list-type invariants and, when none of those found a blocking error, the
// CEL rules.
type objectValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func newObjectValidator(v apiextensionsv1.CustomResourceDefinitionVersion) (*objectValidator, error) {
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("structural schema: %w", err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	return &objectValidator{
		structural: structural,
		schema:     sv,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// validate defaults obj in place and returns every error the API server
// would report for it.
func (v *objectValidator) validate(obj map[string]any) field.ErrorList {
	structuraldefaulting.Default(obj, v.structural)
	var errs field.ErrorList
	for _, path := range structuralpruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, field.Invalid(nil, path, "unknown field"))
	}
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, v.schema)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, celSkipped))
	}
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// celSkipped notes, as the API server does, that CEL rules did not run.
const celSkipped = "some validation rules were not checked because the object was invalid"

// withoutCELSkipped drops the celSkipped note.
func withoutCELSkipped(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if e.Detail != celSkipped {
			out = append(out, e)
		}
	}
	return out
}

// blocking mirrors the API server: these errors stop CEL validation.
func blocking(errs field.ErrorList) bool {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// validators holds an objectValidator per served group, version and kind.
type validators map[schema.GroupVersionKind]*objectValidator

func loadValidators(t *testing.T) validators {
	t.Helper()
	vs, err := compiledValidators()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// compiledValidators compiles the schemas and CEL rules once for all tests.
var compiledValidators = sync.OnceValues(func() (validators, error) {
	crds, err := All()
	if err != nil {
		return nil, err
	}
	out := validators{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			ov, err := newObjectValidator(v)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = ov
		}
	}
	return out, nil
})

// validate returns the errors for obj, or ok false when obj is not of one
// of Lifeboat's kinds.
func (vs validators) validate(obj map[string]any) (errs field.ErrorList, ok bool) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	v, ok := vs[gv.WithKind(kind)]
	if !ok {
		return nil, false
	}
	return v.validate(obj), true
}

func errorText(errs field.ErrorList) string {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}
