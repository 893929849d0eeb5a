package binding

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
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

// renamingInterpreter's replica revision (a script) also moves the object.
type renamingInterpreter struct{ fakeInterpreter }

func (renamingInterpreter) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	out.SetNamespace("kube-system")
	out.SetName("other")
	return out, unstructured.SetNestedField(out.Object, replicas, "spec", "replicas")
}

// A replica revision that renames the object is refused: the Work would
// create an object the template never named, in another namespace.
func TestRenderWorkRefusesAReplicaRevisionThatRenames(t *testing.T) {
	rb := makeBinding("web").Cluster("member1", 2).Obj()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(makeDeployment("web", 2))
	if err != nil {
		t.Fatal(err)
	}
	template := &unstructured.Unstructured{Object: m}
	template.SetAPIVersion("apps/v1")
	template.SetKind("Deployment")
	_, err = renderWork(renderInput{
		binding:  bindingObject{obj: rb, spec: &rb.Spec, status: &rb.Status},
		template: template,
		target:   target{cluster: "member1", replicas: 2, scheduled: true},
		cluster:  &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}},
		interp:   renamingInterpreter{},
	})
	if err == nil || !strings.Contains(err.Error(), "may not be changed") {
		t.Fatalf("renderWork: %v, want the rename refused", err)
	}
}
