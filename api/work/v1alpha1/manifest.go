package v1alpha1

import (
	"encoding/json"
	"fmt"
)

// JSON returns the manifest's JSON document: Raw, or the encoding of
// Object when Raw is nil. A cache may keep a manifest compacted in Object
// with Raw nil, so readers of a Work from a cache read its manifests here.
func (m *Manifest) JSON() ([]byte, error) {
	if m.Raw != nil || m.Object == nil {
		return m.Raw, nil
	}
	b, err := json.Marshal(m.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return b, nil
}
