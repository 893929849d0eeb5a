package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestHashed(t *testing.T) {
	for name, tc := range map[string]struct {
		s     string
		limit int
		want  string
	}{
		"characters cleaned":              {"my_role-clusterrole", 253, "my-role-clusterrole-"},
		"upper case lowered":              {"Jane@Example.com", 253, "jane-example-com-"},
		"cut to fit with the hash":        {strings.Repeat("a", 300), 253, strings.Repeat("a", 200)},
		"nothing left but the hash":       {"__", 63, ""},
		"a cut that ends in '-' drops it": {strings.Repeat("a", 50) + "_" + strings.Repeat("b", 20), 63, strings.Repeat("a", 50)},
	} {
		t.Run(name, func(t *testing.T) {
			got := Hashed(tc.s, tc.limit, tc.s)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 || len(got) > tc.limit {
				t.Fatalf("Hashed = %q (%d characters): %v", got, len(got), errs)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("Hashed = %q, want it to start with %q", got, tc.want)
			}
			if !strings.HasSuffix(got, Hash(tc.s)) {
				t.Errorf("Hashed = %q, want it to end with the hash %q", got, Hash(tc.s))
			}
		})
	}
}

func TestJoinKeepsWhatFits(t *testing.T) {
	if got := Join("nginx", "687f7fb96f", 63); got != "nginx-687f7fb96f" {
		t.Errorf("Join = %q, want nginx-687f7fb96f", got)
	}
	if got := Join("a.b.c", "x", 4); got != "a-x" {
		t.Errorf("Join = %q, want a-x (cut to \"a.\", whose '.' goes)", got)
	}
}
