package crd

import (
	"strings"
	"testing"
)

// TestFailbackRules checks spec.failover.failback as the API server sees
// it: bounded, defaulted, and refused on a policy without failover.
func TestFailbackRules(t *testing.T) {
	vs := loadValidators(t)
	cases := map[string]struct {
		failover string
		want     string
	}{
		"with cluster failover":         {failover: `{cluster: {}, failback: {stabilizationSeconds: 20}}`},
		"with application failover":     {failover: `{application: {decisionConditions: {}}, failback: {afterApplicationFailover: true}}`},
		"defaulted window":              {failover: `{cluster: {}, failback: {}}`},
		"largest window":                {failover: `{cluster: {}, failback: {stabilizationSeconds: 86400}}`},
		"without any failover":          {failover: `{failback: {stabilizationSeconds: 20}}`, want: "failback requires cluster or application failover"},
		"zero window":                   {failover: `{cluster: {}, failback: {stabilizationSeconds: 0}}`, want: "stabilizationSeconds: Invalid value: 0"},
		"window longer than a day":      {failover: `{cluster: {}, failback: {stabilizationSeconds: 86401}}`, want: "stabilizationSeconds: Invalid value: 86401"},
		"window above int32 is bounded": {failover: `{cluster: {}, failback: {stabilizationSeconds: 2147483648}}`, want: "stabilizationSeconds: Invalid value"},
	}
	for _, kind := range []string{"PropagationPolicy", "ClusterPropagationPolicy"} {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				yaml := "apiVersion: policy.karmada.io/v1alpha1\nkind: " + kind + "\nmetadata: {name: p}\n" +
					"spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}], failover: " + tc.failover + "}\n"
				obj, err := decodeObject([]byte(yaml))
				if err != nil {
					t.Fatal(err)
				}
				errs, ok := vs.validate(obj)
				if !ok {
					t.Fatalf("%v is not a Lifeboat kind", obj["kind"])
				}
				text := errorText(errs)
				switch {
				case tc.want == "" && len(errs) > 0:
					t.Errorf("refused:\n%s", text)
				case tc.want != "" && !strings.Contains(text, tc.want):
					t.Errorf("want an error containing %q, got:\n%s", tc.want, text)
				}
				if name == "defaulted window" {
					fb := obj["spec"].(map[string]any)["failover"].(map[string]any)["failback"].(map[string]any)
					if got := fb["stabilizationSeconds"]; got != int64(600) && got != float64(600) {
						t.Errorf("stabilizationSeconds defaulted to %v (%T), want 600", got, got)
					}
				}
			})
		}
	}
}
