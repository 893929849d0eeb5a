package claim

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

func TestRead(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                Claim
		ok                  bool
	}{
		"nothing": {},
		"a PropagationPolicy's claim": {
			labels:      map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id"},
			annotations: map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "default", policyv1alpha1.PropagationPolicyNameAnnotation: "nginx"},
			want:        Claim{Namespace: "default", Name: "nginx", ID: "id"}, ok: true,
		},
		"a PropagationPolicy's claim without its namespace": {
			labels:      map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id"},
			annotations: map[string]string{policyv1alpha1.PropagationPolicyNameAnnotation: "nginx"},
		},
		"a label without annotations": {
			labels: map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id"},
		},
		"an empty permanent ID": {
			labels:      map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: ""},
			annotations: map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "default", policyv1alpha1.PropagationPolicyNameAnnotation: "nginx"},
		},
		"a ClusterPropagationPolicy's claim": {
			labels:      map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cid"},
			annotations: map[string]string{policyv1alpha1.ClusterPropagationPolicyAnnotation: "all"},
			want:        Claim{Cluster: true, Name: "all", ID: "cid"}, ok: true,
		},
		"a ClusterPropagationPolicy's label without its name": {
			labels: map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cid"},
		},
		"both: the PropagationPolicy's is read": {
			labels: map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id", policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cid"},
			annotations: map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "default", policyv1alpha1.PropagationPolicyNameAnnotation: "nginx",
				policyv1alpha1.ClusterPropagationPolicyAnnotation: "all"},
			want: Claim{Namespace: "default", Name: "nginx", ID: "id"}, ok: true,
		},
		"an incomplete PropagationPolicy's claim beside a complete ClusterPropagationPolicy's": {
			labels:      map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "id", policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "cid"},
			annotations: map[string]string{policyv1alpha1.ClusterPropagationPolicyAnnotation: "all"},
			want:        Claim{Cluster: true, Name: "all", ID: "cid"}, ok: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Read(&metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations})
			if got != tt.want || ok != tt.ok {
				t.Errorf("Read = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
