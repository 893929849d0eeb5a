package packed

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

func mustDecode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return u
}

func mustPack(t *testing.T, u *unstructured.Unstructured) *Object {
	t.Helper()
	o, err := New(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestObjectRoundTrip: what the cache hands out is the object it received,
// managedFields excepted, whatever the object has or lacks.
func TestObjectRoundTrip(t *testing.T) {
	cases := map[string]string{
		"deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns","uid":"u1","resourceVersion":"7","generation":3,
			"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"karmada.io/managed":"true"},"annotations":{"work.karmada.io/name":"w","a":""},
			"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u0"}],"finalizers":["f"]},
			"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"1.5"}}}]}}},
			"status":{"replicas":2,"availableReplicas":1,"conditions":[{"type":"Available","status":"True"}],"ratio":0.5}}`,
		"no status":        `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"},"data":{"k":"v"}}`,
		"metadata only":    `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`,
		"empty labels":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{},"annotations":{}}}`,
		"deletion started": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":0}}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			in := mustDecode(t, s)
			o := mustPack(t, in)
			out, err := o.Unstructured()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in.Object, out.Object); diff != "" {
				t.Errorf("round trip (-in +out):\n%s", diff)
			}
			if o.GetName() != in.GetName() || o.GetNamespace() != in.GetNamespace() || o.GetResourceVersion() != in.GetResourceVersion() ||
				o.GetGeneration() != in.GetGeneration() || !o.GetDeletionTimestamp().Equal(in.GetDeletionTimestamp()) {
				t.Errorf("metadata kept: %+v", o.ObjectMeta)
			}
			// Each call is a copy the caller may change.
			out.SetLabels(map[string]string{"changed": "yes"})
			again, _ := o.Unstructured()
			if diff := cmp.Diff(in.Object, again.Object); diff != "" {
				t.Errorf("a caller's change leaked into the cache (-in +again):\n%s", diff)
			}
		})
	}
}

func TestObjectDropsManagedFields(t *testing.T) {
	in := mustDecode(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","managedFields":[{"manager":"m","operation":"Apply"}]}}`)
	out, err := mustPack(t, in).Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	if len(out.GetManagedFields()) != 0 {
		t.Errorf("managedFields kept: %v", out.GetManagedFields())
	}
	if len(in.GetManagedFields()) != 1 {
		t.Error("New changed its argument")
	}
}

// TestObjectDigests: the status digest changes with the status alone, the
// rest's with what is outside metadata and status, and neither with the
// metadata, the order of keys or the formatting. SameButStatus sees every
// change but the status's and the resourceVersion's.
func TestObjectDigests(t *testing.T) {
	base := `{"kind":"Deployment","metadata":{"name":"d","resourceVersion":"1","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`
	cases := map[string]struct {
		other                               string
		sameStatus, sameRest, sameButStatus bool
	}{
		"identical":            {base, true, true, true},
		"resourceVersion only": {`{"kind":"Deployment","metadata":{"name":"d","resourceVersion":"2","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`, true, true, true},
		"reordered":            {`{"status":{"ready":1},"spec":{"paused":false, "replicas":2},"metadata":{"annotations":{"a":"1"},"labels":{"l":"1"},"resourceVersion":"1","name":"d"},"kind":"Deployment"}`, true, true, true},
		"status changed":       {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false},"status":{"ready":2}}`, false, true, true},
		"status gone":          {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false}}`, false, true, true},
		"spec changed":         {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":3,"paused":false},"status":{"ready":1}}`, true, false, false},
		"field removed":        {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2},"status":{"ready":1}}`, true, false, false},
		"top field added":      {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false},"data":{},"status":{"ready":1}}`, true, false, false},
		"label changed":        {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"2"},"annotations":{"a":"1"}},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`, true, true, false},
		"annotation removed":   {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"}},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`, true, true, false},
		"finalizer added":      {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"},"finalizers":["f"]},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`, true, true, false},
		"deletion started":     {`{"kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"},"annotations":{"a":"1"},"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"replicas":2,"paused":false},"status":{"ready":1}}`, true, true, false},
	}
	b := mustPack(t, mustDecode(t, base))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := mustPack(t, mustDecode(t, tc.other))
			if got := o.StatusEqual(b); got != tc.sameStatus {
				t.Errorf("StatusEqual = %t, want %t", got, tc.sameStatus)
			}
			if got := o.RestEqual(b); got != tc.sameRest {
				t.Errorf("RestEqual = %t, want %t", got, tc.sameRest)
			}
			if got := o.SameButStatus(b); got != tc.sameButStatus {
				t.Errorf("SameButStatus = %t, want %t", got, tc.sameButStatus)
			}
		})
	}
}

func TestTransformTombstone(t *testing.T) {
	in := toolscache.DeletedFinalStateUnknown{Key: "ns/cm", Obj: mustDecode(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"}}`)}
	got, err := Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	tomb, ok := got.(toolscache.DeletedFinalStateUnknown)
	if !ok {
		t.Fatalf("Transform(tombstone) = %T", got)
	}
	if o, ok := tomb.Obj.(*Object); !ok || o.GetName() != "cm" {
		t.Errorf("tombstone holds %#v", tomb.Obj)
	}
}

// memberDeployment is a Deployment as a member returns it for a propagated
// workload: the defaults, Lifeboat's labels and annotations, a status.
const memberDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"steady-02500","namespace":"bench-steady",
"uid":"58b65541-ee9e-4dce-b175-4d0dfe368ef0","resourceVersion":"66396","generation":1,"creationTimestamp":"2026-11-25T01:41:31Z",
"labels":{"app":"steady-02500","karmada.io/managed":"true","propagationpolicy.karmada.io/permanent-id":"4af434d4-68e1-4aab-b92b-3659cffed915","resourcebinding.karmada.io/permanent-id":"04088d16-89a7-410a-8f6b-0d8e3c88760b"},
"annotations":{"deployment.kubernetes.io/revision":"1","propagationpolicy.karmada.io/name":"steady-1","resourcebinding.karmada.io/name":"steady-02500-deployment","resourcetemplate.karmada.io/generation":"2","work.karmada.io/name":"steady-02500-999cf9dc7","work.karmada.io/namespace":"karmada-es-member2"}},
"spec":{"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"steady-02500"}},
"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},
"template":{"metadata":{"labels":{"app":"steady-02500"}},"spec":{"containers":[{"image":"nginx","imagePullPolicy":"Always","name":"nginx","resources":{},
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always",
"schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}},
"status":{"availableReplicas":1,"conditions":[{"lastTransitionTime":"2026-11-25T01:41:45Z","lastUpdateTime":"2026-11-25T01:41:45Z","message":"Deployment has minimum availability.","reason":"MinimumReplicasAvailable","status":"True","type":"Available"},
{"lastTransitionTime":"2026-11-25T01:41:40Z","lastUpdateTime":"2026-11-25T01:41:45Z","message":"ReplicaSet \"steady-02500-7d9f8c\" has successfully progressed.","reason":"NewReplicaSetAvailable","status":"True","type":"Progressing"}],
"observedGeneration":1,"readyReplicas":1,"replicas":1,"updatedReplicas":1}}`

// BenchmarkNew is what an informer pays per event to hold an object packed.
func BenchmarkNew(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(memberDeployment)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		o, err := New(u)
		if err != nil {
			b.Fatal(err)
		}
		size = len(o.body)
	}
	b.ReportMetric(float64(size), "held-bytes")
}

// BenchmarkUnstructured is what a read of the cache pays to decode it.
func BenchmarkUnstructured(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(memberDeployment)); err != nil {
		b.Fatal(err)
	}
	o, err := New(u)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Unstructured(); err != nil {
			b.Fatal(err)
		}
	}
}
