package execution

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// manifestHead is what the cascade rules read of a manifest.
type manifestHead struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// manifestHeads decodes the apiVersion, kind, namespace and name of each of
// w's manifests; a manifest that does not decode is left out.
func manifestHeads(w *workv1alpha1.Work) []manifestHead {
	out := make([]manifestHead, 0, len(w.Spec.Workload.Manifests))
	for i := range w.Spec.Workload.Manifests {
		raw, err := w.Spec.Workload.Manifests[i].JSON()
		if err != nil {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			continue
		}
		out = append(out, manifestHead{GVK: gv.WithKind(head.Kind), Namespace: head.Metadata.Namespace, Name: head.Metadata.Name})
	}
	return out
}

// MemberNamespaces returns the member namespaces the manifests of w use:
// those their objects are in, and those v1 Namespace manifests propagate
// (other cluster-scoped manifests name none).
func MemberNamespaces(w *workv1alpha1.Work) []string {
	var out []string
	add := func(ns string) {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	for _, h := range manifestHeads(w) {
		add(h.Namespace)
		if h.GVK == namespaceGVK {
			add(h.Name)
		}
	}
	return out
}

var (
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	crdGK        = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
)

// Cascade is what deleting a member object takes with it beyond itself,
// for the kinds whose deletion does: every object in a Namespace, every
// custom resource of a CustomResourceDefinition. The zero value is an
// object whose deletion takes nothing else.
type Cascade struct {
	// Namespace is the namespace a Namespace's deletion empties.
	Namespace string
	// Kind is the kind a CustomResourceDefinition's deletion removes.
	Kind schema.GroupKind
}

// CascadeOf says what deleting obj would take with it.
func CascadeOf(obj *unstructured.Unstructured) Cascade {
	gvk := obj.GroupVersionKind()
	switch {
	case gvk == namespaceGVK:
		return Cascade{Namespace: obj.GetName()}
	case gvk.GroupKind() == crdGK:
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		if kind != "" {
			return Cascade{Kind: schema.GroupKind{Group: group, Kind: kind}}
		}
	}
	return Cascade{}
}

// None says whether the deletion takes nothing else.
func (c Cascade) None() bool { return c == Cascade{} }

// TakesFrom says whether the deletion would take an object of w with it: one
// of w's objects is in the namespace, or of the kind.
func (c Cascade) TakesFrom(w *workv1alpha1.Work) bool {
	if c.None() {
		return false
	}
	for _, h := range manifestHeads(w) {
		if c.Namespace != "" && h.Namespace == c.Namespace {
			return true
		}
		if !c.Kind.Empty() && h.GVK.GroupKind() == c.Kind {
			return true
		}
	}
	return false
}

// HandOffPatch is the JSON merge patch that turns a Namespace whose Work is
// deleted while other Works keep objects in it into a namespace Lifeboat
// created: the Work's labels and annotations removed, the managed label
// kept and CreatedNamespaceAnnotation set, so that the namespace rule
// (package orphans) removes it once nothing uses it and it is empty.
func HandOffPatch(obj *unstructured.Unstructured) ([]byte, error) {
	labels := map[string]interface{}{}
	for _, k := range releaseLabels {
		if _, ok := obj.GetLabels()[k]; ok && k != membercluster.ManagedLabel {
			labels[k] = nil
		}
	}
	labels[membercluster.ManagedLabel] = membercluster.ManagedLabelValue
	annotations := map[string]interface{}{}
	for _, k := range releaseAnnotations {
		if _, ok := obj.GetAnnotations()[k]; ok {
			annotations[k] = nil
		}
	}
	annotations[CreatedNamespaceAnnotation] = "true"
	return json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"labels": labels, "annotations": annotations}})
}
