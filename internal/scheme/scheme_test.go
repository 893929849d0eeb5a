package scheme

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// OwnGroups names every group the scheme has beyond Kubernetes' own: a
// group added to New and forgotten there would go unguarded.
func TestOwnGroupsAreTheGroupsBeyondKubernetes(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	k8s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(k8s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(k8s); err != nil {
		t.Fatal(err)
	}
	want := sets.New[string]()
	for gvk := range s.AllKnownTypes() {
		if !k8s.IsGroupRegistered(gvk.Group) {
			want.Insert(gvk.Group)
		}
	}
	if got := sets.New(OwnGroups()...); !got.Equal(want) {
		t.Errorf("OwnGroups() = %v, want %v", sets.List(got), sets.List(want))
	}
}
