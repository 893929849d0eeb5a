package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// jsonDocument is an Object that holds a JSON document and returns it as
// is, without the validation and copy json.Marshal does around a
// MarshalJSON method.
type jsonDocument interface {
	JSON() ([]byte, error)
}

// JSON returns the manifest's JSON document: Raw, or the encoding of
// Object when Raw is nil. A cache may keep a manifest compacted in Object
// with Raw nil, so readers of a Work from a cache read its manifests here.
func (m *Manifest) JSON() ([]byte, error) {
	if m.Raw != nil || m.Object == nil {
		return m.Raw, nil
	}
	if d, ok := m.Object.(jsonDocument); ok {
		b, err := d.JSON()
		if err != nil {
			return nil, fmt.Errorf("reading manifest: %w", err)
		}
		return b, nil
	}
	b, err := json.Marshal(m.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return b, nil
}
