package workstatus

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

func TestHoldsKind(t *testing.T) {
	work := func(manifests ...string) *workv1alpha1.Work {
		w := &workv1alpha1.Work{}
		for _, m := range manifests {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
		}
		return w
	}
	widget := schema.GroupVersionKind{Group: "example.lifeboat.dev", Version: "v1", Kind: "Widget"}
	cases := map[string]struct {
		work *workv1alpha1.Work
		want bool
	}{
		"same kind":          {work(`{"apiVersion":"example.lifeboat.dev/v1","kind":"Widget"}`), true},
		"other version":      {work(`{"apiVersion":"example.lifeboat.dev/v2","kind":"Widget"}`), false},
		"other kind":         {work(`{"apiVersion":"apps/v1","kind":"Deployment"}`), false},
		"second manifest":    {work(`{"apiVersion":"v1","kind":"ConfigMap"}`, `{"apiVersion":"example.lifeboat.dev/v1","kind":"Widget"}`), true},
		"malformed manifest": {work(`{not json`), false},
		"no manifests":       {work(), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := holdsKind(tc.work, widget); got != tc.want {
				t.Fatalf("holdsKind = %v, want %v", got, tc.want)
			}
			// As the controller manager's cache keeps it.
			if err := packed.CompactManifests(tc.work); err != nil {
				t.Fatal(err)
			}
			if got := holdsKind(tc.work, widget); got != tc.want {
				t.Fatalf("holdsKind of the compacted Work = %v, want %v", got, tc.want)
			}
		})
	}
}
