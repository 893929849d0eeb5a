package overrides

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

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
