package execution

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// WorkWrapper builds Works for tests.
type WorkWrapper struct{ workv1alpha1.Work }

// MakeWork returns a Work named name in cluster's execution namespace.
func MakeWork(name, cluster string) *WorkWrapper {
	return &WorkWrapper{workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: clusterv1alpha1.ExecutionSpacePrefix + cluster, Generation: 1,
	}}}
}

func (w *WorkWrapper) UID(uid string) *WorkWrapper {
	w.Work.UID = types.UID(uid)
	return w
}

func (w *WorkWrapper) Label(k, v string) *WorkWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

func (w *WorkWrapper) Annotation(k, v string) *WorkWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

func (w *WorkWrapper) Manifest(objs ...*unstructured.Unstructured) *WorkWrapper {
	for _, o := range objs {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			panic(err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return w
}

func (w *WorkWrapper) Finalizer() *WorkWrapper {
	w.Finalizers = append(w.Finalizers, workv1alpha1.ExecutionControllerFinalizer)
	return w
}

func (w *WorkWrapper) Suspend() *WorkWrapper {
	w.Spec.SuspendDispatching = ptr.To(true)
	return w
}

func (w *WorkWrapper) Preserve() *WorkWrapper {
	w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	return w
}

// Generation sets metadata.generation.
func (w *WorkWrapper) Generation(g int64) *WorkWrapper {
	w.Work.Generation = g
	return w
}

func (w *WorkWrapper) Obj() *workv1alpha1.Work { return w.Work.DeepCopy() }

// ClusterWrapper builds Clusters for tests.
type ClusterWrapper struct{ clusterv1alpha1.Cluster }

func MakeCluster(name string) *ClusterWrapper {
	return &ClusterWrapper{clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://" + name},
	}}
}

func (c *ClusterWrapper) Ready(s metav1.ConditionStatus) *ClusterWrapper {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: s, Reason: "Test"})
	return c
}

func (c *ClusterWrapper) Obj() *clusterv1alpha1.Cluster { return c.Cluster.DeepCopy() }

func deployment(name string, replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]interface{}{"name": name, "namespace": "default"},
		"spec": map[string]interface{}{
			"replicas": replicas,
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": name}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": name}},
				"spec": map[string]interface{}{"containers": []interface{}{
					map[string]interface{}{"name": "main", "image": "nginx:1.27"},
				}},
			},
		},
	}}
	return u
}

func configMap(ns, name string, data map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"name": name, "namespace": ns},
		"data":       data,
	}}
}

func namespace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]interface{}{"name": name},
	}}
}

// fakeInterpreter implements Retain only; it keeps the member's
// spec.replicas, like the retain-replicas hook, and counts calls.
type fakeInterpreter struct {
	interpreter.Interpreter
	retains int
}

func (f *fakeInterpreter) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f.retains++
	out := desired.DeepCopy()
	if v, ok, _ := unstructured.NestedInt64(observed.Object, "spec", "replicas"); ok && observed.GetLabels()["retain-replicas"] == "true" {
		_ = unstructured.SetNestedField(out.Object, v, "spec", "replicas")
	}
	if to := observed.GetLabels()["retain-renames-to"]; to != "" {
		out.SetName(to)
	}
	return out, nil
}
