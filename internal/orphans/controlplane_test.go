package orphans

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// The namespaces a Work's manifests use, those objects are in and those a
// Namespace manifest propagates, are found whether the manifests are raw or
// compacted as the controller manager's cache keeps them: a namespace a Work
// still uses is never taken for an empty one.
func TestMemberNamespaces(t *testing.T) {
	manifests := []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"billing"}}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"}}`,
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`,
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`,
		`{"apiVersion":"example.com/v1","kind":"Namespace","metadata":{"name":"not-a-namespace"}}`,
		`{not json`,
	}
	work := &workv1alpha1.Work{}
	for _, m := range manifests {
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	want := []string{"shop", "billing", "team-a"}
	if got := MemberNamespaces(work); !slices.Equal(got, want) {
		t.Fatalf("raw manifests: MemberNamespaces = %v, want %v", got, want)
	}
	if err := packed.CompactManifests(work); err != nil {
		t.Fatal(err)
	}
	if got := MemberNamespaces(work); !slices.Equal(got, want) {
		t.Fatalf("compacted manifests: MemberNamespaces = %v, want %v", got, want)
	}
}
