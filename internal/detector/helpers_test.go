package detector

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// templateBuilder builds unstructured templates for tests.
type templateBuilder struct{ u *unstructured.Unstructured }

func deployment(ns, name string) *templateBuilder {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]interface{}{"namespace": ns, "name": name},
		"spec":       map[string]interface{}{"replicas": int64(2)},
	}}
	u.SetUID(types.UID("uid-" + name))
	return &templateBuilder{u}
}

func namespaceObj(name string) *templateBuilder {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": name},
	}}
	u.SetUID(types.UID("uid-ns-" + name))
	return &templateBuilder{u}
}

func (b *templateBuilder) labels(l map[string]string) *templateBuilder {
	b.u.SetLabels(l)
	return b
}

func (b *templateBuilder) rv(rv string) *templateBuilder { b.u.SetResourceVersion(rv); return b }
func (b *templateBuilder) uid(uid string) *templateBuilder {
	b.u.SetUID(types.UID(uid))
	return b
}
func (b *templateBuilder) obj() *unstructured.Unstructured { return b.u.DeepCopy() }

// fakeInterpreter reads spec.replicas and asks for 100m CPU per replica.
type fakeInterpreter struct {
	interpreter.Interpreter
	err error
}

func (f fakeInterpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, bool, error) {
	if f.err != nil {
		return 0, nil, false, f.err
	}
	r, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		return 0, nil, false, nil
	}
	return int32(r), &workv1alpha2.ReplicaRequirements{NodeClaim: &workv1alpha2.NodeClaim{NodeSelector: map[string]string{"disk": "ssd"}}}, true, nil
}

func sequentialIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("gen-%d", n)
	}
}
