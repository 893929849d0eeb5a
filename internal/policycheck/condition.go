package policycheck

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

const (
	// maxListed is how many problems a condition message lists; the rest
	// are counted.
	maxListed = 8
	// maxConditionMessage bounds the condition's message well below the
	// API's 32768, whatever the policy holds (an apiVersion has no length
	// limit).
	maxConditionMessage = 4096
	// maxEventMessage bounds an Event's message.
	maxEventMessage = 1024
	// ReasonAccepted is the Normal Event of a policy that can work again.
	ReasonAccepted = "Accepted"
	// validMessage is the message of Accepted=True.
	validMessage = "the policy can work as written"
)

// Condition is the Accepted condition for the problems found in a policy
// at generation: True with reason Valid when there are none; otherwise
// False with the first problem's reason and a message listing the problems
// (the first maxListed, then how many more).
func Condition(problems []Problem, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               policyv1alpha1.PolicyConditionAccepted,
		Status:             metav1.ConditionTrue,
		Reason:             policyv1alpha1.PolicyReasonValid,
		Message:            validMessage,
		ObservedGeneration: generation,
	}
	if len(problems) == 0 {
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, problems[0].Reason
	parts := make([]string, 0, min(len(problems), maxListed)+1)
	for i, p := range problems {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(problems)-maxListed))
			break
		}
		parts = append(parts, p.String())
	}
	c.Message = truncate(strings.Join(parts, "; "), maxConditionMessage)
	return c
}

// policyEvent is an Event to record on the policy.
type policyEvent struct {
	Type, Reason, Message string
}

// transition compares the policy's stored Accepted condition (nil: none)
// with the one just computed:
//  1. the status is written when the status, reason, message or observed
//     generation differ;
//  2. a Warning Event (reason: the condition's) is recorded when the
//     policy becomes not accepted or its problems change;
//  3. a Normal Event Accepted is recorded when a policy that was not
//     accepted is again; a policy accepted from the start gets none.
func transition(old *metav1.Condition, cur metav1.Condition) (write bool, ev *policyEvent) {
	if old != nil && old.Status == cur.Status && old.Reason == cur.Reason &&
		old.Message == cur.Message && old.ObservedGeneration == cur.ObservedGeneration {
		return false, nil
	}
	switch {
	case cur.Status == metav1.ConditionFalse && (old == nil || old.Status != cur.Status || old.Reason != cur.Reason || old.Message != cur.Message):
		ev = &policyEvent{Type: corev1.EventTypeWarning, Reason: cur.Reason, Message: truncate(cur.Message, maxEventMessage)}
	case cur.Status == metav1.ConditionTrue && old != nil && old.Status == metav1.ConditionFalse:
		ev = &policyEvent{Type: corev1.EventTypeNormal, Reason: ReasonAccepted, Message: validMessage + " again"}
	}
	return true, ev
}

// truncate cuts s to at most n bytes, on a character boundary, marking
// the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
