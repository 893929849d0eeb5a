// Package policycheck reports the parts of a policy that cannot work as
// written and that only the control plane can know about, where the CRD
// schema (with its CEL rules) cannot reject them: a policy is stored, and
// without this check it would silently do nothing, or fail only at the
// first failover.
//
// What is checked (check.go), on PropagationPolicies,
// ClusterPropagationPolicies, OverridePolicies and ClusterOverridePolicies:
//
//   - resource selectors (reason UnknownKind, ScopeMismatch or
//     NotPropagated): the apiVersion and kind must be served by the control
//     plane (the shared discovery view, internal/served: a CRD installed
//     later clears the problem within moments); a namespaced policy selects
//     only namespaced kinds, and only in its own namespace (Karmada's
//     webhook rejects other namespaces); a cluster-scoped kind takes no
//     namespace; kinds and namespaces the detector never propagates
//     (internal/detector's rules) are reported, as is a namespaced policy
//     living in such a namespace;
//   - statePreservation rules of spec.failover.application and
//     spec.failover.cluster (reason InvalidJSONPath): each jsonPath is parsed
//     by failover.ParseStatePath, the parser a failover uses, so a path that
//     would fail at failover time is reported when the policy is applied;
//   - overriders (reason InvalidOverride): what makes an overrider fail on
//     every object, by the overrides package's own checks (a path that is
//     not a JSON pointer, a value missing for add or replace, a fieldOverrider
//     without exactly one of json and yaml); and, for the built-in kinds the
//     policy selects, whether a plaintext value fits the Go type of the field
//     its path names (replicas must be an integer that fits 32 bits, a label
//     value a string, ...) and whether an imageOverrider predicate or a
//     fieldOverrider fieldPath names a string field. Custom kinds, and
//     policies without selectors, get the first part only: their field types
//     are not known for sure.
//
// The result is the condition Accepted: True (reason Valid), or False with
// the first problem's reason and a message naming every field, e.g.
// "spec.resourceSelectors[1]: no kind "Deploymnt" in apps/v1". Nothing
// else changes: the detector and the binding controller go on applying the
// parts of the policy that work.
//
// Writes (controller.go), per policy: status.conditions[Accepted] only,
// through the status subresource with an optimistic lock, and only when
// the condition changed (status, reason, message or observed generation);
// a lost write race is retried quietly. One Event per change: Warning with
// the condition's reason when the policy becomes not accepted or its
// problems change, Normal Accepted when it can work again. A policy is
// looked at when it is created, when its spec changes, and (every policy)
// when the served kinds change; a policy being deleted is left alone.
package policycheck
