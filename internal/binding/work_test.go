package binding

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// mergeWork compares a Work read from the cache, whose manifests are
// compacted, with the desired one as JSON values: an unchanged manifest
// costs no write, a changed one is replaced, and a write that only adds a
// label carries the cached manifest unchanged.
func TestMergeWorkWithCompactedManifests(t *testing.T) {
	const cached = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"app"},"data":{"a":"1","b":"2"}}`
	work := func(manifest string, labels map[string]string) *workv1alpha1.Work {
		w := &workv1alpha1.Work{}
		w.Namespace, w.Name, w.Labels = "karmada-es-member1", "c-1", labels
		w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(manifest)}}}
		return w
	}
	existing := work(cached, map[string]string{"x": "1"})
	if err := packed.CompactManifests(existing); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		desired     *workv1alpha1.Work
		wantChanged bool
		wantRaw     string
	}{
		"same value, other key order": {
			desired: work(`{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"2","a":"1"},"metadata":{"namespace":"app","name":"c"}}`, map[string]string{"x": "1"}),
		},
		"changed manifest": {
			desired:     work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"app"},"data":{"a":"1","b":"3"}}`, map[string]string{"x": "1"}),
			wantChanged: true,
			wantRaw:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"app"},"data":{"a":"1","b":"3"}}`,
		},
		"label added only": {
			desired:     work(cached, map[string]string{"x": "1", "y": "2"}),
			wantChanged: true,
			wantRaw:     cached,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, changed, err := mergeWork(existing, tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !changed {
				return
			}
			got, err := out.Spec.Workload.Manifests[0].JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(tc.wantRaw)) {
				t.Fatalf("written manifest = %s, want %s", got, tc.wantRaw)
			}
		})
	}
}
