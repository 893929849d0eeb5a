package cluster

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TaintEdit is a parsed `lifeboat taint` command line: taints to add or
// replace, and taints to remove (a removal without effect matches every
// effect of its key).
type TaintEdit struct {
	Add    []corev1.Taint
	Remove []corev1.Taint
}

// ParseTaintSpecs parses kubectl taint syntax:
//
//	KEY[=VALUE]:EFFECT    add (or, with --overwrite, replace) a taint
//	KEY[=VALUE][:EFFECT]- remove the taint(s) with that key (and effect)
//
// EFFECT must be NoSchedule or NoExecute: the only effects a Cluster taint
// may have.
func ParseTaintSpecs(specs []string) (TaintEdit, error) {
	var edit TaintEdit
	if len(specs) == 0 {
		return edit, fmt.Errorf("no taint given: want KEY[=VALUE]:EFFECT to add or KEY[:EFFECT]- to remove")
	}
	added := map[string]bool{}
	for _, spec := range specs {
		if strings.HasSuffix(spec, "-") {
			t, err := parseTaintRemoval(strings.TrimSuffix(spec, "-"))
			if err != nil {
				return TaintEdit{}, fmt.Errorf("taint %q: %w", spec, err)
			}
			edit.Remove = append(edit.Remove, t)
			continue
		}
		t, err := parseTaint(spec)
		if err != nil {
			return TaintEdit{}, fmt.Errorf("taint %q: %w", spec, err)
		}
		id := t.Key + ":" + string(t.Effect)
		if added[id] {
			return TaintEdit{}, fmt.Errorf("taint %s is given twice", id)
		}
		added[id] = true
		edit.Add = append(edit.Add, t)
	}
	for _, r := range edit.Remove {
		for _, a := range edit.Add {
			if a.Key == r.Key && (r.Effect == "" || r.Effect == a.Effect) {
				return TaintEdit{}, fmt.Errorf("taint %s is both added and removed", formatTaint(a))
			}
		}
	}
	return edit, nil
}

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok || effect == "" {
		return corev1.Taint{}, fmt.Errorf("missing effect: want KEY[=VALUE]:EFFECT (EFFECT NoSchedule or NoExecute), or KEY[:EFFECT]- to remove")
	}
	key, value, _ := strings.Cut(keyValue, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if err := validateTaintKey(key); err != nil {
		return corev1.Taint{}, err
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return corev1.Taint{}, fmt.Errorf("invalid value %q: %s", value, strings.Join(errs, "; "))
	}
	if err := validateTaintEffect(t.Effect); err != nil {
		return corev1.Taint{}, err
	}
	return t, nil
}

func parseTaintRemoval(spec string) (corev1.Taint, error) {
	keyValue, effect, _ := strings.Cut(spec, ":")
	// A value in a removal is accepted and ignored: taints are identified
	// by key and effect.
	key, _, _ := strings.Cut(keyValue, "=")
	if err := validateTaintKey(key); err != nil {
		return corev1.Taint{}, err
	}
	t := corev1.Taint{Key: key, Effect: corev1.TaintEffect(effect)}
	if effect != "" {
		if err := validateTaintEffect(t.Effect); err != nil {
			return corev1.Taint{}, err
		}
	}
	return t, nil
}

func validateTaintKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key")
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("invalid key %q: %s", key, strings.Join(errs, "; "))
	}
	return nil
}

func validateTaintEffect(e corev1.TaintEffect) error {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case corev1.TaintEffectPreferNoSchedule:
		return fmt.Errorf("effect PreferNoSchedule is not supported on clusters: use NoSchedule or NoExecute")
	default:
		return fmt.Errorf("unknown effect %q: use NoSchedule or NoExecute", e)
	}
}

// errTaintNotFound is returned when a taint to remove is not there.
var errTaintNotFound = errors.New("taint not found")

// TaintEditResult says what applying a TaintEdit changed.
type TaintEditResult struct {
	Added, Replaced, Removed, Unchanged []string
}

// Changed reports whether spec.taints changed.
func (r TaintEditResult) Changed() bool {
	return len(r.Added)+len(r.Replaced)+len(r.Removed) > 0
}

// applyTaintEdit returns taints with edit applied. Adding a taint whose key
// and effect exist already is an error unless overwrite (an identical taint
// is left as it is). Removing a taint that is not there is an error, as in
// kubectl. NoExecute taints get timeAdded = now when added or when their
// value changes, since tolerationSeconds count from it.
func applyTaintEdit(taints []corev1.Taint, edit TaintEdit, overwrite bool, now time.Time) ([]corev1.Taint, TaintEditResult, error) {
	var res TaintEditResult
	out := make([]corev1.Taint, 0, len(taints)+len(edit.Add))
	for _, r := range edit.Remove {
		found := false
		for _, t := range taints {
			if t.Key == r.Key && (r.Effect == "" || t.Effect == r.Effect) {
				found = true
			}
		}
		if !found {
			return nil, TaintEditResult{}, fmt.Errorf("%w: %s", errTaintNotFound, formatTaintID(r))
		}
	}
	var conflicts []string
	replaced := sets.New[int]()
	for _, t := range taints {
		if removedBy(t, edit.Remove) {
			res.Removed = append(res.Removed, formatTaint(t))
			continue
		}
		idx := -1
		for i, a := range edit.Add {
			if a.MatchTaint(&t) {
				idx = i
			}
		}
		if idx < 0 {
			out = append(out, t)
			continue
		}
		replaced.Insert(idx)
		a := edit.Add[idx]
		if a.Value == t.Value {
			out = append(out, t)
			res.Unchanged = append(res.Unchanged, formatTaint(t))
			continue
		}
		if !overwrite {
			conflicts = append(conflicts, formatTaint(t))
			continue
		}
		out = append(out, withTimeAdded(a, now))
		res.Replaced = append(res.Replaced, formatTaint(a))
	}
	if len(conflicts) > 0 {
		return nil, TaintEditResult{}, fmt.Errorf("cluster already has taint(s) %s with the same key and effect; use --overwrite to replace", strings.Join(conflicts, ", "))
	}
	for i, a := range edit.Add {
		if replaced.Has(i) {
			continue
		}
		out = append(out, withTimeAdded(a, now))
		res.Added = append(res.Added, formatTaint(a))
	}
	if len(out) == 0 {
		out = nil
	}
	return out, res, nil
}

func removedBy(t corev1.Taint, removals []corev1.Taint) bool {
	for _, r := range removals {
		if t.Key == r.Key && (r.Effect == "" || t.Effect == r.Effect) {
			return true
		}
	}
	return false
}

func withTimeAdded(t corev1.Taint, now time.Time) corev1.Taint {
	if t.Effect == corev1.TaintEffectNoExecute {
		t.TimeAdded = &metav1.Time{Time: now}
	}
	return t
}

func formatTaint(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

func formatTaintID(t corev1.Taint) string {
	if t.Effect == "" {
		return t.Key
	}
	return t.Key + ":" + string(t.Effect)
}
