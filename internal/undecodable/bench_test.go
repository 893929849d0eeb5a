package undecodable

import (
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// workEvent is a MODIFIED watch event of a Work holding one Deployment,
// with its status reflected.
func workEvent(b *testing.B) []byte {
	b.Helper()
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "default", Labels: map[string]string{"app": "nginx", "karmada.io/managed": "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}},
	}
	raw, err := json.Marshal(d)
	if err != nil {
		b.Fatal(err)
	}
	w := workv1alpha1.Work{
		TypeMeta: metav1.TypeMeta{APIVersion: "work.karmada.io/v1alpha1", Kind: "Work"},
		ObjectMeta: metav1.ObjectMeta{Name: "nginx-687f7fb96f", Namespace: "karmada-es-member1", UID: "5f1c", ResourceVersion: "12345",
			Labels:      map[string]string{"resourcebinding.karmada.io/permanent-id": "0b5b2d1e-8a6c-4f7b-9a65-1d9e2f1e7c11"},
			Annotations: map[string]string{"resourcebinding.karmada.io/name": "nginx-deployment", "resourcebinding.karmada.io/namespace": "default"},
			Finalizers:  []string{workv1alpha1.ExecutionControllerFinalizer}},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
		Status: workv1alpha1.WorkStatus{Conditions: []metav1.Condition{
			{Type: "Applied", Status: metav1.ConditionTrue, Reason: "AppliedSuccessful", Message: "Manifest has been successfully applied", LastTransitionTime: metav1.Now()},
		}},
	}
	obj, err := json.Marshal(w)
	if err != nil {
		b.Fatal(err)
	}
	return []byte(event("MODIFIED", string(obj)))
}

// The client's own decoding of a watch event: the cost the check adds to.
func BenchmarkClientDecodesAWatchEvent(b *testing.B) {
	scheme, err := lbscheme.New()
	if err != nil {
		b.Fatal(err)
	}
	c := newChecker(scheme, testMarker)
	frame := workEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		var ev metav1.WatchEvent
		if err := json.Unmarshal(frame, &ev); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.json.Decode(ev.Object.Raw, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The transport's check of the same event.
func BenchmarkTransportChecksAWatchEvent(b *testing.B) {
	scheme, err := lbscheme.New()
	if err != nil {
		b.Fatal(err)
	}
	t := &transport{check: newChecker(scheme, testMarker), log: logr.Discard()}
	r := &request{gvk: workv1alpha1.SchemeGroupVersion.WithKind("Work")}
	frame := workEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if out := t.event(frame, r); len(out) != len(frame) {
			b.Fatal("the event changed")
		}
	}
}
