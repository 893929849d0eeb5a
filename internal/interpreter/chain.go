package interpreter

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// One rule answers one operation for one kind. Rules that return an object
// (ReviseReplicaRule, RetainRule, AggregateStatusRule) receive a private deep
// copy from the Chain and may change it and return it; every other argument
// is read-only.
type (
	// ReplicaRule returns the replicas and per-replica requirements.
	ReplicaRule func(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error)
	// ReviseReplicaRule sets the replicas on obj (a private copy).
	ReviseReplicaRule func(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)
	// RetainRule copies member-owned fields of observed into desired (a
	// private copy). Values taken from observed must be copied, not shared.
	RetainRule func(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// ReflectStatusRule returns the status to record for a member object.
	ReflectStatusRule func(obj *unstructured.Unstructured) (*runtime.RawExtension, error)
	// HealthRule says whether a member object is healthy.
	HealthRule func(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error)
	// AggregateStatusRule fills template's (a private copy) status from the
	// members' reflected statuses.
	AggregateStatusRule func(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error)
	// DependencyRule lists the objects obj needs in the same cluster.
	DependencyRule func(obj *unstructured.Unstructured) ([]Dependency, error)
)

// Rules are one layer's rules for one kind, one field per operation. A nil
// field means the layer has no opinion and the next layer is asked, so a
// customization can override a single operation of a single kind.
type Rules struct {
	Replicas        ReplicaRule
	ReviseReplica   ReviseReplicaRule
	Retain          RetainRule
	ReflectStatus   ReflectStatusRule
	Health          HealthRule
	AggregateStatus AggregateStatusRule
	Dependencies    DependencyRule
}

// Layer is one source of rules: ResourceInterpreterCustomizations (Lua),
// shipped third-party rules, or the native rules. A layer whose rules change
// at run time (customizations are watched objects) must make RulesFor safe
// for concurrent use.
type Layer interface {
	RulesFor(gvk schema.GroupVersionKind) Rules
}

// RuleSet is a fixed Layer keyed by exact GroupVersionKind, like Karmada's
// interpreters (apps/v1 Deployment and extensions/v1beta1 Deployment are
// different kinds to it).
type RuleSet map[schema.GroupVersionKind]Rules

// RulesFor returns the rules for gvk, all nil when the set has none.
func (s RuleSet) RulesFor(gvk schema.GroupVersionKind) Rules { return s[gvk] }

// Chain is an Interpreter that asks its layers in order, per operation: the
// first layer with a rule for the object's kind answers (Karmada's precedence:
// customizations, then third-party, then native). When no layer has a rule
// the documented defaults of the Interpreter interface apply: no replicas, an
// unchanged copy, the whole .status reflected, Healthy, the template
// unchanged, no dependencies. A Chain is safe for concurrent use when its
// layers are.
type Chain struct {
	layers []Layer
}

var _ Interpreter = (*Chain)(nil)

// NewChain returns a Chain asking layers in the given order (first wins).
func NewChain(layers ...Layer) *Chain {
	return &Chain{layers: append([]Layer(nil), layers...)}
}

// NewDefault returns the built-in interpreter: the native rules only. It is
// stateless and safe for concurrent use. Customization layers go in front:
// NewChain(customizations, thirdParty, Native()).
func NewDefault() Interpreter {
	return NewChain(Native())
}

// first returns the rules of the first layer for which has is true.
func (c *Chain) first(gvk schema.GroupVersionKind, has func(Rules) bool) (Rules, bool) {
	for _, l := range c.layers {
		if r := l.RulesFor(gvk); has(r) {
			return r, true
		}
	}
	return Rules{}, false
}

// GetReplicas implements Interpreter.
func (c *Chain) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error) {
	rules, ok := c.first(obj.GroupVersionKind(), func(r Rules) bool { return r.Replicas != nil })
	rule := rules.Replicas
	if !ok {
		return 0, nil, false, nil
	}
	replicas, req, err := rule(obj)
	if err != nil {
		return 0, nil, false, fmt.Errorf("get replicas of %s: %w", describe(obj), err)
	}
	return replicas, req, true, nil
}

// ReviseReplica implements Interpreter.
func (c *Chain) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	rules, ok := c.first(obj.GroupVersionKind(), func(r Rules) bool { return r.ReviseReplica != nil })
	rule := rules.ReviseReplica
	if !ok {
		return obj.DeepCopy(), nil
	}
	out, err := rule(obj.DeepCopy(), replicas)
	if err != nil {
		return nil, fmt.Errorf("revise replicas of %s: %w", describe(obj), err)
	}
	return out, nil
}

// Retain implements Interpreter.
func (c *Chain) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	rules, ok := c.first(desired.GroupVersionKind(), func(r Rules) bool { return r.Retain != nil })
	rule := rules.Retain
	if !ok || observed == nil {
		return desired.DeepCopy(), nil
	}
	out, err := rule(desired.DeepCopy(), observed)
	if err != nil {
		return nil, fmt.Errorf("retain member fields of %s: %w", describe(desired), err)
	}
	return out, nil
}

// ReflectStatus implements Interpreter.
func (c *Chain) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	rules, ok := c.first(obj.GroupVersionKind(), func(r Rules) bool { return r.ReflectStatus != nil })
	rule := rules.ReflectStatus
	if !ok {
		rule = reflectWholeStatus
	}
	status, err := rule(obj)
	if err != nil {
		return nil, fmt.Errorf("reflect status of %s: %w", describe(obj), err)
	}
	return status, nil
}

// InterpretHealth implements Interpreter.
func (c *Chain) InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	rules, ok := c.first(obj.GroupVersionKind(), func(r Rules) bool { return r.Health != nil })
	rule := rules.Health
	if !ok {
		// Karmada: a kind without a health rule is healthy once it exists.
		return workv1alpha1.ResourceHealthy, nil
	}
	health, err := rule(obj)
	if err != nil {
		return workv1alpha1.ResourceUnknown, fmt.Errorf("interpret health of %s: %w", describe(obj), err)
	}
	return health, nil
}

// AggregateStatus implements Interpreter.
func (c *Chain) AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	rules, ok := c.first(template.GroupVersionKind(), func(r Rules) bool { return r.AggregateStatus != nil })
	rule := rules.AggregateStatus
	if !ok {
		return template.DeepCopy(), nil
	}
	out, err := rule(template.DeepCopy(), items)
	if err != nil {
		return nil, fmt.Errorf("aggregate status of %s: %w", describe(template), err)
	}
	return out, nil
}

// GetDependencies implements Interpreter.
func (c *Chain) GetDependencies(obj *unstructured.Unstructured) ([]Dependency, error) {
	rules, ok := c.first(obj.GroupVersionKind(), func(r Rules) bool { return r.Dependencies != nil })
	rule := rules.Dependencies
	if !ok {
		return nil, nil
	}
	deps, err := rule(obj)
	if err != nil {
		return nil, fmt.Errorf("get dependencies of %s: %w", describe(obj), err)
	}
	return deps, nil
}

// reflectWholeStatus is the default reflection: all of .status, nil when
// the object has none.
func reflectWholeStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	status, ok := obj.Object["status"]
	if !ok || status == nil {
		return nil, nil
	}
	return rawJSON(status)
}

// rawJSON marshals v into a RawExtension.
func rawJSON(v any) (*runtime.RawExtension, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal status: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// describe names an object in errors.
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}
