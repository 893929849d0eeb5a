package clienttest

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Every write is counted, with its verb and object, and still happens.
func TestCountWritesCountsAndPassesOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	var got []string
	c := fake.NewClientBuilder().
		WithObjects(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "batch"}}).
		WithStatusSubresource(&corev1.Pod{}).
		WithInterceptorFuncs(CountWrites(func(verb string, obj client.Object) {
			got = append(got, verb+" "+obj.GetName())
		})).Build()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "settings"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"a": "1"}
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"b":"2"}}`))); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Patch(ctx, pod, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"message":"up"}}`))); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.Message != "up" {
		t.Errorf("the Pod's status update and patch did not happen: %v, status %+v", err, pod.Status)
	}
	if err := c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web"}, pod); !apierrors.IsNotFound(err) {
		t.Errorf("the Pod is still there after its counted eviction: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || cm.Data["a"] != "1" || cm.Data["b"] != "2" {
		t.Errorf("the ConfigMap's update and patch did not happen: %v, data %v", err, cm.Data)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("apps")); err != nil {
		t.Fatal(err)
	}
	var left corev1.PodList
	if err := c.List(ctx, &left); err != nil || len(left.Items) != 0 {
		t.Errorf("Pods left after the counted delete-all-of: %v, %d", err, len(left.Items))
	}

	want := []string{"create settings", "update settings", "patch settings", "update/status web", "patch/status web", "create/eviction web", "delete settings", "deleteallof "}
	if !slices.Equal(got, want) {
		t.Errorf("counted %q, want %q", got, want)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap is still there after its counted delete: %v", err)
	}
}
