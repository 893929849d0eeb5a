package policycheck

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

func problems(n int) []Problem {
	var out []Problem
	for i := range n {
		reason := policyv1alpha1.PolicyReasonInvalidOverride
		if i == 0 {
			reason = policyv1alpha1.PolicyReasonUnknownKind
		}
		out = append(out, Problem{Reason: reason, Field: fmt.Sprintf("spec.resourceSelectors[%d]", i), Message: "wrong"})
	}
	return out
}

func TestCondition(t *testing.T) {
	cases := map[string]struct {
		problems []Problem
		status   metav1.ConditionStatus
		reason   string
		message  string
	}{
		"no problem": {nil, metav1.ConditionTrue, policyv1alpha1.PolicyReasonValid, validMessage},
		"one problem": {problems(1), metav1.ConditionFalse, policyv1alpha1.PolicyReasonUnknownKind,
			"spec.resourceSelectors[0]: wrong"},
		"several: the first one's reason, every field": {problems(3), metav1.ConditionFalse, policyv1alpha1.PolicyReasonUnknownKind,
			"spec.resourceSelectors[0]: wrong; spec.resourceSelectors[1]: wrong; spec.resourceSelectors[2]: wrong"},
		"many: the first ones, then a count": {problems(maxListed + 3), metav1.ConditionFalse, policyv1alpha1.PolicyReasonUnknownKind,
			"spec.resourceSelectors[7]: wrong; and 3 more"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := Condition(tc.problems, 7)
			if c.Type != policyv1alpha1.PolicyConditionAccepted || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 7 {
				t.Errorf("condition = %+v", c)
			}
			if !strings.HasSuffix(c.Message, tc.message) {
				t.Errorf("message = %q, want it to end with %q", c.Message, tc.message)
			}
		})
	}
}

// TestConditionMessageIsBounded: a policy can hold strings of any length
// (an apiVersion has no limit); the condition must still fit the API's
// 32768 characters, or its write would fail forever.
func TestConditionMessageIsBounded(t *testing.T) {
	huge := strings.Repeat("ü", 100_000)
	c := Condition([]Problem{{Reason: policyv1alpha1.PolicyReasonUnknownKind, Field: "spec.resourceSelectors[0]", Message: huge}}, 1)
	if len(c.Message) > maxConditionMessage || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, "...") {
		t.Errorf("message of %d bytes (valid UTF-8: %v), want at most %d ending in ...", len(c.Message), utf8.ValidString(c.Message), maxConditionMessage)
	}
}

func TestTransition(t *testing.T) {
	valid := Condition(nil, 1)
	invalid := Condition(problems(1), 1)
	otherProblem := Condition(problems(2), 1)
	newGeneration := Condition(problems(1), 2)
	cases := map[string]struct {
		old       *metav1.Condition
		cur       metav1.Condition
		write     bool
		eventType string // "" for no Event
		reason    string
	}{
		"first look, valid: written, quiet":           {nil, valid, true, "", ""},
		"first look, invalid: written, Warning":       {nil, invalid, true, corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind},
		"unchanged valid: nothing":                    {&valid, valid, false, "", ""},
		"unchanged invalid: nothing":                  {&invalid, invalid, false, "", ""},
		"becomes invalid: Warning":                    {&valid, invalid, true, corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind},
		"problems change: Warning":                    {&invalid, otherProblem, true, corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind},
		"fixed: Normal":                               {&invalid, valid, true, corev1.EventTypeNormal, ReasonAccepted},
		"same problems, new generation: written only": {&invalid, newGeneration, true, "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			write, ev := transition(tc.old, tc.cur)
			if write != tc.write {
				t.Errorf("write = %v, want %v", write, tc.write)
			}
			switch {
			case tc.eventType == "" && ev != nil:
				t.Errorf("event %+v, want none", *ev)
			case tc.eventType != "" && (ev == nil || ev.Type != tc.eventType || ev.Reason != tc.reason):
				t.Errorf("event %+v, want %s %s", ev, tc.eventType, tc.reason)
			}
		})
	}
}
