package overrides

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// selectorPriority returns the implicit priority of the best of selectors
// for obj: PriorityMatchAll when there are no selectors, PriorityMisMatch
// when none selects obj. defaultNamespace stands in for an empty selector
// namespace (an OverridePolicy's own namespace; "" for a
// ClusterOverridePolicy, meaning every namespace).
func selectorPriority(selectors []policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) int {
	if len(selectors) == 0 {
		return policyv1alpha1.PriorityMatchAll
	}
	best := policyv1alpha1.PriorityMisMatch
	for i := range selectors {
		best = max(best, oneSelectorPriority(&selectors[i], defaultNamespace, obj))
	}
	return best
}

func oneSelectorPriority(s *policyv1alpha1.ResourceSelector, defaultNamespace string, obj *unstructured.Unstructured) int {
	if s.APIVersion != obj.GetAPIVersion() || s.Kind != obj.GetKind() {
		return policyv1alpha1.PriorityMisMatch
	}
	ns := s.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	if ns != "" && ns != obj.GetNamespace() {
		return policyv1alpha1.PriorityMisMatch
	}
	switch {
	case s.Name != "":
		if s.Name == obj.GetName() {
			return policyv1alpha1.PriorityMatchName
		}
		return policyv1alpha1.PriorityMisMatch
	case s.LabelSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(obj.GetLabels())) {
			return policyv1alpha1.PriorityMisMatch
		}
		return policyv1alpha1.PriorityMatchLabelSelector
	default:
		return policyv1alpha1.PriorityMatchAll
	}
}

// MaySelect reports whether an override spec may select the object named by
// the reference, judging by apiVersion, kind, namespace and name only; label
// selectors are assumed to match. Controllers use it to find the bindings to
// re-render when a policy changes: a false positive costs one reconcile that
// writes nothing, a false negative would leave a Work stale.
func MaySelect(spec *policyv1alpha1.OverrideSpec, policyNamespace, apiVersion, kind, namespace, name string) bool {
	if len(spec.ResourceSelectors) == 0 {
		return policyNamespace == "" || policyNamespace == namespace
	}
	for _, s := range spec.ResourceSelectors {
		if s.APIVersion != apiVersion || s.Kind != kind {
			continue
		}
		ns := s.Namespace
		if ns == "" {
			ns = policyNamespace
		}
		if ns != "" && ns != namespace {
			continue
		}
		if s.Name != "" && s.Name != name {
			continue
		}
		return true
	}
	return false
}

// clusterMatches reports whether a ClusterAffinity selects the cluster. A
// nil affinity selects every cluster.
//
// All of these must hold: the name is not excluded; the label selector, if
// any, matches the Cluster's labels; every field-selector expression holds
// (provider and region as single-valued keys, zone against spec.zones);
// clusterNames, if non-empty, lists the name.
func clusterMatches(cluster *clusterv1alpha1.Cluster, affinity *policyv1alpha1.ClusterAffinity) bool {
	if affinity == nil {
		return true
	}
	if slices.Contains(affinity.Exclude, cluster.Name) {
		return false
	}
	if affinity.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(affinity.LabelSelector)
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

// Field-selector keys of a ClusterAffinity.
const (
	fieldProvider = "provider"
	fieldRegion   = "region"
	fieldZone     = "zone"
)

func fieldMatches(cluster *clusterv1alpha1.Cluster, req corev1.NodeSelectorRequirement) bool {
	var values []string
	switch req.Key {
	case fieldProvider:
		if cluster.Spec.Provider != "" {
			values = []string{cluster.Spec.Provider}
		}
	case fieldRegion:
		if cluster.Spec.Region != "" {
			values = []string{cluster.Spec.Region}
		}
	case fieldZone:
		values = append(values, cluster.Spec.Zones...)
		if cluster.Spec.Zone != "" && !slices.Contains(values, cluster.Spec.Zone) {
			values = append(values, cluster.Spec.Zone)
		}
	default:
		return false
	}
	overlap := slices.ContainsFunc(values, func(v string) bool { return slices.Contains(req.Values, v) })
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return overlap
	case corev1.NodeSelectorOpNotIn:
		return !overlap
	case corev1.NodeSelectorOpExists:
		return len(values) > 0
	case corev1.NodeSelectorOpDoesNotExist:
		return len(values) == 0
	default:
		return false
	}
}
