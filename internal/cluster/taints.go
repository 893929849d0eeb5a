package cluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

var (
	// notReadyTaint is carried while Ready is False or missing.
	notReadyTaint = corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule}
	// unreachableTaint is carried while Ready is Unknown.
	unreachableTaint = corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoSchedule}
	// unschedulableTaint is the cordon taint.
	unschedulableTaint = corev1.Taint{Key: clusterv1alpha1.TaintClusterUnschedulable, Effect: corev1.TaintEffectNoSchedule}
)

// schedulingTaints returns spec.taints as they should be for the given Ready
// condition (nil when missing), and whether that differs from taints:
//
//	Ready False or missing -> not-ready:NoSchedule
//	Ready Unknown          -> unreachable:NoSchedule
//	Ready True             -> neither
//
// Only those two (key, NoSchedule) taints are ever added or removed; every
// other taint, NoExecute ones with the same keys included, is kept as it is
// and in its order. An added taint gets timeAdded = now.
func schedulingTaints(taints []corev1.Taint, ready *metav1.Condition, now time.Time) ([]corev1.Taint, bool) {
	var want *corev1.Taint
	switch {
	case ready == nil || ready.Status == metav1.ConditionFalse:
		want = &notReadyTaint
	case ready.Status == metav1.ConditionUnknown:
		want = &unreachableTaint
	}
	out := make([]corev1.Taint, 0, len(taints)+1)
	changed, present := false, false
	for _, t := range taints {
		managed := t.MatchTaint(&notReadyTaint) || t.MatchTaint(&unreachableTaint)
		switch {
		case !managed:
			out = append(out, t)
		case want != nil && t.MatchTaint(want) && !present:
			out = append(out, t)
			present = true
		default:
			changed = true
		}
	}
	if want != nil && !present {
		added := *want
		added.TimeAdded = &metav1.Time{Time: now}
		out = append(out, added)
		changed = true
	}
	if !changed {
		return taints, false
	}
	if len(out) == 0 {
		out = nil
	}
	return out, true
}

// flappingTaint keeps a flapping cluster out of new placements.
var flappingTaint = corev1.Taint{Key: clusterv1alpha1.TaintClusterFlapping, Effect: corev1.TaintEffectNoSchedule}

// setTaint returns taints with want (by key and effect) present or absent,
// and whether that changed anything. An added taint gets timeAdded = now;
// a present one is kept as it is.
func setTaint(taints []corev1.Taint, want corev1.Taint, present bool, now time.Time) ([]corev1.Taint, bool) {
	i := indexOfTaint(taints, want)
	switch {
	case present && i < 0:
		added := want
		added.TimeAdded = &metav1.Time{Time: now}
		return append(append([]corev1.Taint(nil), taints...), added), true
	case !present && i >= 0:
		out := append(append([]corev1.Taint(nil), taints[:i]...), taints[i+1:]...)
		if len(out) == 0 {
			out = nil
		}
		return out, true
	}
	return taints, false
}

// stampTimeAdded gives every NoExecute taint without timeAdded the time
// now, as Karmada's webhook and the Kubernetes API server do for node
// taints, so that a taint added by `kubectl patch` or `kubectl apply` is
// tolerated for tolerationSeconds from when it was first seen, not
// forever. An existing timeAdded is never changed. It returns the taints
// that were stamped (nil when none; then taints is returned as it is).
func stampTimeAdded(taints []corev1.Taint, now time.Time) ([]corev1.Taint, []corev1.Taint) {
	var out, stamped []corev1.Taint
	for i, t := range taints {
		if t.Effect != corev1.TaintEffectNoExecute || t.TimeAdded != nil {
			continue
		}
		if out == nil {
			out = append([]corev1.Taint(nil), taints...)
		}
		out[i].TimeAdded = &metav1.Time{Time: now}
		stamped = append(stamped, out[i])
	}
	if out == nil {
		return taints, nil
	}
	return out, stamped
}
