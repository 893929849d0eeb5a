package detector

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lifeboat-dev/lifeboat/internal/claim"
)

// listedPolicies is a PolicySource over fixed policies.
type listedPolicies []PolicyRef

func (l listedPolicies) ClaimedPolicy(_ context.Context, c claim.Claim) (PolicyRef, bool, error) {
	for _, p := range l {
		if p.Cluster == c.Cluster && p.Namespace == c.Namespace && p.Name == c.Name {
			return p, true, nil
		}
	}
	return PolicyRef{}, false, nil
}

func (l listedPolicies) PropagationPolicies(_ context.Context, ns string) ([]PolicyRef, error) {
	var out []PolicyRef
	for _, p := range l {
		if !p.Cluster && p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l listedPolicies) ClusterPropagationPolicies(context.Context) ([]PolicyRef, error) {
	var out []PolicyRef
	for _, p := range l {
		if p.Cluster {
			out = append(out, p)
		}
	}
	return out, nil
}

// One case per rule of ChoosePolicy.
func TestChoosePolicy(t *testing.T) {
	claimed := func(p PolicyRef) *unstructured.Unstructured {
		u := deployment("default", "nginx").obj()
		setClaim(u, p)
		return u
	}
	owner := pp("default", "owner").selectName("nginx").ref()
	rival := pp("default", "rival").selectName("nginx").priority(10).ref()
	cluster := cpp("everything").selectAll().ref()
	v1beta2Owner := pp("default", "owner").selectNameAt("apps/v1beta2", "nginx").ref()
	cases := map[string]struct {
		tmpl          *unstructured.Unstructured
		policies      listedPolicies
		wantPolicy    string
		wantHeld      bool
		wantReleasing string
		wantStale     string
		// wantOtherVersion is the claiming policy that selects the
		// template at another version.
		wantOtherVersion string
	}{
		"1. a valid claim holds, even against a higher priority": {
			tmpl: claimed(owner), policies: listedPolicies{owner, rival, cluster},
			wantPolicy: "owner", wantHeld: true,
		},
		"1. a claiming policy being deleted releases first": {
			tmpl: claimed(owner), policies: listedPolicies{pp("default", "owner").selectName("nginx").deleting().ref(), rival},
			wantReleasing: "owner",
		},
		"2. a claim by a policy selecting it at another version holds, and nothing changes here": {
			tmpl: claimed(v1beta2Owner), policies: listedPolicies{v1beta2Owner, rival, cluster},
			wantOtherVersion: "owner",
		},
		"3. a claim by a policy selecting another version of another name is stale": {
			tmpl:       claimed(v1beta2Owner),
			policies:   listedPolicies{pp("default", "owner").selectNameAt("apps/v1beta2", "other").ref(), cluster},
			wantPolicy: "everything", wantStale: "owner",
		},
		"3. a claim by a policy selecting the kind of another group is stale": {
			tmpl:       claimed(v1beta2Owner),
			policies:   listedPolicies{pp("default", "owner").selectNameAt("extensions/v1beta1", "nginx").ref(), cluster},
			wantPolicy: "everything", wantStale: "owner",
		},
		"3. a claim by a recreated policy is stale": {
			tmpl: claimed(owner), policies: listedPolicies{func() PolicyRef { p := owner; p.ID = "new-id"; return p }(), cluster},
			wantPolicy: "owner", wantStale: "owner",
		},
		"3. a claim by a policy that no longer selects is stale": {
			tmpl: claimed(owner), policies: listedPolicies{pp("default", "owner").selectName("other").ref(), cluster},
			wantPolicy: "everything", wantStale: "owner",
		},
		"4. the best PropagationPolicy beats any ClusterPropagationPolicy": {
			tmpl: deployment("default", "nginx").obj(), policies: listedPolicies{owner, rival, cpp("first").selectName("nginx").priority(100).ref()},
			wantPolicy: "rival",
		},
		"5. else the best ClusterPropagationPolicy": {
			tmpl: deployment("default", "nginx").obj(), policies: listedPolicies{pp("other", "elsewhere").selectAll().ref(), cluster},
			wantPolicy: "everything",
		},
		"no policy selects it": {
			tmpl: deployment("default", "nginx").obj(), policies: listedPolicies{pp("default", "web").selectName("web").ref()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ChoosePolicy(context.Background(), tc.policies, tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if name := policyName(got.Policy, got.OK); name != tc.wantPolicy || got.Held != tc.wantHeld {
				t.Errorf("policy %q held %v, want %q held %v", name, got.Held, tc.wantPolicy, tc.wantHeld)
			}
			if got.Releasing != nil && got.OK {
				t.Error("a releasing choice claims the template")
			}
			if name := policyName(deref(got.Releasing)); name != tc.wantReleasing {
				t.Errorf("releasing %q, want %q", name, tc.wantReleasing)
			}
			stale := ""
			if got.Stale != nil {
				stale = got.Stale.Name
			}
			if stale != tc.wantStale {
				t.Errorf("stale claim %q, want %q", stale, tc.wantStale)
			}
			if got.OtherVersion != nil && (got.OK || got.Stale != nil) {
				t.Error("a claim held at another version changes something under this one")
			}
			if name := policyName(deref(got.OtherVersion)); name != tc.wantOtherVersion {
				t.Errorf("held at another version by %q, want %q", name, tc.wantOtherVersion)
			}
		})
	}
}

func policyName(p PolicyRef, ok bool) string {
	if !ok {
		return ""
	}
	return p.Name
}

func deref(p *PolicyRef) (PolicyRef, bool) {
	if p == nil {
		return PolicyRef{}, false
	}
	return *p, true
}
