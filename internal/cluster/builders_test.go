package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type clusterWrapper struct{ clusterv1alpha1.Cluster }

// makeCluster returns a Push cluster with a secretRef.
func makeCluster(name string) *clusterWrapper {
	return &clusterWrapper{clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode:    clusterv1alpha1.Push,
			APIEndpoint: "https://" + name + ".example:6443",
			SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: SecretNamespace, Name: name},
		},
	}}
}

func (w *clusterWrapper) Finalizer() *clusterWrapper {
	w.Finalizers = append(w.Finalizers, clusterv1alpha1.ClusterControllerFinalizer)
	return w
}

func (w *clusterWrapper) Deleting(at time.Time) *clusterWrapper {
	w.DeletionTimestamp = &metav1.Time{Time: at}
	return w
}

func (w *clusterWrapper) Ready(status metav1.ConditionStatus, reason string, since time.Time) *clusterWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: reason,
		Message: "set by test", LastTransitionTime: metav1.NewTime(since),
	})
	return w
}

func (w *clusterWrapper) Taints(taints ...corev1.Taint) *clusterWrapper {
	w.Spec.Taints = append(w.Spec.Taints, taints...)
	return w
}

// Failures sets the ready-failures annotation to the given times.
func (w *clusterWrapper) Failures(at ...time.Time) *clusterWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[clusterv1alpha1.AnnotationReadyFailures] = formatFailures(at)
	return w
}

// NoExecuteCleared sets the no-execute-cleared annotation.
func (w *clusterWrapper) NoExecuteCleared(v string) *clusterWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared] = v
	return w
}

func (w *clusterWrapper) Version(v string) *clusterWrapper {
	w.Status.KubernetesVersion = v
	return w
}

func (w *clusterWrapper) Obj() *clusterv1alpha1.Cluster { return w.DeepCopy() }

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

func taintAt(key, value string, effect corev1.TaintEffect, at time.Time) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect, TimeAdded: &metav1.Time{Time: at}}
}

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newFakeClient(t *testing.T, objs ...runtime.Object) *fake.ClientBuilder {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(testScheme(t)).
		WithRuntimeObjects(objs...).
		WithStatusSubresource(&clusterv1alpha1.Cluster{})
}

// writeCounter counts the writes a controller makes through a fake client.
type writeCounter struct{ n int }

func (w *writeCounter) funcs() interceptor.Funcs {
	return clienttest.CountWrites(func(string, client.Object) { w.n++ })
}
