package workstatus

import (
	"encoding/json"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// Identifier names manifest ordinal of a Work as the binding status
// controller matches it: group, version, kind, namespace and name of the
// manifest; Resource is left empty, as in Karmada.
func Identifier(ordinal int, manifest *unstructured.Unstructured) workv1alpha1.ResourceIdentifier {
	gvk := manifest.GroupVersionKind()
	return workv1alpha1.ResourceIdentifier{
		Ordinal:   ordinal,
		Group:     gvk.Group,
		Version:   gvk.Version,
		Kind:      gvk.Kind,
		Namespace: manifest.GetNamespace(),
		Name:      manifest.GetName(),
	}
}

// Observe turns a member object into its manifest status: the reflected
// status, the interpreted health and the Work generation the object was
// applied from. A health rule that fails gives Unknown
// (never Healthy); a failing status rule gives no status. The errors are
// returned for events.
func Observe(interp interpreter.Interpreter, id workv1alpha1.ResourceIdentifier, obj *unstructured.Unstructured) (workv1alpha1.ManifestStatus, error, error) {
	ms := workv1alpha1.ManifestStatus{Identifier: id, Health: workv1alpha1.ResourceUnknown, ObservedGeneration: AppliedGeneration(obj)}
	status, statusErr := interp.ReflectStatus(obj)
	if statusErr == nil && status != nil && (len(status.Raw) > 0 || status.Object != nil) {
		ms.Status = status
	}
	health, healthErr := interp.InterpretHealth(obj)
	if healthErr == nil && health != "" {
		ms.Health = health
	}
	return ms, statusErr, healthErr
}

// AppliedGeneration is the Work generation a member object was last
// applied from (its work.lifeboat.dev/generation annotation), 0 when it
// does not say.
func AppliedGeneration(obj metav1.Object) int64 {
	g, err := strconv.ParseInt(obj.GetAnnotations()[workv1alpha1.WorkGenerationAnnotation], 10, 64)
	if err != nil || g < 0 {
		return 0
	}
	return g
}

// AppliedFrom reports whether a member object was last applied from work:
// its work.lifeboat.dev/uid annotation names work's UID. An object without
// the annotation (applied before Lifeboat stamped it) counts as work's. An
// object of an earlier Work of the same name, deleted and created again,
// does not: its status describes a copy that is gone or is about to be
// replaced, and a member informer that lags (its watch waiting out a
// back-off after the member restarted) may still hold it.
func AppliedFrom(obj metav1.Object, work *workv1alpha1.Work) bool {
	uid, ok := obj.GetAnnotations()[workv1alpha1.WorkUIDAnnotation]
	return !ok || uid == string(work.UID)
}

// Previous returns the recorded status of id, if any.
func Previous(statuses []workv1alpha1.ManifestStatus, id workv1alpha1.ResourceIdentifier) (workv1alpha1.ManifestStatus, bool) {
	for _, s := range statuses {
		if s.Identifier == id {
			return s, true
		}
	}
	return workv1alpha1.ManifestStatus{}, false
}

// OnlyStarting reports whether statuses b differ from a only by first
// reports that are not Healthy: objects the member has just created, whose
// status is on its way to Healthy (or to a failure that a moment's wait
// does not hide). Any change to an entry already reported, a removed
// entry, and a first report that is Healthy are not.
func OnlyStarting(a, b []workv1alpha1.ManifestStatus) bool {
	starting := false
	for _, s := range b {
		prev, ok := Previous(a, s.Identifier)
		switch {
		case !ok && s.Health != workv1alpha1.ResourceHealthy:
			starting = true
		case !ok || !Equal([]workv1alpha1.ManifestStatus{prev}, []workv1alpha1.ManifestStatus{s}):
			return false
		}
	}
	for _, s := range a {
		if _, ok := Previous(b, s.Identifier); !ok {
			return false
		}
	}
	return starting
}

// News reports whether statuses b tell something a decision depends on
// that a does not: a manifest's health, the Work generation it describes,
// or which manifests have a status.
// A change of the reflected status alone is no news (see package
// coalesce).
func News(a, b []workv1alpha1.ManifestStatus) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Identifier != b[i].Identifier || a[i].Health != b[i].Health || a[i].ObservedGeneration != b[i].ObservedGeneration {
			return true
		}
	}
	return false
}

// Equal compares manifest statuses, the reflected statuses as JSON values
// (so that key order and formatting do not count).
func Equal(a, b []workv1alpha1.ManifestStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Identifier != b[i].Identifier || a[i].Health != b[i].Health || a[i].ObservedGeneration != b[i].ObservedGeneration ||
			!sameRaw(a[i].Status, b[i].Status) {
			return false
		}
	}
	return true
}

func sameRaw(a, b *runtime.RawExtension) bool {
	av, aok := decode(a)
	bv, bok := decode(b)
	if !aok || !bok {
		// Not JSON: compare the bytes.
		return a != nil && b != nil && string(a.Raw) == string(b.Raw)
	}
	return reflect.DeepEqual(av, bv)
}

// decode returns the JSON value of a raw extension; nil and empty decode to
// nil.
func decode(r *runtime.RawExtension) (interface{}, bool) {
	if r == nil {
		return nil, true
	}
	raw := r.Raw
	if len(raw) == 0 && r.Object != nil {
		b, err := json.Marshal(r.Object)
		if err != nil {
			return nil, false
		}
		raw = b
	}
	if len(raw) == 0 {
		return nil, true
	}
	var v interface{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return v, true
}
