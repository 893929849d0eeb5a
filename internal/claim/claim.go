// Package claim reads which policy claims a resource template or binding:
// the claim labels and annotations the detector writes
// (propagationpolicy.karmada.io/permanent-id, .../namespace, .../name, or
// clusterpropagationpolicy.karmada.io/permanent-id and .../name). The
// detector decides with it, and the Events' budget counts a workload's
// Events on the policy it names.
package claim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// Claim is the claim metadata found on a template or binding.
type Claim struct {
	// Cluster is true for a ClusterPropagationPolicy claim.
	Cluster   bool
	Namespace string
	Name      string
	ID        string
}

// Read returns the claim on obj. A PropagationPolicy claim needs all three
// keys (permanent-id label, namespace and name annotations) and is read
// first; a ClusterPropagationPolicy claim needs its label and name
// annotation. ok is false when obj carries no complete claim.
func Read(obj metav1.Object) (c Claim, ok bool) {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	if id := l[policyv1alpha1.PropagationPolicyPermanentIDLabel]; id != "" {
		ns, name := a[policyv1alpha1.PropagationPolicyNamespaceAnnotation], a[policyv1alpha1.PropagationPolicyNameAnnotation]
		if ns != "" && name != "" {
			return Claim{Namespace: ns, Name: name, ID: id}, true
		}
	}
	if id := l[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; id != "" {
		if name := a[policyv1alpha1.ClusterPropagationPolicyAnnotation]; name != "" {
			return Claim{Cluster: true, Name: name, ID: id}, true
		}
	}
	return Claim{}, false
}
