// Package packed holds Kubernetes objects compactly for informer caches:
// the metadata that keys and selects an object decoded, the rest as
// deflated JSON, with digests that let event handlers tell what changed
// without decoding.
package packed

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/lifeboat-dev/lifeboat/internal/intern"
)

// Object is an object as a cache holds it: the metadata that keys and
// selects it, decoded, and the rest kept as deflated JSON, with digests of
// its status, of its other metadata and of everything outside its metadata
// and status.
//
// A decoded Deployment with its status takes about 10 KB of heap; as an
// Object it takes about a tenth of that: its JSON, about 1.4 KB, deflates
// to about 170 bytes (BenchmarkNew reports it). The controller manager caches one
// per resource template and one per managed object per member: at thousands
// of workloads the largest things in its memory. Readers that need the whole
// object decode it with Unstructured; event handlers compare digests and
// never decode.
type Object struct {
	// ObjectMeta holds the name, namespace, UID, resourceVersion,
	// generation and deletionTimestamp; its labels and annotations are
	// nil, held as Pairs instead (GetLabels and GetAnnotations build the
	// maps). The rest of the metadata is in the JSON.
	metav1.ObjectMeta
	labels      Pairs
	annotations Pairs
	body        []byte // deflated JSON without metadata.labels, .annotations, .resourceVersion and .managedFields
	size        int    // of the JSON before deflating
	status      [sha256.Size]byte
	meta        [sha256.Size]byte // digest of the metadata that body holds
	rest        [sha256.Size]byte // digest of what is outside metadata and status
}

// New packs u, which it does not modify. managedFields are dropped: they
// are often larger than the object and nothing reads them.
func New(u *unstructured.Unstructured) (*Object, error) {
	o := &Object{ObjectMeta: metav1.ObjectMeta{
		Name:              u.GetName(),
		Namespace:         u.GetNamespace(),
		UID:               u.GetUID(),
		ResourceVersion:   u.GetResourceVersion(),
		Generation:        u.GetGeneration(),
		DeletionTimestamp: u.GetDeletionTimestamp(),
	}, labels: newPairs(u.GetLabels()), annotations: newPairs(u.GetAnnotations())}
	o.Namespace = intern.String(o.Namespace)
	rest := make(map[string]interface{}, len(u.Object))
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			rest[k] = v
		}
	}
	restJSON, err := json.Marshal(rest)
	if err != nil {
		return nil, fmt.Errorf("encoding %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	o.rest = sha256.Sum256(restJSON)

	var statusJSON []byte
	if s, ok := u.Object["status"]; ok {
		if statusJSON, err = json.Marshal(s); err != nil {
			return nil, fmt.Errorf("encoding the status of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		o.status = sha256.Sum256(statusJSON)
	}

	var metaJSON []byte
	if m, ok := u.Object["metadata"].(map[string]interface{}); ok {
		others := make(map[string]interface{}, len(m))
		for k, v := range m {
			if k != "labels" && k != "annotations" && k != "managedFields" && k != "resourceVersion" {
				others[k] = v
			}
		}
		if metaJSON, err = json.Marshal(others); err != nil {
			return nil, fmt.Errorf("encoding the metadata of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		o.meta = sha256.Sum256(metaJSON)
	}

	// {"metadata":…,"status":…,<rest's members>}
	body := make([]byte, 0, len(metaJSON)+len(statusJSON)+len(restJSON)+24)
	body = append(body, '{')
	sep := ""
	if metaJSON != nil {
		body = append(append(body, `"metadata":`...), metaJSON...)
		sep = ","
	}
	if statusJSON != nil {
		body = append(append(append(body, sep...), `"status":`...), statusJSON...)
		sep = ","
	}
	if len(restJSON) > 2 { // not {}
		body = append(append(body, sep...), restJSON[1:]...)
	} else {
		body = append(body, '}')
	}
	if o.body, err = deflate(body); err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	o.size = len(body)
	return o, nil
}

// Unstructured decodes the whole object. Each call returns a new copy.
func (o *Object) Unstructured() (*unstructured.Unstructured, error) {
	body, err := inflate(o.body, o.size)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s/%s: %w", o.Namespace, o.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(body); err != nil {
		return nil, fmt.Errorf("decoding %s/%s: %w", o.Namespace, o.Name, err)
	}
	if o.labels != nil {
		u.SetLabels(o.labels.Map())
	}
	if o.annotations != nil {
		u.SetAnnotations(o.annotations.Map())
	}
	if o.ResourceVersion != "" {
		u.SetResourceVersion(o.ResourceVersion)
	}
	return u, nil
}

// StatusEqual reports whether o and other have the same status.
func (o *Object) StatusEqual(other *Object) bool { return o.status == other.status }

// RestEqual reports whether o and other are the same outside their
// metadata and status: the spec, and whatever else the kind has (a
// ConfigMap's data).
func (o *Object) RestEqual(other *Object) bool { return o.rest == other.rest }

// SameButStatus reports whether o and other differ at most in their status
// and resourceVersion: the same labels, annotations, other metadata and
// everything outside metadata and status.
func (o *Object) SameButStatus(other *Object) bool {
	return o.rest == other.rest && o.meta == other.meta &&
		o.labels.Equal(other.labels) && o.annotations.Equal(other.annotations)
}

// Labels are the object's labels. Do not modify them.
func (o *Object) Labels() Pairs { return o.labels }

// Annotations are the object's annotations. Do not modify them.
func (o *Object) Annotations() Pairs { return o.annotations }

// GetLabels returns a new map of the object's labels (metav1.Object).
func (o *Object) GetLabels() map[string]string { return o.labels.Map() }

// GetAnnotations returns a new map of the object's annotations
// (metav1.Object).
func (o *Object) GetAnnotations() map[string]string { return o.annotations.Map() }

// Transform is an informer's transform (SetTransform): it turns the
// unstructured objects the informer receives into Objects before it stores
// them.
func Transform(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return New(o)
	case toolscache.DeletedFinalStateUnknown:
		if u, ok := o.Obj.(*unstructured.Unstructured); ok {
			p, err := New(u)
			if err != nil {
				return nil, err
			}
			o.Obj = p
		}
		return o, nil
	}
	return obj, nil
}
