package execution

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
)

// GetReplicas and ReviseReplica read and set spec.replicas.
func (f *fakeInterpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error) {
	v, ok, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return int32(v), nil, ok, err
}

func (f *fakeInterpreter) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	return out, unstructured.SetNestedField(out.Object, replicas, "spec", "replicas")
}

func withReplicas(u *unstructured.Unstructured, replicas int64, annotations map[string]string) *unstructured.Unstructured {
	out := u.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, replicas, "spec", "replicas")
	out.SetAnnotations(annotations)
	return out
}

// A copy its agent scaled to zero gets the replicas it had back when the
// member's zero would otherwise be kept; in every other case what Retain
// gave is applied.
func TestRestoreFencedReplicas(t *testing.T) {
	fenced := map[string]string{fencing.ReplicasAnnotation: "5"}
	d := deployment("web", 2)
	cm := configMap("default", "settings", map[string]interface{}{"a": "b"})
	cases := map[string]struct {
		desired, retained, observed *unstructured.Unstructured
		want                        int64 // -1: no replicas
	}{
		"not fenced":                              {d, withReplicas(d, 0, nil), withReplicas(d, 0, nil), 0},
		"fenced, the member's zero kept":          {d, withReplicas(d, 0, nil), withReplicas(d, 0, fenced), 5},
		"fenced, the control plane's replicas":    {d, withReplicas(d, 2, nil), withReplicas(d, 0, fenced), 2},
		"fenced, the control plane asks for zero": {withReplicas(d, 0, nil), withReplicas(d, 0, nil), withReplicas(d, 0, fenced), 0},
		"fenced at zero":                          {d, withReplicas(d, 0, nil), withReplicas(d, 0, map[string]string{fencing.ReplicasAnnotation: "0"}), 0},
		"a mark that is not a number":             {d, withReplicas(d, 0, nil), withReplicas(d, 0, map[string]string{fencing.ReplicasAnnotation: "five"}), 0},
		"a mark past int32":                       {d, withReplicas(d, 0, nil), withReplicas(d, 0, map[string]string{fencing.ReplicasAnnotation: "4294967301"}), 0},
		"a kind without replicas":                 {cm, cm, withAnnotations(cm, fenced), -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RestoreFencedReplicas(interpreter.NewDefault(), tc.desired, tc.retained, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			r, found, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
			if !found {
				r = -1
			}
			if r != tc.want {
				t.Errorf("replicas = %d, want %d", r, tc.want)
			}
		})
	}
}

func withAnnotations(u *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	out := u.DeepCopy()
	out.SetAnnotations(annotations)
	return out
}

// A Deployment whose member owns its replicas, scaled to zero by its
// agent's fencing, scales back to what it had once applied again, and the
// agent's record of it is removed: the member's later scaling is kept.
func TestFencedCopyWithRetainedReplicasScalesBack(t *testing.T) {
	manifest := deployment("nginx", 2)
	manifest.SetLabels(map[string]string{"retain-replicas": "true"})
	work := MakeWork("nginx", "member1").Manifest(manifest).Obj()
	f := newFixture(t, work)
	f.mustReconcile(work)
	seen := f.observe("member1", mct.Deployments)

	// An HPA in the member had scaled it to 5; the agent then fenced it.
	f.updateMember(seen, func(live *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(live.Object, int64(0), "spec", "replicas")
		live.SetAnnotations(map[string]string{fencing.ReplicasAnnotation: "5"})
	})
	f.mustReconcile(work)
	got := f.env.Lookup("member1", mct.Deployments, "default", "nginx")
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 5 {
		t.Fatalf("replicas = %d after the copy was applied again, want the 5 it had", r)
	}
	if _, ok := got.GetAnnotations()[fencing.ReplicasAnnotation]; ok {
		t.Fatalf("the fencing record stayed: %v", got.GetAnnotations())
	}

	// The HPA scales to 7: kept.
	f.updateMember(seen, func(live *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(live.Object, int64(7), "spec", "replicas")
	})
	f.mustReconcile(work)
	if r, _, _ := unstructured.NestedInt64(f.env.Lookup("member1", mct.Deployments, "default", "nginx").Object, "spec", "replicas"); r != 7 {
		t.Fatalf("replicas = %d, want the member's 7", r)
	}
}

// updateMember changes the member's nginx Deployment until the member
// informer reports the change (see TestDriftIsCorrected), so that the next
// reconcile sees it.
func (f *fixture) updateMember(seen chan membercluster.Event, change func(*unstructured.Unstructured)) {
	f.t.Helper()
	for len(seen) > 0 { // the events of earlier writes
		<-seen
	}
	for attempt := 0; ; attempt++ {
		live := f.env.Lookup("member1", mct.Deployments, "default", "nginx").DeepCopy()
		change(live)
		if _, err := f.env.Member("member1").Resource(mct.Deployments).Namespace("default").Update(f.ctx, live, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		if eventWithin(seen, membercluster.Updated, 2*time.Second) {
			return
		}
		if attempt == 9 {
			f.t.Fatalf("no %s event after %d updates", membercluster.Updated, attempt+1)
		}
	}
}
