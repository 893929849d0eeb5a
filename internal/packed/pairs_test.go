package packed

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
)

func TestPairs(t *testing.T) {
	m := map[string]string{"b": "2", "a": "1", "c": "", "app": "web"}
	p := newPairs(m)
	if d := cmp.Diff(m, p.Map()); d != "" {
		t.Errorf("Map does not give back the map (-want +got):\n%s", d)
	}
	for k, v := range m {
		if got, ok := p.Lookup(k); !ok || got != v {
			t.Errorf("Lookup(%q) = %q, %v; want %q, true", k, got, ok, v)
		}
	}
	for _, k := range []string{"", "0", "ab", "d"} {
		if p.Has(k) || p.Get(k) != "" {
			t.Errorf("absent key %q found", k)
		}
	}
	if !p.Equal(newPairs(map[string]string{"app": "web", "c": "", "a": "1", "b": "2"})) {
		t.Error("equal maps gave unequal Pairs")
	}
	if p.Equal(newPairs(map[string]string{"app": "web", "c": "x", "a": "1", "b": "2"})) {
		t.Error("maps that differ in one value gave equal Pairs")
	}
	if newPairs(nil) != nil || newPairs(nil).Map() != nil {
		t.Error("nil did not stay nil")
	}
	if e := newPairs(map[string]string{}).Map(); e == nil || len(e) != 0 {
		t.Errorf("an empty map came back as %#v", e)
	}

	for sel, want := range map[string]bool{"app=web": true, "app=db": false, "c": true, "d": false, "b in (1,2),!d": true} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Matches(p); got != want {
			t.Errorf("selector %q matches = %v, want %v", sel, got, want)
		}
	}
}
