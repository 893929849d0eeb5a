package packed

import (
	"slices"
	"sort"

	"github.com/lifeboat-dev/lifeboat/internal/intern"
)

// Pairs is a map[string]string held as one slice, sorted by key:
// key, value, key, value. An object's labels or annotations take about half
// the memory of the map, and equal maps give equal Pairs. Keys and values
// are interned. Pairs implements labels.Labels, so a selector matches it
// without a map.
type Pairs []string

// newPairs packs m: nil for nil, empty for empty.
func newPairs(m map[string]string) Pairs {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := make(Pairs, 0, 2*len(m))
	for _, k := range keys {
		p = append(p, intern.String(k), intern.String(m[k]))
	}
	return p
}

// Map returns a new map of the pairs: nil for nil Pairs, as newPairs
// received it.
func (p Pairs) Map() map[string]string {
	if p == nil {
		return nil
	}
	m := make(map[string]string, len(p)/2)
	for i := 0; i < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

// Get returns the value of key, "" when absent (labels.Labels).
func (p Pairs) Get(key string) string {
	v, _ := p.Lookup(key)
	return v
}

// Has reports whether key is present (labels.Labels).
func (p Pairs) Has(key string) bool {
	_, ok := p.Lookup(key)
	return ok
}

// Lookup returns the value of key and whether it is present.
func (p Pairs) Lookup(key string) (string, bool) {
	i := sort.Search(len(p)/2, func(i int) bool { return p[2*i] >= key })
	if 2*i < len(p) && p[2*i] == key {
		return p[2*i+1], true
	}
	return "", false
}

// Equal reports whether p and q hold the same keys and values.
func (p Pairs) Equal(q Pairs) bool { return slices.Equal(p, q) }
