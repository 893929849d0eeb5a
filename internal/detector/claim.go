package detector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// setClaim writes p's claim on obj and removes a claim of the other policy
// kind. It reports whether anything changed.
func setClaim(obj metav1.Object, p PolicyRef) bool {
	l, a := copyMap(obj.GetLabels()), copyMap(obj.GetAnnotations())
	changed := false
	set := func(m map[string]string, k, v string) {
		if old, ok := m[k]; !ok || old != v {
			m[k] = v
			changed = true
		}
	}
	del := func(m map[string]string, k string) {
		if _, ok := m[k]; ok {
			delete(m, k)
			changed = true
		}
	}
	if p.Cluster {
		set(l, policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel, p.ID)
		set(a, policyv1alpha1.ClusterPropagationPolicyAnnotation, p.Name)
		del(l, policyv1alpha1.PropagationPolicyPermanentIDLabel)
		del(a, policyv1alpha1.PropagationPolicyNamespaceAnnotation)
		del(a, policyv1alpha1.PropagationPolicyNameAnnotation)
	} else {
		set(l, policyv1alpha1.PropagationPolicyPermanentIDLabel, p.ID)
		set(a, policyv1alpha1.PropagationPolicyNamespaceAnnotation, p.Namespace)
		set(a, policyv1alpha1.PropagationPolicyNameAnnotation, p.Name)
		del(l, policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel)
		del(a, policyv1alpha1.ClusterPropagationPolicyAnnotation)
	}
	if changed {
		obj.SetLabels(l)
		obj.SetAnnotations(a)
	}
	return changed
}

// removeClaim strips the claim of the policy with permanent ID id (of the
// given kind) from obj, only when obj's claim label still carries that ID so
// that a policy which claimed obj in the meantime keeps it. It reports
// whether anything changed.
func removeClaim(obj metav1.Object, cluster bool, id string) bool {
	labelKey := policyv1alpha1.PropagationPolicyPermanentIDLabel
	annotationKeys := []string{policyv1alpha1.PropagationPolicyNamespaceAnnotation, policyv1alpha1.PropagationPolicyNameAnnotation}
	if cluster {
		labelKey = policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel
		annotationKeys = []string{policyv1alpha1.ClusterPropagationPolicyAnnotation}
	}
	if id == "" || obj.GetLabels()[labelKey] != id {
		return false
	}
	l, a := copyMap(obj.GetLabels()), copyMap(obj.GetAnnotations())
	delete(l, labelKey)
	for _, k := range annotationKeys {
		delete(a, k)
	}
	obj.SetLabels(emptyToNil(l))
	obj.SetAnnotations(emptyToNil(a))
	return true
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func emptyToNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
