package execution

import (
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
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

func TestCascade(t *testing.T) {
	obj := func(text string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(text)); err != nil {
			t.Fatal(err)
		}
		return u
	}
	workOf := func(manifests ...string) *workv1alpha1.Work {
		w := &workv1alpha1.Work{}
		for _, m := range manifests {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
		}
		return w
	}
	namespaceTeamA := obj(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`)
	crd := obj(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"flinkdeployments.flink.apache.org"},
		"spec":{"group":"flink.apache.org","names":{"kind":"FlinkDeployment","plural":"flinkdeployments"}}}`)
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-a"}}`
	elsewhere := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-b"}}`
	flink := `{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkDeployment","metadata":{"name":"job","namespace":"team-b"}}`
	otherFlink := `{"apiVersion":"example.com/v1","kind":"FlinkDeployment","metadata":{"name":"job","namespace":"team-b"}}`
	clusterRole := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"team-a"}}`

	cases := map[string]struct {
		obj   *unstructured.Unstructured
		work  *workv1alpha1.Work
		none  bool
		takes bool
	}{
		"a namespace: an object in it":                     {obj: namespaceTeamA, work: workOf(deployment), takes: true},
		"a namespace: objects elsewhere":                   {obj: namespaceTeamA, work: workOf(elsewhere, clusterRole)},
		"a namespace: the same namespace propagated again": {obj: namespaceTeamA, work: workOf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`)},
		"a CRD: an object of its kind":                     {obj: crd, work: workOf(elsewhere, flink), takes: true},
		"a CRD: the same kind in another group":            {obj: crd, work: workOf(otherFlink)},
		"a CRD without a kind takes nothing":               {obj: obj(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x"}}`), work: workOf(flink), none: true},
		"a Deployment takes nothing":                       {obj: obj(deployment), work: workOf(deployment), none: true},
		"a Namespace of another group takes nothing":       {obj: obj(`{"apiVersion":"example.com/v1","kind":"Namespace","metadata":{"name":"team-a"}}`), work: workOf(deployment), none: true},
		"a Work whose manifests do not decode":             {obj: namespaceTeamA, work: workOf(`{not json`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := CascadeOf(tc.obj)
			if c.None() != tc.none {
				t.Fatalf("CascadeOf = %+v, None %v; want None %v", c, c.None(), tc.none)
			}
			if got := c.TakesFrom(tc.work); got != tc.takes {
				t.Errorf("TakesFrom = %v, want %v", got, tc.takes)
			}
		})
	}
}

func TestHandOffPatch(t *testing.T) {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("team-a")
	ns.SetLabels(map[string]string{membercluster.ManagedLabel: membercluster.ManagedLabelValue, workv1alpha1.WorkPermanentIDLabel: "id", "team": "a"})
	ns.SetAnnotations(map[string]string{workv1alpha1.WorkNamespaceAnnotation: "karmada-es-member1", workv1alpha1.WorkNameAnnotation: "team-a-ns", "owner": "me"})
	patch, err := HandOffPatch(ns)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch(mustJSON(t, ns), patch)
	if err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	if err := got.UnmarshalJSON(merged); err != nil {
		t.Fatal(err)
	}
	if !CreatedByLifeboat(got) || !IsManaged(got) {
		t.Errorf("after the hand-off: labels %v, annotations %v; want managed and created by Lifeboat", got.GetLabels(), got.GetAnnotations())
	}
	if _, named := WorkOf("member1", got); named || got.GetLabels()[workv1alpha1.WorkPermanentIDLabel] != "" {
		t.Errorf("after the hand-off the namespace still names its Work: labels %v, annotations %v", got.GetLabels(), got.GetAnnotations())
	}
	if got.GetLabels()["team"] != "a" || got.GetAnnotations()["owner"] != "me" {
		t.Errorf("the hand-off removed what is not Lifeboat's: labels %v, annotations %v", got.GetLabels(), got.GetAnnotations())
	}
}

func mustJSON(t *testing.T, u *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
