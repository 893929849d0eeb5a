package v1alpha2

import "testing"

func TestBindingOfWorkAnnotations(t *testing.T) {
	cases := map[string]struct {
		ann             map[string]string
		ns, name        string
		cluster, wantOK bool
	}{
		"ResourceBinding": {
			ann: map[string]string{ResourceBindingNameAnnotationKey: "rb", ResourceBindingNamespaceAnnotationKey: "ns"},
			ns:  "ns", name: "rb", wantOK: true,
		},
		"ResourceBinding without namespace": {
			ann:  map[string]string{ResourceBindingNameAnnotationKey: "rb"},
			name: "rb",
		},
		"ClusterResourceBinding": {
			ann:  map[string]string{ClusterResourceBindingAnnotationKey: "crb"},
			name: "crb", cluster: true, wantOK: true,
		},
		"no binding": {ann: map[string]string{"other": "x"}},
		"nil":        {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns, n, cluster, ok := BindingOfWorkAnnotations(tc.ann)
			if ns != tc.ns || n != tc.name || cluster != tc.cluster || ok != tc.wantOK {
				t.Errorf("got (%q, %q, %t, %t), want (%q, %q, %t, %t)", ns, n, cluster, ok, tc.ns, tc.name, tc.cluster, tc.wantOK)
			}
		})
	}
}
