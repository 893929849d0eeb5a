package main

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The schemas of Kubernetes types embedded in Lifeboat's API get, wherever
// they appear (found by their shape, so a new field of one of these types is
// covered without touching this file):
//
//  1. metav1.LabelSelector: Kubernetes' label selector rules. matchLabels
//     keys are label keys and values label values; matchExpressions keys are
//     label keys, the operator is In, NotIn, Exists or DoesNotExist, In and
//     NotIn need values, Exists and DoesNotExist take none, and every value
//     is a label value. The numbers of labels and expressions are bounded
//     (selectorMax*) so that the key rules fit the API server's CEL cost
//     budget.
//  2. metav1.Condition: observedGeneration at most maxGeneration.
//  3. corev1.Toleration under a clusterTolerations field: tolerationSeconds
//     from 0 to maxSeconds, a key no longer than a label key (which bounds
//     the cost of the rules on the field: markers on
//     Placement.ClusterTolerations), a value that is a label value.
//  4. corev1.Taint under a taints field: the same for key and value
//     (markers on ClusterSpec.Taints).
//  5. The values of the labelsOverrider[].value maps are label values
//     (controller-gen has no marker for the values of a map).
//
// Label values are checked with a pattern, which costs nothing in the CEL
// budget; label keys with CEL's format.qualifiedName(), because a pattern
// cannot bound the length of the key's prefix.
//
// Integer fields of Lifeboat's own types are bounded by markers next to the
// fields; config/crd's tests fail on any integer field left unbounded.

// The numbers also appear in the markers of Lifeboat's own types and in
// README.md, docs/failover.md and docs/cluster-failover.md.
const (
	// maxSeconds bounds every duration in seconds: the int32 range, about 68
	// years.
	maxSeconds = 2147483647
	// maxGeneration bounds observed generations: the largest integer every
	// JSON client represents exactly (2^53-1).
	maxGeneration = 9007199254740991

	// labelKeyMaxLength is the longest label key: a 253-character DNS
	// subdomain prefix, '/', and a 63-character name.
	labelKeyMaxLength = 317
	// labelValueMaxLength is the longest label value.
	labelValueMaxLength = 63
	// labelValuePattern is Kubernetes' label value format
	// (validation.IsValidLabelValue); the length comes from maxLength.
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`

	// Sizes of a label selector. Every selector of a list (up to 256
	// resourceSelectors) counts for the CEL cost budget of the CRD, which
	// these keep within the limits.
	selectorMaxLabels      = 32
	selectorMaxExpressions = 8
)

// labelKeyRule checks a label key: an optional DNS subdomain prefix and '/',
// then a qualified name. The format library is in the CEL environment of CRD
// validation rules since Kubernetes 1.32.
const (
	labelKeyRule = "!format.qualifiedName().validate(self).hasValue()"
	labelKeyHelp = "an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric"
)

// selectorOperators are the operators of a label selector requirement.
var selectorOperators = []string{"In", "NotIn", "Exists", "DoesNotExist"}

// patchSchema applies the additions to s and every schema below it.
func patchSchema(s *apiextensionsv1.JSONSchemaProps) {
	walk(s, func(name string, s *apiextensionsv1.JSONSchemaProps) {
		switch {
		case isLabelSelector(s):
			patchLabelSelector(s)
		case isCondition(s):
			s.Properties["observedGeneration"] = withMaximum(s.Properties["observedGeneration"], maxGeneration)
		case name == "clusterTolerations" && s.Items != nil && isToleration(s.Items.Schema):
			patchToleration(s.Items.Schema)
		case name == "labelsOverrider" && s.Items != nil && isLabelsOverrider(s.Items.Schema):
			value := s.Items.Schema.Properties["value"]
			value.AdditionalProperties.Schema = ptr(labelValue(*value.AdditionalProperties.Schema))
			s.Items.Schema.Properties["value"] = value
		case name == "taints" && s.Items != nil && isTaint(s.Items.Schema):
			t := s.Items.Schema
			t.Properties["key"] = withMaxLength(t.Properties["key"], labelKeyMaxLength)
			t.Properties["value"] = labelValue(t.Properties["value"])
		}
	})
}

// walk calls fn for s and every schema below it: properties (with their
// names), items and additionalProperties (with an empty name).
func walk(s *apiextensionsv1.JSONSchemaProps, fn func(name string, s *apiextensionsv1.JSONSchemaProps)) {
	var visit func(name string, s *apiextensionsv1.JSONSchemaProps)
	visit = func(name string, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		fn(name, s)
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			p := s.Properties[n]
			visit(n, &p)
			s.Properties[n] = p
		}
		if s.Items != nil {
			visit("", s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			visit("", s.AdditionalProperties.Schema)
		}
	}
	visit("", s)
}

// hasProperties reports whether s is an object with exactly these
// properties.
func hasProperties(s *apiextensionsv1.JSONSchemaProps, names ...string) bool {
	if s == nil || s.Type != "object" || len(s.Properties) != len(names) {
		return false
	}
	for _, n := range names {
		if _, ok := s.Properties[n]; !ok {
			return false
		}
	}
	return true
}

func isLabelSelector(s *apiextensionsv1.JSONSchemaProps) bool {
	if !hasProperties(s, "matchExpressions", "matchLabels") {
		return false
	}
	exprs := s.Properties["matchExpressions"]
	return exprs.Items != nil && hasProperties(exprs.Items.Schema, "key", "operator", "values")
}

func isCondition(s *apiextensionsv1.JSONSchemaProps) bool {
	return hasProperties(s, "lastTransitionTime", "message", "observedGeneration", "reason", "status", "type")
}

func isToleration(s *apiextensionsv1.JSONSchemaProps) bool {
	return hasProperties(s, "effect", "key", "operator", "tolerationSeconds", "value")
}

func isLabelsOverrider(s *apiextensionsv1.JSONSchemaProps) bool {
	if !hasProperties(s, "operator", "value") {
		return false
	}
	v := s.Properties["value"]
	return v.AdditionalProperties != nil && v.AdditionalProperties.Schema != nil && v.AdditionalProperties.Schema.Type == "string"
}

func isTaint(s *apiextensionsv1.JSONSchemaProps) bool {
	return hasProperties(s, "effect", "key", "timeAdded", "value")
}

// patchLabelSelector adds rule 1 to a metav1.LabelSelector schema. Rules
// sit on the field they check, so the API server's error names it, e.g.
// spec.resourceSelectors[0].labelSelector.matchExpressions[1].operator.
func patchLabelSelector(s *apiextensionsv1.JSONSchemaProps) {
	labels := s.Properties["matchLabels"]
	labels.MaxProperties = ptr(int64(selectorMaxLabels))
	addRule(&labels, apiextensionsv1.ValidationRule{
		Rule:    "self.all(k, !format.qualifiedName().validate(k).hasValue())",
		Message: "labelSelector.matchLabels keys must be valid label keys: " + labelKeyHelp,
	})
	labels.AdditionalProperties.Schema = ptr(labelValue(*labels.AdditionalProperties.Schema))
	s.Properties["matchLabels"] = labels

	exprs := s.Properties["matchExpressions"]
	exprs.MaxItems = ptr(int64(selectorMaxExpressions))
	req := exprs.Items.Schema

	key := withMaxLength(req.Properties["key"], labelKeyMaxLength)
	addRule(&key, apiextensionsv1.ValidationRule{
		Rule:    labelKeyRule,
		Message: "labelSelector.matchExpressions[].key must be a valid label key: " + labelKeyHelp,
	})
	req.Properties["key"] = key

	op := req.Properties["operator"]
	op.Enum = nil
	for _, o := range selectorOperators {
		op.Enum = append(op.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + o + `"`)})
	}
	req.Properties["operator"] = op

	values := req.Properties["values"]
	values.Items.Schema = ptr(labelValue(*values.Items.Schema))
	req.Properties["values"] = values

	addRule(req, apiextensionsv1.ValidationRule{
		Rule:      "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
		Message:   "labelSelector.matchExpressions[].values must not be empty when the operator is In or NotIn",
		FieldPath: ".values",
		Reason:    ptr(apiextensionsv1.FieldValueRequired),
	})
	addRule(req, apiextensionsv1.ValidationRule{
		Rule:      "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
		Message:   "labelSelector.matchExpressions[].values must be empty when the operator is Exists or DoesNotExist",
		FieldPath: ".values",
		Reason:    ptr(apiextensionsv1.FieldValueForbidden),
	})
	s.Properties["matchExpressions"] = exprs
}

// patchToleration adds rule 3 to the items of a clusterTolerations field.
func patchToleration(t *apiextensionsv1.JSONSchemaProps) {
	t.Properties["key"] = withMaxLength(t.Properties["key"], labelKeyMaxLength)
	t.Properties["value"] = labelValue(t.Properties["value"])
	secs := t.Properties["tolerationSeconds"]
	secs.Minimum = ptr(0.0)
	t.Properties["tolerationSeconds"] = withMaximum(secs, maxSeconds)
}

// labelValue bounds a string schema to label values.
func labelValue(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s.MaxLength = ptr(int64(labelValueMaxLength))
	s.Pattern = labelValuePattern
	return s
}

func withMaxLength(s apiextensionsv1.JSONSchemaProps, n int64) apiextensionsv1.JSONSchemaProps {
	s.MaxLength = ptr(n)
	return s
}

func withMaximum(s apiextensionsv1.JSONSchemaProps, n float64) apiextensionsv1.JSONSchemaProps {
	s.Maximum = ptr(n)
	return s
}

// addRule appends r unless s already has a rule with the same expression,
// so patching a patched schema changes nothing.
func addRule(s *apiextensionsv1.JSONSchemaProps, r apiextensionsv1.ValidationRule) {
	for _, have := range s.XValidations {
		if have.Rule == r.Rule {
			return
		}
	}
	s.XValidations = append(s.XValidations, r)
}

func ptr[T any](v T) *T { return &v }
