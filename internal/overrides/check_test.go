package overrides

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// TestCheckAgreesWithApply: what the Check functions reject fails every
// render with the same message, and what they accept is not rejected for
// its own sake (a render can still fail on the object, e.g. a replace of a
// missing path).
func TestCheckAgreesWithApply(t *testing.T) {
	cases := map[string]struct {
		overriders string // YAML of policyv1alpha1.Overriders, one entry
		wantErr    string // "" when Check must accept it
	}{
		"plaintext replace":              {overriders: `{plaintext: [{path: /spec/replicas, operator: replace, value: 3}]}`},
		"plaintext remove without value": {overriders: `{plaintext: [{path: /metadata/labels/app, operator: remove}]}`},
		"plaintext path without slash": {
			overriders: `{plaintext: [{path: spec/replicas, operator: replace, value: 3}]}`,
			wantErr:    `path "spec/replicas" is not a JSON pointer: it must start with /`,
		},
		"plaintext add without value": {
			overriders: `{plaintext: [{path: /spec/paused, operator: add}]}`,
			wantErr:    `add "/spec/paused": value is required`,
		},
		"image without predicate":    {overriders: `{imageOverrider: [{component: Tag, operator: replace, value: v2}]}`},
		"image remove without value": {overriders: `{imageOverrider: [{component: Tag, operator: remove}]}`},
		"image replace without value": {
			overriders: `{imageOverrider: [{component: Registry, operator: replace}]}`,
			wantErr:    "imageOverrider Registry replace: value is required",
		},
		"image predicate without slash": {
			overriders: `{imageOverrider: [{predicate: {path: spec/template/spec/containers/0/image}, component: Tag, operator: replace, value: v2}]}`,
			wantErr:    `imageOverrider predicate: path "spec/template/spec/containers/0/image" is not a JSON pointer`,
		},
		"image predicate empty": {
			overriders: `{imageOverrider: [{predicate: {path: ""}, component: Tag, operator: replace, value: v2}]}`,
			wantErr:    "imageOverrider predicate: path is empty",
		},
		"field overrider": {overriders: `{fieldOverrider: [{fieldPath: /metadata/annotations/conf, json: [{subPath: /a, operator: add, value: 1}]}]}`},
		"field path without slash": {
			overriders: `{fieldOverrider: [{fieldPath: metadata/annotations/conf, json: [{subPath: /a, operator: add, value: 1}]}]}`,
			wantErr:    `fieldOverrider: path "metadata/annotations/conf" is not a JSON pointer`,
		},
		"field sub-path without slash": {
			overriders: `{fieldOverrider: [{fieldPath: /metadata/annotations/conf, yaml: [{subPath: server/port, operator: replace, value: 1}]}]}`,
			wantErr:    `fieldOverrider "/metadata/annotations/conf": path "server/port" is not a JSON pointer`,
		},
		"field sub-operation without value": {
			overriders: `{fieldOverrider: [{fieldPath: /metadata/annotations/conf, json: [{subPath: /a, operator: replace}]}]}`,
			wantErr:    `fieldOverrider "/metadata/annotations/conf": replace "/a": value is required`,
		},
		"field with both json and yaml": {
			overriders: `{fieldOverrider: [{fieldPath: /metadata/annotations/conf, json: [{subPath: /a, operator: remove}], yaml: [{subPath: /a, operator: remove}]}]}`,
			wantErr:    "exactly one of json and yaml is required",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o policyv1alpha1.Overriders
			if err := yaml.UnmarshalStrict([]byte(tc.overriders), &o); err != nil {
				t.Fatal(err)
			}
			checkErr := checkOne(&o)
			// The object has every field the accepted cases touch, so
			// that only the overrider itself can make Apply fail.
			u := obj(t, deploymentYAML)
			u.SetAnnotations(map[string]string{"conf": `{"a":0}`})
			applyErr := applyOverriders(u, &o)
			if tc.wantErr == "" {
				if checkErr != nil || applyErr != nil {
					t.Fatalf("check: %v, apply: %v; want both to accept", checkErr, applyErr)
				}
				return
			}
			if checkErr == nil || !strings.Contains(checkErr.Error(), tc.wantErr) {
				t.Errorf("check: %v, want an error containing %q", checkErr, tc.wantErr)
			}
			if applyErr == nil || !strings.Contains(applyErr.Error(), tc.wantErr) {
				t.Errorf("apply: %v, want the same error", applyErr)
			}
		})
	}
}

// checkOne runs the Check function of the single entry of o.
func checkOne(o *policyv1alpha1.Overriders) error {
	switch {
	case len(o.Plaintext) == 1:
		return CheckPlaintext(&o.Plaintext[0])
	case len(o.ImageOverrider) == 1:
		return CheckImage(&o.ImageOverrider[0])
	case len(o.FieldOverrider) == 1:
		return CheckField(&o.FieldOverrider[0])
	}
	panic("checkOne: want exactly one plaintext, image or field overrider")
}
