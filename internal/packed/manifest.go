package packed

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

// Document is a JSON document kept deflated. It encodes to the document
// itself (MarshalJSON) and never changes, so copies share it.
type Document struct {
	body []byte
	size int
}

// newDocument deflates the JSON document b.
func newDocument(b []byte) (*Document, error) {
	body, err := deflate(b)
	if err != nil {
		return nil, err
	}
	return &Document{body: body, size: len(b)}, nil
}

// JSON returns the document.
func (d *Document) JSON() ([]byte, error) { return inflate(d.body, d.size) }

// MarshalJSON returns the document, so that an Object holding a Document
// encodes to the document itself.
func (d *Document) MarshalJSON() ([]byte, error) { return d.JSON() }

// GetObjectKind lets a Document stand in a RawExtension's Object; it has
// no kind of its own.
func (d *Document) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns d: a Document never changes.
func (d *Document) DeepCopyObject() runtime.Object { return d }

// CompactManifests keeps each of w's manifests as a Document in its Object,
// with Raw nil. A Work's manifest, a Deployment's JSON of about 2 KB,
// deflates to about 300 bytes; at ten thousand Works the manifests are the
// largest part of the Work cache. A compacted Work encodes to the same JSON
// as before (RawExtension encodes its Object when Raw is nil), so a Work
// read from the cache and written back keeps its manifests. Readers get a
// manifest's JSON from workv1alpha1.Manifest.JSON, never from Raw.
func CompactManifests(w *workv1alpha1.Work) error {
	for i := range w.Spec.Workload.Manifests {
		m := &w.Spec.Workload.Manifests[i]
		if len(m.Raw) == 0 {
			continue
		}
		d, err := newDocument(m.Raw)
		if err != nil {
			return fmt.Errorf("packing manifest %d of Work %s/%s: %w", i, w.Namespace, w.Name, err)
		}
		m.Raw, m.Object = nil, d
	}
	return nil
}

// WorkTransform is a cache transform (cache.Options.DefaultTransform) that
// compacts the manifests of Works (CompactManifests) and passes other
// objects through.
func WorkTransform(obj any) (any, error) {
	if w, ok := obj.(*workv1alpha1.Work); ok {
		if err := CompactManifests(w); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
