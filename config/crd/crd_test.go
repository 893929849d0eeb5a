package crd

import "testing"

func TestAll(t *testing.T) {
	crds, err := All()
	if err != nil {
		t.Fatalf("All() error: %v", err)
	}
	want := []string{
		"clusteroverridepolicies.policy.karmada.io",
		"clusterpropagationpolicies.policy.karmada.io",
		"clusterresourcebindings.work.karmada.io",
		"clusters.cluster.karmada.io",
		"clustertaintpolicies.policy.karmada.io",
		"overridepolicies.policy.karmada.io",
		"propagationpolicies.policy.karmada.io",
		"resourcebindings.work.karmada.io",
		"resourceinterpretercustomizations.config.karmada.io",
		"workloadrebalancers.apps.karmada.io",
		"works.work.karmada.io",
	}
	if len(crds) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(crds), len(want))
	}
	for i, crd := range crds {
		if crd.Name != want[i] {
			t.Errorf("CRD %d: got %s, want %s", i, crd.Name, want[i])
		}
	}
}
