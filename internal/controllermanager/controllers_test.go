package controllermanager

import (
	"reflect"
	"testing"
)

func TestEnabledControllers(t *testing.T) {
	known := []string{"a", "b", "c"}
	cases := map[string]struct {
		spec    []string
		want    map[string]bool
		wantErr bool
	}{
		"star enables all":        {spec: []string{"*"}, want: map[string]bool{"a": true, "b": true, "c": true}},
		"star minus one":          {spec: []string{"*", "-b"}, want: map[string]bool{"a": true, "b": false, "c": true}},
		"explicit list only":      {spec: []string{"a"}, want: map[string]bool{"a": true, "b": false, "c": false}},
		"disable before star":     {spec: []string{"-c", "*"}, want: map[string]bool{"a": true, "b": true, "c": false}},
		"unknown name rejected":   {spec: []string{"*", "-nope"}, wantErr: true},
		"empty enables nothing":   {spec: nil, want: map[string]bool{"a": false, "b": false, "c": false}},
		"whitespace is tolerated": {spec: []string{" a ", " -b"}, want: map[string]bool{"a": true, "b": false, "c": false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := enabledControllers(tc.spec, known)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEveryControllerHasAUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range allControllers() {
		if seen[c.name] {
			t.Errorf("duplicate controller name %q", c.name)
		}
		seen[c.name] = true
	}
}

// The approver of pull-mode agents' certificates is a controller that
// --controllers can name (and "*" enables).
func TestAgentCSRApprovingIsKnown(t *testing.T) {
	enabled, err := enabledControllers([]string{"*"}, controllerNames())
	if err != nil {
		t.Fatal(err)
	}
	if !enabled["agent-csr-approving"] {
		t.Errorf("agent-csr-approving is not among %v", controllerNames())
	}
}
