package policycheck

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/overrides"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

// Problem is one part of a policy that cannot work as written.
type Problem struct {
	// Reason is one of policyv1alpha1's PolicyReason* reasons.
	Reason string
	// Field is the path of the field, e.g. "spec.resourceSelectors[1]".
	Field string
	// Message says what is wrong, for users.
	Message string
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// Kinds is what the checks ask about served kinds (*served.Kinds).
type Kinds interface {
	Lookup(gvk schema.GroupVersionKind) (served.Kind, bool)
	VersionsOf(gk schema.GroupKind) []string
}

// Types makes an empty object of a built-in kind (*runtime.Scheme); its Go
// type says what type each field's value must have.
type Types interface {
	New(gvk schema.GroupVersionKind) (runtime.Object, error)
}

// Checker checks policies against what only the control plane knows: the
// kinds it serves and their scope, the parsing of the failover code, the
// overriders' rules and the types of built-in kinds. Its methods are pure
// functions of the policy and of those two views.
type Checker struct {
	Kinds Kinds
	Types Types
}

// PropagationPolicy returns the problems of pp, in field order.
func (c *Checker) PropagationPolicy(pp *policyv1alpha1.PropagationPolicy) []Problem {
	return c.propagation(&pp.Spec, pp.Namespace, "PropagationPolicy")
}

// ClusterPropagationPolicy returns the problems of cpp, in field order.
func (c *Checker) ClusterPropagationPolicy(cpp *policyv1alpha1.ClusterPropagationPolicy) []Problem {
	return c.propagation(&cpp.Spec, "", "ClusterPropagationPolicy")
}

// OverridePolicy returns the problems of op, in field order.
func (c *Checker) OverridePolicy(op *policyv1alpha1.OverridePolicy) []Problem {
	return c.override(&op.Spec, op.Namespace, "OverridePolicy")
}

// ClusterOverridePolicy returns the problems of cop, in field order.
func (c *Checker) ClusterOverridePolicy(cop *policyv1alpha1.ClusterOverridePolicy) []Problem {
	return c.override(&cop.Spec, "", "ClusterOverridePolicy")
}

// propagation checks a propagation spec: the policy's own namespace, each
// resource selector, each statePreservation jsonPath.
func (c *Checker) propagation(spec *policyv1alpha1.PropagationSpec, namespace, kind string) []Problem {
	out := namespaceProblems(namespace)
	for i := range spec.ResourceSelectors {
		out = append(out, c.selector(fmt.Sprintf("spec.resourceSelectors[%d]", i), &spec.ResourceSelectors[i], namespace, kind)...)
	}
	if f := spec.Failover; f != nil {
		if f.Application != nil {
			out = append(out, statePathProblems("spec.failover.application.statePreservation", f.Application.StatePreservation)...)
		}
		if f.Cluster != nil {
			out = append(out, statePathProblems("spec.failover.cluster.statePreservation", f.Cluster.StatePreservation)...)
		}
	}
	return out
}

// override checks an override spec: the policy's own namespace, each
// resource selector, each overrider of the rules that apply (overrideRules,
// or the deprecated top-level overriders when there are none, as
// internal/overrides applies them).
func (c *Checker) override(spec *policyv1alpha1.OverrideSpec, namespace, kind string) []Problem {
	out := namespaceProblems(namespace)
	for i := range spec.ResourceSelectors {
		out = append(out, c.selector(fmt.Sprintf("spec.resourceSelectors[%d]", i), &spec.ResourceSelectors[i], namespace, kind)...)
	}
	targets := c.typedTargets(spec.ResourceSelectors)
	if len(spec.OverrideRules) > 0 {
		for i := range spec.OverrideRules {
			out = append(out, overriderProblems(fmt.Sprintf("spec.overrideRules[%d].overriders", i), &spec.OverrideRules[i].Overriders, targets)...)
		}
	} else {
		out = append(out, overriderProblems("spec.overriders", &spec.Overriders, targets)...)
	}
	return out
}

// namespaceProblems reports a namespaced policy living in a namespace
// whose objects are never propagated.
func namespaceProblems(namespace string) []Problem {
	if namespace != "" && detector.IsSkippedNamespace(namespace) {
		return []Problem{{Reason: policyv1alpha1.PolicyReasonNotPropagated, Field: "metadata.namespace",
			Message: fmt.Sprintf("objects in namespace %s are never propagated, so this policy never applies", namespace)}}
	}
	return nil
}

// selector checks one resource selector of a policy of the given kind;
// policyNamespace is empty for the cluster-wide kinds.
//
//  1. The apiVersion must be a group/version.
//  2. The kind must not be one that is never propagated.
//  3. The control plane must serve the kind (a kind installed later
//     clears this on the next discovery).
//  4. Scope, for a namespaced policy: the kind must be namespaced, and a
//     selector namespace must be the policy's own.
//  5. Scope, for a cluster-wide policy: a cluster-scoped kind takes no
//     namespace; a namespace must not be one that is never propagated.
func (c *Checker) selector(field string, sel *policyv1alpha1.ResourceSelector, policyNamespace, kind string) []Problem {
	problem := func(reason, field, format string, args ...any) []Problem {
		return []Problem{{Reason: reason, Field: field, Message: fmt.Sprintf(format, args...)}}
	}
	gv, err := schema.ParseGroupVersion(sel.APIVersion)
	if err != nil {
		return problem(policyv1alpha1.PolicyReasonUnknownKind, field+".apiVersion", "%q is not a group/version such as apps/v1", sel.APIVersion)
	}
	gvk := gv.WithKind(sel.Kind)
	if detector.IsSkippedKind(gvk) {
		return problem(policyv1alpha1.PolicyReasonNotPropagated, field, "kind %s of %s is never propagated", sel.Kind, gv)
	}
	info, ok := c.Kinds.Lookup(gvk)
	if !ok {
		msg := fmt.Sprintf("no kind %q in %s", sel.Kind, gv)
		if versions := c.Kinds.VersionsOf(gvk.GroupKind()); len(versions) > 0 {
			msg += fmt.Sprintf(" (it is served in %s)", strings.Join(versions, ", "))
		}
		return problem(policyv1alpha1.PolicyReasonUnknownKind, field, "%s", msg)
	}
	if policyNamespace != "" {
		if !info.Namespaced {
			return problem(policyv1alpha1.PolicyReasonScopeMismatch, field, "%s of %s is cluster-scoped, and %s only selects namespaced objects; use a Cluster%s",
				sel.Kind, gv, article(kind), kind)
		}
		if sel.Namespace != "" && sel.Namespace != policyNamespace {
			return problem(policyv1alpha1.PolicyReasonScopeMismatch, field+".namespace", "namespace %q is not the policy's own (%q), and %s only selects objects in its own namespace",
				sel.Namespace, policyNamespace, article(kind))
		}
		return nil
	}
	if !info.Namespaced && sel.Namespace != "" {
		return problem(policyv1alpha1.PolicyReasonScopeMismatch, field+".namespace", "%s of %s is cluster-scoped, so a selector with namespace %q never matches",
			sel.Kind, gv, sel.Namespace)
	}
	if info.Namespaced && detector.IsSkippedNamespace(sel.Namespace) {
		return problem(policyv1alpha1.PolicyReasonNotPropagated, field+".namespace", "objects in namespace %s are never propagated", sel.Namespace)
	}
	return nil
}

// article puts "a" or "an" before a policy kind.
func article(kind string) string {
	if strings.HasPrefix(kind, "O") {
		return "an " + kind
	}
	return "a " + kind
}

// statePathProblems parses each rule's jsonPath as a failover will.
func statePathProblems(field string, sp *policyv1alpha1.StatePreservation) []Problem {
	if sp == nil {
		return nil
	}
	var out []Problem
	for i, r := range sp.Rules {
		if _, err := failover.ParseStatePath(r.JSONPath); err != nil {
			out = append(out, Problem{Reason: policyv1alpha1.PolicyReasonInvalidJSONPath,
				Field: fmt.Sprintf("%s.rules[%d].jsonPath", field, i), Message: err.Error()})
		}
	}
	return out
}

// typedTarget is a built-in kind an override policy selects, with the Go
// type its objects decode into.
type typedTarget struct {
	gvk schema.GroupVersionKind
	typ reflect.Type
}

func (t typedTarget) String() string {
	return t.gvk.GroupVersion().String() + " " + t.gvk.Kind
}

// typedTargets lists the built-in kinds the selectors name, without
// duplicates, in selector order. Custom kinds and kinds never propagated
// are left out: only the built-in kinds' field types are known for sure.
// No selectors (every kind) gives none.
func (c *Checker) typedTargets(selectors []policyv1alpha1.ResourceSelector) []typedTarget {
	if c.Types == nil {
		return nil
	}
	var out []typedTarget
	seen := map[schema.GroupVersionKind]bool{}
	for _, sel := range selectors {
		gvk := schema.FromAPIVersionAndKind(sel.APIVersion, sel.Kind)
		if seen[gvk] || detector.IsSkippedKind(gvk) {
			continue
		}
		seen[gvk] = true
		obj, err := c.Types.New(gvk)
		if err != nil {
			continue
		}
		t := reflect.TypeOf(obj)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.Name() == "Unstructured" {
			continue
		}
		out = append(out, typedTarget{gvk: gvk, typ: t})
	}
	return out
}

// overriderProblems checks one overriders block: first what makes an
// overrider fail on every object (the overrides package's own checks),
// then, for the built-in kinds selected, whether each value or path fits
// the field it names.
func overriderProblems(field string, o *policyv1alpha1.Overriders, targets []typedTarget) []Problem {
	var out []Problem
	invalid := func(field, format string, args ...any) {
		out = append(out, Problem{Reason: policyv1alpha1.PolicyReasonInvalidOverride, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	for i := range o.ImageOverrider {
		io := &o.ImageOverrider[i]
		f := fmt.Sprintf("%s.imageOverrider[%d]", field, i)
		if err := overrides.CheckImage(io); err != nil {
			invalid(f, "%v", err)
			continue
		}
		if io.Predicate != nil {
			for _, t := range targets {
				if ft, ok := fieldType(t.typ, io.Predicate.Path); ok && !isString(ft) {
					invalid(f+".predicate.path", "%s of %s is not a string, so it cannot hold an image", io.Predicate.Path, t)
				}
			}
		}
	}
	for i := range o.FieldOverrider {
		fo := &o.FieldOverrider[i]
		f := fmt.Sprintf("%s.fieldOverrider[%d]", field, i)
		if err := overrides.CheckField(fo); err != nil {
			invalid(f, "%v", err)
			continue
		}
		for _, t := range targets {
			if ft, ok := fieldType(t.typ, fo.FieldPath); ok && !isString(ft) {
				invalid(f+".fieldPath", "%s of %s is not a string, so it cannot hold a JSON or YAML document", fo.FieldPath, t)
			}
		}
	}
	for i := range o.Plaintext {
		p := &o.Plaintext[i]
		f := fmt.Sprintf("%s.plaintext[%d]", field, i)
		if err := overrides.CheckPlaintext(p); err != nil {
			invalid(f, "%v", err)
			continue
		}
		if p.Operator == policyv1alpha1.OverriderOpRemove {
			continue
		}
		for _, t := range targets {
			ft, ok := fieldType(t.typ, p.Path)
			if !ok {
				continue
			}
			if err := checkValue(ft, p.Value.Raw); err != nil {
				invalid(f+".value", "%s does not fit %s of %s: %v", shortJSON(p.Value.Raw), p.Path, t, err)
			}
		}
	}
	return out
}

// shortJSON is a JSON value for a message, cut to a readable length.
func shortJSON(raw []byte) string {
	const limit = 64
	s := string(raw)
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
