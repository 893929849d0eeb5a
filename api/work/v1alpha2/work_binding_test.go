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

// The message names every cluster with its share, so that a change of share
// alone changes it: a reader can tell a report of the placement before.
func TestPlacementHealthyMessage(t *testing.T) {
	cases := map[string]struct {
		clusters []TargetCluster
		want     string
	}{
		"sorted, with replicas": {
			clusters: []TargetCluster{{Name: "member2", Replicas: 4}, {Name: "member1", Replicas: 1}},
			want:     "Every cluster of the placement reports Healthy: member1 (1 replica), member2 (4 replicas).",
		},
		"no replicas": {
			clusters: []TargetCluster{{Name: "member1"}},
			want:     "Every cluster of the placement reports Healthy: member1.",
		},
		"the most replicas": {
			clusters: []TargetCluster{{Name: "member1", Replicas: 2147483647}},
			want:     "Every cluster of the placement reports Healthy: member1 (2147483647 replicas).",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PlacementHealthyMessage(tc.clusters); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	share := func(n int32) string {
		return PlacementHealthyMessage([]TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: n}})
	}
	if share(2) == share(4) {
		t.Errorf("a change of share leaves the message as it was: %q", share(2))
	}
}
