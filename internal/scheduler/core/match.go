package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// Field selector keys of a ClusterAffinity.
const (
	fieldProvider = "provider"
	fieldRegion   = "region"
	fieldZone     = "zone"
)

// ClusterMatches reports whether cluster satisfies affinity: not excluded,
// its labels match labelSelector, its provider/region/zones match
// fieldSelector, and it is listed in clusterNames when that is set. A nil
// affinity matches every cluster.
func ClusterMatches(cluster *clusterv1alpha1.Cluster, affinity *policyv1alpha1.ClusterAffinity) bool {
	if affinity == nil {
		return true
	}
	if slices.Contains(affinity.Exclude, cluster.Name) {
		return false
	}
	if affinity.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(affinity.LabelSelector)
		// An invalid selector matches nothing rather than everything.
		if err != nil || !sel.Matches(labels.Set(cluster.Labels)) {
			return false
		}
	}
	if affinity.FieldSelector != nil {
		for _, req := range affinity.FieldSelector.MatchExpressions {
			if !fieldMatches(cluster, req) {
				return false
			}
		}
	}
	if len(affinity.ClusterNames) > 0 && !slices.Contains(affinity.ClusterNames, cluster.Name) {
		return false
	}
	return true
}

// fieldMatches evaluates one field selector requirement. provider and region
// behave like labels (an empty field is an absent key); zone is a list: In
// needs an overlap, NotIn needs none.
func fieldMatches(cluster *clusterv1alpha1.Cluster, req corev1.NodeSelectorRequirement) bool {
	switch req.Key {
	case fieldProvider, fieldRegion:
		set := labels.Set{}
		if v := cluster.Spec.Provider; req.Key == fieldProvider && v != "" {
			set[fieldProvider] = v
		}
		if v := cluster.Spec.Region; req.Key == fieldRegion && v != "" {
			set[fieldRegion] = v
		}
		r, err := labels.NewRequirement(req.Key, toSelectionOperator(req.Operator), req.Values)
		if err != nil {
			return false
		}
		return r.Matches(set)
	case fieldZone:
		zones := clusterZones(cluster)
		overlap := slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(req.Values, z) })
		switch req.Operator {
		case corev1.NodeSelectorOpIn:
			return overlap
		case corev1.NodeSelectorOpNotIn:
			return !overlap
		case corev1.NodeSelectorOpExists:
			return len(zones) > 0
		case corev1.NodeSelectorOpDoesNotExist:
			return len(zones) == 0
		}
		return false
	default:
		// Validation only allows the three keys; an unknown key cannot match.
		return false
	}
}

func toSelectionOperator(op corev1.NodeSelectorOperator) selection.Operator {
	switch op {
	case corev1.NodeSelectorOpIn:
		return selection.In
	case corev1.NodeSelectorOpNotIn:
		return selection.NotIn
	case corev1.NodeSelectorOpExists:
		return selection.Exists
	case corev1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist
	case corev1.NodeSelectorOpGt:
		return selection.GreaterThan
	case corev1.NodeSelectorOpLt:
		return selection.LessThan
	}
	return selection.Operator(op)
}

// clusterZones returns spec.zones, or the deprecated spec.zone when zones is
// empty.
func clusterZones(cluster *clusterv1alpha1.Cluster) []string {
	if len(cluster.Spec.Zones) > 0 {
		return cluster.Spec.Zones
	}
	if cluster.Spec.Zone != "" {
		return []string{cluster.Spec.Zone}
	}
	return nil
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint of the
// cluster that no toleration tolerates.
func untoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration) (corev1.Taint, bool) {
	for _, taint := range taints {
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool { return Tolerates(t, taint) }) {
			return taint, true
		}
	}
	return corev1.Taint{}, false
}

// Tolerates follows Kubernetes' toleration semantics: an empty effect
// matches every effect, an empty key with Exists matches every key, Exists
// ignores the value and Equal (or empty) compares it. tolerationSeconds does
// not matter to the scheduler.
func Tolerates(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return t.Key != "" && t.Value == taint.Value
	default:
		return false
	}
}
