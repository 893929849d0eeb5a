package overrides

import (
	"errors"
	"fmt"
	"strings"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// What can be known about an overrider without the object it applies to.
// Apply runs these same checks, so an overrider they reject is one that
// would fail every render; the policy checker (internal/policycheck) runs
// them when a policy is applied, to report the problem on the policy.

// CheckPointer reports whether p is a JSON pointer (RFC 6901): empty (the
// whole document) or starting with "/".
func CheckPointer(p string) error {
	if p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q is not a JSON pointer: it must start with /", p)
	}
	return nil
}

// checkFieldPointer is CheckPointer for a pointer that must name a field
// (a string to rewrite), which the whole document never is.
func checkFieldPointer(p string) error {
	if p == "" {
		return errors.New("path is empty: it must name a field, such as /spec/template/spec/containers/0/image")
	}
	return CheckPointer(p)
}

// CheckPlaintext reports why a plaintext overrider cannot apply to any
// object: a path that is not a JSON pointer, a missing value for add or
// replace, an unknown operator.
func CheckPlaintext(p *policyv1alpha1.PlaintextOverrider) error {
	_, err := plaintextOps(p)
	return err
}

// CheckImage reports why an imageOverrider cannot apply to any object: a
// missing value for add or replace, a predicate path that cannot name a
// field.
func CheckImage(o *policyv1alpha1.ImageOverrider) error {
	if o.Operator != policyv1alpha1.OverriderOpRemove && o.Value == "" {
		return fmt.Errorf("imageOverrider %s %s: value is required", o.Component, o.Operator)
	}
	if o.Predicate != nil {
		if err := checkFieldPointer(o.Predicate.Path); err != nil {
			return fmt.Errorf("imageOverrider predicate: %w", err)
		}
	}
	return nil
}

// CheckField reports why a fieldOverrider cannot apply to any object: not
// exactly one of json and yaml, a fieldPath that cannot name a field, a
// sub-operation that cannot be built.
func CheckField(o *policyv1alpha1.FieldOverrider) error {
	_, err := fieldSubOps(o)
	return err
}
