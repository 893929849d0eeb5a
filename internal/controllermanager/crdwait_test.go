package controllermanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lifeboat-dev/lifeboat/config/crd"
)

func TestMissingKinds(t *testing.T) {
	c := func(group, kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
		x := &apiextensionsv1.CustomResourceDefinition{}
		x.Spec.Group, x.Spec.Names.Kind = group, kind
		for i, v := range versions {
			x.Spec.Versions = append(x.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: i < 2})
		}
		return x
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{
		c("work.karmada.io", "ResourceBinding", "v1alpha2"),
		c("work.karmada.io", "Work", "v1alpha1"),
		// The third version is not served: it is never waited for.
		c("policy.karmada.io", "PropagationPolicy", "v1alpha1", "v1beta1", "v1"),
	}
	for _, tc := range []struct {
		name   string
		served map[string]map[string]bool
		want   []string
	}{
		{"nothing served", map[string]map[string]bool{}, []string{
			"PropagationPolicy.policy.karmada.io/v1alpha1", "PropagationPolicy.policy.karmada.io/v1beta1",
			"ResourceBinding.work.karmada.io/v1alpha2", "Work.work.karmada.io/v1alpha1"}},
		{"an older release: one kind and one version missing", map[string]map[string]bool{
			"work.karmada.io/v1alpha2":   {"ResourceBinding": true},
			"work.karmada.io/v1alpha1":   {"ClusterResourceBinding": true},
			"policy.karmada.io/v1alpha1": {"PropagationPolicy": true},
		}, []string{"PropagationPolicy.policy.karmada.io/v1beta1", "Work.work.karmada.io/v1alpha1"}},
		{"everything served", map[string]map[string]bool{
			"work.karmada.io/v1alpha2":   {"ResourceBinding": true},
			"work.karmada.io/v1alpha1":   {"Work": true},
			"policy.karmada.io/v1alpha1": {"PropagationPolicy": true},
			"policy.karmada.io/v1beta1":  {"PropagationPolicy": true},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := missingKinds(crds, tc.served); !slices.Equal(got, tc.want) {
				t.Errorf("missing %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEveryShippedCRDIsWaitedFor: the wait covers every kind lifeboat init
// installs.
func TestEveryShippedCRDIsWaitedFor(t *testing.T) {
	crds, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	if got := missingKinds(crds, map[string]map[string]bool{}); len(got) < len(crds) {
		t.Errorf("with nothing served, %d kinds are missing; want at least one per CRD (%d)", len(got), len(crds))
	}
}

// The wait's end names what held it: a control plane that does not answer
// is not reported as one without Lifeboat's CRDs, and the time is the time
// waited (a stop before the timeout says so).
func TestCRDWaitError(t *testing.T) {
	unreachable := errors.New(`discovering work.karmada.io/v1alpha2: Get "https://127.0.0.1:1/apis": connection refused`)
	missing := []string{"Cluster.cluster.karmada.io/v1alpha1", "Work.work.karmada.io/v1alpha1"}
	cases := map[string]struct {
		err          error
		missing      []string
		discoveryErr error
		want         string
	}{
		"all served":               {nil, nil, nil, ""},
		"does not answer":          {context.DeadlineExceeded, missing, unreachable, "after 5s the control plane still does not answer discovery: discovering work.karmada.io/v1alpha2"},
		"answers, no CRDs":         {context.DeadlineExceeded, missing, nil, "after 5s the control plane still lacks 2 of Lifeboat's kinds"},
		"stopped, no CRDs":         {context.Canceled, missing, nil, "install Lifeboat's CRDs with `lifeboat init`"},
		"stopped, nothing missing": {context.Canceled, nil, nil, "context canceled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := crdWaitError(tc.err, 5*time.Second, tc.missing, tc.discoveryErr)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("= %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("= %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
