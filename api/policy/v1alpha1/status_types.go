package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PolicyStatus is a Lifeboat extension of Karmada's policies, which have no
// status: what the control plane found when it checked the policy against
// what only it knows (the kinds it serves, their scope, the failover and
// override code that will use the policy). It is written by the
// policy-check controller through the status subresource.
type PolicyStatus struct {
	// Conditions of the policy. Accepted (see PolicyConditionAccepted) says
	// whether every part of the policy can work as written; when False its
	// message names each field that cannot.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PolicyConditionAccepted is the condition type of PolicyStatus: True when
// the policy can work as written, False (with one of the PolicyReason*
// reasons) when a part of it cannot. The parts that can still work are
// applied either way.
const PolicyConditionAccepted = "Accepted"

// Reasons of the Accepted condition. With several problems the reason is
// that of the first one, in field order; the message lists them all.
const (
	// PolicyReasonValid: every checked part of the policy can work.
	PolicyReasonValid = "Valid"
	// PolicyReasonUnknownKind: a resource selector names an apiVersion and
	// kind the control plane does not serve (yet: a kind installed later
	// clears it).
	PolicyReasonUnknownKind = "UnknownKind"
	// PolicyReasonScopeMismatch: a resource selector can never match
	// because of scope: a cluster-scoped kind in a namespaced policy, a
	// namespace on a cluster-scoped kind, or a namespace other than the
	// namespaced policy's own.
	PolicyReasonScopeMismatch = "ScopeMismatch"
	// PolicyReasonNotPropagated: the policy selects kinds or namespaces
	// that are never propagated.
	PolicyReasonNotPropagated = "NotPropagated"
	// PolicyReasonInvalidJSONPath: a statePreservation rule's jsonPath
	// does not parse.
	PolicyReasonInvalidJSONPath = "InvalidJSONPath"
	// PolicyReasonInvalidOverride: an overrider cannot apply: a malformed
	// JSON pointer, a missing value, or a value of the wrong type for the
	// field of a built-in kind it sets.
	PolicyReasonInvalidOverride = "InvalidOverride"
)
