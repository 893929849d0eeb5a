package components

import (
	"strings"
	"testing"
)

// The version stamped into the binaries must be the version built.
func TestKubernetesVersionMatchesModule(t *testing.T) {
	data, err := moduleFiles.ReadFile("modules/kubernetes/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "k8s.io/kubernetes "+KubernetesVersion+"\n") {
		t.Fatalf("modules/kubernetes/go.mod.txt does not require k8s.io/kubernetes %s", KubernetesVersion)
	}
}

func TestKeyIsStable(t *testing.T) {
	a, err := Key()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Key()
	if a != b || len(a) != 16 {
		t.Fatalf("Key() = %q then %q", a, b)
	}
}

func TestKubernetesVersionFlags(t *testing.T) {
	got := kubernetesVersionFlags("v1.35.4")
	for _, want := range []string{"k8s.io/component-base/version.gitVersion=v1.35.4", "gitMajor=1", "gitMinor=35"} {
		if !strings.Contains(got, want) {
			t.Errorf("flags %q lack %q", got, want)
		}
	}
}
