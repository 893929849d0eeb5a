package intern

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

const bindingJSON = `{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding",
"metadata":{"name":"web-deployment","namespace":"shop","uid":"u1","resourceVersion":"7",
  "labels":{"propagationpolicy.karmada.io/permanent-id":"5dda0585"},
  "annotations":{"policy.karmada.io/applied-placement":"{\"clusterAffinities\":[]}","propagationpolicy.karmada.io/name":"p"},
  "finalizers":["karmada.io/binding-controller"],
  "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u0"}],
  "managedFields":[{"manager":"m","operation":"Update"}]},
"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","namespace":"shop","name":"web","uid":"u0"},
  "clusters":[{"name":"member1","replicas":1}],
  "placement":{"clusterAffinities":[{"affinityName":"primary","clusterNames":["member1"]}],"spreadConstraints":[{"spreadByField":"cluster","maxGroups":1}]},
  "gracefulEvictionTasks":[{"fromCluster":"member2","reason":"TaintUntolerated","producer":"taint-manager","preservedLabelState":{"k":"v"}}],
  "schedulerName":"default-scheduler","conflictResolution":"Abort"},
"status":{"schedulerObservingAffinityName":"primary",
  "conditions":[{"type":"Scheduled","status":"True","reason":"Success","message":"Binding has been scheduled successfully.","lastTransitionTime":"2026-11-25T01:39:08Z"}],
  "aggregatedStatus":[{"clusterName":"member1","applied":true,"health":"Healthy","status":{"replicas":1}}]}}`

const workJSON = `{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work",
"metadata":{"name":"web-999cf9dc7","namespace":"karmada-es-member1","labels":{"resourcebinding.karmada.io/permanent-id":"04088d16"},
  "annotations":{"resourcebinding.karmada.io/name":"web-deployment","resourcebinding.karmada.io/namespace":"shop"}},
"spec":{"workload":{"manifests":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}]}},
"status":{"conditions":[{"type":"Applied","status":"True","reason":"AppliedSuccessful","message":"Manifest has been successfully applied","lastTransitionTime":"2026-11-25T01:41:40Z"}],
  "manifestStatuses":[{"identifier":{"ordinal":0,"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"health":"Healthy","status":{"replicas":1}}]}}`

func decode[T any](t *testing.T, s string) *T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// same reports whether a and b are one copy of the same bytes.
func same(a, b string) bool {
	return a == b && unsafe.StringData(a) == unsafe.StringData(b)
}

// TestTransformKeepsContent: interning changes where strings live, never
// what an object says; only managedFields go.
func TestTransformKeepsContent(t *testing.T) {
	cases := map[string]func(*testing.T) any{
		"binding":            func(t *testing.T) any { return decode[workv1alpha2.ResourceBinding](t, bindingJSON) },
		"cluster binding":    func(t *testing.T) any { return decode[workv1alpha2.ClusterResourceBinding](t, bindingJSON) },
		"work":               func(t *testing.T) any { return decode[workv1alpha1.Work](t, workJSON) },
		"other typed object": func(t *testing.T) any { return decode[appsv1.Deployment](t, bindingJSON) },
		"not an object":      func(*testing.T) any { return "tombstone" },
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			want := obj(t)
			if m, err := meta.Accessor(want); err == nil {
				m.SetManagedFields(nil)
			}
			got, err := Transform(obj(t))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("transformed object differs (-want +got):\n%s", d)
			}
		})
	}
}

// TestTransformSharesStrings: two bindings decoded apart share one copy of
// what they repeat, and keep their own names.
func TestTransformSharesStrings(t *testing.T) {
	var bs [2]*workv1alpha2.ResourceBinding
	for i := range bs {
		bs[i] = decode[workv1alpha2.ResourceBinding](t, bindingJSON)
		if _, err := Transform(bs[i]); err != nil {
			t.Fatal(err)
		}
	}
	a, b := bs[0], bs[1]
	shared := map[string][2]string{
		"namespace":          {a.Namespace, b.Namespace},
		"label value":        {a.Labels["propagationpolicy.karmada.io/permanent-id"], b.Labels["propagationpolicy.karmada.io/permanent-id"]},
		"annotation value":   {a.Annotations["policy.karmada.io/applied-placement"], b.Annotations["policy.karmada.io/applied-placement"]},
		"finalizer":          {a.Finalizers[0], b.Finalizers[0]},
		"owner kind":         {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"resource kind":      {a.Spec.Resource.Kind, b.Spec.Resource.Kind},
		"target cluster":     {a.Spec.Clusters[0].Name, b.Spec.Clusters[0].Name},
		"affinity cluster":   {a.Spec.Placement.ClusterAffinities[0].ClusterNames[0], b.Spec.Placement.ClusterAffinities[0].ClusterNames[0]},
		"eviction reason":    {a.Spec.GracefulEvictionTasks[0].Reason, b.Spec.GracefulEvictionTasks[0].Reason},
		"condition message":  {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"aggregated cluster": {a.Status.AggregatedStatus[0].ClusterName, b.Status.AggregatedStatus[0].ClusterName},
	}
	for what, s := range shared {
		if !same(s[0], s[1]) {
			t.Errorf("%s %q: two copies after Transform", what, s[0])
		}
	}
	for k := range a.Labels {
		for k2 := range b.Labels {
			if !same(k, k2) {
				t.Errorf("label key %q: two copies after Transform", k)
			}
		}
	}
	if unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
		t.Error("names were interned; they are unique to an object and should be left alone")
	}
}

func TestMapAndMeta(t *testing.T) {
	if got := Map(nil); got != nil {
		t.Errorf("Map(nil) = %v, want nil", got)
	}
	in := map[string]string{"a": "b"}
	out := Map(in)
	out["c"] = "d"
	if len(in) != 1 {
		t.Error("Map modified its argument")
	}
	var m metav1.ObjectMeta
	Meta(&m)
	if d := cmp.Diff(metav1.ObjectMeta{}, m); d != "" {
		t.Errorf("Meta changed empty metadata:\n%s", d)
	}
}
