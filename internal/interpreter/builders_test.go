package interpreter

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// objWrapper builds an unstructured object for tests:
// makeObj(deploymentGVK, "web").set("spec.replicas", 2).obj().
type objWrapper struct{ u *unstructured.Unstructured }

func makeObj(gvk schema.GroupVersionKind, name string) *objWrapper {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace("default")
	return &objWrapper{u: u}
}

func (w *objWrapper) obj() *unstructured.Unstructured { return w.u.DeepCopy() }

// set stores v at a dotted path. v may be any JSON-encodable value (typed
// API structs included); numbers become int64 as in objects read from an
// API server.
func (w *objWrapper) set(path string, v any) *objWrapper {
	if err := unstructured.SetNestedField(w.u.Object, jsonValue(v), strings.Split(path, ".")...); err != nil {
		panic(err)
	}
	return w
}

func (w *objWrapper) label(k, v string) *objWrapper {
	l := w.u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	w.u.SetLabels(l)
	return w
}

func (w *objWrapper) annotation(k, v string) *objWrapper {
	a := w.u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	w.u.SetAnnotations(a)
	return w
}

func (w *objWrapper) generation(g int64) *objWrapper {
	w.u.SetGeneration(g)
	return w
}

// templateGeneration sets the annotation the binding controller puts on
// member objects.
func (w *objWrapper) templateGeneration(g int64) *objWrapper {
	return w.annotation(workv1alpha1.ResourceTemplateGenerationAnnotationKey, strconv.FormatInt(g, 10))
}

// podSpec stores spec where the kind keeps its pod template.
func (w *objWrapper) podSpec(spec corev1.PodSpec) *objWrapper {
	return w.set(strings.Join(podSpecPaths[w.u.GroupVersionKind()], "."), spec)
}

// status sets .status from a map or typed status.
func (w *objWrapper) status(s any) *objWrapper { return w.set("status", s) }

func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// container builds a container with requests and limits given as
// "cpu=100m,memory=64Mi".
func container(name, requests, limits string) corev1.Container {
	return corev1.Container{Name: name, Image: "nginx", Resources: corev1.ResourceRequirements{
		Requests: resources(requests), Limits: resources(limits),
	}}
}

func resources(spec string) corev1.ResourceList {
	if spec == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// item is one cluster's aggregated status entry.
func item(cluster string, status any) workv1alpha2.AggregatedStatusItem {
	it := workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true}
	if status != nil {
		raw, err := json.Marshal(status)
		if err != nil {
			panic(err)
		}
		it.Status = &runtime.RawExtension{Raw: raw}
	}
	return it
}

// reflected is the aggregated status entry the pipeline records for a
// member object: its status as the native interpreter reflects it.
func reflected(t *testing.T, cluster string, member *unstructured.Unstructured) workv1alpha2.AggregatedStatusItem {
	t.Helper()
	raw, err := NewDefault().ReflectStatus(member)
	if err != nil {
		t.Fatalf("reflect %s: %v", cluster, err)
	}
	return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Status: raw}
}

// at is a fixed time, minutes after a reference instant.
func at(minutes int) metav1.Time {
	return metav1.NewTime(time.Date(2025, 1, 1, 0, minutes, 0, 0, time.UTC))
}

// quantityEqual compares quantities by value.
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
