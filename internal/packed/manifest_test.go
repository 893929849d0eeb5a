package packed

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

const deploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app","labels":{"app":"web"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}}`

func workWith(manifests ...string) *workv1alpha1.Work {
	w := &workv1alpha1.Work{}
	w.Namespace, w.Name = "karmada-es-member1", "web-1"
	for _, m := range manifests {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return w
}

// A compacted Work holds no Raw bytes, gives each manifest back unchanged
// through Manifest.JSON, and encodes (as a write from the cache would) to
// exactly the JSON of the Work it came from, copies included.
func TestCompactManifests(t *testing.T) {
	orig := workWith(deploymentJSON, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	orig.Spec.Workload.Manifests = append(orig.Spec.Workload.Manifests, workv1alpha1.Manifest{})
	want, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	w := orig.DeepCopy()
	if _, err := WorkTransform(w); err != nil {
		t.Fatal(err)
	}
	for i := range w.Spec.Workload.Manifests {
		m := &w.Spec.Workload.Manifests[i]
		if m.Raw != nil {
			t.Errorf("manifest %d still holds %d raw bytes", i, len(m.Raw))
		}
		got, err := m.JSON()
		if err != nil {
			t.Fatalf("manifest %d: %v", i, err)
		}
		if wantRaw := orig.Spec.Workload.Manifests[i].Raw; !bytes.Equal(got, wantRaw) {
			t.Errorf("manifest %d reads back as %s, want %s", i, got, wantRaw)
		}
	}
	if _, ok := w.Spec.Workload.Manifests[0].Object.(*Document); !ok {
		t.Fatalf("manifest 0 is kept as %T, want a *Document", w.Spec.Workload.Manifests[0].Object)
	}
	for name, obj := range map[string]*workv1alpha1.Work{"compacted": w, "its copy": w.DeepCopy()} {
		got, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s encodes as\n%s\nwant\n%s", name, got, want)
		}
	}
}

// The transform leaves objects other than Works alone.
func TestWorkTransformPassesOtherObjects(t *testing.T) {
	ext := &runtime.Unknown{Raw: []byte(deploymentJSON)}
	got, err := WorkTransform(ext)
	if err != nil || got != ext || !bytes.Equal(ext.Raw, []byte(deploymentJSON)) {
		t.Fatalf("WorkTransform changed a non-Work: %v %v", got, err)
	}
}

func BenchmarkCompactManifests(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := CompactManifests(workWith(deploymentJSON)); err != nil {
			b.Fatal(err)
		}
	}
}
